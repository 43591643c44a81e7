# tests/bench: benchmark helpers built with the tree (tests/bench/README.md).
# nbdkit-twinfile-plugin.so: the twin-file baseline row of engine.sh, a
# two-file mirror with no engine behind it.
noinst_LTLIBRARIES += tests/bench/nbdkit-twinfile-plugin.la
tests_bench_nbdkit_twinfile_plugin_la_SOURCES = tests/bench/nbdkit_twinfile.c tests/bench/nbdkit_files.h
tests_bench_nbdkit_twinfile_plugin_la_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
tests_bench_nbdkit_twinfile_plugin_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
# nbdkit-rmw6file-plugin.so: the rmw6-file baseline row, RAID6's small
# write (read data, P, Q; write them) over six files with nothing else.
noinst_LTLIBRARIES += tests/bench/nbdkit-rmw6file-plugin.la
tests_bench_nbdkit_rmw6file_plugin_la_SOURCES = tests/bench/nbdkit_rmw6file.c tests/bench/nbdkit_files.h
tests_bench_nbdkit_rmw6file_plugin_la_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS) $(ISAL_CFLAGS)
tests_bench_nbdkit_rmw6file_plugin_la_LIBADD = $(ISAL_LIBS)
tests_bench_nbdkit_rmw6file_plugin_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
