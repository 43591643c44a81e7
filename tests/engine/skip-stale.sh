#!/bin/sh
# A member failed while the array ran: a later plain start refuses it
# (nothing written), `start --skip-stale` leaves it out and starts degraded
# (the stale member is still untouched), and re-add brings it back.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

files=$(create 1 3 64M --bitmap-chunk=1024 --assume-clean)
set -- $files
d0=$1 d1=$2 d2=$3
engine_start s1 $files
cli fail s1 "$d2" >/dev/null || fail "fail d2"
rand "$TESTDIR/data" 8
put s1 "$TESTDIR/data"
engine_stop s1

before=$(sums $files)
set +e
"$CLRAID" start s1 $files --run-dir "$RUN" >/dev/null 2>"$TESTDIR/err"; rc=$?
set -e
[ $rc = 1 ] || fail "plain start with a faulty member: exit $rc"
[ "$(wc -l <"$TESTDIR/err")" = 1 ] && grep -q "skip-stale\|re-add" "$TESTDIR/err" ||
    fail "refusal: $(cat "$TESTDIR/err")"
[ "$(sums $files)" = "$before" ] || fail "a refused start wrote to a member"
echo "ok: plain start refused -> $(cat "$TESTDIR/err")"

d2sum=$(sums "$d2")
timeout "$T" "$CLRAID" start s1 $files --skip-stale --run-dir "$RUN" >/dev/null 2>"$TESTDIR/err" ||
    { cat "$TESTDIR/err" "$RUN/s1.log" >&2; fail "start --skip-stale"; }
cleanup_fn "engine_kill s1"
grep -q "warning: left out $d2" "$TESTDIR/err" || fail "no warning about $d2: $(cat "$TESTDIR/err")"
wait_state s1 degraded
same s1 "$TESTDIR/data"
[ "$(sums "$d2")" = "$d2sum" ] || fail "the left-out member was written"
echo "ok: --skip-stale started degraded without touching $d2"

cli re-add s1 "$d2" >/dev/null || fail "re-add d2"
wait_idle s1
[ "$(st s1 .state)" = active ] || [ "$(st s1 .state)" = clean ] || fail "state after re-add: $(st s1 .state)"
zero_mismatches s1
cli fail s1 "$d0" >/dev/null && cli fail s1 "$d1" >/dev/null || fail "fail d0 d1"
same s1 "$TESTDIR/data"
echo "ok: re-added member holds the data written while it was out"
engine_stop s1
