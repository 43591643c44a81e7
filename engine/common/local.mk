# engine/common: what every part of the engine shares: the lock order
# (engine/common/lockrank.h), checked at run time with --enable-lockrank.
libclraid_la_SOURCES += \
	engine/common/lockrank.h \
	engine/common/lockrank.c

# The checks themselves: an inversion, a double take, a release of a lock
# not held all abort.
check_PROGRAMS += tests/common/test_lockrank
TESTS += tests/common/test_lockrank
tests_common_test_lockrank_SOURCES = tests/common/test_lockrank.c
tests_common_test_lockrank_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) -DCLR_LOCKRANK
tests_common_test_lockrank_LDADD = libclraid.la $(CMOCKA_LIBS)
