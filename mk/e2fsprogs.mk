# e2fsprogs: static with musl, from the pinned orig tarball plus
# e2fsprogs-patches/. The upstream test suite runs on the very binaries
# that go into the image (stripped in place before it runs).

E2FSPROGS_VERSION := $(call pin,e2fsprogs,5)
E2FSPROGS_SRC := $(BUILD)/e2fsprogs-src
E2FSPROGS_OBJ := $(BUILD)/e2fsprogs
E2FSPROGS_ROOT := $(BUILD)/e2fsprogs-root
E2FSPROGS_PATCHES := e2fsprogs-patches/series $(wildcard e2fsprogs-patches/*.patch)
# Built binary (path in the build tree) -> /sbin name in the image.
E2FSPROGS_PROGS := e2fsck/e2fsck misc/mke2fs misc/tune2fs misc/dumpe2fs \
	debugfs/debugfs resize/resize2fs misc/e2image misc/e2undo misc/e4defrag \
	misc/filefrag misc/e2freefrag misc/badblocks misc/mklost+found misc/fsck
# Extra names the programs answer to (they look at argv[0]).
E2FSPROGS_LINKS := fsck.ext2:e2fsck fsck.ext3:e2fsck fsck.ext4:e2fsck \
	mkfs.ext2:mke2fs mkfs.ext3:mke2fs mkfs.ext4:mke2fs e2label:tune2fs \
	e2mmpstatus:dumpe2fs
# -ffunction-sections + --gc-sections drop unused library code from each
# static binary (the libraries are linked into every one of them).
# LIBS puts our word-at-a-time memcmp/strncmp ahead of musl's byte loops.
E2FSPROGS_CONFIGURE := CC="$(MUSL_CC)" CFLAGS="-O2 -ffunction-sections -fdata-sections" \
	LDFLAGS="-static -Wl,--gc-sections" LIBS="$(FAST_STRING_A)" PKG_CONFIG=/bin/false \
	$(E2FSPROGS_SRC)/configure --disable-nls --disable-fuse2fs --disable-uuidd \
	--enable-libuuid --enable-libblkid --without-libarchive --enable-fsck \
	--disable-elf-shlibs --disable-bsd-shlibs

$(STAMPS)/e2fsprogs-extracted: $(call pin_stamp,e2fsprogs) | $(STAMPS)/host-deps $(BUILD)
	@scripts/extract e2fsprogs $(E2FSPROGS_SRC) $(E2FSPROGS_OBJ)
	@touch $@

$(STAMPS)/e2fsprogs-patched: $(STAMPS)/e2fsprogs-extracted $(E2FSPROGS_PATCHES)
	@scripts/apply-patches $(E2FSPROGS_SRC) e2fsprogs-patches/series
	@touch $@

$(STAMPS)/e2fsprogs-configured: $(STAMPS)/e2fsprogs-patched $(STAMPS)/linux-headers $(FAST_STRING_A) mk/e2fsprogs.mk
	@rm -rf $(E2FSPROGS_OBJ) && mkdir -p $(E2FSPROGS_OBJ)
	@cd $(E2FSPROGS_OBJ) && $(E2FSPROGS_CONFIGURE) > configure.log 2>&1 || \
	 { tail -n 20 $(E2FSPROGS_OBJ)/configure.log >&2; echo "e2fsprogs: configure failed; log in $(E2FSPROGS_OBJ)/configure.log" >&2; exit 1; }
	@touch $@

$(STAMPS)/e2fsprogs-built: $(STAMPS)/e2fsprogs-configured
	@echo "e2fsprogs: building (static, musl)"
	@$(MAKE) -C $(E2FSPROGS_OBJ) -j$(JOBS) > $(E2FSPROGS_OBJ)/build.log 2>&1 || \
	 { tail -n 30 $(E2FSPROGS_OBJ)/build.log >&2; echo "e2fsprogs: build failed; log in $(E2FSPROGS_OBJ)/build.log" >&2; exit 1; }
	@cd $(E2FSPROGS_OBJ) && strip --strip-all $(E2FSPROGS_PROGS)
	@scripts/check-static e2fsprogs $(addprefix $(E2FSPROGS_OBJ)/,$(E2FSPROGS_PROGS))
	@rm -rf $(E2FSPROGS_ROOT) && mkdir -p $(E2FSPROGS_ROOT)/sbin $(E2FSPROGS_ROOT)/etc
	@for p in $(E2FSPROGS_PROGS); do cp $(E2FSPROGS_OBJ)/$$p $(E2FSPROGS_ROOT)/sbin/; done
	@for l in $(E2FSPROGS_LINKS); do ln -sf $${l#*:} $(E2FSPROGS_ROOT)/sbin/$${l%%:*}; done
	@cp configs/mke2fs.conf $(E2FSPROGS_ROOT)/etc/mke2fs.conf
	@echo "e2fsprogs: $$(du -cb $(addprefix $(E2FSPROGS_OBJ)/,$(E2FSPROGS_PROGS)) | tail -n1 | cut -f1) bytes in $(words $(E2FSPROGS_PROGS)) stripped programs"
	@touch $@

$(STAMPS)/e2fsprogs-built: configs/mke2fs.conf

.PHONY: e2fsprogs e2fsprogs-check
e2fsprogs: $(STAMPS)/e2fsprogs-built ## build e2fsprogs only
e2fsprogs-check: $(STAMPS)/e2fsprogs-built ## run e2fsprogs' own test suite on the image's binaries (SLOW=1: also the slow tests)
	@tests/e2fsprogs-suite $(E2FSPROGS_OBJ) tests/e2fsprogs-skips
