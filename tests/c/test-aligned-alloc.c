/*
 * Checks the aligned allocators of the allocator linked ahead of libc
 * (mimalloc in e2fsprogs): every block from posix_memalign, aligned_alloc
 * and memalign must be aligned as asked, because libext2fs reads and writes
 * through such blocks with O_DIRECT, and a disk refuses a misaligned buffer.
 * The blocks are kept while more are taken, so each size class serves
 * several, from more than one page.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP 64

int main(void)
{
	static const size_t sizes[] = { 1, 8, 100, 128, 384, 512, 1000, 1024, 1536,
					2048, 4096, 5000, 8192, 65536, 131072, 1 << 20 };
	void *kept[KEEP];
	unsigned long checks = 0, bad = 0;

	for (size_t align = sizeof(void *); align <= 65536; align *= 2)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			for (int how = 0; how < 3; how++) {
				for (int i = 0; i < KEEP; i++) {
					void *p = NULL;

					if (how == 0 && posix_memalign(&p, align, sizes[s]))
						p = NULL;
					else if (how == 1)
						p = aligned_alloc(align, (sizes[s] + align - 1) / align * align);
					else if (how == 2)
						p = memalign(align, sizes[s]);
					if (!p) {
						fprintf(stderr, "no block of %zu aligned to %zu\n", sizes[s], align);
						return 2;
					}
					memset(p, 0x5a, sizes[s]);
					checks++;
					if ((uintptr_t)p % align) {
						if (bad++ < 10)
							printf("misaligned: %p for %zu bytes aligned to %zu (call %d)\n",
							       p, sizes[s], align, how);
					}
					kept[i] = p;
				}
				for (int i = 0; i < KEEP; i++)
					free(kept[i]);
			}
	printf("%lu blocks, %lu misaligned\n", checks, bad);
	return bad != 0;
}
