# tests/engine: the control protocol codec (unit) and the resident engine
# through real NBD clients (integration; see engine-functions.sh).
check_PROGRAMS += tests/engine/test_ctl_proto
TESTS += tests/engine/test_ctl_proto
tests_engine_test_ctl_proto_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(JSONC_CFLAGS)
tests_engine_test_ctl_proto_LDADD = libclraid.la $(CMOCKA_LIBS) $(JSONC_LIBS)

# Integration tests through real NBD clients (qemu-io, nbdcopy, nbdinfo).
ENGINE_TESTS = \
	tests/engine/rw-levels.sh \
	tests/engine/refusals.sh \
	tests/engine/crash-resync.sh \
	tests/engine/crash-resync-parity.sh \
	tests/engine/fail-under-load.sh \
	tests/engine/readd-bitmap.sh \
	tests/engine/spare-rebuild.sh \
	tests/engine/freeze-thaw.sh \
	tests/engine/skip-stale.sh \
	tests/engine/bitmap-all-dirty.sh \
	tests/engine/trim.sh \
	tests/engine/cluster-cpg.sh \
	tests/engine/local-foreign-slots.sh
TESTS += $(ENGINE_TESTS)
dist_check_SCRIPTS += $(ENGINE_TESTS)
EXTRA_DIST += tests/engine/engine-functions.sh
# The shell tests need the plugin built before they run.
check_DATA += nbdkit-clraid-plugin.la
# clraid start --dry-run, which ocf/clraid validates its parameters with.
ENGINE_TESTS += tests/engine/start-dry-run.sh
ENGINE_TESTS += tests/engine/install-paths.sh
ENGINE_TESTS += tests/engine/metrics.sh
ENGINE_TESTS += tests/engine/completion.sh
ENGINE_TESTS += tests/engine/tls-export.sh
ENGINE_TESTS += tests/engine/man-pages.sh
# The Debian package: built from a clean copy of the source, linted,
# installed, run and purged (needs root, dpkg-buildpackage, lintian).
ENGINE_TESTS += tests/engine/package-deb.sh
