#!/bin/bash
# test-cluster-raid1.sh's pass on a RAID10 near2 over 4 legs: three
# members, member 1 (the first to join) killed mid-write.
here=$(cd "$(dirname "$0")" && pwd)
CLUSTER_PASSES=10:4:1 CL_LAYOUT=n2 exec bash "$here/test-cluster-raid1.sh" "$@"
