#!/bin/sh
# clraid status --prometheus / --prometheus-file: the metrics of a running
# RAID5 in the Prometheus text format, checked by a strict parser of the
# format (below; and by promtool too where it is installed), and against
# what happened: writes counted, a failed member shown faulty and the array
# degraded, the file replaced atomically.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

# check_format FILE: the exposition format, strictly: HELP and TYPE once
# per family, before its samples; a family's samples together; metric and
# label names valid, label values quoted with only \\ \" \n escapes, no
# label twice, no series twice; counters named *_total; values numbers.
check_format() {
    awk '
    function bad(msg) { printf "line %d: %s: %s\n", NR, msg, $0; err = 1; exit 1 }
    function name_ok(n) { return n ~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/ }
    /^$/ { bad("empty line") }
    /^# HELP / {
        n = $3; if (!name_ok(n)) bad("bad metric name")
        if (n in help) bad("HELP twice"); if (n in done) bad("family seen before")
        help[n] = 1; switch_to(n); next
    }
    /^# TYPE / {
        n = $3; if (!name_ok(n)) bad("bad metric name")
        if (n in type) bad("TYPE twice"); if (n in done) bad("family seen before")
        if ($4 !~ /^(counter|gauge|histogram|summary|untyped)$/ || NF != 4) bad("bad type")
        if ($4 == "counter" && n !~ /_total$/) bad("a counter not named *_total")
        type[n] = $4; switch_to(n); next
    }
    /^#/ { bad("a comment that is neither HELP nor TYPE") }
    {
        line = $0
        if (!match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) bad("no metric name")
        n = substr(line, 1, RLENGTH); rest = substr(line, RLENGTH + 1)
        if (!(n in type) || !(n in help)) bad("sample before its HELP and TYPE")
        if (n != cur) bad("sample outside its family")
        labels = ""
        if (substr(rest, 1, 1) == "{") {
            rest = substr(rest, 2); delete seen
            while (substr(rest, 1, 1) != "}") {
                if (!match(rest, /^[a-zA-Z_][a-zA-Z0-9_]*="/)) bad("bad label")
                ln = substr(rest, 1, RLENGTH - 2); rest = substr(rest, RLENGTH + 1)
                if (ln in seen) bad("label twice"); seen[ln] = 1
                v = ""
                while (1) {
                    c = substr(rest, 1, 1)
                    if (c == "") bad("unterminated label value")
                    if (c == "\"") { rest = substr(rest, 2); break }
                    if (c == "\\") {
                        e = substr(rest, 2, 1)
                        if (e != "\\" && e != "\"" && e != "n") bad("bad escape")
                        v = v c e; rest = substr(rest, 3); continue
                    }
                    v = v c; rest = substr(rest, 2)
                }
                labels = labels ln "=" v ";"
                if (substr(rest, 1, 1) == ",") rest = substr(rest, 2)
                else if (substr(rest, 1, 1) != "}") bad("bad label separator")
            }
            rest = substr(rest, 2)
        }
        if (rest !~ /^ (-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?|NaN|[+-]Inf)( -?[0-9]+)?$/) bad("bad value")
        key = n "{" labels "}"
        if (key in series) bad("series twice"); series[key] = 1
        samples++
    }
    function switch_to(n) { if (cur != "" && cur != n) done[cur] = 1; cur = n }
    END { if (!err && samples == 0) { print "no samples"; exit 1 } }
    ' "$1"
}

# the parser can fail: broken copies of a good file are refused
printf '# HELP x_total a\n# TYPE x_total counter\nx_total{array="a"} 1\n' >"$TESTDIR/good.prom"
check_format "$TESTDIR/good.prom" || fail "the parser refused a good file"
for broken in 's/x_total{/x_total{array="b",/' 's/} 1/} one/' 's/"a"/"a\\q"/' \
    's/counter/countr/' '$ a x_total{array="a"} 2' '1 d' 's/^x_total/y_total/'; do
    sed "$broken" "$TESTDIR/good.prom" >"$TESTDIR/bad.prom"
    if check_format "$TESTDIR/bad.prom" >/dev/null; then fail "the parser took a broken file ($broken)"; fi
done
echo "ok: the parser refuses 7 broken files"

files=$(create 5 4 32M --assume-clean)
# shellcheck disable=SC2086
engine_start m5 $files
rand "$TESTDIR/data" 4
put m5 "$TESTDIR/data"
set -- $files
cli fail m5 "$2" >/dev/null || fail "clraid fail"
prom="$TESTDIR/textfile/clraid.prom"
mkdir -p "$TESTDIR/textfile"
cli status m5 --prometheus-file "$prom" >/dev/null || fail "status --prometheus-file"
[ -s "$prom" ] || fail "no metrics file"
[ "$(ls "$TESTDIR/textfile")" = clraid.prom ] || fail "left behind: $(ls "$TESTDIR/textfile")"
check_format "$prom" || fail "not the Prometheus text format"
if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$prom" || fail "promtool check metrics"
    echo "ok: promtool check metrics"
fi
val() { # val SERIES-PREFIX: the value of the one sample whose line starts so
    grep -F "$1" "$prom" | awk '{ print $NF }'
}
[ "$(val 'clraid_up{array="m5"}')" = 1 ] || fail "up"
[ "$(val 'clraid_degraded_members{array="m5"}')" = 1 ] || fail "degraded_members: $(val 'clraid_degraded_members{')"
[ "$(val "clraid_member_state{array=\"m5\",member=\"$2\",state=\"faulty\"}")" = 1 ] || fail "faulty member"
[ "$(val "clraid_member_state{array=\"m5\",member=\"$1\",state=\"in_sync\"}")" = 1 ] || fail "in_sync member"
w=$(st m5 .counters.writes)
[ "$(val 'clraid_writes_total{array="m5"}')" = "$w" ] || fail "writes_total != status counters.writes ($w)"
mw=$(val "clraid_member_writes_total{array=\"m5\",member=\"$1\"}")
[ "$mw" -gt 0 ] || fail "member writes: $mw"
[ "$(val "clraid_member_io_errors_total{array=\"m5\",member=\"$1\",class=\"media\"}")" = 0 ] || fail "media errors"
echo "ok: $(grep -vc '^#' "$prom") samples; up 1, 1 degraded member, $2 faulty, writes $w, member 1 took $mw writes"
# to stdout, every array of the run directory; a name not running: up 0
cli status --prometheus >"$TESTDIR/all.prom" || fail "status --prometheus"
check_format "$TESTDIR/all.prom" || fail "stdout: not the Prometheus text format"
set +e
cli status nosuch --prometheus >"$TESTDIR/none.prom" 2>/dev/null
rc=$?
set -e
[ "$rc" = 1 ] || fail "a name not running: exit $rc"
grep -qx 'clraid_up{array="nosuch"} 0' "$TESTDIR/none.prom" || fail "a name not running: no up 0"
echo "ok: stdout for every array; an array not running: up 0, exit 1"
cli status m5 --prometheus --json >/dev/null 2>&1 && fail "--prometheus with --json accepted"
engine_stop m5
echo "ok: metrics"
