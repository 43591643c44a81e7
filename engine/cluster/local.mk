# engine/cluster: the md-cluster protocol core (mdc.h), run by the engine
# (engine/array/array_cluster.c) and by the simulator (tests/sim).
libclraid_la_SOURCES += \
	engine/cluster/mdc.h \
	engine/cluster/mdc.c
