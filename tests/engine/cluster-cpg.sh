#!/bin/sh
# Two engines of one RAID1 array on the same members, --lock cpg on a
# private corosync (network and mount namespace): distinct bitmap slots,
# writes from one read on the other, steady-state writes cost no lock op
# and no message, a device failure seen on one node is faulty on the other
# at once, and a kill -9 of one engine after writes is taken over by the
# other (its dirty chunks resynced, check finds no mismatch).
. "${top_srcdir:-.}/tests/lock/cluster-functions.sh"
clr_enter_ns "$@"
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"
requires_lock cpg
# both helpers use $T: corosync's work dir here, the client timeout there
_tmo=$T
clr_start_corosync
CORO_DIR=$T
T=$_tmo
# both cleanups: corosync's, then the engine tests' (which exits)
trap '_rc=$?; T=$CORO_DIR; clr_cleanup; (exit $_rc); _cleanup' EXIT

engine_start_cpg() {
    _name=$1; shift
    timeout "$T" "$CLRAID" start "$_name" "$@" --lock cpg --run-dir "$RUN" >/dev/null ||
        { cat "$RUN/$_name.log" >&2 2>/dev/null; fail "start $_name --lock cpg"; }
    cleanup_fn "engine_kill $_name"
}

files=$(mkfiles 2 64M)
# shellcheck disable=SC2086
"$CLRAID" create --level=1 --raid-devices=2 --nodes=3 --home-cluster=clraidlocktest \
    --assume-clean --bitmap-chunk=1024 $files >/dev/null || fail "create"
set -- $files
engine_start_cpg a "$1" "$2"
engine_start_cpg b "$1" "$2"
[ "$(st a .cluster.backend)" = cpg ] || fail "backend $(st a .cluster.backend)"
[ "$(st a .cluster.slot)" = 0 ] || fail "a: slot $(st a .cluster.slot)"
[ "$(st b .cluster.slot)" = 1 ] || fail "b: slot $(st b .cluster.slot)"
i=0
while [ "$(st a .cluster.members)" != 2 ]; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "a sees $(st a .cluster.members) members"
    sleep 0.1
done
cli status a | grep -q "cluster: cpg, slot 0" || fail "no cluster line in 'clraid status'"

qio a 'write -P 0x31 0 1M' || fail "write on a"
qio b 'read -P 0x31 0 1M' || fail "b does not read what a wrote"
ops_a=$(st a .counters.lock_ops) msg_a=$(st a .counters.messages)
ops_b=$(st b .counters.lock_ops) msg_b=$(st b .counters.messages)
cmds=""
i=0
while [ $i -lt 32 ]; do
    cmds="$cmds -c 'write -P 0x$((40 + i % 10)) $((2 * 1048576 + i * 65536)) 64k'"
    i=$((i + 1))
done
eval timeout "$T" qemu-io -f raw "'$(uri a)'" "$cmds" >/dev/null 2>&1 || fail "writes on a"
qio b 'write -P 0x52 8M 1M' || fail "write on b"
[ "$(st a .counters.lock_ops)/$(st a .counters.messages)" = "$ops_a/$msg_a" ] ||
    fail "a: writes cost lock ops/messages: $ops_a/$msg_a -> $(st a .counters.lock_ops)/$(st a .counters.messages)"
[ "$(st b .counters.lock_ops)/$(st b .counters.messages)" = "$ops_b/$msg_b" ] ||
    fail "b: writes cost lock ops/messages"
echo "ok: slots 0/1, steady-state writes: 0 lock ops, 0 messages"

# a kill -9 right after writes: b takes a's slot over and resyncs it
rand "$TESTDIR/data" 4
put a "$TESTDIR/data"
[ "$(st a .bitmap.dirty_chunks)" -gt 0 ] || fail "a: no dirty chunk before the crash"
engine_crash a
i=0
while [ "$(st b .cluster.recovered_slots)" != 1 ]; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "b did not take a's slot over: $(st b .cluster)"
    sleep 0.1
done
[ "$(st b .cluster.last_takeover.slot)" = 0 ] || fail "takeover of slot $(st b .cluster.last_takeover.slot)"
[ "$(st b .cluster.last_takeover.dirty_chunks)" -gt 0 ] || fail "takeover found nothing dirty"
wait_idle b
[ "$(st b .last_resync.bytes)" -gt 0 ] || fail "b resynced nothing"
same b "$TESTDIR/data"
zero_mismatches b
echo "ok: kill -9 of a, b took slot 0 over ($(st b .cluster.last_takeover.dirty_chunks) dirty chunks) and resynced"

# a comes back (its slot is free again); a device failure on b is seen by a
engine_start_cpg a "$1" "$2"
cli fault b "$2" write >/dev/null || fail "fault"
qio b 'write -P 0x66 16M 64k' || fail "write on b with a failing member"
[ "$(st a '.devices[1].state')" = faulty ] || fail "a: device 1 is $(st a '.devices[1].state'), b failed it"
qio a 'read -P 0x66 16M 64k' || fail "a reads what b wrote"
engine_stop a
engine_stop b
echo "ok: two engines over cpg"
