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

facts() { # FILE [ARGS]: the daemon's facts, as JSON, in facts.json
	_f=$1
	shift
	CIB_file="$_f" "$PD" --once --json "$@" >facts.json 2>pd.err ||
		{ cat pd.err >&2; fail "clraid-policyd --once $* on $_f"; }
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

# --- evidence and decisions ----------------------------------------------
# Each node's daemon publishes what it sees as the transient attribute
# clraid-NAME-io through attrd; crm_attribute --lifetime reboot writes the
# same into a CIB file.  The decider is the DC, or without one (as here)
# the lowest online node id: n1.
ev() { # FILE NODE ARRAY VALUE
	CIB_file="$1" crm_attribute --node "$2" --name "clraid-$3-io" --update "$4" --lifetime reboot \
		>/dev/null 2>&1 || fail "crm_attribute: evidence of $2 on $3"
}
decision() { # WHAT ARRAY WANT: "decider action row nodes-mask"
	is "$1" ".arrays[] | select(.name == \"$2\") | .policy | \"\(.decider) \(.decision.action) \(.decision.row) \(.decision.nodes)\"" "$3"
}
crm_simulate -x cib.xml --node-up n1 --node-up n2 --node-up n3 --quorum 1 -O all3.xml >sim.out 2>&1 ||
	{ cat sim.out >&2; fail "crm_simulate (three up)"; }
facts all3.xml --node n1
is "no evidence, no decision" '.arrays[] | select(.name == "db") | .policy | "\(.decision) \(.why_none)"' \
	"null no node runs the array"
# member 1 fails on n2 only; n1 and n3 read and wrote it (their probes)
for a in vm db; do
	ev all3.xml n1 $a "n=2 r=1 p1=ok"
	ev all3.xml n2 $a "n=2 r=1 m1=path:3 p1=failed"
	ev all3.xml n3 $a "n=2 r=1 p1=ok"
done
facts all3.xml --node n1
decision "row 3, path_failure_action=fence: fence n2" db "true fence 3 2"
decision "row 3, path_failure_action=fail-disk: the disk fails cluster-wide" vm "true fail-disk 3 0"
is "the evidence" '.arrays[] | select(.name == "db") | .policy.decision.evidence' \
	"fence n2: disk1 failed on n2 only; n1, n3 read and wrote it"
facts all3.xml --node n2
decision "n2 is not the decider" db "false none 0 0"
# the member fails on every node: fail it cluster-wide
ev all3.xml n1 db "n=2 r=1 m1=path:1 p1=failed"
ev all3.xml n3 db "n=2 r=1 p1=failed"
facts all3.xml --node n1
decision "row 2: fail the disk" db "true fail-disk 2 0"
# a malformed value is named, and that node counts as not running the array
ev all3.xml n3 vm "n=2 r=1 m7=path:1"
facts all3.xml --node n1
is "malformed evidence" '.arrays[] | select(.name == "vm") | .policy.evidence_errors' "n3: role 7 is past n=2"
CIB_file=all3.xml "$PD" --once --node n1 >facts.txt 2>pd.err || fail "clraid-policyd --once (text)"
grep -q "^  decision: row 2 fail-disk: " facts.txt || { cat facts.txt >&2; fail "the text form shows no decision"; }
grep -q "^  evidence of n2: n=2 r=1 m1=path:3 p1=failed" facts.txt ||
	{ cat facts.txt >&2; fail "the text form shows no evidence"; }
echo "ok: the text form shows evidence and decisions"
# n3 down: fencing n2 would leave n1 alone, without quorum
crm_simulate -x cib.xml --node-up n1 --node-up n2 --node-fail n3 --quorum 1 -O two.xml >sim.out 2>&1 ||
	{ cat sim.out >&2; fail "crm_simulate (n3 down)"; }
ev two.xml n1 db "n=2 r=1 p1=ok"
ev two.xml n2 db "n=2 r=1 m1=path:3 p1=failed"
facts two.xml --node n1
decision "row 3 without quorate survivors: freeze" db "true freeze 3 0"

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
