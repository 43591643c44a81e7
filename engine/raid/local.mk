# engine/raid: RAID geometry/mapping (pure), parity over ISA-L, and the
# in-memory write-intent bitmap counters (pure). Tests in tests/raid/.
libclraid_la_SOURCES += \
	engine/raid/layout.c engine/raid/layout.h \
	engine/raid/parity.c engine/raid/parity.h \
	engine/raid/bitmap_counters.c engine/raid/bitmap_counters.h
libclraid_la_LIBADD += $(ISAL_LIBS)

check_PROGRAMS += tests/raid/test_layout tests/raid/test_parity tests/raid/test_bitmap_counters
TESTS += tests/raid/test_layout tests/raid/test_parity tests/raid/test_bitmap_counters
tests_raid_test_layout_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_raid_test_layout_LDADD = libclraid.la $(CMOCKA_LIBS) $(ISAL_LIBS)
tests_raid_test_parity_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(ISAL_CFLAGS)
tests_raid_test_parity_LDADD = libclraid.la $(CMOCKA_LIBS) $(ISAL_LIBS)
tests_raid_test_bitmap_counters_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_raid_test_bitmap_counters_LDADD = libclraid.la $(CMOCKA_LIBS) $(ISAL_LIBS)
