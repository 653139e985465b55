# mdadm: assembles md RAID arrays; static with musl (mdadm-patches/series), no udev (mdadm then
# makes its own device nodes), no cluster (corosync/dlm) support. Pinned as upstream (see the lock).

MDADM_DEPENDENCIES := $(STAMPS)/linux-headers
MDADM_LICENSE := GPL-2.0-or-later
MDADM_LICENSE_FILES := COPYING
define MDADM_BUILD_CMDS
	@scripts/logged mdadm build $(MDADM_SRC)/build.log $(MAKE) -C $(MDADM_SRC) $(SUBMAKE_J) CC="$(MUSL_CC)" \
	  CXFLAGS="-O2 -ffunction-sections -fdata-sections $(PREFIX_MAP) -DNO_LIBUDEV" LDFLAGS="-static -Wl,--gc-sections" \
	  COROSYNC="-DNO_COROSYNC" DLM="-DNO_DLM" mdadm
endef
define MDADM_INSTALL_CMDS
	@mkdir -p $(MDADM_ROOT)/sbin
	@strip --strip-all -o $(MDADM_ROOT)/sbin/mdadm $(MDADM_SRC)/mdadm
endef
$(eval $(call package,mdadm,MDADM))
