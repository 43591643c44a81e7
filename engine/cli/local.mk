# engine/cli: the clraid command-line tool.
sbin_PROGRAMS += clraid
clraid_SOURCES = \
	engine/cli/clraid.c engine/cli/cli.h engine/cli/cli_common.c \
	engine/cli/probe.c engine/cli/cmd_create.c engine/cli/cmd_examine.c \
	engine/cli/cli_run.c engine/cli/cmd_start.c engine/cli/cmd_stop.c \
	engine/cli/cmd_status.c engine/cli/cmd_manage.c engine/cli/cmd_check.c
clraid_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCLR_NBDKIT_PLUGIN_PATH='"$(plugindir)/nbdkit-clraid-plugin.so"'
clraid_CFLAGS = $(AM_CFLAGS) $(BLKID_CFLAGS) $(JSONC_CFLAGS)
clraid_LDADD = libclraid.la $(BLKID_LIBS) $(JSONC_LIBS)
