#!/bin/bash
# tests/uml/dlm-cluster.sh on a RAID5 over four members: three clraid
# engines with --lock dlm in three User-Mode Linux nodes, stripe-zone locks
# in the kernel DLM; one node powered off mid-write.
here=$(cd "$(dirname "$0")" && pwd)
DLM_LEVEL=5 exec bash "$here/dlm-cluster.sh" "$@"
