# engine/cli: the clraid command-line tool.
sbin_PROGRAMS += clraid
clraid_SOURCES = \
	engine/cli/clraid.c engine/cli/cli.h engine/cli/cli_common.c \
	engine/cli/probe.c engine/cli/cmd_create.c engine/cli/cmd_examine.c
clraid_CFLAGS = $(AM_CFLAGS) $(BLKID_CFLAGS) $(JSONC_CFLAGS)
clraid_LDADD = libclraid.la $(BLKID_LIBS) $(JSONC_LIBS)
