# Unit tests of the policy decision core (agent/policy.c): every row of the
# table, its boundaries, and random fact sets against the invariants
# (CLR_SEED=<n> replays a run).
check_PROGRAMS += tests/agent/test_policy
TESTS += tests/agent/test_policy
tests_agent_test_policy_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
tests_agent_test_policy_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_policy_LDADD = libclraid.la $(CMOCKA_LIBS)

if HAVE_POLICYD
# clraid-policyd's reading of the CIB: unit tests of agent/cib_facts.c,
# then the daemon on CIBs that Pacemaker's own tools write.
check_PROGRAMS += tests/agent/test_cib_facts
TESTS += tests/agent/test_cib_facts tests/agent/policyd-cib.sh
dist_check_SCRIPTS += tests/agent/policyd-cib.sh
tests_agent_test_cib_facts_SOURCES = tests/agent/test_cib_facts.c agent/cib_facts.c agent/cib_facts.h
tests_agent_test_cib_facts_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
tests_agent_test_cib_facts_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(POLICYD_CFLAGS)
tests_agent_test_cib_facts_LDADD = libclraid.la $(CMOCKA_LIBS) $(POLICYD_LIBS)
# The evidence attribute, the error window, and the decider's facts from a
# CIB's status section (agent/evidence.c).
check_PROGRAMS += tests/agent/test_evidence
TESTS += tests/agent/test_evidence
tests_agent_test_evidence_SOURCES = tests/agent/test_evidence.c agent/evidence.c agent/evidence.h \
	agent/cib_facts.c agent/cib_facts.h
tests_agent_test_evidence_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
tests_agent_test_evidence_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(POLICYD_CFLAGS)
tests_agent_test_evidence_LDADD = libclraid.la $(CMOCKA_LIBS) $(POLICYD_LIBS)
endif
