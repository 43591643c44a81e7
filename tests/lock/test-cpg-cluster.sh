#!/bin/sh
# The cpg lock backend on a real corosync (private, in its own namespaces):
# mutual exclusion, LVB hand-over, BASTs, NOQUEUE, SIGKILL of an EX holder,
# a member joining under load, and broadcast with acks and refusals.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster-functions.sh"
clr_enter_ns "$@"
M=${LOCK_MEMBER:-${top_builddir:-$here/../..}/tests/lock/lock_member}
[ -x "$M" ] || { echo "no lock_member at $M"; exit 99; }
clr_start_corosync
fail=0
check() { if eval "$1"; then echo "PASS: $2"; else echo "FAIL: $2"; fail=1; fi; }

echo "== 1. counter: 4 members + 1 joining under load, 10000 increments"
echo 0 >"$T/counter"
for m in c1 c2 c3 c4; do
	clr_bg $m "$M" -n $m lsA counter "$T/counter" 2375 "$T/mark"
done
clr_wait_for "$T/c1.out" "joined" || fail=1
sleep 0.5
clr_bg c5 "$M" -n c5 lsA counter "$T/counter" 500 "$T/mark"
for m in c1 c2 c3 c4 c5; do clr_wait_for "$T/$m.out" "counter done" 120 || fail=1; done
touch "$T/mark.digest"
for m in c1 c2 c3 c4 c5; do clr_wait_for "$T/$m.out" "digest=" 20 || fail=1; done
# Each member prints its table digest again whenever it changes: the
# replicas converge once every member's last unlock has been delivered
# everywhere (later on a slow machine), so poll the latest ones.
last_digests() {
	for m in c1 c2 c3 c4 c5; do grep -o 'digest=[0-9a-f]*' "$T/$m.out" | tail -n 1; done | sort -u | wc -l
}
n=0
while [ "$(last_digests)" -ne 1 ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n + 1)); done
nd=$(last_digests) # before any member leaves: leaving changes the table
touch "$T/mark.exit"
for m in c1 c2 c3 c4 c5; do eval wait \$PID_$m; done
check "[ \$(cat $T/counter) -eq 10000 ]" "counter exact: $(cat $T/counter)"
check "[ \$(cat $T/c*.out | grep -c 'lvb_mismatch=0 lvb_invalid=0') -eq 5 ]" "every holder saw the previous LVB value"
check "[ $nd -eq 1 ]" "all 5 replicas identical after the joiner came in under load"
grep -q "joined" "$T/c5.out" && grep -h "joined" "$T/c5.out"

echo "== 2. BAST and NOQUEUE"
clr_bg y1 "$M" -n y1 lsB yield R EX 1
clr_wait_for "$T/y1.out" "granted" || fail=1
"$M" -n t1 lsB try R EX >"$T/t1.out" 2>&1
check "grep -q 'try rc=-11' $T/t1.out" "NOQUEUE on a held EX fails with -EAGAIN ($(grep -o 'us=[0-9]*' $T/t1.out) us)"
us=$(grep -o 'us=[0-9]*' "$T/t1.out" | cut -d= -f2)
check "[ \${us:-999999} -lt 50000 ]" "NOQUEUE fails fast"
check "! grep -q bast $T/y1.out" "NOQUEUE sends no BAST"
"$M" -n w1 lsB wait R PR >"$T/w1.out" 2>&1
check "grep -q 'wait granted rc=0' $T/w1.out" "PR waiter granted after the holder yielded"
check "grep -q 'bast R mode=PR' $T/y1.out" "holder got a BAST carrying PR"
clr_wait_for "$T/y1.out" "ok yield" || fail=1

echo "== 3. SIGKILL of an EX holder"
clr_bg h "$M" -n h lsC hold K EX
clr_wait_for "$T/h.out" "granted" || fail=1
clr_bg w "$M" -n w lsC wait K EX
clr_wait_for "$T/w.out" "joined" || fail=1
sleep 0.3
check "! grep -q 'wait granted' $T/w.out" "waiter blocked while the holder lives"
kill -9 $PID_h
clr_wait_for "$T/w.out" "wait granted" 20 || fail=1
check "grep -q 'event MEMBER_FAILED' $T/w.out" "survivor got MEMBER_FAILED"
ev=$(grep -n 'MEMBER_FAILED' "$T/w.out" | head -1 | cut -d: -f1)
gr=$(grep -n 'wait granted' "$T/w.out" | head -1 | cut -d: -f1)
check "[ \${ev:-99} -lt \${gr:-0} ]" "the event came before the grant"
check "grep -q 'wait granted rc=0 valnotvalid=1' $T/w.out" "waiter sees the LVB marked not valid"
wait $PID_w

echo "== 4. broadcast with 3 members"
clr_bg r1 "$M" -n r1 lsD bcast-recv 6
clr_bg r2 "$M" -n r2 lsD bcast-recv 6
clr_wait_for "$T/r1.out" "ready" || fail=1
clr_wait_for "$T/r2.out" "ready" || fail=1
"$M" -n s lsD bcast-send 50 >"$T/s.out" 2>&1
check "grep -q 'sent=50 fails=0' $T/s.out" "50 broadcasts acked by everyone ($(grep -o 'median_us=[0-9]*' $T/s.out))"
"$M" -n s2 lsD bcast-send 1 127 >"$T/s2.out" 2>&1
check "grep -q 'refused=2 rc=0' $T/s2.out" "unknown message type: both receivers acked with an error state"
wait $PID_r1 $PID_r2
check "grep -q 'received=50' $T/r1.out && grep -q 'received=50' $T/r2.out" "every receiver processed all 50"

echo "== 5. quorum loss: freeze, drop locks, rejoin when quorate"
clr_bg q "$M" -n q lsE hold Q EX
clr_wait_for "$T/q.out" "granted" || fail=1
corosync-cmapctl -s quorum.expected_votes u32 3 >/dev/null
clr_wait_for "$T/q.out" "event FREEZE" 10 || fail=1
check "corosync-quorumtool -s | grep -q 'Quorate: *No'" "corosync says inquorate"
corosync-cmapctl -s quorum.expected_votes u32 1 >/dev/null
clr_wait_for "$T/q.out" "event DONE.*" 10 || fail=1
n=0
while [ $n -lt 50 ] && [ "$(grep -c 'event DONE' "$T/q.out")" -lt 2 ]; do sleep 0.1; n=$((n + 1)); done
check "[ \$(grep -c 'event DONE' $T/q.out) -ge 2 ]" "member rejoined after quorum came back"
"$M" -n q2 lsE try Q EX >"$T/q2.out" 2>&1
check "grep -q 'try rc=0' $T/q2.out" "the frozen member did not keep its EX"

if [ $fail -ne 0 ]; then
	for f in "$T"/*.out "$T"/*.err; do echo "--- $f"; tail -20 "$f"; done
fi
exit $fail
