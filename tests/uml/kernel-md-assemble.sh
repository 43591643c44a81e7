#!/bin/bash
# shellcheck disable=SC2119  # job_pump takes no arguments (it uses set -- inside)
# Kernel md reads what clraid writes, and clraid reads what kernel md
# writes, over every level and layout `clraid create` accepts, several
# chunk sizes and member counts, single-node and clustered arrays.
#
# Forward: on the host, clraid creates each array, writes a seeded pattern
# over its whole export through NBD (some arrays then lose a member and
# rebuild it, by bitmap re-add or onto a spare, some get a kill -9 mid-write
# and a restart that resyncs), records the export's sha256 and stops
# cleanly.  Inside User-Mode Linux (several arrays per boot), kernel md
# assembles each one: its size, sha256 and mdadm -X's dirty bits must be
# what clraid left, `check` must give mismatch_cnt 0; then it assembles it
# again without one member (two for RAID6), read-only, and must read the
# same sha256.  Back on the host, clraid starts each array again after the
# kernel updated its metadata, reads the same dirty bits per slot as
# mdadm -X and the same bytes.  Some arrays are left dirty by a kill -9 (no
# restart): the kernel resyncs them from clraid's bitmap.  A member
# corrupted on purpose must give mismatch_cnt > 0 (so that the check can
# fail).  Clustered arrays (--nodes >= 2) are assembled by kernel
# md-cluster inside one-node corosync + DLM clusters; some were run by two
# --lock cpg engines (a helper run of this script in private namespaces,
# tests/lock/cluster-functions.sh), one of them killed in slot 1: the
# kernel must take that slot's bits over.
#
# Reverse: inside UML, mdadm creates arrays (internal bitmap, clustered
# ones too, one degraded, one stopped mid-resync) and writes a seeded
# pattern with dd; on the host `clraid start` must serve the same bytes,
# check clean, and read them degraded.
#
# The host makes the arrays KMD_JOBS (3) at a time; an instance (up to 16
# members) boots as soon as its arrays are made, KMD_BOOT_JOBS (3) at once;
# the host verifies an instance's arrays as soon as it powered off.
# KMD_ONLY="name ..." runs only those configs (debugging); KMD_SEED=N
# repeats a pattern; UML_KEEP=DIR keeps the consoles.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
if [ -n "${KMD_CPG_OUT:-}" ]; then
    # the helper run that makes the arrays of two --lock cpg engines (see
    # cpg_prep): in private namespaces, with a private corosync
    # shellcheck source=tests/lock/cluster-functions.sh
    . "$top_srcdir/tests/lock/cluster-functions.sh"
    clr_enter_ns "$@"
    # shellcheck source=tests/cluster/cluster-engine-functions.sh
    . "$top_srcdir/tests/cluster/cluster-engine-functions.sh"
else
    # shellcheck source=tests/engine/engine-functions.sh
    . "$top_srcdir/tests/engine/engine-functions.sh"
    # shellcheck source=tests/uml/uml-functions.sh
    . "$top_srcdir/tests/uml/uml-functions.sh"
    requires mdadm
    requires openssl
    requires corosync
    uml_init
fi
T0=$(date +%s%N)
ms() { echo $((($(date +%s%N) - T0) / 1000000)); }

SEED=${KMD_SEED:-$RANDOM}
export KMD_SEED=$SEED
[ -n "${KMD_CPG_OUT:-}" ] || echo "pattern seed $SEED (KMD_SEED=$SEED to repeat)"
# The home cluster of the clustered arrays: the name of the host's test
# corosync (tests/lock/cluster-functions.sh) and of the guest's.
CLUSTER=clraidlocktest
export UML_CLUSTER=$CLUSTER
W=${KMD_CPG_OUT:-$TESTDIR/w}
mkdir -p "$W"

# pattern KEY BYTES: deterministic bytes from SEED and KEY on stdout.
pattern() {
    openssl enc -aes-128-ctr -nosalt -pbkdf2 -pass "pass:$SEED-$1" </dev/zero 2>/dev/null |
        head -c "$2"
}
shaof() { sha256sum | cut -c1-64; }
export_sha() { timeout "$T" nbdcopy "$(uri "$1")" - | shaof; }

# ---- forward: the configs ------------------------------------------------
# name level members layout chunkKiB memberMiB nodes event
#   event: plain | readd (fail, degraded writes, bitmap re-add) |
#          spare (fail and remove, rebuild onto new files; RAID6 two) |
#          crash (kill -9 mid-write, restart, resync, stop) |
#          kcrash (kill -9 mid-write, left dirty for the kernel to resync) |
#          corrupt (negative control: a member's data altered on the host) |
#          cpg (two engines --lock cpg, bitmap slots 0 and 1, each writes
#          half, both stop) | cpgcrash (the same, then the engine of slot 0
#          stops and that of slot 1 gets a kill -9 mid-write: the kernel
#          must take slot 1's dirty bits over and resync them; with
#          members of 64 MiB or more, 4 KiB bitmap chunks: two pages of
#          bits per slot)
CONFIGS="
r1a  1  2 -                 -    5 1 plain
r1b  1  3 -                 -    7 1 readd
r1c  1  4 -                 -    5 1 crash
x1   10 2 n2                64   5 1 plain
x2   10 3 n2                512  5 1 readd
x3   10 4 n3                128  5 1 plain
x4   10 4 f2                256  5 1 crash
x5   10 3 f3                64   7 1 plain
x6   10 5 o2                32   5 1 spare
x7   10 4 o3                1024 7 1 plain
x8   10 6 n2                4    5 1 plain
x9   10 2 f2                2048 6 1 plain
p1   5  3 left-symmetric    64   5 1 plain
p2   5  4 left-asymmetric   128  5 1 spare
p3   5  5 right-symmetric   256  5 1 plain
p4   5  6 right-asymmetric  512  5 1 crash
p5   5  4 parity-first      16   5 1 plain
p6   5  3 parity-last       1024 7 1 readd
p7   5  7 left-symmetric    2048 6 1 plain
p8   5  3 left-symmetric    64   5 1 kcrash
q1   6  4 left-symmetric    64   5 1 plain
q2   6  5 left-symmetric    512  5 1 spare
q3   6  6 left-symmetric    8    5 1 crash
q4   6  7 left-symmetric    128  5 1 readd
z1   5  3 left-symmetric    64   5 1 corrupt
c1   1  2 -                 -    5 2 plain
c2   10 4 n2                64   5 3 plain
c3   1  2 -                 -    7 4 crash
c4   10 2 n2                256  5 2 readd
c5   1  2 -                 -    5 2 kcrash
g1   1  2 -                 -    5 2 cpg
g2   10 2 n2                64   5 3 cpgcrash
g3   1  2 -                 -  124 2 cpgcrash
"
# reverse: name level members "mdadm options" memberMiB clustered(0/1);
# --missing: created without its last member (degraded); --midsync:
# stopped in the middle of its initial resync (a resync offset to go on from)
REVERSE="
m1 1  2 --bitmap-chunk=1M                                     5 0
m2 10 4 --layout=n2,--chunk=64,--assume-clean                 5 0
m3 10 3 --layout=f2,--chunk=128,--bitmap-chunk=256K          5 0
m4 10 4 --layout=o2,--chunk=32,--assume-clean                 5 0
m5 5  4 --layout=left-symmetric,--chunk=32                    5 0
m6 5  3 --layout=parity-first,--chunk=256,--assume-clean      5 0
m7 6  5 --chunk=128,--bitmap-chunk=512K,--assume-clean        5 0
m10 5 4 --layout=right-asymmetric,--chunk=64,--missing        5 0
m11 1 2 --bitmap-chunk=64K,--midsync                          5 0
m8 1  2 --bitmap-chunk=1M,--nodes=2                           5 1
m9 10 2 --layout=n2,--chunk=64,--nodes=2                      5 1
"

wanted() { [ -z "${KMD_ONLY:-}" ] || case " $KMD_ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# members NAME N MiB: N member files of NAME; prints their paths.
members() {
    local i
    for ((i = 0; i < $2; i++)); do
        truncate -s "$3M" "$W/$1.$i"
        printf '%s ' "$W/$1.$i"
    done
}

# clean_check NAME: clraid's own check finds no mismatch.
clean_check() {
    cli check "$1" --wait >"$W/$1.check" 2>&1 || { cat "$W/$1.check"; fail "check $1"; }
    [ "$(st "$1" .last_check.mismatches)" = 0 ] || fail "$1: clraid check found $(st "$1" .last_check.mismatches) mismatches"
}

# model_write NAME OFF LEN BYTE: writes BYTE x LEN at OFF through NBD and
# into the host's model of the array.
model_write() {
    if ! timeout "$T" qemu-io -f raw "$(uri "$1")" -c "write -P $4 $2 $3" >"$W/$1.qio" 2>&1 ||
        grep -qi 'fail\|error' "$W/$1.qio"; then
        cat "$W/$1.qio"
        fail "$1: write at $2"
    fi
    head -c "$3" /dev/zero | tr '\0' "\\$(printf %o "$4")" |
        dd of="$W/$1.model" bs=64K seek="$2" oflag=seek_bytes conv=notrunc status=none
}

# crash_writes NAME DEV: kill -9 of NAME while writes to its last MiBs are
# in flight (DEV slowed down so that some surely are).
crash_writes() {
    local name=$1 size off cmds="" i
    size=$(st "$name" .size_bytes)
    off=$((size - 2 * 1048576))
    cli fault "$name" "$2" delay --ms 40 >/dev/null || fail "$name: fault delay"
    for ((i = 0; i < 32; i++)); do
        cmds="$cmds -c 'write -P 0x6b $((off + i * 65536)) 64k'"
    done
    local w0
    w0=$(st "$name" .counters.writes)
    (eval timeout "$T" qemu-io -f raw "'$(uri "$name")'" "$cmds" >/dev/null 2>&1 || true) &
    local writer=$!
    # the kill comes once writes flow (qemu-io writes one at a time, each
    # 40 ms on the slowed member): the third is then in flight, however
    # long the client took to start
    for ((i = 0; i < 600; i++)); do
        [ "$(st "$name" .counters.writes)" -lt $((w0 + 3)) ] || break
        sleep 0.05
    done
    [ "$i" -lt 600 ] || fail "$name: the writes before the kill did not start"
    engine_crash "$name"
    wait "$writer" || true
    echo "$off"
}

# forward_begin NAME LEVEL N LAYOUT CHUNK MIB NODES EVENT: create NAME,
# start it, write the pattern over all of it, wait for the initial resync.
forward_begin() {
    local name=$1 level=$2 n=$3 layout=$4 chunk=$5 mib=$6 nodes=$7 event=$8
    local files opts
    files=$(members "$name" "$n" "$mib")
    opts="--level=$level --raid-devices=$n --nodes=$nodes --name=$name --bitmap-chunk=$((64 << (n % 4)))"
    [ "$layout" = - ] || opts="$opts --layout=$layout"
    [ "$chunk" = - ] || opts="$opts --chunk=$chunk"
    [ "$nodes" -le 1 ] || opts="$opts --home-cluster=$CLUSTER"
    # blank (sparse) members are in sync: most arrays skip the initial
    # resync, those that meet a failure or a kill -9 run it
    [ "$event" != plain ] || opts="$opts --assume-clean"
    # shellcheck disable=SC2086
    "$CLRAID" create $opts $files >/dev/null || fail "$name: create $opts"
    # shellcheck disable=SC2086
    engine_start "$name" $files
    pattern "$name" "$(st "$name" .size_bytes)" >"$W/$name.model"
    put "$name" "$W/$name.model"
    wait_idle "$name" 60
    st "$name" .last_resync.bytes >"$W/$name.initial"
    echo "$files" >"$W/$name.files"
    echo "$level $n $layout $chunk $mib $nodes $event" >"$W/$name.info"
}

# forward_end NAME: the config's event (failure and rebuild, kill -9 ...),
# the export's sha256, a clean stop; leaves $W/NAME.files (member paths
# for the kernel) and .exp (size sha).
forward_end() {
    local name=$1 level n layout chunk mib nodes event
    local files size sha msha f new off initial i resynced
    local -a m
    read -r level n layout chunk mib nodes event <"$W/$name.info"
    files=$(cat "$W/$name.files")
    size=$(st "$name" .size_bytes)
    read -r -a m <<<"$files"
    case $event in
    readd)
        cli fail "$name" "${m[1]}" >/dev/null || fail "$name: fail"
        cli remove "$name" "${m[1]}" >/dev/null || fail "$name: remove"
        model_write "$name" $((size / 3)) 196608 0x3c
        model_write "$name" $((size - 65536)) 65536 0xc3
        cli re-add "$name" "${m[1]}" >/dev/null || fail "$name: re-add"
        wait_idle "$name" 60 ;;
    spare)
        local -a victims=("${m[0]}")
        [ "$level" != 6 ] || victims+=("${m[2]}")
        for f in "${victims[@]}"; do
            cli fail "$name" "$f" >/dev/null || fail "$name: fail $f"
            cli remove "$name" "$f" >/dev/null || fail "$name: remove $f"
        done
        model_write "$name" $((size / 2)) 131072 0x5a
        for f in "${victims[@]}"; do
            new=$f.new
            truncate -s "${mib}M" "$new"
            cli add "$name" "$new" >/dev/null || fail "$name: add $new"
            files=${files/"$f "/"$new "}
        done
        wait_idle "$name" 60 ;;
    crash | kcrash)
        # md clears bitmap bits a few seconds after their writes: wait for
        # it (started early, see below), so that the crash leaves only the
        # writes in flight dirty
        for ((i = 0; i < 100; i++)); do
            [ "$(st "$name" .bitmap.dirty_chunks)" != 0 ] || break
            sleep 0.2
        done
        [ "$(st "$name" .bitmap.dirty_chunks)" = 0 ] || fail "$name: bitmap still dirty 20 s after the writes"
        off=$(crash_writes "$name" "${m[$((n - 1))]}")
        if [ "$event" = crash ]; then
            # shellcheck disable=SC2086
            engine_start "$name" $files
            wait_idle "$name" 60
            resynced=$(st "$name" .last_resync.bytes)
            initial=$(cat "$W/$name.initial")
            echo "$name: resynced $resynced bytes after kill -9 (initial resync $initial)"
            [ "$resynced" -gt 0 ] || fail "$name: nothing resynced after kill -9"
            [ "$resynced" -lt "$initial" ] || fail "$name: kill -9 cost a full resync: the bitmap was not used"
        fi
        # what was acknowledged before the writes in flight is intact
        head -c "$off" "$W/$name.model" >"$W/$name.head"
        mv "$W/$name.head" "$W/$name.model" ;;
    esac
    if [ "$event" != kcrash ]; then
        state=$(st "$name" .state)
        [ "$state" = clean ] || [ "$state" = active ] || fail "$name: state '$state' before stop"
        sha=$(export_sha "$name")
        msha=$(shaof <"$W/$name.model")
        if [ "$event" = crash ]; then
            timeout "$T" nbdcopy "$(uri "$name")" - | cmp -n "$(stat -c %s "$W/$name.model")" - "$W/$name.model" >/dev/null ||
                fail "$name: acknowledged data lost across kill -9"
        else
            [ "$sha" = "$msha" ] || fail "$name: clraid reads $sha, wrote $msha"
        fi
        [ "$event" = plain ] || clean_check "$name"
        engine_stop "$name"
    else
        sha=unknown
    fi
    if [ "$event" = corrupt ]; then
        # 64 KiB of member 1's data area, 2 MiB in, no longer match parity
        off=$("$CLRAID" examine --json "${m[1]}" | jq -r '.[0].superblock.data_offset')
        head -c 65536 /dev/urandom | dd of="${m[1]}" bs=64K seek=$((off * 512 + 2097152)) \
            oflag=seek_bytes conv=notrunc status=none
        sha=unknown
    fi
    echo "$files" >"$W/$name.files"
    echo "$size $sha" >"$W/$name.exp"
    echo "host: $name raid$level x$n layout=$layout chunk=$chunk ${mib}MiB nodes=$nodes $event: $size bytes sha $sha ($(ms) ms)"
}

# cpg_prep NAME LEVEL N LAYOUT CHUNK MIB NODES EVENT: (in the helper run)
# an array run by two engines with --lock cpg on the private corosync.
cpg_prep() {
    local name=$1 level=$2 n=$3 layout=$4 chunk=$5 mib=$6 nodes=$7 event=$8
    local files opts size half off k i sha cmds=""
    local -a m
    CL_NAME=$name
    files=$(members "$name" "$n" "$mib")
    read -r -a m <<<"$files"
    # 4 KiB bitmap chunks over 120 MiB: each slot's bitmap spans two pages
    opts="--level=$level --raid-devices=$n --nodes=$nodes --name=$name --bitmap-chunk=$((mib < 64 ? 128 : 4)) --home-cluster=$CLUSTER --assume-clean"
    [ "$layout" = - ] || opts="$opts --layout=$layout"
    [ "$chunk" = - ] || opts="$opts --chunk=$chunk"
    # shellcheck disable=SC2086
    "$CLRAID" create $opts $files >/dev/null || fail "$name: create $opts"
    for k in 1 2; do
        cl_start "$k" "${m[@]}"
        cl_wait "$k" '.cluster.slot != null' 30
    done
    for k in 1 2; do
        cl_wait "$k" '(.cluster.members | if type == "array" then length else . end) == 2 and .sync_action == "idle"' 30
    done
    echo "$name: engine 1 in slot $(cl_st 1 .cluster.slot), engine 2 in slot $(cl_st 2 .cluster.slot)"
    size=$(cl_st 1 .size_bytes)
    half=$((size / 2 / 65536 * 65536))
    pattern "$name" "$size" >"$W/$name.model"
    head -c "$half" "$W/$name.model" >"$W/$name.r1"
    tail -c +$((half + 1)) "$W/$name.model" >"$W/$name.r2"
    timeout "$T" qemu-io -f raw "$(cl_uri 1)" -c "write -s $W/$name.r1 0 $half" >/dev/null || fail "$name: write 1"
    timeout "$T" qemu-io -f raw "$(cl_uri 2)" -c "write -s $W/$name.r2 $half $((size - half))" >/dev/null || fail "$name: write 2"
    sha=$(timeout "$T" nbdcopy "$(cl_uri 1)" - | shaof)
    [ "$sha" = "$(shaof <"$W/$name.model")" ] || fail "$name: engine 1 reads $sha, the two engines wrote $(shaof <"$W/$name.model")"
    [ "$sha" = "$(timeout "$T" nbdcopy "$(cl_uri 2)" - | shaof)" ] || fail "$name: the engines read different bytes"
    if [ "$event" = cpgcrash ]; then
        for ((i = 0; i < 100; i++)); do
            [ "$(cl_st 2 .bitmap.dirty_chunks)" != 0 ] || break
            sleep 0.2
        done
        cl_stop 1
        off=$((size - 2 * 1048576))
        cl_cli 2 fault "$name" "${m[$((n - 1))]}" delay --ms 40 >/dev/null || fail "$name: fault delay"
        for ((i = 0; i < 32; i++)); do
            cmds="$cmds -c 'write -P 0x6b $((off + i * 65536)) 64k'"
        done
        (eval timeout "$T" qemu-io -f raw "'$(cl_uri 2)'" "$cmds" >/dev/null 2>&1 || true) &
        k=$!
        # kill once the writes have set slot 1's bits (a fixed 0.4 s was
        # sometimes before the first write on a loaded CI machine); the
        # 40 ms delay keeps them in flight
        for ((i = 0; i < 150; i++)); do
            [ "$(cl_st 2 .bitmap.dirty_chunks)" = 0 ] || break
            sleep 0.1
        done
        [ "$(cl_st 2 .bitmap.dirty_chunks)" != 0 ] || fail "$name: engine 2 set no bit within 15 s of the writes"
        cl_crash 2
        wait "$k" || true
        sha=unknown
        if [ "$mib" -lt 64 ]; then
            # the same left alone to clraid on one node (--lock local, slot
            # 0), on copies: it must resync what slot 1 left dirty
            local -a cp=()
            for f in "${m[@]}"; do
                cp --sparse=always "$f" "$f.local"
                cp+=("$f.local")
            done
            engine_start "$name" "${cp[@]}"
            wait_idle "$name" 60
            k=$(st "$name" '.last_resync.bytes // 0')
            cli check "$name" --wait >/dev/null || fail "$name: local check"
            echo "$name: clraid --lock local over slot 1's crash: resynced $k bytes, check $(st "$name" .last_check.mismatches) mismatches"
            [ "$k" -gt 0 ] || fail "$name: --lock local ignored the dirty bits of slot 1"
            [ "$(st "$name" .last_check.mismatches)" = 0 ] || fail "$name: --lock local: mismatches after the start"
            engine_stop "$name"
            rm -f "${cp[@]}"
        fi
    else
        cl_stop 2
        cl_stop 1
    fi
    echo "$files" >"$W/$name.files"
    echo "$size $sha" >"$W/$name.exp"
    echo "$level $n $layout $chunk $mib $nodes $event" >"$W/$name.info"
    echo "host: $name raid$level x$n layout=$layout chunk=$chunk ${mib}MiB nodes=$nodes $event: $size bytes sha $sha ($(ms) ms)"
}

if [ -n "${KMD_CPG_OUT:-}" ]; then
    cl_corosync_start
    for e in $KMD_CPG_CONFIGS; do
        # shellcheck disable=SC2086
        cpg_prep ${e//:/ }
    done
    exit 0
fi

# ---- the guest side ------------------------------------------------------
# Plan lines, one per array:
#   A NAME SKIP DROP MODE IDX...   assemble members IDX (ubd numbers); check;
#                                  again without DROP members from position
#                                  SKIP, read-only.  MODE rw: resync first.
#   M NAME LEVEL N OPTS IDX...     mdadm --create (OPTS comma separated),
#                                  write pattern file NAME.pat, stop.
cat >"$W/guest.sh" <<'G'
. "$UML_LIB/guest-functions.sh"
modload raid1 raid10 raid456
echo 2000000 >/proc/sys/dev/raid/speed_limit_min
echo 4000000 >/proc/sys/dev/raid/speed_limit_max
if [ -n "${UML_NODES:-}" ]; then
    guest_corosync
    guest_dlm
    modload md-cluster
fi
k=0
devs_of() { for _i; do printf '%s ' "$(ubd "$_i")"; done; }
idle() { grep -qx idle "/sys/block/$1/md/sync_action"; }
assemble() {
    name=$1 skip=$2 drop=$3 mode=$4; shift 4
    md=md$k; k=$((k + 1))
    devs=$(devs_of "$@")
    # mdadm -X on the first member: the dirty bits of every node slot
    mdadm -X "$(ubd "$1")" >"$UML_WORK/$name.X" 2>&1
    r "$name.dirty" "$(awk '/Bitmap :/ { for (i = 2; i <= NF; i++) if ($i == "dirty") s += $(i - 1) } END { print s + 0 }' "$UML_WORK/$name.X")"
    r "$name.bits" "$(awk '/Bitmap :/ { s += $3 } END { print s + 0 }' "$UML_WORK/$name.X")"
    r "$name.slots" "$(awk '/Bitmap :/ { for (i = 2; i <= NF; i++) if ($i == "dirty") printf "%s ", $(i - 1) }' "$UML_WORK/$name.X")"
    # shellcheck disable=SC2086
    if ! mdadm -A "/dev/$md" --run $devs >"$UML_WORK/$name.asm" 2>&1; then
        # Seen once in CI on a loaded host, not again with the same seed:
        # say what mdadm said, and try once more on a fresh md device; a
        # format fault fails both times.
        echo "$name: first assembly failed: $(tr '\n' ' ' <"$UML_WORK/$name.asm")"
        mdadm --stop "/dev/$md" >/dev/null 2>&1
        md=md$k; k=$((k + 1))
        # shellcheck disable=SC2086
        if ! mdadm -A "/dev/$md" --run $devs >"$UML_WORK/$name.asm" 2>&1; then
            cat "$UML_WORK/$name.asm"; r "$name.asm" fail; return
        fi
        r "$name.asm_retry" 1
    fi
    r "$name.asm" ok
    # anything mdadm said besides "started with N drives"
    r "$name.asmnote" "$(grep -v 'has been started with' "$UML_WORK/$name.asm" | tr '\n' ' ')"
    r "$name.resync_start" "$(cat /sys/block/$md/md/resync_start)"
    r "$name.size" "$(blockdev --getsize64 /dev/$md)"
    r "$name.bitmap" "$(mdadm --detail "/dev/$md" | sed -n 's/^ *Intent Bitmap : //p')"
    if [ "$mode" != ro ]; then
        mdadm --readwrite "/dev/$md"
        sleep 0.5
        wait_for 120 idle "$md" || r "$name.resync" timeout
        r "$name.resync" "$(cat /sys/block/$md/md/last_sync_action)"
    fi
    r "$name.sha" "$(sha256sum </dev/$md | cut -c1-64)"
    if [ "$mode" = big ]; then
        # a big array: check its last 4 MiB only (where the dirty bits were)
        echo $(($(blockdev --getsz /dev/$md) - 8192)) >"/sys/block/$md/md/sync_min"
    fi
    echo check >"/sys/block/$md/md/sync_action"
    wait_for 120 idle "$md" || r "$name.check" timeout
    r "$name.last" "$(cat /sys/block/$md/md/last_sync_action)"
    r "$name.mismatch" "$(cat /sys/block/$md/md/mismatch_cnt)"
    grep -A3 "^$md" /proc/mdstat
    mdadm --stop "/dev/$md" || r "$name.stop" fail
    # what the kernel left in every slot, as mdadm reads it
    r "$name.slots_after" "$(mdadm -X "$(ubd "$1")" 2>&1 | awk '/Bitmap :/ { for (i = 2; i <= NF; i++) if ($i == "dirty") printf "%s ", $(i - 1) }')"
    [ "$mode" != big ] || return 0
    # degraded, read-only: leave out DROP members from position SKIP.  On a
    # fresh md device: md removes a stopped one's node later, from a work
    # queue, and once in CI (loaded host) that removal came after the
    # reassembly on the same minor, so the read found no device.
    md=md$k; k=$((k + 1))
    n=$#; i=0; kept=""
    for x; do
        d=$(( (i - skip + n) % n ))
        [ "$d" -lt "$drop" ] || kept="$kept $(ubd "$x")"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    if ! mdadm -A "/dev/$md" --run --readonly $kept >"$UML_WORK/$name.dasm" 2>&1; then
        cat "$UML_WORK/$name.dasm"; r "$name.dasm" fail; return
    fi
    r "$name.dasmnote" "$(grep -v 'has been started with' "$UML_WORK/$name.dasm" | tr '\n' ' ')"
    r "$name.degraded" "$(cat /sys/block/$md/md/degraded)"
    r "$name.dsha" "$(sha256sum </dev/$md | cut -c1-64)"
    mdadm --stop "/dev/$md" || r "$name.stop" fail
}
create() {
    name=$1 level=$2 n=$3 opts=$4; shift 4
    md=md$k; k=$((k + 1))
    devs=$(devs_of "$@")
    # our own words: --missing (the last member missing: degraded from the
    # start), --midsync (stopped in the middle of the initial resync)
    missing=0 midsync=0
    case $opts in *--missing*) missing=1 devs="$devs missing" ;; esac
    case $opts in *--midsync*) midsync=1 ;; esac
    opts=$(echo "$opts" | sed 's/,--missing//; s/,--midsync//')
    if [ "$midsync" = 1 ]; then
        # a resync of 100 KB/s at most from its first sector: set on the
        # array after --create, a limit came after the first burst, and on
        # an idle host the resync was half done by the time the pattern was
        # written (and done under load before the freeze below)
        echo 1 >/proc/sys/dev/raid/speed_limit_min
        echo 100 >/proc/sys/dev/raid/speed_limit_max
    fi
    # shellcheck disable=SC2086
    if ! mdadm --create "/dev/$md" --run --metadata=1.2 --level="$level" --raid-devices="$n" \
        --bitmap="$(case "$opts" in *--nodes*) echo clustered ;; *) echo internal ;; esac)" \
        $(echo "$opts" | tr , ' ') $devs >"$UML_WORK/$name.create" 2>&1; then
        cat "$UML_WORK/$name.create"; r "$name.create" fail; return
    fi
    size=$(blockdev --getsize64 "/dev/$md")
    r "$name.size" "$size"
    head -c "$size" "$UML_WORK/$name.pat" | dd of="/dev/$md" bs=1M iflag=fullblock oflag=direct status=none ||
        r "$name.write" fail
    if [ "$midsync" = 1 ]; then
        # where the resync is, and freeze it right there: the reads below
        # (sha256 of the whole array) would otherwise race the rest of it
        sync_at="$(cat /sys/block/$md/md/sync_action) $(cat /sys/block/$md/md/sync_completed | tr -d ' ')"
        echo frozen >"/sys/block/$md/md/sync_action"
        echo 1000 >/proc/sys/dev/raid/speed_limit_min
        echo 200000 >/proc/sys/dev/raid/speed_limit_max
        r "$name.sync_at_stop" "$sync_at"
    else
        wait_for 120 idle "$md" || r "$name.resync" timeout
    fi
    r "$name.sha" "$(sha256sum </dev/$md | cut -c1-64)"
    r "$name.degraded" "$(cat /sys/block/$md/md/degraded)"
    mdadm --stop "/dev/$md" || r "$name.stop" fail
}
while read -r what rest; do
    # shellcheck disable=SC2086
    case $what in
    A) assemble $rest ;;
    M) create $rest ;;
    esac
done <"$UML_WORK/$NODE.plan"
r done yes
G

# ---- jobs ----------------------------------------------------------------
# The host work of the arrays is independent: it runs KMD_JOBS at a time.
JOBS=${KMD_JOBS:-3}
# job NAME CMD...: runs CMD in the background, its output in $W/NAME.log and
# its status in $W/NAME.rc.
JOB_PIDS=()
job_slots() {
    local p n=0
    for p in "${JOB_PIDS[@]}"; do ! kill -0 "$p" 2>/dev/null || n=$((n + 1)); done
    echo "$n"
}
# Jobs wait in JOBQ (FIFO) for a free slot: job_pump starts them.
JOBQ=()
job() {
    rm -f "$W/$1.rc"
    JOBQ+=("$(printf '%q ' "$@")")
    job_pump
}
# shellcheck disable=SC2120
job_pump() {
    local name
    while [ ${#JOBQ[@]} -gt 0 ] && [ "$(job_slots)" -lt "$JOBS" ]; do
        eval "set -- ${JOBQ[0]}"
        JOBQ=("${JOBQ[@]:1}")
        name=$1
        shift
        # (set -e is on: the status is taken with ||, or a failed job
        # would end before writing it and the boot loop wait for it forever)
        { jrc=0; (trap - EXIT INT TERM; "$@") </dev/null >"$W/$name.log" 2>&1 || jrc=$?; echo "$jrc" >"$W/$name.rc"; } </dev/null &
        JOB_PIDS+=("$!")
    done
}
# jobs_wait: until every job ended.
jobs_wait() {
    local p
    while [ ${#JOBQ[@]} -gt 0 ]; do
        job_pump
        sleep 0.1
    done
    for p in "${JOB_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    JOB_PIDS=()
}
# job_out NAME: prints its output; fails the test if it failed.
job_out() {
    cat "$W/$1.log"
    [ "$(cat "$W/$1.rc" 2>/dev/null)" = 0 ] || fail "$1: host side failed (status $(cat "$W/$1.rc" 2>/dev/null))"
}

# in_pass CLUSTERED(0/1) PASS: the config belongs to this pass.
in_pass() { if [ "$1" = 1 ]; then [ "$2" = cluster ]; else [ "$2" = single ]; fi; }
FWD=()
REV=()
while read -r name level n layout chunk mib nodes event; do
    [ -n "$name" ] || continue
    wanted "$name" || continue
    FWD+=("$name $level $n $layout $chunk $mib $nodes $event")
    cleanup_fn "engine_kill $name"
done <<<"$CONFIGS"
while read -r name level n opts mib cl; do
    [ -n "$name" ] || continue
    wanted "$name" || continue
    REV+=("$name $level $n $opts $mib $cl")
    cleanup_fn "engine_kill $name"
done <<<"$REVERSE"

# forward_all NAME LEVEL N LAYOUT CHUNK MIB NODES EVENT
forward_all() {
    forward_begin "$@"
    forward_end "$1"
}
# crash_end NAME: forward_end once forward_begin's job ended.
crash_end() {
    local i
    for ((i = 0; i < 600; i++)); do
        [ ! -e "$W/b.$1.rc" ] || break
        sleep 0.1
    done
    [ "$(cat "$W/b.$1.rc" 2>/dev/null)" = 0 ] || fail "$1: was not made"
    forward_end "$1"
}

# 1. the host makes every array; those that get a kill -9 are written
#    first, and get it last: md clears bitmap bits seconds after the
#    writes, and the kill must find only its own writes dirty
cpg=""
for e in "${FWD[@]}"; do
    case $e in *" cpg" | *" cpgcrash") cpg="$cpg ${e// /:}" ;; esac
done
[ -z "$cpg" ] || job cpg env KMD_CPG_OUT="$W" KMD_CPG_CONFIGS="$cpg" bash "$0"
for e in "${FWD[@]}"; do
    # shellcheck disable=SC2086
    case $e in *" crash" | *" kcrash") job "b.${e%% *}" forward_begin $e ;; esac
done
for e in "${FWD[@]}"; do
    # shellcheck disable=SC2086
    case $e in *crash | *" cpg") ;; *) job "${e%% *}" forward_all $e ;; esac
done
for e in "${FWD[@]}"; do
    case $e in *" crash" | *" kcrash") job "${e%% *}" crash_end "${e%% *}" ;; esac
done
for e in "${REV[@]}"; do
    # shellcheck disable=SC2086
    set -- $e
    # --missing: one member fewer
    case $4 in
    *--missing*) members "$1" $(($3 - 1)) "$5" >"$W/$1.files" ;;
    *) members "$1" "$3" "$5" >"$W/$1.files" ;;
    esac
    pattern "$1" $(($3 * $5 * 1048576)) >"$UML_DIR/$1.pat"
done

# 2. the guests: the arrays packed into instances of up to 16 members (the
#    clustered ones into instances that run corosync + the DLM), those
#    made first in the first ones; an instance boots once its arrays are
#    made (ready), BOOT_JOBS at once
BOOTS=""
PLAN_NAMES=""
PLAN_N=0
boot_n=0
cboot_n=0
# plan_next CLUSTERED: the pending plan is complete; the next one is for
# another instance (k1, k2 ...; the clustered arrays: kc, kc2, ... each a
# one-node cluster of its own).
plan_next() {
    local node
    [ "$PLAN_N" -gt 0 ] || return 0
    if [ "$1" = 1 ]; then
        cboot_n=$((cboot_n + 1))
        [ "$cboot_n" -le 3 ] || fail "the clustered arrays need more than 3 instances"
        node=$(echo "kc kc2 kc3" | cut -d' ' -f"$cboot_n")
    else
        boot_n=$((boot_n + 1))
        node=k$boot_n
    fi
    echo "$PLAN_NAMES" >"$UML_DIR/$node.names"
    BOOTS="$BOOTS $node"
    PLAN_NAMES=""
    PLAN_N=0
}
# plan_add CLUSTERED NAME MEMBERS: one array in the pending plan.
plan_add() {
    [ $((PLAN_N + $3)) -le 16 ] || plan_next "$1"
    PLAN_NAMES="$PLAN_NAMES $2"
    PLAN_N=$((PLAN_N + $3))
}
# fwd_line NAME: the plan line of a forward array.
fwd_line() {
    local name=$1 level n mib event drop skip mode
    read -r level n _ _ mib _ event <"$W/$name.info"
    drop=1
    [ "$level" != 6 ] || drop=2
    skip=$((${#name} % n))
    mode=ro
    case $event in kcrash | cpgcrash) mode=rw ;; esac
    # over 64 MiB: no degraded read, a check of the end only (time)
    [ "$mib" -lt 64 ] || mode=big
    echo "A $name $skip $drop $mode"
}
# maker NAME: the job that makes forward array NAME.
maker() {
    case " $cpg " in *" $1:"*) echo cpg ;; *) echo "$1" ;; esac
}
# is_rev NAME: NAME is made by mdadm in the guest.
is_rev() {
    local e
    for e in "${REV[@]}"; do [ "${e%% *}" != "$1" ] || return 0; done
    return 1
}
# ready NODE: every array of NODE is made (fails if one could not be).
ready() {
    local name j
    local -a names
    read -r -a names <"$UML_DIR/$1.names"
    for name in "${names[@]}"; do
        ! is_rev "$name" || continue
        [ ! -e "$W/$name.exp" ] || continue
        j=$(maker "$name")
        if [ -e "$W/$j.rc" ]; then
            job_out "$j"
            fail "$name: its host job ended without making it"
        fi
        return 1
    done
}
# show JOB: prints JOB's output once, if it ended (fails if it failed).
show() {
    [ ! -e "$W/$1.shown" ] && [ -e "$W/$1.rc" ] || return 0
    job_out "$1"
    touch "$W/$1.shown"
}
# plan_write NODE: NODE's plan lines and member list, its arrays' host logs.
plan_write() {
    local target=$1 name idx f e j
    local -a files=() names mem
    : >"$UML_DIR/$target.plan"
    read -r -a names <"$UML_DIR/$1.names"
    for name in "${names[@]}"; do
        idx=""
        read -r -a mem <"$W/$name.files" || true
        for f in "${mem[@]}"; do
            idx="$idx ${#files[@]}"
            files+=("$f")
        done
        if is_rev "$name"; then
            for e in "${REV[@]}"; do
                # shellcheck disable=SC2086
                set -- $e
                [ "$1" != "$name" ] || echo "M $1 $2 $3 $4$idx" >>"$UML_DIR/$target.plan"
            done
        else
            echo "$(fwd_line "$name")$idx" >>"$UML_DIR/$target.plan"
            j=$(maker "$name")
            show "$j"
            case $(cat "$W/$name.info") in
            *" crash" | *" kcrash") show "b.$name" ;;
            esac
        fi
    done
    printf '%s\n' "${files[@]}" >"$UML_DIR/$target.members"
}

uml_net kc kc2 kc3
# the arrays made first go first
order() {
    local e
    for e in "${FWD[@]}"; do case $e in *crash | *" cpg") ;; *) echo "${e// /:}" ;; esac; done
    for e in "${FWD[@]}"; do case $e in *" crash" | *" kcrash") echo "${e// /:}" ;; esac; done
    for e in "${FWD[@]}"; do case $e in *" cpg" | *" cpgcrash") echo "${e// /:}" ;; esac; done
}
for pass in single cluster; do
    for e in $(order) "${REV[@]// /:}"; do
        # shellcheck disable=SC2086
        set -- ${e//:/ }
        if [ $# = 8 ]; then cl=$(($7 > 1)); else cl=$6; fi
        in_pass "$cl" "$pass" || continue
        plan_add "$cl" "$1" "$3"
    done
    if [ "$pass" = cluster ]; then plan_next 1; else plan_next 0; fi
done

# ---- 3. compare ----------------------------------------------------------
# rr NAME KEY: the result "R NAME.KEY value" of the instance that ran NAME.
rr() { awk -v k="$1.$2" '$1 == k { $1 = ""; sub(/^ /, ""); v = $0 } END { print v }' "$W/$1.results"; }
problem() { echo "DISAGREE: $*"; }

# verify_fwd NAME: what the kernel read of a clraid array; then clraid
# over what the kernel left.
verify_fwd() {
    local name=$1 size sha level n layout chunk mib nodes event what ksize ksha mm dsha kbm hsha s0 s1 cslots
    read -r size sha <"$W/$name.exp"
    read -r level n layout chunk mib nodes event <"$W/$name.info"
    what="$name (raid$level x$n layout=$layout chunk=$chunk nodes=$nodes $event)"
    [ "$(rr "$name" asm)" = ok ] || { problem "$what: kernel md did not assemble it"; return 0; }
    [ -z "$(rr "$name" asm_retry)" ] || echo "note: $name assembled on the second try (the first failure is in the guest's output)"
    ksize=$(rr "$name" size) ksha=$(rr "$name" sha) mm=$(rr "$name" mismatch) dsha=$(rr "$name" dsha)
    echo "kernel: $name size $ksize sha $ksha bitmap $(rr "$name" bitmap) dirty $(rr "$name" dirty)/$(rr "$name" bits) (per slot: $(rr "$name" slots)) resync_start $(rr "$name" resync_start) check $(rr "$name" last) mismatch_cnt $mm degraded $(rr "$name" degraded) dsha $dsha"
    [ -z "$(rr "$name" asmnote)$(rr "$name" dasmnote)" ] ||
        echo "note: mdadm -A $name said: $(rr "$name" asmnote) / degraded: $(rr "$name" dasmnote)"
    [ "$ksize" = "$size" ] || problem "$what: kernel size $ksize, clraid $size"
    [ "$(rr "$name" last)" = check ] || problem "$what: the kernel's check did not run ($(rr "$name" last))"
    kbm=Internal
    [ "$nodes" -le 1 ] || kbm="Internal(Clustered)"
    [ "$(rr "$name" bitmap)" = "$kbm" ] || problem "$what: kernel bitmap '$(rr "$name" bitmap)', expected $kbm"
    if [ "$event" = corrupt ]; then
        [ "${mm:-0}" -gt 0 ] || problem "$what: a corrupted member gave mismatch_cnt $mm"
        return 0
    fi
    [ "$mm" = 0 ] || problem "$what: kernel mismatch_cnt $mm"
    if [ "$event" = kcrash ] || [ "$event" = cpgcrash ]; then
        [ "$(rr "$name" dirty)" -gt 0 ] || problem "$what: no dirty bits after kill -9"
        if [ "$event" = cpgcrash ]; then
            # "dirty bits of slot 0, slot 1 ...": the crashed engine's are in slot 1
            read -r s0 s1 _ <<<"$(rr "$name" slots)"
            if [ "${s0:-x}" != 0 ] || [ "${s1:-0}" -le 0 ]; then
                problem "$what: dirty bits per slot $(rr "$name" slots): expected only slot 1's"
            fi
        fi
        [ "$(rr "$name" dirty)" -lt "$(rr "$name" bits)" ] || problem "$what: every bit dirty after kill -9"
        [ "$(rr "$name" resync)" = resync ] || problem "$what: the kernel did not resync ($(rr "$name" resync))"
    else
        [ "$(rr "$name" dirty)" = 0 ] || problem "$what: $(rr "$name" dirty) dirty bits after a clean stop"
        [ "$(rr "$name" resync_start)" = none ] || problem "$what: resync_start $(rr "$name" resync_start) after a clean stop"
        [ "$ksha" = "$sha" ] || problem "$what: kernel reads $ksha, clraid $sha"
    fi
    if [ "$event" = cpgcrash ]; then
        # the kernel's resync started where slot 1's dirty bits begin
        case $(rr "$name" resync_start) in
        none | 0 | "") problem "$what: resync_start $(rr "$name" resync_start): slot 1's bits not taken" ;;
        esac
    fi
    if [ "$mib" -lt 64 ]; then
        [ "$dsha" = "$ksha" ] || problem "$what: degraded kernel read $dsha, full $ksha"
        [ "$(rr "$name" degraded)" -ge 1 ] || problem "$what: degraded count $(rr "$name" degraded)"
    fi
    # the bitmap the kernel left, as clraid reads it, must be what mdadm
    # read (after the degraded read-only assembly, which writes nothing)
    cslots=$("$CLRAID" examine --json "$(head -c -1 "$W/$name.files" | cut -d' ' -f1)" |
        jq -r '[.[0].bitmap.slots[].dirty_bits | tostring] | join(" ")')
    echo "bitmap after kernel: $name dirty bits per slot: mdadm $(rr "$name" slots_after)/ clraid $cslots"
    [ "$cslots" = "$(rr "$name" slots_after | sed 's/ *$//')" ] ||
        problem "$what: after the kernel, mdadm reads dirty bits per slot $(rr "$name" slots_after), clraid $cslots"
    # shellcheck disable=SC2046
    [ -z "${KMD_DEBUG:-}" ] || cp --sparse=always $(cat "$W/$name.files") "$KMD_DEBUG"/
    # shellcheck disable=SC2046
    engine_start "$name" $(cat "$W/$name.files")
    wait_idle "$name" 60
    hsha=$(export_sha "$name")
    echo "clraid after kernel: $name sha $hsha state $(st "$name" .state) events $(st "$name" .events) resynced $(st "$name" '.last_resync.bytes // 0') bytes"
    [ "$hsha" = "$ksha" ] || problem "$what: clraid reads $hsha after the kernel ran it, kernel read $ksha"
    engine_stop "$name"
}

# verify_rev NAME LEVEL N OPTS: clraid over an array mdadm made.
verify_rev() {
    local name=$1 opts=$4 what="$1 (mdadm raid$2 x$3 $4)" ksize ksha psha hsize hsha dsha ro
    [ "$(rr "$name" create)" != fail ] || { problem "$what: mdadm --create failed"; return 0; }
    ksize=$(rr "$name" size) ksha=$(rr "$name" sha)
    psha=$(head -c "$ksize" "$UML_DIR/$name.pat" | shaof)
    echo "kernel: $name created size $ksize sha $ksha"
    [ "$ksha" = "$psha" ] || problem "$what: the kernel read $ksha, the pattern is $psha"
    # shellcheck disable=SC2046
    set -- $(cat "$W/$name.files")
    ro=$("$CLRAID" examine --json "$1" | jq -r '"\(.[0].superblock.resync_offset // "none") \(.[0].bitmap.slots[0].dirty_bits)"')
    if ! timeout "$T" "$CLRAID" start "$name" "$@" --run-dir "$RUN" >"$W/$name.start" 2>&1; then
        problem "$what: clraid start refused: $(cat "$W/$name.start")"
        return 0
    fi
    wait_idle "$name" 60
    hsize=$(st "$name" .size_bytes)
    hsha=$(export_sha "$name")
    case $opts in
    *--midsync*)
        # md leaves what it did not resync dirty in the bitmap
        echo "kernel: $name stopped at $(rr "$name" sync_at_stop) (done/total sectors), resync offset, dirty bits: $ro"
        case $ro in
        *" 0") problem "$what: stopped in the middle of its resync with a clean bitmap: $ro" ;;
        esac
        [ "$(st "$name" '.last_resync.bytes // 0')" -gt 0 ] || problem "$what: clraid did not go on with the resync"
        ;;
    esac
    if [ "$(rr "$name" degraded)" != 0 ]; then
        # created degraded: clraid runs it degraded, nothing more to lose
        [ "$(st "$name" .state)" = degraded ] || problem "$what: clraid state $(st "$name" .state), the kernel's was degraded"
        dsha=$hsha
    else
        clean_check "$name"
        cli fail "$name" "$2" >/dev/null || fail "$name: fail $2"
        dsha=$(export_sha "$name")
    fi
    echo "clraid: $name size $hsize sha $hsha resynced $(st "$name" '.last_resync.bytes // 0') bytes, degraded ($(st "$name" .state)) sha $dsha"
    [ "$hsize" = "$ksize" ] || problem "$what: clraid size $hsize, kernel $ksize"
    [ "$hsha" = "$ksha" ] || problem "$what: clraid reads $hsha, kernel wrote $ksha"
    [ "$dsha" = "$ksha" ] || problem "$what: clraid reads $dsha degraded, kernel wrote $ksha"
    engine_stop "$name"
}

# verify NAME: verify_fwd or verify_rev, whichever NAME is.
verify() {
    local e name=$1
    for e in "${REV[@]}"; do
        # shellcheck disable=SC2086
        set -- $e
        [ "$1" != "$name" ] || { verify_rev "$1" "$2" "$3" "$4"; return; }
    done
    verify_fwd "$name"
}

# BOOT_JOBS instances at once; the host verifies the arrays of an instance
# as soon as it powered off.
BOOT_JOBS=${KMD_BOOT_JOBS:-3}
pending=$BOOTS
active=""
while [ -n "$pending$active" ]; do
    job_pump
    for node in $active; do
        ! kill -0 "$(cat "$UML_DIR/$node.bgpid")" 2>/dev/null || continue
        rc=0
        uml_wait "$node" 5 || rc=$?
        echo "boot $node done: exit $rc ($(ms) ms)"
        if [ "$rc" != 0 ] || [ "$(uml_r "$node" "done")" != yes ]; then
            uml_console_tail "$node" 60
            fail "$node: exit $rc"
        fi
        active=$(for b in $active; do [ "$b" = "$node" ] || printf '%s ' "$b"; done)
        while read -r _ NAME _; do
            uml_results "$node" >"$W/$NAME.results"
            job "v.$NAME" verify "$NAME"
        done <"$UML_DIR/$node.plan"
    done
    # shellcheck disable=SC2086
    set -- $active
    node=""
    if [ $# -lt "$BOOT_JOBS" ]; then
        for b in $pending; do
            if ready "$b"; then node=$b; break; fi
        done
    fi
    if [ -n "$node" ]; then
        pending=$(for b in $pending; do [ "$b" = "$node" ] || printf '%s ' "$b"; done)
        plan_write "$node"
        mapfile -t members_of <"$UML_DIR/$node.members"
        # a clustered instance is a cluster of its own: UML_NODES names
        # only itself
        UML_NODES=$(for n in $UML_NODES; do [ "${n%%:*}" != "$node" ] || echo "$n"; done) \
            uml_start "$node" "$W/guest.sh" "${members_of[@]}"
        active="$active $node"
        echo "boot $node: $(grep -c . "$UML_DIR/$node.plan") arrays, ${#members_of[@]} members ($(ms) ms)"
        continue
    fi
    sleep 0.2
done
jobs_wait
# the host jobs' output not shown yet (the cpg helper may end after its
# arrays went to an instance)
show cpg
for e in "${FWD[@]}"; do
    show "${e%% *}"
    show "b.${e%% *}"
done
failed=0
for e in "${FWD[@]}" "${REV[@]}"; do
    cat "$W/v.${e%% *}.log" 2>/dev/null || true
    [ "$(cat "$W/v.${e%% *}.rc" 2>/dev/null)" = 0 ] || { echo "FAIL: verifying ${e%% *} failed"; failed=$((failed + 1)); }
done >"$W/verify.out"
cat "$W/verify.out"
bad=$(grep -c '^DISAGREE' "$W/verify.out" || true)
[ "$failed" = 0 ] || fail "$failed verifications did not complete"
echo "total $(ms) ms"
[ "$bad" = 0 ] || fail "$bad disagreements between kernel md and clraid (seed $SEED)"
echo "PASS: kernel md and clraid agree on ${#FWD[@]} clraid arrays and ${#REV[@]} mdadm arrays"
