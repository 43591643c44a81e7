# engine/format: md v1.2 superblock and bitmap, pure code.
libclraid_la_SOURCES += \
	engine/format/endian.h \
	engine/format/errbuf.c engine/format/errbuf.h \
	engine/format/md_sb.c engine/format/md_sb.h \
	engine/format/md_bitmap.c engine/format/md_bitmap.h \
	engine/format/create_plan.c engine/format/create_plan.h \
	engine/format/plog.c engine/format/plog.h
