/* Bytes from a disk, the kernel command line or the network, made fit to
 * show: printable ASCII passes, anything else becomes '?'. One rule for
 * every reader of hostile text, so a label or a value can never carry an
 * escape sequence to the console or break a line of our tables. */
#ifndef TEXT_H
#define TEXT_H

#include <stddef.h>
#include <stdint.h>

/* TEXT_NO_SPACE: a space becomes '?' too (fields of whitespace-split tables).
 * TEXT_PADDED: a fixed-width field padded with NULs or spaces: a NUL is a
 * blank rather than the end, and trailing blanks are dropped. */
enum { TEXT_NO_SPACE = 1, TEXT_PADDED = 2 };

/* Writes at most N bytes of IN (up to its first NUL unless TEXT_PADDED) into
 * OUT of SIZE bytes (SIZE > 0), always NUL-terminated; returns its length. */
static inline size_t text_shown(char *out, size_t size, const void *in, size_t n, int flags)
{
	const uint8_t *p = in;
	size_t j = 0;
	uint8_t low = (flags & TEXT_NO_SPACE) ? 0x21 : 0x20;

	for (size_t i = 0; i < n && j + 1 < size; i++) {
		if (!p[i] && !(flags & TEXT_PADDED))
			break;
		out[j++] = (p[i] >= low && p[i] < 0x7f) ? (char) p[i] : (p[i] || !(flags & TEXT_PADDED)) ? '?' : ' ';
	}
	if (flags & TEXT_PADDED)
		while (j && out[j - 1] == ' ')
			j--;
	out[j] = 0;
	return j;
}

/* Whether S holds only printable ASCII (spaces included). */
static inline int text_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char) *s < 0x20 || (unsigned char) *s > 0x7e)
			return 0;
	return 1;
}

#endif
