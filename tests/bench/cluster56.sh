#!/bin/bash
# shellcheck disable=SC2119  # sums and zsums take no arguments
# Lock traffic of a clustered RAID5/6: three `--lock cpg` members (engines)
# of one array on /dev/shm, over a private corosync, each driven by its
# own fio.  Two jobs, 4k random writes:
#   disjoint  each member writes its own third of the array (after one
#             pass that takes its zones' locks);
#   shared    all three write the same 4 stripes at once (every write
#             rewrites parity another member also rewrites).
# For each: writes (the engines' own counters), lock operations and
# messages of the three, per write, and the zone locks' hand-off: blocking
# callbacks, the mean and longest time from request to grant, the longest
# admission wait (cluster.zones in `clraid status --json`).
#
#   tests/bench/cluster56.sh OUT.tsv   (as root, from the top of a built tree)
#
# Environment: BENCH_LEVEL (5 or 6, default 5), BENCH_SIZE (MiB, the
# array's size, default 768), BENCH_RUNTIME (s, default 8).  Measures; it
# asserts nothing but that the runs work.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
[ $# = 1 ] || { echo "usage: tests/bench/cluster56.sh OUT.tsv" >&2; exit 2; }
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

: "${BENCH_LEVEL:=5}" "${BENCH_SIZE:=768}" "${BENCH_RUNTIME:=8}"
case $BENCH_LEVEL in 5) NDEV=4 ;; 6) NDEV=5 ;; *) fail "BENCH_LEVEL must be 5 or 6" ;; esac
NDATA=$((NDEV - BENCH_LEVEL + 4))
CHUNK_KIB=256
STRIPE=$((NDATA * CHUNK_KIB * 1024))
cl_corosync_start
CL_NAME=bench56
D=/dev/shm/clraid-bench-cluster56
mkdir -p "$D"
cleanup_fn "rm -rf $D"
devs=()
for i in $(seq 1 "$NDEV"); do
    truncate -s $((BENCH_SIZE * 1048576 / NDATA + 64 * 1048576)) "$D/m$i"
    devs+=("$D/m$i")
done
"$CLRAID" create --level="$BENCH_LEVEL" --raid-devices="$NDEV" --chunk="$CHUNK_KIB" --nodes=3 \
    --home-cluster="$CL_CLUSTER" --assume-clean --name="$CL_NAME" "${devs[@]}" >/dev/null ||
    fail "clraid create"
for k in 1 2 3; do
    mkdir -p "$(cl_dir $k)"
    cl_start $k "${devs[@]}" >/dev/null
done
cl_wait 1 '.cluster.members == 3' 30
ZONE=$(($(cl_st 1 .cluster.zones.stripes_per_zone) * STRIPE))
# each third: whole zones, so that no zone is written by two members
THIRD=$((BENCH_SIZE * 1048576 / 3 / ZONE * ZONE))
echo "RAID$BENCH_LEVEL over $NDEV members, chunk $CHUNK_KIB KiB, zones of $((ZONE / 1024)) KiB, thirds of $((THIRD / 1048576)) MiB"

# fio_on K OFFSET SIZE JOBARGS...
fio_on() {
    local k=$1 off=$2 size=$3; shift 3
    # shellcheck disable=SC2068
    fio --name="m$k" --ioengine=nbd --uri="$(cl_uri "$k")" --offset="$off" --size="$size" $@ \
        --output-format=json --output="$TESTDIR/$k.json" >/dev/null 2>&1
}
# sums over the three members: "writes lock_ops messages"
sums() { # no arguments
    local k w=0 o=0 m=0 a b c
    for k in 1 2 3; do
        read -r a b c <<<"$(cl_st "$k" '"\(.counters.writes) \(.counters.lock_ops) \(.counters.messages)"')"
        w=$((w + a)) o=$((o + b)) m=$((m + c))
    done
    echo "$w $o $m"
}
# zone counters summed over the three: "callbacks grants grant_ms_total"
zsums() { # no arguments
    local k
    for k in 1 2 3; do
        cl_st "$k" '.cluster.zones | "\(.blocking_callbacks) \(.grants) \(.grant_ms_total)"'
    done | awk '{ b += $1; g += $2; t += $3 } END { print b, g, t }'
}
# the longest request-to-grant and admission wait of any member, so far
zmax() { # no arguments
    local k
    for k in 1 2 3; do cl_st "$k" '.cluster.zones | "\(.grant_ms_max) \(.wait_ms_max)"'; done |
        awk '{ if ($1 > g) g = $1; if ($2 > w) w = $2 } END { printf "%d\t%d", g, w }'
}

# the disjoint job's zones: one pass of 1 MiB writes over each third
pids=()
for k in 1 2 3; do fio_on $k $(((k - 1) * THIRD)) $THIRD --rw=write --bs=1M --iodepth=4 & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "a fill write failed"; done

args="--rw=randwrite --bs=4k --time_based --runtime=${BENCH_RUNTIME}s --norandommap --randrepeat=0"
# the partial-parity log of the three: "entries headers"
lsums() { # no arguments
    local k
    for k in 1 2 3; do
        cl_st "$k" '.cluster.zones.parity_log | "\(.entries_logged) \(.headers_written)"'
    done | awk '{ e += $1; h += $2 } END { print e + 0, h + 0 }'
}
printf 'job\twrites\tlock_ops\tmessages\tlock_ops_per_10k_writes\tblocking_callbacks\tgrants\tgrant_ms_mean\tgrant_ms_max_so_far\twait_ms_max_so_far\tlog_entries_per_write\tlog_headers_per_write\n' | tee "$OUTF"
for job in disjoint shared; do
    read -r w0 o0 m0 <<<"$(sums)"
    read -r b0 g0 t0 <<<"$(zsums)"
    read -r e0 h0 <<<"$(lsums)"
    pids=()
    for k in 1 2 3; do
        if [ $job = disjoint ]; then
            fio_on $k $(((k - 1) * THIRD)) $THIRD "$args --iodepth=32" & pids+=($!)
        else
            fio_on $k 0 $((4 * STRIPE)) "$args --iodepth=4" & pids+=($!)
        fi
    done
    for p in "${pids[@]}"; do wait "$p" || fail "a fio of the three ($job) failed"; done
    read -r w1 o1 m1 <<<"$(sums)"
    read -r b1 g1 t1 <<<"$(zsums)"
    read -r e1 h1 <<<"$(lsums)"
    w=$((w1 - w0)) o=$((o1 - o0)) m=$((m1 - m0)) g=$((g1 - g0))
    [ "$w" -gt 0 ] || fail "$job: no write counted"
    mean=-
    [ "$g" -gt 0 ] && mean=$(echo "scale=1; ($t1 - $t0) / $g" | bc -l)
    printf '%s\t%d\t%d\t%d\t%.2f\t%d\t%d\t%s\t%s\t%.2f\t%.2f\n' $job $w $o $m "$(echo "$o * 10000 / $w" | bc -l)" \
        $((b1 - b0)) "$g" "$mean" "$(zmax)" "$(echo "($e1 - $e0) / $w" | bc -l)" \
        "$(echo "($h1 - $h0) / $w" | bc -l)" | tee -a "$OUTF"
    [ $job = disjoint ] && w_disjoint=$w
done
for k in 1 2 3; do cl_stop $k; done

# Baseline in the same run: member 1 alone, --lock local (no zone locks,
# no log: a single node's data path), the disjoint job on its third.  The
# three shared the same two cores, so the ratio is the cost of the zones
# and the log together with three engines' scheduling.
out=$(cl_cli 1 start "$CL_NAME" --lock local "${devs[@]}" 2>&1) || fail "start alone: $out"
w0=$(cl_st 1 .counters.writes)
fio_on 1 0 "$THIRD" "$args --iodepth=32" || fail "fio alone failed"
w=$(($(cl_st 1 .counters.writes) - w0))
printf 'alone-local\t%d\t0\t0\t0\t0\t0\t-\t-\t-\t0\t0\n' "$w" | tee -a "$OUTF"
cl_stop 1
echo "three cpg members (zones and the log), disjoint: $(echo "scale=2; $w_disjoint / $w" | bc -l) x the writes of member 1 alone (--lock local); same run, same two cores"
