/*
 * libFuzzer target for the kernel command line as cmdline takes it: the
 * kernel's word splitting (kargs), every rescue.* check, the network
 * parameters (netargs) and the SSH keys and URLs (sshkey). The input is the
 * contents of /proc/cmdline.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* take() and its checks are cmdline's static functions: built into this file, main left out. */
#include "../cmdline/cmdline.c"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* Parsing is what is fuzzed: a folder nothing can be made in keeps every
	 * save() a refused open, not a file that grows with each run. */
	dir = "/dev/null/fuzz-cmdline";
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* As main reads it: at most MAX_LINE bytes, then a NUL; in a buffer of
	 * its own size so an overread shows. */
	size_t n = size < MAX_LINE ? size : MAX_LINE;
	char *line = malloc(n + 1);

	if (!line)
		abort();
	memcpy(line, data, n);
	line[n] = 0;
	take_all(line);
	free(line);
	return 0;
}
