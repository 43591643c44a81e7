#!/bin/sh
# make check: the clustered RAID5/6 simulator (tests/sim/README56) over
# several configurations, SIM56_SEEDS seeds each (default 2000), and the
# lock traffic of disjoint writers.
set -e
sim="${top_builddir:-.}/tests/sim/sim56"
n="${SIM56_SEEDS:-2000}"
total=0
start=$(date +%s)
for cfg in "--level 5 --nodes 2 --data 3" "--level 5 --nodes 3 --data 3 --zone-stripes 1" \
	   "--level 6 --nodes 3 --data 3" "--level 6 --nodes 4 --data 4 --zone-stripes 3"; do
	# shellcheck disable=SC2086
	out=$("$sim" --seeds 1-"$n" $cfg) || { echo "$out"; exit 1; }
	echo "[$cfg] $out"
	total=$((total + n))
done
# Disjoint writers cause no lock traffic once each holds its zones (issue
# 16: fewer than 1 lock request per 10,000 writes).
out=$("$sim" --seeds 1-10 --disjoint --nodes 3 --stripes 12 --zone-stripes 1 --steps 20000) ||
	{ echo "$out"; exit 1; }
echo "[disjoint] $out"
echo "$out" | awk '/^steady state/ { req = $10; w = $14 }
	END { if (w == "" || w < 10000 || req * 10000 >= w) {
		print "FAIL: disjoint writers: " req " lock requests for " w " writes"; exit 1 } }'
echo "total: $total seeds, 0 failures ($(( $(date +%s) - start )) s)"
