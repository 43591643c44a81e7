#!/bin/sh
# Trim: RAID1/10 pass it down as a deallocating zero on every leg, so the
# range reads as zeroes and the copies still agree; RAID5/6 keep the data.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

for lvl in 1 10; do
    files=$(create $lvl 2 64M --bitmap-chunk=1024 --chunk=64 --assume-clean)
    engine_start t$lvl $files
    qio t$lvl 'write -P 0xa5 0 16M' || fail "raid$lvl write"
    qio t$lvl 'discard 1M 8M' || fail "raid$lvl discard"
    qio t$lvl 'read -P 0xa5 0 1M' 'read -P 0 1M 8M' 'read -P 0xa5 9M 7M' ||
        fail "raid$lvl: trimmed range does not read as zeroes (or neighbours changed)"
    # a trim inside one block deallocates nothing
    qio t$lvl 'discard 9961572 800' 'read -P 0xa5 9M 7M' || fail "raid$lvl: unaligned trim"
    zero_mismatches t$lvl
    engine_stop t$lvl
    rm -f $files
    echo "ok: raid$lvl trim reads back zeroes, copies agree"
done

files=$(create 5 3 64M --bitmap-chunk=1024 --chunk=64 --assume-clean)
engine_start t5 $files
qio t5 'write -P 0x3c 0 4M' 'discard 0 4M' 'read -P 0x3c 0 4M' || fail "raid5: trim must be advisory"
zero_mismatches t5
engine_stop t5
echo "ok: raid5 trim is advisory"
