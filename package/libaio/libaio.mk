# libaio: lvm2's I/O layer submits its reads with it. Pinned as upstream.
LIBAIO_DEPENDENCIES := $(STORAGE_LIB_DEPENDENCIES)
LIBAIO_LICENSE := LGPL-2.1-or-later
LIBAIO_LICENSE_FILES := COPYING
define LIBAIO_BUILD_CMDS
	+$(Q)scripts/logged libaio build $(LIBAIO_SRC)/build.log $(MAKE) -C $(LIBAIO_SRC)/src CC="$(TARGET_CC)" libaio.a
	$(Q)cp $(LIBAIO_SRC)/src/libaio.a $(SYSROOT)/lib/ && cp $(LIBAIO_SRC)/src/libaio.h $(SYSROOT)/include/
endef
$(eval $(call package,libaio,LIBAIO))
