# tests/sim: deterministic simulation of N nodes and M shared devices
# running the real protocol core (engine/cluster/mdc.c) and cluster rules
# (engine/cluster/rules.c) on the pure lock table, with faults and an
# invariant checker (tests/sim/README).  It builds its own copy of mdc.c and
# rules.c with CLR_RULES_FAULTS: --inject-bug breaks a shared rule there
# (the engine's build has no such switch).
check_PROGRAMS += tests/sim/sim
tests_sim_sim_SOURCES = tests/sim/sim.c tests/sim/coro.c tests/sim/coro.h \
	engine/cluster/mdc.c engine/cluster/rules.c
tests_sim_sim_CPPFLAGS = $(AM_CPPFLAGS) -DCLR_RULES_FAULTS
tests_sim_sim_LDADD = libclraid.la
TESTS += tests/sim/run-sim.sh tests/sim/selftest-sim.sh
EXTRA_DIST += tests/sim/README
dist_check_SCRIPTS += tests/sim/run-sim.sh tests/sim/selftest-sim.sh
# sim56: clustered RAID5/6 (zone locks, the partial-parity log, replay by a
# survivor) over the real zone rules (engine/cluster/zone.c, its own copy
# with CLR_ZONE_FAULTS) and the pure lock table (tests/sim/README56).
check_PROGRAMS += tests/sim/sim56
tests_sim_sim56_SOURCES = tests/sim/sim56.c engine/cluster/zone.c
tests_sim_sim56_CPPFLAGS = $(AM_CPPFLAGS) -DCLR_ZONE_FAULTS
tests_sim_sim56_LDADD = libclraid.la
TESTS += tests/sim/run-sim56.sh tests/sim/selftest-sim56.sh
EXTRA_DIST += tests/sim/README56
dist_check_SCRIPTS += tests/sim/run-sim56.sh tests/sim/selftest-sim56.sh
