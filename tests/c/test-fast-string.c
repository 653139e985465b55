/*
 * Checks fast-string.c against the C library on random and edge-case inputs:
 * the sign of every result must agree. Built with the functions renamed, so
 * the C library's own versions stay available for comparison.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int xr_memcmp(const void *a, const void *b, size_t n);
int xr_strncmp(const char *a, const char *b, size_t n);

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

int main(void)
{
	static unsigned char a[1024], b[1024];
	unsigned long checks = 0, bad = 0;
	unsigned char *page;

	srand(12345);
	for (int round = 0; round < 200000; round++) {
		size_t len = rand() % 300, n = rand() % 320;
		size_t oa = rand() % 16, ob = rand() % 16;

		/* Mostly equal strings over a small alphabet, so prefixes are long. */
		for (size_t i = 0; i < len + 16; i++)
			a[oa + i] = b[ob + i] = 'a' + rand() % 2;
		if (rand() % 2)
			b[ob + rand() % (len + 1)] ^= 1 + rand() % 255;
		if (rand() % 3 == 0)
			a[oa + rand() % (len + 1)] = 0;
		a[oa + len] = b[ob + len] = 0;
		checks += 2;
		if (sign(xr_strncmp((char *) a + oa, (char *) b + ob, n)) !=
		    sign(strncmp((char *) a + oa, (char *) b + ob, n)))
			bad++;
		if (sign(xr_memcmp(a + oa, b + ob, n < len ? n : len)) !=
		    sign(memcmp(a + oa, b + ob, n < len ? n : len)))
			bad++;
	}

	/* A string ending at the last byte of a page, before an unmapped page. */
	page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || mprotect(page + 4096, 4096, PROT_NONE))
		return perror("test-fast-string: mmap"), 2;
	for (int k = 1; k <= 20; k++) {
		char *s = (char *) page + 4096 - k;

		memset(s, 'a', k - 1);
		s[k - 1] = 0;
		checks++;
		if (xr_strncmp(s, s, 1000) != 0 || xr_strncmp(s, "aaaaaaaaaaaaaaaaaaaab", 1000) >= 0)
			bad++;
	}
	printf("test-fast-string: %lu checks, %lu mismatches\n", checks, bad);
	return bad != 0;
}
