#!/bin/sh
# clraid-policyd reads what Pacemaker's own tools write: a CIB built with
# cibadmin, pcs -f and crm_simulate, read through libcib (CIB_file, as
# cibadmin and crm_mon read a file) and printed with --once.  Then
# --check-settings, which the OCF agent's validate-all runs, on the same
# values.
. "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
requires pcs
requires cibadmin
requires crm_simulate
requires crm_attribute
requires jq
PD="$top_builddir/clraid-policyd"
[ -x "$PD" ] || skip "clraid-policyd is not built (configure found no pacemaker-dev)"
private_ocf
cd "$TESTDIR"

facts() { # FILE: the daemon's facts, as JSON, in facts.json
	CIB_file="$1" "$PD" --once --json >facts.json 2>pd.err || { cat pd.err >&2; fail "clraid-policyd --once on $1"; }
}
is() { # WHAT JQ-FILTER WANT
	_got=$(jq -r "$2" facts.json)
	[ "$_got" = "$3" ] || { cat facts.json >&2; fail "$1: $2 is '$_got', want '$3'"; }
	echo "ok: $1 ($2 = $3)"
}

# --- a three-node cluster's configuration, as pcs writes it --------------
cibadmin --empty >cib.xml
for i in 1 2 3; do
	CIB_file=cib.xml cibadmin --create -o nodes -X "<node id=\"$i\" uname=\"n$i\"/>" ||
		fail "cibadmin: add node n$i"
done
pcs -f cib.xml property set no-quorum-policy=freeze >pcs.out 2>&1 || { cat pcs.out >&2; fail "pcs property"; }
pcs -f cib.xml stonith create fence1 fence_dummy pcmk_host_list="n1 n2 n3" >pcs.out 2>&1 ||
	{ cat pcs.out >&2; fail "pcs stonith create"; }
pcs -f cib.xml resource create clraid-vm ocf:clraid:clraid name=vm devices=/dev/shared-a \
	path_failure_action=fail-disk freeze_timeout=2m confirm_timeout=500ms clone >pcs.out 2>&1 ||
	{ cat pcs.out >&2; fail "pcs resource create"; }
pcs -f cib.xml resource create clraid-db ocf:clraid:clraid name=db devices=/dev/shared-b >pcs.out 2>&1 ||
	{ cat pcs.out >&2; fail "pcs resource create (defaults)"; }

# --- the status as the scheduler sees it: n1, n2 up, n3 failed ---------------
crm_simulate -x cib.xml --node-up n1 --node-up n2 --node-fail n3 --quorum 1 -O live.xml >sim.out 2>&1 ||
	{ cat sim.out >&2; fail "crm_simulate"; }
facts live.xml
is "quorum" .have_quorum true
is "fencing" '"\(.stonith_enabled) \(.fence_devices)"' "true 1"
is "nodes" '[.nodes[] | "\(.name):\(.member)"] | join(" ")' "n1:true n2:true n3:false"
is "the cloned array" '.arrays[] | select(.resource == "clraid-vm") | "\(.name) \(.cloned) \(.settings.path_failure_action) \(.settings.freeze_timeout_ms) \(.settings.confirm_timeout_ms)"' \
	"vm true fail-disk 120000 500"
is "the array with defaults" '.arrays[] | select(.resource == "clraid-db") | "\(.cloned) \(.settings.path_failure_action) \(.settings.last_device_action) \(.settings.io_timeout_ms) \(.settings.max_read_errors) \(.error)"' \
	"false fence freeze 60000 20 null"

# --- changes an operator makes, read again --------------------------------
CIB_file=live.xml crm_attribute --node n2 --name standby --update on >/dev/null || fail "crm_attribute standby"
pcs -f live.xml resource update clraid-db io_timeout=soon >pcs.out 2>&1 || { cat pcs.out >&2; fail "pcs resource update"; }
pcs -f live.xml property set stonith-enabled=false >pcs.out 2>&1 || { cat pcs.out >&2; fail "pcs property"; }
facts live.xml
is "standby" '.nodes[] | select(.name == "n2") | .standby' true
is "a bad value in the CIB" '.arrays[] | select(.resource == "clraid-db") | "\(.error) \(.settings.io_timeout_ms)"' \
	"io_timeout=soon: give a time such as 15s, 500ms, 2m or 1h 60000"
is "stonith disabled" .stonith_enabled false
CIB_file=live.xml "$PD" --once >facts.txt 2>pd.err || fail "clraid-policyd --once (text)"
grep -q "^array db (resource clraid-db): .*BAD SETTINGS, defaults used: io_timeout=soon" facts.txt ||
	{ cat facts.txt >&2; fail "the text form does not show the bad setting"; }
echo "ok: the text form: $(grep -c . facts.txt) lines"

# --- no CIB, not a CIB ----------------------------------------------------
echo '<config/>' >bad.xml
if CIB_file=bad.xml "$PD" --once >/dev/null 2>pd.err; then fail "clraid-policyd read <config/> as a CIB"; fi
echo "ok: not a CIB refused: $(tail -n 1 pd.err)"

# --- --check-settings: what the agent's validate-all runs -------------------
"$PD" --check-settings path_failure_action=fence last_device_action=error freeze_timeout=30s ||
	fail "--check-settings refuses good values"
for bad in path_failure_action=panic io_timeout=0 error_window=soon max_read_errors=-1 nonsense=1; do
	if "$PD" --check-settings "$bad" 2>pd.err; then fail "--check-settings accepts $bad"; else rc=$?; fi
	[ "$rc" -eq 6 ] || fail "--check-settings $bad: exit $rc, want 6"
	echo "ok: --check-settings $bad -> 6: $(cat pd.err)"
done
