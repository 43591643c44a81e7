#!/bin/sh
# Rebuilds the tree with a sanitizer in a private copy and runs the unit
# tests and the simulator there:   scripts/check-sanitizers.sh asan|tsan
# (SAN_SIM_SEEDS seeds per simulator configuration, default 120).
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
# the lock-rank checks on, as in CI: the ranks are asserted under TSan too
./configure -q --enable-lockrank CFLAGS="-O1 -g -fno-omit-frame-pointer $san" LDFLAGS="$san"
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
# The simulator (built with the same sanitizer): every configuration that
# run-sim.sh uses, fewer seeds (under TSan its shadow memory grows with each
# seed of one process, so the seeds run in chunks of ${SAN_SIM_CHUNK}).
n=${SAN_SIM_SEEDS:-120}
chunk=${SAN_SIM_CHUNK:-60}
for cfg in "--nodes 2 --devices 2" "--nodes 3 --devices 2 --no-start-sb --no-newdisk" \
	   "--nodes 3 --devices 3" "--nodes 4 --devices 4"; do
	lo=1
	while [ "$lo" -le "$n" ]; do
		hi=$((lo + chunk - 1)); [ "$hi" -le "$n" ] || hi=$n
		# shellcheck disable=SC2086
		out=$(./tests/sim/sim --seeds "$lo-$hi" $cfg 2>&1) || { echo "$out"; echo "$kind: sim [$cfg] seeds $lo-$hi failed" >&2; exit 1; }
		lo=$((hi + 1))
	done
	echo "$kind: sim [$cfg] seeds 1-$n clean"
done
# sim56 (clustered RAID5/6): run-sim56.sh's configurations, fewer seeds
for cfg in "--level 5 --nodes 2 --data 3" "--level 5 --nodes 3 --data 3 --zone-stripes 1" \
	   "--level 6 --nodes 3 --data 3" "--level 6 --nodes 4 --data 4 --zone-stripes 3"; do
	# shellcheck disable=SC2086
	out=$(./tests/sim/sim56 --seeds 1-"$n" $cfg 2>&1) || { echo "$out"; echo "$kind: sim56 [$cfg] failed" >&2; exit 1; }
	echo "$kind: sim56 [$cfg] seeds 1-$n clean"
done
echo "$kind: simulator clean"
