# hdparm: ATA identify, SMART-less health queries, standby and security state
# of SATA/PATA disks; static with musl, its own Makefile.

HDPARM_DEPENDENCIES := $(STAMPS)/linux-headers
HDPARM_LICENSE := BSD-2-Clause
HDPARM_LICENSE_FILES := LICENSE.TXT
define HDPARM_BUILD_CMDS
	+$(Q)scripts/logged hdparm build $(HDPARM_SRC)/build.log $(MAKE) -C $(HDPARM_SRC) $(SUBMAKE_J) CC="$(TARGET_CC)" \
	  CFLAGS="$(TARGET_CFLAGS)" LDFLAGS="$(TARGET_LDFLAGS)" STRIP=true hdparm
endef
HDPARM_INSTALL_CMDS = $(call install_stripped,HDPARM,sbin,hdparm)
HDPARM_CACHE_OUTPUTS := hdparm
$(eval $(call package,hdparm,HDPARM))
