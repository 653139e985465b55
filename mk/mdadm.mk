# mdadm: assembles md RAID arrays; static with musl (mdadm-patches/series), no udev (mdadm then
# makes its own device nodes), no cluster (corosync/dlm) support.

MDADM_VERSION := $(call pin,mdadm,5)
MDADM_SRC := $(BUILD)/mdadm-src
MDADM_ROOT := $(BUILD)/mdadm-root
MDADM_PATCHES := mdadm-patches/series $(wildcard mdadm-patches/*.patch)

$(STAMPS)/mdadm-built: $(call pin_stamp,mdadm) $(STAMPS)/linux-headers mk/mdadm.mk $(MDADM_PATCHES) | $(STAMPS)/host-deps $(BUILD)
	@scripts/extract mdadm $(MDADM_SRC)
	@scripts/apply-patches $(MDADM_SRC) mdadm-patches/series
	@echo "mdadm: building (static, musl)"
	@scripts/logged mdadm build $(MDADM_SRC)/build.log $(MAKE) -C $(MDADM_SRC) -j$(JOBS) CC="$(MUSL_CC)" \
	  CXFLAGS="-O2 -ffunction-sections -fdata-sections -DNO_LIBUDEV" LDFLAGS="-static -Wl,--gc-sections" \
	  COROSYNC="-DNO_COROSYNC" DLM="-DNO_DLM" mdadm
	@rm -rf $(MDADM_ROOT) && mkdir -p $(MDADM_ROOT)/sbin
	@strip --strip-all -o $(MDADM_ROOT)/sbin/mdadm $(MDADM_SRC)/mdadm
	@scripts/check-static mdadm $(MDADM_ROOT)/sbin/mdadm
	@touch $@

.PHONY: mdadm
mdadm: $(STAMPS)/mdadm-built ## build mdadm only
