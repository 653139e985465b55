# lsscsi: SCSI (and SATA, NVMe, USB) devices with their host, channel, target
# and LUN, as the kernel's SCSI layer sees them; static with musl.

LSSCSI_OBJ := $(BUILD)/lsscsi
LSSCSI_DEPENDENCIES := $(STAMPS)/linux-headers
LSSCSI_LICENSE := GPL-2.0-or-later
LSSCSI_LICENSE_FILES := COPYING
LSSCSI_CONFIGURE_CMDS = $(call autotools_configure,lsscsi,LSSCSI)
define LSSCSI_BUILD_CMDS
	+$(Q)scripts/logged lsscsi build $(LSSCSI_OBJ)/build.log $(MAKE) -C $(LSSCSI_OBJ) $(SUBMAKE_J)
endef
LSSCSI_INSTALL_CMDS = $(call install_stripped,LSSCSI,usr/bin,src/lsscsi)
LSSCSI_CACHE_OUTPUTS := src/lsscsi
$(eval $(call package,lsscsi,LSSCSI))
