# busybox: static with musl, from the pinned orig tarball and configs/busybox.config.

BUSYBOX_VERSION := $(call pin,busybox,5)
BUSYBOX_SRC := $(BUILD)/busybox
BUSYBOX_BIN := $(BUSYBOX_SRC)/busybox
# musl-gcc uses -nostdinc, so it gets the pinned kernel's UAPI headers.
MUSL_CC := musl-gcc -isystem $(KHEADERS)/include
BUSYBOX_MAKE = $(MAKE) -C $(BUSYBOX_SRC) CC="$(MUSL_CC)" HOSTCC=gcc \
	KCONFIG_NOTIMESTAMP=1 SKIP_STRIP=n

$(STAMPS)/busybox-extracted: $(call pin_stamp,busybox) | $(STAMPS)/host-deps $(BUILD)
	@scripts/extract busybox $(BUSYBOX_SRC)
	@touch $@

$(STAMPS)/busybox-built: $(STAMPS)/busybox-extracted configs/busybox.config $(STAMPS)/linux-headers
	@echo "busybox: building (static, musl)"
	@cp configs/busybox.config $(BUSYBOX_SRC)/.config
	@$(BUSYBOX_MAKE) -s oldconfig </dev/null >/dev/null
	@cmp -s <(grep -v '^#' configs/busybox.config) <(grep -v '^#' $(BUSYBOX_SRC)/.config) || \
	 { echo "busybox: configs/busybox.config is incomplete for $(BUSYBOX_VERSION); run 'make busybox-menuconfig' and save" >&2; exit 1; }
	@$(BUSYBOX_MAKE) -j$(JOBS) busybox > $(BUSYBOX_SRC)/build.log 2>&1 || \
	 { tail -n 30 $(BUSYBOX_SRC)/build.log >&2; echo "busybox: build failed; full log in $(BUSYBOX_SRC)/build.log" >&2; exit 1; }
	@scripts/check-static busybox $(BUSYBOX_BIN)
	@touch $@

.PHONY: busybox busybox-menuconfig
busybox: $(STAMPS)/busybox-built ## build busybox only
busybox-menuconfig: $(STAMPS)/busybox-extracted ## edit configs/busybox.config
	@cp configs/busybox.config $(BUSYBOX_SRC)/.config
	@$(BUSYBOX_MAKE) menuconfig
	@cp $(BUSYBOX_SRC)/.config configs/busybox.config
	@echo "busybox: saved configs/busybox.config"
