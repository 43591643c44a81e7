#!/bin/sh
# The cpg backend across a real network partition: 3 corosync nodes, each
# in its own network/mount/UTS namespace on a private bridge (all inside
# the test's own namespace: nothing outside is touched).  Node 3 holds EX
# and is cut off:
#   - node 3 loses quorum: FREEZE, its locks are dropped;
#   - nodes 1-2 see NODEDOWN: MEMBER_LOST, the lock stays held (no fencer
#     confirms), the bounded wait is reported (FENCE_TIMEOUT), the waiter
#     waits;
#   - on heal node 3's process rejoins as a new member; only then is its
#     old incarnation confirmed dead: MEMBER_FAILED, then the waiter is
#     granted with the LVB marked not valid, and node 3 holds nothing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster-functions.sh"
clr_enter_ns "$@"
command -v nsenter >/dev/null 2>&1 || clr_skip "nsenter not installed"
M=${LOCK_MEMBER:-${top_builddir:-$here/../..}/tests/lock/lock_member}
[ -x "$M" ] || { echo "no lock_member at $M"; exit 99; }
T=$(mktemp -d /tmp/clraid-part.XXXXXX) || exit 99
HOLDERS=""
COROS=""
cleanup() {
	for p in $CLR_PIDS; do kill -9 "$p" 2>/dev/null; done
	for p in $COROS; do kill "$p" 2>/dev/null; done
	for p in $COROS; do wait "$p" 2>/dev/null; done
	for p in $HOLDERS; do kill -9 "$p" 2>/dev/null; done
	[ -n "${CLR_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
fail=0
check() { if eval "$1"; then echo "PASS: $2"; else echo "FAIL: $2"; fail=1; fi; }

ip link add br0 type bridge && ip link set br0 up || exit 99
for i in 1 2 3; do
	D=$T/n$i
	mkdir -p "$D/var-lib-corosync" "$D/run"
	clr_corosync_conf3 clraidpart 10.99.0 "$D/corosync.log" >"$D/corosync.conf"
	unshare -n -m -u --propagation private sh -c "
		mount --bind $D/var-lib-corosync /var/lib/corosync &&
		mount -t tmpfs -o mode=1777 tmpfs /dev/shm &&
		mount --bind $D/run /run &&
		hostname n$i && ip link set lo up && touch $D/ready &&
		exec sleep 100000" &
	eval "H$i=\$!"
	HOLDERS="$HOLDERS $!"
	n=0
	while [ ! -e "$D/ready" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
	eval "hp=\$H$i"
	ip link add v$i type veth peer name eth0 netns "$hp" || exit 99
	ip link set v$i master br0 up
	nsenter -t "$hp" -n ip addr add 10.99.0.$i/24 dev eth0
	nsenter -t "$hp" -n ip link set eth0 up
	nsenter -t "$hp" -n -m -u corosync -f -c "$D/corosync.conf" >"$D/corosync.out" 2>&1 &
	COROS="$COROS $!"
done
on() { _i=$1; shift; eval "nsenter -t \$H$_i -n -m -u \"\$@\""; }

# all three nodes in one quorate membership
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
check "[ $ok -eq 3 ]" "3-node corosync membership formed"
[ $ok -eq 3 ] || { for i in 1 2 3; do tail -5 "$T/n$i/corosync.log"; done; exit 1; }

clr_bg m3 nsenter -t "$H3" -n -m -u "$M" -n m3 lsP hold P EX
clr_wait_for "$T/m3.out" "granted" 20 || fail=1
clr_bg m2 nsenter -t "$H2" -n -m -u "$M" -n m2 lsP hold other NL
clr_wait_for "$T/m2.out" "granted" 20 || fail=1
clr_bg m1 nsenter -t "$H1" -n -m -u "$M" -n m1 lsP wait P EX
clr_wait_for "$T/m1.out" "joined" 20 || fail=1
sleep 0.5

echo "== cut node 3 off"
ip link set v3 down
clr_wait_for "$T/m3.out" "event FREEZE" 30 || fail=1
check "grep -q 'event FREEZE' $T/m3.out" "the cut-off side froze and dropped its locks"
clr_wait_for "$T/m1.out" "event FENCE_TIMEOUT" 30 || fail=1
check "grep -q 'event FENCE_TIMEOUT' $T/m1.out" "unconfirmed death reported after the bounded wait"
check "! grep -q 'wait granted' $T/m1.out" "the majority did not take the cut-off member's EX"
check "grep -q 'event MEMBER_LOST' $T/m1.out && ! grep -q 'MEMBER_FAILED' $T/m1.out" \
	"the majority was told the member is lost (MEMBER_LOST), not yet failed"

echo "== heal"
ip link set v3 up
clr_wait_for "$T/m1.out" "wait granted" 90 || fail=1
check "grep -q 'wait granted rc=0 valnotvalid=1' $T/m1.out" "granted after heal, LVB marked not valid"
ev=$(grep -n 'MEMBER_FAILED' "$T/m1.out" | head -1 | cut -d: -f1)
gr=$(grep -n 'wait granted' "$T/m1.out" | head -1 | cut -d: -f1)
check "[ \${ev:-99} -lt \${gr:-0} ]" "MEMBER_FAILED came before the grant"
lo=$(grep -n 'event MEMBER_LOST' "$T/m1.out" | head -1 | cut -d: -f1)
check "[ \${lo:-99} -lt \${ev:-0} ] && [ \$(grep -c 'event MEMBER_LOST' $T/m1.out) -eq 1 ]" \
	"one MEMBER_LOST, before the MEMBER_FAILED"
check "[ \$(grep -c 'event DONE' $T/m3.out) -ge 2 ]" "the stale member rejoined"
wait $PID_m1
# the waiter has left (released P); had the stale side kept or regained
# its EX, this try would fail
r=$(on 2 "$M" -n t2 lsP try P EX 2>&1)
check "echo '$r' | grep -q 'try rc=0'" "the stale side kept no lock"

if [ $fail -ne 0 ]; then
	for f in "$T"/*.out "$T"/*.err; do echo "--- $f"; tail -20 "$f"; done
fi
exit $fail
