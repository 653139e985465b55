# GPT fdisk: gdisk (interactive, with its recovery menu), sgdisk (scriptable:
# verify, rebuild the primary header and table from the backup, convert MBR)
# and fixparts (MBR repair). C++, so static with the host's glibc and
# libstdc++ like ddrescue (package/gddrescue); libuuid and popt (sgdisk's
# command line) are the host's static libraries (uuid-dev, libpopt-dev), or
# in a cross build the target's packages of the same versions
# (gdisk.lock.ARCH), unpacked into the build folder.
# cgdisk is left out: it needs ncurses and adds nothing sgdisk cannot do.

GDISK_LICENSE := GPL-2.0-or-later
GDISK_LICENSE_FILES := COPYING
ifneq ($(TARGET_CROSS),)
GDISK_LIBS := $(BUILD)/gdisk-libs
GDISK_LIB_PINS := uuid-dev libpopt-dev
GDISK_LIB_FLAGS := -I$(GDISK_LIBS)/usr/include -L$(GDISK_LIBS)/usr/lib/$(GNU_TRIPLET_GLIBC)
GDISK_DEPENDENCIES := $(STAMPS)/gdisk-libs
CACHE_INPUTS_$(STAMPS)/gdisk-libs := $(foreach n,$(GDISK_LIB_PINS),$(call pin_stamp,$(n)))
$(STAMPS)/gdisk-libs: $(CACHE_INPUTS_$(STAMPS)/gdisk-libs) | $(STAMPS)/host-deps $(BUILD)
	$(call unpack_debs,$(GDISK_LIB_PINS),$(GDISK_LIBS))
	$(Q)touch $@
endif
define GDISK_BUILD_CMDS
	+$(Q)scripts/logged gdisk build $(GDISK_SRC)/build.log $(MAKE) -C $(GDISK_SRC) $(SUBMAKE_J) TARGET=linux CXX="$(TARGET_CXX)" \
	  CXXFLAGS="-O2 -Wall -D_FILE_OFFSET_BITS=64 -ffunction-sections -fdata-sections $(PREFIX_MAP)$(if $(GDISK_LIB_FLAGS), $(GDISK_LIB_FLAGS))" \
	  LDFLAGS="$(TARGET_LDFLAGS)$(if $(GDISK_LIB_FLAGS), $(GDISK_LIB_FLAGS))" gdisk sgdisk fixparts
endef
GDISK_INSTALL_CMDS = $(call install_stripped,GDISK,usr/sbin,gdisk sgdisk fixparts)
GDISK_CACHE_OUTPUTS := gdisk sgdisk fixparts
$(eval $(call package,gdisk,GDISK))
