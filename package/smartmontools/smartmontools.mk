# smartmontools: smartctl only (health, attributes, error logs and self-tests
# of ATA, SCSI and NVMe disks, also behind megaraid, cciss/hpsa/smartpqi,
# 3ware and Areca controllers); no smartd, no drive database updates. C++,
# so static with the host's glibc and libstdc++ like ddrescue
# (package/gddrescue). SOURCE_DATE_EPOCH (exported) dates the build; configure
# reads it, so a new commit configures it again (or smartctl -V keeps the
# date of the commit that first configured it).

SMARTMONTOOLS_OBJ := $(BUILD)/smartmontools
SMARTMONTOOLS_DEPENDENCIES := $(EPOCH_STAMP)
SMARTMONTOOLS_LICENSE := GPL-2.0-or-later
SMARTMONTOOLS_LICENSE_FILES := COPYING
define SMARTMONTOOLS_CONFIGURE_CMDS
	$(Q)cd $(SMARTMONTOOLS_OBJ) && $(TOP)/scripts/logged smartmontools configure $(SMARTMONTOOLS_OBJ)/configure.log \
	  $(SMARTMONTOOLS_SRC)/configure --host=$(TARGET_CXX_TRIPLET) CXX="$(TARGET_CXX)" CXXFLAGS="$(TARGET_CFLAGS)" \
	  LDFLAGS="$(TARGET_LDFLAGS)" --without-libcap-ng --without-libsystemd --without-selinux \
	  --without-update-smart-drivedb --without-smartdplugindir --without-initscriptdir --without-systemdsystemunitdir
endef
SMARTMONTOOLS_BUILD_CMDS = $(call make_build,smartmontools,SMARTMONTOOLS,smartctl)
SMARTMONTOOLS_INSTALL_CMDS = $(call install_stripped,SMARTMONTOOLS,usr/sbin,smartctl)
SMARTMONTOOLS_CACHE_OUTPUTS := smartctl
$(eval $(call package,smartmontools,SMARTMONTOOLS))
