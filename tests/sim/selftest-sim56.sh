#!/bin/sh
# make check: sim56's checker can fail.  Each --inject-bug breaks one rule
# of engine/cluster/zone.c (the simulator's copy has the fault switch,
# CLR_ZONE_FAULTS; the engine's has none); some seed in 1-1000 must catch it.
set -e
sim="${top_builddir:-.}/tests/sim/sim56"

for bug in no-retire suspect-ok degraded-no-lock undrained torn-pick retire-early early-join \
	   no-ex-write data-before-log recover-twice check-no-lock; do
	"$sim" --seeds 1-1000 --inject-bug "$bug" --expect-fail
done
# RAID6 only: Q left stale by a replay
"$sim" --seeds 1-1000 --level 6 --inject-bug replay-raid6-p --expect-fail
