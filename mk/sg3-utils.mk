# sg3_utils: SCSI commands through the SG_IO pass-through (inquiry, capacity,
# test unit ready, log and VPD pages) for disks behind SAS HBAs and RAID
# controllers; static with musl. Only the programs a failing-disk triage
# uses are installed. libtool needs -all-static for a static link.

SG3_UTILS_OBJ := $(BUILD)/sg3-utils
SG3_UTILS_DEPENDENCIES := $(STAMPS)/linux-headers
SG3_UTILS_LICENSE := BSD-2-Clause AND GPL-2.0-or-later
SG3_UTILS_LICENSE_FILES := COPYING BSD_LICENSE
SG3_UTILS_PROGRAMS := sg_inq sg_readcap sg_turs sg_logs sg_vpd sg_sat_identify sg_senddiag sg_requests
define SG3_UTILS_CONFIGURE_CMDS
	@cd $(SG3_UTILS_OBJ) && CC="$(MUSL_CC)" CFLAGS="-O2 -ffunction-sections -fdata-sections $(PREFIX_MAP)" \
	  $(TOP)/scripts/logged sg3-utils configure $(SG3_UTILS_OBJ)/configure.log \
	  $(SG3_UTILS_SRC)/configure --host=$(GNU_TRIPLET) --disable-shared --enable-static
endef
define SG3_UTILS_BUILD_CMDS
	@scripts/logged sg3-utils build $(SG3_UTILS_OBJ)/build.log $(MAKE) -C $(SG3_UTILS_OBJ) $(SUBMAKE_J) \
	  LDFLAGS="-all-static -Wl,--gc-sections"
endef
define SG3_UTILS_INSTALL_CMDS
	@mkdir -p $(SG3_UTILS_ROOT)/usr/bin
	@for p in $(SG3_UTILS_PROGRAMS); do strip --strip-all -o $(SG3_UTILS_ROOT)/usr/bin/$$p $(SG3_UTILS_OBJ)/src/$$p || exit 1; done
endef
$(eval $(call package,sg3-utils,SG3_UTILS))
