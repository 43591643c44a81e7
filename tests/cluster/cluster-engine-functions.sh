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

# CL_KEEP_LOGS=DIR: copy the writers' logs and the run dirs there at exit.
if [ -n "${CL_KEEP_LOGS:-}" ]; then
    # shellcheck disable=SC2016  # expanded when it runs
    cleanup_fn 'mkdir -p "$CL_KEEP_LOGS"; cp -r "$TESTDIR"/*.log "$TESTDIR"/m[0-9]* "$CL_KEEP_LOGS"/ 2>/dev/null'
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

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# --- writers with a known pattern -----------------------------------------
# Member K writes region [base, base + CL_NB * CL_BS) in rounds: round r
# writes every block in order with byte cl_pattern K r, one write in flight
# at a time (qemu-io, sequential).  Its log records each round and every
# acknowledged write ("wrote ... at offset O"), so the expected content of
# every block is known afterwards: the last acknowledged pattern, or for
# the one write in flight when the member died, the old or the new one.
CL_BS=65536
CL_NB=${CL_NB:-32}
cl_pattern() { echo $(((($1 - 1) % 3) * 64 + ($2 - 1) % 63 + 1)); }

# What qemu-io prints when a write or the connection fails.
CL_FAILED='failed\|rror\|Failed'
# cl_count PATTERN FILE: matching lines (0 if none or no file).
cl_count() { local c; c=$(grep -c -- "$1" "$2" 2>/dev/null) || c=0; echo "${c:-0}"; }

# cl_writer K BASE LOG STOPFILE [MAXROUNDS]: run in the background.
cl_writer() {
    local k=$1 base=$2 log=$3 stop=$4 max=${5:-1000000} r=0 p b rc
    local -a cmds
    : >"$log"
    while [ ! -e "$stop" ] && [ "$r" -lt "$max" ]; do
        r=$((r + 1))
        p=$(cl_pattern "$k" "$r")
        cmds=()
        for ((b = 0; b < CL_NB; b++)); do
            cmds+=(-c "write -P $p $((base + b * CL_BS)) $CL_BS")
        done
        echo "round $r pattern $p t_ms $(now_ms)" >>"$log"
        rc=0
        # line-buffered: cl_in_round sees the acknowledgements as they come
        timeout "${CL_WRITE_TIMEOUT:-30}" stdbuf -oL qemu-io -f raw "$(cl_uri "$k")" "${cmds[@]}" \
            >"$log.r$r" 2>&1 || rc=$?
        cat "$log.r$r" >>"$log"
        echo "end $r rc $rc t_ms $(now_ms)" >>"$log"
        grep -q "$CL_FAILED" "$log.r$r" && break
        [ "$rc" -eq 0 ] || break
    done
    return 0
}

# cl_in_round LOG: "ROUND ACKED": the writer's current round and how many
# of its writes are acknowledged so far.
cl_in_round() {
    local r
    r=$(awk '/^round / { r = $2 } END { print r + 0 }' "$1" 2>/dev/null) || r=0
    echo "$r $(cl_count '^wrote' "$1.r$r")"
}

# cl_expect LOG K BASE: prints "offset old new" per block of the region:
# new = last acknowledged pattern (0: never written); for the block whose
# write was in flight when the writes started failing, new = that write's
# pattern and old = the block's previous value; else old = new.
cl_expect() {
    awk -v base="$3" -v bs="$CL_BS" -v nb="$CL_NB" '
        /^round / { p = $4; n = 0; next }
        /^wrote / { last[$NF] = p; n++; next }
        /failed/ && !inflight { inflight = 1; ioff = base + n * bs; inew = p }
        END {
            for (b = 0; b < nb; b++) {
                o = base + b * bs
                v = (o in last) ? last[o] : 0
                if (inflight && o == ioff) print o, v, inew
                else print o, v, v
            }
        }' "$1"
}

# cl_build_expected SIZE OUT EXPECT...: an image of SIZE bytes, zero except
# the regions, each block holding its "new" value.
cl_build_expected() {
    local size=$1 out=$2 e o old new
    shift 2
    rm -f "$out"
    truncate -s "$size" "$out"
    for e in "$@"; do
        while read -r o _ new; do
            [ "$new" -eq 0 ] && continue
            head -c "$CL_BS" /dev/zero | tr '\0' "\\$(printf '%03o' "$new")" |
                dd of="$out" bs="$CL_BS" seek=$((o / CL_BS)) conv=notrunc status=none
        done <"$e"
    done
}

# cl_verify IMAGE EXPECTED EXPECT...: every byte of IMAGE equals EXPECTED,
# except in a block that was in flight, where it may hold the old value.
# Prints what it found; returns 1 on a wrong byte.
cl_verify() {
    local img=$1 exp=$2
    shift 2
    cat "$@" | awk '$2 != $3 { print $1, $2, $3 }' >"$img.inflight"
    # cmp -l: 1-based offset, then the two bytes in octal
    cmp -l "$img" "$exp" 2>/dev/null | awk -v bs="$CL_BS" -v f="$img.inflight" '
        function oct(s,   i, v) { v = 0; for (i = 1; i <= length(s); i++) v = v * 8 + substr(s, i, 1); return v }
        BEGIN { while ((getline l < f) > 0) { split(l, a, " "); old[a[1]] = a[2]; nw[a[1]] = a[3] } }
        {
            off = $1 - 1; blk = off - off % bs
            got = oct($2); want = oct($3)
            if ((blk in old) && got == old[blk]) { oldb[blk]++; next }
            bad++
            if (bad <= 5) printf "  wrong byte at %d: 0x%02x, expected 0x%02x%s\n", off, got, want, \
                (blk in old) ? sprintf(" or the old 0x%02x (write in flight)", old[blk]) : ""
        }
        END {
            for (b in old) printf "  in-flight block at %d: %s\n", b, \
                (b in oldb) ? sprintf("%d bytes old, rest new", oldb[b]) : "all new"
            if (bad) { printf "  %d wrong bytes\n", bad; exit 1 }
        }'
}
