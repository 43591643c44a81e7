#!/bin/sh
# The agent on its own, with no cluster: validation, the start refusals,
# and a whole life cycle (start, monitor at each depth, the attributes,
# stop, the stop escalation).  The engine is tests/pacemaker/fake-clraid
# (nbdkit's memory plugin behind the clraid CLI), so these pass before the
# engine serves arrays; the cluster properties come from a CIB file
# (CIB_file), and attrd_updater is a stub that records into a file, so no
# running cluster is ever consulted.
. "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
requires jq
requires nbdkit
requires nbdcopy
requires nbdinfo
requires crm_attribute
requires cibadmin

# attrd_updater stub: "NAME=VALUE" lines, "NAME=<deleted>" on -D.
mkdir -p "$TESTDIR/bin"
cat >"$TESTDIR/bin/attrd_updater" <<'STUB'
#!/bin/sh
n="" v="<deleted>"
while [ $# -gt 0 ]; do
	case "$1" in -n) n=$2; shift 2 ;; -U) v=$2; shift 2 ;; *) shift ;; esac
done
echo "$n=$v" >>"$ATTRS_LOG"
STUB
chmod 755 "$TESTDIR/bin/attrd_updater"
export PATH="$TESTDIR/bin:$PATH" ATTRS_LOG="$TESTDIR/attrs"
: >"$ATTRS_LOG"
# attr NAME: the last value recorded for NAME.
attr() { grep "^$1=" "$ATTRS_LOG" | tail -n 1 | sed "s/^[^=]*=//"; }

cibadmin --empty >"$TESTDIR/cib.xml"
export CIB_file="$TESTDIR/cib.xml"
RUN="$TESTDIR/run"
# Whatever happens, no fake engine outlives the test.
# shellcheck disable=SC2016 # expanded when the cleanup runs
cleanup_fn 'for p in "$RUN"/*.pid; do [ -r "$p" ] && kill "$(cat "$p")"; done 2>/dev/null'

DEVS=$(make_array r1 1 2 --nodes=4 --home-cluster=c)
export OCF_RESOURCE_INSTANCE=clraid-r1
export OCF_RESKEY_name=r1 OCF_RESKEY_devices="$DEVS" OCF_RESKEY_lock=local \
	OCF_RESKEY_run_dir="$RUN" OCF_RESKEY_binary="$FAKE_CLRAID"

echo "--- validate-all"
expect_rc 0 "valid parameters" validate-all
OCF_RESKEY_name="" expect_rc 6 "no name" validate-all
expect_reason "name parameter is required"
OCF_RESKEY_name="r 1" expect_rc 6 "a name with a space" validate-all
OCF_RESKEY_name=abcdefghijklmnopqrstuvwxyz0123456 expect_rc 6 "a 33-character name" validate-all
OCF_RESKEY_devices="" expect_rc 6 "neither devices nor array_uuid" validate-all
OCF_RESKEY_array_uuid=4bfc5095:fa0f4432:4e6cc2e4:aac0ded3 expect_rc 6 "both devices and array_uuid" validate-all
OCF_RESKEY_devices="" OCF_RESKEY_array_uuid=xyz expect_rc 6 "a malformed array_uuid" validate-all
OCF_RESKEY_lock=zk expect_rc 6 "lock=zk" validate-all
expect_reason "Invalid lock 'zk'"
OCF_RESKEY_run_dir=run expect_rc 6 "a relative run_dir" validate-all
OCF_RESKEY_export=tcp expect_rc 6 "export=tcp without tcp_address" validate-all
OCF_RESKEY_export="fc" expect_rc 6 "export=fc" validate-all
OCF_RESKEY_tcp_port=0 expect_rc 6 "tcp_port=0" validate-all
OCF_RESKEY_path_failure_action=panic expect_rc 6 "path_failure_action=panic" validate-all
expect_reason "Invalid policy: path_failure_action=panic: use fence, fail-disk or ignore"
OCF_RESKEY_last_device_action=retry expect_rc 6 "last_device_action=retry" validate-all
OCF_RESKEY_confirm_timeout=soon expect_rc 6 "confirm_timeout=soon" validate-all
expect_reason "Invalid policy: confirm_timeout=soon: give a time such as 15s, 500ms, 2m or 1h"
OCF_RESKEY_io_timeout=0 expect_rc 6 "io_timeout=0" validate-all
OCF_RESKEY_error_threshold=-1 expect_rc 6 "error_threshold=-1" validate-all
OCF_RESKEY_freeze_timeout=5m OCF_RESKEY_fence_action=off expect_rc 0 "freeze_timeout=5m fence_action=off" validate-all
OCF_RESKEY_read_check_kib=0 expect_rc 6 "read_check_kib=0" validate-all
OCF_RESKEY_allow_stonith_disabled=maybe expect_rc 6 "allow_stonith_disabled=maybe" validate-all
OCF_RESKEY_CRM_meta_clone_max=2 expect_rc 6 "lock=local in a clone of 2" validate-all
expect_reason "lock=local cannot protect an array shared by clone-max=2"
OCF_RESKEY_CRM_meta_clone_max=1 expect_rc 0 "lock=local in a clone of 1" validate-all
OCF_RESKEY_lock=cpg OCF_RESKEY_CRM_meta_clone_max=3 OCF_RESKEY_CRM_meta_globally_unique=true \
	expect_rc 6 "a globally-unique clone" validate-all
OCF_RESKEY_devices="$TESTDIR/nope $DEVS" expect_rc 5 "a missing member" validate-all
expect_reason "Member device $TESTDIR/nope does not exist"

echo "--- validate-all: the engine's own checks (clraid start --dry-run, nothing written)"
# The fake engine hands "start --dry-run" to the real clraid.
R5=$(make_array r5 5 3 --nodes=4 --home-cluster=c)
Z="$TESTDIR/zeroed" && truncate -s 64M "$Z"
# shellcheck disable=SC2086
sums_before=$(sha256sum $DEVS $R5 "$Z")
OCF_RESKEY_name=r5 OCF_RESKEY_devices="$R5" expect_rc 0 "RAID5, lock=local, no clone" validate-all
OCF_RESKEY_name=r5 OCF_RESKEY_devices="$R5" OCF_RESKEY_lock=cpg OCF_RESKEY_CRM_meta_clone_max=2 \
	expect_rc 0 "RAID5 in a cpg clone of 2 (stripe-zone locks)" validate-all
OCF_RESKEY_name=r5 OCF_RESKEY_devices="$R5" OCF_RESKEY_lock=dlm OCF_RESKEY_CRM_meta_clone_max=2 \
	expect_rc 0 "RAID5 in a dlm clone of 2" validate-all
F2V=$(make_array f2v 10 4 --layout=f2 --nodes=4 --home-cluster=c)
OCF_RESKEY_name=f2v OCF_RESKEY_devices="$F2V" OCF_RESKEY_lock=cpg OCF_RESKEY_CRM_meta_clone_max=2 \
	expect_rc 0 "RAID10 far=2 in a cpg clone of 2" validate-all
# The dry run joins no lockspace: no DLM needed to validate (start needs one).
OCF_RESKEY_lock=dlm OCF_RESKEY_CRM_meta_clone_max=2 expect_rc 0 "RAID1 in a dlm clone of 2" validate-all
OCF_RESKEY_lock=cpg OCF_RESKEY_CRM_meta_clone_max=2 expect_rc 0 "RAID1 in a cpg clone of 2" validate-all
OCF_RESKEY_devices="${DEVS%% *} $Z" expect_rc 5 "a member without a superblock" validate-all
expect_reason "zeroed: not a usable md member"
OCF_RESKEY_devices="${DEVS%% *} ${R5%% *}" expect_rc 5 "a member of another array" validate-all
expect_reason "belongs to another array"
CLRAID_NBDKIT_PLUGIN=/nonexistent/plugin.so expect_rc 5 "no engine plugin" validate-all
expect_reason "nbdkit plugin /nonexistent/plugin.so"
# shellcheck disable=SC2086
[ "$(sha256sum $DEVS $R5 "$Z")" = "$sums_before" ] || fail "validate-all wrote to a member"
[ ! -e "$RUN" ] || fail "validate-all created $RUN"
echo "ok: validate-all wrote nothing, created no run directory"
OCF_RESKEY_binary=/nonexistent/clraid expect_rc 5 "no clraid binary" validate-all
OCF_RESKEY_devices="$TESTDIR/nope" OCF_RESKEY_CRM_meta_interval=0 expect_rc 7 "probe, member missing" monitor
OCF_RESKEY_binary=/nonexistent/clraid OCF_RESKEY_CRM_meta_interval=0 expect_rc 7 "probe, no binary" monitor
OCF_RESKEY_CRM_meta_interval=10000 expect_rc 7 "monitor of a stopped array" monitor
expect_rc 0 "stop of a stopped array" stop
OCF_RESKEY_name="" expect_rc 0 "stop without a name (nothing can run)" stop

echo "--- start refusals (cluster properties from a CIB file)"
(
	export OCF_RESKEY_lock=cpg OCF_RESKEY_CRM_meta_clone_max=2
	crm_attribute -t crm_config -n stonith-enabled -v false
	expect_rc 6 "stonith-enabled=false" start
	expect_reason "stonith-enabled=false: clraid needs fencing"
	OCF_RESKEY_allow_stonith_disabled=true expect_rc 0 "stonith-enabled=false, allow_stonith_disabled" start
	grep -q "WARNING: stonith-enabled=false" "$TESTDIR/agent.out" || fail "no warning"
	expect_rc 0 "stop" stop
	crm_attribute -t crm_config -n stonith-enabled -v true

	CIB_file="$TESTDIR/no-such-cib.xml" expect_rc 1 "no CIB to read, shared lock" start
	expect_reason "Cannot read stonith-enabled from the CIB"

	OCF_RESKEY_lock=dlm expect_rc 1 "lock=dlm without dlm_controld" start
	expect_reason "dlm_controld is not running"

	expect_rc 0 "cpg clone of 2 on RAID1 with 4 slots" start
	grep -q "WARNING: no-quorum-policy=stop" "$TESTDIR/agent.out" ||
		{ cat "$TESTDIR/agent.out"; fail "no warning about no-quorum-policy"; }
	[ "$(cat "$RUN/r1.fake-lock")" = cpg ] || fail "the engine did not get --lock cpg"
	expect_rc 0 "stop" stop
	crm_attribute -t crm_config -n no-quorum-policy -v freeze
	expect_rc 0 "start with no-quorum-policy=freeze" start
	! grep -q "no-quorum-policy" "$TESTDIR/agent.out" || fail "warned with freeze"
	expect_rc 0 "stop" stop

	OCF_RESKEY_CRM_meta_clone_max=5 expect_rc 6 "clone of 5 on 4 bitmap slots" start
	expect_reason "has 4 bitmap node slots, fewer than clone-max=5"

	F2=$(make_array f2 10 4 --layout=f2 --nodes=4 --home-cluster=c)
	OCF_RESKEY_name=f2 OCF_RESKEY_devices="$F2" expect_rc 0 "RAID10 far=2 in a clone of 2" start
	OCF_RESKEY_name=f2 expect_rc 0 "stop" stop
	OCF_RESKEY_name=f2 OCF_RESKEY_devices="$F2" OCF_RESKEY_lock=local OCF_RESKEY_CRM_meta_clone_max=1 \
		expect_rc 0 "RAID10 far=2 on one node" start
	OCF_RESKEY_name=f2 expect_rc 0 "stop" stop
	O2=$(make_array o2 10 4 --layout=o2 --nodes=4 --home-cluster=c)
	OCF_RESKEY_name=o2 OCF_RESKEY_devices="$O2" expect_rc 0 "RAID10 offset=2 in a clone of 2" start
	OCF_RESKEY_name=o2 expect_rc 0 "stop" stop
	N2=$(make_array n2 10 4 --layout=n2 --nodes=4 --home-cluster=c)
	OCF_RESKEY_name=n2 OCF_RESKEY_devices="$N2" expect_rc 0 "RAID10 near=2 in a clone of 2" start
	OCF_RESKEY_name=n2 expect_rc 0 "stop" stop
	R6=$(make_array r6 6 4 --nodes=4 --home-cluster=c)
	OCF_RESKEY_name=r6 OCF_RESKEY_devices="$R6" expect_rc 0 "RAID6 in a clone of 2 (stripe-zone locks)" start
	OCF_RESKEY_name=r6 expect_rc 0 "stop" stop
	OCF_RESKEY_name=r6 OCF_RESKEY_devices="$R6" OCF_RESKEY_lock=local OCF_RESKEY_CRM_meta_clone_max=1 \
		expect_rc 0 "RAID6 on one node" start
	OCF_RESKEY_name=r6 expect_rc 0 "stop" stop
	OCF_RESKEY_devices="${DEVS% *} $(echo "$N2" | cut -d' ' -f1)" expect_rc 5 "members of two arrays" start
	expect_reason "belongs to another array"

	# A second name for a member, as /dev/disk/by-id has: used once only.
	ln -s "${DEVS%% *}" "${DEVS%% *}-alias"
	UUID=$("$CLRAID" examine --json "${DEVS%% *}" | jq -r '.[0].superblock.array_uuid')
	OCF_RESKEY_devices="" OCF_RESKEY_array_uuid="$UUID" OCF_RESKEY_device_glob="$TESTDIR/*" \
		expect_rc 0 "members found by array_uuid" start
	[ "$(cat "$RUN/r1.fake-devs")" = " $DEVS" ] || fail "found '$(cat "$RUN/r1.fake-devs")', expected '$DEVS'"
	expect_rc 0 "stop" stop
	OCF_RESKEY_devices="" OCF_RESKEY_array_uuid=00000000:00000000:00000000:00000001 \
		OCF_RESKEY_device_glob="$TESTDIR/*" expect_rc 5 "no member carries the uuid" start

	mkdir -p "$RUN" && echo "r1: member $TESTDIR/r1-0 is stale" >"$RUN/r1.fake-refuse"
	expect_rc 1 "the engine refuses" start
	expect_reason "clraid start r1 failed: clraid start: r1: member .* is stale"
	rm -f "$RUN/r1.fake-refuse"
)

echo "--- life cycle, standalone (lock=local, no clone)"
CIB_file="$TESTDIR/no-such-cib.xml" expect_rc 0 "start without a cluster" start
grep -q "starting standalone" "$TESTDIR/agent.out" || fail "no standalone warning"
expect_rc 0 "start again" start
PID=$(cat "$RUN/r1.pid")
expect_rc 0 "validate-all while the engine runs" validate-all
grep -q "runs here (pid $PID): its members were checked at its start" "$TESTDIR/agent.out" ||
	{ cat "$TESTDIR/agent.out"; fail "validate-all ran a dry run against a running engine"; }
for l in 0 10 20; do
	OCF_CHECK_LEVEL=$l expect_rc 0 "monitor depth $l, clean" monitor
done
[ "$(attr clraid-r1-state)" = clean ] || fail "state attribute '$(attr clraid-r1-state)'"
[ "$(attr clraid-r1-failed-devices)" = 0 ] || fail "failed-devices attribute"
[ "$(attr clraid-r1-sync)" = idle ] || fail "sync attribute"
[ "$(attr '#health-clraid-r1')" = green ] || fail "health attribute"
echo "ok: attributes clean, 0, idle, green"
# unchanged values are not sent again (attrd_updater costs 80 ms of CPU a
# call), until the cache is a minute old: then all of them
n0=$(wc -l <"$ATTRS_LOG")
expect_rc 0 "monitor, nothing changed" monitor
[ "$(wc -l <"$ATTRS_LOG")" = "$n0" ] || fail "a monitor with nothing changed called attrd_updater: $(tail -n +$((n0 + 1)) "$ATTRS_LOG" | tr '\n' ' ')"
printf '%s\n%s\n' "$(($(date +%s) - 61))" "$(sed -n 2p "$RUN/r1.attrs")" >"$RUN/r1.attrs"
expect_rc 0 "monitor, published values a minute old" monitor
[ "$(tail -n +$((n0 + 1)) "$ATTRS_LOG" | grep -c '^clraid-r1-state=clean$')" = 1 ] ||
	fail "a monitor did not publish again after a minute: $(tail -n +$((n0 + 1)) "$ATTRS_LOG" | tr '\n' ' ')"
echo "ok: a monitor sends nothing when nothing changed, and everything again after a minute"

status() { # STATE SYNC POS TOTAL DEV1STATE
	jq -n --arg s "$1" --arg a "$2" --argjson p "$3" --argjson t "$4" --arg d0 "${DEVS%% *}" \
		--arg d1 "${DEVS##* }" --arg x "$5" '{state: $s, level: "raid1",
		devices: [{path: $d0, role: "active", state: "in_sync"}, {path: $d1, role: "active", state: $x}],
		sync_action: $a, sync_progress: (if $t > 0 then {position_bytes: $p, total_bytes: $t, rate_kib_s: 1000, eta_s: 5} else null end),
		bitmap: {dirty_chunks: 1}, frozen: null}' >"$RUN/r1.fake-status"
}
status degraded idle 0 0 faulty
OCF_CHECK_LEVEL=10 expect_rc 0 "monitor depth 10, degraded (keeps running)" monitor
grep -q "WARNING: Array r1 is degraded" "$TESTDIR/agent.out" || fail "no warning for degraded"
[ "$(attr clraid-r1-state)" = degraded ] || fail "state attribute '$(attr clraid-r1-state)'"
[ "$(attr clraid-r1-failed-devices)" = 1 ] || fail "failed-devices attribute"
[ "$(attr clraid-r1-failed-paths)" = "${DEVS##* }" ] || fail "failed-paths attribute"
[ "$(attr '#health-clraid-r1')" = yellow ] || fail "health attribute"
echo "ok: attributes degraded, 1, ${DEVS##* }, yellow"
status recovering recover 16777216 67108864 rebuilding
OCF_CHECK_LEVEL=10 expect_rc 0 "monitor depth 10, recovering" monitor
[ "$(attr clraid-r1-sync)" = "recover 25%" ] || fail "sync attribute '$(attr clraid-r1-sync)'"
[ "$(attr clraid-r1-failed-paths)" = "<deleted>" ] || fail "failed-paths not deleted"
echo "ok: sync attribute 'recover 25%'"
status frozen idle 0 0 faulty
OCF_CHECK_LEVEL=10 expect_rc 0 "monitor depth 10, frozen (clraid-policyd decides)" monitor
[ "$(attr '#health-clraid-r1')" = red ] || fail "health attribute"
status failed idle 0 0 faulty
OCF_CHECK_LEVEL=0 expect_rc 0 "monitor depth 0, failed array (engine serves)" monitor
OCF_CHECK_LEVEL=10 expect_rc 1 "monitor depth 10, failed array" monitor
expect_reason "Array r1 has failed (failed devices: ${DEVS##* })"
rm -f "$RUN/r1.fake-status"

expect_rc 0 "notify" notify
OCF_RESKEY_last_device_action=error expect_rc 0 "reload-agent" reload-agent
OCF_RESKEY_last_device_action=bogus expect_rc 6 "reload-agent with a bad value" reload-agent

kill -KILL "$PID"
wait_until 30 gone "$PID" || fail "pid $PID survived kill -9"
OCF_RESKEY_CRM_meta_interval=10000 expect_rc 1 "monitor after the engine died" monitor
expect_reason "(pid $PID) is gone"
OCF_RESKEY_CRM_meta_interval=0 expect_rc 7 "probe after the engine died" monitor
expect_rc 0 "start over a dead engine's leftovers" start
OCF_CHECK_LEVEL=20 expect_rc 0 "monitor depth 20" monitor

rm "$RUN/r1.sock"
expect_rc 1 "monitor, NBD socket gone" monitor
expect_reason "does not serve $RUN/r1.sock"
expect_rc 0 "stop" stop
[ ! -e "$RUN/r1.pid" ] || fail "pid file left"

echo "--- stop escalation"
expect_rc 0 "start" start
PID=$(cat "$RUN/r1.pid")
touch "$RUN/r1.fake-hang"
OCF_RESKEY_lock=bogus expect_rc 0 "stop: clean stop hangs, SIGTERM (and a broken configuration)" stop
grep -q "still runs: SIGTERM" "$TESTDIR/agent.out" || fail "no SIGTERM step"
# Gone, or a zombie that its parent (init) has not reaped yet.
[ ! -d "/proc/$PID" ] || grep -q '^State:.*Z' "/proc/$PID/status" ||
	fail "engine $PID survived the stop"
for a in state failed-devices failed-paths sync; do
	[ "$(attr "clraid-r1-$a")" = "<deleted>" ] || fail "clraid-r1-$a not deleted by stop"
done
[ "$(attr '#health-clraid-r1')" = "<deleted>" ] || fail "health not deleted by stop"
rm -f "$RUN/r1.fake-hang"
echo "ok: stop escalated to SIGTERM, the engine is gone, attributes deleted"
