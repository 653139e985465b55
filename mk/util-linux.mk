# util-linux: the disk tools administrators reach for first, static with musl.
# configure checks for every program; `make <program>` builds only ours.

UTIL_LINUX_VERSION := $(call pin,util-linux,5)
UTIL_LINUX_SRC := $(BUILD)/util-linux-src
UTIL_LINUX_OBJ := $(BUILD)/util-linux
UTIL_LINUX_ROOT := $(BUILD)/util-linux-root
UTIL_LINUX_PROGS := lsblk blkid findmnt sfdisk fdisk wipefs
UTIL_LINUX_CONFIGURE := CC="$(MUSL_CC)" CFLAGS="-O2 -ffunction-sections -fdata-sections" \
	LDFLAGS="-static -Wl,--gc-sections" PKG_CONFIG=/bin/false \
	$(UTIL_LINUX_SRC)/configure --disable-shared --enable-static --disable-nls \
	--disable-asciidoc --disable-poman --without-udev --without-ncursesw --without-ncurses \
	--without-tinfo --without-readline --without-libmagic --without-systemd --without-python \
	--without-cryptsetup --without-econf --disable-bash-completion --disable-liblastlog2 \
	--disable-makeinstall-chown --disable-makeinstall-setuid

$(STAMPS)/util-linux-extracted: $(call pin_stamp,util-linux) | $(STAMPS)/host-deps $(BUILD)
	@scripts/extract util-linux $(UTIL_LINUX_SRC) $(UTIL_LINUX_OBJ)
	@touch $@

$(STAMPS)/util-linux-built: $(STAMPS)/util-linux-extracted $(STAMPS)/linux-headers mk/util-linux.mk
	@echo "util-linux: building $(UTIL_LINUX_PROGS) (static, musl)"
	@rm -rf $(UTIL_LINUX_OBJ) && mkdir -p $(UTIL_LINUX_OBJ)
	@cd $(UTIL_LINUX_OBJ) && $(UTIL_LINUX_CONFIGURE) > configure.log 2>&1 || \
	 { tail -n 20 $(UTIL_LINUX_OBJ)/configure.log >&2; echo "util-linux: configure failed; log in $(UTIL_LINUX_OBJ)/configure.log" >&2; exit 1; }
	@# libtool reads -static as "no shared libtool libraries" only; -all-static
	@# makes it link libc statically as well.
	@$(MAKE) -C $(UTIL_LINUX_OBJ) -j$(JOBS) LDFLAGS="-all-static -Wl,--gc-sections" $(UTIL_LINUX_PROGS) > $(UTIL_LINUX_OBJ)/build.log 2>&1 || \
	 { tail -n 30 $(UTIL_LINUX_OBJ)/build.log >&2; echo "util-linux: build failed; log in $(UTIL_LINUX_OBJ)/build.log" >&2; exit 1; }
	@rm -rf $(UTIL_LINUX_ROOT) && mkdir -p $(UTIL_LINUX_ROOT)/sbin
	@for p in $(UTIL_LINUX_PROGS); do strip --strip-all -o $(UTIL_LINUX_ROOT)/sbin/$$p $(UTIL_LINUX_OBJ)/$$p || exit 1; done
	@scripts/check-static util-linux $(UTIL_LINUX_ROOT)/sbin/*
	@touch $@

.PHONY: util-linux
util-linux: $(STAMPS)/util-linux-built ## build the util-linux disk tools only
