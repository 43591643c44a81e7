# engine/nbd: the nbdkit plugin, the resident engine's front end.
# nbdkit's own plugindir (configure --with-nbdkit-plugindir)
plugindir = $(NBDKIT_PLUGINDIR)
plugin_LTLIBRARIES = nbdkit-clraid-plugin.la
nbdkit_clraid_plugin_la_SOURCES = engine/nbd/clraid_plugin.c
nbdkit_clraid_plugin_la_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS) $(JSONC_CFLAGS)
nbdkit_clraid_plugin_la_LIBADD = libclraid.la $(JSONC_LIBS)
nbdkit_clraid_plugin_la_LDFLAGS = -module -avoid-version -shared \
	-rpath $(plugindir) -export-symbols-regex '^plugin_init$$'
