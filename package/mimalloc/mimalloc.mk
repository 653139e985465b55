# mimalloc: the allocator of the e2fsprogs programs. musl's malloc maps and
# unmaps a page for short-lived blocks (e2fsck: about once per directory
# block) and walks its slot bitmaps on every call; bench/bench-fsck measures
# the difference. Its src/static.c, as an archive ahead of libc, replaces
# malloc, calloc, realloc, free and the aligned allocators in each static
# binary (an archive, not the object, because some of e2fsprogs' test
# programs name LIBS twice). patches/ fix its aligned allocation,
# which libext2fs uses for every O_DIRECT buffer.

MIMALLOC_OBJ := $(BUILD)/mimalloc
MIMALLOC_A := $(MIMALLOC_OBJ)/libmimalloc.a
MIMALLOC_DEPENDENCIES := $(STAMPS)/linux-headers
MIMALLOC_LICENSE := MIT
MIMALLOC_LICENSE_FILES := LICENSE
define MIMALLOC_BUILD_CMDS
	$(Q)$(TARGET_CC) -O2 -DNDEBUG -DMI_MALLOC_OVERRIDE $(PREFIX_MAP) \
	  -I$(MIMALLOC_SRC)/include -c $(MIMALLOC_SRC)/src/static.c -o $(MIMALLOC_OBJ)/mimalloc.o
	$(Q)rm -f $(MIMALLOC_A) && $(TARGET_AR) rcsD $(MIMALLOC_A) $(MIMALLOC_OBJ)/mimalloc.o
endef
$(eval $(call package,mimalloc,MIMALLOC))

# The alignment check of tests/test_allocator.py, linked as e2fsprogs is.
$(SRC_OBJ)/test-aligned-alloc: tests/c/test-aligned-alloc.c $(STAMPS)/mimalloc-installed
	$(Q)mkdir -p $(dir $@)
	$(Q)$(TARGET_CC) $(MUSL_CFLAGS) -static -o $@ $< $(MIMALLOC_A)
