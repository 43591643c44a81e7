#!/bin/bash
# A clustered RAID1 (and, from test-cluster-raid10.sh, RAID10 near2; from
# test-cluster-raid5.sh and -raid6.sh, RAID5 and RAID6) run by three
# engines (--lock cpg) over the same member files, on one private corosync
# in private namespaces.  All three write disjoint regions at once with
# known patterns; one member's nbdkit is SIGKILLed mid-write; the
# survivors must take its bitmap over and resync, then read the same on
# every block, hold every acknowledged write, and check clean; the killed
# member rejoins.  Steady state (writes, no failure) must cost no lock
# operation and no cluster message.  Prints the timings and a SUMMARY line.
#
# RAID5/6: the steady writes go to disjoint zones (after one round that
# takes each zone's lock); the writes the victim dies in go to ONE stripe,
# each member writing its own chunk of it, so all three rewrite the same
# parity (stripe-zone locks, doc/cluster.md).  After the check, one member
# device (two for RAID6) is failed and both survivors must still read the
# same data, reconstructed.
#
# CLUSTER_PASSES="LEVEL:DEVICES:VICTIM ..." selects the passes (default 1:2:2).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
# shellcheck source=tests/lock/cluster-functions.sh
. "$top_srcdir/tests/lock/cluster-functions.sh"
clr_enter_ns "$@"
# shellcheck source=tests/cluster/cluster-engine-functions.sh
. "$top_srcdir/tests/cluster/cluster-engine-functions.sh"

cl_corosync_start
SUMMARY=()

# The victim's writes are slowed on one leg so that one is surely in
# flight, with the legs possibly different, when it dies.
FAULT_MS=${CLUSTER_FAULT_MS:-20}
REGION_GAP=$((16 * 1048576))

# span_text "LO HI": "<= HI ms (not yet at LO ms)".
span_text() {
    local lo=${1% *} hi=${1#* }
    if [ "$lo" -eq 0 ]; then echo "<= $hi ms (first poll)"; else echo "<= $hi ms (not yet at $lo ms)"; fi
}

pass() {
    local level=$1 ndev=$2 victim=$3 files k s size parity=false chunk_kib=512 sbase
    local -a legs survivors base kbase
    CL_NAME=c$level
    case $level in 5 | 6) parity=true chunk_kib=1024 ;; esac
    echo
    echo "=== pass raid$level over $ndev legs, 3 members, member $victim killed"
    files=$(mkfiles "$ndev" 64M)
    read -r -a legs <<<"$files"
    # shellcheck disable=SC2086
    "$CLRAID" create --level="$level" --raid-devices="$ndev" ${CL_LAYOUT:+--layout=$CL_LAYOUT} \
        --nodes=4 --home-cluster="$CL_CLUSTER" --name="$CL_NAME" --bitmap-chunk=512K --chunk="$chunk_kib" \
        --assume-clean $files >/dev/null || fail "create raid$level"
    for k in 1 2 3; do
        cl_start "$k" "${legs[@]}"
        cl_wait "$k" '.cluster.slot != null' 30
    done
    for k in 1 2 3; do
        cl_wait "$k" '(.cluster.members | if type == "array" then length else . end) == 3 and .sync_action == "idle"' 30
        cl_poll "$k" || fail "status of member $k"
        echo "member $k: slot $P_SLOT, members $P_MEMBERS, state $P_STATE, read_balancing $P_RB"
    done
    size=$(cl_st 1 .size_bytes)
    [ "$size" -ge $((3 * REGION_GAP)) ] || fail "array too small: $size"
    for k in 1 2 3; do base[k]=$(((k - 1) * REGION_GAP + 1048576)); kbase[k]=${base[k]}; done
    if $parity; then
        # the kill phase: member k writes chunk k-1 of the stripe at 48 MiB
        # (a multiple of every stripe here: 3 data chunks of 1 MiB)
        [ $((CL_NB * CL_BS)) -eq $((chunk_kib * 1024)) ] || fail "CL_NB * CL_BS must be one chunk"
        sbase=$((48 * 1048576))
        for k in 1 2 3; do kbase[k]=$((sbase + (k - 1) * chunk_kib * 1024)); done
        # one round first: each member's zone lock is granted, then cached
        local wpre=()
        for k in 1 2 3; do
            cl_writer "$k" "${base[k]}" "$TESTDIR/pre$k.log" "$TESTDIR/nostop" 1 &
            wpre+=($!)
        done
        wait "${wpre[@]}"
    fi

    # --- steady state: a batch of writes from all three, no failure -----
    local -a before after wbefore
    for k in 1 2 3; do
        before[k]=$(cl_counters "$k")
        wbefore[k]=$(cl_st "$k" .counters.writes)
    done
    local spids=()
    for k in 1 2 3; do
        cl_writer "$k" "${base[k]}" "$TESTDIR/steady$k.log" "$TESTDIR/nostop" 2 &
        spids+=($!)
    done
    wait "${spids[@]}"
    for k in 1 2 3; do
        grep -q "$CL_FAILED" "$TESTDIR/steady$k.log" && { cat "$TESTDIR/steady$k.log"; fail "steady writes failed on member $k"; }
        after[k]=$(cl_counters "$k")
        local w
        w=$(cl_st "$k" .counters.writes)
        echo "member $k steady state: $((w - wbefore[k])) writes; lock_ops messages before [${before[k]}] after [${after[k]}]"
        [ "$w" -ge $((wbefore[k] + 2 * CL_NB)) ] || fail "member $k: counters.writes ${wbefore[k]} -> $w for $((2 * CL_NB)) writes"
        [ "${before[k]}" = "${after[k]}" ] ||
            fail "member $k: steady-state writes changed lock_ops/messages: [${before[k]}] -> [${after[k]}]"
    done
    echo "ok: steady state writes cost no lock operation and no message"

    # --- all three write, the victim dies mid-write ----------------------
    survivors=()
    for k in 1 2 3; do [ "$k" = "$victim" ] || survivors+=("$k"); done
    local rec0=0 lr0=()
    for k in "${survivors[@]}"; do
        cl_poll "$k" || fail "status of member $k"
        rec0=$((rec0 + P_RECOVERED))
        lr0[k]=$(cl_st "$k" .last_resync.bytes)
    done
    cl_cli "$victim" fault "$CL_NAME" "${legs[1]}" delay --ms "$FAULT_MS" >/dev/null ||
        fail "fault delay on member $victim"
    local stop=$TESTDIR/stop.$level wpids=()
    rm -f "$stop"
    for k in 1 2 3; do
        cl_writer "$k" "${kbase[k]}" "$TESTDIR/w$level.$k.log" "$stop" &
        wpids+=($!)
    done
    # Kill in the middle of the victim's second round (or a later one):
    # a round of slowed writes lasts CL_NB * FAULT_MS.
    local n=0 vr=0 va=0
    while :; do
        read -r vr va <<<"$(cl_in_round "$TESTDIR/w$level.$victim.log")"
        [ "$vr" -ge 2 ] && [ "$va" -ge 5 ] && [ "$va" -le $((CL_NB - 5)) ] && break
        n=$((n + 1)); [ "$n" -lt 1000 ] || fail "the victim's writer does not progress"
        sleep 0.01
    done
    # Each time is bounded by two polls: the state was not yet seen by the
    # poll that ended at LO ms after the kill and seen by the one ended at
    # HI ms (a status call takes some 20-50 ms here).
    local t_kill t_seen="" t_take="" t_rb="" t_sync="" t_now t_prev t_end rb_false=no taker="" snap="" last=""
    t_kill=$(now_ms)
    cl_crash "$victim"
    t_prev=$t_kill
    echo "killed member $victim (nbdkit pid) at t=0 (t_ms $t_kill), its writer in round $vr after $va writes"
    # Poll the survivors until read balancing is back and the resync is done.
    while :; do
        t_now=$(now_ms)
        [ $((t_now - t_kill)) -lt 60000 ] || { echo "last: $last"; fail "no takeover + resync within 60 s of the kill"; }
        local rec=0 rb_all=true idle_all=true m_all=true lr_moved=false line=""
        for k in "${survivors[@]}"; do
            cl_poll "$k" || { rb_all=false; idle_all=false; m_all=false; continue; }
            rec=$((rec + P_RECOVERED))
            [ "$P_MEMBERS" = 2 ] || m_all=false
            [ "$P_RB" = true ] || rb_all=false
            [ "$P_RB" = false ] && rb_false=yes
            [ "$P_RECOVERING" = false ] || rb_all=false
            [ "$P_SYNC" = idle ] || idle_all=false
            if [ "$P_RECOVERED" -gt 0 ] && [ "$P_TAKEOVER" != null ]; then taker=$k; fi
            [ "$P_LR" != "${lr0[k]}" ] && lr_moved=true
            line="$line | m$k members=$P_MEMBERS recovering=$P_RECOVERING read_balancing=$P_RB recovered=$P_RECOVERED sync=$P_SYNC $P_POS/$P_TOTAL takeover=$P_TAKEOVER"
        done
        last=$line
        t_end=$(now_ms)
        if [ "$line" != "$snap" ]; then
            printf '+%5d..%5d ms%s\n' $((t_now - t_kill)) $((t_end - t_kill)) "$line"
            snap=$line
        fi
        local span="$((t_prev - t_kill)) $((t_end - t_kill))"
        [ -z "$t_seen" ] && $m_all && t_seen=$span
        [ -z "$t_take" ] && [ "$rec" -gt "$rec0" ] && t_take=$span
        [ -z "$t_rb" ] && [ -n "$t_take" ] && $rb_all && t_rb=$span
        [ -z "$t_sync" ] && [ -n "$t_take" ] && $idle_all && $lr_moved && t_sync=$span
        [ -n "$t_rb" ] && [ -n "$t_sync" ] && break
        t_prev=$t_end
        sleep 0.05
    done
    touch "$stop"
    wait "${wpids[@]}"
    [ -n "$taker" ] || fail "no survivor reports last_takeover"
    local d_seen d_take d_rb d_sync
    d_seen=$(span_text "$t_seen"); d_take=$(span_text "$t_take"); d_rb=$(span_text "$t_rb"); d_sync=$(span_text "$t_sync")
    local resynced dirty tslot tchunks
    resynced=$(cl_st "$taker" .last_resync.bytes)
    dirty=$(cl_st "$taker" .cluster.last_takeover.bytes)
    tslot=$(cl_st "$taker" .cluster.last_takeover.slot)
    tchunks=$(cl_st "$taker" .cluster.last_takeover.dirty_chunks)
    # Exact times from the engines' own wall-clock stamps (same host clock
    # as t_kill): takeover done on the taker, read balancing back on the
    # last survivor, resync ended on the taker.
    local x_take x_rb x_sync x_rec k rbk
    x_take=$(( $(cl_st "$taker" .cluster.last_takeover.at_ms) - t_kill ))
    x_sync=$(( $(cl_st "$taker" .last_resync.ended_ms) - t_kill ))
    x_rb=0; x_rec=""
    for k in "${survivors[@]}"; do
        rbk=$(cl_st "$k" .cluster.read_balancing_restored_ms)
        [ "$rbk" != null ] || fail "member $k: read_balancing_restored_ms is null after the recovery"
        [ $((rbk - t_kill)) -gt "$x_rb" ] && x_rb=$((rbk - t_kill))
        x_rec="$x_rec m$k:$(( $(cl_st "$k" .cluster.recovery_started_ms) - t_kill ))"
        # a killed process on a live node is confirmed at once: no write hold
        [ "$(cl_st "$k" .cluster.write_hold)" = null ] && [ "$(cl_st "$k" .cluster.writes_held)" = false ] ||
            fail "member $k: writes were held after a process kill (only a lost node waits for fencing)"
    done
    if [ "$x_take" -lt 0 ] || [ "$x_rb" -lt 0 ] || [ "$x_sync" -lt "$x_take" ]; then
        fail "engine timestamps out of order: takeover $x_take, balancing $x_rb, resync end $x_sync ms after the kill"
    fi
    echo "kill -> survivors see 2 members: $d_seen"
    echo "kill -> recovery started (engine stamps, ms):$x_rec"
    echo "kill -> takeover: ${x_take} ms (engine stamp; polls: $d_take) (member $taker took slot $tslot)"
    echo "kill -> read balancing restored on both survivors: ${x_rb} ms (engine stamps; polls: $d_rb; read_balancing seen false by a poll: $rb_false)"
    echo "kill -> resync done: ${x_sync} ms (engine stamp; polls: $d_sync)"
    echo "taker resynced $resynced bytes; the taken bitmap had $tchunks dirty chunks = $dirty bytes"
    if [ "$level" = 5 ] || [ "$level" = 6 ]; then
        # printed, not asserted: a victim killed while it waited for a
        # zone had nothing logged (tests/array covers the replay itself)
        echo "taker replayed $(cl_st "$taker" .cluster.zones.parity_log.replayed_entries) entries of the victim's partial-parity log ($(cl_st "$taker" .cluster.zones.parity_log.replay_left_to_resync) left to the resync)"
    fi
    [ "$dirty" -gt 0 ] || fail "the victim died mid-write but its bitmap had no dirty chunk"
    [ "$resynced" -gt 0 ] || fail "nothing resynced after the takeover"
    [ "$resynced" -lt $((size / 2)) ] || fail "resync rewrote $resynced of $size bytes: not only the dirty chunks"

    # Survivors' writers: no error while a member died and was taken over.
    local stall
    for k in "${survivors[@]}"; do
        ! grep -q "$CL_FAILED" "$TESTDIR/w$level.$k.log" ||
            { grep -m3 "$CL_FAILED" "$TESTDIR/w$level.$k.log"; fail "member $k: a client write failed during the takeover"; }
        stall=$(awk '/^round/ { s = $NF } /^end/ { d = $NF - s; if (d > m) m = d } END { print m + 0 }' "$TESTDIR/w$level.$k.log")
        echo "member $k: $(cl_count '^wrote' "$TESTDIR/w$level.$k.log") writes acknowledged, none failed; longest round of $CL_NB writes: $stall ms"
    done
    grep -q "$CL_FAILED" "$TESTDIR/w$level.$victim.log" || fail "the victim's writer saw no failure: was it killed mid-write?"
    echo "victim's writer: $(cl_count '^wrote' "$TESTDIR/w$level.$victim.log") writes acknowledged before the kill"
    awk '/^round/ { r = $2; n = 0; t = $NF } /^wrote/ { n++ }
        /failed|Failed|rror/ && !f { f = 1; print "victim'"'"'s writer: round " r " (started at t_ms " t \
            "): " n " writes acknowledged, then: " $0 }' "$TESTDIR/w$level.$victim.log"

    # --- every block: same on both survivors, last acknowledged data -----
    local sums=() exps=()
    for k in "${survivors[@]}"; do
        cl_wait "$k" '.sync_action == "idle"' 60
    done
    for k in 1 2 3; do
        cl_expect "$TESTDIR/w$level.$k.log" "$k" "${kbase[k]}" >"$TESTDIR/exp$level.$k"
        exps+=("$TESTDIR/exp$level.$k")
        if $parity; then # the steady writes, elsewhere
            cl_expect "$TESTDIR/steady$k.log" "$k" "${base[k]}" >"$TESTDIR/exps$level.$k"
            exps+=("$TESTDIR/exps$level.$k")
        fi
    done
    cl_build_expected "$size" "$TESTDIR/expected" "${exps[@]}"
    for k in "${survivors[@]}"; do
        timeout "$T" nbdcopy "$(cl_uri "$k")" "$TESTDIR/img$k" || fail "nbdcopy from member $k"
        sums[k]=$(sha256sum <"$TESTDIR/img$k" | cut -c1-16)
        echo "member $k reads sha256 ${sums[k]}..."
    done
    s=${survivors[0]}
    [ "${sums[s]}" = "${sums[${survivors[1]}]}" ] || {
        cmp -l "$TESTDIR/img$s" "$TESTDIR/img${survivors[1]}" | head -5
        fail "the survivors read different data"
    }
    echo "ok: both survivors read the same on every block"
    cl_verify "$TESTDIR/img$s" "$TESTDIR/expected" "${exps[@]}" ||
        fail "data differs from the acknowledged writes"
    echo "ok: every block holds its last acknowledged write (in-flight block: old or new)"
    rm -f "$TESTDIR"/img* "$TESTDIR/expected"

    local mm
    for k in "${survivors[@]}"; do
        cl_cli "$k" check "$CL_NAME" --wait >/dev/null || fail "check on member $k"
        mm=$(cl_st "$k" .last_check.mismatches)
        echo "member $k: check: $mm mismatches"
        [ "$mm" = 0 ] || fail "member $k: check found $mm mismatches"
    done
    if $parity; then
        for k in "${survivors[@]}"; do
            echo "member $k zone locks: $(cl_st "$k" '.cluster.zones | "\(.requests) requests, \(.grants) grants (\(.suspect_grants) with a not-valid LVB), \(.blocking_callbacks) blocking callbacks, \(.releases) releases, grant mean \(.grant_ms_mean) ms max \(.grant_ms_max) ms, longest admission wait \(.wait_ms_max) ms"')"
        done
        # members lost after the crash: the data still reads back, the
        # same on both survivors (degraded reads, under PR of each zone)
        local nfail=$((level - 4)) d dsum
        for d in $(seq 1 "$nfail"); do
            cl_cli "${survivors[0]}" fail "$CL_NAME" "${legs[d]}" >/dev/null || fail "clraid fail ${legs[d]}"
        done
        for k in "${survivors[@]}"; do
            cl_wait "$k" "[.devices[] | select(.state == \"faulty\")] | length == $nfail" 30
            dsum=$(timeout "$T" nbdcopy "$(cl_uri "$k")" - | sha256sum | cut -c1-16)
            echo "member $k with $nfail member(s) failed reads sha256 $dsum..."
            [ "$dsum" = "${sums[s]}" ] || fail "member $k reads other data with $nfail member(s) failed"
        done
        echo "ok: $nfail member(s) failed: both survivors still read every block as before"
        # they come back (bitmap re-add) before the victim rejoins
        for d in $(seq 1 "$nfail"); do
            cl_cli "${survivors[0]}" remove "$CL_NAME" "${legs[d]}" >/dev/null || fail "clraid remove ${legs[d]}"
            cl_cli "${survivors[0]}" re-add "$CL_NAME" "${legs[d]}" >/dev/null || fail "clraid re-add ${legs[d]}"
        done
        for k in "${survivors[@]}"; do
            cl_wait "$k" '([.devices[] | select(.state == "in_sync")] | length) == '"$ndev"' and .sync_action == "idle"' 120
        done
        cl_cli "${survivors[1]}" check "$CL_NAME" --wait >/dev/null || fail "check after the re-add"
        mm=$(cl_st "${survivors[1]}" .last_check.mismatches)
        echo "member ${survivors[1]}: re-added member(s) rebuilt, check: $mm mismatches"
        [ "$mm" = 0 ] || fail "check after the re-add found $mm mismatches"
    fi

    # --- the killed member rejoins ---------------------------------------
    local t_re
    t_re=$(now_ms)
    cl_start "$victim" "${legs[@]}"
    for k in 1 2 3; do
        cl_wait "$k" '(.cluster.members | if type == "array" then length else . end) == 3' 30
    done
    cl_wait "$victim" '.cluster.slot != null and .sync_action == "idle"' 60
    cl_poll "$victim" || fail "status of member $victim"
    echo "member $victim rejoined in $(($(now_ms) - t_re)) ms: slot $P_SLOT, members $P_MEMBERS, state $P_STATE"
    timeout "$T" nbdcopy "$(cl_uri "$victim")" - | sha256sum | cut -c1-16 >"$TESTDIR/sum.v"
    [ "$(cat "$TESTDIR/sum.v")" = "${sums[s]}" ] || fail "the rejoined member reads other data"
    echo "ok: the rejoined member reads the same data"
    for k in 1 2 3; do cl_stop "$k"; done
    SUMMARY+=("raid$level/$ndev: kill->takeover ${x_take} ms, ->read balancing ${x_rb} ms, ->resync done ${x_sync} ms (engine stamps); resynced $resynced B of $dirty B dirty ($tchunks chunks); check 0 mismatches; rejoined")
}

for p in ${CLUSTER_PASSES:-1:2:2}; do
    IFS=: read -r lv nd vi <<<"$p"
    pass "$lv" "$nd" "${vi:-2}"
done
echo
for s in "${SUMMARY[@]}"; do echo "SUMMARY: $s"; done
