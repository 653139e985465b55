# util-linux: the disk tools administrators reach for first, static with musl.
# configure checks for every program; `make <program>` builds only ours.
# Its libuuid also goes into the sysroot (cryptsetup needs it for LUKS UUIDs).

UTIL_LINUX_OBJ := $(BUILD)/util-linux
UTIL_LINUX_DEPENDENCIES := $(STAMPS)/linux-headers $(STAMPS)/sysroot
UTIL_LINUX_PROGS := lsblk blkid findmnt sfdisk fdisk wipefs
UTIL_LINUX_LICENSE := GPL-2.0-or-later AND LGPL-2.1-or-later AND BSD-3-Clause
UTIL_LINUX_LICENSE_FILES := COPYING Documentation/licenses/COPYING.GPL-2.0-or-later \
	Documentation/licenses/COPYING.LGPL-2.1-or-later Documentation/licenses/COPYING.BSD-3-Clause
# The generated files are marked current so make never calls for automake
# after a patch touched a Makefile.am (Debian's did, for 2.41; regenerating
# needs gtk-doc and gettext's autopoint).
define UTIL_LINUX_POST_PATCH_CMDS
	$(Q)cd $(UTIL_LINUX_SRC) && now=$$(date +%s.%N) && find . \( -name Makefile.in -o -name configure \
	 -o -name aclocal.m4 -o -name config.h.in \) -exec touch -d @$$now {} +
endef
define UTIL_LINUX_CONFIGURE_CMDS
	$(Q)rm -rf $(UTIL_LINUX_OBJ) && mkdir -p $(UTIL_LINUX_OBJ)
	$(call autotools_configure,util-linux,UTIL_LINUX,--disable-shared --enable-static --disable-nls \
	 --disable-asciidoc --disable-poman --without-udev --without-ncursesw --without-ncurses \
	 --without-tinfo --without-readline --without-libmagic --without-systemd --without-python \
	 --without-cryptsetup --without-econf --disable-bash-completion --disable-liblastlog2 \
	 --disable-makeinstall-chown --disable-makeinstall-setuid,PKG_CONFIG=/bin/false)
endef
# libtool reads -static as "no shared libtool libraries" only; -all-static
# makes it link libc statically as well.
define UTIL_LINUX_BUILD_CMDS
	+$(Q)scripts/logged util-linux build $(UTIL_LINUX_OBJ)/build.log $(MAKE) -C $(UTIL_LINUX_OBJ) $(SUBMAKE_J) \
	 LDFLAGS="-all-static -Wl,--gc-sections" $(UTIL_LINUX_PROGS) libuuid.la
endef
define UTIL_LINUX_INSTALL_CMDS
	$(call install_stripped,UTIL_LINUX,sbin,$(UTIL_LINUX_PROGS))
	$(Q)mkdir -p $(SYSROOT)/include/uuid
	$(Q)cp $(UTIL_LINUX_OBJ)/.libs/libuuid.a $(SYSROOT)/lib/
	$(Q)cp $(UTIL_LINUX_SRC)/libuuid/src/uuid.h $(SYSROOT)/include/uuid/
	$(Q)printf 'Name: uuid\nDescription: util-linux libuuid\nVersion: %s\nCflags: -I%s/include/uuid\nLibs: -L%s/lib -luuid\n' \
	  '$(UTIL_LINUX_VERSION)' '$(SYSROOT)' '$(SYSROOT)' > $(SYSROOT_PC)/uuid.pc
endef
$(eval $(call package,util-linux,UTIL_LINUX))
