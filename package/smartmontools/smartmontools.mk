# smartmontools: smartctl only (health, attributes, error logs and self-tests
# of ATA, SCSI and NVMe disks, also behind megaraid, cciss/hpsa/smartpqi,
# 3ware and Areca controllers); no smartd, no drive database updates. C++,
# so static with the host's glibc and libstdc++ like ddrescue
# (package/gddrescue). SOURCE_DATE_EPOCH (exported) dates the build; configure
# reads it, so a new commit configures it again (or smartctl -V keeps the
# date of the commit that first configured it).

SMARTMONTOOLS_OBJ := $(BUILD)/smartmontools
SMARTMONTOOLS_LICENSE := GPL-2.0-or-later
SMARTMONTOOLS_LICENSE_FILES := COPYING
define SMARTMONTOOLS_CONFIGURE_CMDS
	$(Q)cd $(SMARTMONTOOLS_OBJ) && $(TOP)/scripts/logged smartmontools configure $(SMARTMONTOOLS_OBJ)/configure.log \
	  $(SMARTMONTOOLS_SRC)/configure --host=$(TARGET_CXX_TRIPLET) CXX="$(TARGET_CXX)" CXXFLAGS="$(TARGET_CFLAGS)" \
	  LDFLAGS="$(TARGET_LDFLAGS)" --without-libcap-ng --without-libsystemd --without-selinux \
	  --without-update-smart-drivedb --without-smartdplugindir --without-initscriptdir --without-systemdsystemunitdir
endef
define SMARTMONTOOLS_BUILD_CMDS
	$(Q)scripts/logged smartmontools build $(SMARTMONTOOLS_OBJ)/build.log $(MAKE) -C $(SMARTMONTOOLS_OBJ) $(SUBMAKE_J) smartctl
endef
define SMARTMONTOOLS_INSTALL_CMDS
	$(Q)mkdir -p $(SMARTMONTOOLS_ROOT)/usr/sbin
	$(Q)$(TARGET_STRIP) --strip-all -o $(SMARTMONTOOLS_ROOT)/usr/sbin/smartctl $(SMARTMONTOOLS_OBJ)/smartctl
endef
$(eval $(call package,smartmontools,SMARTMONTOOLS))
$(STAMPS)/smartmontools-configured: $(EPOCH_STAMP)
