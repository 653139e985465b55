# mimalloc: the allocator of the e2fsprogs programs. musl's malloc maps and
# unmaps a page for a short-lived 4 KiB buffer (e2fsck: once per directory
# block) and walks its slot bitmaps on every call; with mimalloc e2fsck
# -fn took 0.79x the time on 200k small files and 0.64x on 2M inodes
# (tests/bench-fsck). Its src/static.c, as an archive ahead of libc,
# replaces malloc, calloc, realloc and free in each static binary (an archive,
# not the object, because some of e2fsprogs' test programs name LIBS twice).

MIMALLOC_OBJ := $(BUILD)/mimalloc
MIMALLOC_A := $(MIMALLOC_OBJ)/libmimalloc.a
MIMALLOC_DEPENDENCIES := $(STAMPS)/linux-headers
MIMALLOC_LICENSE := MIT
MIMALLOC_LICENSE_FILES := LICENSE
define MIMALLOC_BUILD_CMDS
	@$(MUSL_CC) -O2 -DNDEBUG -DMI_MALLOC_OVERRIDE $(PREFIX_MAP) \
	  -I$(MIMALLOC_SRC)/include -c $(MIMALLOC_SRC)/src/static.c -o $(MIMALLOC_OBJ)/mimalloc.o
	@rm -f $(MIMALLOC_A) && ar rcsD $(MIMALLOC_A) $(MIMALLOC_OBJ)/mimalloc.o
endef
$(eval $(call package,mimalloc,MIMALLOC))
