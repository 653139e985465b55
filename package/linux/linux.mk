# Linux: the pinned upstream tarball + kernel-patches/series + config fragments.
# Debian's kernel patches are distribution plumbing, so the pin is upstream.

LINUX_OBJ := $(BUILD)/linux
LINUX_PATCH_DIR := kernel-patches
# Fragments for every architecture, then the target's own (package/linux/config/ARCH/).
LINUX_FRAGMENTS := $(sort $(wildcard package/linux/config/*.config)) \
	$(sort $(wildcard package/linux/config/$(EXTRESCUE_ARCH)/*.config))
LINUX_DEPENDENCIES := $(LINUX_FRAGMENTS) scripts/kconfig-check
LINUX_LICENSE := GPL-2.0-only WITH Linux-syscall-note
LINUX_LICENSE_FILES := COPYING LICENSES/preferred/GPL-2.0 LICENSES/exceptions/Linux-syscall-note
BZIMAGE := $(LINUX_OBJ)/$(KERNEL_IMAGE)
# Kbuild redoes what a changed option or flag touches (its .cmd files): a
# reconfigure builds on the objects there (mk/pkg.mk's honest rebuilds).
LINUX_KEEPS_OBJECTS := yes
# What every run of the kernel's make is told, the build's and menuconfig's
# copy alike (or the copy's .config would differ in what Kconfig probes).
# RUSTC: Kconfig asks $(RUSTC) for its version (rustc-version.sh,
# rustc-llvm-version.sh); a rustup rustc in root's PATH set RUSTC_VERSION
# and RUSTC_LLVM_* to its own and added RUSTC_HAS_*=y, where another user
# got 0, so .config, the manifest and the cache key depended on the user.
# With false every user gets the values of no rustc (the image has no
# Rust code); HOSTRUSTC, for Rust host programs, goes with it.
LINUX_TOOL_FLAGS = ARCH=$(KERNEL_ARCH) \
	CROSS_COMPILE=$(TARGET_CROSS) CC="$(strip $(CCACHE) $(TARGET_CROSS)gcc)" HOSTCC="$(strip $(CCACHE) gcc)" \
	RUSTC=false HOSTRUSTC=false
# KCPPFLAGS: under ccache the compiler sees ../linux-src/... (CCACHE_BASEDIR);
# mapped away as the kernel maps its absolute source path, __FILE__ is the
# same with and without the cache.
LINUX_MAKE = $(MAKE) -C $(LINUX_SRC) O=$(LINUX_OBJ) $(LINUX_TOOL_FLAGS) \
	KBUILD_BUILD_TIMESTAMP=@$(SOURCE_DATE_EPOCH) KBUILD_BUILD_USER=extrescue \
	KBUILD_BUILD_HOST=extrescue KBUILD_BUILD_VERSION=1 KCPPFLAGS=-fmacro-prefix-map=../linux-src/=

# tinyconfig + fragments, then a check that no requested option was dropped.
define LINUX_CONFIGURE_CMDS
	$(Q)echo "linux: configuring from $(words $(LINUX_FRAGMENTS)) fragments"
	+$(Q)$(MAKE) -s --no-print-directory $(LINUX_OBJ)/.config
endef
define LINUX_MERGE_CONFIG_CMDS
	$(Q)mkdir -p $(LINUX_OBJ)
	+$(Q)$(LINUX_MAKE) -s tinyconfig >/dev/null
	$(Q)cd $(LINUX_OBJ) && $(LINUX_SRC)/scripts/kconfig/merge_config.sh -m .config $(abspath $(LINUX_FRAGMENTS)) >/dev/null
	+$(Q)$(LINUX_MAKE) -s olddefconfig
	$(Q)scripts/kconfig-check $@ $(LINUX_FRAGMENTS) || { mv $@ $@.rejected; exit 1; }
endef
# The recipe stamp holds the fragment list and these commands: a fragment
# taken away reconfigures too (a date cannot say that a file is gone).
LINUX_RECIPE_EXTRA = $(LINUX_MERGE_CONFIG_CMDS)
$(LINUX_OBJ)/.config: $(STAMPS)/linux-patched $(LINUX_DEPENDENCIES) $(STAMPS)/linux-recipe
	$(LINUX_MERGE_CONFIG_CMDS)
.PHONY: linux-config
linux-config: $(LINUX_OBJ)/.config ## merge the kernel's fragments and check that every requested option survived

# What the rest of the build takes from the kernel's build folder, and what
# made it: with those in the build cache (scripts/build-cache), a fresh
# clone of a commit built before unpacks them instead of spending five
# minutes in Kbuild. The recipe stamp holds the flags and SOURCE_DATE_EPOCH,
# the .config what the fragments became. Only a folder with no build of its
# own asks the cache; one with objects builds on them (Kbuild redoes what a
# changed flag or option touches) and keeps the result. Without a key (a
# host package missing) it builds and keeps nothing.
LINUX_OUTPUTS := $(KERNEL_IMAGE) include/config/kernel.release modules.builtin build-seconds
LINUX_CACHE_INPUTS = $(LINUX_OBJ)/.config $(call pin_stamp,linux) $(STAMPS)/linux-recipe $(LINUX_PATCHES) \
	$(STAMPS)/host-toolchain scripts/extract scripts/apply-patches
define LINUX_BUILD_CMDS
	+$(Q)key=$$(scripts/build-cache key $(LINUX_CACHE_INPUTS)) || key=; \
	 if [ -n "$$key" ] && [ ! -e $(LINUX_OBJ)/vmlinux ] && scripts/build-cache get $(EXTRESCUE_ARCH)/linux $$key $(LINUX_OBJ); then :; else \
	 start=$$(date +%s); scripts/logged linux build $(LINUX_OBJ)/build.log $(LINUX_MAKE) $(SUBMAKE_J) $(notdir $(KERNEL_IMAGE)) && \
	 echo "$$(( $$(date +%s) - start ))" > $(LINUX_OBJ)/build-seconds && \
	 { [ -z "$$key" ] || scripts/build-cache put $(EXTRESCUE_ARCH)/linux $$key $(LINUX_OBJ) $(LINUX_OUTPUTS); }; fi
endef
# No loadable modules: everything is built in. modules.builtin tells
# modprobe so, and tools that modprobe a target first (lvm for dm-cache's
# policy, dm-raid, dm-thin) then go on instead of failing.
define LINUX_INSTALL_CMDS
	$(Q)release=$$(cat $(LINUX_OBJ)/include/config/kernel.release) && \
	 mkdir -p $(LINUX_ROOT)/lib/modules/$$release && \
	 cp $(LINUX_OBJ)/modules.builtin $(LINUX_ROOT)/lib/modules/$$release/ && \
	 : > $(LINUX_ROOT)/lib/modules/$$release/modules.dep
endef
$(eval $(call package,linux,LINUX))
# The kernel carries the build date.
$(STAMPS)/linux-built: $(EPOCH_STAMP)

# Kernel UAPI headers for the musl builds (musl-gcc passes -nostdinc). Every
# musl component depends on them, so they are redone only when the pin, a
# patch touching a uapi header or this recipe changes, not for every change
# of the series. Kbuild's folder goes too: its generated headers are newer
# than a new release's files (dated as in its tarball), so Kbuild kept the
# old release's and installed them (7.2.6 headers came out as 6.12's, and
# busybox's ip built from them differed from a clean build's). The make
# line is marked + itself: make sees $(MAKE) only in a rule's own text.
define LINUX_HEADERS_CMDS
	$(Q)rm -rf $(KHEADERS) $(BUILD)/linux-hdr
	+$(Q)$(MAKE) -s -C $(LINUX_SRC) O=$(BUILD)/linux-hdr ARCH=$(KERNEL_ARCH) headers_install INSTALL_HDR_PATH=$(KHEADERS) >/dev/null
endef
LINUX_UAPI_STAMP := $(STAMPS)/linux-uapi-patches
LINUX_UAPI_PATCHES := $(shell grep -l '^+++ .*include/uapi/' $(LINUX_PATCH_DIR)/*.patch 2>/dev/null)
$(call write_if_changed,$(LINUX_UAPI_STAMP),$(shell sha256sum $(LINUX_UAPI_PATCHES) /dev/null) $(value LINUX_HEADERS_CMDS))
# The headers' share of a component's build cache key (mk/pkg.mk): what their stamp looks at.
CACHE_INPUTS_$(STAMPS)/linux-headers := $(call pin_stamp,linux) $(LINUX_UAPI_STAMP)
$(STAMPS)/linux-headers: $(call pin_stamp,linux) $(LINUX_UAPI_STAMP) | $(STAMPS)/linux-patched
	$(LINUX_HEADERS_CMDS)
	$(Q)touch $@

# The kernel's own cpio generator, built for the host.
GEN_INIT_CPIO := $(BUILD)/tools/gen_init_cpio
$(GEN_INIT_CPIO): $(STAMPS)/linux-patched
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -O2 -o $@ $(LINUX_SRC)/usr/gen_init_cpio.c

# menuconfig edits a copy; what changed against the merged config goes into
# a fragment, so the next build merges and checks it like every other option
# (an edit of the build's .config would ship unchecked and vanish at the next
# reconfigure).
LINUX_MENUCONFIG_FRAGMENT := package/linux/config/menuconfig.config
.PHONY: linux-menuconfig
linux-menuconfig: $(STAMPS)/linux-configured ## edit the kernel config; the changes go to package/linux/config/menuconfig.config
	$(Q)rm -rf $(BUILD)/linux-menuconfig && mkdir -p $(BUILD)/linux-menuconfig
	$(Q)cp $(LINUX_OBJ)/.config $(BUILD)/linux-menuconfig/.config
	$(Q)$(MAKE) -C $(LINUX_SRC) O=$(BUILD)/linux-menuconfig $(LINUX_TOOL_FLAGS) menuconfig
	$(Q)$(LINUX_SRC)/scripts/diffconfig -m $(LINUX_OBJ)/.config $(BUILD)/linux-menuconfig/.config > $(BUILD)/linux-menuconfig/diff
	$(Q)if [ -s $(BUILD)/linux-menuconfig/diff ]; then \
	  { [ -f $(LINUX_MENUCONFIG_FRAGMENT) ] || echo "# Options set with make linux-menuconfig (scripts/diffconfig against the merged config)."; \
	    cat $(BUILD)/linux-menuconfig/diff; } >> $(LINUX_MENUCONFIG_FRAGMENT); \
	  echo "linux: $$(wc -l < $(BUILD)/linux-menuconfig/diff) changed options added to $(LINUX_MENUCONFIG_FRAGMENT); make merges and checks them"; \
	else echo "linux: menuconfig changed nothing"; fi
