#!/bin/sh
# pcs and Pacemaker's offline tools on ocf:clraid:clraid, no cluster running:
# pcs -f accepts valid parameters and rejects unknown, missing, duplicate
# and (with --agent-validation) invalid ones; each pcs recipe in
# crm-templates/ builds a CIB that crm_verify accepts; crm_simulate shows a
# node failure fenced and the clones running on on the survivors, and a
# failed monitor fencing its node (on-fail=fence).
. "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
requires pcs
requires cibadmin
requires crm_simulate
requires crm_verify
requires crm_resource
requires jq
private_ocf
cd "$TESTDIR"

DEVS=$(make_array r1 1 2 --nodes=4 --home-cluster=c)
P="binary=$CLRAID"
# validate-all asks the engine ("clraid start --dry-run"), which looks for
# its nbdkit plugin: the one of the build tree, as the resource's plugin.
[ -r "${CLRAID_NBDKIT_PLUGIN:-/nonexistent}" ] || skip "the engine's nbdkit plugin is not built"
PL="plugin=$CLRAID_NBDKIT_PLUGIN"

crm_resource --show-metadata ocf:clraid:clraid >md.xml || fail "crm_resource cannot read the meta-data"
echo "ok: crm_resource --show-metadata ocf:clraid:clraid"

cibadmin --empty >cib.xml
pcsf() { pcs -f cib.xml "$@" >pcs.out 2>&1; }
accepts() { # WHAT ARGS...
	_what=$1; shift
	pcsf "$@" || { cat pcs.out >&2; fail "pcs rejected $_what"; }
	echo "ok: pcs accepts $_what"
}
rejects() { # WHAT PATTERN ARGS...
	_what=$1 _pat=$2; shift 2
	if pcsf "$@"; then cat pcs.out >&2; fail "pcs accepted $_what"; fi
	grep -q -- "$_pat" pcs.out || { cat pcs.out >&2; fail "$_what: no '$_pat' in pcs's message"; }
	echo "ok: pcs rejects $_what: $(grep -m1 'ocf-exit-reason\|Error: [^V]' pcs.out)"
}

accepts "valid parameters (--agent-validation)" resource create a1 ocf:clraid:clraid \
	name=r1 devices="$DEVS" lock=cpg path_failure_action=fail-disk last_device_action=error freeze_timeout=2m "$P" "$PL" \
	--agent-validation op monitor interval=10s op monitor interval=30s OCF_CHECK_LEVEL=10
rejects "an unknown parameter" "invalid resource option 'disks'" \
	resource create a2 ocf:clraid:clraid name=r2 disks="$DEVS" "$P"
rejects "a missing name" "required resource option 'name' is missing" \
	resource create a3 ocf:clraid:clraid devices="$DEVS" "$P"
rejects "a name used twice" "is not unique" \
	resource create a4 ocf:clraid:clraid name=r1 devices="$DEVS" "$P"
rejects "lock=zk (--agent-validation)" "Invalid lock 'zk'" \
	resource create a5 ocf:clraid:clraid name=r5 devices="$DEVS" lock=zk "$P" --agent-validation
rejects "last_device_action=retry (--agent-validation)" "Invalid policy: last_device_action=retry" \
	resource create a6 ocf:clraid:clraid name=r6 devices="$DEVS" last_device_action=retry "$P" --agent-validation
rejects "devices and array_uuid (--agent-validation)" "Set either devices or array_uuid" \
	resource create a7 ocf:clraid:clraid name=r7 devices="$DEVS" "$P" --agent-validation \
	array_uuid=4bfc5095:fa0f4432:4e6cc2e4:aac0ded3
rejects "a missing member (--agent-validation)" "does not exist on this node" \
	resource create a8 ocf:clraid:clraid name=r8 devices="$TESTDIR/nope" "$P" --agent-validation
accepts "a reloadable policy change" resource update a1 last_device_action=freeze
[ "$(grep -c 'type="clraid"' cib.xml)" -eq 1 ] || fail "rejected resources reached the CIB"

crm_resource --validate --class ocf --provider clraid --agent clraid \
	--option name=r1 --option "devices=$DEVS" --option "$P" --option "$PL" >/dev/null ||
	fail "crm_resource --validate rejects valid parameters"
if crm_resource --validate --class ocf --provider clraid --agent clraid \
	--option name=r1 --option "devices=$DEVS" --option "$P" --option export=fc >/dev/null 2>&1; then
	fail "crm_resource --validate accepts export=fc"
fi
echo "ok: crm_resource --validate"

# The recipes, on a 3-node CIB.
for r in cpg dlm; do
	cibadmin --empty >"$r.xml"
	NODES="n1 n2 n3" DEVICES="$DEVS" CLRAID_BIN="$CLRAID" \
		sh "$top_srcdir/crm-templates/pcs-clraid-$r.sh" "$r.xml" >"$r.log" 2>&1 ||
		{ cat "$r.log" >&2; fail "recipe $r"; }
	for i in 1 2 3; do
		CIB_file="$r.xml" cibadmin -C -o nodes -X "<node id=\"$i\" uname=\"n$i\"/>"
	done
	crm_simulate -x "$r.xml" -u n1 -u n2 -u n3 -q 1 -S -O "$r-up.xml" >"$r-up.out" 2>&1 ||
		{ cat "$r-up.out" >&2; fail "$r: crm_simulate could not bring the nodes up"; }
	# crm_simulate fences "on" (unfencing) but does not record it.
	for n in n1 n2 n3; do
		CIB_file="$r-up.xml" crm_attribute -N "$n" -n '#node-unfenced' -v 1 -l reboot
	done
	crm_verify -x "$r-up.xml" -V >"$r-verify.out" 2>&1 ||
		{ cat "$r-verify.out" >&2; fail "$r: crm_verify"; }
	! grep -q 'error\|warning' "$r-verify.out" || { cat "$r-verify.out" >&2; fail "$r: crm_verify complains"; }
	echo "ok: recipe $r builds a CIB that crm_verify accepts"

	grep -q 'Fence (on) n1' "$r-up.out" || fail "$r: no unfencing before start"
	CIB_file="$r-up.xml" crm_mon -1 >"$r-mon.out" 2>&1
	grep -A1 'clraid-r0-clone' "$r-mon.out" | grep -q 'Started: \[ n1 n2 n3 \]' ||
		{ cat "$r-mon.out" >&2; fail "$r: clraid is not started everywhere"; }
	# Order: the lock provider, then clraid, then the file system.
	line() { grep -n "$1" "$r-up.out" | head -n 1 | cut -d: -f1; }
	dlm_l=$(line 'dlm:0 *start on') cl_l=$(line 'clraid-r0:0 *start on') fs_l=$(line 'fs-r0:0 *start on')
	[ "$cl_l" -lt "$fs_l" ] || fail "$r: the file system starts before clraid"
	if [ "$r" = dlm ]; then
		[ "$dlm_l" -lt "$cl_l" ] || fail "dlm: clraid starts before dlm"
	fi
	echo "ok: recipe $r unfences the nodes, then starts the lock provider, clraid, then GFS2"

	crm_simulate -x "$r-up.xml" -f n1 -S >"$r-fail.out" 2>&1 || { cat "$r-fail.out" >&2; fail "$r: crm_simulate -f n1"; }
	grep -q "Fence (reboot) n1" "$r-fail.out" || { cat "$r-fail.out" >&2; fail "$r: n1 is not fenced"; }
	sed -n '/Revised Cluster Status/,$p' "$r-fail.out" >"$r-after.out"
	for c in clraid-r0-clone fs-r0-clone; do
		grep -A2 "$c" "$r-after.out" | grep -q 'Started: \[ n2 n3 \]' ||
			{ cat "$r-fail.out" >&2; fail "$r: $c does not run on n2 n3 after n1 failed"; }
	done
	echo "ok: $r: node n1 fails, it is fenced, clraid and GFS2 run on n2 n3"

	crm_simulate -x "$r-up.xml" -i clraid-r0_monitor_10000@n2=1 -S >"$r-mon-fail.out" 2>&1 || true
	grep -q "Fence (reboot) n2 'clraid-r0:.* failed there'" "$r-mon-fail.out" ||
		{ cat "$r-mon-fail.out" >&2; fail "$r: a failed monitor does not fence"; }
	echo "ok: $r: a failed clraid monitor on n2 fences n2 (on-fail=fence)"
done
