# dropbear: the SSH server, client (dbclient, also as ssh) and scp, one static
# musl binary. Keys only: password authentication is compiled out
# (package/dropbear/localoptions.h); no zlib, PAM, syslog or login records.

DROPBEAR_OBJ := $(BUILD)/dropbear
DROPBEAR_DEPENDENCIES := $(STAMPS)/linux-headers package/dropbear/localoptions.h
DROPBEAR_LICENSE := MIT AND BSD-2-Clause AND Unlicense
DROPBEAR_LICENSE_FILES := LICENSE libtomcrypt/LICENSE libtommath/LICENSE
DROPBEAR_PROGRAMS := dropbear dbclient dropbearkey scp
DROPBEAR_CONFIGURE_OPTIONS := --enable-static --disable-zlib --disable-pam --disable-syslog \
	--disable-lastlog --disable-utmp --disable-utmpx --disable-wtmp --disable-wtmpx \
	--disable-loginfunc --disable-pututline --disable-pututxline --disable-harden
define DROPBEAR_CONFIGURE_CMDS
	$(Q)cp package/dropbear/localoptions.h $(DROPBEAR_OBJ)/localoptions.h
	$(call autotools_configure,dropbear,DROPBEAR,$(DROPBEAR_CONFIGURE_OPTIONS))
endef
define DROPBEAR_BUILD_CMDS
	+$(Q)scripts/logged dropbear build $(DROPBEAR_OBJ)/build.log $(MAKE) -C $(DROPBEAR_OBJ) $(SUBMAKE_J) \
	  PROGRAMS="$(DROPBEAR_PROGRAMS)" MULTI=1
endef
# One binary; each program is a link to it, dbclient also as ssh.
define DROPBEAR_INSTALL_CMDS
	$(call install_stripped,DROPBEAR,usr/bin,dropbearmulti)
	$(Q)mkdir -p $(DROPBEAR_ROOT)/usr/sbin
	$(Q)ln -s ../bin/dropbearmulti $(DROPBEAR_ROOT)/usr/sbin/dropbear
	$(Q)for p in dbclient dropbearkey scp; do ln -s dropbearmulti $(DROPBEAR_ROOT)/usr/bin/$$p; done
	$(Q)ln -s dbclient $(DROPBEAR_ROOT)/usr/bin/ssh
endef
DROPBEAR_CACHE_OUTPUTS := dropbearmulti
$(eval $(call package,dropbear,DROPBEAR))
