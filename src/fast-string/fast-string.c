/*
 * Word-at-a-time memcmp and strncmp for the static musl binaries.
 *
 * musl compares byte by byte. debugfs and libext2fs compare directory entry
 * names with them (255-byte names with long common prefixes in large
 * directories), where that made debugfs 2.4x slower than with glibc.
 * Linked before libc, these definitions replace musl's.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#define PAGE  4096

static inline uint64_t load64(const unsigned char *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, sizeof(v));	/* inlined: one load */
	return v;
}

static inline int has_zero(uint64_t v)
{
	return ((v - ONES) & ~v & HIGHS) != 0;
}

/* True if an 8-byte read at p stays inside p's page (so it cannot fault). */
static inline int word_in_page(const unsigned char *p)
{
	return ((uintptr_t) p & (PAGE - 1)) <= PAGE - 8;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *l = a, *r = b;

	while (n >= 8 && load64(l) == load64(r)) {
		l += 8;
		r += 8;
		n -= 8;
	}
	for (; n; n--, l++, r++)
		if (*l != *r)
			return *l - *r;
	return 0;
}

int strncmp(const char *a, const char *b, size_t n)
{
	const unsigned char *l = (const void *) a, *r = (const void *) b;

	/*
	 * Whole words while they are equal and hold no NUL; a word may be read
	 * past the end of a string, but never past n bytes or into another page.
	 */
	while (n >= 8 && word_in_page(l) && word_in_page(r)) {
		uint64_t x = load64(l);

		if (x != load64(r) || has_zero(x))
			break;
		l += 8;
		r += 8;
		n -= 8;
	}
	for (; n; n--, l++, r++) {
		if (*l != *r)
			return *l - *r;
		if (!*l)
			return 0;
	}
	return 0;
}
