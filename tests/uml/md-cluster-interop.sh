#!/bin/bash
# The same member disks, one side after the other, under kernel md-cluster
# (two User-Mode Linux nodes with corosync + the kernel DLM) and under
# clraid (engines with --lock cpg on the host's private corosync; the same
# cluster name, so the array's home cluster fits both):
#
#  1. kernel: n1 creates a RAID1 with a clustered bitmap (4 node slots),
#     n2 assembles it; each writes its own known pattern (O_DIRECT); both
#     read the whole md device; both stop.
#  2. clraid: three members assemble the same files and read the same
#     bytes; all three write (known patterns), member 2 is SIGKILLed
#     mid-write, a survivor takes its bitmap slot over and resyncs; every
#     acknowledged write is there, clraid's check finds 0 mismatches; the
#     survivors stop.
#  3. kernel: n1 and n2 assemble again and read clraid's bytes; md's own
#     check gives mismatch_cnt 0.
#  4. kernel crash: n1 stops, n2 writes and loses power with dirty bits in
#     its bitmap slot.  Then, on the host, one leg is overwritten inside a
#     dirty chunk (SIMULATED: a mirrored write that reached one leg only
#     when the node died; the real crash above leaves both legs written,
#     since every write had completed).  A clraid node starts, finds the
#     dead kernel node's slot with no owner and dirty chunks, resyncs them
#     from the first leg: both legs agree again, check gives 0 mismatches.
#  5. clraid crash: the first clraid node stops, the second (slot 1) writes
#     and is SIGKILLed with its chunks dirty; one leg is overwritten inside
#     a dirty chunk (simulated as in 4).  Kernel node n1 alone assembles,
#     takes the dead slot over at join and resyncs it: it reads the first
#     leg's bytes, md check gives mismatch_cnt 0, the legs are equal.
#
# MDC_LEVEL=10 runs the same on RAID10 near2 over the two members (default
# RAID1).  SKIPs where User-Mode Linux or the namespaces cannot run.  Prints the
# pattern seed, the sha256 sums, mismatch counts, the takeover time and the
# dirty chunk counts.
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
# shellcheck source=tests/uml/uml-functions.sh
. "$top_srcdir/tests/uml/uml-functions.sh"
requires mdadm
requires openssl

cl_corosync_start
# clr_start_corosync put a private /run over ours: 'ip netns add' (uml_net)
# makes /run/netns a mount point there, which must go before clr_cleanup
# unmounts /run (cleanups run last registered first).
cleanup_fn 'umount /run/netns 2>/dev/null'
uml_init
uml_net n1 n2
# the kernel nodes' corosync has the host corosync's cluster name: it is
# the array's home cluster for both sides
UML_CLUSTER=$CL_CLUSTER
W=$UML_DIR
MiB=1048576
case ${MDC_LEVEL:-1} in
1) echo "--level=1" >"$W/level" ;;
10) echo "--level=10 --layout=n2" >"$W/level" ;;
*) fail "MDC_LEVEL=${MDC_LEVEL:-}: give 1 or 10" ;;
esac
echo "raid level: $(cat "$W/level")"
SEED=${MDC_SEED:-$RANDOM}
echo "pattern seed: $SEED (MDC_SEED=$SEED to repeat)"
# pattern NAME BYTES: a reproducible pseudo-random pattern file in $W.
pattern() {
    openssl enc -aes-128-ctr -nosalt -pbkdf2 -pass "pass:$SEED-$1" </dev/zero 2>/dev/null |
        head -c "$2" >"$W/pat.$1"
}
pattern n1 $((4 * MiB))
pattern n2 $((4 * MiB))
pattern crash $((4 * MiB))
# where each writes in the array (MiB): the kernel nodes, clraid member K
# (2 MiB from CL_BASE + (K-1) * 8), the crashing kernel node, the crashing
# clraid node
OFF_N1=1 OFF_N2=6 CL_BASE=12 OFF_CRASH=36 OFF_CL5=42

read -r -a legs <<<"$(mkfiles 2 48M)"
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
short() { echo "${1:0:16}"; }
# data FILE OUT: the array's data area of member FILE (RAID1: a full copy).
data() {
    local j off sec
    j=$("$CLRAID" examine "$1" --json) || fail "clraid examine $1"
    off=$(jq -r '.[0].superblock.data_offset' <<<"$j")
    sec=$(jq -r '.[0].superblock.array_sectors' <<<"$j")
    dd if="$1" of="$2" bs=512 skip="$off" count="$sec" status=none
}
# slot_dirty FILE SLOT: dirty bits of bitmap slot SLOT (clraid examine).
slot_dirty() { "$CLRAID" examine "$1" --json | jq -r ".[0].bitmap.slots[$2].dirty_bits"; }
# mdadm_dirty FILE SLOT: the dirty chunks of slot SLOT as mdadm -X counts
# them (it reads a member through a block device: a read-only loop device,
# made fresh so that no stale cache is read); empty if none can be made.
mdadm_dirty() {
    local l out
    l=$(losetup -f --show -r "$1" 2>/dev/null) || return 0
    out=$(mdadm -X "$l" 2>&1) || true
    losetup -d "$l"
    awk -v s="$2" '$1 == "Node" && $2 == "Slot" { cur = $4 }
        $1 == "Bitmap" && cur == s { for (i = 2; i <= NF; i++) if ($i == "dirty") { print $(i - 1); exit } }' <<<"$out"
}
# cross_dirty FILE SLOT N: mdadm -X must count N dirty chunks in SLOT too.
cross_dirty() {
    local x
    x=$(mdadm_dirty "$1" "$2")
    if [ -z "$x" ]; then
        echo "  (mdadm -X not run: no loop device here)"
        return 0
    fi
    echo "  mdadm -X $(basename "$1"): slot $2 has $x dirty chunks"
    [ "$x" = "$3" ] || fail "mdadm -X counts $x dirty chunks in slot $2 of $1, clraid examine $3"
}
# slots_clean WHEN: after a clean stop of every node, no slot has a dirty
# bit on any member (else the next assembly resyncs for nothing).
slots_clean() {
    local f d
    for f in "${legs[@]}"; do
        d=$("$CLRAID" examine "$f" --json | jq -r '[.[0].bitmap.slots[].dirty_bits] | add')
        [ "$d" = 0 ] || { "$CLRAID" examine "$f"; fail "$1: $d dirty bits left in the bitmap slots of $f"; }
    done
    echo "ok: $1: no dirty bit in any slot"
}

# ---- the guests' scripts ---------------------------------------------------
# Common start: cluster stack, md-cluster, and "fail" files so that the
# other node stops waiting at once when one fails.
cat >"$W/common.sh" <<'G'
. "$UML_LIB/guest-functions.sh"
cd "$UML_WORK" || exit 1
trap '[ $? = 0 ] || touch "$PHASE.$NODE.failed"' EXIT
# await FILE...: until every FILE exists (or the other node failed).
await() {
    _n=600
    while [ "$_n" -gt 0 ]; do
        _ok=1
        for _f in "$@"; do [ -e "$_f" ] || _ok=0; done
        [ "$_ok" = 1 ] && return 0
        ls "$PHASE".*.failed >/dev/null 2>&1 && gfail "the other node failed"
        sleep 0.1
        _n=$((_n - 1))
    done
    gfail "timeout waiting for $*"
}
# mdsha: sha256 of the whole md device, read around the page cache.
mdsha() { dd if=/dev/md0 bs=1M iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1; }
# mdslot: this node's bitmap slot (md-cluster prints the DLM slot, 1-based)
mdslot() { echo $(($(dmesg | sed -n 's/.*md-cluster: Joined cluster .* slot \([0-9]*\).*/\1/p' | tail -n 1) - 1)); }
guest_corosync
guest_dlm
modload raid1 raid10 md-cluster
A=$(ubd 0) B=$(ubd 1)
G

# Phase 1: create (n1) / assemble (n2), write, read, stop.
cat >"$W/k1.sh" <<'G'
PHASE=k1
. "$UML_WORK/common.sh"
if [ "$NODE" = n1 ]; then
    # shellcheck disable=SC2046  # the level's words
    mdadm --create /dev/md0 --run --metadata=1.2 $(cat level) --raid-devices=2 \
        --bitmap=clustered --nodes=4 --home-cluster="$CLUSTER" --bitmap-chunk=512K \
        --assume-clean "$A" "$B" >k1.n1.mdadm 2>&1 || { cat k1.n1.mdadm; gfail "mdadm --create"; }
    touch k1.created
    off=$(cat off.n1)
else
    await k1.created
    mdadm --assemble /dev/md0 "$A" "$B" >k1.n2.mdadm 2>&1 || { cat k1.n2.mdadm; gfail "mdadm --assemble"; }
    off=$(cat off.n2)
fi
r slot "$(mdslot)"
r size "$(blockdev --getsize64 /dev/md0)"
dd if="pat.$NODE" of=/dev/md0 bs=1M seek="$off" oflag=direct conv=notrunc status=none || gfail "write"
touch "k1.$NODE.written"
await k1.n1.written k1.n2.written
r sha "$(mdsha)"
touch "k1.$NODE.read"
await k1.n1.read k1.n2.read
mdadm --stop /dev/md0 || gfail "mdadm --stop"
r stopped yes
G

# Phase 3 + 4: assemble (n1 first, then n2), read, n1 checks, n1 stops; n2
# writes and waits for the power loss.
cat >"$W/k2.sh" <<'G'
PHASE=k2
. "$UML_WORK/common.sh"
[ "$NODE" = n1 ] || await k2.n1.assembled
mdadm --assemble /dev/md0 "$A" "$B" >"k2.$NODE.mdadm" 2>&1 || { cat "k2.$NODE.mdadm"; gfail "mdadm --assemble"; }
touch "k2.$NODE.assembled"
r slot "$(mdslot)"
await k2.n1.assembled k2.n2.assembled
r sha "$(mdsha)"
touch "k2.$NODE.read"
await k2.n1.read k2.n2.read
if [ "$NODE" = n1 ]; then
    # A clustered array is never marked clean in its superblock (md-cluster
    # keeps dirtiness in the bitmaps): at assembly md schedules a
    # bitmap-guided resync, which starts once the array leaves read-auto
    # and would zero mismatch_cnt if it ran after the check.  Let it end
    # first, then check.
    mdadm --readwrite /dev/md0 || gfail "mdadm --readwrite"
    wait_for 60 grep -qx none /sys/block/md0/md/resync_start || gfail "the assembly resync did not end"
    wait_for 60 grep -qx idle /sys/block/md0/md/sync_action || gfail "the assembly resync did not end"
    echo check >/sys/block/md0/md/sync_action || gfail "echo check"
    wait_for 60 sh -c 'grep -qx check /sys/block/md0/md/last_sync_action && grep -qx idle /sys/block/md0/md/sync_action' ||
        gfail "the check did not end"
    r mismatch_cnt "$(cat /sys/block/md0/md/mismatch_cnt)"
    r check_log "$(dmesg | grep -E 'md: (data-check|md0: data-check)' | tr -s ' \n' ' ')"
    mdadm --stop /dev/md0 || gfail "mdadm --stop"
    touch k2.n1.stopped
    r stopped yes
else
    await k2.n1.stopped
    dd if=pat.crash of=/dev/md0 bs=1M seek="$(cat off.crash)" oflag=direct conv=notrunc status=none || gfail "write"
    r crashready yes
    # the host cuts the power now: the bits of this write stay dirty
    sleep 600
fi
G
# Phase 5: n1 alone assembles (it takes the dead clraid node's slot over at
# join), waits for the resync, reads, checks.
cat >"$W/k3.sh" <<'G'
PHASE=k3
. "$UML_WORK/common.sh"
mdadm --assemble /dev/md0 "$A" "$B" >k3.n1.mdadm 2>&1 || { cat k3.n1.mdadm; gfail "mdadm --assemble"; }
r slot "$(mdslot)"
mdadm --readwrite /dev/md0 || gfail "mdadm --readwrite"
wait_for 60 grep -qx none /sys/block/md0/md/resync_start || gfail "the resync did not end"
wait_for 60 grep -qx idle /sys/block/md0/md/sync_action || gfail "the resync did not end"
r sync_log "$(dmesg | grep -E 'md: (resync|md0: resync)|md-cluster' | tr -s ' \n' ' ')"
r sha "$(mdsha)"
echo check >/sys/block/md0/md/sync_action || gfail "echo check"
wait_for 60 sh -c 'grep -qx check /sys/block/md0/md/last_sync_action && grep -qx idle /sys/block/md0/md/sync_action' ||
    gfail "the check did not end"
r mismatch_cnt "$(cat /sys/block/md0/md/mismatch_cnt)"
mdadm --stop /dev/md0 || gfail "mdadm --stop"
G
echo $OFF_N1 >"$W/off.n1"
echo $OFF_N2 >"$W/off.n2"
echo $OFF_CRASH >"$W/off.crash"

uml_fail() { uml_console_tail "$1" 30; fail "$2"; }

# ==== 1. kernel md-cluster writes ===========================================
echo
echo "=== 1. kernel md-cluster (n1 creates, n2 assembles), both write"
t0=$(now_ms)
uml_start n1 "$W/k1.sh" "${legs[@]}"
uml_start n2 "$W/k1.sh" "${legs[@]}"
for n in n1 n2; do
    rc=0; uml_wait "$n" 100 || rc=$?
    [ "$rc" = 0 ] || uml_fail "$n" "$n (phase 1): exit $rc, $(uml_r "$n" fail)"
done
size=$(uml_r n1 size)
echo "kernel phase 1: $(($(now_ms) - t0)) ms; md0 $size bytes; bitmap slots: n1 $(uml_r n1 slot), n2 $(uml_r n2 slot)"
[ "$(uml_r n1 slot)" != "$(uml_r n2 slot)" ] || fail "both kernel nodes in bitmap slot $(uml_r n1 slot)"
truncate -s "$size" "$W/expected"
dd if="$W/pat.n1" of="$W/expected" bs=1M seek=$OFF_N1 conv=notrunc status=none
dd if="$W/pat.n2" of="$W/expected" bs=1M seek=$OFF_N2 conv=notrunc status=none
K1=$(sha_of "$W/expected")
for n in n1 n2; do
    echo "$n reads md0 sha256 $(short "$(uml_r "$n" sha)")..."
    [ "$(uml_r "$n" sha)" = "$K1" ] || fail "$n reads md0 other than both patterns written (expected $(short "$K1"))"
done
echo "ok: both kernel nodes read both nodes' writes: sha256 $(short "$K1")..."
"$CLRAID" examine "${legs[0]}" | sed -n 's/^ *\(Cluster Name\|Bitmap\|Node Slot [0-3]\) : /  \1: /p'

# ==== 2. clraid --lock cpg over the same files ==============================
echo
echo "=== 2. clraid: three members --lock cpg assemble the kernel's disks"
CL_NAME=mdc
for k in 1 2 3; do
    cl_start "$k" "${legs[@]}"
    cl_wait "$k" '.cluster.slot != null' 30
done
for k in 1 2 3; do
    cl_wait "$k" '(.cluster.members | if type == "array" then length else . end) == 3 and .sync_action == "idle"' 30
    cl_poll "$k" || fail "status of member $k"
    echo "member $k: slot $P_SLOT, members $P_MEMBERS, state $P_STATE"
done
[ "$(cl_st 1 .size_bytes)" = "$size" ] || fail "clraid exports $(cl_st 1 .size_bytes) bytes, md0 had $size"
for k in 1 2 3; do
    s=$(timeout "$T" nbdcopy "$(cl_uri "$k")" - | sha256sum | cut -d' ' -f1)
    echo "member $k reads sha256 $(short "$s")..."
    [ "$s" = "$K1" ] || fail "clraid member $k reads other bytes than kernel md wrote"
done
echo "ok: clraid reads the kernel's bytes"

victim=2
survivors=(1 3)
cl_cli "$victim" fault "$CL_NAME" "${legs[1]}" delay --ms 20 >/dev/null || fail "fault delay on member $victim"
stop=$TESTDIR/stop
wpids=()
for k in 1 2 3; do
    cl_writer "$k" $(((CL_BASE + (k - 1) * 8) * MiB)) "$TESTDIR/w$k.log" "$stop" &
    wpids+=($!)
done
n=0
while :; do
    read -r vr va <<<"$(cl_in_round "$TESTDIR/w$victim.log")"
    [ "$vr" -ge 2 ] && [ "$va" -ge 5 ] && [ "$va" -le $((CL_NB - 5)) ] && break
    n=$((n + 1)); [ "$n" -lt 1000 ] || fail "the victim's writer does not progress"
    sleep 0.01
done
t_kill=$(now_ms)
cl_crash "$victim"
echo "killed member $victim mid-write (round $vr, $va writes acknowledged in it)"
taker=""
for i in $(seq 600); do
    for k in "${survivors[@]}"; do
        cl_poll "$k" || continue
        [ "$P_TAKEOVER" != null ] && [ "$P_RECOVERED" -gt 0 ] && taker=$k
    done
    [ -n "$taker" ] && break
    sleep 0.1
done
[ -n "$taker" ] || fail "no survivor took the victim's slot over within 60 s"
for k in "${survivors[@]}"; do
    cl_wait "$k" '.sync_action == "idle" and .cluster.read_balancing == true and .last_resync != null' 60
done
touch "$stop"
wait "${wpids[@]}"
x_take=$(($(cl_st "$taker" .cluster.last_takeover.at_ms) - t_kill))
tslot=$(cl_st "$taker" .cluster.last_takeover.slot)
tchunks=$(cl_st "$taker" .cluster.last_takeover.dirty_chunks)
resynced=$(cl_st "$taker" .last_resync.bytes)
echo "kill -> takeover: $x_take ms (member $taker took slot $tslot with $tchunks dirty chunk(s); resynced $resynced bytes)"
[ "$tchunks" -gt 0 ] || fail "the victim died mid-write but its slot had no dirty chunk"
for k in "${survivors[@]}"; do
    ! grep -q "$CL_FAILED" "$TESTDIR/w$k.log" || fail "member $k: a client write failed during the takeover"
done
grep -q "$CL_FAILED" "$TESTDIR/w$victim.log" || fail "the victim's writer saw no failure: was it killed mid-write?"
exps=()
for k in 1 2 3; do
    cl_expect "$TESTDIR/w$k.log" "$k" $(((CL_BASE + (k - 1) * 8) * MiB)) >"$TESTDIR/exp.$k"
    exps+=("$TESTDIR/exp.$k")
done
cl_build_expected "$size" "$TESTDIR/expected2" "${exps[@]}"
# the kernel's patterns, outside the writers' regions
dd if="$W/pat.n1" of="$TESTDIR/expected2" bs=1M seek=$OFF_N1 conv=notrunc status=none
dd if="$W/pat.n2" of="$TESTDIR/expected2" bs=1M seek=$OFF_N2 conv=notrunc status=none
sums=()
for k in "${survivors[@]}"; do
    timeout "$T" nbdcopy "$(cl_uri "$k")" "$TESTDIR/img$k" || fail "nbdcopy from member $k"
    sums[k]=$(sha_of "$TESTDIR/img$k")
    echo "member $k reads sha256 $(short "${sums[k]}")..."
done
[ "${sums[1]}" = "${sums[3]}" ] || fail "the survivors read different data"
cl_verify "$TESTDIR/img1" "$TESTDIR/expected2" "${exps[@]}" || fail "data differs from the acknowledged writes"
echo "ok: every block holds its last acknowledged write (in-flight block: old or new), the kernel's data is intact"
C2=${sums[1]}
mv "$TESTDIR/img1" "$TESTDIR/clraid.img"
rm -f "$TESTDIR"/img*
for k in "${survivors[@]}"; do
    cl_cli "$k" check "$CL_NAME" --wait >/dev/null || fail "check on member $k"
    mm=$(cl_st "$k" .last_check.mismatches)
    echo "member $k: clraid check: $mm mismatches"
    [ "$mm" = 0 ] || fail "member $k: check found $mm mismatches"
done
for k in "${survivors[@]}"; do cl_stop "$k"; done
echo "clraid stopped; bitmap slots:"
"$CLRAID" examine "${legs[0]}" | sed -n 's/^ *\(Node Slot [0-3]\) : /  \1: /p'
slots_clean "clraid stopped"

# ==== 3. kernel md-cluster again, 4. then a kernel node crashes =============
echo
echo "=== 3. kernel md-cluster assembles clraid's disks again"
t0=$(now_ms)
uml_start n1 "$W/k2.sh" "${legs[@]}"
# n2 loses power in phase 4: started from a subshell, its launcher is no job
# of ours, so bash prints no "Killed" for it (uml_wait/uml_kill use pids)
(uml_start n2 "$W/k2.sh" "${legs[@]}")
rc=0; uml_wait n1 100 || rc=$?
[ "$rc" = 0 ] || uml_fail n1 "n1 (phase 3): exit $rc, $(uml_r n1 fail)"
echo "kernel phase 3: $(($(now_ms) - t0)) ms; bitmap slots: n1 $(uml_r n1 slot), n2 $(uml_r n2 slot)"
for n in n1 n2; do
    echo "$n reads md0 sha256 $(short "$(uml_r "$n" sha)")..."
    [ "$(uml_r "$n" sha)" = "$C2" ] || fail "kernel node $n reads other bytes than clraid left (sha256 $(short "$C2")...)"
done
mm=$(uml_r n1 mismatch_cnt)
echo "n1: md check: mismatch_cnt $mm (kernel log:$(uml_r n1 check_log | sed 's/\[ *[0-9.]*\]//g'))"
case "$(uml_r n1 check_log)" in *"md0: data-check done"*) ;; *) fail "no md data-check ran on n1" ;; esac
[ "$mm" = 0 ] || fail "kernel md check: mismatch_cnt $mm"
echo "ok: kernel md-cluster reads clraid's bytes, mismatch_cnt 0"

echo
echo "=== 4. kernel node n2 writes and loses power; clraid takes its slot over"
uml_wait_line n2 '^R crashready' 60
# (|| true: uml_kill fails under set -e when a process is gone already)
uml_kill n2 || true
dslot=$(uml_r n2 slot)
for f in "${legs[@]}"; do
    echo "  $(basename "$f"): slot $dslot has $(slot_dirty "$f" "$dslot") dirty bits"
done
dirty=$(slot_dirty "${legs[0]}" "$dslot")
[ "$dirty" -gt 0 ] || fail "n2 lost power right after its write but its bitmap slot $dslot has no dirty bit"
cross_dirty "${legs[0]}" "$dslot" "$dirty"
data "${legs[0]}" "$TESTDIR/leg0"
data "${legs[1]}" "$TESTDIR/leg1"
cmp -s "$TESTDIR/leg0" "$TESTDIR/leg1" || fail "the legs differ after the crash before the simulated torn write"
# both legs hold what clraid left plus n2's write
dd if="$W/pat.crash" of="$TESTDIR/clraid.img" bs=1M seek=$OFF_CRASH conv=notrunc status=none
cmp "$TESTDIR/leg0" "$TESTDIR/clraid.img" | head -n 3
cmp -s "$TESTDIR/leg0" "$TESTDIR/clraid.img" || fail "after the crash, the array does not hold clraid's bytes plus n2's write"
K4=$(sha_of "$TESTDIR/leg0")
# SIMULATED torn mirrored write: 64 KiB inside the second dirty chunk of
# the crash region, on leg 1 only
jq0=$("$CLRAID" examine "${legs[1]}" --json)
doff=$(jq -r '.[0].superblock.data_offset' <<<"$jq0")
torn=$(((OFF_CRASH * MiB + 512 * 1024 + 65536) / 512 + doff))
head -c 65536 /dev/zero | tr '\0' '\356' | dd of="${legs[1]}" bs=512 seek="$torn" conv=notrunc status=none
data "${legs[1]}" "$TESTDIR/leg1"
echo "simulated a torn write: 64 KiB on leg 1 only at array byte $(((torn - doff) * 512)): legs differ in $(cmp -l "$TESTDIR/leg0" "$TESTDIR/leg1" | wc -l) bytes"
rm -f "$TESTDIR/leg1" "$TESTDIR/clraid.img"

CL_NAME=mdc2
t0=$(now_ms)
cl_start 1 "${legs[@]}"
cl_wait 1 '.cluster.slot != null and .sync_action == "idle" and .last_resync != null' 60
echo "member 1: slot $(cl_st 1 .cluster.slot), resync after start: $(cl_st 1 .last_resync.bytes) bytes in $(($(now_ms) - t0)) ms"
grep "has no owner" "$(cl_dir 1)/$CL_NAME.log" | sed 's/^/  log: /'
grep -q "has no owner" "$(cl_dir 1)/$CL_NAME.log" || grep -v 'debug: \(recv\|send\|pread\|pwrite\|new\|handshake\|client\|negot\)' "$(cl_dir 1)/$CL_NAME.log" | tail -n 30
grep -q "slot $dslot has no owner and $dirty dirty chunk(s): resyncing them" "$(cl_dir 1)/$CL_NAME.log" ||
    fail "member 1 did not take over the dead kernel node's slot $dslot ($dirty dirty chunks)"
cl_start 2 "${legs[@]}"
cl_wait 2 '(.cluster.members | if type == "array" then length else . end) == 2 and .sync_action == "idle"' 30
for k in 1 2; do
    s=$(timeout "$T" nbdcopy "$(cl_uri "$k")" - | sha256sum | cut -d' ' -f1)
    echo "member $k (slot $(cl_st "$k" .cluster.slot)) reads sha256 $(short "$s")..."
    [ "$s" = "$K4" ] || fail "member $k: the resync did not restore the first leg's data (expected $(short "$K4")...)"
done
cl_cli 1 check "$CL_NAME" --wait >/dev/null || fail "check on member 1"
mm=$(cl_st 1 .last_check.mismatches)
echo "member 1: clraid check after the takeover: $mm mismatches"
[ "$mm" = 0 ] || fail "check found $mm mismatches after the takeover resync"
cl_stop 1
data "${legs[1]}" "$TESTDIR/leg1"
cmp -s "$TESTDIR/leg0" "$TESTDIR/leg1" || fail "after the resync the legs still differ"
echo "ok: the legs are equal again on the host: sha256 $(short "$K4")..."

# ==== 5. a clraid node crashes, kernel md-cluster takes its slot over =======
echo
echo "=== 5. clraid member 2 (slot $(cl_st 2 .cluster.slot)) alone writes and is killed; kernel md-cluster assembles"
cslot=$(cl_st 2 .cluster.slot)
p5=$(cl_pattern 2 1)  # the writer's round 1
# one round of CL_NB writes, all acknowledged, then the kill: the chunks
# stay dirty (a bit is cleared only after daemon_sleep, 5 s, without writes)
cl_writer 2 $((OFF_CL5 * MiB)) "$TESTDIR/w5.log" "$TESTDIR/nostop" 1
grep -q "$CL_FAILED" "$TESTDIR/w5.log" && { cat "$TESTDIR/w5.log"; fail "member 2: a write failed"; }
cl_crash 2
echo "member 2 wrote $(cl_count '^wrote' "$TESTDIR/w5.log") x $CL_BS bytes at array byte $((OFF_CL5 * MiB)), then SIGKILL"
cdirty=$(slot_dirty "${legs[0]}" "$cslot")
echo "  $(basename "${legs[0]}"): slot $cslot has $cdirty dirty bits"
[ "$cdirty" -ge $((CL_NB * CL_BS / (512 * 1024))) ] ||
    fail "member 2 was killed right after writing $((CL_NB * CL_BS / (512 * 1024))) chunks but its slot $cslot has $cdirty dirty bits"
cross_dirty "${legs[0]}" "$cslot" "$cdirty"
# expected: what the array held, plus member 2's round on both legs
head -c $((CL_NB * CL_BS)) /dev/zero | tr '\0' "\\$(printf '%03o' "$p5")" |
    dd of="$TESTDIR/leg0" bs=1M seek=$OFF_CL5 conv=notrunc status=none
K5=$(sha_of "$TESTDIR/leg0")
mv "$TESTDIR/leg0" "$TESTDIR/expected5"
data "${legs[0]}" "$TESTDIR/leg0"
data "${legs[1]}" "$TESTDIR/leg1"
cmp -s "$TESTDIR/leg0" "$TESTDIR/expected5" || fail "leg 0 does not hold member 2's acknowledged writes"
cmp -s "$TESTDIR/leg1" "$TESTDIR/expected5" || fail "leg 1 does not hold member 2's acknowledged writes"
# SIMULATED torn mirrored write again, on leg 1, inside the first chunk
torn=$(((OFF_CL5 * MiB + 65536) / 512 + doff))
head -c 65536 /dev/zero | tr '\0' '\356' | dd of="${legs[1]}" bs=512 seek="$torn" conv=notrunc status=none
data "${legs[1]}" "$TESTDIR/leg1"
echo "simulated a torn write: 64 KiB on leg 1 only at array byte $(((torn - doff) * 512)): legs differ in $(cmp -l "$TESTDIR/leg0" "$TESTDIR/leg1" | wc -l) bytes"
rm -f "$TESTDIR/leg1" "$TESTDIR/expected5"
t0=$(now_ms)
uml_start n1 "$W/k3.sh" "${legs[@]}"
rc=0; uml_wait n1 100 || rc=$?
[ "$rc" = 0 ] || uml_fail n1 "n1 (phase 5): exit $rc, $(uml_r n1 fail)"
echo "kernel phase 5 (n1 alone): $(($(now_ms) - t0)) ms; bitmap slot $(uml_r n1 slot)"
echo "n1: kernel log:$(uml_r n1 sync_log | sed 's/\[ *[0-9.]*\]//g')"
echo "n1 reads md0 sha256 $(short "$(uml_r n1 sha)")..."
[ "$(uml_r n1 sha)" = "$K5" ] || fail "kernel md reads other bytes than the first leg holds (sha256 $(short "$K5")...)"
mm5=$(uml_r n1 mismatch_cnt)
echo "n1: md check after its resync: mismatch_cnt $mm5"
[ "$mm5" = 0 ] || fail "kernel md check: mismatch_cnt $mm5: the dead clraid node's dirty chunks were not resynced"
data "${legs[1]}" "$TESTDIR/leg1"
cmp -s "$TESTDIR/leg0" "$TESTDIR/leg1" || fail "after the kernel's resync the legs still differ"
echo "ok: kernel md-cluster resynced the dead clraid node's slot $cslot: legs equal, mismatch_cnt 0"
echo
echo "SUMMARY: kernel -> clraid -> kernel: sha256 $(short "$K1")... then $(short "$C2")... on both sides; clraid kill->takeover $x_take ms ($tchunks dirty chunks), kernel mismatch_cnt $(uml_r n1 mismatch_cnt); kernel crash: slot $dslot $dirty dirty chunks taken over by clraid, check 0 mismatches; clraid crash: slot $cslot $cdirty dirty chunks resynced by kernel md, mismatch_cnt $mm5"
echo "PASS: md-cluster interop"
