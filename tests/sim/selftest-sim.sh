#!/bin/sh
# make check: the simulator's checker can fail.  Each --inject-bug breaks
# one rule; some seed in 1-1000 must catch it.
set -e
sim="${top_builddir:-.}/tests/sim/sim"
wa=""

run() { # bug [options...]
	bug=$1
	shift
	# shellcheck disable=SC2086
	"$sim" --seeds 1-1000 "$@" $wa --inject-bug="$bug" --expect-fail
}

# Shared rules: each bug breaks a rule the engine runs too, in
# engine/cluster/rules.c (write admission, remote RE_ADD, rebuild ownership
# and completion, superblock reload, the start's member check) or
# engine/cluster/mdc.c (read balancing during recovery,
# draining a resync window, NEWDISK agreement, unclean leave).  The
# simulator's build of those files has the fault switch (CLR_RULES_FAULTS);
# the engine's has none.
for bug in ignore-window ignore-hold readd-no-write orphan-never sb-no-faulty \
	   start-missing balance-in-recovery no-drain newdisk-ignore-enoent leave-no-needs-sync; do
	run "$bug"
done
run rebuild-early --nodes 2 --devices 2

# Checker self-tests (sim-local, the engine has its own path): they break
# the simulator's own data path (bitmap before data, failing before the
# ack, lazy clearing, resync source, read source) to show that checkers
# (c), (a), (e) and (b) can fail.
for bug in bitmap-after-data ack-before-fail clear-pending resync-any-source \
	   readd-read-early; do
	run "$bug"
done
