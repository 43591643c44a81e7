# agent/: the policy daemon.  Its pure decision core (policy.h: facts in,
# one action out, issue 15's table) is in libclraid; clraid-policyd reads
# the CIB through libcib (cib_facts.c turns it into facts), publishes this
# node's evidence and decides from everyone's (evidence.c), and carries the
# decision out (libstonithd, the engines' control sockets).
libclraid_la_SOURCES += \
	agent/policy.h \
	agent/policy.c

if HAVE_POLICYD
sbin_PROGRAMS += clraid-policyd
clraid_policyd_SOURCES = agent/policyd.c agent/cib_facts.c agent/cib_facts.h agent/evidence.c agent/evidence.h
clraid_policyd_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
clraid_policyd_CFLAGS = $(AM_CFLAGS) $(POLICYD_CFLAGS) $(JSONC_CFLAGS)
clraid_policyd_LDADD = libclraid.la $(POLICYD_LIBS) $(JSONC_LIBS)
endif
