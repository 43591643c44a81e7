# engine/io: member-device I/O over io_uring (see engine/io/io.h).
libclraid_la_SOURCES += \
	engine/io/io.h \
	engine/io/io_internal.h \
	engine/io/io_ring.c \
	engine/io/io_member.c \
	engine/io/io_sync.c \
	engine/io/io_fault.c \
	engine/io/io_inline.c
libclraid_la_LIBADD += $(URING_LIBS)

# Unit tests: files in a scratch dir under $TMPDIR (default /var/tmp).
check_PROGRAMS += tests/io/test_io tests/io/test_io_fault
TESTS += tests/io/test_io tests/io/test_io_fault
tests_io_test_io_SOURCES = tests/io/test_io.c tests/io/io_test_util.h
tests_io_test_io_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(URING_CFLAGS)
tests_io_test_io_LDADD = libclraid.la $(CMOCKA_LIBS) $(URING_LIBS)
tests_io_test_io_fault_SOURCES = tests/io/test_io_fault.c tests/io/io_test_util.h
tests_io_test_io_fault_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(URING_CFLAGS)
tests_io_test_io_fault_LDADD = libclraid.la $(CMOCKA_LIBS) $(URING_LIBS)

# Micro-benchmark, built but not run by make check: tests/io/bench_io -h
noinst_PROGRAMS += tests/io/bench_io
tests_io_bench_io_SOURCES = tests/io/bench_io.c
tests_io_bench_io_CFLAGS = $(AM_CFLAGS) $(URING_CFLAGS)
tests_io_bench_io_LDADD = libclraid.la $(URING_LIBS)
