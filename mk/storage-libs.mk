# Static libraries the storage tools (lvm2, cryptsetup) link, built with musl
# into one private sysroot so nothing of the host's leaks into the image.
# Their roots hold only their licence texts: the code is inside lvm and cryptsetup.

SYSROOT := $(BUILD)/sysroot
SYSROOT_PC := $(SYSROOT)/lib/pkgconfig
# The sysroot's own pkg-config files only; none of the host's.
SYSROOT_ENV := PKG_CONFIG_LIBDIR=$(SYSROOT_PC) PKG_CONFIG_PATH= LIBRARY_PATH=$(SYSROOT)/lib
STORAGE_CFLAGS := -O2 -ffunction-sections -fdata-sections $(PREFIX_MAP) -isystem $(SYSROOT)/include
STORAGE_LDFLAGS := -L$(SYSROOT)/lib -Wl,--gc-sections
STORAGE_LIB_DEPENDENCIES := $(STAMPS)/sysroot $(STAMPS)/linux-headers

$(STAMPS)/sysroot: | $(BUILD)
	@mkdir -p $(SYSROOT)/include $(SYSROOT_PC)
	@touch $@

# libaio: lvm2's I/O layer submits its reads with it. Pinned as upstream.
LIBAIO_DEPENDENCIES := $(STORAGE_LIB_DEPENDENCIES)
LIBAIO_LICENSE := LGPL-2.1-or-later
LIBAIO_LICENSE_FILES := COPYING
define LIBAIO_BUILD_CMDS
	@scripts/logged libaio build $(LIBAIO_SRC)/build.log $(MAKE) -C $(LIBAIO_SRC)/src CC="$(MUSL_CC)" libaio.a
	@cp $(LIBAIO_SRC)/src/libaio.a $(SYSROOT)/lib/ && cp $(LIBAIO_SRC)/src/libaio.h $(SYSROOT)/include/
endef
$(eval $(call package,libaio,LIBAIO))

# json-c: LUKS2 keeps its metadata as JSON. Pinned as upstream.
JSON_C_OBJ := $(BUILD)/json-c
JSON_C_DEPENDENCIES := $(STORAGE_LIB_DEPENDENCIES)
JSON_C_LICENSE := MIT
JSON_C_LICENSE_FILES := COPYING
define JSON_C_CONFIGURE_CMDS
	@cd $(JSON_C_OBJ) && CC="$(MUSL_CC)" CFLAGS="$(STORAGE_CFLAGS)" \
	 $(TOP)/scripts/logged json-c configure $(JSON_C_OBJ)/cmake.log cmake $(JSON_C_SRC) \
	 -DCMAKE_INSTALL_PREFIX=$(SYSROOT) -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF \
	 -DBUILD_STATIC_LIBS=ON -DBUILD_TESTING=OFF -DBUILD_APPS=OFF -DDISABLE_WERROR=ON \
	 -DCMAKE_BUILD_TYPE=Release
endef
define JSON_C_BUILD_CMDS
	@scripts/logged json-c build $(JSON_C_OBJ)/build.log $(MAKE) -C $(JSON_C_OBJ) $(SUBMAKE_J) install
endef
$(eval $(call package,json-c,JSON_C))

# popt: cryptsetup's command line. Pinned as upstream.
POPT_DEPENDENCIES := $(STORAGE_LIB_DEPENDENCIES)
POPT_LICENSE := MIT
POPT_LICENSE_FILES := COPYING
define POPT_CONFIGURE_CMDS
	@cd $(POPT_SRC) && CC="$(MUSL_CC)" CFLAGS="$(STORAGE_CFLAGS)" \
	 $(TOP)/scripts/logged popt configure $(POPT_SRC)/configure.log ./configure --prefix=$(SYSROOT) \
	 --disable-shared --enable-static --disable-nls
endef
define POPT_BUILD_CMDS
	@scripts/logged popt build $(POPT_SRC)/build.log $(MAKE) -C $(POPT_SRC) $(SUBMAKE_J) install
endef
$(eval $(call package,popt,POPT))
