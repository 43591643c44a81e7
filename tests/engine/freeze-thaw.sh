#!/bin/sh
# The last member fails: I/O blocks (no error reaches the client), status
# says frozen, and 'clraid thaw NAME --error' releases it with EIO.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

files=$(create 1 2 64M --assume-clean)
set -- $files
engine_start z "$1" "$2"
qio z 'write -P 0x11 0 1M' || fail "write"
cli fault z "$1" vanish >/dev/null || fail "fault $1"
qio z 'write -P 0x12 0 64k' 'read -P 0x12 0 64k' || fail "one failure must not reach the client"
[ "$(st z .state)" = degraded ] || fail "state $(st z .state), expected degraded"
cli fault z "$2" vanish >/dev/null || fail "fault $2"
# This read must block, not fail.
(rc=0; timeout 60 qemu-io -f raw "$(uri z)" -c 'read 1M 64k' >"$TESTDIR/blocked.out" 2>&1 || rc=$?
    echo $rc >"$TESTDIR/blocked.rc") &
reader=$!
wait_state z frozen 20
blocked() { [ "$(st z .frozen.blocked_requests)" -ge 1 ] 2>/dev/null; }
wait_until 20 blocked || true    # the read reaches the engine (later on a slow machine)
sleep 2                          # a read that wrongly returns late has done so by now
[ ! -e "$TESTDIR/blocked.rc" ] || fail "the read returned while frozen: $(cat "$TESTDIR/blocked.out")"
[ "$(st z .frozen.blocked_requests)" -ge 1 ] || fail "no blocked request counted"
cli thaw z >/dev/null 2>&1 && fail "thaw without --error must be refused"
cli thaw z --error >/dev/null || fail "thaw --error"
i=0
while [ ! -e "$TESTDIR/blocked.rc" ]; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "the blocked read was not released by thaw"
    sleep 0.1
done
wait $reader || true
rc=$(cat "$TESTDIR/blocked.rc")
[ "$rc" != 124 ] || fail "the read timed out instead of failing"
grep -qi 'input/output error' "$TESTDIR/blocked.out" || fail "expected EIO, got: $(cat "$TESTDIR/blocked.out")"
echo "ok: frozen read released with EIO by thaw --error"
# Later requests fail at once instead of blocking.
timeout 20 qemu-io -f raw "$(uri z)" -c 'read 0 4k' >"$TESTDIR/after.out" 2>&1 || true
grep -qi 'input/output error' "$TESTDIR/after.out" || fail "after thaw: $(cat "$TESTDIR/after.out")"
engine_kill z
echo "ok: freeze and thaw --error"
