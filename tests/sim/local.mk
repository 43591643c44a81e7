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
