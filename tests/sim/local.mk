# tests/sim: deterministic simulation of N nodes and M shared devices
# running the real protocol core (engine/cluster/mdc.c) on the pure lock
# table, with faults and an invariant checker (ARCHITECTURE §7).
check_PROGRAMS += tests/sim/sim
tests_sim_sim_SOURCES = tests/sim/sim.c tests/sim/coro.c tests/sim/coro.h
tests_sim_sim_LDADD = libclraid.la
TESTS += tests/sim/run-sim.sh tests/sim/selftest-sim.sh
EXTRA_DIST += tests/sim/README
dist_check_SCRIPTS += tests/sim/run-sim.sh tests/sim/selftest-sim.sh
