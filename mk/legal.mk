# Licences and corresponding sources. Every component that ends up in the
# image (in the initramfs, on the ISO, or linked into a static binary) has a
# row in $(COMPONENTS): name, version, SPDX licence, origin, the pins whose
# files are its sources, and the folder of our patches to it (- for none). The image carries each one's licence texts under
# /usr/share/licenses/<name>/; `make legal-info` collects sources and texts.

COMPONENTS := $(BUILD)/components.tsv
LEGAL_INFO := $(OUT)/legal-info
LEGAL_ROOT := $(BUILD)/legal-root

# Not built by the package recipe: our own code, the boot loaders taken as
# Debian built them, and the static parts of the host toolchain.
EXTRESCUE_LICENSE := GPL-2.0-only
ISOLINUX_LICENSE := GPL-2.0-or-later
SYSLINUX_COMMON_LICENSE := GPL-2.0-or-later
SYSTEMD_BOOT_EFI_LICENSE := LGPL-2.1-or-later
# shim links OpenSSL's crypto (Cryptlib); MokManager is built from the same tree.
SHIM_LICENSE := BSD-2-Clause AND OpenSSL AND BSD-3-Clause
MUSL_LICENSE := MIT
LIBGCC_LICENSE := GPL-3.0-or-later WITH GCC-exception-3.1
# The C++ programs (package/gddrescue, smartmontools, gdisk) link the host's glibc and libstdc++ statically.
GLIBC_LICENSE := LGPL-2.1-or-later
LIBSTDCXX_LICENSE := GPL-3.0-or-later WITH GCC-exception-3.1
# gdisk links the host's static libuuid and popt (package/gdisk).
HOST_LIBUUID_LICENSE := BSD-3-Clause
HOST_POPT_LICENSE := MIT
GCC_MAJOR := $(shell gcc -dumpversion | cut -d. -f1)
host_version = $(shell dpkg-query -W -f='$${Version}' $(1) 2>/dev/null)
# Where the static libraries linked into the programs come from: the host's
# packages, or in a cross build Debian's -cross packages (glibc, libgcc,
# libstdc++) and the pinned debs (musl, gdisk's libuuid and popt).
ifeq ($(TARGET_CROSS),)
CROSS_SUFFIX :=
MUSL_ROW = $(call component_row,musl,$(call host_version,musl),$(MUSL_LICENSE),host:musl,-)
MUSL_COPYRIGHT := / /usr/share/doc/musl/copyright
GDISK_LIB_ROWS = $(call component_row,host-libuuid,$(call host_version,uuid-dev),$(HOST_LIBUUID_LICENSE),host:uuid-dev,-) \
	   $(call component_row,host-popt,$(call host_version,libpopt-dev),$(HOST_POPT_LICENSE),host:libpopt-dev,-)
GDISK_LIB_COPYRIGHTS := host-libuuid:/:/usr/share/doc/uuid-dev/copyright host-popt:/:/usr/share/doc/libpopt-dev/copyright
else
CROSS_SUFFIX := -$(DEBIAN_ARCH)-cross
CROSS_PACKAGES := gcc-$(GCC_MAJOR)-$(GNU_TRIPLET_GLIBC) g++-$(GCC_MAJOR)-$(GNU_TRIPLET_GLIBC) binutils-$(GNU_TRIPLET_GLIBC) \
	$(foreach p,libc6-dev libgcc-$(GCC_MAJOR)-dev libstdc++-$(GCC_MAJOR)-dev,$(p)$(CROSS_SUFFIX))
MUSL_ROW = $(call component_row,musl,$(call pin,musl-dev,5),$(MUSL_LICENSE),debian-binary:musl-dev,musl)
MUSL_COPYRIGHT := $(MUSL_DIR)/root usr/share/doc/musl-dev/copyright
GDISK_LIB_ROWS = $(call component_row,host-libuuid,$(call pin,uuid-dev,5),$(HOST_LIBUUID_LICENSE),debian-binary:uuid-dev,-) \
	   $(call component_row,host-popt,$(call pin,libpopt-dev,5),$(HOST_POPT_LICENSE),debian-binary:libpopt-dev,-)
GDISK_LIB_COPYRIGHTS := host-libuuid:$(GDISK_LIBS):usr/share/doc/uuid-dev/copyright host-popt:$(GDISK_LIBS):usr/share/doc/libpopt-dev/copyright
endif

# $(call component_row,NAME,VERSION,LICENCE,ORIGIN,SOURCE PINS[,PATCH DIR])
component_row = printf '%s\t%s\t%s\t%s\t%s\t%s\n' '$(1)' '$(2)' '$(3)' '$(4)' '$(5)' '$(or $(6),-)';
pin_origin = $(if $(filter src,$(call pin_kind,$(1))),debian:$(call pin,$(1),4),upstream:orig of Debian $(call pin,$(1),4) $(call pin,$(1),5))
# An upstream pin is named by the upstream version: no epoch, no Debian revision.
pin_version = $(if $(filter src,$(call pin_kind,$(1))),$(call pin,$(1),5),$(shell echo '$(call pin,$(1),5)' | sed 's/^[0-9]*://; s/-[^-]*$$//'))

COMPONENT_ROWS = { $(foreach p,$(PACKAGES),$(call component_row,$(p),$(call pin_version,$(p)),$($(PKG_VAR_$(p))_LICENSE),$(call pin_origin,$(p)),$(p),$(wildcard $($(PKG_VAR_$(p))_PATCH_DIR)))) \
	   $(call component_row,extrescue,$(VERSION),$(EXTRESCUE_LICENSE),ours,git) \
	   $(if $(BIOS_BOOT),$(call component_row,isolinux,$(call pin,isolinux,5),$(ISOLINUX_LICENSE),debian-binary:isolinux,syslinux) \
	   $(call component_row,syslinux-common,$(call pin,syslinux-common,5),$(SYSLINUX_COMMON_LICENSE),debian-binary:syslinux-common,syslinux)) \
	   $(call component_row,systemd-boot-efi,$(call pin,systemd-boot-efi,5),$(SYSTEMD_BOOT_EFI_LICENSE),debian-binary:systemd-boot-efi,systemd) \
	   $(call component_row,shim-signed,$(call pin,shim-signed,5),$(SHIM_LICENSE),debian-binary:shim-signed,shim) \
	   $(call component_row,shim-helpers,$(call pin,shim-helpers,5),$(SHIM_LICENSE),debian-binary:$(call pin,shim-helpers,4),shim) \
	   $(MUSL_ROW) \
	   $(call component_row,libgcc,$(call host_version,libgcc-$(GCC_MAJOR)-dev$(CROSS_SUFFIX)),$(LIBGCC_LICENSE),host:libgcc-$(GCC_MAJOR)-dev$(CROSS_SUFFIX),-) \
	   $(call component_row,glibc,$(call host_version,libc6-dev$(CROSS_SUFFIX)),$(GLIBC_LICENSE),host:libc6-dev$(CROSS_SUFFIX),-) \
	   $(call component_row,libstdc++,$(call host_version,libstdc++-$(GCC_MAJOR)-dev$(CROSS_SUFFIX)),$(LIBSTDCXX_LICENSE),host:libstdc++-$(GCC_MAJOR)-dev$(CROSS_SUFFIX),-) \
	   $(GDISK_LIB_ROWS) }
# What the rows take from the .mk files (licences, patch folders) is a
# stamp: a licence changed there redoes the table, a comment does not. The
# versions come from the pins' stamps and the host toolchain's.
$(call write_if_changed,$(STAMPS)/component-licences,$(foreach p,$(PACKAGES),$(p) $($(PKG_VAR_$(p))_LICENSE) \
	$(wildcard $($(PKG_VAR_$(p))_PATCH_DIR));) $(foreach v,$(sort $(filter %_LICENSE,$(.VARIABLES))),$(v)=$($(v))))
$(COMPONENTS): $(foreach p,$(PACKAGES) $(if $(BIOS_BOOT),isolinux syslinux-common syslinux) systemd-boot-efi systemd shim-signed shim-helpers shim \
		$(if $(TARGET_CROSS),musl-dev musl $(GDISK_LIB_PINS)),$(call pin_stamp,$(p))) \
		$(STAMPS)/component-licences $(STAMPS)/host-toolchain $(EPOCH_STAMP) | $(BUILD)
	$(Q)$(COMPONENT_ROWS) > $@

# Every folder whose files go into the initramfs besides initramfs/ itself.
IMAGE_ROOTS = $(foreach p,$(PACKAGES),$($(PKG_VAR_$(p))_ROOT)) $(SRC_ROOT) $(LEGAL_ROOT)

# Licence texts of the components the package recipe does not install.
$(STAMPS)/legal-root: $(STAMPS)/boot-debs $(STAMPS)/shim-debs $(STAMPS)/linux-patched LICENSE mk/legal.mk \
		$(if $(TARGET_CROSS),$(STAMPS)/musl-sysroot $(STAMPS)/gdisk-libs)
	$(Q)rm -rf $(LEGAL_ROOT) && mkdir -p $(LEGAL_ROOT)
	$(Q)scripts/install-licenses extrescue $(TOP) $(LEGAL_ROOT) LICENSE $(LINUX_SRC)/LICENSES/preferred/GPL-2.0
	$(Q)for p in $(BOOT_DEB_PINS); do \
	  scripts/install-licenses $$p $(BOOT_DEBS) $(LEGAL_ROOT) usr/share/doc/$$p/copyright || exit 1; done
	$(Q)scripts/install-licenses shim-signed $(SHIM_DEBS) $(LEGAL_ROOT) usr/share/doc/shim-signed/copyright
	$(Q)scripts/install-licenses shim-helpers $(SHIM_DEBS) $(LEGAL_ROOT) usr/share/doc/$(call pin,shim-helpers,4)/copyright
	$(Q)scripts/install-licenses musl $(firstword $(MUSL_COPYRIGHT)) $(LEGAL_ROOT) $(lastword $(MUSL_COPYRIGHT))
	$(Q)scripts/install-licenses libgcc / $(LEGAL_ROOT) /usr/share/doc/gcc-$(GCC_MAJOR)$(if $(TARGET_CROSS),-cross)-base/copyright
	$(Q)scripts/install-licenses glibc / $(LEGAL_ROOT) /usr/share/doc/libc6$(CROSS_SUFFIX)/copyright
	$(Q)scripts/install-licenses libstdc++ / $(LEGAL_ROOT) /usr/share/doc/gcc-$(GCC_MAJOR)$(if $(TARGET_CROSS),-cross)-base/copyright
	$(Q)for spec in $(GDISK_LIB_COPYRIGHTS); do IFS=: read -r name root file <<< "$$spec" && \
	  scripts/install-licenses $$name $$root $(LEGAL_ROOT) $$file || exit 1; done
	$(Q)touch $@

# A plain make legal-info does it for each architecture make builds, as all does.
.PHONY: legal-info $(addprefix legal-info-,$(OTHER_ARCHES))
legal-info: $(ISO) $(COMPONENTS) $(addprefix legal-info-,$(OTHER_ARCHES)) ## out/ARCH/legal-info/: every component's sources, patches, licences and a table, per architecture
	$(Q)TOP=$(TOP) BUILD=$(BUILD) INITRAMFS_LIST=$(BUILD)/initramfs.list ISO_STAGE=$(ISO_STAGE) BOOT_DEBS=$(BOOT_DEBS) ESP_STAGE=$(ESP_STAGE) \
	  BUSYBOX_BIN=$(BUSYBOX_BIN) EFI_ARCH=$(EFI_ARCH) BIOS_BOOT=$(BIOS_BOOT) KERNEL=$(BZIMAGE) \
	  scripts/legal-info $(LEGAL_INFO) $(COMPONENTS) $(IMAGE_ROOTS)
# After that architecture's all: make all legal-info -jN runs one make in its tree at a time.
$(addprefix legal-info-,$(OTHER_ARCHES)): legal-info-%: | all-%
	+$(Q)$(ARCH_MAKE) legal-info
