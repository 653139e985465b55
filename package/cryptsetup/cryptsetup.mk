# cryptsetup: LUKS1 and LUKS2, static with musl. The kernel crypto API does
# the ciphers and hashes (AF_ALG), so no OpenSSL or libgcrypt goes into the
# image; argon2 is cryptsetup's own bundled implementation. No udev, no
# external token plugins (they are shared objects), no veritysetup or
# integritysetup.

CRYPTSETUP_OBJ := $(BUILD)/cryptsetup
CRYPTSETUP_DEPENDENCIES := $(MESON_MACHINE_FILE) $(STAMPS)/lvm2-installed $(STAMPS)/json-c-installed $(STAMPS)/popt-installed \
	$(STAMPS)/util-linux-installed
# README.licensing says which file is under which; 2.8 moved the LGPL text into docs/licenses/.
# The bundled argon2 is CC0-1.0 (its LICENSE) or Apache-2.0.
CRYPTSETUP_LICENSE := GPL-2.0-or-later AND LGPL-2.1-or-later AND (CC0-1.0 OR Apache-2.0)
CRYPTSETUP_LICENSE_FILES := COPYING README.licensing \
	docs/licenses/COPYING.LGPL-2.1-or-later-WITH-cryptsetup-OpenSSL-exception \
	lib/crypto_backend/argon2/LICENSE docs/licenses/COPYING.Apache-2.0
CRYPTSETUP_OPTIONS := -Dcrypto-backend=kernel -Dargon-implementation=internal -Dblkid=false \
	-Dudev=false -Dssh-token=false -Dexternal-tokens=false -Dnls=false -Dasciidoc=disabled \
	-Dveritysetup=false -Dintegritysetup=false -Dhw-opal=false -Dpwquality=false -Dfips=false \
	-Dstatic-cryptsetup=true -Denable-static=true --default-library=static --buildtype=release
CRYPTSETUP_CONFIGURE_CMDS = $(call meson_configure,cryptsetup,CRYPTSETUP,$(CRYPTSETUP_OPTIONS))
define CRYPTSETUP_BUILD_CMDS
	$(Q)$(SYSROOT_ENV) scripts/logged cryptsetup build $(CRYPTSETUP_OBJ)/build.log ninja -C $(CRYPTSETUP_OBJ) $(NINJA_J) src/cryptsetup
endef
CRYPTSETUP_INSTALL_CMDS = $(call install_stripped,CRYPTSETUP,sbin,src/cryptsetup)
$(eval $(call package,cryptsetup,CRYPTSETUP))
