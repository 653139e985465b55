# extrescue: a bootable rescue image for ext2/ext3/ext4 servers.
# `make` builds out/extrescue-<version>-<arch>.iso; `make help` lists targets.

.DEFAULT_GOAL := all
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:

TOP := $(CURDIR)
# The target: arch/$(EXTRESCUE_ARCH).mk says what differs between
# architectures; each builds into a folder of its own, out/ARCH/.
# make ARCH=NAME (or EXTRESCUE_ARCH=NAME) builds that one; a plain make
# builds x86_64 in this make and the others (OTHER_ARCHES) by a make each.
# Only an ARCH of the command line counts: one in the environment is often
# a kernel developer's, and means something else to the kernel's and other
# components' makes, which never see ours.
ifeq ($(origin ARCH),command line)
EXTRESCUE_ARCH := $(ARCH)
endif
MAKEOVERRIDES := $(filter-out ARCH=%,$(MAKEOVERRIDES))
unexport ARCH
EXTRESCUE_ARCH ?= x86_64
OTHER_ARCHES := $(if $(filter command line,$(origin ARCH))$(filter-out file,$(origin EXTRESCUE_ARCH)),,arm64)
# Every make this one starts (a package's, a test's, qemu/run) builds or
# boots this architecture, and builds no other.
export EXTRESCUE_ARCH
comma := ,
empty :=
space := $(empty) $(empty)
define newline


endef
# V=1 shows every command (Kbuild's $(Q)); never part of a recipe stamp.
Q = $(if $(RECIPE_TEXT),@,$(if $(filter 1,$(V)),,@))
export V
OUT ?= $(TOP)/out/$(EXTRESCUE_ARCH)
# Where another architecture's make builds: out/NAME beside out/x86_64, or
# beside a given OUT as OUT-NAME (never a folder OUT's own name does not hold).
arch_out = $(if $(filter $(TOP)/out/$(EXTRESCUE_ARCH),$(OUT)),$(TOP)/out/$(1),$(OUT)-$(1))
# The make of architecture $* (in a rule NAME-%) in its own tree; its
# recipe line is marked + for make -q and the jobserver.
ARCH_MAKE = $(MAKE) --no-print-directory EXTRESCUE_ARCH=$* OUT=$(call arch_out,$*)
BUILD := $(OUT)/build
STAMPS := $(OUT)/stamps
EXTRESCUE_CACHE ?= $(HOME)/.cache/extrescue
export EXTRESCUE_CACHE
DL_DIR ?= $(EXTRESCUE_CACHE)/dl
# make splits paths at spaces, and a recipe's rm -rf would then remove
# whatever the first half names.
$(foreach v,TOP OUT EXTRESCUE_CACHE DL_DIR,$(if $(filter-out 1,$(words $($(v)))),\
  $(error extrescue: $(v) "$($(v))" has a space in it; make cannot build there: use a folder without one)))
JOBS ?= $(shell nproc)
# A plain `make` runs as `make -j$(JOBS)`: components build side by side, so
# one's configure script (one process at a time, minutes of them) runs while
# another compiles. Built one at a time, a clean build took 14m45 here with
# the cores busy 77% of it. A -j on the command line (-j1 among them) wins:
# make 4.3 does not show it in MAKEFLAGS while reading the Makefiles, and
# takes the command line's over this one. Only the top-level make adds it
# (a sub-make that read the Makefiles again would start a jobserver of its
# own beside its parent's), and only for at most one goal: make -j builds
# the goals of one command line at once, `make clean all` among them.
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS))$(word 2,$(MAKECMDGOALS)),0)
MAKEFLAGS += -j$(JOBS)
DEFAULT_JOBS := 1
endif
# A make that a script or test starts (not $(MAKE) on a line marked +)
# cannot reach the jobserver's pipe: it would warn and run one job at a
# time. Without it, and as a top-level make, it takes the default above.
NO_JOBSERVER = MAKEFLAGS='$(subst ','\'',$(filter-out -j% --jobserver%,$(MAKEFLAGS)))' MAKELEVEL=0
# make -jN is honoured: MAKEFLAGS carries -j (and the jobserver) when a
# recipe runs, so these are expanded there. A package's sub-make takes its
# jobs from make's jobserver (its recipe lines are marked + in mk/pkg.mk, so
# make passes the jobserver on).
# ninja knows no jobserver: under a -j of the command line one job of make's
# is one of ninja's; under the default it takes every core, as a component's
# sub-make would. Neither is part of a recipe stamp (RECIPE_TEXT is set
# while one is written).
SUBMAKE_J = $(if $(RECIPE_TEXT)$(filter -j%,$(MAKEFLAGS)),,-j$(JOBS))
# (make 4.3 cannot tell the default from a -j$(JOBS) of the command line,
# nor which of the two a recipe runs under but by the -j it carries).
NINJA_J = $(if $(RECIPE_TEXT),,-j$(if $(filter -j%,$(MAKEFLAGS)),$(if $(and $(DEFAULT_JOBS),$(filter -j$(JOBS),$(MAKEFLAGS))),$(JOBS),1),$(JOBS)))
export DL_DIR

# The builder's locale and time zone reach no output (sort orders, dates).
export LC_ALL := C
export TZ := UTC

# The commit names the build and dates every timestamp in the image. -dirty:
# a tree with uncommitted changes never builds under a commit's name; 12 hex
# digits whatever the clone's size. A source archive (make legal-info) has no
# .git but carries both in .tarball-version.
ifneq ($(wildcard $(TOP)/.git),)
SOURCE_DATE_EPOCH ?= $(shell git -C "$(TOP)" log -1 --format=%ct 2>/dev/null)
VERSION ?= $(shell git -C "$(TOP)" describe --tags --always --dirty --abbrev=12 2>/dev/null)
else
SOURCE_DATE_EPOCH ?= $(word 2,$(file <$(TOP)/.tarball-version))
VERSION ?= $(word 1,$(file <$(TOP)/.tarball-version))
endif
# Evaluate once, not at every use.
SOURCE_DATE_EPOCH := $(SOURCE_DATE_EPOCH)
VERSION := $(VERSION)
export SOURCE_DATE_EPOCH
# Never a build under a made-up name and date: say why and what to do.
VERSIONLESS_GOALS := help help-packages clean distclean forget-secureboot-key
ifneq ($(filter-out $(VERSIONLESS_GOALS),$(or $(MAKECMDGOALS),all)),)
ifeq ($(and $(VERSION),$(SOURCE_DATE_EPOCH)),)
$(error extrescue: git cannot name the commit of $(TOP) ($(or $(shell git -C "$(TOP)" describe --always 2>&1 >/dev/null | head -n 1),no .git and no .tarball-version)); for another user's checkout run 'git config --global --add safe.directory $(TOP)', or give VERSION= and SOURCE_DATE_EPOCH= on the command line)
endif
endif

$(if $(wildcard $(TOP)/arch/$(EXTRESCUE_ARCH).mk),,$(error extrescue: no arch/$(EXTRESCUE_ARCH).mk; EXTRESCUE_ARCH is one of: $(basename $(notdir $(wildcard $(TOP)/arch/*.mk)))))
include $(TOP)/arch/$(EXTRESCUE_ARCH).mk
export DEBIAN_ARCH

ISO := $(OUT)/extrescue-$(VERSION)-$(EXTRESCUE_ARCH).iso

# The pins: package/NAME/NAME.lock, and NAME.lock.DEBIAN_ARCH for a binary
# package built for one architecture. The build reads them as one list,
# $(LOCK), rewritten only when a pin file changes; LOCK=FILE names another
# whole list (tests) on the command line; a LOCK in the environment (another
# tree's make above this one) is not this tree's. $(call pin,NAME,FIELD),
# FIELD: 3 = kind, 4 = Debian package, 5 = Debian version, 6 = file,
# 7 = sha256 (mk/pkg.mk has them all).
ifneq ($(origin LOCK),command line)
LOCK := $(STAMPS)/sources.lock
LOCK_FILES := $(sort $(wildcard $(TOP)/package/*/*.lock $(TOP)/package/*/*.lock.$(DEBIAN_ARCH)))
$(shell mkdir -p $(STAMPS) && t=$$(mktemp -p $(STAMPS) --suffix=.pending) && cat $(LOCK_FILES) > $$t && \
	if cmp -s $$t $(LOCK); then rm -f $$t; else mv -f $$t $(LOCK); fi)
else
LOCK_FILES := $(LOCK)
endif
export LOCK LOCK_FILES
pin = $(shell awk '$$1 == "$(1)" {print $$$(2)}' $(LOCK))
# A compiler cache outside the tree, as Buildroot's BR2_CCACHE: a fresh clone
# (CI) or a config change recompiles only what changed. Paths under TOP are
# hashed relative, so another clone folder still hits. EXTRESCUE_CCACHE=0: off.
# ccache passes those relative paths on to the compiler, where they reach
# __FILE__: the kernel maps their relative form as it maps the absolute one,
# and e2fsprogs is configured by a relative path, so it sees no absolute one
# (make repro-check builds once with ccache off to hold both to it).
EXTRESCUE_CCACHE ?= 1
CCACHE := $(if $(filter 1,$(EXTRESCUE_CCACHE)),ccache)
export CCACHE_DIR ?= $(EXTRESCUE_CACHE)/ccache
export CCACHE_BASEDIR := $(TOP)
# Build outputs (the kernel's, ten components' programs) kept by what made
# them (scripts/build-cache, mk/pkg.mk), on and off with the compiler cache;
# make repro-check builds without it. Read by the script and the recipes as
# they run, so a recipe is the same text either way.
EXTRESCUE_BUILD_CACHE ?= $(EXTRESCUE_CCACHE)
export EXTRESCUE_BUILD_CACHE
# Build paths never reach a binary: a build in another folder gives the same bytes.
PREFIX_MAP := -ffile-prefix-map=$(BUILD)=/build

$(STAMPS) $(BUILD):
	@mkdir -p $@

# $(call write_if_changed,FILE,TEXT): FILE holds TEXT and gets a new date only
# when TEXT changes, so what depends on it is redone exactly then. The text
# is written aside (a folder of this make's own, mktemp's) and moved over FILE, in one
# shell for all of them once the Makefiles are read (mk/stamps-commit.mk):
# two makes reading the Makefiles at once (parallel tests) never see half a
# stamp, and a make that changes nothing starts no process per stamp.
STAMPS_PENDING_DIR := $(shell mkdir -p $(STAMPS) && mktemp -d -p $(STAMPS) --suffix=.pending)
STAMPS_PENDING :=
write_if_changed = $(eval STAMPS_PENDING += $(1))$(file >$(STAMPS_PENDING_DIR)/$(subst /,%,$(1)),$(2))

# Changes when SOURCE_DATE_EPOCH or VERSION does (a new commit), so every
# timestamped output is redone with the new values.
EPOCH_STAMP := $(STAMPS)/epoch
$(call write_if_changed,$(EPOCH_STAMP),$(SOURCE_DATE_EPOCH) $(VERSION))

# One file per pin, rewritten only when that pin's line changes, so moving
# one input to a new version rebuilds only what depends on it.
pin_stamp = $(STAMPS)/pin-$(1)
$(shell awk '!/^\#/ && NF' $(LOCK) | while read -r n rest; do \
	echo "$$n $$rest" | cmp -s - $(STAMPS)/pin-$$n || echo "$$n $$rest" > $(STAMPS)/pin-$$n; done)

# The host's compilers and linker build every binary: another version of
# any of them rebuilds all (and the manifest names the ones that did). Read
# while the Makefiles are once the host packages are in; on a fresh machine
# the first time after they are installed, so the next make finds the same.
# A cross build adds the target's compilers, binutils, glibc and libstdc++,
# and the musl pin its C programs link.
HOST_TOOLCHAIN = $(strip $(shell gcc --version | head -n 1; ld --version | head -n 1; \
	$(if $(TARGET_CROSS),$(TARGET_CROSS)gcc --version | head -n 1; $(TARGET_CROSS)ld --version | head -n 1;) \
	dpkg-query -W -f='$${Package} $${Version}\n' musl-tools libc6-dev uuid-dev libpopt-dev 'libstdc++-*-dev' \
	$(if $(TARGET_CROSS),'libc6-dev-$(DEBIAN_ARCH)-cross' 'libstdc++-*-dev-$(DEBIAN_ARCH)-cross') 2>/dev/null) \
	$(if $(TARGET_CROSS),musl-dev $(call pin,musl-dev,5)))
ifneq ($(wildcard $(STAMPS)/host-deps),)
$(call write_if_changed,$(STAMPS)/host-toolchain,$(HOST_TOOLCHAIN))
endif
$(STAMPS)/host-toolchain: | $(STAMPS)/host-deps
	$(file >$@,$(HOST_TOOLCHAIN))

# Host packages: checked once, again whenever a list changes.
$(STAMPS)/host-deps: configs/host-packages $(HOST_PACKAGES_ARCH) | $(STAMPS)
	@for list in $^; do scripts/host-deps $$list || exit 1; done
	@touch $@

include mk/pkg.mk
include mk/toolchain.mk
include mk/src.mk
# The packages, each read after those whose variables its recipe uses (a
# recipe is expanded into its stamp while its file is read).
PACKAGE_ORDER := linux busybox libaio json-c popt mimalloc e2fsprogs util-linux mdadm lvm2 \
	cryptsetup dropbear dosfstools hdparm lsscsi sg3-utils gddrescue smartmontools gdisk
$(foreach p,$(filter-out $(PACKAGE_ORDER),$(patsubst package/%/,%,$(wildcard package/*/))),\
  $(if $(wildcard package/$(p)/$(p).mk),$(error extrescue: package/$(p)/$(p).mk is not in PACKAGE_ORDER (Makefile); add it after the packages it uses)))
include $(foreach p,$(PACKAGE_ORDER),package/$(p)/$(p).mk)
include mk/initramfs.mk
include mk/legal.mk
include mk/secureboot.mk
include mk/iso.mk
include mk/netboot.mk
include mk/test.mk
include mk/stamps-commit.mk

.PHONY: all
all: $(OUT)/SHA256SUMS $(addprefix all-,$(OTHER_ARCHES)) ## build both architectures' ISOs, netboot folders and tars, SHA256SUMS and manifests (ARCH=x86_64 or ARCH=arm64: one)

# Another architecture's build: its own make, its own tree (out/NAME), the
# same jobserver; after this tree's host packages and Secure Boot key, so two
# apt-get never meet and a fresh machine makes one key, not two at once.
.PHONY: $(addprefix all-,$(OTHER_ARCHES))
$(addprefix all-,$(OTHER_ARCHES)): all-%: | $(STAMPS)/host-deps $(STAMPS)/sb-key
	+$(Q)$(ARCH_MAKE) all

$(OUT)/SHA256SUMS: $(ISO) $(NETBOOT_TAR) $(OUT)/write-stick $(OUT)/disk-inuse
	@cd $(OUT) && sha256sum $(notdir $(ISO)) $(notdir $(NETBOOT_TAR)) write-stick disk-inuse manifest > $@

# The stick writer beside the ISO, for whoever has only the release; the
# image carries the same script as rescue-stick.
$(OUT)/write-stick: initramfs/rootfs/sbin/rescue-stick
	@install -D -m 0755 $< $@

# Each architecture's pins: a plain make source (source-archive) does both, as all does.
.PHONY: source $(addprefix source-,$(OTHER_ARCHES)) $(addprefix source-archive-,$(OTHER_ARCHES))
$(addprefix source-,$(OTHER_ARCHES)): source-%: | $(STAMPS)/host-deps
	+$(Q)$(ARCH_MAKE) source
$(addprefix source-archive-,$(OTHER_ARCHES)): source-archive-%: | $(STAMPS)/host-deps source-%
	+$(Q)$(ARCH_MAKE) source-archive
source: $(addprefix source-,$(OTHER_ARCHES)) | $(STAMPS)/host-deps ## download and verify every pinned input (of both architectures)
	@awk '!/^#/ && NF {print $$1, $$8}' $(LOCK) | while read -r n patches; do scripts/fetch $$n >/dev/null || exit 1; \
	  [ "$$patches" = - ] || scripts/fetch $$n patches >/dev/null || exit 1; done
	@echo "source: all pins present in $(DL_DIR)"

# A distributor's own copy of every input, laid out as Debian's pool: served
# over HTTP it is a second archive (EXTRESCUE_SNAPSHOT_MIRROR) for any build.
SOURCE_ARCHIVE := $(OUT)/source-archive
.PHONY: source-archive
source-archive: source $(addprefix source-archive-,$(OTHER_ARCHES)) ## every pinned input in Debian's pool layout with SHA256SUMS, in out/ARCH/source-archive/
	@rm -rf "$(SOURCE_ARCHIVE)" && mkdir -p "$(SOURCE_ARCHIVE)"
	@awk '!/^#/ && NF {print $$1, $$8}' $(LOCK) | while read -r n patches; do \
	  for w in main $$([ "$$patches" = - ] || echo patches); do \
	    f=$$(scripts/fetch $$n $$w) && p=$$(scripts/fetch $$n $$w pool) || exit 1; \
	    mkdir -p "$(SOURCE_ARCHIVE)/$${p%/*}" && cp -f "$$f" "$(SOURCE_ARCHIVE)/$$p" && echo "$$p"; \
	  done; done | sort -u > "$(SOURCE_ARCHIVE).list"
	@cd "$(SOURCE_ARCHIVE)" && xargs -d '\n' sha256sum < "$(SOURCE_ARCHIVE).list" > SHA256SUMS && rm "$(SOURCE_ARCHIVE).list"
	@echo "source-archive: $$(wc -l < "$(SOURCE_ARCHIVE)/SHA256SUMS") files in $(SOURCE_ARCHIVE); served over HTTP, its address is an EXTRESCUE_SNAPSHOT_MIRROR"

.PHONY: update-pins
update-pins: | $(STAMPS)/host-deps ## re-resolve each pin (PINS="NAME ..." only those) to the newest version the archive serves
	@scripts/update-pins $(PINS)

.PHONY: check-updates
check-updates: | $(STAMPS)/host-deps ## per pin: the pinned version and the newest in Debian's stable, backports and testing
	@scripts/check-updates

.PHONY: clean
clean: ## remove build outputs (keeps the download cache)
	rm -rf "$(OUT)" $(foreach a,$(OTHER_ARCHES),"$(call arch_out,$(a))")
	rm -f $(ISO_LINKS) $(if $(ISO_LINK),$(foreach a,$(OTHER_ARCHES),$(TOP)/out/extrescue-*-$(a).iso))

# The Secure Boot key cannot be made again: every medium signed with it
# needs it enrolled, so distclean leaves it and says where.
.PHONY: distclean
distclean: clean ## also remove the download cache (the Secure Boot key stays)
	@if [ -d "$(EXTRESCUE_CACHE)" ]; then \
	  find "$(EXTRESCUE_CACHE)" -mindepth 1 -maxdepth 1 ! -name secureboot -exec rm -rf {} +; \
	  if [ -d "$(EXTRESCUE_CACHE)/secureboot" ]; then \
	    echo "distclean: kept the Secure Boot key in $(EXTRESCUE_CACHE)/secureboot ('make forget-secureboot-key' removes it)"; \
	  else rmdir "$(EXTRESCUE_CACHE)"; fi; \
	fi

.PHONY: forget-secureboot-key
forget-secureboot-key: ## remove the project's Secure Boot key (asks; YES=1 does not): media signed with it then need a new MOK enrolled
	@[ -d "$(SB_KEY_DIR)" ] || { echo "forget-secureboot-key: no key in $(SB_KEY_DIR)"; exit 0; }; \
	if [ "$(YES)" != 1 ]; then \
	  [ -t 0 ] || { echo "forget-secureboot-key: asks on a terminal; run it with YES=1 to remove $(SB_KEY_DIR) without asking" >&2; exit 1; }; \
	  read -r -p "Remove the Secure Boot key in $(SB_KEY_DIR)? Every medium signed with it needs it enrolled. [y/N] " a; \
	  [ "$$a" = y ] || { echo "forget-secureboot-key: kept"; exit 0; }; \
	fi; \
	rm -rf "$(SB_KEY_DIR)" && echo "forget-secureboot-key: removed $(SB_KEY_DIR)"

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
