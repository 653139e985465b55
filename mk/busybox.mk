# busybox: static with musl, from the pinned Debian source and configs/busybox.config.

BUSYBOX_SRC := $(BUILD)/busybox
BUSYBOX_BIN := $(BUSYBOX_SRC)/busybox
# musl-gcc uses -nostdinc, so it gets the pinned kernel's UAPI headers.
MUSL_CC := musl-gcc -isystem $(KHEADERS)/include
BUSYBOX_MAKE = $(MAKE) -C $(BUSYBOX_SRC) CC="$(MUSL_CC)" HOSTCC=gcc \
	KCONFIG_NOTIMESTAMP=1 SKIP_STRIP=n
BUSYBOX_DEPENDENCIES := configs/busybox.config $(STAMPS)/linux-headers
BUSYBOX_LICENSE := GPL-2.0-only
BUSYBOX_LICENSE_FILES := LICENSE
define BUSYBOX_CONFIGURE_CMDS
	@cp configs/busybox.config $(BUSYBOX_SRC)/.config
	@$(BUSYBOX_MAKE) -s oldconfig </dev/null >$(BUSYBOX_SRC)/oldconfig.log 2>&1 || \
	 { tail -n 3 $(BUSYBOX_SRC)/oldconfig.log >&2; echo "busybox: configs/busybox.config lacks an option $(BUSYBOX_VERSION) asks about (above); run 'make busybox-menuconfig' and save" >&2; exit 1; }
	@cmp -s <(grep -v '^#' configs/busybox.config) <(grep -v '^#' $(BUSYBOX_SRC)/.config) || \
	 { echo "busybox: configs/busybox.config is incomplete for $(BUSYBOX_VERSION); run 'make busybox-menuconfig' and save" >&2; exit 1; }
endef
define BUSYBOX_BUILD_CMDS
	@scripts/logged busybox build $(BUSYBOX_SRC)/build.log $(BUSYBOX_MAKE) $(SUBMAKE_J) busybox
endef
# The binary itself goes in by gen-list (it also makes the applet links).
define BUSYBOX_INSTALL_CMDS
	@scripts/check-static busybox $(BUSYBOX_BIN)
endef
$(eval $(call package,busybox,BUSYBOX))

.PHONY: busybox-menuconfig
busybox-menuconfig: $(STAMPS)/busybox-patched ## edit configs/busybox.config
	@cp configs/busybox.config $(BUSYBOX_SRC)/.config
	@$(BUSYBOX_MAKE) menuconfig
	@cp $(BUSYBOX_SRC)/.config configs/busybox.config
	@echo "busybox: saved configs/busybox.config"
