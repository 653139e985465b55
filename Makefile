# extrescue: a bootable rescue image for ext2/ext3/ext4 servers.
# `make` builds out/extrescue-<version>-x86_64.iso; `make help` lists targets.

.DEFAULT_GOAL := all
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:

TOP := $(CURDIR)
OUT ?= $(TOP)/out
BUILD := $(OUT)/build
STAMPS := $(OUT)/stamps
EXTRESCUE_CACHE ?= $(HOME)/.cache/extrescue
export EXTRESCUE_CACHE
DL_DIR ?= $(EXTRESCUE_CACHE)/dl
JOBS ?= $(shell nproc)
export DL_DIR

# Every timestamp in the image comes from the last commit.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 1)
# -dirty: a tree with uncommitted changes never builds under a commit's name.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Evaluate once, not at every use.
SOURCE_DATE_EPOCH := $(SOURCE_DATE_EPOCH)
VERSION := $(VERSION)
export SOURCE_DATE_EPOCH

ISO := $(OUT)/extrescue-$(VERSION)-x86_64.iso

# Fields of a pin in configs/sources.lock: $(call pin,NAME,FIELD)
# FIELD: 3 = kind, 4 = Debian package, 5 = Debian version, 6 = file, 7 = sha256.
LOCK ?= $(TOP)/configs/sources.lock
export LOCK
pin = $(shell awk '$$1 == "$(1)" {print $$$(2)}' $(LOCK))
# A compiler cache outside the tree, as Buildroot's BR2_CCACHE: a fresh clone
# (CI) or a config change recompiles only what changed. Paths under TOP are
# hashed relative, so another clone folder still hits. EXTRESCUE_CCACHE=0: off.
EXTRESCUE_CCACHE ?= 1
CCACHE := $(if $(filter 1,$(EXTRESCUE_CCACHE)),ccache)
export CCACHE_DIR ?= $(EXTRESCUE_CACHE)/ccache
export CCACHE_BASEDIR := $(TOP)
# Build paths never reach a binary: a build in another folder gives the same bytes.
PREFIX_MAP := -ffile-prefix-map=$(BUILD)=/build

$(STAMPS) $(BUILD):
	@mkdir -p $@

# Changes when SOURCE_DATE_EPOCH or VERSION does (a new commit), so every
# timestamped output is redone with the new values.
EPOCH_STAMP := $(STAMPS)/epoch
$(shell mkdir -p $(STAMPS); echo "$(SOURCE_DATE_EPOCH) $(VERSION)" | cmp -s - $(EPOCH_STAMP) || echo "$(SOURCE_DATE_EPOCH) $(VERSION)" > $(EPOCH_STAMP))

# One file per pin, rewritten only when that pin's line changes, so moving
# one input to a new version rebuilds only what depends on it.
pin_stamp = $(STAMPS)/pin-$(1)
$(shell awk '!/^\#/ && NF' $(LOCK) | while read -r n rest; do \
	echo "$$n $$rest" | cmp -s - $(STAMPS)/pin-$$n || echo "$$n $$rest" > $(STAMPS)/pin-$$n; done)

# Host packages: checked once, again whenever the list changes.
$(STAMPS)/host-deps: configs/host-packages | $(STAMPS)
	@scripts/host-deps $<
	@touch $@

include mk/pkg.mk
include mk/linux.mk
include mk/busybox.mk
include mk/src.mk
include mk/storage-libs.mk
include mk/mimalloc.mk
include mk/e2fsprogs.mk
include mk/util-linux.mk
include mk/mdadm.mk
include mk/lvm2.mk
include mk/cryptsetup.mk
include mk/dropbear.mk
include mk/dosfstools.mk
include mk/hdparm.mk
include mk/lsscsi.mk
include mk/sg3-utils.mk
include mk/gddrescue.mk
include mk/smartmontools.mk
include mk/gdisk.mk
include mk/initramfs.mk
include mk/legal.mk
include mk/secureboot.mk
include mk/iso.mk
include mk/netboot.mk
include mk/test.mk

.PHONY: all
all: $(OUT)/SHA256SUMS ## build the ISO, the netboot folder and tar, SHA256SUMS and manifest (the default)

$(OUT)/SHA256SUMS: $(ISO) $(NETBOOT_TAR)
	@cd $(OUT) && sha256sum $(notdir $(ISO)) $(notdir $(NETBOOT_TAR)) manifest > $@

.PHONY: source
source: | $(STAMPS)/host-deps ## download and verify every pinned input
	@awk '!/^#/ && NF {print $$1, $$8}' $(LOCK) | while read -r n patches; do scripts/fetch $$n >/dev/null || exit 1; \
	  [ "$$patches" = - ] || scripts/fetch $$n patches >/dev/null || exit 1; done
	@echo "source: all pins present in $(DL_DIR)"

.PHONY: update-pins
update-pins: | $(STAMPS)/host-deps ## re-resolve each pin to the newest version the archive serves
	@scripts/update-pins

.PHONY: clean
clean: ## remove build outputs (keeps the download cache)
	rm -rf $(OUT)

.PHONY: distclean
distclean: clean ## also remove the download cache
	rm -rf $(EXTRESCUE_CACHE)

.PHONY: version
version: ## print the version the image is built under (the commit, -dirty for a modified tree)
	@echo $(VERSION)

.PHONY: help
help: ## list the targets
	@awk -F':.*## ' '/^[a-zA-Z0-9_.-]+:.*## / {printf "  %-20s %s\n", $$1, $$2}' $(MAKEFILE_LIST) | sort
	@$(MAKE) --no-print-directory help-packages

# An unknown target gets one line saying so, not make's generic error.
.DEFAULT:
	$(error unknown target '$@'; run 'make help' for the list)
