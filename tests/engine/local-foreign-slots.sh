#!/bin/sh
# One node alone (--lock local) on a clustered array takes in the dirty
# bits of every node slot, as a kernel md-cluster node does when it joins:
# a node that crashed left its writes in flight dirty in its own slot only.
# Here slot 1's bits cover a region where the two mirrors differ (what a
# crash of that node can leave): the start must resync it, and check must
# then find no mismatch.  Slot 0 stays clean throughout.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

files=$(create 1 2 8M --assume-clean --nodes=2 --home-cluster=lt --bitmap-chunk=64)
# shellcheck disable=SC2086
set -- $files
engine_start f "$@"
rand "$TESTDIR/data" 4
put f "$TESTDIR/data"
engine_stop f

# one 64 KiB chunk, 1 MiB into the array: different on the second mirror
off=$("$CLRAID" examine --json "$2" | jq -r '.[0].superblock.data_offset')
head -c 65536 /dev/urandom | dd of="$2" bs=64K seek=$((off * 512 + 1048576)) \
    oflag=seek_bytes conv=notrunc status=none
# slot 1's bit 16 (that chunk) dirty on both members: the bitmap starts
# 8 sectors after the superblock (sector 8), one 4 KiB region per slot
# here, bits after the 256-byte bitmap superblock
[ "$("$CLRAID" examine --json "$1" | jq -r '.[0].bitmap.bits')" -le 30720 ] || fail "bitmap over one page"
for f in "$@"; do
    printf '\001' | dd of="$f" bs=1 seek=$((8192 + 4096 + 256 + 2)) conv=notrunc status=none
done
"$CLRAID" examine --json "$1" >"$TESTDIR/ex.json"
[ "$(jq -r '.[0].bitmap.slots[1].dirty_bits' "$TESTDIR/ex.json")" = 1 ] || fail "slot 1 not dirty"
[ "$(jq -r '.[0].bitmap.slots[0].dirty_bits' "$TESTDIR/ex.json")" = 0 ] || fail "slot 0 dirty"

engine_start f "$@"
wait_idle f
resynced=$(st f '.last_resync.bytes // 0')
echo "resynced $resynced bytes for slot 1's dirty chunk"
[ "$resynced" = 65536 ] || fail "resynced $resynced bytes, expected slot 1's one chunk (65536)"
zero_mismatches f
engine_stop f
echo "ok: --lock local resyncs what another slot left dirty"
