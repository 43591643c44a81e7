# Unit tests of the cluster protocol core with a mock host (tests/sim runs
# it under faults).
check_PROGRAMS += tests/mdc/test_mdc
TESTS += tests/mdc/test_mdc
tests_mdc_test_mdc_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_mdc_test_mdc_LDADD = libclraid.la $(CMOCKA_LIBS)
# ... and of the cluster rules (engine/cluster/rules.c).
check_PROGRAMS += tests/mdc/test_rules
TESTS += tests/mdc/test_rules
tests_mdc_test_rules_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_mdc_test_rules_LDADD = libclraid.la $(CMOCKA_LIBS)
# ... and of the clustered RAID5/6 rules (engine/cluster/zone.c).
check_PROGRAMS += tests/mdc/test_zone
TESTS += tests/mdc/test_zone
tests_mdc_test_zone_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_mdc_test_zone_LDADD = libclraid.la $(CMOCKA_LIBS)
