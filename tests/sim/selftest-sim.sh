#!/bin/sh
# make check: the simulator's checker can fail.  Each --inject-bug breaks
# one rule in the simulator's own model; some seed in 1-1000 must catch it.
set -e
sim="${top_builddir:-.}/tests/sim/sim"
wa=""
for bug in bitmap-after-data balance-in-recovery no-drain ignore-window \
	   ack-before-fail clear-pending resync-any-source readd-read-early \
	   readd-no-write newdisk-ignore-enoent leave-no-needs-sync ignore-hold; do
	# shellcheck disable=SC2086
	"$sim" --seeds 1-1000 $wa --inject-bug="$bug" --expect-fail
done
