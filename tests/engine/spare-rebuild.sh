#!/bin/sh
# Rebuild onto a spare: a failed member is replaced by a device added with
# 'clraid add'; after recovery the data is served from the new member.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

for level in 1 5; do
    name=s$level
    files=$(create $level 3 64M --assume-clean)
    set -- $files
    truncate -s 64M "$TESTDIR/new"
    # shellcheck disable=SC2086
    engine_start $name $files
    rand "$TESTDIR/data" 16
    put $name "$TESTDIR/data"
    cli fail $name "$2" >/dev/null || fail "fail $2"
    [ "$(st $name .state)" = degraded ] || fail "raid$level: not degraded after fail"
    cli remove $name "$2" >/dev/null || fail "remove $2"
    cli add $name "$TESTDIR/new" >/dev/null || fail "add"
    wait_idle $name
    [ "$(st $name .state)" != degraded ] || fail "raid$level: still degraded after rebuild"
    [ "$(st $name ".devices[] | select(.path == \"$TESTDIR/new\") | .state")" = in_sync ] ||
        fail "raid$level: new member not in sync"
    resynced=$(st $name .last_resync.bytes)
    zero_mismatches $name
    # Lose another original member: reads now need the rebuilt one.
    cli fail $name "$1" >/dev/null || fail "fail $1"
    same $name "$TESTDIR/data"
    engine_stop $name
    rm -f "$TESTDIR/new"
    echo "ok: raid$level rebuild onto an added spare ($resynced bytes)"
done
