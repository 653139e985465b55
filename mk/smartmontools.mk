# smartmontools: smartctl only (health, attributes, error logs and self-tests
# of ATA, SCSI and NVMe disks, also behind megaraid, cciss/hpsa/smartpqi,
# 3ware and Areca controllers); no smartd, no drive database updates. C++,
# so static with the host's glibc and libstdc++ like ddrescue
# (mk/gddrescue.mk). SOURCE_DATE_EPOCH (exported) dates the build.

SMARTMONTOOLS_OBJ := $(BUILD)/smartmontools
SMARTMONTOOLS_LICENSE := GPL-2.0-or-later
SMARTMONTOOLS_LICENSE_FILES := COPYING
define SMARTMONTOOLS_CONFIGURE_CMDS
	@cd $(SMARTMONTOOLS_OBJ) && $(TOP)/scripts/logged smartmontools configure $(SMARTMONTOOLS_OBJ)/configure.log \
	  $(SMARTMONTOOLS_SRC)/configure CXX=g++ CXXFLAGS="-O2 -ffunction-sections -fdata-sections $(PREFIX_MAP)" \
	  LDFLAGS="-static -Wl,--gc-sections" --without-libcap-ng --without-libsystemd --without-selinux \
	  --without-update-smart-drivedb --without-smartdplugindir --without-initscriptdir --without-systemdsystemunitdir
endef
define SMARTMONTOOLS_BUILD_CMDS
	@scripts/logged smartmontools build $(SMARTMONTOOLS_OBJ)/build.log $(MAKE) -C $(SMARTMONTOOLS_OBJ) $(SUBMAKE_J) smartctl
endef
define SMARTMONTOOLS_INSTALL_CMDS
	@mkdir -p $(SMARTMONTOOLS_ROOT)/usr/sbin
	@strip --strip-all -o $(SMARTMONTOOLS_ROOT)/usr/sbin/smartctl $(SMARTMONTOOLS_OBJ)/smartctl
endef
$(eval $(call package,smartmontools,SMARTMONTOOLS))
