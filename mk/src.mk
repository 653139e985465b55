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
