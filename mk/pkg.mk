# The one package recipe: every component built from a pinned source goes
# through the same stamped steps, so a change redoes only the steps after it.
#
#   source      fetch and verify the pin (and Debian's patch archive)    <- the pin's line
#   extracted   unpack the orig tarball, Debian's debian/ beside it
#   patched     Debian's series, then ours (package/NAME/patches/series) <- our patch files
#   configured  P_CONFIGURE_CMDS                     <- the recipe, P_DEPENDENCIES, host toolchain
#   built       P_BUILD_CMDS
#   installed   P_INSTALL_CMDS into P_ROOT, licence texts, static check  <- what the image takes
#
# A component is a folder, package/NAME/: NAME.mk sets its variables (prefix
# P, e.g. UTIL_LINUX) and the command blocks that differ, then calls
# $(eval $(call package,NAME,P)); NAME.lock holds its pin (NAME.lock.ARCH
# for a binary package of one Debian architecture); patches/ its series;
# any config file of its own sits beside them. A configure line is one of
# the flavours in mk/toolchain.mk (autotools, cmake, meson).
#
# A pin is one line of a lock file, its columns:
#   name     the component (the folder's name, or a part of it)
#   series   the version prefix update-pins stays within
#   kind     src   = Debian source package: the orig tarball plus Debian's
#                    patch archive, whose debian/patches/series is applied first;
#            orig  = the orig tarball of that Debian version, our patches only;
#            deb   = a Debian binary package, unpacked as built;
#            legal = sources fetched only for make legal-info (of a deb pin)
#   package, version   the Debian package and version
#   file, sha256       the main file as the archive served it when pinned
#   patches, patches-sha256   Debian's patch archive (- for none)
#   source   the Debian source package: its folder in the archive's pool/,
#            where a second archive (EXTRESCUE_SNAPSHOT_MIRROR) is asked.
#   suite    the Debian suite it was pinned from (trixie, trixie-backports,
#            forky: testing; bookworm for two not yet moved): informational,
#            for make check-updates, and kept by update-pins.
#   P_SRC      source tree (default out/ARCH/build/NAME-src)
#   P_OBJ      build folder (default: P_SRC, an in-tree build)
#   P_ROOT     what the component puts into the image (default out/ARCH/build/NAME-root)
#   P_PATCH_DIR       our series and patches (default package/NAME/patches)
#   P_DEPENDENCIES    stamps or files the configure step needs (other components)
#   P_LICENSE         SPDX expression; P_LICENSE_FILES: paths in P_SRC
#   P_POST_PATCH_CMDS, P_CONFIGURE_CMDS, P_BUILD_CMDS, P_INSTALL_CMDS: recipe lines (may be empty)
# Targets per component: NAME, NAME-source, NAME-rebuild, NAME-reconfigure,
# NAME-dirclean.

PACKAGES :=

# $(call unpack_debs,PINS,DIR): DIR emptied, then each pinned Debian binary
# package (kind deb) unpacked into it as Debian built it.
unpack_debs = $(Q)rm -rf $(2) && mkdir -p $(2) && for n in $(1); do \
	deb=$$(scripts/fetch $$n) && dpkg-deb -x "$$deb" $(2) || exit 1; done

# The kind column of a pin: src (Debian's patches apply), orig, deb, legal.
pin_kind = $(call pin,$(1),3)

# $(call package_patch_series,NAME): the series files applied, in order.
package_patch_series = $(if $(filter src,$(call pin_kind,$(1))),$($(2)_SRC)/debian/patches/series) \
	$(wildcard $($(2)_PATCH_DIR)/series)

# What a package's build does, as text: the steps of this template, its
# command blocks (flags, --host, compilers included, as expanded now), its
# dependency list and P_RECIPE_EXTRA (commands of its own rules). A stamp
# holds it, so a changed flag or a dependency taken away rebuilds the
# package, and a comment in a .mk file rebuilds nothing. The checkout folder
# and make's share of jobs are left out: neither changes what is built.
recipe_text = $(eval RECIPE_TEXT := 1)$(subst $(TOP)/,,$(value package) $($(1)_POST_PATCH_CMDS) \
	$($(1)_CONFIGURE_CMDS) $($(1)_BUILD_CMDS) $($(1)_INSTALL_CMDS) $($(1)_DEPENDENCIES) \
	$($(1)_RECIPE_EXTRA) $($(1)_CACHE_OUTPUTS))$(eval RECIPE_TEXT :=)

define package
PACKAGES += $(1)
PKG_VAR_$(1) := $(2)
$(2)_VERSION := $$(call pin,$(1),5)
$(2)_SRC ?= $$(BUILD)/$(1)-src
$(2)_OBJ ?= $$($(2)_SRC)
$(2)_ROOT ?= $$(BUILD)/$(1)-root
$(2)_PATCH_DIR ?= package/$(1)/patches
$(2)_PATCHES := $$(wildcard $$($(2)_PATCH_DIR)/series $$($(2)_PATCH_DIR)/*.patch)

$$(STAMPS)/$(1)-source: $$(call pin_stamp,$(1)) | $$(STAMPS)/host-deps $$(BUILD)
	$(Q)scripts/fetch $(1) >/dev/null
	$(Q)$$(if $$(filter src,$$(call pin_kind,$(1))),scripts/fetch $(1) patches >/dev/null)
	$(Q)touch $$@

$$(STAMPS)/$(1)-extracted: $$(STAMPS)/$(1)-source
	$(Q)scripts/extract $(1) $$($(2)_SRC) $$(filter-out $$($(2)_SRC),$$($(2)_OBJ))
	$(Q)touch $$@

$$(STAMPS)/$(1)-patched: $$(STAMPS)/$(1)-extracted $$($(2)_PATCHES)
	$(Q)scripts/apply-patches $$($(2)_SRC) $$(call package_patch_series,$(1),$(2))
	+$$($(2)_POST_PATCH_CMDS)
	$(Q)touch $$@

$$(call write_if_changed,$$(STAMPS)/$(1)-recipe,$$(call recipe_text,$(2)))
$$(if $$(and $$($(2)_CACHE_OUTPUTS),$$(call pkg_unkeyed_stamps,$(2))),$$(error \
	extrescue: $(1) depends on $$(call pkg_unkeyed_stamps,$(2)), which its build cache key cannot name (a stamp that says nothing of what it stands for); drop $(2)_CACHE_OUTPUTS or give it CACHE_INPUTS_<stamp>))
$$(STAMPS)/$(1)-configured: $$(STAMPS)/$(1)-patched $$($(2)_DEPENDENCIES) $$(STAMPS)/$(1)-recipe $$(STAMPS)/host-toolchain
	+$$(call pkg_fresh_tree,$(1),$(2))
	$(Q)mkdir -p $$($(2)_OBJ)
	+$$(if $$(call pkg_cache_hit,$(1),$(2)),$$(call pkg_from_cache,$(1),$(2)),$$($(2)_CONFIGURE_CMDS))
	$(Q)$$(if $$($(2)_CACHE_HIT),,$$(if $$($(2)_CACHE_KEY),echo $$($(2)_CACHE_KEY) > $$($(2)_OBJ)/.extrescue-key &&)) \
	 touch $$($(2)_OBJ)/.extrescue-configured
	$(Q)touch $$@

$$(STAMPS)/$(1)-built: $$(STAMPS)/$(1)-configured
	$(Q)$$(if $$(call pkg_took_cache,$(2)),:,echo "$(1): building $$($(2)_VERSION)")
	$(Q)mv -f $$($(2)_OBJ)/.extrescue-key $$($(2)_OBJ)/.extrescue-key.building 2>/dev/null || \
	 rm -f $$($(2)_OBJ)/.extrescue-key.building
	+$$(if $$(call pkg_took_cache,$(2)),$(Q):,$$($(2)_BUILD_CMDS))
	$(Q)k=$$($(2)_OBJ)/.extrescue-key.building; [ ! -s $$$$k ] || \
	 scripts/build-cache put $$(EXTRESCUE_ARCH)/$(1) $$$$(cat $$$$k) $$($(2)_OBJ) $$($(2)_CACHE_OUTPUTS); rm -f $$$$k
	$(Q)touch $$@

$$(STAMPS)/$(1)-installed: $$(STAMPS)/$(1)-built
	$(Q)rm -rf $$($(2)_ROOT) && mkdir -p $$($(2)_ROOT)
	+$$($(2)_INSTALL_CMDS)
	$(Q)scripts/install-licenses $(1) $$($(2)_SRC) $$($(2)_ROOT) $$($(2)_LICENSE_FILES)
	$(Q)scripts/check-static $(1) $$$$(find $$($(2)_ROOT) -type f -path '*bin/*')
	$(Q)scripts/check-bin-arch $(1) "$$(ELF_MACHINE)" $$$$(find $$($(2)_ROOT) -type f)
	$(Q)touch $$@

.PHONY: $(1) $(1)-source $(1)-rebuild $(1)-reconfigure $(1)-dirclean
$(1): $$(STAMPS)/$(1)-installed
$(1)-source: $$(STAMPS)/$(1)-source
$(1)-rebuild:
	$(Q)rm -f $$(STAMPS)/$(1)-built $$(STAMPS)/$(1)-installed
	$(Q)[ ! -e $$($(2)_OBJ)/.extrescue-cached ] || rm -f $$(STAMPS)/$(1)-configured
	$(Q)$$(MAKE) --no-print-directory EXTRESCUE_BUILD_CACHE=0 $$(STAMPS)/$(1)-installed
$(1)-reconfigure:
	$(Q)rm -f $$(STAMPS)/$(1)-configured $$(STAMPS)/$(1)-built $$(STAMPS)/$(1)-installed
	$(Q)$$(MAKE) --no-print-directory EXTRESCUE_BUILD_CACHE=0 $$(STAMPS)/$(1)-installed
$(1)-dirclean:
	rm -rf $$($(2)_SRC) $$($(2)_OBJ) $$($(2)_ROOT) $$(addprefix $$(STAMPS)/$(1)-,source extracted patched configured built installed)
endef

# Honest rebuilds: a tree configured before is unpacked and patched again
# before it is configured anew, as a clean build would find it. Most of the
# components' build systems do not notice a changed flag (autotools
# Makefiles, plain Makefiles built in their source tree) and would keep
# every object built with the old one. P_KEEPS_OBJECTS: one that does
# (Kbuild's .cmd files) builds on its objects.
# make -n and -q run these + lines too: they change nothing then.
pkg_dry_run = $(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword -$(MAKEFLAGS)))
pkg_fresh_tree = $(if $($(2)_KEEPS_OBJECTS)$(pkg_dry_run),$(Q):,$(Q){ [ ! -e $($(2)_OBJ)/.extrescue-configured ] && \
	! [ $(STAMPS)/$(1)-configured -nt $(STAMPS)/$(1)-extracted ] && \
	! [ $(STAMPS)/$(1)-built -nt $(STAMPS)/$(1)-extracted ]; } || \
	{ rm -f $(STAMPS)/$(1)-extracted && $(MAKE) --no-print-directory $(STAMPS)/$(1)-patched; })

# The components' build cache (scripts/build-cache, as the kernel's): a
# component that names what the rest of the build takes from its build
# folder (P_CACHE_OUTPUTS, paths under P_OBJ) keeps them after a build
# under a key of what made them: its pin, recipe stamp (the template, its
# commands and flags, dependencies and outputs), our patches, the files it
# depends on (the kernel headers by their pin and patches), the host's
# toolchain. A fresh clone of a commit built before (CI) then unpacks them
# instead of configuring and building; sources are still unpacked and
# patched, and the install step runs as always. Only the build that follows
# a configure from a clean tree is kept, never one redone in place (make
# P-rebuild, or a failed build run again). A component that takes another's
# build cannot take part: the key names files, not builds.
BUILD_CACHE_ENTRIES := $(EXTRESCUE_CACHE)/built/$(EXTRESCUE_ARCH)
# A stamp a key can hash: one whose text is what it stands for (written by
# write_if_changed), or one mapped to such files (CACHE_INPUTS_<stamp>).
pkg_unkeyed_stamps = $(strip $(foreach d,$(filter $(STAMPS)/%,$($(1)_DEPENDENCIES)),$(if \
	$(or $(CACHE_INPUTS_$(d)),$(filter $(d),$(STAMPS_PENDING))),,$(d))))
pkg_cache_inputs = $(call pin_stamp,$(1)) $(STAMPS)/$(1)-recipe $($(2)_PATCHES) $(STAMPS)/host-toolchain \
	scripts/extract scripts/apply-patches $(foreach d,$($(2)_DEPENDENCIES),$(or $(CACHE_INPUTS_$(d)),$(d)))
# Read as the configure step starts (its stamps are written by then): sets
# P_CACHE_KEY (none while the cache is off or a host package missing) and
# P_CACHE_HIT (an entry is there), and says the second.
pkg_cache_hit = $(eval $(2)_CACHE_KEY := $(if $(and $($(2)_CACHE_OUTPUTS),$(filter-out 0,$(EXTRESCUE_BUILD_CACHE)),$(if $(pkg_dry_run),,y)),$(shell \
	scripts/build-cache key $(call pkg_cache_inputs,$(1),$(2)) 2>/dev/null)))$(eval $(2)_CACHE_HIT := $(if \
	$($(2)_CACHE_KEY),$(shell [ -f $(BUILD_CACHE_ENTRIES)/$(1)/$($(2)_CACHE_KEY).tar ] && echo y)))$($(2)_CACHE_HIT)
# A damaged entry (removed by build-cache get): the tree unpacked again and configured without the cache.
pkg_from_cache = $(Q)scripts/build-cache get $(EXTRESCUE_ARCH)/$(1) $($(2)_CACHE_KEY) $($(2)_OBJ) && \
	touch $($(2)_OBJ)/.extrescue-cached || { rm -f $(STAMPS)/$(1)-extracted && \
	$(MAKE) --no-print-directory EXTRESCUE_BUILD_CACHE=0 $(STAMPS)/$(1)-configured; }
# Whether the tree's build came from the cache (read as the build step starts).
pkg_took_cache = $(shell [ -e $($(1)_OBJ)/.extrescue-cached ] && echo y)

# One line per component for make help (the generated targets carry no ## text).
.PHONY: help-packages
help-packages:
	$(Q)echo "Per component (one of: $(PACKAGES)):"
	$(Q)echo "  <component>             build and install it into its image tree"
	$(Q)echo "  <component>-source      fetch and verify its pinned sources"
	$(Q)echo "  <component>-rebuild     build again in its tree (configured again if it came from the build cache)"
	$(Q)echo "  <component>-reconfigure configure and build again"
	$(Q)echo "  <component>-dirclean    remove its trees and stamps"
