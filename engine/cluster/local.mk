# engine/cluster: the md-cluster protocol core (mdc.h) and the cluster rules
# (rules.h: member-state transitions, rebuild ownership, write admission),
# run by the engine (engine/array/array_cluster.c) and by the simulator
# (tests/sim, which builds its own copy with CLR_RULES_FAULTS); and the
# clustered RAID5/6 rules (zone.h: zone locks, the partial-parity log, its
# replay), run by tests/sim/sim56 (its own copy, CLR_ZONE_FAULTS).
libclraid_la_SOURCES += \
	engine/cluster/mdc.h \
	engine/cluster/mdc.c \
	engine/cluster/rules.h \
	engine/cluster/rules.c \
	engine/cluster/zone.h \
	engine/cluster/zone.c
