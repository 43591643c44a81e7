# tests: cmocka unit tests and shell integration tests on real tools.
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)

# --- the one C style (.clang-format) ---
TESTS += tests/style.sh
dist_check_SCRIPTS += tests/style.sh

# --- unit tests (pure code) ---
check_PROGRAMS += tests/format/test_md_sb tests/format/test_md_bitmap tests/format/test_create_plan
TESTS += tests/format/test_md_sb tests/format/test_md_bitmap tests/format/test_create_plan
tests_format_test_md_sb_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_format_test_md_sb_LDADD = libclraid.la $(CMOCKA_LIBS)
tests_format_test_md_bitmap_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_format_test_md_bitmap_LDADD = libclraid.la $(CMOCKA_LIBS)
tests_format_test_create_plan_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_format_test_create_plan_LDADD = libclraid.la $(CMOCKA_LIBS)
check_PROGRAMS += tests/format/test_plog
TESTS += tests/format/test_plog
tests_format_test_plog_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_format_test_plog_LDADD = libclraid.la $(CMOCKA_LIBS)

# --- integration tests (real mdadm, blkid, loop devices) ---
EXTRA_DIST += tests/functions.sh
TESTS += \
	tests/format/create-examine.sh \
	tests/format/mdadm-compat.sh \
	tests/format/bad-input.sh
dist_check_SCRIPTS += \
	tests/format/create-examine.sh \
	tests/format/mdadm-compat.sh \
	tests/format/bad-input.sh

check_PROGRAMS += tests/format/sbpatch
tests_format_sbpatch_LDADD = libclraid.la

# --- fuzzing: the metadata decoders under libFuzzer + ASan + UBSan ---
EXTRA_DIST += tests/fuzz/fuzz_format.c tests/fuzz/corpus
TESTS += tests/fuzz/run-fuzz.sh
dist_check_SCRIPTS += tests/fuzz/run-fuzz.sh
if HAVE_FUZZ
check_DATA += tests/fuzz/fuzz_format
CLEANFILES += tests/fuzz/fuzz_format
tests/fuzz/fuzz_format: $(top_srcdir)/tests/fuzz/fuzz_format.c \
		$(top_srcdir)/engine/format/errbuf.c $(top_srcdir)/engine/format/md_sb.c \
		$(top_srcdir)/engine/format/md_bitmap.c $(top_srcdir)/engine/format/plog.c config.h
	$(AM_V_CC)$(MKDIR_P) tests/fuzz && \
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-include config.h -I$(top_srcdir)/engine -I. \
		$(top_srcdir)/tests/fuzz/fuzz_format.c $(top_srcdir)/engine/format/errbuf.c \
		$(top_srcdir)/engine/format/md_sb.c $(top_srcdir)/engine/format/md_bitmap.c \
		$(top_srcdir)/engine/format/plog.c -o $@
endif
