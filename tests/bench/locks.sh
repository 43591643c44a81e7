#!/bin/sh
# Lock service benchmark on a private corosync (own network and mount
# namespaces, like tests/lock/test-cpg-cluster.sh).  Measures in one run:
#   - corosync's CPG round trip (multicast to own delivery), 1 member;
#   - uncontended EX acquire (+ release) through the cpg backend;
#   - contended EX hand-off between two members;
#   - md-style broadcast (token/message/ack) latency with 3 members.
# Targets: acquire <= 2x CPG RTT, broadcast <= 4x.  Not part of make check.
#   tests/bench/locks.sh [ITERATIONS]
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lock/cluster-functions.sh"
clr_enter_ns "$@"
B=${top_builddir:-$here/../..}
M=$B/tests/lock/lock_member
R=$B/tests/bench/cpg_rtt
[ -x "$M" ] && [ -x "$R" ] || { echo "build first: make tests/lock/lock_member tests/bench/cpg_rtt"; exit 1; }
N=${1:-2000}
clr_start_corosync

rtt=$("$R" "$N" | sed -n 's/.*cpg_rtt_median_us=\([0-9]*\).*/\1/p')
echo "cpg round trip (64 B, agreed, 1 member): median ${rtt} us"
# for context: the same with 3 members all sending (as in a broadcast)
"$R" "$N" >"$T/rtt2.out" & p2=$!
"$R" "$N" >"$T/rtt3.out" & p3=$!
rtt3=$("$R" "$N" | sed -n 's/.*cpg_rtt_median_us=\([0-9]*\).*/\1/p')
wait $p2 $p3
echo "cpg round trip, 3 members all sending: median ${rtt3} us"

out=$("$M" -n u bench-u bench-uncontended "$N")
acq=$(echo "$out" | sed -n 's/.*acquire_median_us=\([0-9]*\).*/\1/p')
rel=$(echo "$out" | sed -n 's/.*release_median_us=\([0-9]*\).*/\1/p')
echo "uncontended EX acquire: median ${acq} us (release ${rel} us)"

H=$(( N / 4 ))
clr_bg ha "$M" -n ha bench-h bench-handoff "$H" a
clr_bg hb "$M" -n hb bench-h bench-handoff "$H" b
wait $PID_ha $PID_hb
ho=$(sed -n 's/.*handoff_median_us=\([0-9]*\).*/\1/p' "$T/ha.out")
echo "contended hand-off between 2 members: median ${ho} us"

S=$(( N / 10 ))
clr_bg r1 "$M" -n r1 bench-b bcast-recv $(( 5 + S / 50 ))
clr_bg r2 "$M" -n r2 bench-b bcast-recv $(( 5 + S / 50 ))
clr_wait_for "$T/r1.out" ready >/dev/null && clr_wait_for "$T/r2.out" ready >/dev/null
bo=$("$M" -n s bench-b bcast-send "$S")
bc=$(echo "$bo" | sed -n 's/.*sent=.*median_us=\([0-9]*\).*/\1/p')
echo "broadcast, 3 members (send to all acked): median ${bc} us"
wait $PID_r1 $PID_r2

ratio=$(awk -v a="$acq" -v r="$rtt" 'BEGIN { printf "%.2f", a / r }')
bratio=$(awk -v a="$bc" -v r="$rtt" 'BEGIN { printf "%.2f", a / r }')
echo "handoff_median_us=$ho broadcast_median_us=$bc broadcast_ratio=$bratio cpg_rtt3_median_us=$rtt3"
echo "lock_acquire_median_us=$acq cpg_rtt_median_us=$rtt ratio=$ratio"
