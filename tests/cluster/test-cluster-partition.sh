#!/bin/bash
# A node lost with its whole node holds the survivors' writes until it is
# confirmed dead, end to end: three corosync nodes, each in its own
# network/mount/UTS namespace on a private bridge (as
# tests/lock/test-cpg-partition.sh), one clraid engine (--lock cpg) on each
# over the same member files.  Node 3 is cut off the network:
#   - node 3 loses quorum: its engine freezes;
#   - nodes 1 and 2 see it lost (NODEDOWN, MEMBER_LOST): writes_held, one
#     unconfirmed member; a write issued on node 1 neither completes nor
#     fails (there is no fencer here), a read completes;
#   - on heal node 3's lockspace rejoins as the same process, which
#     confirms its old incarnation dead (MEMBER_FAILED): the held write
#     completes, not before the hold's end stamp, and a survivor takes
#     node 3's bitmap slot over.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
# shellcheck source=tests/lock/cluster-functions.sh
. "$top_srcdir/tests/lock/cluster-functions.sh"
clr_enter_ns "$@"
command -v nsenter >/dev/null 2>&1 || clr_skip "nsenter not installed"
# shellcheck source=tests/engine/engine-functions.sh
. "$top_srcdir/tests/engine/engine-functions.sh"
requires_lock cpg
set +e

NAME=p1
COROS=""
HOLDERS=""
# shellcheck disable=SC2016  # expanded when it runs
cleanup_fn 'for p in $HOLDERS; do kill -9 $p 2>/dev/null; done'
# shellcheck disable=SC2016
cleanup_fn 'for p in $COROS; do kill $p 2>/dev/null; done; for p in $COROS; do wait $p 2>/dev/null; done'
failed=0
check() { if eval "$1"; then echo "PASS: $2"; else echo "FAIL: $2"; failed=1; fi; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
nd() { echo "$TESTDIR/n$1"; }
on() { local i=$1 h; shift; eval "h=\$H$i"; nsenter -t "$h" -n -m -u "$@"; }
cli() { local i=$1; shift; timeout "$T" "$CLRAID" "$@" --run-dir "$(nd "$i")/run-engine"; }
st() { cli "$1" status "$NAME" --json | jq -r "$2"; }
uri() { echo "nbd+unix:///?socket=$(nd "$1")/run-engine/$NAME.sock"; }
# wait_st K JQ SECONDS
wait_st() {
    local n=$(($3 * 10))
    while [ "$n" -gt 0 ]; do
        [ "$(st "$1" "$2" 2>/dev/null)" = true ] && return 0
        sleep 0.1
        n=$((n - 1))
    done
    echo "--- member $1 never reached: $2"; st "$1" .cluster 2>/dev/null
    return 1
}

ip link add br0 type bridge && ip link set br0 up || exit 99
for i in 1 2 3; do
    D=$(nd "$i")
    mkdir -p "$D/var-lib-corosync" "$D/run" "$D/run-engine"
    clr_corosync_conf3 clraidpart 10.98.0 "$D/corosync.log" >"$D/corosync.conf"
    unshare -n -m -u --propagation private sh -c "
        mount --bind $D/var-lib-corosync /var/lib/corosync &&
        mount -t tmpfs -o mode=1777 tmpfs /dev/shm &&
        mount --bind $D/run /run &&
        hostname n$i && ip link set lo up && touch $D/ready &&
        exec sleep 100000" &
    eval "H$i=\$!"
    HOLDERS="$HOLDERS $!"
    disown $!
    n=0
    while [ ! -e "$D/ready" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
    hp=""
    eval "hp=\$H$i"
    ip link add v$i type veth peer name eth0 netns "$hp" || exit 99
    ip link set v$i master br0 up
    nsenter -t "$hp" -n ip addr add 10.98.0.$i/24 dev eth0
    nsenter -t "$hp" -n ip link set eth0 up
    nsenter -t "$hp" -n -m -u corosync -f -c "$D/corosync.conf" >"$D/corosync.out" 2>&1 &
    COROS="$COROS $!"
done

n=0
while [ $n -lt 200 ]; do
    ok=0
    for i in 1 2 3; do
        on $i corosync-quorumtool -s 2>/dev/null | grep -q 'Total votes: *3' && ok=$((ok + 1))
    done
    [ $ok -eq 3 ] && break
    sleep 0.1
    n=$((n + 1))
done
[ "$ok" -eq 3 ] || { for i in 1 2 3; do tail -5 "$(nd $i)/corosync.log"; done; fail "no 3-node membership"; }
echo "3-node corosync membership formed"

files=$(mkfiles 2 64M)
# shellcheck disable=SC2086
"$CLRAID" create --level=1 --raid-devices=2 --nodes=4 --home-cluster=clraidpart \
    --name="$NAME" --bitmap-chunk=512K --assume-clean $files >/dev/null || fail "create"
for i in 1 2 3; do
    # shellcheck disable=SC2086
    on $i timeout "$T" "$CLRAID" start "$NAME" --lock cpg $files \
        --run-dir "$(nd $i)/run-engine" >/dev/null ||
        { tail -20 "$(nd $i)/run-engine/$NAME.log"; fail "start on node $i"; }
    cleanup_fn "kill -9 \$(cat $(nd $i)/run-engine/$NAME.pid 2>/dev/null) 2>/dev/null"
done
for i in 1 2 3; do
    wait_st $i '.cluster.members == 3 and .sync_action == "idle"' 30 || fail "member $i not up"
done
echo "three engines up"
for i in 1 2 3; do
    timeout 30 qemu-io -f raw "$(uri $i)" -c "write -P $((0x10 + i)) $((i * 1048576)) 65536" >/dev/null ||
        fail "write on node $i"
done
check "[ \"\$(st 1 .cluster.writes_held)\" = false ] && [ \"\$(st 1 .cluster.write_hold)\" = null ]" \
    "no write hold before the cut"

# Node 3 keeps writing through the cut, so that its bitmap slot has dirty
# bits when it freezes (a frozen engine clears none): the survivors'
# takeover then has work to count, however slow the machine is.
( while [ ! -e "$TESTDIR/n3stop" ]; do
    timeout 60 qemu-io -f raw "$(uri 3)" -c "write -P 0x13 3145728 65536" >/dev/null 2>&1 || break
done ) &
n3w=$!
HOLDERS="$HOLDERS $n3w"
wait_st 3 '.counters.writes >= 3' 30 || fail "node 3's writer did not start"
echo "== cut node 3 off"
t_cut=$(now_ms)
ip link set v3 down
wait_st 1 '.cluster.writes_held' 30
check "[ \"\$(st 1 .cluster.writes_held)\" = true ] && [ \"\$(st 1 .cluster.unconfirmed)\" = 1 ]" \
    "node 1: writes held, one member unconfirmed"
wait_st 2 '.cluster.writes_held' 30
check "[ \"\$(st 2 .cluster.writes_held)\" = true ]" "node 2: writes held"
wait_st 3 '.frozen != null' 30
check "[ \"\$(st 3 '.frozen != null')\" = true ]" "node 3 (no quorum) froze"
touch "$TESTDIR/n3stop"
check "[ \"\$(st 3 .bitmap.dirty_chunks)\" -ge 1 ]" "node 3 froze with dirty bits in its slot"
h0=$(st 1 .cluster.write_hold.start_ms)
echo "hold started $((h0 - t_cut)) ms after the cut"
# a write on node 1 waits; a read completes
timeout 120 qemu-io -f raw "$(uri 1)" -c "write -P 0x5a 8388608 65536" >"$TESTDIR/held.out" 2>&1 &
wpid=$!
check "timeout 20 qemu-io -f raw '$(uri 1)' -c 'read -P 0x11 1048576 65536' >/dev/null" \
    "node 1 reads while writes are held"
sleep 3
check "kill -0 $wpid 2>/dev/null && [ ! -s '$TESTDIR/held.out' ]" \
    "node 1's write neither completed nor failed in 3 s without a fencer"
check "[ \"\$(st 1 .cluster.recovered_slots)\" = 0 ] && [ \"\$(st 2 .cluster.recovered_slots)\" = 0 ]" \
    "nobody took the lost node's slot over"
check "grep -q 'lost.*writes held until it is fenced' '$(nd 1)/run-engine/$NAME.log'" \
    "node 1 logged the hold"
check "cli 1 status $NAME | grep -q 'WRITES HELD: 1 member'" "node 1's status says so"

echo "== heal"
ip link set v3 up
wait "$wpid"
wrc=$?
t_done=$(now_ms)
check "[ $wrc -eq 0 ] && grep -q '^wrote' '$TESTDIR/held.out'" "the held write completed after the heal"
wait_st 1 '.cluster.writes_held == false and .cluster.write_hold.end_ms != null' 30
h1=$(st 1 .cluster.write_hold.end_ms)
check "[ $h1 -ge $h0 ] && [ $t_done -ge $h1 ]" \
    "the write completed after the hold ended (held $((h1 - h0)) ms)"
check "grep -q 'fenced (confirmed): writes resume after' '$(nd 1)/run-engine/$NAME.log'" \
    "node 1 logged the end of the hold"
n=0
while [ $n -lt 300 ]; do
    r1=$(st 1 .cluster.recovered_slots); r2=$(st 2 .cluster.recovered_slots)
    [ $((r1 + r2)) -ge 1 ] && break
    sleep 0.1
    n=$((n + 1))
done
check "[ $((r1 + r2)) -ge 1 ]" "a survivor took the lost node's slot over after the confirmation"
check "timeout 20 qemu-io -f raw '$(uri 2)' -c 'read -P 0x5a 8388608 65536' >/dev/null" \
    "node 2 reads the write node 1 held"
grep -h 'cluster:' "$(nd 1)/run-engine/$NAME.log" | grep -E 'lost|fenced|took over' | sed 's/^/node 1 log: /'
echo "SUMMARY: cut -> writes held on node 1 after $((h0 - t_cut)) ms; held $((h1 - h0)) ms until the lost node was confirmed (heal)"
if [ $failed -ne 0 ]; then
    for i in 1 2 3; do echo "--- engine log of node $i"; tail -20 "$(nd $i)/run-engine/$NAME.log"; done
fi
exit $failed
