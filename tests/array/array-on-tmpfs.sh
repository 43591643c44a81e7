#!/bin/sh
# make check: tests/array/test_array again with its member files on tmpfs
# (/dev/shm), where the array serves them inline (in the requesting
# thread, engine/io's inline mode) and reads and writes client buffers
# at any address, with no aligned copy.  The run on $TMPDIR (default
# /var/tmp) covers the ring and the copies.  Skips where /dev/shm is not
# a writable tmpfs.
set -eu
bin="${top_builddir:-.}/tests/array/test_array"
grep -qs ' /dev/shm tmpfs ' /proc/mounts || { echo "SKIP: /dev/shm is not a tmpfs"; exit 77; }
[ -w /dev/shm ] || { echo "SKIP: /dev/shm is not writable"; exit 77; }
TMPDIR=/dev/shm exec "$bin"
