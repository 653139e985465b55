# hdparm: ATA identify, SMART-less health queries, standby and security state
# of SATA/PATA disks; static with musl, its own Makefile.

HDPARM_DEPENDENCIES := $(STAMPS)/linux-headers
HDPARM_LICENSE := BSD-2-Clause
HDPARM_LICENSE_FILES := LICENSE.TXT
define HDPARM_BUILD_CMDS
	$(Q)scripts/logged hdparm build $(HDPARM_SRC)/build.log $(MAKE) -C $(HDPARM_SRC) $(SUBMAKE_J) CC="$(TARGET_CC)" \
	  CFLAGS="$(TARGET_CFLAGS)" LDFLAGS="$(TARGET_LDFLAGS)" STRIP=true hdparm
endef
define HDPARM_INSTALL_CMDS
	$(Q)mkdir -p $(HDPARM_ROOT)/sbin
	$(Q)$(TARGET_STRIP) --strip-all -o $(HDPARM_ROOT)/sbin/hdparm $(HDPARM_SRC)/hdparm
endef
$(eval $(call package,hdparm,HDPARM))
