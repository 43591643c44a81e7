# engine/array: the array core (see engine/array/array.h).
libclraid_la_SOURCES += \
	engine/array/array.h \
	engine/array/array_internal.h \
	engine/array/array_assemble.c \
	engine/array/array_state.c \
	engine/array/array_super.c \
	engine/array/array_bitmap.c \
	engine/array/array_legs.c \
	engine/array/array_mirror.c \
	engine/array/array_parity.c \
	engine/array/array_io.c \
	engine/array/array_sync.c \
	engine/array/array_cluster.c \
	engine/array/array_zone.c \
	engine/array/array_plog.c \
	engine/array/array_manage.c \
	engine/array/array_run.c
libclraid_la_LIBADD += $(URING_LIBS) $(ISAL_LIBS) $(JSONC_LIBS) $(BLKID_LIBS)

# Unit/integration tests on member files under $TMPDIR (default /var/tmp).
check_PROGRAMS += tests/array/test_array
TESTS += tests/array/test_array
tests_array_test_array_SOURCES = tests/array/test_array.c tests/array/array_testlib.h
tests_array_test_array_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(JSONC_CFLAGS)
tests_array_test_array_LDADD = libclraid.la $(CMOCKA_LIBS) $(JSONC_LIBS) $(URING_LIBS) $(ISAL_LIBS)

# The same on tmpfs members: served inline, client buffers taken as they are.
TESTS += tests/array/array-on-tmpfs.sh
dist_check_SCRIPTS += tests/array/array-on-tmpfs.sh

# Cluster mode: several arrays in one process on the same member files,
# the md-cluster protocol on the in-process local lock backend.
check_PROGRAMS += tests/array/test_array_cluster
TESTS += tests/array/test_array_cluster
tests_array_test_array_cluster_SOURCES = tests/array/test_array_cluster.c tests/array/array_testlib.h
tests_array_test_array_cluster_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(JSONC_CFLAGS)
tests_array_test_array_cluster_LDADD = libclraid.la $(CMOCKA_LIBS) $(JSONC_LIBS) $(URING_LIBS) $(ISAL_LIBS)

# The files of engine/array call each other one way only (no cycle).
TESTS += tests/array/layering.sh
dist_check_SCRIPTS += tests/array/layering.sh

# The lock-rank checks themselves (built with them on, whatever the tree).
