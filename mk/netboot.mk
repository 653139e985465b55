# Network boot: out/netboot/ serves BIOS PXE (pxelinux, lpxelinux), UEFI PXE
# and UEFI HTTP boot (a unified kernel image, signed with the Secure Boot
# key) and iPXE from one folder, with the CD menu's entries; with Secure Boot
# on, the boot file is shimx64.efi, which fetches grubx64.efi (a link to the
# unified image). out/extrescue-netboot-<version>.tar is that folder.
# arm64 (no BIOS): out/arm64/netboot/arm64/, the UEFI and iPXE files only,
# and its tar extrescue-netboot-<version>-arm64.tar, which unpacks beside
# x86_64's as netboot/arm64/.

NETBOOT := $(OUT)/$(NETBOOT_PATH)
NETBOOT_TAR := $(OUT)/extrescue-netboot-$(VERSION)$(if $(BIOS_BOOT),,-$(EXTRESCUE_ARCH)).tar
NETBOOT_DEBS := $(BUILD)/netboot-debs
UKI := $(NETBOOT)/extrescue.efi
# The unified image's command line: the CD's default entry unless given
# (e.g. make netboot UKI_CMDLINE="console=ttyS0,115200n8 ip=dhcp rescue.fsck=check").
# The default is read when the recipe runs: python3 may not be installed yet
# when a fresh machine's first make reads this file.
UKI_CMDLINE ?=
NETBOOT_INPUTS := mk/netboot.mk $(MENU_INPUTS) netboot/menus scripts/build-uki netboot/dnsmasq.conf.example netboot/extrescue-alerts.yml scripts/fleet-page \
	scripts/licenses-index $(COMPONENTS) $(if $(BIOS_BOOT),$(STAMPS)/netboot-debs)

$(STAMPS)/netboot-debs: $(call pin_stamp,pxelinux) | $(STAMPS)/host-deps $(BUILD)
	$(call unpack_debs,pxelinux,$(NETBOOT_DEBS))
	$(Q)touch $@

# BIOS PXE: pxelinux and lpxelinux with the CD menu's entries.
define PXELINUX_CMDS
	$(Q)mkdir -p $(NETBOOT)/pxelinux.cfg
	$(Q)cp $(NETBOOT_DEBS)/usr/lib/PXELINUX/pxelinux.0 $(NETBOOT_DEBS)/usr/lib/PXELINUX/lpxelinux.0 $(NETBOOT)/
	$(Q)cp $(addprefix $(BOOT_DEBS)/usr/lib/syslinux/modules/bios/,ldlinux.c32 menu.c32 libutil.c32) $(NETBOOT)/
	$(Q)netboot/menus pxelinux $(MENU_SOURCE) $(VERSION) > $(NETBOOT)/pxelinux.cfg/default
endef

# Rewritten only when the command line changes, so the image is rebuilt then.
$(call write_if_changed,$(STAMPS)/uki-cmdline,$(UKI_CMDLINE))

$(NETBOOT_TAR): $(STAMPS)/boot-debs $(STAMPS)/linux-built $(INITRAMFS) \
		$(STAMPS)/initramfs-gen $(STAMPS)/uki-cmdline $(SIGNED_UKI) $(STAMPS)/shim-debs $(NETBOOT_INPUTS)
	$(Q)rm -rf $(NETBOOT) && mkdir -p $(NETBOOT)
	$(if $(BIOS_BOOT),$(PXELINUX_CMDS))
	$(Q)netboot/menus ipxe $(MENU_SOURCE) $(VERSION) > $(NETBOOT)/extrescue.ipxe
	$(Q)cp $(BZIMAGE) $(NETBOOT)/vmlinuz
	$(Q)cp $(INITRAMFS) $(NETBOOT)/initrd.zst
	$(Q)if [ -z '$(UKI_CMDLINE)' ]; then cp $(SIGNED_UKI) $(UKI); else \
	 TARGET_CROSS=$(TARGET_CROSS) scripts/build-uki $(UKI).unsigned $(SD_EFI)/linux$(EFI_ARCH).efi.stub $(BZIMAGE) $(INITRAMFS) \
	  $(INITRAMFS_GEN)/etc/os-release '$(UKI_CMDLINE)' && \
	 scripts/sb-sign $(SB_KEY) $(SB_CERT) $(UKI).unsigned $(UKI) && rm $(UKI).unsigned; fi
	$(Q)cp $(SHIM) $(NETBOOT)/shim$(EFI_ARCH).efi
	$(Q)cp $(MOKMANAGER) $(NETBOOT)/mm$(EFI_ARCH).efi
	$(Q)ln -s extrescue.efi $(NETBOOT)/grub$(EFI_ARCH).efi
	$(Q)cp netboot/dnsmasq.conf.example netboot/extrescue-alerts.yml scripts/fleet-page $(NETBOOT)/
	$(Q){ scripts/licenses-index $(COMPONENTS); \
	   $(if $(BIOS_BOOT),printf '%-18s %-38s %s\n' pxelinux '$(call pin,pxelinux,5)' 'GPL-2.0-or-later (pxelinux.0, lpxelinux.0)';) \
	   echo; $(if $(BIOS_BOOT),echo "pxelinux and syslinux-common (the .c32 modules) are Debian's binaries of syslinux;";) \
	   echo "extrescue.efi is systemd-boot-efi's linux$(EFI_ARCH).efi.stub with linux and the initramfs added."; \
	   echo "shim$(EFI_ARCH).efi and mm$(EFI_ARCH).efi (MokManager) are Debian's signed binaries of shim."; \
	 } > $(NETBOOT)/LICENSES
	$(Q)$(if $(BIOS_BOOT),cp $(NETBOOT_DEBS)/usr/share/doc/pxelinux/copyright $(NETBOOT)/LICENSE.pxelinux)
	$(Q)find $(NETBOOT) -exec touch -h -d @$(SOURCE_DATE_EPOCH) {} +
	$(Q)rm -f $(OUT)/extrescue-netboot-*.tar
	$(Q)tar -C $(OUT) --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
	  --mode=go+rX,u+w --format=gnu -cf $@.tmp $(NETBOOT_PATH) && mv $@.tmp $@
	$(Q)echo "netboot: $(NETBOOT)/ ($$(du -sb $(NETBOOT) | cut -f1) bytes), $(notdir $@)"

.PHONY: netboot
netboot: $(NETBOOT_TAR) ## out/netboot/ and its tar: PXE, UEFI PXE/HTTP (extrescue.efi) and iPXE boot files
