# Helpers for the cluster tests: several clraid engines (nbdkit + plugin,
# --lock cpg) over the SAME member files, each with its own run directory,
# joined through a private corosync on loopback.  Bash only.
#
#   here=$(cd "$(dirname "$0")" && pwd)
#   . "$here/../lock/cluster-functions.sh"
#   clr_enter_ns "$@"          # private net + mount namespace (re-execs)
#   . "$here/cluster-engine-functions.sh"
#   cl_corosync_start
#
# Member k (1, 2, 3, ...) runs from $TESTDIR/m$k: NAME.sock, NAME.ctl,
# NAME.pid, NAME.log there.
# shellcheck shell=bash
# shellcheck disable=SC2154  # TESTDIR, T, CLRAID...: engine-functions.sh
# shellcheck disable=SC2034  # CL_* and P_* are for the tests

export LC_ALL=C
# shellcheck source=tests/engine/engine-functions.sh
. "${top_srcdir:?}/tests/engine/engine-functions.sh"
requires corosync
requires_lock cpg

# CL_KEEP_LOGS=DIR: copy the writers' logs and the run dirs there at exit.
if [ -n "${CL_KEEP_LOGS:-}" ]; then
    # shellcheck disable=SC2016  # expanded when it runs
    cleanup_fn 'mkdir -p "$CL_KEEP_LOGS"; cp -r "$TESTDIR"/*.log* "$TESTDIR"/m[0-9]* "$CL_KEEP_LOGS"/ 2>/dev/null'
fi

# The corosync cluster_name cluster-functions.sh writes: it must be the
# array's home cluster.
CL_CLUSTER=clraidlocktest

# cl_corosync_start: one private corosync (cluster-functions.sh), stopped
# at exit after every engine.  cluster-functions.sh keeps its work dir in
# $T, which engine-functions.sh uses as the client timeout: keep both.
cl_corosync_start() {
    local client_timeout=$T
    clr_start_corosync
    CL_COROSYNC_DIR=$T
    T=$client_timeout
    # clr_start_corosync replaced the EXIT trap of functions.sh: put it
    # back, with corosync's own cleanup as the last command it runs.
    trap _cleanup EXIT
    # shellcheck disable=SC2016  # expanded when it runs
    cleanup_fn 'T=$CL_COROSYNC_DIR; clr_cleanup'
    echo "corosync pid $COROSYNC_PID up (work dir $CL_COROSYNC_DIR)"
}

cl_dir() { echo "$TESTDIR/m$1"; }
cl_uri() { echo "nbd+unix:///?socket=$(cl_dir "$1")/$CL_NAME.sock"; }
# cl_cli K CMD ARGS...: a clraid command against member K, bounded.
cl_cli() { local k=$1; shift; timeout "$T" "$CLRAID" "$@" --run-dir "$(cl_dir "$k")"; }
# cl_st K JQ: one value of member K's status JSON.
cl_st() { cl_cli "$1" status "$CL_NAME" --json | jq -r "$2"; }
cl_pid() { cat "$(cl_dir "$1")/$CL_NAME.pid" 2>/dev/null || true; }

# Status fields read at each poll, tab-separated, in this order.
CL_FIELDS='[.state, .sync_action,
  (.cluster.members | if type == "array" then length else . end),
  .cluster.recovering, .cluster.read_balancing,
  (.cluster.recovered_slots | if type == "array" then length else . end),
  (.cluster.last_takeover | tojson), .cluster.slot,
  (.sync_progress.position_bytes // 0), (.sync_progress.total_bytes // 0),
  (.last_resync.bytes // 0)] | map(tostring) | join("|")'
# cl_poll K: sets P_STATE P_SYNC P_MEMBERS P_RECOVERING P_RB P_RECOVERED
# P_TAKEOVER P_SLOT P_POS P_TOTAL P_LR from one status call (null for a
# missing field); returns 1 if it failed.
cl_poll() {
    local line
    line=$(cl_cli "$1" status "$CL_NAME" --json 2>/dev/null | jq -r "$CL_FIELDS" 2>/dev/null) || return 1
    [ -n "$line" ] || return 1
    IFS='|' read -r P_STATE P_SYNC P_MEMBERS P_RECOVERING P_RB P_RECOVERED P_TAKEOVER P_SLOT \
        P_POS P_TOTAL P_LR <<<"$line"
}

# cl_start K DEV...: start member K (cpg lock); killed at exit if still up.
cl_start() {
    local k=$1; shift
    local out
    out=$(cl_cli "$k" start "$CL_NAME" --lock cpg "$@" 2>&1) || {
        echo "$out"
        echo "--- engine log of member $k:"; tail -n 30 "$(cl_dir "$k")/$CL_NAME.log" 2>/dev/null || true
        fail "clraid start $CL_NAME --lock cpg --run-dir $(cl_dir "$k") $*: exit != 0"
    }
    echo "member $k: $out"
    cleanup_fn "cl_kill $k $CL_NAME"
}

# cl_kill K [NAME]: SIGKILL member K's engine if it runs.
cl_kill() {
    local p
    p=$(cat "$(cl_dir "$1")/${2:-$CL_NAME}.pid" 2>/dev/null || true)
    [ -n "$p" ] && kill -9 "$p" 2>/dev/null
    return 0
}

# cl_crash K: SIGKILL member K's nbdkit and wait until it is really gone.
cl_crash() {
    local p i=0
    p=$(cl_pid "$1")
    [ -n "$p" ] || fail "member $1: no pid file"
    kill -9 "$p"
    while [ -e "/proc/$p" ] && ! grep -q '^[^)]*) [ZX]' "/proc/$p/stat" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -le 300 ] || fail "member $1: pid $p survived kill -9"
        sleep 0.01
    done
}

cl_stop() { cl_cli "$1" stop "$CL_NAME" >/dev/null || fail "clraid stop member $1"; }

# cl_wait K JQ-CONDITION [SECONDS]: until member K's status satisfies it.
cl_wait() {
    local k=$1 cond=$2 n=$((${3:-30} * 10)) v=""
    while [ "$n" -gt 0 ]; do
        v=$(cl_cli "$k" status "$CL_NAME" --json 2>/dev/null | jq -r "$cond" 2>/dev/null) || v=""
        [ "$v" = true ] && return 0
        sleep 0.1
        n=$((n - 1))
    done
    echo "--- status of member $k:"; cl_cli "$k" status "$CL_NAME" --json || true
    fail "member $k: timeout waiting for: $cond"
}

# cl_counters K: "lock_ops messages" of member K.
cl_counters() { cl_st "$1" '"\(.counters.lock_ops) \(.counters.messages)"'; }

# shellcheck source=tests/cluster/pattern-functions.sh
. "${top_srcdir:?}/tests/cluster/pattern-functions.sh"
