#!/bin/sh
# Builds clraid if needed and runs the whole test suite (make check):
# cmocka unit tests, integration tests on real tools, and the fuzz run.
# Ends with one line "N passed, N failed, N skipped".
# CLRAID_CONFIGURE_FLAGS (e.g. --enable-werror, as .ci/run sets it): the
# tree is (re)configured with them; without it, an unconfigured tree gets a
# plain ./configure and a configured one is left as it is.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
[ -x configure ] || ./autogen.sh
if [ -n "${CLRAID_CONFIGURE_FLAGS:-}" ]; then
    # shellcheck disable=SC2086  # several flags, split on purpose
    ./configure $CLRAID_CONFIGURE_FLAGS
elif [ ! -f Makefile ]; then
    ./configure
fi
make -j"$jobs"
# Every program and file the tests need, and no test yet.
make -j"$jobs" check TESTS= >/dev/null
# Two lanes, side by side (Makefile.am): the tests in tests/uml/ one after
# another (each boots User-Mode Linux instances, and two at once starve
# each other) and then the policy daemon's three-node Pacemaker test; and
# the rest of the suite.  In one `make -j2 check` the next UML test waited for a job slot
# behind whatever make had started in the meantime (up to three minutes of
# a run here).  Each test's start goes to tests/starts.txt for the list of
# the longest below.
# scripts/test-cpu.sh runs each test and, where it can, adds its CPU
# seconds to tests/cpu.txt (the suite is CPU-bound on two cores: what a
# test costs is its CPU more than its wall time).
rm -f tests/starts.txt tests/cpu.txt lane-uml.log
stamp="echo \"\$\$(date +%s) \$@\" >>tests/starts.txt; sh $PWD/scripts/test-cpu.sh"
set +e
make check-lane-uml TESTS_ENVIRONMENT="$stamp" >lane-uml.out 2>&1 &
uml_pid=$!
# the UML lane keeps a CPU busy: the rest gets the others (one of two)
make -j"$((jobs > 2 ? jobs - 1 : 1))" check-lane-rest TESTS_ENVIRONMENT="$stamp"
rc=$?
wait "$uml_pid"
uml_rc=$?
set -e
cat lane-uml.out
[ "$uml_rc" = 0 ] || rc=$uml_rc
count() {
    n=0
    for log in test-suite.log lane-uml.log; do
        c=$(sed -n "s/^# $1: *//p" "$log" 2>/dev/null | head -n 1)
        n=$((n + ${c:-0}))
    done
    [ "$n" = 0 ] || echo "$n"
}
pass=$(count PASS); fail=$(count FAIL); skip=$(count SKIP)
xfail=$(count XFAIL); xpass=$(count XPASS); err=$(count ERROR)
# the longest tests, from their start (tests/starts.txt) to their log's
# last write: what to look at when the suite nears its time budget
if [ -s tests/starts.txt ]; then
    echo "longest tests (s of wall time, and of CPU where measured):"
    while read -r t log; do
        [ -f "$log" ] || continue
        cpu=$(awk -v l="$log" '$2 == l { c = $1 } END { print c }' tests/cpu.txt 2>/dev/null)
        echo "$(($(stat -c %Y "$log") - t)) ${log%.log}${cpu:+, CPU $cpu}"
    done <tests/starts.txt | sort -rn | head -n 8 | sed 's/^/  /'
    [ ! -s tests/cpu.txt ] || awk '{ s += $1 } END { print "CPU of the tests: " s " s (" NR " tests)" }' tests/cpu.txt
fi
if [ -n "$fail$err$xpass" ]; then
    # the failed tests, from automake's per-test .trs records (the
    # FAIL lines of test-suite.log include the tests' own output)
    for t in $(grep -lE '^:test-result: (FAIL|ERROR|XPASS)' $(find tests -name '*.trs') 2>/dev/null); do
        f=${t%.trs}
        echo "--- $f.log (tail)"; tail -n 60 "$f.log" 2>/dev/null || true
    done
fi
echo "${pass:-0} passed, $(( ${fail:-0} + ${err:-0} + ${xpass:-0} )) failed, ${skip:-0} skipped"
[ "${xfail:-0}" = 0 ] || echo "(${xfail} expected failures)"
exit "$rc"
