/*
 * libFuzzer target for SSH public keys: authkeys on a fetched authorized_keys
 * text (every line through sshkey_check), and url_check on the URL such a
 * text is fetched from (the input's first line). Beyond the sanitizers: an
 * accepted URL holds no byte a shell or wget would split or quote at.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* take_keys() is authkeys' static function: built into this file, main left out. */
#include "../authkeys/authkeys.c"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* The keys taken are printed; nobody reads them here. */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* As main reads it: the bytes, then a NUL; in a buffer of its own size
	 * so an overread shows. */
	char *text = malloc(size + 1);

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = 0;
	text[strcspn(text, "\n")] = 0;
	if (!url_check(text))
		for (const char *p = text; *p; p++)
			if ((unsigned char)*p <= 0x20 || (unsigned char)*p > 0x7e || strchr("\"'\\`<>", *p))
				abort();
	memcpy(text, data, size);
	if (size <= MAX_INPUT)
		take_keys(text, size, "fuzz");
	free(text);
	return 0;
}
