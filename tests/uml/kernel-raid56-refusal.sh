#!/bin/bash
# A RAID5 or RAID6 that clraid creates for several nodes carries clraid's
# own superblock feature bit (0x40000000, doc/architecture.md §2.2): Linux
# md would run such an array on every node with no stripe locking, so a
# stock kernel must refuse it.  Inside User-Mode Linux (Linux 6.1):
#
#  - mdadm --examine prints the marked members (level, feature map);
#  - mdadm --assemble of a marked RAID5 (3 members, --nodes=2) and of a
#    marked RAID6 (4 members, --nodes=4) fails, the kernel logs why, and
#    the members are unchanged (sha256 before and after, O_DIRECT);
#  - the same RAID5 geometry created with --nodes=1 assembles and runs
#    (the control: the refusal is the bit's, not the geometry's).
#
# SKIPs where User-Mode Linux cannot run.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
. "$top_srcdir/tests/functions.sh"
. "$top_srcdir/tests/uml/uml-functions.sh"
requires_root
CLRAID=$top_builddir/clraid
[ -x "$CLRAID" ] || fail "clraid is not built in $top_builddir"
command -v mdadm >/dev/null || skip "mdadm is not installed"
uml_init
W=$UML_DIR

f() { echo "$TESTDIR/$1.img"; }
truncate -s 24M "$(f a0)" "$(f a1)" "$(f a2)" "$(f b0)" "$(f b1)" "$(f b2)" "$(f c0)" "$(f c1)" "$(f c2)" "$(f c3)"
"$CLRAID" create --level=5 --raid-devices=3 --nodes=2 --home-cluster=clraid56 --name=r5c --assume-clean \
    "$(f a0)" "$(f a1)" "$(f a2)" >/dev/null || fail "clraid create (RAID5, 2 nodes)"
"$CLRAID" create --level=5 --raid-devices=3 --nodes=1 --name=r5s --assume-clean \
    "$(f b0)" "$(f b1)" "$(f b2)" >/dev/null || fail "clraid create (RAID5, 1 node)"
"$CLRAID" create --level=6 --raid-devices=4 --nodes=4 --home-cluster=clraid56 --name=r6c --assume-clean \
    "$(f c0)" "$(f c1)" "$(f c2)" "$(f c3)" >/dev/null || fail "clraid create (RAID6, 4 nodes)"
for a in a0 b0 c0; do
    echo "$a: $("$CLRAID" examine "$(f $a)" | grep -E 'Feature Map|Cluster :' | tr -s ' ' | tr '\n' ' ')"
done

cat >"$W/node.sh" <<'G'
. "$UML_LIB/guest-functions.sh"
W=$UML_WORK
modload raid456
sums() { for d in "$@"; do dd if="$d" bs=1M iflag=direct status=none | sha256sum | cut -c1-16; done | tr '\n' ' '; }
A="$(ubd 0) $(ubd 1) $(ubd 2)"
B="$(ubd 3) $(ubd 4) $(ubd 5)"
C="$(ubd 6) $(ubd 7) $(ubd 8) $(ubd 9)"
r examine_level "$(mdadm --examine "$(ubd 0)" 2>&1 | sed -n 's/^ *Raid Level : //p')"
r examine_fmap "$(mdadm --examine "$(ubd 0)" 2>&1 | sed -n 's/^ *Feature Map : //p')"
r examine6_fmap "$(mdadm --examine "$(ubd 6)" 2>&1 | sed -n 's/^ *Feature Map : //p')"
# shellcheck disable=SC2086
r a_before "$(sums $A)"
# shellcheck disable=SC2086
r c_before "$(sums $C)"
dmesg -C 2>/dev/null
# shellcheck disable=SC2086
mdadm --assemble /dev/md0 $A >"$W/a.out" 2>&1
r a_rc $?
r a_msg "$(head -n 2 "$W/a.out" | tr '\n' ' ')"
r a_dmesg "$(dmesg | grep -i 'md\|ubd' | tail -n 3 | tr '\n' '|')"
r a_active "$(test -e /sys/block/md0/md/array_state && cat /sys/block/md0/md/array_state)"
mdadm --stop /dev/md0 >/dev/null 2>&1
# shellcheck disable=SC2086
mdadm --assemble /dev/md2 $C >"$W/c.out" 2>&1
r c_rc $?
r c_active "$(test -e /sys/block/md2/md/array_state && cat /sys/block/md2/md/array_state)"
mdadm --stop /dev/md2 >/dev/null 2>&1
# shellcheck disable=SC2086
r a_after "$(sums $A)"
# shellcheck disable=SC2086
r c_after "$(sums $C)"
# shellcheck disable=SC2086
mdadm --assemble /dev/md1 $B >"$W/b.out" 2>&1
r b_rc $?
r b_mdstat "$(grep '^md1' /proc/mdstat)"
r b_active "$(test -e /sys/block/md1/md/array_state && cat /sys/block/md1/md/array_state)"
mdadm --stop /dev/md1 >/dev/null 2>&1
G

uml_run r56 "$W/node.sh" "$(f a0)" "$(f a1)" "$(f a2)" "$(f b0)" "$(f b1)" "$(f b2)" \
    "$(f c0)" "$(f c1)" "$(f c2)" "$(f c3)" || { uml_results r56; uml_console_tail r56 20; fail "the guest failed"; }
uml_results r56 | sed 's/^/  /'
[ "$(uml_r r56 examine_level)" = raid5 ] || fail "mdadm --examine level: $(uml_r r56 examine_level)"
[ "$(uml_r r56 examine_fmap)" = 0x40000101 ] || fail "mdadm --examine feature map: $(uml_r r56 examine_fmap)"
[ "$(uml_r r56 examine6_fmap)" = 0x40000101 ] || fail "mdadm --examine RAID6 feature map: $(uml_r r56 examine6_fmap)"
echo "ok: mdadm --examine prints the marked members (raid5, feature map 0x40000101)"
[ "$(uml_r r56 a_rc)" != 0 ] || fail "kernel md assembled the marked RAID5"
[ -z "$(uml_r r56 a_active)" ] || fail "md0 is $(uml_r r56 a_active)"
[ "$(uml_r r56 c_rc)" != 0 ] || fail "kernel md assembled the marked RAID6"
[ -z "$(uml_r r56 c_active)" ] || fail "md2 is $(uml_r r56 c_active)"
echo "ok: Linux 6.1 refuses the marked RAID5 and RAID6: mdadm: $(uml_r r56 a_msg)"
echo "    kernel: $(uml_r r56 a_dmesg)"
[ "$(uml_r r56 a_before)" = "$(uml_r r56 a_after)" ] || fail "RAID5 members changed"
[ "$(uml_r r56 c_before)" = "$(uml_r r56 c_after)" ] || fail "RAID6 members changed"
echo "ok: their members are unchanged ($(uml_r r56 a_after)/ $(uml_r r56 c_after))"
[ "$(uml_r r56 b_rc)" = 0 ] || fail "the one-node RAID5 did not assemble: $(uml_r r56 b_mdstat)"
case "$(uml_r r56 b_active)" in clean | active* | read-auto) ;; *) fail "md1 is '$(uml_r r56 b_active)'" ;; esac
echo "ok: the same RAID5 made for one node runs: $(uml_r r56 b_mdstat)"
echo "PASS: kernel md refuses clraid's clustered RAID5/6"
