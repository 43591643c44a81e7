#!/bin/sh
# The crmsh templates in crm-templates/crmsh: "crm configure template new"
# and "apply" build, on a CIB file, a configuration that crm_verify accepts
# on 3 nodes, with the clraid clone, the lock provider order, GFS2 on top,
# fencing and on-fail=fence.  crmsh reads templates from its share
# directory only: the test binds a copy holding ours over it, in a private
# mount namespace.
. "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
requires crm
requires cibadmin
requires crm_simulate
requires crm_verify
private_ocf
TPL=/usr/share/crmsh/templates
[ -d "$TPL" ] || skip "crmsh has no template directory $TPL"
mkdir -p "$TESTDIR/templates"
cp -a "$TPL/." "$TESTDIR/templates/"
cp "$top_srcdir"/crm-templates/crmsh/clraid-* "$TESTDIR/templates/"
mount --bind "$TESTDIR/templates" "$TPL" || fail "bind mount over $TPL"
cleanup_fn "umount $TPL"
# crmsh keeps template configurations under $HOME/.config/crm.
export HOME="$TESTDIR/home"
mkdir -p "$HOME"
cd "$TESTDIR"

DEVS=$(make_array r0 1 2 --nodes=4 --home-cluster=c)
UUID=$("$CLRAID" examine --json "${DEVS%% *}" | sed -n 's/.*"array_uuid":"\([^"]*\)".*/\1/p')
for t in cpg dlm; do
	cibadmin --empty >"$t.xml"
	export CIB_file="$TESTDIR/$t.xml"
	crm configure template new "arr$t" "clraid-$t" params array_name=r0 uuid="$UUID" \
		device_glob="$TESTDIR/r0-*" fence_devices="$(echo "$DEVS" | tr ' ' ',')" \
		fence_nodes=n1,n2,n3 directory=/srv/r0 fs_device=/dev/nbd0 binary="$CLRAID" \
		>"$t.new" 2>&1 || { cat "$t.new"; fail "template new clraid-$t"; }
	grep -q 'ERROR' "$t.new" && { cat "$t.new"; fail "template new clraid-$t: errors"; }
	crm configure template apply "arr$t" >"$t.apply" 2>&1 || { cat "$t.apply"; fail "template apply clraid-$t"; }
	grep -qi 'error' "$t.apply" && { cat "$t.apply"; fail "template apply clraid-$t: errors"; }
	crm configure show >"$t.show"
	for want in "array_uuid=\"$UUID\"" "OCF_CHECK_LEVEL=10" "OCF_CHECK_LEVEL=20" "on-fail=fence" \
		"requires=unfencing" "provides=unfencing" "interleave=true" "no-quorum-policy=freeze" \
		"clone c-clraid-r0 clraid-r0" "clone c-fs-r0 fs-r0" "fstype=gfs2"; do
		grep -q -- "$want" "$t.show" || { cat "$t.show"; fail "clraid-$t: no '$want'"; }
	done
	grep -q "lock=$t" "$t.show" || fail "clraid-$t: lock is not $t"
	if [ "$t" = dlm ]; then
		grep -q "order .* c-dlm c-clraid-r0" "$t.show" || { cat "$t.show"; fail "dlm: clraid not ordered after dlm"; }
	fi
	grep -q "order .* c-clraid-r0 c-fs-r0" "$t.show" || { cat "$t.show"; fail "$t: GFS2 not ordered after clraid"; }
	unset CIB_file
	for i in 1 2 3; do
		CIB_file="$t.xml" cibadmin -C -o nodes -X "<node id=\"$i\" uname=\"n$i\"/>"
	done
	crm_simulate -x "$t.xml" -u n1 -u n2 -u n3 -q 1 -S -O "$t-up.xml" >"$t-up.out" 2>&1 ||
		{ cat "$t-up.out"; fail "$t: crm_simulate"; }
	for n in n1 n2 n3; do
		CIB_file="$t-up.xml" crm_attribute -N "$n" -n '#node-unfenced' -v 1 -l reboot
	done
	crm_verify -x "$t-up.xml" -V >"$t-verify.out" 2>&1 || { cat "$t-verify.out"; fail "$t: crm_verify"; }
	crm_simulate -x "$t-up.xml" -f n1 -S >"$t-fail.out" 2>&1
	grep -q "Fence (reboot) n1" "$t-fail.out" || { cat "$t-fail.out"; fail "$t: n1 not fenced"; }
	echo "ok: crmsh template clraid-$t: applied, crm_verify accepts it, a node failure is fenced"
done
