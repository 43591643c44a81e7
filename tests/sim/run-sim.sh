#!/bin/sh
# make check: the cluster simulator over several configurations, plus a
# determinism check (two runs of a seed give the same trace digest).
#
# SIM_SEEDS scales the run (seeds per configuration, default 600).
set -e
sim="${top_builddir:-.}/tests/sim/sim"
n="${SIM_SEEDS:-750}"
# Host-side stand-ins for two protocol-core fixes (see README: a joiner
# applies the LVB of a slot a survivor is taking over, i.e. the departed
# owner's window / dirty extent, and keeps it forever).  Remove once the
# core ignores such LVBs.
wa="--workaround lvb-invalid-zero --workaround join-takeover-lvb"
total=0
start=$(date +%s)
# The engine announces itself with METADATA_UPDATED after join, as md does;
# one configuration runs without it (the core must still be safe).  Every
# configuration also draws clean leaves, device heals with re-add and
# rebuild, and a NEWDISK of a spare (not without the start-up superblock
# update: that update is what shows a starting node a device added while it
# started, see README).
for cfg in "--nodes 2 --devices 2" "--nodes 3 --devices 2 --no-start-sb --no-newdisk" \
	   "--nodes 3 --devices 3" "--nodes 4 --devices 4"; do
	# shellcheck disable=SC2086
	out=$("$sim" --seeds 1-"$n" $cfg $wa) || { echo "$out"; exit 1; }
	echo "[$cfg] $out"
	total=$((total + n))
done
# shellcheck disable=SC2086
"$sim" --seeds 1-50 --nodes 3 --devices 3 $wa --replay-check >/dev/null
echo "determinism: seeds 1-50 replayed with identical trace digests"
echo "total: $total seeds, 0 failures ($(( $(date +%s) - start )) s)"
