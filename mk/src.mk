# Our own C code in src/: static musl objects and tools for the image, and
# their unit tests built for the host.

SRC_OBJ := $(BUILD)/src
MUSL_CFLAGS := -O2 -Wall -Wextra -Werror
FAST_STRING_O := $(SRC_OBJ)/fast-string.o

# -fno-builtin: these are the library functions; never turn them into calls.
$(FAST_STRING_O): src/fast-string.c | $(STAMPS)/linux-headers
	@mkdir -p $(dir $@)
	@$(MUSL_CC) $(MUSL_CFLAGS) -fno-builtin -c $< -o $@

$(SRC_OBJ)/test-fast-string: src/test-fast-string.c src/fast-string.c
	@mkdir -p $(dir $@)
	@$(CC) -O2 -Wall -Wextra -fno-builtin -Dmemcmp=xr_memcmp -Dstrncmp=xr_strncmp -c src/fast-string.c -o $@.o
	@$(CC) -O2 -Wall -Wextra src/test-fast-string.c $@.o -o $@
