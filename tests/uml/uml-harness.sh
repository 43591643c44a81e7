#!/bin/bash
# The UML harness itself: one instance loads md and the raid personalities
# and sees its member files with their sizes; then two instances on a
# private network run corosync (quorate, two members) and dlm_controld.
# SKIPs where User-Mode Linux cannot run.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/functions.sh"
. "$top_srcdir/tests/uml/uml-functions.sh"
requires_root
uml_init

truncate -s 48M "$TESTDIR/a.img"
truncate -s 80M "$TESTDIR/b.img"
cat >"$TESTDIR/one.sh" <<'G'
. "$UML_LIB/guest-functions.sh"
modload raid1 raid10 raid456 md-cluster
r personalities "$(sed -n 's/^Personalities : //p' /proc/mdstat | tr -d '[] ' )"
r size_a "$(blockdev --getsize64 "$(ubd 0)")"
r size_b "$(blockdev --getsize64 "$(ubd 1)")"
echo hello >"$UML_WORK/from-guest"
G
t0=$(date +%s%N)
uml_run one "$TESTDIR/one.sh" "$TESTDIR/a.img" "$TESTDIR/b.img" || { uml_console_tail one; fail "single instance: exit $?"; }
echo "single boot-run-poweroff: $((($(date +%s%N) - t0) / 1000000)) ms"
p=$(uml_r one personalities)
echo "personalities: $p"
for want in raid1 raid10 raid6 raid5; do
    case "$p" in *"$want"*) ;; *) fail "personality $want not loaded ($p)" ;; esac
done
[ "$(uml_r one size_a)" = $((48 << 20)) ] || fail "ubda size $(uml_r one size_a)"
[ "$(uml_r one size_b)" = $((80 << 20)) ] || fail "ubdb size $(uml_r one size_b)"
[ "$(cat "$TESTDIR/uml/from-guest")" = hello ] || fail "the guest could not write the work dir"

uml_net n1 n2
cat >"$TESTDIR/two.sh" <<'G'
. "$UML_LIB/guest-functions.sh"
guest_corosync
guest_dlm
# two_node quorum comes with the first node: wait for the second to show
wait_for 30 sh -c 'corosync-quorumtool -l 2>/dev/null | grep -c " n[0-9]" | grep -qx 2'
r members "$(corosync-quorumtool -l 2>/dev/null | grep -c ' n[0-9]')"
dlm_tool status >"$UML_WORK/$NODE.dlmstatus" 2>&1
r dlm "$(sed -n "s/^cluster nodeid \([0-9]*\).*/\1/p" "$UML_WORK/$NODE.dlmstatus")"
# stay up until the other node has seen two members too
touch "$UML_WORK/$NODE.up"
wait_for 30 sh -c 'ls "$UML_WORK"/*.up | wc -l | grep -q 2'
sleep 1
G
t0=$(date +%s%N)
uml_start n1 "$TESTDIR/two.sh"
uml_start n2 "$TESTDIR/two.sh"
for n in n1 n2; do
    uml_wait "$n" 120 || { uml_console_tail "$n"; tail -n 20 "$TESTDIR/uml/$n.corosync.log" 2>/dev/null; fail "$n: exit $?"; }
done
echo "two nodes, corosync + dlm_controld, up and off: $((($(date +%s%N) - t0) / 1000000)) ms"
for n in n1 n2; do
    [ "$(uml_r "$n" members)" = 2 ] || fail "$n: corosync members $(uml_r "$n" members)"
    [ -n "$(uml_r "$n" dlm)" ] || { cat "$TESTDIR/uml/$n.dlmstatus"; fail "$n: dlm_controld status gave no node id"; }
    echo "$n: 2 corosync members, dlm_controld node id $(uml_r "$n" dlm)"
done
cat "$TESTDIR/uml/n1.dlmstatus"
echo "PASS: uml harness"
