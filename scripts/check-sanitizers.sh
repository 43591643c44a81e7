#!/bin/sh
# Rebuilds the tree with a sanitizer in a private copy and runs the unit
# tests there:   scripts/check-sanitizers.sh asan|tsan
# (valgrind needs no rebuild: `make check-valgrind`).
set -eu
kind=${1:-asan}
top=$(cd "$(dirname "$0")/.." && pwd)
case "$kind" in
asan) san="-fsanitize=address,undefined -fno-sanitize-recover=all" ;;
tsan) san="-fsanitize=thread" ;;
*) echo "usage: $0 asan|tsan" >&2; exit 2 ;;
esac
build="$top/build-$kind"
rm -rf "$build"
mkdir -p "$build/src"
# Tracked and new (not ignored) files: the tree as it is being worked on.
(cd "$top" && git ls-files -co --exclude-standard) | (cd "$top" && cpio -pdm --quiet "$build/src")
cd "$build/src"
./autogen.sh >/dev/null 2>&1
./configure -q CFLAGS="-O1 -g -fno-omit-frame-pointer $san" LDFLAGS="$san"
make -j"$(nproc)" >/dev/null
# Unit tests only: the shell tests start nbdkit/corosync, which would load
# sanitized code into unsanitized hosts.
tests=$(make -s -f - print-tests <<'MK'
include Makefile
print-tests: ; @echo $(filter-out %.sh,$(TESTS))
MK
)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
make -j"$(nproc)" check TESTS="$tests"
echo "$kind: unit tests clean ($tests)"
