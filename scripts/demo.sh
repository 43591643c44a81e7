#!/bin/bash
# clraid demo: a three-node cluster in a box.  As root, after
# scripts/install-deps.sh and a build; no cluster needed, none touched.
#
# It starts a private corosync on loopback (its config, state and sockets in
# a temp dir, inside private network, mount and UTS namespaces: the host's
# /etc/corosync and any corosync of the host are never seen), creates a
# RAID1 over two sparse files, and runs three clraid members on them, as
# three cluster nodes would (one engine each, --lock cpg).  All three write
# at once; then one member is killed in the middle of its writes and the
# other two take over its write-intent bitmap and resync what it left
# dirty.  It shows `clraid status` along the way, checks the mirror, lets
# the killed member rejoin, prints the timings and removes everything.
#
# DEMO_LEVEL=6 runs the same on a RAID6 over six files (stripe-zone locks
# between the members), and after the takeover fails two of its disks:
# both survivors still read the same data.
#
# The single-node RAID6 demo is scripts/demo-raid6.sh.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
top=$(pwd)
CLRAID=clraid
export PATH="$top:$PATH"   # this build's clraid, shown as plain "clraid"
die() { echo "demo: $*" >&2; exit 1; }
[ -x "$top/clraid" ] || die "build first: ./autogen.sh && ./configure && make"
[ "$(id -u)" = 0 ] || die "run as root: the demo makes private namespaces for its own corosync"
for c in corosync corosync-quorumtool nbdkit qemu-io nbdcopy jq unshare ip mount; do
    command -v "$c" >/dev/null 2>&1 || die "$c is not installed (run scripts/install-deps.sh)"
done
[ -d /var/lib/corosync ] || die "/var/lib/corosync is missing (is the corosync package installed?)"

# Re-run inside private namespaces: corosync's clients find it through
# abstract unix sockets, which belong to the network namespace, so this
# corosync is the only one the demo's members can reach.
if [ -z "${CLRAID_DEMO_NS:-}" ]; then
    CLRAID_DEMO_NS=1 exec unshare --net --mount --uts --propagation private "$0" "$@"
fi
ip link set lo up
hostname clraid-demo

# Use the plugin from this build tree (an installed clraid finds its own).
[ -e "$top/.libs/nbdkit-clraid-plugin.so" ] && export CLRAID_NBDKIT_PLUGIN="$top/.libs/nbdkit-clraid-plugin.so"

dir=$(mktemp -d "${TMPDIR:-/var/tmp}/clraid-demo.XXXXXX")
cd "$dir"   # the commands shown use paths relative to it
NAME=vmstore
NODES=(node-a node-b node-c)
LEVEL=${DEMO_LEVEL:-1}
case $LEVEL in 1 | 6) ;; *) die "DEMO_LEVEL must be 1 or 6" ;; esac
COROSYNC_PID=""
writers=()
cleanup() {
    set +e
    for p in "${writers[@]}"; do kill "$p" 2>/dev/null; done
    for n in "${NODES[@]}"; do
        if [ -e "$dir/$n/$NAME.pid" ]; then
            timeout 30 "$CLRAID" stop "$NAME" --run-dir "$dir/$n" >/dev/null 2>&1 ||
                kill -9 "$(cat "$dir/$n/$NAME.pid" 2>/dev/null)" 2>/dev/null
        fi
    done
    if [ -n "$COROSYNC_PID" ]; then
        kill "$COROSYNC_PID" 2>/dev/null
        wait "$COROSYNC_PID" 2>/dev/null
    fi
    umount /dev/shm /run /var/lib/corosync 2>/dev/null
    cd /
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
say() { printf '   %s\n' "$*"; }
run() { printf '   $ %s\n' "$*"; "$@" 2>&1 | sed 's/^/     /'; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
uri() { echo "nbd+unix:///?socket=$dir/$1/$NAME.sock"; }
cli() { local n=$1; shift; timeout 60 "$CLRAID" "$@" --run-dir "$n"; }
js() { cli "$1" status "$NAME" --json | jq -r "$2"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
MEMBERS='(.cluster.members | if type == "array" then length else . end)'
# One line about a member's view of the cluster, from its status JSON on
# stdin; with "state", one more line: "TAKEN-OVER READ-BALANCING SYNC RESYNCED".
# shellcheck disable=SC2016  # jq code
VIEW='def yn: if . == true then "yes" elif . == false then "no" else tostring end;
    "\($n): slot \(.cluster.slot), members \(.cluster.members | if type == "array" then length else . end),"
    + " recovering \(.cluster.recovering | yn), read balancing \(.cluster.read_balancing | yn),"
    + " takeover " + (if .cluster.last_takeover == null then "-" else
        "slot \(.cluster.last_takeover.slot) (\(.cluster.last_takeover.dirty_chunks) dirty chunks)" end)
    + ", sync \(.sync_action)"
    + (if .cluster.remote_window == null then "" else .cluster.remote_window |
        " (slot \(.from) resyncs \(.lo_bytes / 1048576 | floor)-\(.hi_bytes / 1048576 | floor) MiB)" end)
    + (if .sync_progress != null and .sync_progress.total_bytes > 0 then
        " \((100 * .sync_progress.position_bytes / .sync_progress.total_bytes) | floor)%" else "" end),
    (if $state == "" then empty else
        "\(.cluster.last_takeover != null) \(.cluster.read_balancing) \(.sync_action) \(.last_resync.bytes)" end)'
view() {
    cli "$1" status "$NAME" --json 2>/dev/null | jq -r --arg n "$1" --arg state "" "$VIEW" ||
        echo "$1: (no answer)"
}
wait_for() {   # wait_for NODE JQ-CONDITION WHAT
    local i=0
    until [ "$(js "$1" "$2" 2>/dev/null)" = true ]; do
        i=$((i + 1)); [ $i -lt 600 ] || die "$1: timed out waiting for $3"
        sleep 0.1
    done
}

step "A private corosync on loopback (config, state and data in $dir)"
mkdir -p "$dir/corosync" "$dir/var-lib-corosync" "$dir/run"
mount --bind "$dir/var-lib-corosync" /var/lib/corosync
mount --bind "$dir/run" /run
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
cat >"$dir/corosync/corosync.conf" <<CONF
totem {
	version: 2
	cluster_name: clraid-demo
	transport: knet
	crypto_cipher: none
	crypto_hash: none
}
logging {
	to_stderr: no
	to_logfile: yes
	logfile: $dir/corosync/corosync.log
	to_syslog: no
}
quorum {
	provider: corosync_votequorum
}
nodelist {
	node {
		name: clraid-demo
		nodeid: 1
		ring0_addr: 127.0.0.1
	}
}
CONF
corosync -f -c "$dir/corosync/corosync.conf" >"$dir/corosync/corosync.out" 2>&1 &
COROSYNC_PID=$!
i=0
until corosync-quorumtool -s 2>/dev/null | grep -q 'Quorate: *Yes'; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$dir/corosync/corosync.out"; die "corosync did not start"; }
    sleep 0.1
done
say "corosync pid $COROSYNC_PID, cluster 'clraid-demo':"
corosync-quorumtool -s | grep -E 'Quorate|Nodes:' | sed 's/^/     /'
say "The three members below are three processes of this one corosync node;"
say "on a real cluster each runs on its own host, with the same commands."

if [ "$LEVEL" = 6 ]; then
    step "clraid create: a RAID6 over six 256 MiB sparse files, bitmap slots for 4 nodes"
    disks=(disk0 disk1 disk2 disk3 disk4 disk5)
    truncate -s 256M "${disks[@]}"
    run "$CLRAID" create --level=6 --raid-devices=6 --chunk=256 --nodes=4 --home-cluster=clraid-demo \
        --name="$NAME" --bitmap-chunk=4M --assume-clean "${disks[@]}"
    say "(--assume-clean: blank files, zero data and zero parity agree: no initial resync)"
else
    step "clraid create: a RAID1 over two 1 GiB sparse files, bitmap slots for 4 nodes"
    disks=(disk0 disk1)
    truncate -s 1G "${disks[@]}"
    run "$CLRAID" create --level=1 --raid-devices=2 --nodes=4 --home-cluster=clraid-demo \
        --name="$NAME" --bitmap-chunk=4M --assume-clean "${disks[@]}"
    say "(--assume-clean: the blank files are already identical, no initial resync)"
fi

step "Start three members: clraid start $NAME --lock cpg --run-dir DIR (one per node)"
for n in "${NODES[@]}"; do
    out=$(cli "$n" start "$NAME" --lock cpg "${disks[@]}" 2>&1) ||
        { echo "$out"; tail -n 20 "$dir/$n/$NAME.log" 2>/dev/null; die "$n did not start"; }
    say "$n: $out"
    wait_for "$n" '.cluster.slot != null' "its slot"
done
for n in "${NODES[@]}"; do wait_for "$n" "$MEMBERS == 3" "3 members"; done
for n in "${NODES[@]}"; do say "$(view "$n")"; done

step "All three write at once, each to its own 32 MiB region (qemu-io over NBD)"
declare -A before
pat=(0xaa 0xbb 0xcc)
if [ "$LEVEL" = 6 ]; then
    say "RAID6: a write takes the lock of its stripes' zone (EX) the first time; a first"
    say "pass over each region takes them, and the members keep them cached:"
    for i in 0 1 2; do
        qemu-io -f raw "$(uri "${NODES[i]}")" -c "write -P 0 $((i * 32))M 32M" >/dev/null 2>&1 ||
            die "first pass through ${NODES[i]} failed"
    done
    for n in "${NODES[@]}"; do
        say "$n: $(js "$n" '.cluster.zones | "\(.held_ex) zone locks held EX (\(.stripes_per_zone) stripes each), \(.requests) requests"')"
    done
fi
for n in "${NODES[@]}"; do before[$n]=$(js "$n" '"\(.counters.lock_ops) \(.counters.messages)"'); done
pids=()
for i in 0 1 2; do
    say "${NODES[i]} writes byte ${pat[i]} at $((i * 32)) MiB .. $((i * 32 + 32)) MiB"
    qemu-io -f raw "$(uri "${NODES[i]}")" -c "write -P ${pat[i]} $((i * 32))M 32M" >"$dir/w$i.out" 2>&1 &
    pids+=($!)
done
for i in 0 1 2; do wait "${pids[i]}" || { cat "$dir/w$i.out"; die "write through ${NODES[i]} failed"; }; done
for n in "${NODES[@]}"; do
    cmds=()
    for i in 0 1 2; do cmds+=(-c "read -P ${pat[i]} $((i * 32))M 32M"); done
    if qemu-io -f raw "$(uri "$n")" "${cmds[@]}" >"$dir/r.out" 2>&1 && ! grep -qi 'fail\|mismatch' "$dir/r.out"; then
        say "$n reads all three regions back correctly"
    else
        cat "$dir/r.out"; die "$n reads wrong data"
    fi
done
steady=yes
for n in "${NODES[@]}"; do
    after=$(js "$n" '"\(.counters.lock_ops) \(.counters.messages)"')
    [ "$after" = "${before[$n]}" ] || steady=no
    say "$n: lock operations, cluster messages: before [${before[$n]}], after [$after]"
done
if [ $steady = yes ]; then
    if [ "$LEVEL" = 6 ]; then
        say "=> writes to zones a member holds cost no lock operation and no cluster message"
    else
        say "=> ordinary writes cost no lock operation and no cluster message (per-node bitmaps)"
    fi
fi

step "node-c dies (SIGKILL of its engine) while node-a and node-c are writing"
loop_writer() {   # NODE BYTE OFFSET-MiB STRIDE-KiB: 64 writes of 64 KiB, again and again
    local cmds=() b
    for b in $(seq 0 63); do cmds+=(-c "write -P $2 $(($3 * 1048576 + b * $4 * 1024)) 64k"); done
    while qemu-io -f raw "$(uri "$1")" "${cmds[@]}" 2>&1 | { ! grep -q 'fail\|rror'; }; do :; done
}
loop_writer node-a 0xa1 0 64 & writers+=($!)
say "node-a rewrites 4 MiB at 0; node-c scatters 64 KiB writes over 256 MiB from 256 MiB,"
if [ "$LEVEL" = 6 ]; then
    say "one per 4 MiB: a bitmap chunk covers 4 MiB of each member, 16 MiB of data here"
else
    say "one per 4 MiB bitmap chunk: node-c's bitmap gets 64 dirty chunks"
fi
loop_writer node-c 0xc1 256 4096 & writers+=($!)
sleep 1
victim_pid=$(cat "$dir/node-c/$NAME.pid")
t_kill=$(now_ms)
kill -9 "$victim_pid"
say "kill -9 $victim_pid (node-c's nbdkit) at t=0; snapshots of the survivors when their view changes:"
t_take="" t_rb="" t_sync="" prev="" first=""
lr0a=$(js node-a .last_resync.bytes) lr0b=$(js node-b .last_resync.bytes)
while :; do
    ja=$(cli node-a status "$NAME" --json 2>/dev/null) || ja='{}'
    jb=$(cli node-b status "$NAME" --json 2>/dev/null) || jb='{}'
    t=$(($(now_ms) - t_kill))   # both answers are at most this old
    [ -n "$first" ] || first=$t
    [ $t -lt 60000 ] || die "no takeover and resync within 60 s"
    { read -r va; read -r ta rba sa lra; } < <(jq -r --arg n node-a --arg state y "$VIEW" <<<"$ja")
    { read -r vb; read -r tb rbb sb lrb; } < <(jq -r --arg n node-b --arg state y "$VIEW" <<<"$jb")
    if [ "$va $vb" != "$prev" ]; then
        printf '   +%5d ms  %s\n             %s\n' "$t" "$va" "$vb"
        prev="$va $vb"
    fi
    if [ -z "$t_take" ] && { [ "$ta" = true ] || [ "$tb" = true ]; }; then t_take=$t; fi
    if [ -n "$t_take" ] && [ -z "$t_rb" ] && [ "$rba" = true ] && [ "$rbb" = true ]; then t_rb=$t; fi
    if [ -n "$t_take" ] && [ -z "$t_sync" ] && [ "$sa" = idle ] && [ "$sb" = idle ] &&
        { [ "$lra" != "$lr0a" ] || [ "$lrb" != "$lr0b" ]; }; then t_sync=$t; fi
    [ -n "$t_rb" ] && [ -n "$t_sync" ] && break
    sleep 0.05
done
kill "${writers[@]}" 2>/dev/null || true
wait "${writers[@]}" 2>/dev/null || true
writers=()
taker=node-a
[ "$(js node-a '.cluster.last_takeover != null')" = true ] || taker=node-b
dirty=$(js "$taker" .cluster.last_takeover.bytes)
chunks=$(js "$taker" .cluster.last_takeover.dirty_chunks)
resynced=$(js "$taker" .last_resync.bytes)
say "$taker took node-c's bitmap over: $chunks dirty chunks ($(mib "$dirty")); it resynced $(mib "$resynced")"
# The engines stamp these moments themselves (wall-clock ms, this host's clock).
x_take=$(( $(js "$taker" .cluster.last_takeover.at_ms) - t_kill ))
x_sync=$(( $(js "$taker" .last_resync.ended_ms) - t_kill ))
x_rb=0
for n in node-a node-b; do
    r=$(js "$n" .cluster.read_balancing_restored_ms)
    [ "$r" = null ] || [ $((r - t_kill)) -le "$x_rb" ] || x_rb=$((r - t_kill))
done
run "$CLRAID" status "$NAME" --run-dir "$taker"

step "Both survivors read the same data; clraid check compares the legs"
for n in node-a node-b; do
    sum=$(nbdcopy "$(uri "$n")" - | sha256sum | cut -c1-16)
    say "$n reads sha256 $sum..."
    eval "sum_${n/-/_}=\$sum"
done
# shellcheck disable=SC2154  # set by the eval above
[ "$sum_node_a" = "$sum_node_b" ] || die "the survivors read different data"
run "$CLRAID" check "$NAME" --wait --run-dir node-a
mism=$(js node-a .last_check.mismatches)
say "check: $mism mismatches"
lost=""
if [ "$LEVEL" = 6 ]; then
    step "Two disks fail: both survivors still read every block (reconstructed from P and Q)"
    run "$CLRAID" fail "$NAME" disk1 --run-dir node-a
    run "$CLRAID" fail "$NAME" disk4 --run-dir node-a
    for n in node-a node-b; do
        wait_for "$n" '([.devices[] | select(.state == "faulty")] | length) == 2' "two faulty disks"
    done
    for n in node-a node-b; do
        sum=$(nbdcopy "$(uri "$n")" - | sha256sum | cut -c1-16)
        say "$n, two disks gone, reads sha256 $sum..."
        [ "$sum" = "$sum_node_a" ] || die "$n reads other data with two disks gone"
    done
    say "=> the same data as before the disks failed, on both survivors"
    lost="; two disks failed afterwards: same data on both"
    step "The two disks come back: remove, re-add (resync from the bitmaps)"
    for d in disk1 disk4; do
        run "$CLRAID" remove "$NAME" "$d" --run-dir node-a
        run "$CLRAID" re-add "$NAME" "$d" --run-dir node-a
    done
    for n in node-a node-b; do
        wait_for "$n" '([.devices[] | select(.state == "in_sync")] | length) == 6 and .sync_action == "idle"' "the re-adds"
    done
    run "$CLRAID" check "$NAME" --wait --run-dir node-b
    say "check: $(js node-b .last_check.mismatches) mismatches"
fi

step "node-c restarts and rejoins"
t_re=$(now_ms)
out=$(cli node-c start "$NAME" --lock cpg "${disks[@]}" 2>&1) || { echo "$out"; die "node-c did not restart"; }
for n in "${NODES[@]}"; do wait_for "$n" "$MEMBERS == 3" "3 members"; done
wait_for node-c '.cluster.slot != null and .sync_action == "idle"' "node-c's slot"
t_re=$(($(now_ms) - t_re))
for n in "${NODES[@]}"; do say "$(view "$n")"; done

step "Summary"
say "three members over one RAID$LEVEL; node-c killed with SIGKILL mid-write"
say "kill -> takeover of node-c's bitmap:   $x_take ms"
say "kill -> read balancing restored:       $x_rb ms (on both survivors)"
say "kill -> resync done:                   $x_sync ms"
say "(stamped by the engines; polling clraid status saw them by $t_take, $t_rb and"
say " $t_sync ms: a status call takes tens of ms, the first poll answered at $first ms)"
say "dirty in node-c's bitmap: $(mib "$dirty") ($chunks chunks); resynced: $(mib "$resynced") of $(mib "$(js node-a .size_bytes)")"
say "survivors identical: yes; check: $mism mismatches$lost; node-c rejoined in $t_re ms"
say "steady-state writes without cluster traffic: $steady"
step "Stopping the members and corosync, removing $dir"
