# Linux: pinned orig tarball + kernel-patches/series + config fragments.

LINUX_VERSION := $(call pin,linux,5)
LINUX_SRC := $(BUILD)/linux-src
LINUX_OBJ := $(BUILD)/linux
LINUX_FRAGMENTS := $(sort $(wildcard configs/linux/*.config))
LINUX_PATCHES := kernel-patches/series $(wildcard kernel-patches/*.patch)
BZIMAGE := $(LINUX_OBJ)/arch/x86/boot/bzImage
KHEADERS := $(BUILD)/kheaders
LINUX_MAKE = $(MAKE) -C $(LINUX_SRC) O=$(LINUX_OBJ) ARCH=x86_64 \
	KBUILD_BUILD_TIMESTAMP=@$(SOURCE_DATE_EPOCH) KBUILD_BUILD_USER=extrescue \
	KBUILD_BUILD_HOST=extrescue KBUILD_BUILD_VERSION=1

$(STAMPS)/linux-extracted: $(call pin_stamp,linux) | $(STAMPS)/host-deps $(BUILD)
	@scripts/extract linux $(LINUX_SRC) $(LINUX_OBJ)
	@touch $@

$(STAMPS)/linux-patched: $(STAMPS)/linux-extracted $(LINUX_PATCHES)
	@scripts/apply-patches $(LINUX_SRC) kernel-patches/series
	@touch $@

# tinyconfig + fragments, then a check that no requested option was dropped.
$(LINUX_OBJ)/.config: $(STAMPS)/linux-patched $(LINUX_FRAGMENTS) scripts/kconfig-check
	@echo "linux: configuring from $(words $(LINUX_FRAGMENTS)) fragments"
	@mkdir -p $(LINUX_OBJ)
	@$(LINUX_MAKE) -s tinyconfig >/dev/null
	@cd $(LINUX_OBJ) && $(LINUX_SRC)/scripts/kconfig/merge_config.sh -m .config $(abspath $(LINUX_FRAGMENTS)) >/dev/null
	@$(LINUX_MAKE) -s olddefconfig
	@scripts/kconfig-check $@ $(LINUX_FRAGMENTS) || { mv $@ $@.rejected; exit 1; }

$(STAMPS)/linux-built: $(LINUX_OBJ)/.config $(EPOCH_STAMP)
	@echo "linux: building bzImage with $(JOBS) jobs"
	@start=$$(date +%s); $(LINUX_MAKE) -j$(JOBS) bzImage > $(LINUX_OBJ)/build.log 2>&1 || \
	 { tail -n 30 $(LINUX_OBJ)/build.log >&2; echo "linux: build failed; full log in $(LINUX_OBJ)/build.log" >&2; exit 1; }; \
	 echo "$$(( $$(date +%s) - start ))" > $(LINUX_OBJ)/build-seconds
	@touch $@

# Kernel UAPI headers for the musl builds (musl-gcc passes -nostdinc).
$(STAMPS)/linux-headers: $(STAMPS)/linux-patched
	@rm -rf $(KHEADERS)
	@$(MAKE) -s -C $(LINUX_SRC) O=$(BUILD)/linux-hdr ARCH=x86_64 headers_install INSTALL_HDR_PATH=$(KHEADERS) >/dev/null
	@touch $@

# The kernel's own cpio generator, built for the host.
GEN_INIT_CPIO := $(BUILD)/tools/gen_init_cpio
$(GEN_INIT_CPIO): $(STAMPS)/linux-patched
	@mkdir -p $(dir $@)
	@$(CC) -O2 -o $@ $(LINUX_SRC)/usr/gen_init_cpio.c

.PHONY: linux linux-menuconfig linux-rebuild
linux: $(STAMPS)/linux-built ## build the kernel only
linux-menuconfig: $(LINUX_OBJ)/.config ## edit the kernel config (copy changes into a fragment)
	@$(LINUX_MAKE) menuconfig
	@echo "linux: menuconfig changed $(LINUX_OBJ)/.config only; add the options you want to a file in configs/linux/"
linux-rebuild: ## rebuild the kernel after editing its sources in out/
	@rm -f $(STAMPS)/linux-built
	@$(MAKE) --no-print-directory $(STAMPS)/linux-built
