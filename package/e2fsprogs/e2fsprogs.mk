# e2fsprogs: static with musl, from the pinned Debian source (Debian's fixes,
# then patches/). The upstream test suite runs on the very binaries
# that go into the image (stripped in place before it runs).

E2FSPROGS_OBJ := $(BUILD)/e2fsprogs
E2FSPROGS_DEPENDENCIES := $(STAMPS)/linux-headers $(STAMPS)/mimalloc-installed $(FAST_STRING_A) package/e2fsprogs/mke2fs.conf
# lib/uuid is BSD-3-Clause, lib/et and lib/ss MIT, the libraries LGPL-2.0; NOTICE says which.
E2FSPROGS_LICENSE := GPL-2.0-only AND LGPL-2.0-only AND BSD-3-Clause AND MIT
E2FSPROGS_LICENSE_FILES := NOTICE
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
# LIBS puts mimalloc (package/mimalloc) and our word-at-a-time memcmp/strncmp
# ahead of musl's malloc and byte loops.
# Through the compiler cache: musl-gcc is a script whose date says nothing
# of the gcc behind it, so the cache asks that gcc for its version and specs.
E2FSPROGS_CC := $(strip $(CCACHE) $(TARGET_CC))
E2FSPROGS_CCACHE := CCACHE_COMPILERCHECK='%compiler% -v'
# Configured by a relative path (../e2fsprogs-src/configure), so every path
# the compiler sees is relative, ccache or not: ../e2fsprogs-src/... up to
# ../../../e2fsprogs-src/... from the build folder and its subfolders, some
# through a sibling (debugfs/../e2fsck/recovery.c). Mapped as PREFIX_MAP
# maps the absolute path, __FILE__ (the programs' assert messages) is the
# /build/e2fsprogs-src/... of before, and another clone folder (CI's,
# legal-info's rebuild) hits the compiler cache.
E2FSPROGS_CFLAGS := $(TARGET_CFLAGS) $(foreach up,../ ../../ ../../../,-ffile-prefix-map=$(up)e2fsprogs-src=/build/e2fsprogs-src)
define E2FSPROGS_CONFIGURE_CMDS
	$(Q)rm -rf $(E2FSPROGS_OBJ) && mkdir -p $(E2FSPROGS_OBJ)
	$(call autotools_configure,e2fsprogs,E2FSPROGS,--disable-nls --disable-fuse2fs --disable-uuidd \
	 --enable-libuuid --enable-libblkid --without-libarchive --enable-fsck \
	 --disable-elf-shlibs --disable-bsd-shlibs,$(E2FSPROGS_CCACHE) CC="$(E2FSPROGS_CC)" \
	 CFLAGS="$(E2FSPROGS_CFLAGS)" LIBS="$(MIMALLOC_A) $(FAST_STRING_A)" PKG_CONFIG=/bin/false,../e2fsprogs-src/configure)
endef
define E2FSPROGS_BUILD_CMDS
	+$(Q)$(E2FSPROGS_CCACHE) scripts/logged e2fsprogs build $(E2FSPROGS_OBJ)/build.log $(MAKE) -C $(E2FSPROGS_OBJ) $(SUBMAKE_J)
	$(Q)cd $(E2FSPROGS_OBJ) && $(TARGET_STRIP) --strip-all $(E2FSPROGS_PROGS)
endef
define E2FSPROGS_INSTALL_CMDS
	$(Q)mkdir -p $(E2FSPROGS_ROOT)/sbin $(E2FSPROGS_ROOT)/etc
	$(Q)for p in $(E2FSPROGS_PROGS); do cp $(E2FSPROGS_OBJ)/$$p $(E2FSPROGS_ROOT)/sbin/; done
	$(Q)for l in $(E2FSPROGS_LINKS); do ln -sf $${l#*:} $(E2FSPROGS_ROOT)/sbin/$${l%%:*}; done
	$(Q)cp package/e2fsprogs/mke2fs.conf $(E2FSPROGS_ROOT)/etc/mke2fs.conf
	$(Q)echo "e2fsprogs: $$(du -cb $(addprefix $(E2FSPROGS_OBJ)/,$(E2FSPROGS_PROGS)) | tail -n1 | cut -f1) bytes in $(words $(E2FSPROGS_PROGS)) stripped programs"
endef
$(eval $(call package,e2fsprogs,E2FSPROGS))

.PHONY: e2fsprogs-check
e2fsprogs-check: $(STAMPS)/e2fsprogs-installed ## run e2fsprogs' own test suite on the image's binaries (SLOW=1: also the slow tests)
	$(Q)tests/e2fsprogs-suite $(E2FSPROGS_OBJ) tests/e2fsprogs-skips
