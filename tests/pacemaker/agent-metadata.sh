#!/bin/sh
# The meta-data is valid OCF 1.1 (RelaxNG, ClusterLabs/OCF-spec), passes the
# DTD check ocf-tester does (xmllint --valid against ra-api-1.dtd), and says
# what pcs and Pacemaker rely on.
. "${top_srcdir:-.}/tests/functions.sh"
requires xmllint

AGENT="$top_srcdir/ocf/clraid"
MD="$TESTDIR/meta-data.xml"
OCF_ROOT=/usr/lib/ocf "$AGENT" meta-data >"$MD" || fail "meta-data exited $?"

xmllint --noout --relaxng "$top_srcdir/tests/pacemaker/ra-api-1.1.rng" "$MD" 2>"$TESTDIR/err" ||
	{ cat "$TESTDIR/err" >&2; fail "meta-data is not valid OCF 1.1"; }
echo "ok: valid against the OCF 1.1 RelaxNG schema"

if [ -r /usr/share/pcs/data/ocf-1.1.rng ]; then
	xmllint --noout --relaxng /usr/share/pcs/data/ocf-1.1.rng "$MD" 2>/dev/null ||
		fail "meta-data is not valid against pcs's ocf-1.1.rng"
	echo "ok: valid against pcs's ocf-1.1.rng"
fi

DTD_DIR=/usr/share/resource-agents
[ -r "$DTD_DIR/ra-api-1.dtd" ] || skip "ra-api-1.dtd (resource-agents) is not installed"
(cd "$DTD_DIR" && xmllint --noout --valid - <"$MD") 2>"$TESTDIR/err" ||
	{ cat "$TESTDIR/err" >&2; fail "meta-data fails the DTD check of ocf-tester"; }
echo "ok: valid against ra-api-1.dtd (as ocf-tester checks it)"

# The DTD check is real: an action the DTD does not know must fail it
# unless declared in the internal subset, as reload-agent is.
sed 's/name="notify"/name="bogus-action"/; /<!ATTLIST action/d' "$MD" >"$TESTDIR/bad.xml"
if (cd "$DTD_DIR" && xmllint --noout --valid - <"$TESTDIR/bad.xml") 2>/dev/null; then
	fail "xmllint --valid accepted an unknown action: the DTD check proves nothing"
fi
echo "ok: the DTD check rejects an undeclared action"

# What the cluster tools rely on.
grep -q '^<!DOCTYPE resource-agent SYSTEM "ra-api-1.dtd"' "$MD" || fail "no DOCTYPE line"
grep -q '<version>1.1</version>' "$MD" || fail "not OCF 1.1"
for a in start stop monitor notify reload-agent validate-all meta-data; do
	grep -q "<action name=\"$a\"" "$MD" || fail "action $a missing"
done
for d in 0 10 20; do
	grep -q "<action name=\"monitor\".*depth=\"$d\"" "$MD" || fail "no monitor at depth $d"
done
grep -q '<parameter name="name" unique-group="name" required="1">' "$MD" || fail "name not required and unique"
for p in path_failure_action last_device_action fence_action freeze_timeout confirm_timeout \
	probe_timeout io_timeout error_threshold error_window max_read_errors; do
	grep -q "<parameter name=\"$p\" reloadable=\"1\">" "$MD" || fail "$p not reloadable"
done
echo "ok: DOCTYPE, OCF 1.1, actions, monitor depths 0/10/20, required+unique name, reloadable policies"

# Every parameter has a default variable and a ': ${OCF_RESKEY_x=...}' line.
# shellcheck disable=SC2013
for p in $(sed -n 's/^<parameter name="\([a-z_]*\)".*/\1/p' "$MD"); do
	grep -q "^OCF_RESKEY_${p}_default=" "$AGENT" || fail "OCF_RESKEY_${p}_default missing"
	grep -q "^: \"\${OCF_RESKEY_${p}=\${OCF_RESKEY_${p}_default}}\"" "$AGENT" || fail ": \${OCF_RESKEY_$p=...} missing"
done
echo "ok: every parameter has OCF_RESKEY_<name>_default and its ': \${...}' line"
