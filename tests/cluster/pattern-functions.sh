# Writers with a known pattern, and the checks of what they left, for the
# cluster tests (tests/cluster, tests/pacemaker/live-cluster3.sh).  Bash.
#
# The test defines cl_uri K (the NBD URI of node K's export) before it
# calls these.  cl_acks LOG prints "T_MS OFFSET" for every acknowledged
# write of a writer, as the client saw it, so far.  cl_run_on K CMD... runs a client command "on" node K: by
# default here, in the test's own namespaces; a test whose nodes live in
# namespaces of their own redefines it (e.g. with nsenter), so that a
# node's power loss also kills its clients.
# shellcheck shell=bash

cl_run_on() { shift; "$@"; }

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

# What the writer prints when a write or the connection fails.
CL_FAILED='failed\|rror\|Failed'
# cl_count PATTERN FILE: matching lines (0 if none or no file).
cl_count() { local c; c=$(grep -c -- "$1" "$2" 2>/dev/null) || c=0; echo "${c:-0}"; }

# The writer: sequential writes, one in flight, qemu-io's output lines and
# the client's own time of each acknowledgement (nbd_seq_write.c).
CL_WRITER=${CL_WRITER:-${top_builddir:?}/tests/cluster/nbd_seq_write}

# cl_writer K BASE LOG STOPFILE [MAXROUNDS]: run in the background.
cl_writer() {
    local k=$1 base=$2 log=$3 stop=$4 max=${5:-1000000} r=0 p rc
    : >"$log"
    while [ ! -e "$stop" ] && [ "$r" -lt "$max" ]; do
        r=$((r + 1))
        p=$(cl_pattern "$k" "$r")
        echo "round $r pattern $p t_ms $(now_ms)" >>"$log"
        # line-buffered: cl_in_round sees the acknowledgements as they come
        rc=0  # (callers may run under set -e)
        cl_run_on "$k" timeout "${CL_WRITE_TIMEOUT:-30}" "$CL_WRITER" "$(cl_uri "$k")" "$p" \
            "$base" "$CL_BS" "$CL_NB" >"$log.r$r" 2>&1 || rc=$?
        cat "$log.r$r" >>"$log"
        echo "end $r rc $rc t_ms $(now_ms)" >>"$log"
        grep -q "$CL_FAILED" "$log.r$r" && break
        [ "$rc" -eq 0 ] || break
    done
    return 0
}

cl_acks() { cat "$1".r* 2>/dev/null | awk '/^acked / { print $4, $2 }'; }

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
        # a writer killed with its node prints no failure: its exit says it
        /^end / && $4 != 0 && !inflight && n < nb { inflight = 1; ioff = base + n * bs; inew = p }
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
    local size=$1 out=$2 e o new
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
