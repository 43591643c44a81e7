#!/bin/bash
# Three Pacemaker nodes share one clustered RAID1 through the ocf:clraid:clraid
# clone, with real fencing.
#
# Each node n1..n3 is a holder process that owns the node's network, mount
# and UTS namespaces; its corosync, pacemakerd (and so the agent and the
# engine) run inside, with private /etc/corosync, /run, /dev/shm,
# /var/lib/{corosync,pacemaker} and /var/log/{pacemaker,cluster}.  The nodes
# meet on a bridge in the test's own network namespace; the member files are
# the same on all three.  Fencing is tests/pacemaker/fence_clraidtest, which
# SIGKILLs every process of the target node's namespaces.  The clone is made
# by crm-templates/pcs-clraid-cpg.sh itself, with lock=cpg.
#
# Scenarios (each prints "scenario N: ok" and its timings):
#   1 disjoint writes from all three nodes, every region read on every node
#   2 power loss of a node mid-write: fenced, taken over, resynced, rejoins
#   3 a partition: the cut node freezes, the majority fences it and writes
#     only after the fence is confirmed; nothing acknowledged is lost
#   4 disable / enable: clean bitmaps, no resync on restart
#   5 standby / unstandby of one node: no takeover, no resync
#   6 crm_resource --force-check at depths 0, 10, 20 on every node
#   7-11 clraid-policyd's decisions, issue 15's cases (a) to (e): a path
#     failure on one node, a member failing everywhere, the last copy
#     failing, the fence device failing, a minority partition; 12: I/O
#     hung on one node (row 6); 13: one node loses every member (row 4);
#     14: path_failure_action=fail-disk; 15: a media error on a read (row 1);
#     16: a reservation conflict (row 7)
# By default this runs scenarios 1-6; live-cluster3-policy.sh runs 7-16
# (two tests, so that the suite's two lanes take one each: together they
# took about 7 minutes).  LIVE3_SCENARIOS="2 3" runs only those (each
# leaves all three nodes up; 15 must come before 7-14, below).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
CLRAID_PCMK_UNSHARE="-n -u"
. "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
set +e -u
for t in corosync corosync-quorumtool pacemakerd crmadmin crm_mon crm_resource \
	crm_attribute stonith_admin pcs ip nsenter unshare jq qemu-io nbdcopy nbdinfo; do
	requires "$t"
done
requires_lock cpg
PLUGIN=${CLRAID_NBDKIT_PLUGIN:-}
[ -n "$PLUGIN" ] || fail "no nbdkit-clraid-plugin.so in $top_builddir/.libs (set CLRAID_NBDKIT_PLUGIN)"
# shellcheck source=tests/cluster/pattern-functions.sh
. "$top_srcdir/tests/cluster/pattern-functions.sh"
# shellcheck source=tests/lock/corosync-conf.sh
. "$top_srcdir/tests/lock/corosync-conf.sh"
export LC_ALL=C
FENCE_AGENT="$top_srcdir/tests/pacemaker/fence_clraidtest"
RECIPE="$top_srcdir/crm-templates/pcs-clraid-cpg.sh"
NAME=vm
RES=clraid-$NAME
CLONE=$RES-clone
T0=$(now_ms)
step() { echo "[$(( ($(now_ms) - T0) / 1000 ))s] $*"; }

# --- the test cluster's directory, the fence agent, the agent ------------
N="$TESTDIR/nodes"
mkdir -p "$N"
: >"$N/clraid-test-nodes"
chmod 755 "$TESTDIR"
private_ocf
# The fencer and pcs look for fence agents in /usr/sbin only: a copy with
# ours in it, bound over /usr/sbin in this mount namespace alone.
cp -a /usr/sbin "$TESTDIR/sbin"
cp "$FENCE_AGENT" "$TESTDIR/sbin/fence_clraidtest"
chmod 755 "$TESTDIR/sbin/fence_clraidtest"
mount --bind "$TESTDIR/sbin" /usr/sbin || fail "bind mount over /usr/sbin"

# --- three nodes on a bridge ---------------------------------------------
ip link set lo up
ip link add br0 type bridge || fail "bridge"
ip link set br0 up
declare -a H
for i in 1 2 3; do
	D="$N/n$i"
	for d in etc-corosync var-lib-corosync var-log-cluster var-log-pacemaker run \
		var-lib-pacemaker/cib var-lib-pacemaker/pengine var-lib-pacemaker/blackbox \
		var-lib-pacemaker/cores; do
		mkdir -p "$D/$d"
	done
	chown -R hacluster:haclient "$D/var-lib-pacemaker" "$D/var-log-pacemaker"
	unshare -n -u -m --propagation private sh -c "
		hostname n$i
		mount --bind $D/etc-corosync /etc/corosync
		mount --bind $D/var-lib-corosync /var/lib/corosync
		[ -d /var/log/cluster ] && mount --bind $D/var-log-cluster /var/log/cluster
		mount --bind $D/var-lib-pacemaker /var/lib/pacemaker
		mount --bind $D/var-log-pacemaker /var/log/pacemaker
		mount --bind $D/run /run
		mount -t tmpfs -o mode=1777 tmpfs /dev/shm
		ip link set lo up
		: >$D/ready
		exec sleep infinity" >"$D/holder.out" 2>&1 &
	H[i]=$!
	echo "${H[i]}" >"$D/holder.pid"
done
# on I CMD...: run CMD on node I (absolute paths: nsenter changes the cwd).
on() { local i=$1; shift; nsenter -t "${H[i]}" -n -m -u "$@"; }
cl_run_on() { on "$@"; }
cl_uri() { echo "nbd+unix:///?socket=/run/clraid/$NAME.sock"; }

# node_pids I: every process of node I but its holder.
node_pids() {
	local ns p
	ns=$(readlink "/proc/${H[$1]}/ns/net") || return 0
	# one find, not a readlink per process (see fence_clraidtest)
	ns=${ns//[/\\[}
	find /proc/[0-9]*/ns/net -maxdepth 0 -lname "${ns//]/\\]}" 2>/dev/null |
		while IFS=/ read -r _ _ p _; do
			[ "$p" = "${H[$1]}" ] || echo "$p"
		done
}
# power_off I: pull node I's plug, with the fence agent's own kill.
power_off() {
	printf 'action=off\nport=n%s\nnodes_dir=%s\n' "$1" "$N" | "$FENCE_AGENT" >/dev/null 2>&1 ||
		fail "power off n$1"
}
teardown() {
	for i in 1 2 3; do [ -n "${H[i]:-}" ] && kill -0 "${H[i]}" 2>/dev/null && power_off "$i"; done
	for i in 1 2 3; do [ -n "${H[i]:-}" ] && kill -KILL "${H[i]}" 2>/dev/null; done
	wait 2>/dev/null
	return 0
}
cleanup_fn teardown
dump_logs() {
	local i
	for i in 1 2 3; do
		echo "--- n$i corosync"; tail -n 5 "$N/n$i/corosync.out" "$N/n$i/corosync.log" 2>/dev/null
		echo "--- n$i pacemaker.log (tail)"; grep -E 'error|warning|clraid|fence' "$N/n$i/pacemaker.log" 2>/dev/null | tail -n 25
		echo "--- n$i engine log (tail)"; tail -n 15 "$N/n$i/run/clraid/$NAME.log" 2>/dev/null
		echo "--- n$i clraid-policyd (tail)"; tail -n 15 "$N/n$i/run/clraid/clraid-policyd.log" 2>/dev/null
	done
	echo "--- fence.log"; cat "$N/fence.log" 2>/dev/null
	echo "--- crm_mon (n1)"; on 1 crm_mon -1 -A 2>&1 | head -n 60
	# last, for a CI that shows only a failed test's tail: what each
	# engine holds, and where each writer is
	for i in 1 2 3; do
		echo "--- n$i: $(on "$i" timeout 5 "$CLRAID" status "$NAME" --json 2>/dev/null |
			jq -c '{state, frozen, held_for_decision: [.devices[] | .awaiting_decision.held_writes // 0]} +
				(.cluster | {members, writes_held, unconfirmed, writes_waiting, write_hold,
				remote_window, recovering, last_takeover})' 2>/dev/null)"
		[ -z "${W_LOGS[i]:-}" ] || echo "    writer: $(writer_state "$i")"
	done
}
# writer_state I: node I's writer's last round lines and its last
# acknowledgement (ms), on one line.
writer_state() {
	local l=${W_LOGS[$1]}
	echo "$(grep -a '^round \|^end ' "$l" 2>/dev/null | tail -n 2 | tr '\n' ' ')last ack $(cl_acks "$l" | sort -n | tail -n 1 | cut -d' ' -f1); $(grep -a -m1 "$CL_FAILED" "$l" 2>/dev/null)"
}

n=0
for i in 1 2 3; do
	until [ -e "$N/n$i/ready" ]; do
		n=$((n + 1)); [ "$n" -lt 100 ] || { cat "$N/n$i/holder.out"; fail "node n$i holder not ready"; }
		sleep 0.1
	done
	ip link add "v$i" type veth peer name eth0 netns "${H[i]}" || fail "veth of n$i"
	ip link set "v$i" master br0 up
	on "$i" ip addr add "10.99.0.$i/24" dev eth0
	on "$i" ip link set eth0 up
	clr_corosync_conf3 clraidtest 10.99.0 "$N/n$i/corosync.log" >"$N/n$i/etc-corosync/corosync.conf"
done
step "3 nodes: holders ${H[*]}, bridge up"

# The fence agent acts on test nodes only.
fa() { printf '%s\n' "$@" | "$FENCE_AGENT" 2>&1; }
out=$(fa action=off port=n1 nodes_dir="$TESTDIR") &&
	fail "fence agent: a directory without the marker was accepted: $out"
echo "ok: fence agent refuses an unmarked directory: $out"
sleep 60 &
mkdir -p "$N/n9" && echo $! >"$N/n9/holder.pid"
out=$(fa action=off port=n9 nodes_dir="$N") && fail "fence agent: a process of the test's own was accepted: $out"
kill -0 $! || fail "fence agent killed a process that is no test node"
kill $!
echo "ok: fence agent refuses a process that is no test node: $out"
rm -rf "${N:?}/n9"
[ "$(fa action=list nodes_dir="$N" | tr '\n' ' ')" = "n1 n2 n3 " ] || fail "fence agent: list"
fa action=status port=n2 nodes_dir="$N" | grep -q 'Status: OFF' || fail "fence agent: n2 should be off"
fa action=metadata | xmllint --noout - || fail "fence agent: meta-data is not XML"

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds, every 0.2 s
# for the first 2 s, then every 0.5 s: a poll costs up to 0.2 CPU-s (a
# `clraid status` with jq through nsenter, crm_mon), and a wait for a
# fence, a rejoin or a resync takes tens of seconds.  Timings taken after
# a wait are as fine as its polls.
wait_for() {
	local w=$1 s=$2 i=0 end
	shift 2
	end=$(($(now_ms) + s * 1000))
	until "$@" >/dev/null 2>&1; do
		[ "$(now_ms)" -lt "$end" ] || { dump_logs; fail "timed out after ${s}s: $w"; }
		if [ "$i" -lt 10 ]; then sleep 0.2; else sleep 0.5; fi
		i=$((i + 1))
	done
}

# power_on I [dc-deadtime]: a fresh boot of node I: empty /run and
# /dev/shm, then corosync and pacemakerd.
power_on() {
	local i=$1 D="$N/n$1"
	[ -z "$(node_pids "$i")" ] || fail "n$i is still running"
	rm -rf "${D:?}/run/"*
	on "$i" sh -c 'rm -rf /dev/shm/*'
	# started from a subshell that exits: bash neither waits for them nor
	# reports their SIGKILL (fencing kills them by namespace, not by pid)
	( (exec nsenter -t "${H[i]}" -n -m -u corosync -f -c /etc/corosync/corosync.conf) \
		>"$D/corosync.out" 2>&1 & )
	wait_for "corosync on n$i answers" 20 eval "on $i corosync-cfgtool -s >/dev/null 2>&1"
	( (exec nsenter -t "${H[i]}" -n -m -u env PCMK_logfile="$D/pacemaker.log" setsid pacemakerd) \
		>"$D/pacemakerd.out" 2>&1 & )
}
quorum_of() { on "$1" corosync-quorumtool -s 2>/dev/null | grep -q "Total votes:[[:space:]]*$2\$"; }
# online V COUNT: crm_mon on node V shows a DC and COUNT nodes online.
online() {
	local out
	out=$(on "$1" crm_mon -1 2>/dev/null) || return 1
	! grep -q 'Current DC: NONE' <<<"$out" && grep -q 'Current DC:' <<<"$out" &&
		[ "$(sed -n 's/.*Online: \[ \(.*\) \]/\1/p' <<<"$out" | wc -w)" = "$2" ]
}

# n1 first, with a short dc-deadtime in its CIB, until it is the DC; the
# other two then join that DC at once instead of waiting 20 s to elect one.
power_on 1
wait_for "the CIB of n1 answers" 30 on 1 crm_attribute -t crm_config -n dc-deadtime -v 2s
wait_for "n1 is the DC" 60 online 1 1
step "pacemaker: n1 is the DC"
power_on 2
power_on 3
wait_for "corosync: 3 votes" 30 quorum_of 1 3
wait_for "Pacemaker: 3 nodes online" 90 online 1 3
fa action=status port=n2 nodes_dir="$N" | grep -q 'Status: ON' || fail "fence agent: n2 should be on"
fa action=on port=n2 nodes_dir="$N" >/dev/null || fail "fence agent: on for a running node"
step "pacemaker: 3 nodes online"

# --- fencing, the array, the clone from the recipe -----------------------
on 1 pcs stonith create fence-test fence_clraidtest nodes_dir="$N" \
	pcmk_host_list="n1 n2 n3" op monitor interval=60s >"$N/pcs.out" 2>&1 ||
	{ cat "$N/pcs.out"; fail "pcs stonith create"; }
DEVS=$(make_array "$NAME" 1 2 --nodes=4 --home-cluster=clraidtest --bitmap-chunk=512K)
read -r -a LEGS <<<"$DEVS"
on 1 pcs cluster cib "$N/cib.xml" || fail "pcs cluster cib"
on 1 env ARRAY="$NAME" DEVICES="$DEVS" NODES="n1 n2 n3" FENCING=existing FILESYSTEM=none \
	CLRAID_BIN="$CLRAID" CLRAID_PLUGIN="$PLUGIN" sh "$RECIPE" "$N/cib.xml" >"$N/recipe.out" 2>&1 ||
	{ cat "$N/recipe.out"; fail "the pcs recipe $RECIPE"; }
on 1 crm_verify -x "$N/cib.xml" >"$N/verify.out" 2>&1 || { cat "$N/verify.out"; fail "crm_verify of the recipe's CIB"; }
on 1 pcs cluster cib-push "$N/cib.xml" --config >"$N/push.out" 2>&1 || { cat "$N/push.out"; fail "pcs cluster cib-push"; }

# running_on NODES...: the clone runs on exactly these nodes.
running_on() {
	local got want
	got=$(on 1 crm_resource -r "$RES" --locate 2>/dev/null | sed -n 's/.*is running on: \(n[0-9]\).*/\1/p' | sort | tr '\n' ' ')
	want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	[ "$got" = "$want" ]
}
# node_attr VIEW NODE ATTR: the value crm_mon -1 -A on node VIEW shows.
node_attr() {
	on "$1" crm_mon -1 -A 2>/dev/null | awk -v n="Node: n$2:" -v a="clraid-$NAME-$3" '
		/\* Node: / { cur = ($0 ~ n) } cur && $2 == a { print $NF; exit }'
}
attr_is() { [ "$(node_attr "$1" "$2" "$3")" = "$4" ]; }
# st I JQ: one value of node I's engine status.
st() { on "$1" timeout 20 "$CLRAID" status "$NAME" --json 2>/dev/null | jq -r "$2"; }
st_is() { [ "$(st "$1" "$2")" = "$3" ]; }
members() { st "$1" '.cluster.members | if type == "array" then length else . end'; }
members_are() { [ "$(members "$1")" = "$2" ]; }

t=$(now_ms)
wait_for "clone started on n1 n2 n3" 90 running_on n1 n2 n3
for i in 1 2 3; do wait_for "n$i: 3 members" 30 members_are "$i" 3; done
step "clone $CLONE started on all 3 nodes in $(($(now_ms) - t)) ms"
for v in 1 2 3; do
	for i in 1 2 3; do
		wait_for "crm_mon on n$v: n$i members 3" 30 attr_is "$v" "$i" members 3
		wait_for "crm_mon on n$v: n$i state clean" 30 attr_is "$v" "$i" state clean
	done
done
declare -A SLOT
for i in 1 2 3; do
	SLOT[$i]=$(node_attr "$i" "$i" slot)
	[ "${SLOT[$i]}" = "$(st "$i" .cluster.slot)" ] || fail "n$i: crm_mon slot ${SLOT[$i]} differs from the engine's"
	echo "crm_mon -1 -A on n$i: n$i state $(node_attr "$i" "$i" state), slot ${SLOT[$i]}, members $(node_attr "$i" "$i" members)"
done
[ "$(printf '%s\n' "${SLOT[@]}" | sort -u | wc -l)" = 3 ] || fail "the engines do not hold three different slots: ${SLOT[*]}"
SIZE=$(st 1 .size_bytes)
REGION_GAP=$((16 * 1048576))
declare -a BASE
for i in 1 2 3; do BASE[i]=$(((i - 1) * REGION_GAP + 1048576)); done
[ "$SIZE" -ge $((3 * REGION_GAP)) ] || fail "array too small: $SIZE"

# read_all I OUT: node I's whole export into OUT; its sha256 on stdout.
read_all() {
	# (called in $(...): the logs go to stderr, and the failure stops the test)
	on "$1" timeout 60 nbdcopy "$(cl_uri)" "$2" || { dump_logs >&2; fail "nbdcopy on n$1"; }
	sha256sum <"$2" | cut -c1-16
}
# verify_data TAG NODES...: every listed node reads the same, and that is
# what the writers' logs (W_LOGS) say it must be (in-flight: old or new).
verify_data() {
	local tag=$1 i s first="" exps=()
	shift
	for i in 1 2 3; do
		cl_expect "${W_LOGS[i]}" "$i" "${BASE[i]}" >"$N/exp.$tag.$i"
		exps+=("$N/exp.$tag.$i")
	done
	cl_build_expected "$SIZE" "$N/expected" "${exps[@]}"
	for i in "$@"; do
		s=$(read_all "$i" "$N/img$i") || exit 1
		[ -z "$first" ] && first=$s
		[ "$s" = "$first" ] || { cmp -l "$N/img$1" "$N/img$i" | head -5; fail "$tag: n$i reads other data than n$1"; }
		cl_verify "$N/img$i" "$N/expected" "${exps[@]}" >"$N/verify.out" ||
			{ cat "$N/verify.out"; fail "$tag: n$i: data differs from the acknowledged writes"; }
	done
	grep 'in-flight' "$N/verify.out"
	rm -f "$N"/img? "$N/expected"
	echo "$tag: nodes $* read the same (sha256 $first...) and every acknowledged write"
}
declare -a W_LOGS
for i in 1 2 3; do W_LOGS[i]="$N/none.$i"; : >"${W_LOGS[i]}"; done

# --- scenario 1: disjoint writes ------------------------------------------
scenario_1() {
	t=$(now_ms)
	pids=()
	for i in 1 2 3; do
		W_LOGS[i]="$N/w1.$i.log"
		cl_writer "$i" "${BASE[i]}" "${W_LOGS[i]}" "$N/nostop" 2 &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in 1 2 3; do
		! grep -q "$CL_FAILED" "${W_LOGS[i]}" || { cat "${W_LOGS[i]}"; fail "scenario 1: a write on n$i failed"; }
	done
	tw=$(($(now_ms) - t))
	verify_data s1 1 2 3
	echo "scenario 1: ok: 3 nodes x $((2 * CL_NB)) writes of $CL_BS B in $tw ms; every node read all three regions ($(($(now_ms) - t - tw)) ms)"
}

# fenced_after NODE T_MS: the fencer ran the fence agent's "reboot" of NODE
# (the test's own power_off is an "off") and it ended after T_MS, and the
# fence history on n1 records a successful fencing of NODE; prints when
# the agent was done (ms: the history has whole seconds only).
fenced_after() {
	on 1 stonith_admin --history "n$1" 2>/dev/null | grep -q "of n$1 successful" || return 1
	awk -v n="n$1" -v t="$2" '$2 == "reboot" && $3 == n && $4 == "done" && $1 > t { print $1; exit }' \
		"$N/fence.log" 2>/dev/null | grep .
}
# check_hold T0 T_FENCE WHAT: the survivors n1 and n2 held new writes from
# when their engines learned of the lost node (after T0) until the fence
# completed (T_FENCE): no acknowledgement reached a client in between (the
# clients stamp acknowledgements themselves), but the one write per client
# that may have been in flight when the hold began.  Sets FIRST_ACK[i].
declare -a FIRST_ACK
check_hold() {
	local t0=$1 tf=$2 i hs he inside
	for i in 1 2; do
		hs=$(st "$i" '.cluster.write_hold.start_ms // 0')
		he=$(st "$i" '.cluster.write_hold.end_ms // 0')
		[ "$hs" -gt "$t0" ] || fail "n$i: no write hold after $3 (write_hold.start_ms $hs)"
		[ "$he" -ge "$tf" ] || fail "n$i: writes resumed at $he ms, before the fence completed at $tf ms"
		inside=$(cl_acks "${W_LOGS[i]}" | awk -v a="$hs" -v b="$tf" '$1 >= a && $1 < b' | wc -l)
		[ "$inside" -le 1 ] || {
			cl_acks "${W_LOGS[i]}" | awk -v a=$((hs - 300)) -v b=$((tf + 300)) '$1 > a && $1 < b'
			fail "n$i: $inside writes acknowledged between the hold ($hs) and the fence ($tf)"
		}
		FIRST_ACK[i]=$(cl_acks "${W_LOGS[i]}" | awk -v t="$tf" '$1 >= t { print $1; exit }')
		echo "n$i: writes held from +$((hs - t0)) ms to +$((he - t0)) ms after $3 ($inside write in flight at the hold completed in it); first acknowledgement after the fence at +$((${FIRST_ACK[i]:-$tf} - t0)) ms"
	done
}
# fenced_then_taken_over T0: Pacemaker fences n$V after T0, then a survivor
# takes its slot over (not before the fence) and resyncs.  Sets t_fence,
# TAKER, t_take and t_sync.
fenced_then_taken_over() {
	wait_for "n$V fenced by Pacemaker" 60 fenced_after "$V" "$1"
	t_fence=$(fenced_after "$V" "$1")
	wait_for "a survivor took n$V's bitmap over" 60 taker_after "$1"
	TAKER=$(taker_after "$1")
	t_take=$(st "$TAKER" .cluster.last_takeover.at_ms)
	[ "$t_take" -ge "$t_fence" ] || fail "takeover at $t_take ms, before the fencing completed at $t_fence ms"
	wait_for "resync done on n$TAKER" 60 resync_done_after "$TAKER" "$t_take"
	t_sync=$(st "$TAKER" .last_resync.ended_ms)
}
# slow_leg K: node K's writes to the second leg take 20 ms more, so that
# one of its writes is surely in flight, its legs maybe different, when it
# is cut off.
slow_leg() {
	on "$1" timeout 20 "$CLRAID" fault "$NAME" "${LEGS[1]}" delay --ms 20 >/dev/null ||
		fail "fault delay on n$1"
}
# in_mid_round K: node K's writer is in a later round, mid-way.
in_mid_round() {
	local r a
	read -r r a <<<"$(cl_in_round "${W_LOGS[$1]}")"
	[ "$r" -ge 2 ] && [ "$a" -ge 4 ] && [ "$a" -le $((CL_NB - 4)) ]
}
# start_writers TAG [NODES...]: the nodes (all three by default) write
# their regions until $N/stop.TAG, LIVE3_PACE_MS (25) apart: flat out, the
# three writers kept both CPUs busy for as long as a scenario waited on
# the cluster (58 CPU-s in 30 s), and a write is still in flight for as
# long as the engine takes (slow_leg: 20 ms more on one leg).
start_writers() {
	local i tag=$1
	shift
	WPIDS=()
	rm -f "$N/stop.$tag"
	[ $# -gt 0 ] || set -- 1 2 3
	for i in "$@"; do
		W_LOGS[i]="$N/w$tag.$i.log"
		CL_PACE_MS=${LIVE3_PACE_MS:-25} cl_writer "$i" "${BASE[i]}" "${W_LOGS[i]}" "$N/stop.$tag" &
		WPIDS+=($!)
	done
}
stop_writers() { touch "$N/stop.$1"; wait "${WPIDS[@]}"; }
# survivors_ok A B: their writers saw no failure.
survivors_ok() {
	local i
	for i in "$@"; do
		! grep -q "$CL_FAILED" "${W_LOGS[i]}" ||
			{ grep -m3 "$CL_FAILED" "${W_LOGS[i]}"; fail "a client write on survivor n$i failed"; }
	done
}
# check_clean I: a scrub on node I finds no mismatch.
check_clean() {
	on "$1" timeout 120 "$CLRAID" check "$NAME" --wait >/dev/null || fail "clraid check on n$1"
	st_is "$1" .last_check.mismatches 0 || fail "n$1: check found $(st "$1" .last_check.mismatches) mismatches"
}
took_over() { [ "$(st "$1" '.cluster.last_takeover.at_ms // 0')" -gt "$2" ]; }
# taker_after T_MS: the survivor (n1 or n2) that took a slot over after T_MS.
taker_after() { if took_over 1 "$1"; then echo 1; elif took_over 2 "$1"; then echo 2; else return 1; fi; }
resync_done_after() { [ "$(st "$1" '.last_resync.ended_ms // 0')" -gt "$2" ] && st_is "$1" .sync_action idle; }
# rejoin I: power node I on; its clone instance starts; three members again.
rejoin() {
	local t
	# Pacemaker done with the node's loss: the DC idle, the node down and
	# clean (its own fencing of a node it saw leave, after ours, would
	# kill the node again as it boots)
	wait_for "Pacemaker settled with n$1 down" 60 settled_down "$1"
	t=$(now_ms)
	power_on "$1"
	wait_for "n$1 back online" 90 online 1 3
	wait_for "clone runs on n1 n2 n3 again" 90 running_on n1 n2 n3
	for i in 1 2 3; do wait_for "n$i: 3 members" 60 members_are "$i" 3; done
	wait_for "n$1 idle" 60 st_is "$1" .sync_action idle
	REJOIN_MS=$(($(now_ms) - t))
	# nobody fenced it again on its way back (stale evidence of a fenced
	# node, written back when it rejoins, once did)
	! awk -v n="n$1" -v t="$t" '$3 == n && $1 > t' "$N/fence.log" | grep . ||
		fail "n$1 was fenced again as it rejoined"
}

# --- scenario 2: power loss of n3 mid-write -------------------------------
scenario_2() {
	slow_leg "$V"
	start_writers 2
	wait_for "n$V mid-write" 60 in_mid_round "$V"
	t_kill=$(now_ms)
	power_off "$V"
	echo "n$V: every process SIGKILLed at t=0, its writer in round $(cl_in_round "${W_LOGS[V]}")"
	fenced_then_taken_over "$t_kill"
	stop_writers 2
	survivors_ok 1 2
	grep -q "$CL_FAILED\|rc 137\|rc 124" "${W_LOGS[V]}" || fail "n$V's writer was not cut mid-write"
	dirty=$(st "$TAKER" .cluster.last_takeover.bytes)
	resynced=$(st "$TAKER" .last_resync.bytes)
	[ "$dirty" -gt 0 ] || fail "n$V died mid-write but its bitmap had no dirty chunk"
	check_hold "$t_kill" "$t_fence" "the kill"
	on 1 stonith_admin --history "n$V" 2>/dev/null | head -n 3
	verify_data s2 1 2
	check_clean "$TAKER"
	rejoin "$V"
	verify_data s2-rejoined "$V"
	echo "scenario 2: ok: kill -> fence confirmed $((t_fence - t_kill)) ms -> takeover (n$TAKER) $((t_take - t_kill)) ms -> resync done $((t_sync - t_kill)) ms; resynced $resynced of $dirty dirty bytes; check 0 mismatches; n$V rejoined in $REJOIN_MS ms"
}

# --- scenario 3: a partition cuts n3 off ----------------------------------
scenario_3() {
	slow_leg "$V"
	start_writers 3
	wait_for "n$V mid-write" 60 in_mid_round "$V"
	t_cut=$(now_ms)
	ip link set "v$V" down
	wait_for "n$V frozen" 30 frozen
	t_frozen=$(now_ms)
	fenced_then_taken_over "$t_cut"
	wait_for "n1 writes after the fence" 30 acks_after 1 "$t_fence"
	stop_writers 3
	survivors_ok 1 2
	check_hold "$t_cut" "$t_fence" "the cut"
	ip link set "v$V" up
	verify_data s3 1 2
	check_clean "$TAKER"
	rejoin "$V"
	verify_data s3-rejoined "$V"
	echo "scenario 3: ok: partition -> n$V frozen <= $((t_frozen - t_cut)) ms -> fence confirmed $((t_fence - t_cut)) ms -> takeover $((t_take - t_cut)) ms -> majority writing $((FIRST_ACK[1] - t_cut)) ms (n1), $((FIRST_ACK[2] - t_cut)) ms (n2); n$V rejoined in $REJOIN_MS ms"
}

# --- scenario 4: disable, enable ------------------------------------------
scenario_4() {
	t=$(now_ms)
	on 1 pcs resource disable "$CLONE" >/dev/null || fail "pcs resource disable"
	wait_for "clone stopped everywhere" 60 stopped_all
	t_stop=$(($(now_ms) - t))
	for i in 1 2 3; do [ ! -e "$N/n$i/run/clraid/$NAME.pid" ] || fail "n$i: the engine's pid file is left"; done
	slots_clean || { "$CLRAID" examine --json "${LEGS[@]}" | jq -c '[.[].bitmap.slots[]]'; fail "dirty bits left after a clean stop"; }
	t=$(now_ms)
	on 1 pcs resource enable "$CLONE" >/dev/null || fail "pcs resource enable"
	wait_for "clone running everywhere" 90 running_on n1 n2 n3
	for i in 1 2 3; do wait_for "n$i: 3 members" 60 members_are "$i" 3; done
	t_start=$(($(now_ms) - t))
	for i in 1 2 3; do
		st_is "$i" .sync_action idle || fail "n$i resyncs after a clean restart"
		st_is "$i" .last_resync.started_ms null || fail "n$i ran a resync after a clean restart"
	done
	echo "scenario 4: ok: disable stopped all 3 in $t_stop ms with every bitmap slot clean; enable started all 3 in $t_start ms with no resync"
}

# --- scenario 5: standby, unstandby ---------------------------------------
scenario_5() {
	declare -A REC LR
	for i in 1 3; do
		REC[$i]=$(st "$i" .cluster.recovered_slots)
		LR[$i]=$(st "$i" '.last_resync.started_ms')
	done
	# n1 and n3 write all along, while n2 leaves
	start_writers 5 1 3
	wait_for "n1 writes" 30 in_mid_round 1
	t=$(now_ms)
	on 1 pcs node standby n2 >/dev/null || fail "pcs node standby n2"
	wait_for "n2's instance stopped" 60 running_on n1 n3
	for i in 1 3; do wait_for "n$i: 2 members" 30 members_are "$i" 2; done
	t_sb=$(($(now_ms) - t))
	wait_for "n1 writes after the standby" 30 acks_after 1 "$(now_ms)"
	stop_writers 5
	survivors_ok 1 3
	for i in 1 3; do
		[ "$(st "$i" .cluster.recovered_slots)" = "${REC[$i]}" ] || fail "n$i took a slot over after a standby"
		[ "$(st "$i" .last_resync.started_ms)" = "${LR[$i]}" ] || fail "n$i resynced after a standby"
	done
	verify_data s5 1 3
	on 1 pcs node unstandby n2 >/dev/null || fail "pcs node unstandby n2"
	t=$(now_ms)
	wait_for "clone back on n2" 60 running_on n1 n2 n3
	for i in 1 2 3; do wait_for "n$i: 3 members" 30 members_are "$i" 3; done
	echo "scenario 5: ok: standby n2 stopped its instance in $t_sb ms, no takeover and no resync on n1 and n3, which wrote throughout; unstandby: back in $(($(now_ms) - t)) ms"
}

# --- scenario 6: deep checks on every node --------------------------------
scenario_6() {
	t=$(now_ms)
	for i in 1 2 3; do
		for l in 0 10 20; do
			on "$i" crm_resource -r "$RES" --force-check="$l" >"$N/check.out" 2>&1 ||
				{ cat "$N/check.out"; fail "n$i: crm_resource --force-check=$l"; }
		done
	done
	echo "scenario 6: ok: crm_resource --force-check at depths 0, 10, 20 on n1, n2, n3 in $(($(now_ms) - t)) ms"
}

# --- clraid-policyd's decisions (issue 15's cases) ------------------------
# pd_log I: node I's clraid-policyd log (the agent starts the daemon).
pd_log() { echo "$N/n$1/run/clraid/clraid-policyd.log"; }
# decided PATTERN T_MS: crm_mon shows a decision attribute matching
# PATTERN, taken at T_MS or later (the attribute keeps the last decision,
# with its time in whole seconds).
decided() {
	local v t
	v=$(on 1 crm_mon -1 -A 2>/dev/null | grep "clraid-$NAME-decision" | grep -- "$1") || return 1
	t=$(date -d "$(sed -n 's/.*: \([0-9-]* [0-9:]*\) row .*/\1/p' <<<"$v")" +%s) || return 1
	[ "$t" -ge $(($2 / 1000)) ]
}
decision() { on 1 crm_mon -1 -A 2>/dev/null | grep "clraid-$NAME-decision" | sed 's/^ *\* //'; }
# held_on I: node I's engine holds writes for a decision.
held_on() { [ "$(st "$1" '[.devices[].awaiting_decision.held_writes // 0] | add')" -gt 0 ]; }
# leg_state I K: the state of member LEGS[K] on node I.
leg_state() { st "$1" ".devices[] | select(.path == \"${LEGS[$2]}\") | .state"; }
leg_is() { [ "$(leg_state "$1" "$2")" = "$3" ]; }
fault() { on "$1" timeout 20 "$CLRAID" fault "$NAME" "${LEGS[$2]}" "$3" >/dev/null || { dump_logs; fail "n$1: clraid fault $3"; }; }
# fences_after T_MS: fence actions the agent completed after T_MS.
fences_after() { awk -v t="$1" '$4 == "done" && $1 > t' "$N/fence.log" 2>/dev/null; }
policy_timings() { echo "error -> writes held $(($2 - $1)) ms -> decision $(($3 - $1)) ms -> $4 $(($5 - $1)) ms"; }
# ever_in_sync_everywhere K: LEGS[K] is in sync on every running node.
leg1_in_sync_on() { local i; for i in "$@"; do leg_is "$i" 1 in_sync || return 1; done; }

# --- scenario 7 (case a): a path failure on one node ------------------------
# n3 loses its path to the second member while all three write.  Its
# writes to it wait for the decision; every node probes the member; n1
# and n2 read and write it, n3 cannot: clraid-policyd on the DC decides
# row 3 and fences n3 through libstonithd.  The member is failed nowhere;
# n1 and n2 write on with both copies, n3's bitmap is taken over, and a
# check finds both copies equal once n3 is back.
scenario_7() {
	path_fault_fenced 7 3 1
	echo "scenario 7 (issue 15 case a): ok: $PF_TIMINGS; the member stayed in sync on n1 and n2; check 0 mismatches after n$V rejoined"
}

# --- scenario 13 (row 4): one node loses every member -----------------------
# n3's HBA or fabric: both members vanish on n3 alone.  Row 4 fences n3
# without waiting for probes; both members stay in sync on n1 and n2.
scenario_13() {
	path_fault_fenced 13 4 0 1
	echo "scenario 13 (row 4): ok: $PF_TIMINGS; both members stayed in sync on n1 and n2; check 0 mismatches after n$V rejoined"
}

# path_fault_fenced TAG ROW LEG...: under writes from all three, n3's path
# to these members vanishes; its writes wait, the DC decides ROW and
# fences n3 through libstonithd; the members stay in sync on n1 and n2, n3's
# bitmap is taken over, and a check finds the copies equal once n3 is back.
# Sets PF_TIMINGS.
path_fault_fenced() {
	local tag=$1 row=$2 t0 t_held t_dec t_fence k i prev_log
	shift 2
	if [ $# -eq 1 ]; then
		# mid-write
		start_writers "$tag"
		wait_for "n$V mid-write" 60 in_mid_round "$V"
		t0=$(now_ms)
		fault "$V" "$1" vanish
	else
		# every path at once (an HBA): armed before n3's next write, which
		# the writers, starting, issue at once
		prev_log=${W_LOGS[V]}
		t0=$(now_ms)
		for k in "$@"; do fault "$V" "$k" vanish; done
		start_writers "$tag"
	fi
	wait_for "n$V: writes held for the decision" 30 held_on "$V"
	t_held=$(now_ms)
	on "$V" "$CLRAID" status "$NAME" | grep 'AWAITING DECISION' || fail "clraid status on n$V does not show the held writes"
	wait_for "decision: row $row, fence n$V" 60 decided "row $row fence: fence n$V" "$t0"
	t_dec=$(now_ms)
	decision
	wait_for "n$V fenced by clraid-policyd" 60 fenced_after "$V" "$t0"
	wait_for "clraid status on n1 shows the decision" 20 status_shows 1 "policy: last decision .* row $row fence: fence n$V"
	on 1 "$CLRAID" status "$NAME" | grep 'policy:'
	t_fence=$(fenced_after "$V" "$t0")
	grep -q "fencing n$V (reboot)" "$(pd_log 1)" || { cat "$(pd_log 1)"; fail "clraid-policyd on n1 did not fence n$V"; }
	if [ $# -eq 1 ]; then
		# n3 wrote before: its dirty bits are taken over and resynced (with
		# every path gone before its first write, no bit of its reached a
		# disk, and there is nothing to take over)
		taken_over_after "$t0"
	fi
	wait_for "n1 writes after the fence" 30 acks_after 1 "$t_fence"
	stop_writers "$tag"
	survivors_ok 1 2
	if [ $# -gt 1 ]; then
		# n3 had no path from its first write on: nothing of this round
		# reached a disk, and its region must hold what it held before
		[ -z "$(cl_acks "${W_LOGS[V]}")" ] || fail "n$V acknowledged a write without a path to any member"
		W_LOGS[V]=$prev_log
	fi
	for k in "$@"; do
		for i in 1 2; do
			leg_is "$i" "$k" in_sync || fail "member $k, which n$V lost its path to, was failed: n$i $(leg_state "$i" "$k")"
		done
	done
	# only n3 is fenced (Pacemaker may fence it once more, seeing it leave
	# the membership before it learned of our fencing: harmless)
	[ -z "$(fences_after "$t0" | awk -v n="n$V" '$3 != n')" ] || { fences_after "$t0"; fail "a node other than n$V was fenced"; }
	verify_data "s$tag" 1 2
	rejoin "$V"
	leg1_in_sync_on 1 2 3 || fail "the member is not in sync everywhere after n$V rejoined"
	check_clean 1
	verify_data "s$tag-rejoined" "$V"
	PF_TIMINGS=$(policy_timings "$t0" "$t_held" "$t_dec" "n$V fenced" "$t_fence")
}

# --- scenario 8 (case b): the same member fails on every node ---------------
# All three lose the second member: every probe fails, the DC decides row 2
# and fails it cluster-wide (the engines' held writes complete without it);
# nobody is fenced; everyone writes on, degraded.  Then the member comes
# back and is re-added.
scenario_8() {
	local t0 t_held t_dec t_fail i
	start_writers 8
	wait_for "n1 mid-write" 60 in_mid_round 1
	t0=$(now_ms)
	for i in 1 2 3; do fault "$i" 1 vanish; done
	wait_for "writes held for the decision" 30 held_on 1
	t_held=$(now_ms)
	wait_for "decision: row 2, fail-disk" 60 decided "row 2 fail-disk" "$t0"
	t_dec=$(now_ms)
	decision
	for i in 1 2 3; do wait_for "n$i: the member failed" 60 leg_is "$i" 1 faulty; done
	t_fail=$(now_ms)
	for i in 1 2 3; do wait_for "n$i writes on, degraded" 30 acks_after "$i" "$t_fail"; done
	stop_writers 8
	survivors_ok 1 2 3
	[ -z "$(fences_after "$t0")" ] || { fences_after "$t0"; fail "a node was fenced for a failing disk"; }
	for i in 1 2 3; do st_is "$i" .state degraded || fail "n$i: state $(st "$i" .state), not degraded"; done
	verify_data s8 1 2 3
	for i in 1 2 3; do fault "$i" 1 clear; done
	on 1 timeout 60 "$CLRAID" re-add "$NAME" "${LEGS[1]}" >/dev/null || fail "clraid re-add on n1"
	for i in 1 2 3; do wait_for "n$i: the member back in sync" 90 leg_is "$i" 1 in_sync; done
	for i in 1 2 3; do wait_for "n$i idle" 60 st_is "$i" .sync_action idle; done
	check_clean 1
	echo "scenario 8 (issue 15 case b): ok: $(policy_timings "$t0" "$t_held" "$t_dec" "failed on all 3" "$t_fail"); no fencing; all 3 wrote on degraded; re-added and clean"
}

# --- scenario 9 (case c): the last copy fails ------------------------------
# The second member is failed by hand, then the last one fails on every
# node under writes: the engines freeze (nothing is acknowledged), the DC
# decides row 10 with last_device_action=freeze; switched to error (pcs
# resource update, no restart), the decision becomes row 10 error and
# every engine fails the blocked writes with EIO.  Then the fault is
# cleared and the second member re-added: every acknowledged write is
# there.
scenario_9() {
	local t0 t_frozen t_dec t_dec2 t_err i inside
	on 1 timeout 60 "$CLRAID" fail "$NAME" "${LEGS[1]}" >/dev/null || fail "clraid fail on n1"
	for i in 1 2 3; do wait_for "n$i: redundancy 0" 30 st_is "$i" .redundancy 0; done
	start_writers 9
	wait_for "n1 mid-write" 60 in_mid_round 1
	t0=$(now_ms)
	for i in 1 2 3; do fault "$i" 0 vanish; done
	for i in 1 2 3; do wait_for "n$i frozen" 30 frozen_on "$i"; done
	t_frozen=$(now_ms)
	wait_for "decision: row 10, freeze" 60 decided "row 10 freeze" "$t0"
	t_dec=$(now_ms)
	decision
	for i in 1 2 3; do ! writer_failed "$i" || fail "n$i's writer got an error while the array was to stay frozen"; done
	on 1 pcs resource update "$RES" last_device_action=error >/dev/null || fail "pcs resource update last_device_action=error"
	wait_for "decision: row 10, error" 60 decided "row 10 error" "$t0"
	t_dec2=$(now_ms)
	decision
	for i in 1 2 3; do wait_for "n$i's writer got EIO" 60 writer_failed "$i"; done
	t_err=$(now_ms)
	for i in 1 2 3; do
		inside=$(cl_acks "${W_LOGS[i]}" | awk -v a="$t_frozen" -v b="$t_err" '$1 > a && $1 < b' | wc -l)
		[ "$inside" = 0 ] || fail "n$i: $inside writes acknowledged while the array was frozen"
	done
	stop_writers 9
	on 1 pcs resource update "$RES" last_device_action=freeze >/dev/null || fail "pcs resource update last_device_action=freeze"
	for i in 1 2 3; do fault "$i" 0 clear; done
	on 1 timeout 60 "$CLRAID" re-add "$NAME" "${LEGS[1]}" >/dev/null || fail "clraid re-add on n1"
	for i in 1 2 3; do wait_for "n$i: the member back in sync" 90 leg_is "$i" 1 in_sync; done
	for i in 1 2 3; do wait_for "n$i idle and not frozen" 60 eval "st_is $i .sync_action idle && ! frozen_on $i"; done
	verify_data s9 1 2 3
	check_clean 1
	# nobody fenced: not by a decision, and not by Pacemaker for a
	# depth-20 monitor read that got the decision's EIO
	[ -z "$(fences_after "$t0")" ] || { fences_after "$t0"; fail "a node was fenced while the last copy failed"; }
	echo "scenario 9 (issue 15 case c): ok: last copy fails -> all 3 frozen $((t_frozen - t0)) ms -> decision row 10 freeze $((t_dec - t0)) ms, no write acknowledged or failed while frozen; last_device_action=error -> decision $((t_dec2 - t0)) ms -> EIO on all 3 $((t_err - t0)) ms; re-added, every acknowledged write read back"
}

# --- scenario 10 (case d): the fence device fails ---------------------------
# As in scenario 7, but the fence device fails: fencing of n3 fails, the DC
# decides row 9 (freeze, fail nothing); n3's writes stay held past
# confirm_timeout, the member is failed nowhere.  Once the fence device
# works again, the retried fencing completes the decision.
scenario_10() {
	local t0 t_held t_dec t_dec9 t_fix t_fence
	start_writers 10
	wait_for "n$V mid-write" 60 in_mid_round "$V"
	: >"$N/fence-fails"
	t0=$(now_ms)
	fault "$V" 1 vanish
	wait_for "n$V: writes held for the decision" 30 held_on "$V"
	t_held=$(now_ms)
	wait_for "decision: row 3, fence n$V" 60 decided "row 3 fence: fence n$V" "$t0"
	t_dec=$(now_ms)
	wait_for "fencing failed: decision row 9" 90 decided "row 9 freeze" "$t0"
	t_dec9=$(now_ms)
	decision
	wait_for "n$V: writes held past confirm_timeout (15 s)" 60 held_longer_than "$V" 17000
	leg1_in_sync_on 1 2 3 || fail "a member was failed while fencing failed"
	st_is "$V" .policy.timeouts 0 || fail "n$V's engine stopped waiting for the decision"
	rm -f "$N/fence-fails"
	t_fix=$(now_ms)
	wait_for "n$V fenced once the fence device works" 90 fenced_after "$V" "$t_fix"
	t_fence=$(fenced_after "$V" "$t_fix")
	[ "$(grep -c "fencing n$V (reboot)" "$(pd_log 1)")" -ge 2 ] || { cat "$(pd_log 1)"; fail "clraid-policyd did not retry the fencing"; }
	taken_over_after "$t0"
	wait_for "n1 writes after the fence" 30 acks_after 1 "$t_fence"
	stop_writers 10
	survivors_ok 1 2
	leg1_in_sync_on 1 2 || fail "the member was failed"
	verify_data s10 1 2
	rejoin "$V"
	check_clean 1
	verify_data s10-rejoined "$V"
	echo "scenario 10 (issue 15 case d): ok: $(policy_timings "$t0" "$t_held" "$t_dec" "fencing failed, row 9 freeze" "$t_dec9"); held past confirm_timeout, nothing failed; fence device back -> fenced $((t_fence - t_fix)) ms later; check 0 mismatches after n$V rejoined"
}

# --- scenario 11 (case e): a minority partition decides nothing -------------
# n3 is cut off and its fencing takes 20 s (fence-delay): meanwhile n3's
# clraid-policyd, without quorum, decides row 8 (freeze, decide nothing)
# even with a member failing there, and neither fences nor fails a disk.
scenario_11() {
	local t_cut t_r8 t_fence
	echo 20 >"$N/fence-delay"
	start_writers 11
	wait_for "n$V mid-write" 60 in_mid_round "$V"
	t_cut=$(now_ms)
	ip link set "v$V" down
	wait_for "n$V frozen" 30 frozen
	fault "$V" 1 vanish
	wait_for "n$V's clraid-policyd: no quorum, decides nothing" 30 \
		grep -q "row 8, freeze: freeze: n$V has no quorum" "$(pd_log "$V")"
	t_r8=$(now_ms)
	grep "row 8" "$(pd_log "$V")" | head -n 1
	wait_for "n$V fenced by Pacemaker (after the 20 s delay)" 90 fenced_after "$V" "$t_cut"
	t_fence=$(fenced_after "$V" "$t_cut")
	rm -f "$N/fence-delay"
	! grep -q "fencing n\|failing member" "$(pd_log "$V")" ||
		{ cat "$(pd_log "$V")"; fail "the minority's clraid-policyd acted"; }
	taken_over_after "$t_cut"
	wait_for "n1 writes after the fence" 30 acks_after 1 "$t_fence"
	stop_writers 11
	survivors_ok 1 2
	leg1_in_sync_on 1 2 || fail "a member was failed by the minority"
	ip link set "v$V" up
	verify_data s11 1 2
	rejoin "$V"
	verify_data s11-rejoined "$V"
	echo "scenario 11 (issue 15 case e): ok: partition -> n$V's policy without quorum decided row 8 (nothing) in $((t_r8 - t_cut)) ms, fenced nobody, failed nothing; fenced by Pacemaker after $((t_fence - t_cut)) ms"
}
# taken_over_after T_MS: a survivor took n3's bitmap over after T_MS and
# finished resyncing it.  Sets TAKER.
taken_over_after() {
	wait_for "a survivor took n$V's bitmap over" 60 taker_after "$1"
	TAKER=$(taker_after "$1")
	wait_for "resync done on n$TAKER" 60 resync_done_after "$TAKER" "$(st "$TAKER" .cluster.last_takeover.at_ms)"
}
settled_down() {
	local mon
	on 1 crmadmin -S n1 -t 1s 2>/dev/null | grep -q S_IDLE || return 1
	mon=$(on 1 crm_mon -1 2>/dev/null) || return 1
	grep -q "OFFLINE: \[.*n$1" <<<"$mon" && ! grep -qi 'unclean\|pending fencing' <<<"$mon"
}
status_shows() { on "$1" "$CLRAID" status "$NAME" 2>/dev/null | grep -q -- "$2"; }
# --- scenario 12 (row 6): I/O hangs on one node ----------------------------
# n3's requests to the second member stop completing (a 10-minute delay):
# no error, just no progress.  After io_timeout (4 s here, by pcs resource
# update) its engine's member shows the stall, n3's daemon reports it as
# hung, and the DC fences n3 (row 6).  The member is failed nowhere.
scenario_12() {
	local t0 t_hung t_dec t_fence
	on 1 pcs resource update "$RES" io_timeout=4s >/dev/null || fail "pcs resource update io_timeout=4s"
	start_writers 12
	wait_for "n$V mid-write" 60 in_mid_round "$V"
	t0=$(now_ms)
	on "$V" timeout 20 "$CLRAID" fault "$NAME" "${LEGS[1]}" delay --ms 600000 >/dev/null || fail "fault delay on n$V"
	wait_for "n$V's evidence: member 1 hung" 60 eval "on 1 crm_mon -1 -A 2>/dev/null | grep -q 'clraid-$NAME-io.*m1=hung'"
	t_hung=$(now_ms)
	wait_for "decision: row 6, fence n$V" 60 decided "row 6 fence: fence n$V" "$t0"
	t_dec=$(now_ms)
	decision
	wait_for "n$V fenced by clraid-policyd" 60 fenced_after "$V" "$t0"
	t_fence=$(fenced_after "$V" "$t0")
	taken_over_after "$t0"
	wait_for "n1 writes after the fence" 30 acks_after 1 "$t_fence"
	stop_writers 12
	survivors_ok 1 2
	leg1_in_sync_on 1 2 || fail "the member was failed for a hang on one node"
	on 1 pcs resource update "$RES" io_timeout=60s >/dev/null || fail "pcs resource update io_timeout=60s"
	verify_data s12 1 2
	rejoin "$V"
	check_clean 1
	verify_data s12-rejoined "$V"
	echo "scenario 12 (row 6): ok: I/O hangs on n$V -> reported hung $((t_hung - t0)) ms -> decision row 6 $((t_dec - t0)) ms -> n$V fenced $((t_fence - t0)) ms; the member stayed in sync; check 0 mismatches after n$V rejoined"
}
held_longer_than() { [ "$(st "$1" '[.devices[].awaiting_decision.held_for_ms // 0] | max')" -ge "$2" ]; }
writer_failed() { grep -q "$CL_FAILED" "${W_LOGS[$1]}"; }
frozen_on() { [ "$(on "$1" timeout 5 "$CLRAID" status "$NAME" --json 2>/dev/null | jq -r '.frozen != null or .state == "frozen"')" = true ]; }

# frozen: the victim's engine has frozen its I/O.
frozen() { [ "$(on "$V" timeout 5 "$CLRAID" status "$NAME" --json 2>/dev/null | jq -r '.frozen != null or .state == "frozen"')" = true ]; }
# the majority writes again: acknowledgements after the fencing
acks_after() { cl_acks "${W_LOGS[$1]}" | awk -v t="$2" '$1 > t { n++ } END { exit !(n >= 2) }'; }
stopped_all() { on 1 crm_resource -r "$RES" --locate 2>&1 | grep -q 'is NOT running'; }
slots_clean() {
	[ "$("$CLRAID" examine --json "${LEGS[@]}" | jq '[.[].bitmap.slots[].dirty_bits] | add')" = 0 ]
}

# --- scenario 14: path_failure_action=fail-disk -----------------------------
# As scenario 7 (n3 loses its path to the second member under writes from
# all three), but the operator chose md's way (pcs resource update, no
# restart): the DC decides row 3 fail-disk and fails the member
# cluster-wide; nobody is fenced, n3's held writes complete without it and
# all three write on, degraded.  Then the path comes back, the member is
# re-added, and a check finds the copies equal.
scenario_14() {
	local t0 t_held t_dec t_fail i
	on 1 pcs resource update "$RES" path_failure_action=fail-disk >/dev/null ||
		fail "pcs resource update path_failure_action=fail-disk"
	start_writers 14
	wait_for "n$V mid-write" 60 in_mid_round "$V"
	t0=$(now_ms)
	fault "$V" 1 vanish
	wait_for "n$V: writes held for the decision" 30 held_on "$V"
	t_held=$(now_ms)
	wait_for "decision: row 3, fail-disk" 60 decided "row 3 fail-disk" "$t0"
	t_dec=$(now_ms)
	decision
	for i in 1 2 3; do wait_for "n$i: the member failed" 60 leg_is "$i" 1 faulty; done
	t_fail=$(now_ms)
	for i in 1 2 3; do wait_for "n$i writes on, degraded" 30 acks_after "$i" "$t_fail"; done
	stop_writers 14
	survivors_ok 1 2 3
	[ -z "$(fences_after "$t0")" ] || { fences_after "$t0"; fail "a node was fenced with path_failure_action=fail-disk"; }
	verify_data s14 1 2 3
	on 1 pcs resource update "$RES" path_failure_action=fence >/dev/null ||
		fail "pcs resource update path_failure_action=fence"
	fault "$V" 1 clear
	on 1 timeout 60 "$CLRAID" re-add "$NAME" "${LEGS[1]}" >/dev/null || fail "clraid re-add on n1"
	for i in 1 2 3; do wait_for "n$i: the member back in sync" 90 leg_is "$i" 1 in_sync; done
	for i in 1 2 3; do wait_for "n$i idle" 60 st_is "$i" .sync_action idle; done
	check_clean 1
	echo "scenario 14 (path_failure_action=fail-disk): ok: $(policy_timings "$t0" "$t_held" "$t_dec" "failed on all 3" "$t_fail"); no fencing; all 3 wrote on degraded; re-added and clean"
}

# --- scenario 15 (row 1): a media error on a read ---------------------------
# A latent sector error in n2's region of the second member, as n2 sees it
# (reads fail with ENODATA until a write covers it).  n2 reads its export
# until a read went to that copy: the read is served by the other copy,
# the engine rewrites the sector from it (a resync of its bitmap chunk,
# under the cluster's resync window) and reads it back; the DC decides
# row 1 rewrite; nothing is failed or fenced.
media_seen() {
	read_all 2 "$N/img-media" >/dev/null
	rm -f "$N/img-media"
	[ "$(st 2 ".devices[] | select(.path == \"${LEGS[1]}\") | .io_errors.media")" -gt 0 ]
}
rewritten_on() { [ "$(st "$1" ".devices[] | select(.path == \"${LEGS[1]}\") | .io_errors.rewritten")" -gt 0 ]; }
scenario_15() {
	local t0 t_err t_fix t_dec doff off i
	doff=$("$CLRAID" examine --json "${LEGS[1]}" | jq 'if type == "array" then .[0] else . end | .superblock.data_offset')
	[ "$doff" -gt 0 ] 2>/dev/null || fail "no data offset for ${LEGS[1]}: $doff"
	off=$((doff * 512 + BASE[2] + 65536))
	t0=$(now_ms)
	on 2 timeout 20 "$CLRAID" fault "$NAME" "${LEGS[1]}" bad-sector --offset "$off" --length 4096 >/dev/null ||
		fail "n2: clraid fault bad-sector"
	wait_for "n2: a read hit the bad sector" 60 media_seen
	t_err=$(now_ms)
	wait_for "n2: the sector rewritten and read back" 60 rewritten_on 2
	t_fix=$(now_ms)
	wait_for "decision: row 1, rewrite" 60 decided "row 1 rewrite" "$t0"
	t_dec=$(now_ms)
	decision
	grep -q "rewritten from a good copy and read back" "$N/n2/run/clraid/$NAME.log" 2>/dev/null ||
		grep -rq "rewritten from a good copy and read back" "$N/n2/run/clraid/" ||
		{ dump_logs; fail "n2's engine did not log the rewrite"; }
	for i in 1 2 3; do leg_is "$i" 1 in_sync || fail "n$i: the member with a bad sector is $(leg_state "$i" 1)"; done
	[ -z "$(fences_after "$t0")" ] || { fences_after "$t0"; fail "a node was fenced for a media error"; }
	verify_data s15 1 2 3
	check_clean 1
	on 2 timeout 20 "$CLRAID" fault "$NAME" "${LEGS[1]}" clear >/dev/null || fail "n2: clraid fault clear"
	echo "scenario 15 (row 1): ok: bad sector armed -> a read hit it $((t_err - t0)) ms -> rewritten and read back $((t_fix - t0)) ms -> decision row 1 rewrite $((t_dec - t0)) ms; nothing failed or fenced; check 0 mismatches"
}

# --- scenario 16 (row 7): a reservation conflict ----------------------------
# n3's writes to the second member fail with EBADE, as after fence_scsi took
# its registration away: n3's own daemon decides row 7 (it has been fenced)
# and stops n3's engine; its held writes are not acknowledged and fail no
# member, its dirty bits go to the others.  n1 and n2 write on, both
# members in sync, and no daemon fences anyone.  Pacemaker's monitor then
# finds n3's engine gone and recovers as the recipe says (on-fail=fence:
# n3 is rebooted); n3 rejoins and the three read the same.
engine_pid() { cat "$N/n$1/run/clraid/$NAME.pid" 2>/dev/null; }
engine_gone() { ! kill -0 "$2" 2>/dev/null; }
pd_decided() { grep -q "$2" "$(pd_log "$1")" 2>/dev/null; }
scenario_16() {
	local t0 t_dec t_stop t_fence pid0 i fences0
	pid0=$(engine_pid "$V")
	# the daemons' logs go back to the first scenario: count, then compare
	fences0=$(cat "$(pd_log 1)" "$(pd_log 2)" 2>/dev/null | grep -c "fencing n$V")
	[ -n "$pid0" ] || fail "no engine pid file on n$V"
	start_writers 16
	wait_for "n$V mid-write" 60 in_mid_round "$V"
	t0=$(now_ms)
	on "$V" timeout 20 "$CLRAID" fault "$NAME" "${LEGS[1]}" write --errno 52 >/dev/null ||
		fail "n$V: clraid fault write --errno 52 (EBADE)"
	wait_for "n$V's daemon decides row 7 for itself" 60 pd_decided "$V" "decided: row 7, stop"
	t_dec=$(now_ms)
	grep -m1 "decided: row 7" "$(pd_log "$V")"
	wait_for "n$V's engine stopped" 60 engine_gone "$V" "$pid0"
	t_stop=$(now_ms)
	for i in 1 2; do wait_for "n$i writes after n$V's stop" 30 acks_after "$i" "$t_stop"; done
	stop_writers 16
	survivors_ok 1 2
	leg1_in_sync_on 1 2 || { dump_logs; fail "the member n$V had a reservation conflict on was failed"; }
	[ "$(cat "$(pd_log 1)" "$(pd_log 2)" 2>/dev/null | grep -c "fencing n$V")" = "$fences0" ] ||
		fail "a clraid-policyd fenced n$V for a reservation conflict"
	verify_data s16 1 2
	wait_for "Pacemaker fenced n$V (its monitor found the engine gone; on-fail=fence)" 90 fenced_after "$V" "$t0"
	t_fence=$(fenced_after "$V" "$t0")
	rejoin "$V"
	on 1 pcs resource cleanup "$RES" >/dev/null 2>&1
	leg1_in_sync_on 1 2 3 || fail "the member is not in sync everywhere after n$V rejoined"
	verify_data s16-rejoined 1 2 3
	check_clean 1
	echo "scenario 16 (row 7): ok: EBADE on n$V -> its own decision row 7 stop $((t_dec - t0)) ms -> engine stopped $((t_stop - t0)) ms; n1, n2 wrote on, the member failed nowhere, no daemon fenced; Pacemaker fenced n$V $((t_fence - t0)) ms; rejoined, check 0 mismatches"
}

V=3
# 15 before the scenarios that put path errors on the second member: they
# stay in every node's evidence for error_window (10 min), and a member
# that some nodes report path errors on is judged by its probes (rows 2,
# 3), not as a media error (row 1)
for sc in ${LIVE3_SCENARIOS:-1 2 3 4 5 6}; do
	step "scenario $sc"
	"scenario_$sc"
done

# --- the end: everything stops, nothing is left ---------------------------
on 1 pcs resource disable "$CLONE" >/dev/null
wait_for "clone stopped everywhere" 60 stopped_all
slots_clean || fail "dirty bits left after the final stop"
for i in 1 2 3; do power_off "$i"; done
for i in 1 2 3; do [ -z "$(node_pids "$i")" ] || fail "processes of n$i are left: $(node_pids "$i")"; done
step "done: all nodes powered off, no process left in them"
