# Unit tests of the policy decision core (agent/policy.c): every row of the
# table, its boundaries, and random fact sets against the invariants
# (CLR_SEED=<n> replays a run).
check_PROGRAMS += tests/agent/test_policy
TESTS += tests/agent/test_policy
tests_agent_test_policy_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
tests_agent_test_policy_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_policy_LDADD = libclraid.la $(CMOCKA_LIBS)
