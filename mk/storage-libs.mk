# Static libraries the storage tools (lvm2, cryptsetup) link, built with musl
# into one private sysroot so nothing of the host's leaks into the image.

SYSROOT := $(BUILD)/sysroot
SYSROOT_PC := $(SYSROOT)/lib/pkgconfig
# The sysroot's own pkg-config files only; none of the host's.
SYSROOT_ENV := PKG_CONFIG_LIBDIR=$(SYSROOT_PC) PKG_CONFIG_PATH= LIBRARY_PATH=$(SYSROOT)/lib
STORAGE_CFLAGS := -O2 -ffunction-sections -fdata-sections -isystem $(SYSROOT)/include
STORAGE_LDFLAGS := -L$(SYSROOT)/lib -Wl,--gc-sections

$(STAMPS)/sysroot: | $(BUILD)
	@mkdir -p $(SYSROOT)/include $(SYSROOT_PC)
	@touch $@

# libaio: lvm2's I/O layer submits its reads with it.
LIBAIO_SRC := $(BUILD)/libaio-src
$(STAMPS)/libaio-built: $(call pin_stamp,libaio) $(STAMPS)/sysroot $(STAMPS)/linux-headers mk/storage-libs.mk | $(STAMPS)/host-deps
	@scripts/extract libaio $(LIBAIO_SRC)
	@echo "libaio: building (static, musl)"
	@scripts/logged libaio build $(LIBAIO_SRC)/build.log $(MAKE) -C $(LIBAIO_SRC)/src CC="$(MUSL_CC)" libaio.a
	@cp $(LIBAIO_SRC)/src/libaio.a $(SYSROOT)/lib/ && cp $(LIBAIO_SRC)/src/libaio.h $(SYSROOT)/include/
	@touch $@

# json-c: LUKS2 keeps its metadata as JSON.
JSON_C_SRC := $(BUILD)/json-c-src
JSON_C_OBJ := $(BUILD)/json-c
$(STAMPS)/json-c-built: $(call pin_stamp,json-c) $(STAMPS)/sysroot $(STAMPS)/linux-headers mk/storage-libs.mk | $(STAMPS)/host-deps
	@scripts/extract json-c $(JSON_C_SRC) $(JSON_C_OBJ)
	@echo "json-c: building (static, musl)"
	@mkdir -p $(JSON_C_OBJ)
	@cd $(JSON_C_OBJ) && CC="$(MUSL_CC)" CFLAGS="$(STORAGE_CFLAGS)" \
	 $(TOP)/scripts/logged json-c configure $(JSON_C_OBJ)/cmake.log cmake $(JSON_C_SRC) \
	 -DCMAKE_INSTALL_PREFIX=$(SYSROOT) -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF \
	 -DBUILD_STATIC_LIBS=ON -DBUILD_TESTING=OFF -DBUILD_APPS=OFF -DDISABLE_WERROR=ON \
	 -DCMAKE_BUILD_TYPE=Release
	@scripts/logged json-c build $(JSON_C_OBJ)/build.log $(MAKE) -C $(JSON_C_OBJ) -j$(JOBS) install
	@touch $@

# popt: cryptsetup's command line.
POPT_SRC := $(BUILD)/popt-src
$(STAMPS)/popt-built: $(call pin_stamp,popt) $(STAMPS)/sysroot $(STAMPS)/linux-headers mk/storage-libs.mk | $(STAMPS)/host-deps
	@scripts/extract popt $(POPT_SRC)
	@echo "popt: building (static, musl)"
	@cd $(POPT_SRC) && CC="$(MUSL_CC)" CFLAGS="$(STORAGE_CFLAGS)" \
	 $(TOP)/scripts/logged popt configure $(POPT_SRC)/configure.log ./configure --prefix=$(SYSROOT) \
	 --disable-shared --enable-static --disable-nls
	@scripts/logged popt build $(POPT_SRC)/build.log $(MAKE) -C $(POPT_SRC) -j$(JOBS) install
	@touch $@

# libuuid from our util-linux build (cryptsetup needs it for LUKS UUIDs).
$(STAMPS)/libuuid-installed: $(STAMPS)/util-linux-built $(STAMPS)/sysroot
	@mkdir -p $(SYSROOT)/include/uuid
	@cp $(UTIL_LINUX_OBJ)/.libs/libuuid.a $(SYSROOT)/lib/
	@cp $(UTIL_LINUX_SRC)/libuuid/src/uuid.h $(SYSROOT)/include/uuid/
	@printf 'Name: uuid\nDescription: util-linux libuuid\nVersion: %s\nCflags: -I%s/include/uuid\nLibs: -L%s/lib -luuid\n' \
	  '$(UTIL_LINUX_VERSION)' '$(SYSROOT)' '$(SYSROOT)' > $(SYSROOT_PC)/uuid.pc
	@touch $@
