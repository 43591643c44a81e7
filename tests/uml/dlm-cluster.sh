#!/bin/bash
# A clustered RAID1 run by three clraid engines with --lock dlm, each in
# its own User-Mode Linux node with corosync, dlm_controld and the kernel
# DLM, over the same member files (shared ubd devices).  The scenarios of
# tests/cluster/test-cluster-raid1.sh: all three write disjoint regions
# with known patterns; one node is powered off (uml_kill) mid-write; the
# survivors must see it lost (writes held), get its slot once the DLM has
# recovered, take its bitmap over and resync; then both read the same on
# every block, every acknowledged write is there, a check finds 0
# mismatches, and the powered-off node boots again and rejoins.  Before
# the failure, a round of writes from all three must cost no lock
# operation and no cluster message (steady state).
# DLM_LEVEL=5 (tests/uml/dlm-cluster-raid5.sh) runs the same on a RAID5
# over four members, under stripe-zone locks in the kernel DLM: a first
# round takes each node's zone locks before the steady round, the check
# after the power-off must be granted the victim's zones with the DLM's
# not-valid LVB mark, and the kernel's own check is left out (Linux refuses
# a clustered RAID5, tests/uml/kernel-raid56-refusal.sh).
# SKIPs where User-Mode Linux cannot run.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
export top_srcdir top_builddir
. "$top_srcdir/tests/functions.sh"
. "$top_srcdir/tests/uml/uml-functions.sh"
# shellcheck source=tests/cluster/pattern-functions.sh
. "$top_srcdir/tests/cluster/pattern-functions.sh"
requires_root
requires jq
requires nbdcopy
CLRAID=$top_builddir/clraid
PLUGIN=$top_builddir/.libs/nbdkit-clraid-plugin.so
{ [ -x "$CLRAID" ] && [ -r "$PLUGIN" ]; } || fail "clraid or its plugin is not built in $top_builddir"
[ -x "$CL_WRITER" ] || fail "no $CL_WRITER: make check builds it"
uml_init
W=$UML_DIR
export UML_CLUSTER=clraiddlm
LEVEL=${DLM_LEVEL:-1}
NAME=dlmr$LEVEL
GAP=$((8 << 20))
uml_net n1 n2 n3

if [ "$LEVEL" = 5 ]; then
    IMGS=("$TESTDIR/a.img" "$TESTDIR/b.img" "$TESTDIR/c.img" "$TESTDIR/d.img")
else
    IMGS=("$TESTDIR/a.img" "$TESTDIR/b.img")
fi
NDEV=${#IMGS[@]}
truncate -s 32M "${IMGS[@]}"
"$CLRAID" create --level="$LEVEL" --raid-devices="$NDEV" --nodes=3 --home-cluster="$UML_CLUSTER" \
    --name="$NAME" --bitmap-chunk=512K --assume-clean "${IMGS[@]}" >/dev/null ||
    fail "clraid create"
cat >"$W/env" <<E
CLRAID=$CLRAID
CLRAID_NBDKIT_PLUGIN=$PLUGIN
export CLRAID_NBDKIT_PLUGIN
top_srcdir=$top_srcdir
top_builddir=$top_builddir
NAME=$NAME
GAP=$GAP
CL_NB=$CL_NB
LEVEL=$LEVEL
NDEV=$NDEV
E

# ---- inside each node (bash) --------------------------------------------
cat >"$W/common.sh" <<'G'
. "$UML_LIB/guest-functions.sh"
. "$UML_WORK/env"
. "$top_srcdir/tests/cluster/pattern-functions.sh"
W=$UML_WORK
RUN=/run/clraid
k=${NODE#n}
base=$(((k - 1) * GAP + 1048576))
cl_uri() { echo "nbd+unix:///?socket=$RUN/$NAME.sock"; }
st() { "$CLRAID" status "$NAME" --json --run-dir "$RUN" 2>/dev/null | jq -r "$1"; }
stw() { [ "$(st "$1")" = true ]; }
cstart() {
    local t0
    guest_corosync
    guest_dlm
    local devs=() i
    for ((i = 0; i < NDEV; i++)); do devs+=("$(ubd $i)"); done
    mkdir -p "$RUN"
    t0=$(now_ms)
    "$CLRAID" start "$NAME" "${devs[@]}" --lock dlm --run-dir "$RUN" >"$W/$NODE.start.out" 2>&1 ||
        { cat "$W/$NODE.start.out"; tail -n 20 "$RUN/$NAME.log"; gfail "clraid start --lock dlm"; }
    r start_ms $(($(now_ms) - t0))
    wait_s 60 stw '.cluster.slot != null' || gfail "no slot"
    r slot "$(st .cluster.slot)"
}
# keep the engine's log where the host sees it
keeplog() { cp "$RUN/$NAME.log" "$W/$NODE.$1.engine.log" 2>/dev/null; sync; }
# wait_s SECONDS CMD...: like wait_for, but bounded in wall time (a status
# call takes a good part of a second in UML); every 0.2 s for the first
# 2 s, then every second, as wait_for
wait_s() {
    local end=$(($(now_ms) + $1 * 1000)) i=0
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$(now_ms)" -lt "$end" ] || return 1
        if [ "$i" -lt 10 ]; then sleep 0.2; else sleep 1; fi
        i=$((i + 1))
    done
}
G

cat >"$W/node.sh" <<'G'
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$UML_WORK/common.sh"
cstart
wait_s 60 stw '(.cluster.members | if type == "array" then length else . end) == 3' ||
    gfail "members: $(st .cluster.members)"
r members3 "$(st .cluster.members)"
keeplog fail
touch "$W/$NODE.ready"
wait_s 60 sh -c '[ "$(ls "$0"/n?.ready | wc -l)" = 3 ]' "$W" || gfail "not all 3 ready"

# RAID5: a first round takes this node's zone locks (EX), kept cached
if [ "$LEVEL" = 5 ]; then
    cl_writer "$k" "$base" /run/pre.log "$W/nostop" 1
    grep -q "$CL_FAILED" /run/pre.log && { cat /run/pre.log; gfail "first writes failed"; }
    r zones_first "$(st '.cluster.zones | tojson')"
fi
# steady state: one round of writes from all three; no lock operation and
# no cluster message may come of it (read once all three are done)
steady_before=$(st '"\(.counters.lock_ops) \(.counters.messages)"')
w0=$(st .counters.writes)
cl_writer "$k" "$base" /run/steady.log "$W/nostop" 1
grep -q "$CL_FAILED" /run/steady.log && { cat /run/steady.log; gfail "steady writes failed"; }
touch "$W/$NODE.steady"
wait_s 60 sh -c '[ "$(ls "$0"/n?.steady | wc -l)" = 3 ]' "$W" || gfail "not all 3 wrote"
r steady_writes $(($(st .counters.writes) - w0))
r steady_before "$steady_before"
r steady_after "$(st '"\(.counters.lock_ops) \(.counters.messages)"')"

if [ "$NODE" = n2 ]; then
    # the victim: slow one leg so that a write is surely in flight, and
    # stream the writer's log to the console (a power-off loses files)
    "$CLRAID" fault "$NAME" "$(ubd 1)" delay --ms 20 --run-dir "$RUN" >/dev/null || gfail "fault delay"
    rd=0
    while :; do
        rd=$((rd + 1))
        p=$(cl_pattern 2 "$rd")
        echo "VW round $rd pattern $p t_ms $(now_ms)"
        n=0
        "$CL_WRITER" "$(cl_uri)" "$p" "$base" "$CL_BS" "$CL_NB" 2>&1 | while read -r line; do
            echo "VW $line"
            case $line in acked*) n=$((n + 1)) ;; esac
            [ "$rd" -ge 2 ] && [ "$n" = 5 ] && echo "R victim_writing round $rd"
        done
        echo "VW end $rd rc 0 t_ms $(now_ms)"
    done
fi

# survivors: write until the takeover and the resync are done, 25 ms
# apart (flat out, two writers inside UML cost more CPU than the rest of
# the run; the hold and the takeover are read from the engines' status)
CL_PACE_MS=25 cl_writer "$k" "$base" "/run/w.log" "$W/stop" &
wp=$!
wait_s 40 stw '(.cluster.members | if type == "array" then length else . end) == 2' || { keeplog fail; gfail "n2's loss not seen"; }
r lost_seen_ms "$(now_ms)"
wait_s 35 stw '.cluster.recovering == false and .cluster.read_balancing == true and .sync_action == "idle" and .cluster.read_balancing_restored_ms != null' ||
    { keeplog fail; gfail "no recovery: $(st .cluster | tr -d "\n ")"; }
touch "$W/$NODE.recovered"
r t_recovered "$(now_ms)"
wait_s 60 sh -c '[ "$(ls "$0"/n?.recovered | wc -l)" = 2 ]' "$W" || gfail "the other survivor did not recover"
# one of the two took the victim's slot over (we, or the other)
taken_somewhere() { ls "$W"/n?.taken >/dev/null 2>&1 || [ "$(st .cluster.last_takeover)" != null ]; }
wait_s 60 taken_somewhere || gfail "nobody took the victim's slot over"
tk=$(st .cluster.last_takeover)
if [ "$tk" != null ]; then
    wait_s 60 stw '.sync_action == "idle" and .last_resync.ended_ms != null' || gfail "taker: no resync"
    r takeover "$(st '.cluster.last_takeover | tojson')"
    r resync "$(st '.last_resync | tojson')"
    touch "$W/$NODE.taken"
fi
wait_s 30 sh -c 'ls "$0"/n?.taken >/dev/null 2>&1' "$W" || gfail "nobody took the victim's slot over"
r recovery_started_ms "$(st .cluster.recovery_started_ms)"
r rb_restored_ms "$(st .cluster.read_balancing_restored_ms)"
r write_hold "$(st '.cluster.write_hold | tojson')"
touch "$W/stop"
wait "$wp"
r t_writers_stopped "$(now_ms)"
cp /run/w.log "$W/w.$k.log"
r failed_writes "$(cl_count "$CL_FAILED" /run/w.log)"
r acked "$(cl_count '^wrote' /run/w.log)"
wait_s 60 stw '.sync_action == "idle"' || gfail "not idle"
r sha "$(nbdcopy "$(cl_uri)" - | sha256sum | cut -c1-16)"
r t_sha "$(now_ms)"
if [ "$NODE" = n1 ]; then
    nbdcopy "$(cl_uri)" "$W/img" || gfail "nbdcopy"
    sync
    "$CLRAID" check "$NAME" --wait --run-dir "$RUN" >/dev/null || gfail "check"
    r mismatches "$(st .last_check.mismatches)"
    [ "$LEVEL" = 5 ] && r zones_checked "$(st '.cluster.zones | tojson')"
    touch "$W/checked"
    r t_checked "$(now_ms)"
fi
# the victim boots again and rejoins; then everybody stops
wait_s 100 test -e "$W/n2.rejoined" || gfail "n2 did not rejoin"
wait_s 30 stw '(.cluster.members | if type == "array" then length else . end) == 3' || gfail "members after the rejoin"
r members_after_rejoin "$(st .cluster.members)"
keeplog end
touch "$W/$NODE.done"
wait_s 60 sh -c '[ "$(ls "$0"/n?.done | wc -l)" = 3 ]' "$W"
"$CLRAID" stop "$NAME" --run-dir "$RUN" >/dev/null || gfail "stop"
r stopped 1
# nobody powers off before all have stopped: two nodes gone is no quorum
touch "$W/$NODE.stopped"
wait_s 60 sh -c '[ "$(ls "$0"/n?.stopped | wc -l)" = 3 ]' "$W"
G

cat >"$W/rejoin.sh" <<'G'
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$UML_WORK/common.sh"
t0=$(now_ms)
cstart
wait_s 60 stw '(.cluster.members | if type == "array" then length else . end) == 3 and .sync_action == "idle"' ||
    gfail "rejoin: $(st .cluster)"
r rejoin_ms $(($(now_ms) - t0))
r sha "$(nbdcopy "$(cl_uri)" - | sha256sum | cut -c1-16)"
keeplog end
touch "$W/n2.rejoined" "$W/n2.done"
wait_s 60 sh -c '[ "$(ls "$0"/n?.done | wc -l)" = 3 ]' "$W"
"$CLRAID" stop "$NAME" --run-dir "$RUN" >/dev/null || gfail "stop"
r stopped 1
# nobody powers off before all have stopped: two nodes gone is no quorum
touch "$W/$NODE.stopped"
wait_s 60 sh -c '[ "$(ls "$0"/n?.stopped | wc -l)" = 3 ]' "$W"
G

# on a failure, what each node said and the end of its engine's log
dump_nodes() {
    [ "${rc:-0}" = 0 ] && return 0
    for n in n1 n2 n3; do
        echo "--- $n: $(uml_results "$n" 2>/dev/null | grep -E '^fail' | tr '\n' ' ')"
        tail -n 5 "$W/$n.start.out" "$W/$n.fail.engine.log" 2>/dev/null
        tr -d '\r' <"$W/$n.console" 2>/dev/null | grep -aE 'dlm:|clraid' | tail -n 8
    done
}
cleanup_fn dump_nodes
t0=$(now_ms)
for n in n1 n2 n3; do uml_start "$n" "$W/node.sh" "${IMGS[@]}"; done
uml_wait_line n2 '^R victim_writing' 100
t_kill=$(now_ms)
uml_kill n2
echo "n2 powered off mid-write ($(uml_r n2 victim_writing)), $((t_kill - t0)) ms after the boot"
for n in n1 n2 n3; do echo "$n: slot $(uml_r $n slot), started in $(uml_r $n start_ms) ms"; done
for n in n1 n2 n3; do
    sb=$(uml_r $n steady_before) sa=$(uml_r $n steady_after) sw=$(uml_r $n steady_writes)
    echo "$n steady state: ${sw:-?} writes; lock_ops messages before [$sb] after [$sa]"
    { [ -n "$sb" ] && [ "$sb" = "$sa" ]; } || fail "$n: steady-state writes changed lock_ops/messages: [$sb] -> [$sa]"
    [ "${sw:-0}" -ge "$CL_NB" ] || fail "$n: counters.writes grew by ${sw:-?} for $CL_NB writes"
done
echo "ok: steady-state writes cost no lock operation and no message on the kernel DLM"
# the victim's writer log, as its console has it (its last write in flight)
tr -d '\r' <"$W/n2.console" | sed -n 's/^VW //p' >"$TESTDIR/w.2.log"
[ "$(tail -n 1 "$TESTDIR/w.2.log" | cut -d' ' -f1)" = end ] ||
    echo "end $(awk '/^round/ { r = $2 } END { print r }' "$TESTDIR/w.2.log") rc 137 t_ms $t_kill" >>"$TESTDIR/w.2.log"
cp "$TESTDIR/w.2.log" "$W/w.2.log"
cp "$W/n2.console" "$TESTDIR/n2.first.console"
while [ ! -e "$W/checked" ]; do
    kill -0 "$(cat "$W/n1.bgpid")" 2>/dev/null || { uml_console_tail n1; fail "n1 ended before its check"; }
    [ $(($(now_ms) - t_kill)) -lt 240000 ] || { uml_console_tail n1; uml_console_tail n3; fail "no recovery + check in 240 s"; }
    sleep 0.2
done
uml_start n2 "$W/rejoin.sh" "${IMGS[@]}"
rc=0
for n in n1 n3 n2; do
    uml_wait "$n" 240 || { rc=$?; uml_console_tail "$n"; tail -n 30 "$W/$n".*.engine.log 2>/dev/null; fail "$n: exit $rc"; }
done
echo "whole run: $(($(now_ms) - t0)) ms"
for n in n1 n3; do
    echo "$n after the kill (ms): recovered $(($(uml_r $n t_recovered) - t_kill)), writers stopped $(($(uml_r $n t_writers_stopped) - t_kill)), read $(($(uml_r $n t_sha) - t_kill))"
done
echo "n1 checked $(($(uml_r n1 t_checked) - t_kill)) ms after the kill"
for n in n1 n3 n2; do echo "--- $n:"; uml_results "$n" | sed 's/^/  /'; done

# the kernel's own check of what the three engines left: one node alone,
# kernel md-cluster over its own one-node corosync and the DLM (RAID1; a
# clustered RAID5 the kernel refuses)
[ "$LEVEL" = 1 ] && cat >"$W/mdcheck.sh" <<'G'
. "$UML_LIB/guest-functions.sh"
CLUSTER=clraiddlm; UML_NODES=n1:127.0.0.1; NODE=n1
guest_corosync
guest_dlm
modload raid1 md-cluster
mdadm --assemble /dev/md0 "$(ubd 0)" "$(ubd 1)" >/dev/null 2>&1 || gfail "mdadm --assemble"
mdadm --readwrite /dev/md0 2>/dev/null
echo check >/sys/block/md0/md/sync_action || gfail "check"
wait_for 60 grep -qx idle /sys/block/md0/md/sync_action || gfail "the check did not end"
r md_mismatch_cnt "$(cat /sys/block/md0/md/mismatch_cnt)"
r md_last_action "$(cat /sys/block/md0/md/last_sync_action)"
r md_level "$(cat /sys/block/md0/md/level) $(sed -n 's/^md0 : //p' /proc/mdstat)"
mdadm --stop /dev/md0 >/dev/null 2>&1
G
if [ "$LEVEL" = 1 ]; then
    uml_run mdcheck "$W/mdcheck.sh" "${IMGS[@]}" ||
        { uml_console_tail mdcheck; fail "kernel md check: exit $?"; }
    echo "kernel md-cluster (one node) assembled it: $(uml_r mdcheck md_level); check: mismatch_cnt $(uml_r mdcheck md_mismatch_cnt)"
fi

taker=""
for n in n1 n3; do [ -n "$(uml_r $n takeover)" ] && taker=$n; done
[ -n "$taker" ] || fail "no survivor took the victim's slot over"
tk=$(uml_r $taker takeover)
rs=$(uml_r $taker resync)
vslot=$(uml_r n2 slot)
[ "$(jq -r .slot <<<"$tk")" = "$vslot" ] || fail "$taker took slot $(jq -r .slot <<<"$tk") over, the victim had $vslot"
x_take=$(($(jq -r .at_ms <<<"$tk") - t_kill))
x_sync=$(($(jq -r .ended_ms <<<"$rs") - t_kill))
echo "kill -> recovery started: n1 $(($(uml_r n1 recovery_started_ms) - t_kill)) ms, n3 $(($(uml_r n3 recovery_started_ms) - t_kill)) ms"
echo "kill -> takeover of slot $vslot by $taker: $x_take ms; $(jq -r .dirty_chunks <<<"$tk") dirty chunks ($(jq -r .bytes <<<"$tk") bytes)"
echo "kill -> read balancing restored: n1 $(($(uml_r n1 rb_restored_ms) - t_kill)) ms, n3 $(($(uml_r n3 rb_restored_ms) - t_kill)) ms"
echo "kill -> resync done: $x_sync ms ($(jq -r .bytes <<<"$rs") bytes resynced)"
for n in n1 n3; do
    wh=$(uml_r $n write_hold)
    [ "$(jq -r .holds <<<"$wh")" -ge 1 ] || fail "$n: no write hold: a lost node must hold writes until the DLM has recovered ($wh)"
    echo "$n: writes held from $(($(jq -r .start_ms <<<"$wh") - t_kill)) ms after the kill (MEMBER_LOST) for $(($(jq -r .end_ms <<<"$wh") - $(jq -r .start_ms <<<"$wh"))) ms (until its slot lock was granted: MEMBER_FAILED)"
done
[ "$(jq -r .dirty_chunks <<<"$tk")" -gt 0 ] || fail "the victim died mid-write but its bitmap had no dirty chunk"
for n in n1 n3; do
    [ "$(uml_r $n failed_writes)" = 0 ] || fail "$n: a client write failed"
done
echo "ok: the survivors' writers saw no failure"
s1=$(uml_r n1 sha) s3=$(uml_r n3 sha) s2=$(uml_r n2 sha)
echo "sha256: n1 $s1 n3 $s3 n2 (rejoined) $s2"
{ [ -n "$s1" ] && [ "$s1" = "$s3" ]; } || fail "the survivors read different data"
[ "$s2" = "$s1" ] || fail "the rejoined node reads other data"
echo "ok: both survivors and the rejoined node read the same on every block"
# every block holds its last acknowledged write
size=$(stat -c %s "$W/img")
exps=()
for k in 1 3; do
    cl_expect "$W/w.$k.log" "$k" $(((k - 1) * GAP + 1048576)) >"$TESTDIR/exp.$k"
    exps+=("$TESTDIR/exp.$k")
done
# The victim's log comes from its console, and a power-off can lose its
# last lines (acks printed but still in the pipe to its console), so the
# log only bounds its acknowledged writes from below.  Its writer is
# sequential and synchronous: a block of its last round was written only
# after every block before it was acknowledged.  So its region must read:
# the last round's pattern on blocks 0..F-1, F >= the acks its log shows;
# block F old, new or part of each (in flight); the previous round's
# pattern after F.  victim_expect checks that and writes the expectation.
victim_expect() {
    local log=$1 base=$2 out=$3 rd pn po logged b cls f=-1 blk
    rd=$(awk '/^round / { r = $2 } END { print r + 0 }' "$log")
    [ "$rd" -ge 2 ] || fail "the victim died in round $rd: expected round 2 or later"
    pn=$(cl_pattern 2 "$rd") po=$(cl_pattern 2 $((rd - 1)))
    logged=$(awk -v r="$rd" '/^round / { c = ($2 == r) } c && /^wrote / { n++ } END { print n + 0 }' "$log")
    : >"$out"
    for ((b = 0; b < CL_NB; b++)); do
        blk=$(dd if="$W/img" bs="$CL_BS" skip=$(((base / CL_BS) + b)) count=1 status=none | od -An -v -tu1 |
            tr -s ' ' '\n' | grep -v '^$' | sort -u | tr '\n' ' ')
        case "$blk" in
        "$pn ") cls=new ;;
        "$po ") cls=old ;;
        "$pn $po " | "$po $pn ") cls=mixed ;;
        *) fail "victim block $b at $((base + b * CL_BS)): bytes [$blk], neither round $rd ($pn) nor $((rd - 1)) ($po)" ;;
        esac
        if [ "$f" -lt 0 ]; then
            [ "$cls" = new ] || f=$b
        elif [ "$b" -gt "$f" ] && [ "$cls" != old ]; then
            fail "victim block $b is $cls after block $f, the one in flight: a write the sequential writer never issued"
        fi
    done
    [ "$f" -ge 0 ] || f=$CL_NB
    [ "$f" -ge "$logged" ] || fail "victim: only $f blocks of round $rd hold it, but $logged were acknowledged"
    for ((b = 0; b < CL_NB; b++)); do
        if [ "$b" -lt "$f" ]; then echo "$((base + b * CL_BS)) $pn $pn"
        elif [ "$b" = "$f" ]; then echo "$((base + b * CL_BS)) $po $pn"
        else echo "$((base + b * CL_BS)) $po $po"; fi
    done >"$out"
    echo "victim (round $rd): $logged acks in its console log, $f blocks of the round written, block $f in flight"
}
victim_expect "$W/w.2.log" $((GAP + 1048576)) "$TESTDIR/exp.2"
exps+=("$TESTDIR/exp.2")
cl_build_expected "$size" "$TESTDIR/expected" "${exps[@]}"
cl_verify "$W/img" "$TESTDIR/expected" "${exps[@]}" || fail "data differs from the acknowledged writes"
echo "ok: every block holds its last acknowledged write (victim's in-flight block: old or new)"
[ "$(uml_r n1 mismatches)" = 0 ] || fail "check: $(uml_r n1 mismatches) mismatches"
echo "ok: clraid check (cluster, on n1): 0 mismatches"
if [ "$LEVEL" = 1 ]; then
    [ "$(uml_r mdcheck md_last_action)" = check ] || fail "kernel md: last_sync_action $(uml_r mdcheck md_last_action), not check"
    [ "$(uml_r mdcheck md_mismatch_cnt)" = 0 ] || fail "kernel md check after the run: mismatch_cnt $(uml_r mdcheck md_mismatch_cnt)"
    echo "ok: kernel md check after the run: mismatch_cnt 0"
else
    for n in n1 n2 n3; do echo "$n zone locks after its first round: $(uml_r $n zones_first)"; done
    zc=$(uml_r n1 zones_checked)
    echo "n1 zone locks after its check: $zc"
    [ "$(jq -r .suspect_grants <<<"$zc")" -ge 1 ] ||
        fail "n1's check was never granted a zone with the DLM's not-valid LVB mark (the victim held its zones EX)"
    echo "ok: the DLM marked the powered-off node's zones not valid: n1's check was granted $(jq -r .suspect_grants <<<"$zc") of them so marked"
fi
[ "$(uml_r n2 members_after_rejoin)" = 3 ] || [ "$(uml_r n1 members_after_rejoin)" = 3 ] || fail "members after the rejoin"
echo "ok: n2 rejoined in $(uml_r n2 rejoin_ms) ms as slot $(uml_r n2 slot)"
for n in n1 n2 n3; do [ "$(uml_r $n stopped)" = 1 ] || fail "$n did not stop cleanly"; done
echo "SUMMARY: dlm raid$LEVEL 3 UML nodes: kill->takeover $x_take ms, ->resync done $x_sync ms; survivors and rejoined node identical; check 0 mismatches"
echo "PASS: clustered RAID$LEVEL on the kernel DLM"
