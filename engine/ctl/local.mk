# engine/ctl: the control socket (protocol, server, client, array commands).
libclraid_la_SOURCES += \
	engine/ctl/ctl_proto.c engine/ctl/ctl_proto.h \
	engine/ctl/ctl_server.c engine/ctl/ctl_server.h \
	engine/ctl/ctl_client.c engine/ctl/ctl_client.h \
	engine/ctl/ctl_array.c engine/ctl/ctl_array.h
libclraid_la_LIBADD += $(JSONC_LIBS)
