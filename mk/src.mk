# Our own C code in src/: static musl objects and tools for the image, and
# their unit tests built for the host.

SRC_OBJ := $(BUILD)/src
MUSL_CFLAGS := -O2 -Wall -Wextra -Werror
# An archive, not an object: some link lines name LIBS twice.
FAST_STRING_A := $(SRC_OBJ)/libfast-string.a

# -fno-builtin: these are the library functions; never turn them into calls.
$(FAST_STRING_A): src/fast-string.c | $(STAMPS)/linux-headers
	@mkdir -p $(dir $@)
	@$(MUSL_CC) $(MUSL_CFLAGS) -fno-builtin -c $< -o $(SRC_OBJ)/fast-string.o
	@rm -f $@ && ar rcD $@ $(SRC_OBJ)/fast-string.o

$(SRC_OBJ)/test-fast-string: src/test-fast-string.c src/fast-string.c
	@mkdir -p $(dir $@)
	@$(CC) -O2 -Wall -Wextra -fno-builtin -Dmemcmp=xr_memcmp -Dstrncmp=xr_strncmp -c src/fast-string.c -o $@.o
	@$(CC) -O2 -Wall -Wextra src/test-fast-string.c $@.o -o $@

# Our tools: static with musl for the image; the ones with host-side tests
# also natively, with the sanitizers. $(call static_tool,TARGET,DEPS) and
# $(call host_tool,TARGET,DEPS,EXTRA CFLAGS) compile the .c files of DEPS.
define static_tool
$(1): $(2) | $$(STAMPS)/linux-headers
	@mkdir -p $$(dir $$@)
	@$$(MUSL_CC) $$(MUSL_CFLAGS) -static -o $$@ $$(filter %.c,$(2))
	@strip --strip-all $$@
	@scripts/check-static src $$@
endef
define host_tool
$(1): $(2)
	@mkdir -p $$(dir $$@)
	@$$(CC) -O2 -Wall -Wextra -Werror $(3) -o $$@ $$(filter %.c,$(2))
endef
SANITIZE := -fsanitize=address,undefined
SRC_ROOT := $(BUILD)/src-root

# extscan: what is on every disk, read-only.
EXTSCAN_SRC := src/extscan.c src/extsb.c src/extsb.h src/layout.c src/layout.h
$(eval $(call static_tool,$(SRC_ROOT)/sbin/extscan,$(EXTSCAN_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/extscan,$(EXTSCAN_SRC),$(SANITIZE)))

# cmdline: the kernel command line as data (run by init), network parameters
# and SSH keys included; authkeys: a fetched authorized_keys file, checked.
CMDLINE_SRC := src/cmdline.c src/kargs.c src/kargs.h src/netargs.c src/netargs.h src/sshkey.c src/sshkey.h
$(eval $(call static_tool,$(SRC_ROOT)/sbin/cmdline,$(CMDLINE_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/cmdline,$(CMDLINE_SRC),$(SANITIZE)))
AUTHKEYS_SRC := src/authkeys.c src/sshkey.c src/sshkey.h
$(eval $(call static_tool,$(SRC_ROOT)/lib/extrescue/authkeys,$(AUTHKEYS_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/authkeys,$(AUTHKEYS_SRC),$(SANITIZE)))

# report: the JSON document rescue.report= sends.
REPORT_SRC := src/report.c src/kargs.c src/kargs.h
$(eval $(call static_tool,$(SRC_ROOT)/lib/extrescue/report,$(REPORT_SRC)))
$(eval $(call host_tool,$(SRC_OBJ)/host/report,$(REPORT_SRC),$(SANITIZE)))

# efibootmgr: the firmware's boot entries through efivarfs (our own; the
# archive serves neither efibootmgr's nor efivar's sources).
$(eval $(call static_tool,$(SRC_ROOT)/usr/sbin/efibootmgr,src/efibootmgr.c src/le.h))

# nvme: the read-only nvme-cli commands (list, id-ctrl, smart-log,
# error-log), our own: the archive serves no libnvme source.
$(eval $(call static_tool,$(SRC_ROOT)/usr/sbin/nvme,src/nvme.c src/le.h))

# inroot: resolves the target's paths inside its root (used by rescue-mount).
$(eval $(call static_tool,$(SRC_ROOT)/lib/extrescue/inroot,src/inroot.c))

# iobench: the same source builds for the host so a loop device there gives
# the side-by-side table.
IOBENCH_SRC := src/iobench.c src/iobench-dev.c src/iobench-work.c src/iobench-report.c src/md5.c
IOBENCH_DEPS := $(IOBENCH_SRC) $(wildcard src/iobench*.h) src/md5.h
$(eval $(call static_tool,$(SRC_ROOT)/sbin/iobench,$(IOBENCH_DEPS)))
$(eval $(call host_tool,$(SRC_OBJ)/host/iobench,$(IOBENCH_DEPS)))

# Fuzzing needs clang's libFuzzer, installed on first use only.
FUZZ_SECONDS ?= 60
$(STAMPS)/host-deps-fuzz: configs/host-packages-fuzz | $(STAMPS)
	@scripts/host-deps $<
	@touch $@

$(SRC_OBJ)/fuzz-extsb: src/fuzz-extsb.c src/extsb.c src/extsb.h | $(STAMPS)/host-deps-fuzz
	@mkdir -p $(dir $@)
	@clang -g -O1 -fsanitize=fuzzer,address,undefined -o $@ src/fuzz-extsb.c src/extsb.c

.PHONY: fuzz
fuzz: $(SRC_OBJ)/fuzz-extsb ## fuzz extscan's superblock parsing for FUZZ_SECONDS (default 60)
	@mkdir -p $(SRC_OBJ)/fuzz-corpus
	@tests/fuzz-seeds $(SRC_OBJ)/fuzz-corpus
	@cd $(SRC_OBJ) && ./fuzz-extsb -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
	  fuzz-corpus 2>&1 | tee fuzz.log | grep -E '^(stat::number_of_executed_units|stat::peak_rss|==[0-9]+==ERROR|SUMMARY)' ; \
	 status=$${PIPESTATUS[0]}; \
	 echo "fuzz: $$(sed -n 's/^stat::number_of_executed_units: *//p' fuzz.log) executions in $(FUZZ_SECONDS) s, $$(ls crash-* 2>/dev/null | wc -l) crashes (log: $(SRC_OBJ)/fuzz.log)"; \
	 exit $$status
