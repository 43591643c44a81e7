#!/bin/bash
# The engine benchmark's cluster row: three `--lock cpg` members (engines)
# of one RAID1 on /dev/shm, over a private corosync, each driven by its own
# fio on its own third of the array.  For each job it measures member 1
# alone (the other two up and idle), then all three at once, and reads
# every member's lock_ops and messages counters before and after: steady
# state I/O must cost no lock operation and no message.
# Called by tests/bench/engine.sh (row "cluster"); on its own:
#
#   tests/bench/cluster.sh OUT.tsv    (as root, from the top of a built tree)
#
# OUT.tsv gets one line per job: job, IOPS of one member alone, IOPS of the
# three together (sum), bytes/s alone, bytes/s together, and the lock ops
# and messages all three members counted during the runs.
# Environment: BENCH_SIZE (MiB, the array's size), BENCH_RUNTIME (s),
# BENCH_RAMP (fio ramp_time, default 1s).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
[ $# = 1 ] || { echo "usage: tests/bench/cluster.sh OUT.tsv" >&2; exit 2; }
OUTF=$1
case $OUTF in /*) ;; *) OUTF=$(pwd)/$OUTF ;; esac
: "${top_srcdir:=$(pwd)}" "${top_builddir:=$(pwd)}"
export top_srcdir top_builddir
# shellcheck source=tests/lock/cluster-functions.sh
. "$top_srcdir/tests/lock/cluster-functions.sh"
clr_enter_ns "$OUTF"
# shellcheck source=tests/cluster/cluster-engine-functions.sh
. "$top_srcdir/tests/cluster/cluster-engine-functions.sh"
requires fio
fio --enghelp 2>/dev/null | grep -qw nbd || skip "this fio has no nbd ioengine"

: "${BENCH_SIZE:=1024}" "${BENCH_RUNTIME:=8}" "${BENCH_RAMP:=1s}"
RT_MS=$(echo "$BENCH_RUNTIME * 1000 / 1" | bc)
WS=$((BENCH_SIZE * 1024 * 1024))
THIRD=$((WS / 3 / 1048576 * 1048576))
cl_corosync_start
CL_NAME=bench
# this namespace's /dev/shm is a private tmpfs (clr_start_corosync)
D=/dev/shm/clraid-bench-cluster
mkdir -p "$D"
cleanup_fn "rm -rf $D"
truncate -s $((WS + 64 * 1024 * 1024)) "$D/m0" "$D/m1"
"$CLRAID" create --level=1 --raid-devices=2 --nodes=3 --home-cluster="$CL_CLUSTER" \
    --assume-clean --name="$CL_NAME" "$D/m0" "$D/m1" >/dev/null || fail "clraid create"
for k in 1 2 3; do
    mkdir -p "$(cl_dir $k)"
    cl_start $k "$D/m0" "$D/m1" >/dev/null
done
cl_wait 1 '.cluster.members == 3' 30

# fio_on K JOBARGS... : one fio against member K's third, JSON to $TESTDIR/K.json
fio_on() {
    local k=$1; shift
    # shellcheck disable=SC2068
    fio --name="m$k" --ioengine=nbd --uri="$(cl_uri "$k")" --offset=$(((k - 1) * THIRD)) \
        --size=$THIRD $@ --output-format=json --output="$TESTDIR/$k.json" >/dev/null 2>&1
}
fio_val() { sed -n '/^{/,$p' "$TESTDIR/$1.json" | jq -r ".jobs[0] | $2"; }
# counters: the sum of lock_ops and messages over the three members.
counters() {
    local k o=0 m=0 a b
    for k in 1 2 3; do
        read -r a b <<<"$(cl_counters $k)"
        o=$((o + a)) m=$((m + b))
    done
    echo "$o $m"
}

# every member writes its whole third once: reads hit data, and every
# bitmap bit a job may need is set in its own member's slot
# (waited for by pid: a bare `wait` would wait for corosync too)
pids=()
for k in 1 2 3; do fio_on $k --rw=write --bs=1M --iodepth=8 & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "a fill write failed"; done

declare -A JOB_ARGS=(
    [rw4k_q32]="--rw=randwrite --bs=4k --iodepth=32"
    [rr4k_q32]="--rw=randread --bs=4k --iodepth=32"
    [sw1M]="--rw=write --bs=1M --iodepth=8"
)
: >"$OUTF"
for job in rw4k_q32 rr4k_q32 sw1M; do
    args="${JOB_ARGS[$job]} --time_based --ramp_time=$BENCH_RAMP --runtime=${RT_MS}ms --norandommap --randrepeat=0"
    read -r o0 m0 <<<"$(counters)"
    fio_on 1 "$args" || fail "fio on member 1 ($job)"
    one_iops=$(fio_val 1 '.read.iops + .write.iops')
    one_bw=$(fio_val 1 '.read.bw_bytes + .write.bw_bytes')
    pids=()
    for k in 1 2 3; do fio_on $k "$args" & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p" || fail "a fio of the three ($job) failed"; done
    read -r o1 m1 <<<"$(counters)"
    all_iops=0 all_bw=0
    for k in 1 2 3; do
        all_iops=$(echo "$all_iops + $(fio_val $k '.read.iops + .write.iops')" | bc -l)
        all_bw=$(echo "$all_bw + $(fio_val $k '.read.bw_bytes + .write.bw_bytes')" | bc -l)
    done
    printf '%s\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%d\n' "$job" "$one_iops" "$all_iops" "$one_bw" "$all_bw" \
        $((o1 - o0)) $((m1 - m0)) | tee -a "$OUTF"
done
for k in 1 2 3; do cl_stop $k; done
