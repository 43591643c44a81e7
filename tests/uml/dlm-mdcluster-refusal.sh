#!/bin/bash
# No live mixing with kernel md-cluster (doc/cluster.md): a clustered
# RAID1 made by clraid is assembled by the kernel (md-cluster over the
# kernel DLM) on UML node n1; on node n2, 'clraid start' with --lock dlm
# and with --lock cpg must refuse with one line and write nothing (member
# checksums read O_DIRECT before and after).  Then n1 stops the array and
# the same 'clraid start --lock dlm' on n2 runs.
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
PLUGIN=$top_builddir/.libs/nbdkit-clraid-plugin.so
{ [ -x "$CLRAID" ] && [ -r "$PLUGIN" ]; } || fail "clraid or its plugin is not built in $top_builddir"
command -v mdadm >/dev/null || skip "mdadm is not installed"
uml_init
W=$UML_DIR
export UML_CLUSTER=clraidmix
NAME=mix1
uml_net n1 n2

truncate -s 32M "$TESTDIR/a.img" "$TESTDIR/b.img"
"$CLRAID" create --level=1 --raid-devices=2 --nodes=2 --home-cluster="$UML_CLUSTER" \
    --name="$NAME" --assume-clean "$TESTDIR/a.img" "$TESTDIR/b.img" >/dev/null || fail "clraid create"
# the dashed form of the array UUID, as kernel md-cluster prints it (%pU)
uuid=$("$CLRAID" examine "$TESTDIR/a.img" 2>/dev/null | sed -n 's/.*Array UUID *: *//p' | head -1 | tr -d : |
    sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)/\1-\2-\3-\4-/')
[ ${#uuid} = 36 ] || fail "no array UUID from clraid examine: $uuid"
cat >"$W/env" <<E
CLRAID=$CLRAID
CLRAID_NBDKIT_PLUGIN=$PLUGIN
export CLRAID_NBDKIT_PLUGIN
NAME=$NAME
M=$top_builddir/tests/lock/lock_member
E
echo "$uuid" >"$W/uuid"

cat >"$W/node.sh" <<'G'
. "$UML_LIB/guest-functions.sh"
. "$UML_WORK/env"
W=$UML_WORK
guest_corosync
guest_dlm
sums() { for d in "$(ubd 0)" "$(ubd 1)"; do dd if="$d" bs=1M iflag=direct status=none | sha256sum | cut -c1-16; done | tr '\n' ' '; }
if [ "$NODE" = n1 ]; then
    modload raid1 md-cluster
    mdadm --assemble /dev/md0 "$(ubd 0)" "$(ubd 1)" >"$W/n1.mdadm" 2>&1 || { cat "$W/n1.mdadm"; gfail "mdadm --assemble"; }
    r md "$(sed -n 's/^md0 : //p' /proc/mdstat)"
    r lockspaces "$(dlm_tool ls 2>/dev/null | sed -n 's/^name *//p' | tr '\n' ' ')"
    wait_for 60 test -e /sys/block/md0/md/array_state || gfail "no md0"
    r array_state "$(cat /sys/block/md0/md/array_state)"
    touch "$W/md.up"
    wait_for 120 test -e "$W/tried" || gfail "n2 did not try"
    mdadm --stop /dev/md0 >/dev/null 2>&1 || gfail "mdadm --stop"
    r md_stopped 1
    touch "$W/md.down"
    wait_for 90 test -e "$W/n2.done"
else
    wait_for 90 test -e "$W/md.up" || gfail "n1's md did not come up"
    corosync-cpgtool >"$W/cpgtool.out" 2>&1
    r groups "$(grep -o "dlm:ls:[0-9a-f-]*" "$W/cpgtool.out" | sort -u | tr "\n" " ")"
    r before "$(sums)"
    mkdir -p /run/clraid
    for lock in dlm cpg; do
        "$CLRAID" start "$NAME" "$(ubd 0)" "$(ubd 1)" --lock "$lock" --run-dir /run/clraid >"$W/start-$lock.out" 2>&1
        r "rc_$lock" $?
        r "lines_$lock" "$(wc -l <"$W/start-$lock.out")"
        r "msg_$lock" "$(head -n 1 "$W/start-$lock.out")"
    done
    r after "$(sums)"
    # what the DLM does with a user-space (32-byte LVB) member of the
    # kernel (64-byte) lockspace: for the record, not a check.  It runs in
    # the background, bounded: a join the kernel cannot finish must not
    # hold the test (seen under load)
    t0=$(date +%s%N)
    ( timeout -s KILL 20 "$M" -b dlm -n mix "$(cat "$W/uuid")" try X EX >"$W/mix.out" 2>&1
      echo "$?" >"$W/mix.rc" ) &
    if wait_for 25 test -s "$W/mix.rc"; then
        r samename "rc=$(cat "$W/mix.rc") after $((($(date +%s%N) - t0) / 1000000)) ms: $(grep -v '^mix event' "$W/mix.out" | tr '\n' ' ')"
    else
        r samename "no answer in 25 s: $(grep -v '^mix event' "$W/mix.out" | tr '\n' ' ')"
    fi
    dmesg | grep -i 'dlm.*\(mismatch\|config\|error\)' | tail -n 3 | tr '\n' ' ' >"$W/mix.dmesg"
    r samename_dmesg "$(cat "$W/mix.dmesg")"
    touch "$W/tried"
    wait_for 90 test -e "$W/md.down" || gfail "n1 did not stop md0"
    wait_for 30 sh -c '! corosync-cpgtool -e 2>/dev/null | grep -q "dlm:ls:[0-9a-f]\{8\}-"' || true
    "$CLRAID" start "$NAME" "$(ubd 0)" "$(ubd 1)" --lock dlm --run-dir /run/clraid >"$W/start-after.out" 2>&1
    r rc_after $?
    r msg_after "$(head -n 1 "$W/start-after.out")"
    "$CLRAID" stop "$NAME" --run-dir /run/clraid >/dev/null 2>&1
    touch "$W/n2.done"
fi
G

uml_start n1 "$W/node.sh" "$TESTDIR/a.img" "$TESTDIR/b.img"
uml_start n2 "$W/node.sh" "$TESTDIR/a.img" "$TESTDIR/b.img"
bad=""
for n in n1 n2; do
    uml_wait "$n" 150 || bad="$bad $n:$?"
done
if [ -n "$bad" ]; then
    for n in n1 n2; do echo "--- $n:"; uml_results "$n" | sed 's/^/  /'; done
    uml_console_tail n2 20
    fail "exit status of the nodes:$bad"
fi
for n in n1 n2; do echo "--- $n:"; uml_results "$n" | sed 's/^/  /'; done
echo "array uuid $uuid"
case "$(uml_r n1 md)" in *active*raid1*) ;; *) fail "kernel md-cluster did not assemble it: $(uml_r n1 md)" ;; esac
case " $(uml_r n1 lockspaces) " in *" $uuid "*) ;; *) fail "kernel md-cluster's lockspace is not $uuid: $(uml_r n1 lockspaces)" ;; esac
echo "ok: kernel md-cluster runs it on n1, DLM lockspace $uuid (the dashed array UUID, our byte order)"
case " $(uml_r n2 groups) " in *" dlm:ls:$uuid "*) ;; *) fail "n2 does not see the CPG group dlm:ls:$uuid: $(uml_r n2 groups)" ;; esac
echo "ok: n2 sees its CPG group dlm:ls:$uuid"
for lock in dlm cpg; do
    [ "$(uml_r n2 rc_$lock)" != 0 ] || fail "--lock $lock started next to kernel md-cluster"
    [ "$(uml_r n2 lines_$lock)" = 1 ] || fail "--lock $lock: not one line: $(cat "$W/start-$lock.out")"
    case "$(uml_r n2 msg_$lock)" in *"kernel md-cluster"*) ;; *) fail "--lock $lock: $(uml_r n2 msg_$lock)" ;; esac
    echo "ok: --lock $lock refused (exit $(uml_r n2 rc_$lock)): $(uml_r n2 msg_$lock)"
done
[ "$(uml_r n2 before)" = "$(uml_r n2 after)" ] || fail "the members changed: $(uml_r n2 before) -> $(uml_r n2 after)"
echo "ok: members unchanged (sha256 $(uml_r n2 after))"
[ "$(uml_r n2 rc_after)" = 0 ] || fail "after mdadm --stop on n1, clraid start --lock dlm failed: $(uml_r n2 msg_after)"
echo "ok: once n1 stopped md0, clraid start --lock dlm runs: $(uml_r n2 msg_after)"
echo "for the record: a user-space lockspace of the same name as md-cluster's (lock_member -b dlm $uuid): $(uml_r n2 samename)"
echo "  kernel log: $(uml_r n2 samename_dmesg)"
echo "PASS: no live mixing with kernel md-cluster"
