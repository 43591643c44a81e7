#!/bin/sh
# A live single-node cluster that this test starts itself: corosync and
# Pacemaker in private network, mount and UTS namespaces, with private
# /etc/corosync, /var/lib/{corosync,pacemaker}, /var/log/{pacemaker,cluster},
# /run and /dev/shm bound over the host's, so no host-wide state is touched
# and no running cluster is reached.  fence_dummy for fencing, dc-deadtime=2s.
#
# pcs creates ocf:clraid:clraid as a clone (clone-max=1, lock=local); it
# starts; crm_mon -1 -A shows the array attributes; a failed member shows
# as degraded while the resource stays started; crm_resource --force-check
# passes at depths 0, 10 and 20; clraid-policyd watches the CIB and logs a
# policy change made with pcs; disable/enable cycles stop and start the
# engine and clear/set the attributes; a killed engine is recovered.
#
# The engine is the real clraid (CLRAID_LIVE_ENGINE=real, the default when
# "clraid start" exists) or tests/pacemaker/fake-clraid (=fake).
CLRAID_PCMK_UNSHARE="-n -u"
. "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
for t in corosync corosync-cfgtool pacemakerd crmadmin crm_mon crm_resource \
	crm_attribute attrd_updater pcs fence_dummy ip jq nbdkit nbdcopy nbdinfo; do
	requires "$t"
done
if [ -z "${CLRAID_LIVE_ENGINE:-}" ]; then
	if "$CLRAID" start --help >/dev/null 2>&1; then CLRAID_LIVE_ENGINE=real; else CLRAID_LIVE_ENGINE=fake; fi
fi
case "$CLRAID_LIVE_ENGINE" in
real)	BIN=$CLRAID PLUGIN=${CLRAID_NBDKIT_PLUGIN:-}
	[ -n "$PLUGIN" ] || fail "no nbdkit-clraid-plugin.so in $top_builddir/.libs (set CLRAID_NBDKIT_PLUGIN)" ;;
fake)	BIN=$FAKE_CLRAID PLUGIN="" ;;
*)	fail "CLRAID_LIVE_ENGINE must be real or fake" ;;
esac
echo "engine: $CLRAID_LIVE_ENGINE ($BIN)"
T0=$(date +%s)
step() { echo "[$(($(date +%s) - T0))s] $*"; }

# --- private host state ------------------------------------------------
hostname n1
ip link set lo up
S="$TESTDIR/state"
for d in etc-corosync var-lib-corosync var-log-cluster var-log-pacemaker run \
	var-lib-pacemaker/cib var-lib-pacemaker/pengine var-lib-pacemaker/blackbox \
	var-lib-pacemaker/cores; do
	mkdir -p "$S/$d"
done
chown -R hacluster:haclient "$S/var-lib-pacemaker" "$S/var-log-pacemaker"
mount --bind "$S/etc-corosync" /etc/corosync
mount --bind "$S/var-lib-corosync" /var/lib/corosync
mount --bind "$S/var-lib-pacemaker" /var/lib/pacemaker
mount --bind "$S/var-log-pacemaker" /var/log/pacemaker
[ -d /var/log/cluster ] && mount --bind "$S/var-log-cluster" /var/log/cluster
mount --bind "$S/run" /run
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
private_ocf
chmod 755 "$TESTDIR"

cat >/etc/corosync/corosync.conf <<CONF
totem {
	version: 2
	cluster_name: clraidtest
	transport: knet
	crypto_cipher: none
	crypto_hash: none
}
logging {
	to_stderr: no
	to_logfile: yes
	logfile: $S/corosync.log
	to_syslog: no
	timestamp: hires
}
quorum {
	provider: corosync_votequorum
}
nodelist {
	node {
		name: n1
		nodeid: 1
		ring0_addr: 127.0.0.1
	}
}
CONF
# --- daemons -----------------------------------------------------------
stop_daemons() {
	if [ -n "${PCMK_PID:-}" ] && kill -0 "$PCMK_PID" 2>/dev/null; then
		kill -TERM "$PCMK_PID"
		i=0
		while kill -0 "$PCMK_PID" 2>/dev/null && [ "$i" -lt 60 ]; do sleep 0.5; i=$((i + 1)); done
		# pacemakerd runs in its own session: its group is its daemons.
		kill -KILL -- "-$PCMK_PID" 2>/dev/null
	fi
	if [ -n "${CS_PID:-}" ] && kill -0 "$CS_PID" 2>/dev/null; then
		kill -TERM "$CS_PID"
		i=0
		while kill -0 "$CS_PID" 2>/dev/null && [ "$i" -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
		kill -KILL "$CS_PID" 2>/dev/null
	fi
	# An engine that Pacemaker did not stop.
	for p in "$TESTDIR"/run/*.pid; do [ -r "$p" ] && kill -KILL "$(cat "$p")"; done 2>/dev/null
	# Pacemaker's daemons run in sessions of their own, outside the group
	# above: pacemaker-execd and -schedulerd once outlived pacemakerd here.
	# This test has a network namespace of its own (pcmk-functions.sh): any
	# process in it but the test itself is a leftover of the test.
	if [ "${CLRAID_PCMK_NS:-}" = 1 ]; then
		case " $CLRAID_PCMK_UNSHARE " in
		*" -n "*)
			_ns=$(readlink "/proc/$$/ns/net" | sed 's/[][]/\\&/g')
			for p in $(find /proc/[0-9]*/ns/net -maxdepth 0 -lname "$_ns" 2>/dev/null | cut -d/ -f3); do
				[ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null
			done ;;
		esac
	fi
	return 0
}
cleanup_fn stop_daemons
dump_logs() {
	echo "--- pacemaker.log (tail)"; tail -n 60 "$S/pacemaker.log" 2>/dev/null
	echo "--- crm_mon"; crm_mon -1 -A 2>&1
	echo "--- clraid-policyd (tail)"; tail -n 30 "$S/policyd.log" 2>/dev/null
}

corosync -f -c /etc/corosync/corosync.conf >"$S/corosync.out" 2>&1 &
CS_PID=$!
i=0
until corosync-cfgtool -s >/dev/null 2>&1; do
	i=$((i + 1)); [ "$i" -lt 50 ] || { cat "$S/corosync.out" "$S/corosync.log"; fail "corosync does not answer"; }
	sleep 0.2
done
step "corosync up"

PCMK_logfile="$S/pacemaker.log" setsid pacemakerd >"$S/pacemakerd.out" 2>&1 &
PCMK_PID=$!
i=0
until crm_attribute -t crm_config -n dc-deadtime -v 2s >/dev/null 2>&1; do
	i=$((i + 1)); [ "$i" -lt 100 ] || fail "the CIB does not answer"
	sleep 0.2
done
i=0
until crmadmin -D -t 1s 2>/dev/null | grep -q Designated && crmadmin -S n1 -t 1s 2>/dev/null | grep -q S_IDLE; do
	i=$((i + 1)); [ "$i" -lt 60 ] || { dump_logs; fail "no idle DC"; }
	sleep 0.5
done
step "pacemaker idle"

# --- configuration -----------------------------------------------------
printf on >"$TESTDIR/fence.status"
pcs stonith create fd fence_dummy status_file="$TESTDIR/fence.status" pcmk_host_list=n1 >/dev/null ||
	fail "pcs stonith create"
pcs property set stonith-enabled=true no-quorum-policy=freeze >/dev/null || fail "pcs property set"

DEVS=$(make_array live 1 2 --nodes=4 --home-cluster=clraidtest)
pcs resource create arr ocf:clraid:clraid name=live devices="$DEVS" lock=local \
	run_dir="$TESTDIR/run" binary="$BIN" ${PLUGIN:+plugin="$PLUGIN"} \
	op monitor interval=4s timeout=30s \
	op monitor interval=5s timeout=30s OCF_CHECK_LEVEL=10 \
	op monitor interval=13s timeout=60s OCF_CHECK_LEVEL=20 \
	clone arr-clone meta interleave=true clone-max=1 --agent-validation >"$S/pcs.out" 2>&1 ||
	{ cat "$S/pcs.out"; fail "pcs resource create"; }

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds.
wait_for() {
	_w=$1 _s=$2; shift 2
	_i=0
	until "$@"; do
		_i=$((_i + 1))
		[ "$_i" -lt $((_s * 2)) ] || { dump_logs; fail "timed out: $_w"; }
		sleep 0.5
	done
	step "$_w"
}
running() { crm_resource -r arr --locate 2>/dev/null | grep -q 'is running on: n1'; }
stopped() { crm_resource -r arr --locate 2>&1 | grep -q 'is NOT running'; }
mon_attr() { crm_mon -1 -A 2>/dev/null | grep -q -- "$1"; }
health() { [ "$(attrd_updater -Q -n '#health-clraid-live' 2>/dev/null | sed -n 's/.*value="\([^"]*\)".*/\1/p')" = "$1" ]; }
engine_pid() { cat "$TESTDIR/run/live.pid" 2>/dev/null; }

wait_for "arr started" 60 running
wait_for "crm_mon -A: state clean" 30 mon_attr 'clraid-live-state[[:space:]]*: clean'
# attrd writes each attribute on its own: wait for each.
wait_for "crm_mon -A: failed-devices 0" 10 mon_attr 'clraid-live-failed-devices[[:space:]]*: 0'
wait_for "crm_mon -A: sync idle" 10 mon_attr 'clraid-live-sync[[:space:]]*: idle'
crm_mon -1 -A >"$S/mon.out"
wait_for "#health-clraid-live green" 10 health green
sed -n '/Node Attributes/,/^$/p' "$S/mon.out"

# --- clraid-policyd watches this CIB -------------------------------------
# It logs the facts when it starts, and a line for each change: here a
# policy change made with pcs (a reload, no restart).
if [ -x "$top_builddir/clraid-policyd" ]; then
	"$top_builddir/clraid-policyd" 2>"$S/policyd.log" &
	PD_PID=$!
	cleanup_fn "kill $PD_PID 2>/dev/null"
	pd_line() { grep -q -- "$1" "$S/policyd.log"; }
	wait_for "clraid-policyd: watching, quorum, n1 a member" 20 pd_line \
		'watching the CIB as node n1: {"have_quorum":true,.*{"name":"n1","id":"[^"]*","in_ccm":true,"online":true,"member":true'
	pcs resource update arr last_device_action=error freeze_timeout=90s probe_timeout=3s \
		error_window=40s >"$S/pcs.out" 2>&1 || { cat "$S/pcs.out"; fail "pcs resource update (policy)"; }
	wait_for "clraid-policyd: the policy change logged" 20 pd_line \
		'resource arr (array live): policy {"path_failure_action":"fence","last_device_action":"error","fence_action":"reboot","freeze_timeout_ms":90000,'
	grep 'resource arr' "$S/policyd.log" | tail -n 1
	# what this node's engine sees, published for the decider: 2 members,
	# 1 can be lost, no errors
	wait_for "crm_mon -A: clraid-policyd's evidence n=2 r=1" 20 mon_attr 'clraid-live-io[[:space:]]*: n=2 r=1[[:space:]]*$'
else
	PD_PID=
fi

for l in 0 10 20; do
	crm_resource -r arr --force-check="$l" >"$S/check.out" 2>&1 ||
		{ cat "$S/check.out"; fail "crm_resource --force-check=$l"; }
done
step "crm_resource --force-check at depths 0, 10, 20: ok"

# --- a failed member ---------------------------------------------------
BAD=${DEVS##* }
if [ "$CLRAID_LIVE_ENGINE" = real ]; then
	"$CLRAID" fail live "$BAD" --run-dir "$TESTDIR/run" >/dev/null || fail "clraid fail"
else
	jq -n --arg a "${DEVS%% *}" --arg b "$BAD" '{state: "degraded", level: "raid1",
		devices: [{path: $a, role: "active", state: "in_sync"}, {path: $b, role: "active", state: "faulty"}],
		sync_action: "idle", sync_progress: null, bitmap: {dirty_chunks: 1}, frozen: null}' \
		>"$TESTDIR/run/live.fake-status"
fi
wait_for "crm_mon -A: state degraded" 30 mon_attr 'clraid-live-state[[:space:]]*: degraded'
# attrd writes each attribute on its own: wait for each.
wait_for "crm_mon -A: failed-devices 1" 10 mon_attr 'clraid-live-failed-devices[[:space:]]*: 1'
wait_for "crm_mon -A: failed-paths $BAD" 10 mon_attr "clraid-live-failed-paths[[:space:]]*: $BAD"
crm_mon -1 -A >"$S/mon.out"
wait_for "#health-clraid-live yellow" 10 health yellow
running || fail "arr stopped on a degraded array"
! grep -q 'Failed Resource Actions' "$S/mon.out" || { cat "$S/mon.out"; fail "degraded shows as a failed action"; }
sed -n '/Node Attributes/,/^$/p' "$S/mon.out"
for l in 0 10 20; do
	crm_resource -r arr --force-check="$l" >"$S/check.out" 2>&1 ||
		{ cat "$S/check.out"; fail "crm_resource --force-check=$l on a degraded array"; }
done
step "degraded: resource started, no failed action, force-check 0/10/20 ok"

# --- the last member fails: evidence, probe, decision ----------------------
# The operator's fail counted no I/O error; the array can lose nothing more.
# Reads of the last member now fail: the engine freezes the array (a read
# waits), counts the error; clraid-policyd publishes it, probes the member
# from this node (fails), and as the decider (the DC) decides row 10 with
# last_device_action=error and carries it out: the blocked read fails.
# Then the fault is cleared and the member re-added below; the stale
# failed probe of the good member must not fail it then (the decider
# probes again before it fails a disk).
if [ "$CLRAID_LIVE_ENGINE" = real ] && [ -n "$PD_PID" ]; then
	GOOD=${DEVS%% *}
	wait_for "crm_mon -A: evidence n=2 r=0 after the fail" 20 mon_attr 'clraid-live-io[[:space:]]*: n=2 r=0[[:space:]]*$'
	"$CLRAID" probe live "$GOOD" --run-dir "$TESTDIR/run" || fail "clraid probe of a healthy member"
	"$CLRAID" fault live "$GOOD" read --run-dir "$TESTDIR/run" >/dev/null || fail "clraid fault"
	if "$CLRAID" probe live "$GOOD" --run-dir "$TESTDIR/run"; then fail "the probe passed a member that cannot read"; fi
	T_ERR=$(date +%s%3N)
	nbdcopy "nbd+unix:///?socket=$TESTDIR/run/live.sock" null: >"$S/read.out" 2>&1 &
	READ_PID=$!
	cleanup_fn "kill $READ_PID 2>/dev/null"
	wait_for "crm_mon -A: the error, the failed probe, frozen" 30 mon_attr \
		'clraid-live-io[[:space:]]*: n=2 r=0 m0=path:[0-9]* p0=failed:[0-9]* frozen'
	T_EV=$(date +%s%3N)
	wait_for "crm_mon -A: the decision, row 10" 30 mon_attr \
		'clraid-live-decision[[:space:]]*: [-0-9]* [:0-9]* row 10 error: '
	T_DEC=$(date +%s%3N)
	crm_mon -1 -A | grep 'clraid-live-\(io\|decision\)'
	grep 'decided: row 10' "$S/policyd.log" | head -n 1
	# the decision carried out: the read that waited fails (EIO)
	if wait "$READ_PID"; then cat "$S/read.out"; fail "the blocked read succeeded after the error decision"; fi
	T_ACT=$(date +%s%3N)
	grep -q 'returning errors to the blocked I/O' "$S/policyd.log" ||
		{ cat "$S/policyd.log"; fail "clraid-policyd did not say it thawed the array with errors"; }
	echo "timings: error -> evidence $((T_EV - T_ERR)) ms, -> decision $((T_DEC - T_ERR)) ms, -> read failed $((T_ACT - T_ERR)) ms (1 s ticks, attrd and CIB round trips)"
	"$CLRAID" fault live "$GOOD" clear --run-dir "$TESTDIR/run" >/dev/null ||
		{ tail -n 30 "$TESTDIR/run/live.log"; dump_logs; fail "clraid fault clear"; }
	step "last member: frozen, decided, the blocked read failed by the decision"
fi

# The member comes back (re-added from the bitmap); the array is clean again.
if [ "$CLRAID_LIVE_ENGINE" = real ]; then
	"$CLRAID" re-add live "$BAD" --run-dir "$TESTDIR/run" >/dev/null || fail "clraid re-add"
else
	rm -f "$TESTDIR/run/live.fake-status"
fi
wait_for "member re-added: state clean" 30 mon_attr 'clraid-live-state[[:space:]]*: clean'
wait_for "member re-added: failed-devices 0" 10 mon_attr 'clraid-live-failed-devices[[:space:]]*: 0'
wait_for "#health-clraid-live green again" 10 health green

if [ -n "${PD_PID:-}" ]; then
	if [ "$CLRAID_LIVE_ENGINE" = real ]; then
		# the failed probe is retried (every probe_timeout) and now
		# passes: the report is a transient, nothing to decide
		wait_for "crm_mon -A: the probe passes again" 30 mon_attr \
			'clraid-live-io[[:space:]]*: n=2 r=1 m0=path:[0-9]* p0=ok'
		wait_for "clraid-policyd: nothing to decide" 20 pd_line 'array live: nothing to decide'
		! grep -q 'failing member' "$S/policyd.log" ||
			{ grep 'failing member\|probing it again' "$S/policyd.log"; fail "clraid-policyd failed a member that works"; }
		mon_attr 'clraid-live-failed-devices[[:space:]]*: 0' || fail "a member failed after the re-add"
	fi
	kill "$PD_PID"
	wait "$PD_PID" 2>/dev/null || true
	grep -q 'stopping' "$S/policyd.log" || { cat "$S/policyd.log"; fail "clraid-policyd did not stop on SIGTERM"; }
	no_pd_attrs() { ! crm_mon -1 -A 2>/dev/null | grep -q 'clraid-live-\(io\|decision\)'; }
	wait_for "clraid-policyd's attributes gone with it" 20 no_pd_attrs
fi

# --- stop/start cycles -------------------------------------------------
no_attrs() { ! crm_mon -1 -A 2>/dev/null | grep -q 'clraid-live-'; }
for c in 1 2; do
	P=$(engine_pid)
	pcs resource disable arr-clone >/dev/null
	wait_for "cycle $c: stopped" 60 stopped
	! kill -0 "$P" 2>/dev/null || fail "engine $P survived the stop"
	wait_for "cycle $c: attributes cleared" 20 no_attrs
	pcs resource enable arr-clone >/dev/null
	wait_for "cycle $c: started" 60 running
	wait_for "cycle $c: attributes back" 30 mon_attr 'clraid-live-state'
done

# --- a killed engine is recovered ---------------------------------------
P=$(engine_pid)
kill -KILL "$P"
new_engine() { _n=$(engine_pid) && [ "$_n" != "$P" ] && kill -0 "$_n" 2>/dev/null && running; }
wait_for "killed engine restarted by Pacemaker" 60 new_engine
crm_mon -1 >"$S/mon.out"
grep -q "arr.*monitor.*on n1 returned 'error'" "$S/mon.out" || { cat "$S/mon.out"; fail "the failure is not shown"; }
grep -A3 'Failed Resource Actions' "$S/mon.out" | grep 'arr' | head -n 1
pcs resource cleanup arr >/dev/null

pcs resource disable arr-clone >/dev/null
wait_for "final stop" 60 stopped
step "done"
