#!/bin/bash
# test-cluster-raid1.sh's pass on a RAID5 over 4 members: three engines,
# member 2 killed while all three write the same stripe; then one member
# device fails and the survivors still read every block.
here=$(cd "$(dirname "$0")" && pwd)
CL_NB=16 CLUSTER_PASSES=5:4:2 exec bash "$here/test-cluster-raid1.sh" "$@"
