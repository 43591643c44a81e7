# engine/cluster: the md-cluster protocol core (mdc.h) and the cluster rules
# (rules.h: member-state transitions, rebuild ownership, write admission),
# run by the engine (engine/array/array_cluster.c) and by the simulator
# (tests/sim, which builds its own copy with CLR_RULES_FAULTS).
libclraid_la_SOURCES += \
	engine/cluster/mdc.h \
	engine/cluster/mdc.c \
	engine/cluster/rules.h \
	engine/cluster/rules.c
