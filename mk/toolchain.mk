# The target's toolchain, named once: every package's recipe uses these and
# never a tool by its own name, so another architecture (arch/NAME.mk sets
# TARGET_CROSS and GNU_TRIPLET) changes no package file.
#
# C for the image is musl's, static: musl-gcc with the pinned kernel's UAPI
# headers (it passes -nostdinc). C++ has no musl libstdc++ in Debian, so the
# C++ programs link the target's glibc and libstdc++ statically.
KHEADERS := $(BUILD)/kheaders
ifeq ($(TARGET_CROSS),)
MUSL_GCC := musl-gcc
else
# A cross build's musl is Debian's musl-dev for the target (pinned in
# package/musl), unpacked into the build folder; its gcc specs file, which
# names Debian's paths, is rewritten to point there.
MUSL_DIR := $(BUILD)/musl
MUSL_SPECS := $(MUSL_DIR)/musl-gcc.specs
MUSL_GCC := $(TARGET_CROSS)gcc -specs=$(MUSL_SPECS)
$(STAMPS)/musl-sysroot: $(call pin_stamp,musl-dev) | $(STAMPS)/host-deps $(BUILD)
	$(Q)rm -rf $(MUSL_DIR)
	$(call unpack_debs,musl-dev,$(MUSL_DIR)/root)
	$(Q)specs=$(MUSL_DIR)/root/usr/lib/$(GNU_TRIPLET)/musl-gcc.specs && \
	 [ -r $$specs ] || { echo "musl: $$specs missing from the musl-dev package; check its pin in package/musl" >&2; exit 1; } && \
	 sed 's,/usr/\(lib\|include\)/$(GNU_TRIPLET),$(MUSL_DIR)/root/usr/\1/$(GNU_TRIPLET),g' $$specs > $(MUSL_SPECS)
	$(Q)touch $@
# Everything that compiles for the target depends on the host-toolchain
# stamp, so the C library comes with it.
$(STAMPS)/host-toolchain: | $(STAMPS)/musl-sysroot
endif
TARGET_CC := $(MUSL_GCC) -isystem $(KHEADERS)/include
TARGET_CXX := $(TARGET_CROSS)g++
# configure's --host for the C++ programs (they link the target's glibc).
TARGET_CXX_TRIPLET := $(GNU_TRIPLET_GLIBC)
TARGET_AR := $(TARGET_CROSS)ar
TARGET_RANLIB := $(TARGET_CROSS)ranlib
TARGET_STRIP := $(TARGET_CROSS)strip
# -ffunction-sections + --gc-sections drop the library code a static binary
# does not call; PREFIX_MAP keeps build paths out of it.
TARGET_CFLAGS := -O2 -ffunction-sections -fdata-sections $(PREFIX_MAP)
TARGET_LDFLAGS := -static -Wl,--gc-sections
# What an autoconf configure is given besides CC and the flags: the target's
# binutils (configure would look for GNU_TRIPLET-ar, which no host has), and
# in a cross build the answers of the test programs it cannot run there:
# musl's malloc(0) and realloc(p, 0) return a pointer (without this, lvm2
# calls an rpl_malloc nothing defines).
TARGET_CONFIGURE_TOOLS := AR="$(TARGET_AR)" RANLIB="$(TARGET_RANLIB)" STRIP="$(TARGET_STRIP)"$(if $(TARGET_CROSS), \
	ac_cv_func_malloc_0_nonnull=yes ac_cv_func_realloc_0_nonnull=yes)

# Static libraries the storage tools (lvm2, cryptsetup) link, built with musl
# into one private sysroot so nothing of the host's leaks into the image.
SYSROOT := $(BUILD)/sysroot
SYSROOT_PC := $(SYSROOT)/lib/pkgconfig
# The sysroot's own pkg-config files only; none of the host's.
SYSROOT_ENV := PKG_CONFIG_LIBDIR=$(SYSROOT_PC) PKG_CONFIG_PATH= LIBRARY_PATH=$(SYSROOT)/lib
STORAGE_CFLAGS := $(TARGET_CFLAGS) -isystem $(SYSROOT)/include
STORAGE_LDFLAGS := -L$(SYSROOT)/lib -Wl,--gc-sections
STORAGE_LIB_DEPENDENCIES := $(STAMPS)/sysroot $(STAMPS)/linux-headers

$(STAMPS)/sysroot: | $(BUILD)
	$(Q)mkdir -p $(SYSROOT)/include $(SYSROOT_PC)
	$(Q)touch $@

# $(call make_build,NAME,P,ARGUMENTS): the package's own Makefile run in
# P_OBJ on make's share of jobs, its output in build.log. A command block is
# several recipe lines: each that starts a sub-make is marked + itself (the +
# of the line naming the block reaches only its first), or the sub-make finds
# no jobserver and runs alone.
make_build = +$(Q)scripts/logged $(1) build $($(2)_OBJ)/build.log $(MAKE) -C $($(2)_OBJ) $(SUBMAKE_J) $(3)

# $(call install_stripped,P,DIR,FILES): each FILE (a path under P_OBJ)
# stripped into P_ROOT/DIR under its own name.
install_stripped = $(Q)mkdir -p $($(1)_ROOT)/$(2) && $(foreach f,$(3),\
	$(TARGET_STRIP) --strip-all -o $($(1)_ROOT)/$(2)/$(notdir $(f)) $($(1)_OBJ)/$(f) &&) true

# The package flavours: the configure line of a build system, with the
# target's compiler, flags and triplet, for a package's CONFIGURE_CMDS.
# $(call autotools_configure,NAME,P,OPTIONS[,ENV[,CONFIGURE]]): configure in
# P_OBJ (as ./configure for a package built in its source tree, else by
# CONFIGURE or P_SRC's absolute path). ENV comes last, so a package's own CC
# or flags there win.
autotools_configure = $(Q)cd $($(2)_OBJ) && CC="$(TARGET_CC)" CFLAGS="$(TARGET_CFLAGS)" \
	LDFLAGS="$(TARGET_LDFLAGS)" $(TARGET_CONFIGURE_TOOLS) $(4) $(TOP)/scripts/logged $(1) configure \
	$($(2)_OBJ)/configure.log $(or $(5),$(if $(filter $($(2)_SRC),$($(2)_OBJ)),./configure,$($(2)_SRC)/configure)) \
	--host=$(GNU_TRIPLET) $(3)
# $(call cmake_configure,NAME,P,OPTIONS): cmake in P_OBJ, the target named by
# the toolchain file below.
cmake_configure = $(Q)cd $($(2)_OBJ) && $(TOP)/scripts/logged $(1) configure $($(2)_OBJ)/cmake.log \
	cmake $($(2)_SRC) -DCMAKE_TOOLCHAIN_FILE=$(CMAKE_TOOLCHAIN_FILE) $(3)
# $(call meson_configure,NAME,P,OPTIONS): meson setup of P_OBJ (meson makes
# the folder itself), its compilers from the machine file below.
meson_configure = $(Q)rm -rf $($(2)_OBJ) && $(SYSROOT_ENV) $(TOP)/scripts/logged $(1) configure \
	$($(2)_SRC)/meson.log meson setup --$(MESON_MACHINE_KIND)-file $(MESON_MACHINE_FILE) $($(2)_OBJ) $($(2)_SRC) $(3)

# cmake and meson read the toolchain from a file; both are written from the
# variables above (write_if_changed), so a changed tool or flag reconfigures.
# On x86_64 the build machine runs the target's programs, so meson's file is
# a native one; an architecture with TARGET_CROSS set gets a cross file,
# which must name pkg-config (as pkgconfig, the key meson 1.0 knows) and
# the sysroot's .pc folder itself: meson reads neither from the environment
# for the target.
CMAKE_TOOLCHAIN_FILE := $(STAMPS)/toolchain.cmake
define CMAKE_TOOLCHAIN_TEXT
set(CMAKE_C_COMPILER $(firstword $(TARGET_CC)))
set(CMAKE_C_FLAGS_INIT "$(wordlist 2,99,$(TARGET_CC)) $(STORAGE_CFLAGS)")
set(CMAKE_AR $(TARGET_AR))
set(CMAKE_RANLIB $(TARGET_RANLIB))
endef
$(call write_if_changed,$(CMAKE_TOOLCHAIN_FILE),$(CMAKE_TOOLCHAIN_TEXT))
meson_list = [$(subst $(space),$(comma) ,$(foreach w,$(1),'$(w)'))]
MESON_MACHINE_FILE := $(STAMPS)/toolchain.meson
MESON_MACHINE_KIND := $(if $(TARGET_CROSS),cross,native)
define MESON_MACHINE_TEXT
[binaries]
c = $(call meson_list,$(TARGET_CC))
ar = '$(TARGET_AR)'
strip = '$(TARGET_STRIP)'$(if $(TARGET_CROSS),$(newline)pkgconfig = 'pkg-config')
[built-in options]
c_args = $(call meson_list,$(STORAGE_CFLAGS))
c_link_args = $(call meson_list,$(STORAGE_LDFLAGS))$(if $(TARGET_CROSS),$(newline)[properties]$(newline)pkg_config_libdir = '$(SYSROOT_PC)'$(newline)[host_machine]$(newline)system = 'linux'$(newline)cpu_family = '$(KERNEL_ARCH:arm64=aarch64)'$(newline)cpu = '$(KERNEL_ARCH:arm64=aarch64)'$(newline)endian = 'little')
endef
$(call write_if_changed,$(MESON_MACHINE_FILE),$(MESON_MACHINE_TEXT))
