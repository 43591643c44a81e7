#!/bin/sh
# Runs the libFuzzer target over the metadata decoders for FUZZ_SECONDS
# (default 60) under ASan+UBSan. Any crash, leak or sanitizer report fails.
. "${top_srcdir:-.}/tests/functions.sh"
FUZZER="$top_builddir/tests/fuzz/fuzz_format"
[ -x "$FUZZER" ] || skip "fuzz target not built (clang with libclang-rt-14-dev missing)"
secs=${FUZZ_SECONDS:-60}
mkdir "$TESTDIR/corpus"
cp "$top_srcdir"/tests/fuzz/corpus/* "$TESTDIR/corpus/"
cd "$TESTDIR"
set +e
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$FUZZER" -max_total_time="$secs" -print_final_stats=1 -max_len=65536 \
    -artifact_prefix="$TESTDIR/" "$TESTDIR/corpus" >"$TESTDIR/fuzz.log" 2>&1
rc=$?
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TESTDIR/fuzz.log")
grep -E '^#[0-9]+ *DONE' "$TESTDIR/fuzz.log" || true
if [ "$rc" -ne 0 ]; then
    tail -40 "$TESTDIR/fuzz.log"
    for a in "$TESTDIR"/crash-* "$TESTDIR"/leak-* "$TESTDIR"/timeout-*; do
        [ -e "$a" ] && { mkdir -p "$top_builddir/tests/fuzz/artifacts"; cp "$a" "$top_builddir/tests/fuzz/artifacts/"; }
    done
    fail "fuzzer exit $rc after ${execs:-?} executions (artifacts in tests/fuzz/artifacts)"
fi
[ -n "$execs" ] && [ "$execs" -gt 0 ] || fail "fuzzer ran no input"
echo "ok: fuzz_format: $execs executions in ${secs}s, no crash, leak or UB"
