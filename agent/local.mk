# agent/: the policy daemon's pure decision core (policy.h: facts in, one
# action out, issue 15's table).  The daemon around it (CIB watching,
# probes, libstonithd) is not built yet.
libclraid_la_SOURCES += \
	agent/policy.h \
	agent/policy.c
