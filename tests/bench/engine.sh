#!/bin/bash
# Engine benchmark: clraid RAID1/5/6 served by nbdkit, side by side with
# the raw member file, nbdkit's memory and file plugins (the NBD transport
# ceiling), a two-file mirror with no engine behind it (twin-file: the
# ceiling of any mirror served by nbdkit), RAID6's read-modify-write alone
# over six files (rmw6-file, its ceiling) and qemu-storage-daemon's quorum
# mirror, all driven by fio's nbd
# engine in one run.  Prints tables of IOPS/bandwidth, ratios against
# nbdkit-memory, server CPU seconds per GB moved, and PASS/FAIL per target.
# Not part of `make check`; see tests/bench/README.md.
#
#   tests/bench/engine.sh [--quick] [--rows REGEX] [--out DIR]
#
# Run as root from the top of a built tree.  Environment overrides:
#   BENCH_DIRS      member directories          (default "/dev/shm /var/tmp")
#   BENCH_SIZE      working set per target, MiB (default 1024; 256 quick)
#   BENCH_RUNTIME   measured seconds per job    (default 8 after a 1 s ramp;
#                   1.5 after 0.5 s with --quick)
#   BENCH_NOBITMAP_CREATE_ARGS / BENCH_NOBITMAP_START_ARGS
#                   extra `clraid create` / `clraid start` arguments that
#                   give an array without a write-intent bitmap
set -u

usage() {
    echo "usage: tests/bench/engine.sh [--quick] [--rows REGEX] [--out DIR]" >&2
    exit 2
}

quick=0
rows_re=.
out=
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --rows) [ $# -ge 2 ] || usage; rows_re=$2; shift ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
    -h|--help) usage ;;
    *) usage ;;
    esac
    shift
done

# Each job: a short unmeasured ramp (connection set-up, thread wake-up),
# then RT measured seconds.
if [ "$quick" = 1 ]; then
    : "${BENCH_SIZE:=256}" "${BENCH_RUNTIME:=1.5}"
    RAMP=500ms RAMP_S=0.5
else
    : "${BENCH_SIZE:=1024}" "${BENCH_RUNTIME:=8}"
    RAMP=1s RAMP_S=1
fi
: "${BENCH_DIRS:=/dev/shm /var/tmp}"
: "${BENCH_NOBITMAP_CREATE_ARGS:=}" "${BENCH_NOBITMAP_START_ARGS:=}"
WS=$((BENCH_SIZE * 1024 * 1024))            # bytes every target exposes to fio
RT=$BENCH_RUNTIME
RT_MS=$(echo "$RT * 1000 / 1" | bc)
: "${CLRAID:=$(pwd)/clraid}"
# `clraid start` looks for the installed plugin; prefer the one just built.
if [ -z "${CLRAID_NBDKIT_PLUGIN:-}" ] && [ -f .libs/nbdkit-clraid-plugin.so ]; then
    CLRAID_NBDKIT_PLUGIN=$(pwd)/.libs/nbdkit-clraid-plugin.so
    export CLRAID_NBDKIT_PLUGIN
fi
HZ=$(getconf CLK_TCK)
# the twin-file and rmw6-file baselines (tests/bench/nbdkit_twinfile.c,
# nbdkit_rmw6file.c), built by make
TWIN_PLUGIN=$(pwd)/tests/bench/.libs/nbdkit-twinfile-plugin.so
RMW6_PLUGIN=$(pwd)/tests/bench/.libs/nbdkit-rmw6file-plugin.so

die() { echo "engine.sh: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root"
for t in fio jq nbdkit bc; do
    command -v "$t" >/dev/null || die "$t is not installed"
done
fio --enghelp 2>/dev/null | grep -qw nbd ||
    die "this fio has no nbd ioengine (fio --enghelp); build fio with libnbd"
[ -x "$CLRAID" ] || die "no ./clraid here: run from the top of a built tree"

stamp=$(date +%Y%m%d-%H%M%S)
[ -n "$out" ] || out=$(dirname "$0")/results/$stamp
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
TSV=$out/results.tsv
TABLE=$out/table.txt
LOG=$out/log.txt
: >"$LOG"

# ---------------------------------------------------------------- cleanup
WORK=$(mktemp -d /tmp/clraid-bench.XXXXXX)   # sockets, pidfiles, fio output
memdirs=()                                  # per-dir member folders we made
servers=()                                  # "pidfile|stop command" entries

# alive PID: the process exists and is not a zombie awaiting its reaper.
alive() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    s=${s##*) }
    [ "${s%% *}" != Z ]
}

# Kills PID, TERM then KILL, and waits for it.
kill_pid() {
    local pid=$1 i
    [ -n "$pid" ] && alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 100); do
        alive "$pid" || return 0
        sleep 0.1
    done
    echo "engine.sh: pid $pid ignored SIGTERM; killing" >&2
    kill -KILL "$pid" 2>/dev/null
    sleep 0.2
}

stop_servers() {
    local e pid cmd
    for e in "${servers[@]}"; do
        # Read the pid first: a clean stop may remove its pidfile.
        pid=$(cat "${e%%|*}" 2>/dev/null); cmd=${e#*|}
        [ -n "$cmd" ] && timeout 30 $cmd >>"$LOG" 2>&1
        kill_pid "$pid"
    done
    servers=()
}

fio_pid=
cleanup() {
    trap '' INT TERM
    [ -n "$fio_pid" ] && kill "$fio_pid" 2>/dev/null && wait "$fio_pid"
    stop_servers
    local d
    for d in "${memdirs[@]}"; do rm -rf "$d"; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "engine.sh: interrupted" >&2; exit 130' INT TERM

# ---------------------------------------------------------------- jobs
JOBS=(rw4k_q1 rw4k_q32 rr4k_q1 rr4k_q32 sw1M sr1M)
declare -A JOB_ARGS=(
    [rw4k_q1]="--rw=randwrite --bs=4k --iodepth=1"
    [rw4k_q32]="--rw=randwrite --bs=4k --iodepth=32"
    [rr4k_q1]="--rw=randread --bs=4k --iodepth=1"
    [rr4k_q32]="--rw=randread --bs=4k --iodepth=32"
    [sw1M]="--rw=write --bs=1M --iodepth=8"
    [sr1M]="--rw=read --bs=1M --iodepth=8"
)
declare -A JOB_HEAD=(
    [rw4k_q1]="4k rw q1" [rw4k_q32]="4k rw q32" [rr4k_q1]="4k rr q1"
    [rr4k_q32]="4k rr q32" [sw1M]="1M sw MB/s" [sr1M]="1M sr MB/s"
)

declare -A R_IOPS R_BW R_CPU R_GB R_OTHER   # keyed "row|job"
declare -A ROW_NOTE                   # row -> why it was not measured
declare -A nmem                       # runs averaged into nbdkit-memory
ROWS=()                               # in display order

printf 'row\tdir\tjob\tiops\tbw_bytes\tio_bytes\tserver_cpu_s\tcpu_s_per_gb\tratio_vs_mem\tother_cpu_pct\tstatus\n' >"$TSV"

# CPU seconds (utime+stime, all threads) of PID so far.
cpu_of() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    s=${s##*) }                       # drop "pid (comm) "; fields shift by 2
    set -- $s
    echo "scale=4; (${12} + ${13}) / $HZ" | bc
}

# CPU seconds the whole machine has been busy (not idle or iowait).
NCPU=$(nproc)
busy_s() {
    awk -v hz="$HZ" '/^cpu / { printf "%.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat
}

# fio_json FILE JQ: one value from fio's JSON output (notes before "{" skipped).
fio_json() { sed -n '/^{/,$p' "$1" | jq -r "$2" 2>/dev/null; }

# fill_target ROW TARGETARGS...: writes the working set once with 1 MiB
# writes, so reads hit written data, not holes.
fill_target() {
    local row=$1; shift
    if ! fio --name=fill "$@" --size=$WS --rw=write --bs=1M --iodepth=8 \
            --output-format=json --output="$WORK/fill.json" >>"$LOG" 2>&1; then
        ROW_NOTE[$row]="fill failed (see $LOG)"
        return 1
    fi
}

# run_jobs ROW TARGETARGS...: fills the target, then runs every job on it.
#   TARGETARGS are fio options naming the target (engine, uri or filename).
run_jobs() {
    local row=$1 job; shift
    fill_target "$row" "$@" || return 1
    for job in "${JOBS[@]}"; do
        run_job "$row" "$job" "$@"
    done
}

# run_job ROW JOB TARGETARGS...: one measured job, into R_*[ROW|JOB].
#   Uses $cur_pid (server process, or empty) for the CPU figures.
run_job() {
    local row=$1 job=$2; shift 2
    local o c0 c1 b0 b1 t0 t1 iops bw bytes cpu fcpu
    o=$WORK/$row.$job.json
    # Each job starts with no one's dirty pages in flight: on a disk,
    # the writeback of a buffered row (nbdkit-file) ran into the next
    # row's jobs, and made RAID1 with its bitmap (measured next) look
    # 11-30% slower than the same array without (measured later).
    sync
    # fio counts no I/O during the ramp, so the CPU window starts after
    # it too: sample once the ramp is over, and again when fio exits.
    # shellcheck disable=SC2086
    fio --name="$job" "$@" --size=$WS ${JOB_ARGS[$job]} \
        --time_based --ramp_time="$RAMP" --runtime="$RT_MS"ms \
        --norandommap --randrepeat=0 \
        --output-format=json --output="$o" >>"$LOG" 2>&1 &
    fio_pid=$!
    sleep "$RAMP_S"
    c0=0; [ -n "$cur_pid" ] && c0=$(cpu_of "$cur_pid")
    b0=$(busy_s); t0=$(date +%s.%N)
    wait "$fio_pid"
    fio_pid=
    c1=0; [ -n "$cur_pid" ] && c1=$(cpu_of "$cur_pid")
    b1=$(busy_s); t1=$(date +%s.%N)
    iops=$(fio_json "$o" '.jobs[0] | (.read.iops + .write.iops)')
    bw=$(fio_json "$o" '.jobs[0] | (.read.bw_bytes + .write.bw_bytes)')
    bytes=$(fio_json "$o" '.jobs[0] | (.read.io_bytes + .write.io_bytes)')
    if [ -z "$iops" ] || [ "$(fio_json "$o" '.jobs[0].error')" != 0 ]; then
        echo "  $row $job: fio failed (see $LOG)"
        R_IOPS[$row|$job]=ERR
        return 1
    fi
    R_IOPS[$row|$job]=$iops
    R_BW[$row|$job]=$bw
    R_GB[$row|$job]=$(echo "scale=6; $bytes / 1000000000" | bc)
    if [ -n "$cur_pid" ]; then
        cpu=$(echo "scale=4; $c1 - $c0" | bc)
        R_CPU[$row|$job]=$cpu
    fi
    # Whatever the machine spent beyond fio and the server: other
    # people's work, stealing from the row being measured.
    # (Not for raw-file: fio's rusage misses its io_uring kernel workers.)
    if [ -n "$cur_pid" ]; then
        fcpu=$(fio_json "$o" "(.jobs[0].usr_cpu + .jobs[0].sys_cpu) / 100 * $RT")
        R_OTHER[$row|$job]=$(echo "o = ($b1 - $b0) - ($c1 - $c0) - $fcpu; if (o < 0) o = 0;
            o * 100 / ($NCPU * ($t1 - $t0))" | bc -l)
    fi
    printf '  %-22s %-9s %10.0f IOPS %9.1f MB/s\n' "$row" "$job" "$iops" \
        "$(echo "$bw / 1000000" | bc -l)"
}

# wait_for FILE...: up to 20 s for every FILE to exist.
wait_for() {
    local i f ok
    for i in $(seq 200); do
        ok=1
        for f in "$@"; do [ -e "$f" ] || ok=0; done
        [ "$ok" = 1 ] && return 0
        sleep 0.1
    done
    return 1
}

dirtag() { local t=${1#/}; echo "${t//\//-}"; }    # /var/tmp -> var-tmp

want() { [[ $1 =~ $rows_re ]]; }

add_row() { ROWS+=("$1"); }

# ---------------------------------------------------------------- targets
bench_raw() {   # row dir
    local row=$1 d=$2
    add_row "$row"; want "$row" || { ROW_NOTE[$row]="skipped (--rows)"; return; }
    echo "== $row"
    truncate -s $WS "$d/raw"
    cur_pid=
    run_jobs "$row" --ioengine=io_uring --direct=1 --filename="$d/raw"
    rm -f "$d/raw"
}

bench_nbdkit() {   # row plugin-args...
    local row=$1; shift
    add_row "$row"; want "$row" || { ROW_NOTE[$row]="skipped (--rows)"; return; }
    echo "== $row"
    local sock=$WORK/$row.sock pidf=$WORK/$row.pid
    servers+=("$pidf|")
    if ! nbdkit --unix "$sock" --pidfile "$pidf" "$@" >>"$LOG" 2>&1 ||
            ! wait_for "$sock" "$pidf"; then
        ROW_NOTE[$row]="nbdkit did not start (see $LOG)"; stop_servers; return
    fi
    cur_pid=$(cat "$pidf")
    run_jobs "$row" --ioengine=nbd --uri="nbd+unix:///?socket=$sock"
    stop_servers
}

bench_quorum() {   # row dir
    local row=$1 d=$2
    add_row "$row"; want "$row" || { ROW_NOTE[$row]="skipped (--rows)"; return; }
    echo "== $row"
    if ! command -v qemu-storage-daemon >/dev/null; then
        ROW_NOTE[$row]="qemu-storage-daemon not installed"; return
    fi
    local sock=$WORK/$row.sock pidf=$WORK/$row.pid
    truncate -s $WS "$d/q0" "$d/q1"
    servers+=("$pidf|")
    # Two raw files, a quorum node needing both votes (a 2-way mirror that
    # compares reads), exported over NBD on a unix socket.
    if ! qemu-storage-daemon \
            --blockdev "driver=file,node-name=f0,filename=$d/q0,cache.direct=on,aio=io_uring" \
            --blockdev driver=raw,node-name=r0,file=f0 \
            --blockdev "driver=file,node-name=f1,filename=$d/q1,cache.direct=on,aio=io_uring" \
            --blockdev driver=raw,node-name=r1,file=f1 \
            --blockdev driver=quorum,node-name=q,vote-threshold=2,children.0=r0,children.1=r1 \
            --nbd-server "addr.type=unix,addr.path=$sock" \
            --export type=nbd,id=e0,node-name=q,writable=on,name= \
            --pidfile "$pidf" --daemonize >>"$LOG" 2>&1 ||
            ! wait_for "$sock" "$pidf"; then
        ROW_NOTE[$row]="qemu-storage-daemon did not start (see $LOG)"
        stop_servers; rm -f "$d/q0" "$d/q1"; return
    fi
    cur_pid=$(cat "$pidf")
    run_jobs "$row" --ioengine=nbd --uri="nbd+unix:///?socket=$sock"
    stop_servers
    rm -f "$d/q0" "$d/q1"
}

# Extra arguments for an array without a write-intent bitmap, from the
# environment or from what `clraid create/start --help` offers.
nobitmap_create=$BENCH_NOBITMAP_CREATE_ARGS
nobitmap_start=$BENCH_NOBITMAP_START_ARGS
if [ -z "$nobitmap_create$nobitmap_start" ]; then
    h=$("$CLRAID" start --help 2>&1)
    case $h in
    *--bitmap=normal\|all-dirty*) nobitmap_start=--bitmap=all-dirty ;;
    *--no-bitmap*) nobitmap_start=--no-bitmap ;;
    *--bitmap=off*) nobitmap_start=--bitmap=off ;;
    *--bitmap=none*) nobitmap_start=--bitmap=none ;;
    esac
    if [ -z "$nobitmap_start" ]; then
        h=$("$CLRAID" create --help 2>&1)
        case $h in
        *--bitmap=none*) nobitmap_create=--bitmap=none ;;
        *--no-bitmap*) nobitmap_create=--no-bitmap ;;
        esac
    fi
fi

clraid_broken=          # set to the reason once `clraid start` has failed

# clraid_up ROW DIR LEVEL NDEV CREATE-EXTRA START-EXTRA: creates and starts
# one array on fresh member files in DIR; sets CL_SOCK, CL_PID, CL_DEVS,
# CL_LOGS (run-dir log to engine log), or ROW_NOTE[ROW] and returns 1.
# The array is stopped by stop_servers.
clraid_up() {
    local row=$1 d=$2 level=$3 n=$4 cx=$5 sx=$6
    local data=$n name=b$level-$$-${#servers[@]} rundir=$WORK/run-$row msize i devs=()
    case $level in 1) data=1 ;; 5) data=$((n - 1)) ;; 6) data=$((n - 2)) ;; esac
    # Member size: the working set spread over the data members, plus room
    # for the superblock, bitmap and data offset.
    msize=$(( (WS / data) + 64 * 1024 * 1024 ))
    for i in $(seq 0 $((n - 1))); do
        truncate -s "$msize" "$d/$row.m$i"
        devs+=("$d/$row.m$i")
    done
    mkdir -p "$rundir"
    # 256 KiB chunks on 4 data members: one 1M write is one full stripe.
    local chunk=
    [ "$level" != 1 ] && chunk=--chunk=256
    # shellcheck disable=SC2086
    if ! "$CLRAID" create --level="$level" --raid-devices="$n" --nodes=4 \
            --home-cluster=b --assume-clean --name="$name" $chunk $cx \
            "${devs[@]}" >>"$LOG" 2>"$WORK/err"; then
        ROW_NOTE[$row]="clraid create failed: $(head -n 1 "$WORK/err")"
        cat "$WORK/err" >>"$LOG"; rm -f "${devs[@]}"; return 1
    fi
    local sock=$rundir/$name.sock pidf=$rundir/$name.pid
    servers+=("$pidf|$CLRAID stop $name --run-dir $rundir")
    # shellcheck disable=SC2086
    # The engine inherits stderr: its messages land in $elog too.
    local elog=$out/$row.engine.log
    if ! timeout 60 "$CLRAID" start "$name" "${devs[@]}" --run-dir "$rundir" $sx \
            >>"$LOG" 2>"$elog" || ! wait_for "$sock" "$pidf"; then
        local why
        why=$(grep -m1 . "$elog")
        [ -n "$why" ] || why="no $sock or $pidf appeared"
        # An engine that cannot start one array will not start the others.
        [ -z "$sx$cx" ] && clraid_broken="not runnable: clraid start failed: $why"
        ROW_NOTE[$row]="not runnable: clraid start failed: $why"
        stop_servers; rm -f "${devs[@]}"; return 1
    fi
    CL_SOCK=$sock CL_PID=$(cat "$pidf") CL_DEVS=("${devs[@]}")
    CL_LOGS+=("$rundir/$name.log|$elog")
}

# clraid_down: after stop_servers, keeps the engines' logs and deletes the
# members of every array clraid_up started.
CL_LOGS=() CL_ALLDEVS=()
clraid_down() {
    local e
    for e in "${CL_LOGS[@]}"; do
        [ -s "${e%%|*}" ] && cat "${e%%|*}" >>"${e#*|}"
    done
    rm -f "${CL_ALLDEVS[@]}"
    CL_LOGS=() CL_ALLDEVS=()
}

bench_clraid() {   # row dir level ndev create-extra start-extra
    local row=$1
    add_row "$row"; want "$row" || { ROW_NOTE[$row]="skipped (--rows)"; return; }
    echo "== $row"
    if [ -n "$clraid_broken" ]; then ROW_NOTE[$row]=$clraid_broken; return; fi
    clraid_up "$@" || return
    CL_ALLDEVS+=("${CL_DEVS[@]}")
    cur_pid=$CL_PID
    run_jobs "$row" --ioengine=nbd --uri="nbd+unix:///?socket=$CL_SOCK"
    stop_servers
    clraid_down
}

# bench_bitmap_pair DIR TAG: what the write-intent bitmap costs.  Two RAID1
# arrays run side by side, one with its bitmap and one started without it
# ($nobitmap_*), and their 4k randwrite jobs alternate, on then off in odd
# rounds and off then on in even ones, for BITMAP_ROUNDS rounds: whatever
# drifts during the run (what ran before, the page cache, other work on
# the 2 cores) falls on both alike.  The verdict is the median over the
# rounds of each round's off/on ratio (BM[tag|job|on|off]: the rounds'
# IOPS, in run order).
BITMAP_ROUNDS=${BITMAP_ROUNDS:-4}
BITMAP_JOBS="rw4k_q1 rw4k_q32"
declare -A BM
bitmap_tags=()
bench_bitmap_pair() {
    local d=$1 tag=$2 on_sock off_sock on_pid off_pid r job first second which
    want "bitmap" || return 0
    echo "== bitmap on/off@$tag: $BITMAP_ROUNDS alternating rounds"
    if [ -n "$clraid_broken" ]; then BM[$tag|note]=$clraid_broken; bitmap_tags+=("$tag"); return; fi
    bitmap_tags+=("$tag")
    if ! clraid_up "bitmap-on@$tag" "$d" 1 2 "" ""; then
        BM[$tag|note]=${ROW_NOTE[bitmap-on@$tag]}; clraid_down; return
    fi
    CL_ALLDEVS+=("${CL_DEVS[@]}"); on_sock=$CL_SOCK on_pid=$CL_PID
    if ! clraid_up "bitmap-off@$tag" "$d" 1 2 "$nobitmap_create" "$nobitmap_start"; then
        BM[$tag|note]=${ROW_NOTE[bitmap-off@$tag]}; stop_servers; clraid_down; return
    fi
    CL_ALLDEVS+=("${CL_DEVS[@]}"); off_sock=$CL_SOCK off_pid=$CL_PID
    if ! fill_target "bitmap-on@$tag" --ioengine=nbd --uri="nbd+unix:///?socket=$on_sock" ||
            ! fill_target "bitmap-off@$tag" --ioengine=nbd --uri="nbd+unix:///?socket=$off_sock"; then
        BM[$tag|note]="fill failed (see $LOG)"; stop_servers; clraid_down; return
    fi
    for r in $(seq "$BITMAP_ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then first=on second=off; else first=off second=on; fi
        for job in $BITMAP_JOBS; do
            for which in $first $second; do
                if [ "$which" = on ]; then cur_pid=$on_pid; else cur_pid=$off_pid; fi
                local sock=$on_sock
                [ "$which" = off ] && sock=$off_sock
                if run_job "bitmap-$which@$tag" "$job" --ioengine=nbd --uri="nbd+unix:///?socket=$sock"; then
                    BM[$tag|$job|$which]="${BM[$tag|$job|$which]:-} ${R_IOPS[bitmap-$which@$tag|$job]}"
                fi
            done
        done
    done
    stop_servers
    clraid_down
}

# median VALUES...: the middle value (the mean of the two middle ones for
# an even count); nothing for no values.
median() {
    [ $# -gt 0 ] || return 0
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_sweep DIR: one RAID1 on DIR, sequential writes then reads with the
# request size doubling from 4 KiB to 4 MiB (queue depth 8, SWEEP_RT
# seconds each); MB/s per size in SW_W[size] / SW_R[size].  The same sweep
# against nbdkit-memory (SW_MW / SW_MR) shows what the transport itself
# does as the requests grow.
SWEEP_SIZES="4k 8k 16k 32k 64k 128k 256k 512k 1M 2M 4M"
declare -A SW_W SW_R SW_MW SW_MR
sweep_dir=
# sweep_uri URI LABEL W R: the sweep's jobs against URI into the arrays
# named W (writes) and R (reads).
sweep_uri() {
    local uri=$1 label=$2 bs rw o v
    local -n sw_w=$3 sw_r=$4
    for rw in write read; do
        for bs in $SWEEP_SIZES; do
            o=$WORK/sweep.$label.$rw.$bs.json
            fio --name=sweep --ioengine=nbd --uri="$uri" \
                --size=$WS --rw=$rw --bs=$bs --iodepth=8 --time_based --ramp_time="$RAMP" \
                --runtime="$SWEEP_RT_MS"ms --output-format=json --output="$o" >>"$LOG" 2>&1
            v=$(fio_json "$o" '.jobs[0] | (.read.bw_bytes + .write.bw_bytes) / 1000000')
            if [ "$rw" = write ]; then sw_w[$bs]=$v; else sw_r[$bs]=$v; fi
            printf '  %-13s %-5s %-5s %8.0f MB/s\n' "$label" "$rw" "$bs" "${v:-0}"
        done
    done
}
bench_sweep() {
    local d=$1 name=bsw-$$ rundir=$WORK/run-sweep
    sweep_dir=$d
    local msize=$((WS + 64 * 1024 * 1024))
    truncate -s "$msize" "$d/s0" "$d/s1"
    mkdir -p "$rundir"
    if ! "$CLRAID" create --level=1 --raid-devices=2 --nodes=4 --home-cluster=b --assume-clean \
            --name="$name" "$d/s0" "$d/s1" >>"$LOG" 2>&1; then
        echo "  sweep: clraid create failed (see $LOG)"; rm -f "$d/s0" "$d/s1"; return
    fi
    servers+=("$rundir/$name.pid|$CLRAID stop $name --run-dir $rundir")
    if ! timeout 60 "$CLRAID" start "$name" "$d/s0" "$d/s1" --run-dir "$rundir" >>"$LOG" 2>&1 ||
            ! wait_for "$rundir/$name.sock"; then
        echo "  sweep: clraid start failed (see $LOG)"; stop_servers; rm -f "$d/s0" "$d/s1"; return
    fi
    echo "== sweep: RAID1 on $d, request size 4 KiB to 4 MiB"
    # written once first, as every row is: the 4 KiB writes of a fresh
    # array set each bitmap bit for the first time (one bitmap write
    # each), which made its first point 0.17x nbdkit-memory's
    fio --name=fill --ioengine=nbd --uri="nbd+unix:///?socket=$rundir/$name.sock" --size=$WS --rw=write \
        --bs=1M --iodepth=8 >>"$LOG" 2>&1
    sweep_uri "nbd+unix:///?socket=$rundir/$name.sock" RAID1 SW_W SW_R
    stop_servers
    rm -f "$d/s0" "$d/s1"
    local sock=$WORK/sweep-mem.sock pidf=$WORK/sweep-mem.pid
    servers+=("$pidf|")
    if nbdkit --unix "$sock" --pidfile "$pidf" memory "$WS" >>"$LOG" 2>&1 && wait_for "$sock" "$pidf"; then
        fio --name=fill --ioengine=nbd --uri="nbd+unix:///?socket=$sock" --size=$WS --rw=write --bs=1M \
            --iodepth=8 >>"$LOG" 2>&1
        sweep_uri "nbd+unix:///?socket=$sock" nbdkit-memory SW_MW SW_MR
    fi
    stop_servers
}
SWEEP_RT_MS=$(echo "$RT * 1000 / 2" | bc)

# ---------------------------------------------------------------- run
t_start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "clraid engine benchmark: working set $BENCH_SIZE MiB, $RT s per job, dirs: $BENCH_DIRS"
echo "results in $out"
echo "$load_start" | awk '$1 > 1.0 { print "note: load average " $1 " at start: other work shares the 2 cores" }'

# The reference is measured first and last; ratios use the mean of the
# two, and the two rows show how much the machine drifted meanwhile.
bench_nbdkit nbdkit-memory-first memory "$WS"

for dir in $BENCH_DIRS; do
    tag=$(dirtag "$dir")
    d=$(mktemp -d "$dir/clraid-bench.XXXXXX") || die "cannot write in $dir"
    memdirs+=("$d")
    bench_raw "raw-file@$tag" "$d"
    truncate -s $WS "$d/plain"
    bench_nbdkit "nbdkit-file@$tag" file "$d/plain"
    rm -f "$d/plain"
    if [ -f "$TWIN_PLUGIN" ]; then
        truncate -s $WS "$d/twin0" "$d/twin1"
        bench_nbdkit "twin-file@$tag" "$TWIN_PLUGIN" file0="$d/twin0" file1="$d/twin1"
        rm -f "$d/twin0" "$d/twin1"
    else
        add_row "twin-file@$tag"; ROW_NOTE[twin-file@$tag]="not built: $TWIN_PLUGIN (run make)"
    fi
    bench_quorum "qsd-quorum@$tag" "$d"
    bench_clraid "clraid-raid1@$tag" "$d" 1 2 "" ""
    bench_clraid "clraid-raid5@$tag" "$d" 5 5 "" ""
    bench_clraid "clraid-raid6@$tag" "$d" 6 6 "" ""
    # RAID6's small-write ceiling: 4k randwrite only (its 1M write is four
    # read-modify-writes, not a full stripe)
    if [ -f "$RMW6_PLUGIN" ]; then
        saved=("${JOBS[@]}"); JOBS=(rw4k_q32)
        for i in 0 1 2 3 4 5; do truncate -s $((WS / 4 + 1048576)) "$d/rmw$i"; done
        bench_nbdkit "rmw6-file@$tag" "$RMW6_PLUGIN" \
            file0="$d/rmw0" file1="$d/rmw1" file2="$d/rmw2" file3="$d/rmw3" file4="$d/rmw4" file5="$d/rmw5"
        rm -f "$d"/rmw?
        JOBS=("${saved[@]}")
    fi
    [ -n "$nobitmap_create$nobitmap_start" ] && bench_bitmap_pair "$d" "$tag"
    rm -rf "$d"
done

if want sweep; then
    sd=$(mktemp -d "${BENCH_DIRS%% *}/clraid-bench.XXXXXX") || die "cannot write in ${BENCH_DIRS%% *}"
    memdirs+=("$sd")
    bench_sweep "$sd"
    sweep_dir=${BENCH_DIRS%% *}
    rm -rf "$sd"
fi

# The cluster row: three --lock cpg members of one RAID1 on /dev/shm, each
# with its own fio (tests/bench/cluster.sh, in a private namespace with its
# own corosync).
CL_ROWS=()
if want cluster; then
    echo "== cluster: three --lock cpg members of one RAID1 on /dev/shm"
    if command -v corosync >/dev/null; then
        if BENCH_SIZE=$BENCH_SIZE BENCH_RUNTIME=$RT BENCH_RAMP=$RAMP \
                bash "$(dirname "$0")/cluster.sh" "$WORK/cluster.tsv" >>"$LOG" 2>&1; then
            mapfile -t CL_ROWS <"$WORK/cluster.tsv"
            cp "$WORK/cluster.tsv" "$out/cluster.tsv"
        else
            cluster_note="not runnable: tests/bench/cluster.sh failed (see $LOG)"
        fi
    else
        cluster_note="not runnable: corosync is not installed"
    fi
    echo "  ${cluster_note:-${#CL_ROWS[@]} jobs}"
fi

bench_nbdkit nbdkit-memory-last memory "$WS"
a=nbdkit-memory-first b=nbdkit-memory-last
ROWS=(nbdkit-memory "${ROWS[@]}")
for job in "${JOBS[@]}"; do
    for k in "$a|$job" "$b|$job"; do
        [[ ${R_IOPS[$k]:-} =~ ^[0-9.]+$ ]] || continue
        R_IOPS[nbdkit-memory|$job]=$(echo "${R_IOPS[nbdkit-memory|$job]:-0} + ${R_IOPS[$k]}" | bc -l)
        R_BW[nbdkit-memory|$job]=$(echo "${R_BW[nbdkit-memory|$job]:-0} + ${R_BW[$k]}" | bc -l)
        R_CPU[nbdkit-memory|$job]=$(echo "${R_CPU[nbdkit-memory|$job]:-0} + ${R_CPU[$k]}" | bc -l)
        R_GB[nbdkit-memory|$job]=$(echo "${R_GB[nbdkit-memory|$job]:-0} + ${R_GB[$k]}" | bc -l)
        nmem[$job]=$(( ${nmem[$job]:-0} + 1 ))
    done
    [ "${nmem[$job]:-0}" -gt 1 ] || continue
    R_IOPS[nbdkit-memory|$job]=$(echo "${R_IOPS[nbdkit-memory|$job]} / 2" | bc -l)
    R_BW[nbdkit-memory|$job]=$(echo "${R_BW[nbdkit-memory|$job]} / 2" | bc -l)
done

# ---------------------------------------------------------------- report
# val ROW JOB: IOPS for 4k jobs, MB/s for 1M jobs; empty if not measured.
val() {
    local v=${R_IOPS[$1|$2]:-}
    [ -z "$v" ] || [ "$v" = ERR ] && { echo "$v"; return; }
    case $2 in
    *1M) echo "${R_BW[$1|$2]} / 1000000" | bc -l ;;
    *) echo "$v" ;;
    esac
}
ratio() {   # a b -> a/b, empty if either is missing
    [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]] || return 0
    [ "$(echo "$2 > 0" | bc)" = 1 ] || return 0
    echo "scale=3; $1 / $2" | bc
}

{
    # --- TSV (one line per row and job)
    for row in "${ROWS[@]}"; do
        for job in "${JOBS[@]}"; do
            v=${R_IOPS[$row|$job]:-}
            dir=${row#*@}; [ "$dir" = "$row" ] && dir=-
            if [ -z "$v" ] || [ "$v" = ERR ]; then
                st=${ROW_NOTE[$row]:-${v:+fio error}}
                [ -n "$st" ] || continue
                printf '%s\t%s\t%s\t\t\t\t\t\t\t\t%s\n' "$row" "$dir" "$job" "$st" >>"$TSV"
                continue
            fi
            cpu=${R_CPU[$row|$job]:-}
            cpg=
            [ -n "$cpu" ] && cpg=$(printf '%.3f' "$(ratio "$cpu" "${R_GB[$row|$job]}")")
            r=$(ratio "$v" "${R_IOPS[nbdkit-memory|$job]:-}")
            [ -n "$r" ] && r=$(printf '%.3f' "$r")
            [ -n "$cpu" ] && cpu=$(printf '%.2f' "$cpu")
            oth=${R_OTHER[$row|$job]:-}
            [ -n "$oth" ] && oth=$(printf '%.1f' "$oth")
            printf '%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%s\t%s\t%s\t%s\tok\n' "$row" "$dir" "$job" \
                "$v" "${R_BW[$row|$job]}" "$(echo "${R_GB[$row|$job]} * 1000000000" | bc)" \
                "$cpu" "$cpg" "$r" "$oth" >>"$TSV"
        done
    done
}

fmt_num() {   # compact IOPS / MB/s
    [ -n "$1" ] || { printf -- '-'; return; }
    [ "$1" = ERR ] && { printf 'ERR'; return; }
    if [ "$(echo "$1 >= 10000" | bc)" = 1 ]; then
        printf '%.1fk' "$(echo "$1 / 1000" | bc -l)"
    else
        printf '%.0f' "$1"
    fi
}

table() {   # title kind(abs|ratio|cpu)
    local row job v m cell
    printf '\n%s\n' "$1"
    printf '%-30s' "row"
    for job in "${JOBS[@]}"; do printf '%11s' "${JOB_HEAD[$job]}"; done
    printf '\n'
    for row in "${ROWS[@]}"; do
        printf '%-30s' "$row"
        if [ -n "${ROW_NOTE[$row]:-}" ]; then
            printf '  %s\n' "${ROW_NOTE[$row]}"
            continue
        fi
        for job in "${JOBS[@]}"; do
            v=$(val "$row" "$job")
            case $2 in
            abs) cell=$(fmt_num "$v") ;;
            ratio)
                m=$(val nbdkit-memory "$job")
                cell=$(ratio "$v" "$m"); [ -n "$cell" ] && cell=$(printf '%.2f' "$cell")
                ;;
            rawratio)
                # the same directory's raw file (fio io_uring O_DIRECT):
                # where the disk is the limit, this is the ceiling
                cell=
                if [ "${row#*@}" != "$row" ]; then
                    m=$(val "raw-file@${row#*@}" "$job")
                    cell=$(ratio "$v" "$m"); [ -n "$cell" ] && cell=$(printf '%.2f' "$cell")
                fi
                ;;
            cpu)
                cell=
                [ -n "${R_CPU[$row|$job]:-}" ] && [ "$v" != ERR ] &&
                    cell=$(ratio "${R_CPU[$row|$job]}" "${R_GB[$row|$job]}")
                [ -n "$cell" ] && cell=$(printf '%.2f' "$cell")
                ;;
            other)
                cell=${R_OTHER[$row|$job]:-}
                [ -n "$cell" ] && [ "$v" != ERR ] && cell=$(printf '%.0f%%' "$cell")
                ;;
            esac
            printf '%11s' "${cell:--}"
        done
        printf '\n'
    done
}

verdicts=()
# target LABEL VALUE MIN: PASS if VALUE >= MIN.
target() {
    local label=$1 v=$2 min=$3 line
    if [ -z "$v" ]; then
        line=$(printf '%-62s %s' "$label" "NOT MEASURED")
    elif [ "$(echo "$v >= $min" | bc)" = 1 ]; then
        line=$(printf '%-62s %-5s (%.2fx, need >= %s)' "$label" PASS "$v" "$min")
    else
        line=$(printf '%-62s %-5s (%.2fx, need >= %s)' "$label" FAIL "$v" "$min")
    fi
    verdicts+=("$line")
}

# ceiling HEAD TAG ROW JOB [BASE LEVEL]: not a target, the context of
# one: what the barest server of that kind (twin-file: a mirror;
# rmw6-file: RAID6's read-modify-write) reaches against nbdkit-memory, and
# the clraid row's share of it.
ceiling() {
    local head=$1 tag=$2 r=$3 job=$4 base=${5:-twin-file} level=${6:-RAID1} t
    t=$(ratio "$(val "$base@$tag" "$job")" "$(val nbdkit-memory "$job")")
    [ -n "$t" ] || return 0
    verdicts+=("$(printf '%-62s %.2fx; %s is %.2fx of it' "  (ceiling, $head: $base vs nbdkit-memory [$tag])" \
        "$t" "$level" "$(ratio "$(val "$r" "$job")" "$(val "$base@$tag" "$job")")")")
}

# target_max LABEL VALUE MAX: PASS if VALUE <= MAX (lower is better).
target_max() {
    local label=$1 v=$2 max=$3 line
    if [ -z "$v" ]; then
        line=$(printf '%-62s %s' "$label" "NOT MEASURED")
    elif [ "$(echo "$v <= $max" | bc)" = 1 ]; then
        line=$(printf '%-62s %-5s (%.2fx, need <= %s)' "$label" PASS "$v" "$max")
    else
        line=$(printf '%-62s %-5s (%.2fx, need <= %s)' "$label" FAIL "$v" "$max")
    fi
    verdicts+=("$line")
}
# cpu_gb ROW JOB: server CPU seconds per GB moved.
cpu_gb() { [ -n "${R_CPU[$1|$2]:-}" ] && ratio "${R_CPU[$1|$2]}" "${R_GB[$1|$2]}"; }

# sweep_table: MB/s by request size, and the sweep's target (MB/s never
# falls as the size grows: each size within SWEEP_TOL of the best smaller
# one, the tolerance being the run-to-run noise of a short fio job here).
SWEEP_TOL=${SWEEP_TOL:-0.10}
sweep_table() {
    local bs rw best v m fell="" memfell=""
    [ -n "$sweep_dir" ] || return 0
    printf '\nSweep: RAID1 on %s, sequential, queue depth 8, MB/s by request size\n' "$sweep_dir"
    printf '%-14s' rw; for bs in $SWEEP_SIZES; do printf '%7s' "$bs"; done; printf '\n'
    for rw in write read; do
        printf '%-14s' "RAID1 $rw"; best=0
        for bs in $SWEEP_SIZES; do
            if [ "$rw" = write ]; then v=${SW_W[$bs]:-}; else v=${SW_R[$bs]:-}; fi
            printf '%7.0f' "${v:-0}"
            [[ $v =~ ^[0-9.]+$ ]] || { fell="$fell $rw@$bs(not measured)"; continue; }
            if [ "$(echo "$v < $best * (1 - $SWEEP_TOL)" | bc -l)" = 1 ]; then
                fell="$fell $rw@$bs"
            fi
            [ "$(echo "$v > $best" | bc -l)" = 1 ] && best=$v
        done
        printf '\n'
    done
    # the reference: what NBD itself does at each size, and RAID1's share
    for rw in write read; do
        printf '%-14s' "memory $rw"; best=0
        for bs in $SWEEP_SIZES; do
            if [ "$rw" = write ]; then m=${SW_MW[$bs]:-}; else m=${SW_MR[$bs]:-}; fi
            printf '%7.0f' "${m:-0}"
            [[ $m =~ ^[0-9.]+$ ]] || continue
            [ "$(echo "$m < $best * (1 - $SWEEP_TOL)" | bc -l)" = 1 ] && memfell="$memfell $rw@$bs"
            [ "$(echo "$m > $best" | bc -l)" = 1 ] && best=$m
        done
        printf '\n'
    done
    for rw in write read; do
        printf '%-14s' "ratio $rw"
        for bs in $SWEEP_SIZES; do
            if [ "$rw" = write ]; then v=${SW_W[$bs]:-} m=${SW_MW[$bs]:-}; else v=${SW_R[$bs]:-} m=${SW_MR[$bs]:-}; fi
            v=$(ratio "$v" "$m"); [ -n "$v" ] && v=$(printf '%.2f' "$v")
            printf '%7s' "${v:--}"
        done
        printf '\n'
    done
    if [ -z "$fell" ]; then
        verdicts+=("$(printf '%-62s %-5s (no size below the best smaller one by over %s)' \
            "sweep: MB/s as requests grow 4 KiB..4 MiB, RAID1 [$(dirtag "$sweep_dir")]" PASS "$SWEEP_TOL")")
    else
        verdicts+=("$(printf '%-62s %-5s (falls at:%s; nbdkit-memory falls at:%s)' \
            "sweep: MB/s as requests grow 4 KiB..4 MiB, RAID1 [$(dirtag "$sweep_dir")]" FAIL "$fell" "${memfell:- none}")")
    fi
}

# bitmap_table: the bitmap pair's rounds, IOPS per round in run order.
bitmap_table() {
    local tag job
    [ "${#bitmap_tags[@]}" -gt 0 ] || return 0
    printf '\nBitmap on/off: RAID1 with and without its bitmap, side by side, %s alternating rounds (IOPS)\n' \
        "$BITMAP_ROUNDS"
    for tag in "${bitmap_tags[@]}"; do
        if [ -n "${BM[$tag|note]:-}" ]; then printf '%-24s %s\n' "[$tag]" "${BM[$tag|note]}"; continue; fi
        for job in $BITMAP_JOBS; do
            printf '%-24s on: %-26s off: %s\n' "${JOB_HEAD[$job]} [$tag]" \
                "$(printf '%.0f ' ${BM[$tag|$job|on]:-})" "$(printf '%.0f ' ${BM[$tag|$job|off]:-})"
        done
    done
}

# cluster_table: the cluster row (one member alone vs three at once), and
# its check: the I/O cost no lock op and no message on any member.
cluster_note=${cluster_note:-}
cluster_table() {
    local l job one all obw abw ops msgs unit
    want cluster || return 0
    printf '\nCluster: three --lock cpg members of one RAID1 on /dev/shm, one fio each on its own third\n'
    if [ -n "$cluster_note" ] || [ "${#CL_ROWS[@]}" = 0 ]; then
        printf '  %s\n' "${cluster_note:-no results}"
        verdicts+=("$(printf '%-62s %s' "cluster: lock ops and messages flat under I/O" "NOT MEASURED")")
        return 0
    fi
    printf '%-12s %14s %16s %8s %18s\n' job "one member" "three (sum)" "x one" "lock ops/messages"
    local flat=1
    for l in "${CL_ROWS[@]}"; do
        IFS=$'\t' read -r job one all obw abw ops msgs <<<"$l"
        unit=IOPS
        if [ "$job" = sw1M ]; then one=$(echo "$obw / 1000000" | bc); all=$(echo "$abw / 1000000" | bc); unit=MB/s; fi
        printf '%-12s %9s %-4s %11s %-4s %8s %18s\n' "$job" "$(fmt_num "$one")" "$unit" "$(fmt_num "$all")" \
            "$unit" "$(printf '%.2f' "$(ratio "$all" "$one")")" "$ops/$msgs"
        [ "$ops" = 0 ] && [ "$msgs" = 0 ] || flat=0
    done
    if [ "$flat" = 1 ]; then
        verdicts+=("$(printf '%-62s %-5s (0 lock ops, 0 messages during the runs)' "cluster: lock ops and messages flat under I/O" PASS)")
    else
        verdicts+=("$(printf '%-62s %-5s (see the cluster table)' "cluster: lock ops and messages flat under I/O" FAIL)")
    fi
}

{
    echo "clraid engine benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cpus"
    echo "working set $BENCH_SIZE MiB per target, $RT s per job after a $RAMP ramp (time_based), fio $(fio --version)"
    echo "fio: nbd ioengine for every NBD row; io_uring + O_DIRECT for raw-file"
    echo "clraid plugin: ${CLRAID_NBDKIT_PLUGIN:-(clraid start default)}"
    table "Throughput (4k columns: IOPS; 1M columns: MB/s)" abs
    table "Ratio vs nbdkit-memory (mean of its first and last run; same job)" ratio
    table "Ratio vs raw-file in the same directory (where the disk is the limit, the ceiling)" rawratio
    table "Server CPU seconds per GB moved (nbdkit / qemu-storage-daemon utime+stime)" cpu
    table "Noise: CPU used by processes other than fio and the server, % of all cores" other

    for dir in $BENCH_DIRS; do
        tag=$(dirtag "$dir")
        r1=clraid-raid1@$tag; r6=clraid-raid6@$tag; q=qsd-quorum@$tag
        target "RAID1 4k randwrite qd32 vs nbdkit-memory [$tag]" \
            "$(ratio "$(val "$r1" rw4k_q32)" "$(val nbdkit-memory rw4k_q32)")" 0.7
        target "RAID1 4k randwrite qd32 vs qsd-quorum [$tag]" \
            "$(ratio "$(val "$r1" rw4k_q32)" "$(val "$q" rw4k_q32)")" 3
        target "RAID1 1M seq write vs nbdkit-memory [$tag]" \
            "$(ratio "$(val "$r1" sw1M)" "$(val nbdkit-memory sw1M)")" 0.7
        for job in rw4k_q32 sw1M; do
            ceiling "${JOB_HEAD[$job]}" "$tag" "$r1" "$job"
        done
        target "RAID6 1M seq write (full stripes) vs nbdkit-memory [$tag]" \
            "$(ratio "$(val "$r6" sw1M)" "$(val nbdkit-memory sw1M)")" 0.6
        target "RAID1 1M seq read vs nbdkit-memory [$tag]" \
            "$(ratio "$(val "$r1" sr1M)" "$(val nbdkit-memory sr1M)")" 0.8
        target "RAID5 4k randwrite qd32 (read-modify-write) vs nbdkit-memory [$tag]" \
            "$(ratio "$(val "clraid-raid5@$tag" rw4k_q32)" "$(val nbdkit-memory rw4k_q32)")" 0.35
        target "RAID6 4k randwrite qd32 (read-modify-write) vs nbdkit-memory [$tag]" \
            "$(ratio "$(val "$r6" rw4k_q32)" "$(val nbdkit-memory rw4k_q32)")" 0.35
        ceiling "${JOB_HEAD[rw4k_q32]}" "$tag" "$r6" rw4k_q32 rmw6-file "RAID6"
        for job in sw1M sr1M; do
            target_max "RAID1 CPU s/GB, ${JOB_HEAD[$job]%% MB/s} vs nbdkit-file [$tag]" \
                "$(ratio "$(cpu_gb "$r1" $job)" "$(cpu_gb "nbdkit-file@$tag" $job)")" 2
        done
    done
    sweep_table
    cluster_table
    bitmap_table
    printf '\nTargets\n'
    for l in "${verdicts[@]}"; do echo "$l"; done
    if [ -z "$nobitmap_create$nobitmap_start" ]; then
        echo "bitmap on/off: not measured (engine has no bitmap=off option)"
    else
        for tag in "${bitmap_tags[@]}"; do
            for job in $BITMAP_JOBS; do
                label="bitmap on vs off, RAID1 ${JOB_HEAD[$job]} [$tag]"
                # shellcheck disable=SC2086
                on=$(median ${BM[$tag|$job|on]:-}) off=$(median ${BM[$tag|$job|off]:-})
                # the verdict: the median of each round's own ratio (the
                # two jobs of a round ran back to back, under the same
                # conditions), not of the medians' ratio
                # shellcheck disable=SC2086
                pr=$(paste -d' ' <(printf '%s\n' ${BM[$tag|$job|on]:-}) <(printf '%s\n' ${BM[$tag|$job|off]:-}) |
                    awk 'NF == 2 && $1 > 0 { printf "%.6f\n", $2 / $1 }')
                # shellcheck disable=SC2086
                pm=$(median $pr)
                if [ -n "${BM[$tag|note]:-}" ] || [ -z "$on" ] || [ -z "$off" ] || [ -z "$pm" ]; then
                    printf '%-62s %s %s\n' "$label" "NOT MEASURED" "${BM[$tag|note]:-}"
                    continue
                fi
                diff=$(echo "scale=4; d = (1 - $pm) * 100; if (d < 0) d = -d; d" | bc)
                if [ "$(echo "$diff <= 5" | bc)" = 1 ]; then v=PASS; else v=FAIL; fi
                printf '%-62s %-5s (%.1f%% apart: median of the rounds'"'"' off/on %.3f; medians %.0f / %.0f IOPS; need <= 5%%)\n' \
                    "$label" "$v" "$diff" "$pm" "$on" "$off"
            done
        done
    fi
    [ -n "$clraid_broken" ] &&
        printf '\nclraid rows %s\nTheir targets are NOT MEASURED; no numbers were invented.\n' "$clraid_broken"
    printf '\nelapsed %d s; load average at start %s, at end %s\n' \
        $(( $(date +%s) - t_start )) "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)"
    # Client and server already share the 2 cores; anything else running
    # skews every row, the ratios less than the absolute numbers.
    echo "$load_start" | awk '$1 > 1.0 { print "WARNING: the machine was busy when the run started (load " $1 "); numbers are noisy" }'
} | tee "$TABLE"

echo
echo "table:   $TABLE"
echo "results: $TSV"
echo "fio log: $LOG"
exit 0
