#!/bin/sh
# kill -9 of the engine in the middle of writes, then a restart: only the
# regions dirty in the bitmap are resynced (a small part of the array),
# acknowledged data is intact and check finds no mismatch.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

# RAID5/6 run from crash-resync-parity.sh (CRASH_LEVELS).
for level in ${CRASH_LEVELS:-1}; do
    name=c$level
    files=$(create $level 4 64M --assume-clean --bitmap-chunk=1024)
    # shellcheck disable=SC2086
    engine_start $name $files
    size=$(st $name .size_bytes)
    rand "$TESTDIR/data" 8
    put $name "$TESTDIR/data"
    # Writes in flight far from the acknowledged data when the engine dies:
    # one member is slowed down so that they surely are.
    set -- $files
    cli fault $name "$2" delay --ms 50 >/dev/null || fail "fault delay"
    w0=$(st "$name" .counters.writes)
    cmds=""
    i=0
    while [ $i -lt 40 ]; do
        cmds="$cmds -c 'write -P 0x77 $((40 * 1048576 + i * 65536)) 64k'"
        i=$((i + 1))
    done
    (eval timeout "$T" qemu-io -f raw "'$(uri $name)'" "$cmds" >/dev/null 2>&1 || true) &
    writer=$!
    # Until the writer's first write is done and its second in flight (the
    # engine counts a write when it starts): on a slow machine, later.
    writing() { [ "$(st "$name" .counters.writes)" -ge $((w0 + 2)) ]; }
    wait_until 30 writing || fail "raid$level: the writer's writes do not reach the engine"
    engine_crash $name
    wait $writer || true
    # shellcheck disable=SC2086
    engine_start $name $files
    wait_idle $name
    resynced=$(st $name .last_resync.bytes)
    echo "raid$level: resynced $resynced of $size bytes after kill -9"
    [ "$resynced" -gt 0 ] || fail "raid$level: nothing resynced after a kill -9 mid-write"
    [ "$resynced" -lt $((size / 4)) ] || fail "raid$level: resync rewrote $resynced of $size bytes: not only the dirty regions"
    same $name "$TESTDIR/data"
    zero_mismatches $name
    state=$(st $name .state)
    [ "$state" = clean ] || [ "$state" = active ] || fail "raid$level: state '$state' (not clean or active)"
    engine_stop $name
    echo "ok: raid$level kill -9 + restart"
done
