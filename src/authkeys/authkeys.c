/*
 * authkeys: an authorized_keys text from an untrusted place (a URL given on
 * the kernel command line) filtered to the lines that are public keys.
 * Reads standard input, at most 64 KiB; writes the good lines to standard
 * output, says on standard error, one line each, which lines were left out
 * and why. Exit status 0 when at least one key was taken, 1 when none, 2 when
 * the input is too large (then nothing is taken from it).
 *
 * usage: authkeys NAME < FILE      (NAME: how the source is called in messages)
 *        authkeys --url VALUE      VALUE (a rescue.ssh_key= URL, its pin
 *                                  included) checked: prints the URL and the
 *                                  pin (- for none); exit 1, saying why, when
 *                                  it is not one
 */
#include <stdio.h>
#include <string.h>

#include "../lib/sshkey.h"

#define MAX_INPUT (64 * 1024)
#define MAX_KEYS 32

/* The keys of TEXT (N bytes and a NUL after them), written out; main's exit status. */
static int take_keys(char *text, size_t n, const char *name)
{
	int taken = 0, number = 0;

	if (memchr(text, 0, n)) {
		fprintf(stderr, "extrescue: %.80s is not text (it holds NUL bytes); no key taken from it\n", name);
		return 1;
	}
	for (char *line = text, *next; line && *line; line = next) {
		const char *why;
		size_t len;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		number++;
		len = strlen(line);
		if (len && line[len - 1] == '\r')
			line[--len] = 0;
		line += strspn(line, " \t");
		if (!*line || *line == '#')
			continue;
		if ((why = sshkey_check(line))) {
			fprintf(stderr, "extrescue: %.80s line %d %s; ignored\n", name, number, why);
			continue;
		}
		if (taken == MAX_KEYS) {
			fprintf(stderr, "extrescue: %.80s has more than %d keys; the rest are ignored\n", name, MAX_KEYS);
			break;
		}
		puts(line);
		taken++;
	}
	if (!taken)
		fprintf(stderr, "extrescue: %.80s holds no usable public key\n", name);
	return taken ? 0 : 1;
}

#ifndef FUZZING
int main(int argc, char **argv)
{
	static char text[MAX_INPUT + 2];
	const char *name = argc > 1 ? argv[1] : "authorized_keys";
	size_t n;

	/* What the shell scripts are given to fetch: the URL, and the pin
	 * they hold the file to, as two words nothing in them can split. */
	if (argc == 3 && !strcmp(argv[1], "--url")) {
		char url[1025], pin[KEYURL_PIN + 1];
		const char *why = keyurl_check(argv[2], url, sizeof(url), pin);

		if (why) {
			fprintf(stderr, "extrescue: rescue.ssh_key=%.80s%s %s; ignored\n", argv[2],
				strlen(argv[2]) > 80 ? "..." : "", why);
			return 1;
		}
		printf("%s %s\n", url, *pin ? pin : "-");
		return 0;
	}
	n = fread(text, 1, MAX_INPUT + 1, stdin);
	if (n > MAX_INPUT) {
		fprintf(stderr, "extrescue: %.80s is larger than 64 KiB; no key taken from it\n", name);
		return 2;
	}
	text[n] = 0;
	return take_keys(text, n, name);
}
#endif
