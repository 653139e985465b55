# cryptsetup: LUKS1 and LUKS2, static with musl. The kernel crypto API does
# the ciphers and hashes (AF_ALG), so no OpenSSL or libgcrypt goes into the
# image; argon2 is cryptsetup's own bundled implementation. No udev, no
# external token plugins (they are shared objects), no veritysetup or
# integritysetup.

CRYPTSETUP_VERSION := $(call pin,cryptsetup,5)
CRYPTSETUP_SRC := $(BUILD)/cryptsetup-src
CRYPTSETUP_OBJ := $(BUILD)/cryptsetup
CRYPTSETUP_ROOT := $(BUILD)/cryptsetup-root
CRYPTSETUP_OPTIONS := -Dcrypto-backend=kernel -Dargon-implementation=internal -Dblkid=false \
	-Dudev=false -Dssh-token=false -Dexternal-tokens=false -Dnls=false -Dasciidoc=disabled \
	-Dveritysetup=false -Dintegritysetup=false -Dhw-opal=false -Dpwquality=false -Dfips=false \
	-Dstatic-cryptsetup=true -Denable-static=true --default-library=static --buildtype=release

$(STAMPS)/cryptsetup-built: $(call pin_stamp,cryptsetup) $(STAMPS)/lvm2-built $(STAMPS)/json-c-built \
		$(STAMPS)/popt-built $(STAMPS)/libuuid-installed mk/cryptsetup.mk mk/storage-libs.mk
	@scripts/extract cryptsetup $(CRYPTSETUP_SRC) $(CRYPTSETUP_OBJ)
	@echo "cryptsetup: building (static, musl, kernel crypto API)"
	@CC="$(MUSL_CC)" CFLAGS="$(STORAGE_CFLAGS)" LDFLAGS="$(STORAGE_LDFLAGS)" $(SYSROOT_ENV) \
	 scripts/logged cryptsetup configure $(CRYPTSETUP_SRC)/meson.log \
	 meson setup $(CRYPTSETUP_OBJ) $(CRYPTSETUP_SRC) $(CRYPTSETUP_OPTIONS)
	@$(SYSROOT_ENV) scripts/logged cryptsetup build $(CRYPTSETUP_OBJ)/build.log ninja -C $(CRYPTSETUP_OBJ) -j$(JOBS) src/cryptsetup
	@rm -rf $(CRYPTSETUP_ROOT) && mkdir -p $(CRYPTSETUP_ROOT)/sbin
	@strip --strip-all -o $(CRYPTSETUP_ROOT)/sbin/cryptsetup $(CRYPTSETUP_OBJ)/src/cryptsetup
	@scripts/check-static cryptsetup $(CRYPTSETUP_ROOT)/sbin/cryptsetup
	@touch $@

.PHONY: cryptsetup
cryptsetup: $(STAMPS)/cryptsetup-built ## build cryptsetup only
