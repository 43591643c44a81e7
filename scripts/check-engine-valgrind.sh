#!/bin/sh
# Runs the engine integration tests with every engine process (nbdkit + the
# clraid plugin) under valgrind memcheck, then reports what valgrind found.
#   scripts/check-engine-valgrind.sh [TEST...]   (default: the non-crash tests)
# Crash tests (kill -9) are left out: a killed process leaves no report.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
nbdkit=$(command -v nbdkit) || { echo "nbdkit is not installed" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/var/tmp}/clraid-vg.XXXXXX")
cat >"$out/nbdkit" <<WRAP
#!/bin/sh
exec valgrind -q --leak-check=full --errors-for-leak-kinds=definite \\
    --log-file=$out/nbdkit.%p.log "$nbdkit" "\$@"
WRAP
chmod +x "$out/nbdkit"
tests=${*:-rw-levels fail-under-load readd-bitmap spare-rebuild freeze-thaw trim skip-stale}
rc=0
for t in $tests; do
    if CLRAID_NBDKIT="$out/nbdkit" CLIENT_TIMEOUT=600 top_srcdir="$top" top_builddir="$top" \
        sh "$top/tests/engine/$t.sh" >"$out/$t.out" 2>&1; then
        echo "PASS: $t"
    else
        echo "FAIL: $t (see $out/$t.out)"; rc=1
    fi
done
n=$(ls "$out"/nbdkit.*.log 2>/dev/null | wc -l)
# Errors anywhere, and leaks whose stack reaches our code (clr_ / clraid).
errs=$(grep -l 'Invalid \|uninitialised\|Conditional jump\|Mismatched\|overlap' "$out"/nbdkit.*.log 2>/dev/null | wc -l)
ours=$(grep -l 'definitely lost' "$out"/nbdkit.*.log 2>/dev/null | xargs -r grep -l 'clr_\|clraid' | wc -l)
theirs=$(grep -l 'definitely lost' "$out"/nbdkit.*.log 2>/dev/null | wc -l)
echo "$n engine processes under valgrind: $errs with memory errors, $ours with leaks in clraid code, $theirs with any definite leak (logs in $out)"
[ "$errs" = 0 ] && [ "$ours" = 0 ] || rc=1
exit $rc
