#!/bin/sh
# Random data written and read back through NBD, for every level; it
# survives a clean stop and start; check finds no mismatch; the export
# advertises multi-conn, FUA and a stripe-sized preferred block.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

rand "$TESTDIR/data" 24
for level in 1 10 5 6; do
    name=l$level
    files=$(create $level 4 64M --assume-clean)
    # shellcheck disable=SC2086
    engine_start $name $files
    nbdinfo "$(uri $name)" >"$TESTDIR/info" || fail "nbdinfo"
    grep -q 'can_multi_conn: true' "$TESTDIR/info" || fail "raid$level: no multi-conn"
    grep -q 'can_fua: true' "$TESTDIR/info" || fail "raid$level: no FUA"
    pref=$(sed -n 's/.*block_size_preferred: //p' "$TESTDIR/info")
    [ "$pref" -ge 4096 ] || fail "raid$level: preferred block size $pref"
    put $name "$TESTDIR/data"
    # Unaligned and FUA writes beyond the copied region, and a zeroed range.
    qio $name 'write -P 0x5a 25165825 3000' 'write -f -P 0x6b 26214400 65536' 'write -z 27262976 1M' \
        'read -P 0x5a 25165825 3000' 'read -P 0x6b 26214400 65536' 'read -P 0 27262976 1M' ||
        fail "raid$level: pattern I/O"
    same $name "$TESTDIR/data"
    engine_stop $name
    # shellcheck disable=SC2086
    engine_start $name $files
    same $name "$TESTDIR/data"
    qio $name 'read -P 0x5a 25165825 3000' 'read -P 0x6b 26214400 65536' || fail "raid$level: after restart"
    zero_mismatches $name
    engine_stop $name
    echo "ok: raid$level random data, restart, check (preferred block $pref)"
done
