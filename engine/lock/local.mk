# engine/lock: the cluster lock service (doc/architecture.md §4): one DLM-semantics
# interface (lock.h), the pure lock table, the local / cpg / dlm backends,
# and md-cluster style broadcast (bcast.h).  Built as its own convenience
# library so that only these files see the corosync/pacemaker/dlm flags.
noinst_LTLIBRARIES += libclraid_lock.la
libclraid_lock_la_SOURCES = \
	engine/lock/lock.h \
	engine/lock/lock_internal.h \
	engine/lock/lock_wire.h \
	engine/lock/lock.c \
	engine/lock/lock_backends.c \
	engine/lock/lock_table.h \
	engine/lock/lock_table.c \
	engine/lock/lock_local.c \
	engine/lock/lock_repl.h \
	engine/lock/lock_repl.c \
	engine/lock/kernel_lockspace.c \
	engine/lock/bcast.h \
	engine/lock/bcast.c
# The cluster backends are built when ./configure found their libraries
# (configure.ac); lock.c refuses the ones left out.
if HAVE_LOCK_CPG
libclraid_lock_la_SOURCES += engine/lock/lock_cpg.c
endif
if HAVE_LOCK_DLM
libclraid_lock_la_SOURCES += engine/lock/lock_dlm.c
endif
libclraid_lock_la_CFLAGS = $(AM_CFLAGS) $(CPG_CFLAGS) $(QUORUM_CFLAGS) \
	$(FENCING_CFLAGS) $(DLM_CFLAGS)
libclraid_la_LIBADD += libclraid_lock.la $(CPG_LIBS) $(QUORUM_LIBS) \
	$(FENCING_LIBS) $(DLM_LIBS)

# Unit tests (pure code and the in-process backends).
check_PROGRAMS += tests/lock/test_lock_table tests/lock/test_lock_local \
	tests/lock/test_lock_repl tests/lock/test_bcast tests/lock/test_bcast_token
TESTS += tests/lock/test_lock_table tests/lock/test_lock_local \
	tests/lock/test_lock_repl tests/lock/test_bcast tests/lock/test_bcast_token
tests_lock_test_lock_table_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_lock_test_lock_table_LDADD = libclraid.la $(CMOCKA_LIBS)
tests_lock_test_lock_local_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_lock_test_lock_local_LDADD = libclraid.la $(CMOCKA_LIBS)
tests_lock_test_lock_repl_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_lock_test_lock_repl_LDADD = libclraid.la $(CMOCKA_LIBS)
tests_lock_test_bcast_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_lock_test_bcast_LDADD = libclraid.la $(CMOCKA_LIBS)
# includes engine/lock/bcast.c (white-box): its symbols take the place of
# the library's
tests_lock_test_bcast_token_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_lock_test_bcast_token_LDADD = libclraid.la $(CMOCKA_LIBS)
# The dlm backend against a fake libdlm (this machine has no kernel DLM):
# the fake's symbols in the test program interpose on libdlm's.
if HAVE_LOCK_DLM
check_PROGRAMS += tests/lock/test_lock_dlm
TESTS += tests/lock/test_lock_dlm
endif
tests_lock_test_lock_dlm_SOURCES = tests/lock/test_lock_dlm.c \
	tests/lock/fake_libdlm.c tests/lock/fake_libdlm.h
tests_lock_test_lock_dlm_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(DLM_CFLAGS)
tests_lock_test_lock_dlm_LDADD = libclraid.la $(CMOCKA_LIBS)

# A member process for the corosync tests and the benchmark.
noinst_PROGRAMS += tests/lock/lock_member
tests_lock_lock_member_LDADD = libclraid.la
if HAVE_LIBCPG
noinst_PROGRAMS += tests/bench/cpg_rtt
endif
tests_bench_cpg_rtt_CFLAGS = $(AM_CFLAGS) $(CPG_CFLAGS)
tests_bench_cpg_rtt_LDADD = $(CPG_LIBS)

# Integration: a private corosync in private namespaces, 3-5 members.
if HAVE_LOCK_CPG
TESTS += tests/lock/test-cpg-cluster.sh tests/lock/test-cpg-partition.sh
endif
dist_check_SCRIPTS += tests/lock/test-cpg-cluster.sh tests/lock/test-cpg-partition.sh
EXTRA_DIST += tests/lock/cluster-functions.sh tests/lock/corosync-conf.sh tests/bench/locks.sh
