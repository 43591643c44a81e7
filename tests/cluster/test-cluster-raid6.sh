#!/bin/bash
# test-cluster-raid1.sh's pass on a RAID6 over 5 members: three engines,
# member 1 killed while all three write the same stripe; then two member
# devices fail and the survivors still read every block.
here=$(cd "$(dirname "$0")" && pwd)
CL_NB=16 CLUSTER_PASSES=6:5:1 exec bash "$here/test-cluster-raid1.sh" "$@"
