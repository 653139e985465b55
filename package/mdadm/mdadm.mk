# mdadm: assembles md RAID arrays; static with musl, no udev (mdadm then makes its
# own device nodes), no cluster (corosync/dlm) support. Debian's source with its fixes.

MDADM_DEPENDENCIES := $(STAMPS)/linux-headers
MDADM_LICENSE := GPL-2.0-or-later
MDADM_LICENSE_FILES := COPYING
define MDADM_BUILD_CMDS
	+$(Q)scripts/logged mdadm build $(MDADM_SRC)/build.log $(MAKE) -C $(MDADM_SRC) $(SUBMAKE_J) CC="$(TARGET_CC)" \
	  CXFLAGS="$(TARGET_CFLAGS) -DNO_LIBUDEV" LDFLAGS="$(TARGET_LDFLAGS)" \
	  COROSYNC="-DNO_COROSYNC" DLM="-DNO_DLM" mdadm
endef
MDADM_INSTALL_CMDS = $(call install_stripped,MDADM,sbin,mdadm)
MDADM_CACHE_OUTPUTS := mdadm
$(eval $(call package,mdadm,MDADM))
