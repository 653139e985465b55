# initramfs: gen_init_cpio list from initramfs/ plus generated files, zstd.

INITRAMFS := $(OUT)/initramfs.cpio.zst
INITRAMFS_GEN := $(BUILD)/initramfs-gen
INITRAMFS_INPUTS := initramfs/init initramfs/base.list initramfs/gen-list initramfs/modes \
	$(shell find initramfs/rootfs -print) README.md
# Binaries of our own and of other components add themselves here.
INITRAMFS_DEPS := $(STAMPS)/busybox-built $(STAMPS)/e2fsprogs-built $(STAMPS)/util-linux-built \
	$(STAMPS)/mdadm-built $(STAMPS)/lvm2-built $(STAMPS)/cryptsetup-built \
	$(SRC_ROOT)/sbin/extscan $(SRC_ROOT)/sbin/iobench $(SRC_ROOT)/lib/extrescue/inroot $(SRC_ROOT)/sbin/cmdline $(GEN_INIT_CPIO)

$(STAMPS)/initramfs-gen: $(INITRAMFS_INPUTS) $(foreach n,linux busybox e2fsprogs util-linux mdadm lvm2 cryptsetup,$(call pin_stamp,$(n))) $(EPOCH_STAMP) | $(BUILD)
	@rm -rf $(INITRAMFS_GEN) && mkdir -p $(INITRAMFS_GEN)/etc $(INITRAMFS_GEN)/usr/share/doc/extrescue
	@printf 'NAME=extrescue\nID=extrescue\nVERSION_ID=%s\nPRETTY_NAME="extrescue %s"\nLINUX_VERSION=%s\nBUSYBOX_VERSION=%s\n' \
	  '$(VERSION)' '$(VERSION)' '$(LINUX_VERSION)' '$(BUSYBOX_VERSION)' > $(INITRAMFS_GEN)/etc/os-release
	@printf 'E2FSPROGS_VERSION=%s\nUTIL_LINUX_VERSION=%s\n' '$(E2FSPROGS_VERSION)' '$(UTIL_LINUX_VERSION)' >> $(INITRAMFS_GEN)/etc/os-release
	@printf 'MDADM_VERSION=%s\nLVM2_VERSION=%s\nCRYPTSETUP_VERSION=%s\n' '$(MDADM_VERSION)' '$(LVM2_VERSION)' \
	  '$(CRYPTSETUP_VERSION)' >> $(INITRAMFS_GEN)/etc/os-release
	@cp README.md $(INITRAMFS_GEN)/usr/share/doc/extrescue/README.md
	@touch $@

$(INITRAMFS): $(INITRAMFS_DEPS) $(STAMPS)/initramfs-gen
	@initramfs/gen-list $(TOP)/initramfs $(BUSYBOX_BIN) $(INITRAMFS_GEN) $(E2FSPROGS_ROOT) $(UTIL_LINUX_ROOT) \
	  $(MDADM_ROOT) $(LVM2_ROOT) $(CRYPTSETUP_ROOT) $(SRC_ROOT) > $(BUILD)/initramfs.list
	@$(GEN_INIT_CPIO) -t $(SOURCE_DATE_EPOCH) $(BUILD)/initramfs.list > $(BUILD)/initramfs.cpio
	@zstd -q -f -19 -T1 $(BUILD)/initramfs.cpio -o $@
	@echo "initramfs: $$(grep -c . $(BUILD)/initramfs.list) entries, $$(stat -c %s $@) bytes"

.PHONY: initramfs
initramfs: $(INITRAMFS) ## build the initramfs only
