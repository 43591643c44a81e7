#!/bin/sh
# --bitmap=all-dirty: every chunk is dirty on disk while the array runs
# (no bitmap flushes on the write path), so a crash costs a full resync
# (md without a bitmap) and a clean stop still leaves the bitmap clean.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

files=$(create 5 3 64M --bitmap-chunk=1024 --chunk=64 --assume-clean)
engine_start b1 $files --bitmap=all-dirty
total=$("$CLRAID" examine --json ${files%% *} | jq -r '.[0].bitmap.bits')
[ "$(st b1 .bitmap.dirty_chunks)" = "$total" ] || fail "dirty chunks $(st b1 .bitmap.dirty_chunks), expected all $total"
flushes=$(st b1 .counters.bitmap_flushes)
rand "$TESTDIR/data" 16
put b1 "$TESTDIR/data"
[ "$(st b1 .counters.bitmap_flushes)" = "$flushes" ] || fail "writes caused bitmap flushes in all-dirty mode"
echo "ok: all $total chunks dirty, 16 MiB written with no bitmap flush"

# A clean stop clears the bits: the next start resyncs nothing.
engine_stop b1
dirty=$("$CLRAID" examine --json ${files%% *} | jq -r '.[0].bitmap.slots[0].dirty_bits')
[ "$dirty" = 0 ] || fail "clean stop left $dirty dirty bits"
engine_start b1 $files --bitmap=all-dirty
same b1 "$TESTDIR/data"

# A crash leaves every bit set: a normal start resyncs the whole range.
engine_crash b1
dirty=$("$CLRAID" examine --json ${files%% *} | jq -r '.[0].bitmap.slots[0].dirty_bits')
[ "$dirty" = "$total" ] || fail "after a crash $dirty of $total bits dirty"
rm -f "$RUN/b1.pid" "$RUN/b1.sock" "$RUN/b1.ctl"
engine_start b1 $files
wait_idle b1
sync_bytes=$(( $("$CLRAID" examine --json ${files%% *} | jq -r '.[0].bitmap.sync_sectors') * 512 ))
[ "$(st b1 .last_resync.bytes)" = "$sync_bytes" ] || fail "resync after crash: $(st b1 .last_resync.bytes) bytes, expected the whole $sync_bytes"
zero_mismatches b1
same b1 "$TESTDIR/data"
echo "ok: crash in all-dirty mode -> full resync ($sync_bytes bytes per member), data intact"
engine_stop b1
