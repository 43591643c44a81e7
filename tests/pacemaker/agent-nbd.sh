#!/bin/sh
# The agent's kernel block device (nbd_device): the refusals on this host,
# then the nbd-client command lines of start, monitor and stop against the
# real engine (lock=local, no cluster).  This machine's kernel may have no
# nbd module, so part 2 points the agent at a fake sysfs tree that has one
# (CLRAID_TEST_SYSFS_ROOT) and puts tests/pacemaker/stub-nbd-client first
# in PATH as nbd-client; the stub records its calls and keeps the
# connection state in that tree.  No randomness.
. "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
requires jq
requires nbdkit
requires nbdinfo
"$CLRAID" start --help >/dev/null 2>&1 || skip "the clraid engine cannot start arrays"
[ -r "${CLRAID_NBDKIT_PLUGIN:-/nonexistent}" ] || skip "the engine's nbdkit plugin is not built"

STUB="$top_srcdir/tests/pacemaker/stub-nbd-client"
RUN="$TESTDIR/run"
SYS="$TESTDIR/sys"
LOG="$TESTDIR/calls"
# shellcheck disable=SC2016 # expanded when the cleanup runs
cleanup_fn 'for p in "$RUN"/*.pid; do [ -r "$p" ] && kill "$(cat "$p")"; done 2>/dev/null'

# attrd_updater stub ("NAME=VALUE", "NAME=<deleted>"); the engine command
# goes through a wrapper that logs "clraid ARGS" into the stub's log, so
# the log shows the order of nbd-client and engine calls.
mkdir -p "$TESTDIR/bin"
cat >"$TESTDIR/bin/attrd_updater" <<'STUB'
#!/bin/sh
n="" v="<deleted>"
while [ $# -gt 0 ]; do
	case "$1" in -n) n=$2; shift 2 ;; -U) v=$2; shift 2 ;; *) shift ;; esac
done
echo "$n=$v" >>"$ATTRS_LOG"
STUB
cat >"$TESTDIR/bin/clraid-logged" <<STUB
#!/bin/sh
echo "clraid \$*" >>"$LOG"
exec "$CLRAID" "\$@"
STUB
chmod 755 "$TESTDIR/bin/attrd_updater" "$TESTDIR/bin/clraid-logged"
export PATH="$TESTDIR/bin:$PATH" ATTRS_LOG="$TESTDIR/attrs" STUB_NBD_LOG="$LOG"
: >"$ATTRS_LOG"
: >"$LOG"
attr() { grep "^$1=" "$ATTRS_LOG" | tail -n 1 | sed "s/^[^=]*=//"; }
# No cluster: a CIB file that does not exist, so lock=local starts standalone.
export CIB_file="$TESTDIR/no-such-cib.xml"

DEVS=$(make_array r1 1 2 --nodes=4 --home-cluster=c)
export OCF_RESOURCE_INSTANCE=clraid-r1
export OCF_RESKEY_name=r1 OCF_RESKEY_devices="$DEVS" OCF_RESKEY_lock=local \
	OCF_RESKEY_run_dir="$RUN" OCF_RESKEY_binary="$TESTDIR/bin/clraid-logged"

# one_reason TEXT: the last run gave exactly one exit reason, exactly TEXT.
one_reason() {
	_got=$(sed -n 's/^ocf-exit-reason://p' "$TESTDIR/agent.out")
	if [ "$_got" != "$1" ]; then
		cat "$TESTDIR/agent.out" >&2
		fail "exit reason '$_got', expected exactly '$1'"
	fi
	echo "ok: exactly one exit reason: $1"
}

echo "--- 1. this host: no nbd_device, then the nbd module"
expect_rc 0 "validate-all without nbd_device (no module, no nbd-client needed)" validate-all
if [ -d /sys/module/nbd ] || { command -v modprobe >/dev/null 2>&1 && modprobe -n -q nbd 2>/dev/null; }; then
	echo "SKIP part: this host has an nbd module, the missing-module refusal is not exercised"
else
	OCF_RESKEY_nbd_device=/dev/nbd0 CLRAID_TEST_NBD_CLIENT="$STUB" \
		expect_rc 5 "nbd_device=/dev/nbd0 without the nbd module" validate-all
	one_reason "nbd_device=/dev/nbd0 needs the nbd kernel module, which kernel $(uname -r) does not have here (not loaded, and modprobe cannot load it)"
	OCF_RESKEY_nbd_device=/dev/nbd0 CLRAID_TEST_NBD_CLIENT="$STUB" expect_rc 5 "start without the nbd module" start
	one_reason "nbd_device=/dev/nbd0 needs the nbd kernel module, which kernel $(uname -r) does not have here (not loaded, and modprobe cannot load it)"
	[ ! -e "$RUN/r1.pid" ] || fail "the engine started although the module is missing"
	OCF_RESKEY_nbd_device=/dev/nbd0 OCF_RESKEY_CRM_meta_interval=0 expect_rc 7 "probe without the nbd module" monitor
fi

# The fake host: the nbd module loaded, devices nbd0 and nbd1.
mkdir -p "$SYS/module/nbd" "$SYS/block/nbd0" "$SYS/block/nbd1"
export CLRAID_TEST_SYSFS_ROOT="$SYS"
ln -s "$STUB" "$TESTDIR/bin/nbd-client"

echo "--- 1b. parameter refusals"
CLRAID_TEST_NBD_CLIENT=/nonexistent/nbd-client OCF_RESKEY_nbd_device=/dev/nbd0 \
	expect_rc 5 "nbd_device set, nbd-client not installed" validate-all
one_reason "nbd_device=/dev/nbd0 needs nbd-client, which is not installed on this node (package nbd-client)"
for d in /dev/sda /dev/nbd /dev/nbdx /dev/nbd01 /dev/nbd0p1 nbd0 /dev/nbd0/; do
	OCF_RESKEY_nbd_device=$d expect_rc 6 "nbd_device=$d" validate-all
	one_reason "Invalid nbd_device '$d': use /dev/nbdN, or leave it empty"
done
for c in 0 abc 17 -1 ""; do
	OCF_RESKEY_nbd_device=/dev/nbd0 OCF_RESKEY_nbd_connections=$c expect_rc 6 "nbd_connections='$c'" validate-all
	one_reason "Invalid nbd_connections '$c': use 1 to 16"
done
for t in 0 abc 1.5 86401 -5; do
	OCF_RESKEY_nbd_device=/dev/nbd0 OCF_RESKEY_nbd_timeout=$t expect_rc 6 "nbd_timeout='$t'" validate-all
	one_reason "Invalid nbd_timeout '$t': use 1 to 86400 seconds"
done
for b in 0 4095 8192 abc; do
	OCF_RESKEY_nbd_device=/dev/nbd0 OCF_RESKEY_nbd_block_size=$b expect_rc 6 "nbd_block_size='$b'" validate-all
	one_reason "Invalid nbd_block_size '$b': use 512, 1024, 2048 or 4096"
done
OCF_RESKEY_nbd_device=/dev/nbd12 OCF_RESKEY_nbd_connections=16 OCF_RESKEY_nbd_timeout=86400 \
	OCF_RESKEY_nbd_block_size=512 expect_rc 0 "the limits: nbd12, 16 connections, 86400 s, 512" validate-all

echo "--- 2. start, monitor, stop with the stub nbd-client and the real engine"
export OCF_RESKEY_nbd_device=/dev/nbd0
(
	export OCF_RESKEY_nbd_connections=4 OCF_RESKEY_nbd_timeout=90 OCF_RESKEY_nbd_block_size=512
	expect_rc 0 "start with nbd_device=/dev/nbd0" start
	want="nbd-client -unix $RUN/r1.sock /dev/nbd0 -b 512 -t 90 -C 4"
	grep -qxF "$want" "$LOG" || { cat "$LOG"; fail "no attach call '$want'"; }
	echo "ok: attach argv: $want"
	# The attach came after the engine served.
	# (the dry runs of validate-all and start start nothing: left out)
	first=$(grep -e '^clraid start ' -e '^nbd-client -unix ' "$LOG" | grep -v -e '^clraid start --dry-run ' |
		cut -d' ' -f1-2 | tr '\n' ',')
	[ "$first" = "clraid start,nbd-client -unix," ] || { cat "$LOG"; fail "order '$first'"; }
	echo "ok: clraid start, then nbd-client -unix"
	last2=$(grep '^clraid start ' "$LOG" | tail -n 2 | cut -d' ' -f3 | tr '\n' ',')
	[ "$last2" = "--dry-run,r1," ] || { cat "$LOG"; fail "no clraid start --dry-run before the start: '$last2'"; }
	echo "ok: start asked clraid start --dry-run first"
	[ "$(cat "$SYS/block/nbd0/socket")" = "$RUN/r1.sock" ] || fail "attached to the wrong socket"
	[ "$(attr clraid-r1-nbd)" = /dev/nbd0 ] || fail "attribute clraid-r1-nbd='$(attr clraid-r1-nbd)'"
	echo "ok: attribute clraid-r1-nbd=/dev/nbd0"
	expect_rc 0 "monitor, attached" monitor
	OCF_CHECK_LEVEL=20 expect_rc 0 "monitor depth 20, attached" monitor
	# metrics_file: every monitor writes the node_exporter textfile
	OCF_RESKEY_metrics_file="$TESTDIR/clraid-r1.prom" expect_rc 0 "monitor with metrics_file" monitor
	grep -qx 'clraid_up{array="r1"} 1' "$TESTDIR/clraid-r1.prom" ||
		fail "metrics_file: no clraid_up 1 in $(head -c 300 "$TESTDIR/clraid-r1.prom")"
	OCF_RESKEY_metrics_file="$TESTDIR/no/such/dir/m.prom" expect_rc 0 "monitor, metrics_file unwritable (a warning)" monitor
	echo "ok: metrics_file written by monitor; an unwritable one only warns"
	: >"$LOG"
	expect_rc 0 "start again (already running)" start
	! grep -q '^nbd-client -unix' "$LOG" || fail "attached twice"
	echo "ok: a second start does not attach again"

	mv "$SYS/block/nbd0/pid" "$TESTDIR/pid0"
	expect_rc 1 "monitor, the stub says nbd0 is disconnected" monitor
	one_reason "/dev/nbd0 is no longer attached to $RUN/r1.sock (nbd-client -c /dev/nbd0: not connected)"
	echo 99999 >"$SYS/block/nbd0/pid"
	expect_rc 1 "monitor, nbd0 attached by another connection" monitor
	one_reason "/dev/nbd0 is attached by another connection (pid 99999), no longer to $RUN/r1.sock (pid $(cat "$TESTDIR/pid0"))"
	: >"$LOG"
	expect_rc 0 "stop while nbd0 belongs to someone else" stop
	! grep -q '^nbd-client -d' "$LOG" || { cat "$LOG"; fail "detached a device that is not ours"; }
	grep -q '^clraid stop r1' "$LOG" || fail "the engine was not stopped"
	[ "$(cat "$SYS/block/nbd0/pid")" = 99999 ] || fail "the other connection was touched"
	echo "ok: stop leaves another connection's nbd0 alone and stops the engine"
	rm -f "$SYS/block/nbd0/pid" "$SYS/block/nbd0/socket"
)

: >"$LOG"
expect_rc 0 "start with the default nbd parameters" start
grep -qxF "nbd-client -unix $RUN/r1.sock /dev/nbd0 -b 4096 -t 60 -C 1" "$LOG" || { cat "$LOG"; fail "default attach argv"; }
echo "ok: attach argv with defaults: -b 4096 -t 60 -C 1"
: >"$LOG"
expect_rc 0 "stop" stop
grep -qxF "nbd-client -d /dev/nbd0" "$LOG" || { cat "$LOG"; fail "no detach call"; }
order=$(grep -e '^nbd-client -d ' -e '^clraid stop ' -e '^stub: at detach' "$LOG" | cut -d' ' -f1-2 | tr '\n' ',')
[ "$order" = "nbd-client -d,stub: at,clraid stop," ] || { cat "$LOG"; fail "stop order '$order'"; }
grep -qx "stub: at detach the engine served: yes" "$LOG" || fail "the engine no longer served at detach"
echo "ok: stop runs nbd-client -d /dev/nbd0 while the engine serves, then clraid stop"
[ ! -e "$SYS/block/nbd0/pid" ] || fail "nbd0 still attached"
[ "$(attr clraid-r1-nbd)" = "<deleted>" ] || fail "clraid-r1-nbd not deleted by stop"
echo "ok: attribute clraid-r1-nbd deleted by stop"
expect_rc 0 "stop again (nothing attached, nothing runs)" stop

echo "--- a device in use at start"
echo 4242 >"$SYS/block/nbd1/pid"
: >"$LOG"
OCF_RESKEY_nbd_device=/dev/nbd1 expect_rc 1 "start on an nbd1 that another connection uses" start
one_reason "/dev/nbd1 is already attached by another NBD connection (pid 4242): use another nbd_device, or detach it with nbd-client -d /dev/nbd1"
! grep -q -e '^clraid start r1' -e '^nbd-client -unix' -e '^nbd-client -d' "$LOG" || { cat "$LOG"; fail "engine started or device touched"; }
[ "$(cat "$SYS/block/nbd1/pid")" = 4242 ] || fail "nbd1 was touched"
echo "ok: refused before the engine starts; nbd1 untouched"

echo "--- a detach that fails"
expect_rc 0 "start" start
PID=$(cat "$RUN/r1.pid")
touch "$TESTDIR/fail-detach"
: >"$LOG"
STUB_NBD_FAIL_DETACH="$TESTDIR/fail-detach" expect_rc 1 "stop, nbd-client -d fails" stop
one_reason "nbd-client -d /dev/nbd0 failed: Ioctl failed: Device or resource busy (the engine of r1 was stopped)"
grep -q '^clraid stop r1' "$LOG" || { cat "$LOG"; fail "the engine stop was not tried"; }
[ ! -d "/proc/$PID" ] || grep -q '^State:.*Z' "/proc/$PID/status" || fail "engine $PID survived the stop"
echo "ok: the failed detach fails the stop, after the engine was stopped"
rm -f "$TESTDIR/fail-detach"
: >"$LOG"
expect_rc 0 "start over our stale attachment (engine gone, nbd0 still ours)" start
order=$(grep -e '^nbd-client -d ' -e '^clraid start ' -e '^nbd-client -unix ' "$LOG" | cut -d' ' -f1-3 |
	sed 's/^\(clraid start\) r1$/\1/; s/^\(nbd-client -[a-z]*\) .*/\1/' | tr '\n' ',')
[ "$order" = "nbd-client -d,clraid start --dry-run,clraid start,nbd-client -unix," ] ||
	{ cat "$LOG"; fail "order '$order'"; }
echo "ok: start detaches the stale attachment, starts the engine, attaches"
expect_rc 0 "stop" stop
