/* MD5 (RFC 1321), streaming. iobench uses it to prove that the large file it
 * reads back is the file it wrote, and to put a checksum's CPU cost into the
 * read figure the way `md5sum` did in the reference runs. */
#ifndef MD5_H
#define MD5_H
#include <stddef.h>
#include <stdint.h>

struct md5 {
	uint32_t h[4];
	uint64_t bytes;
	unsigned char buf[64];
	size_t used;
};

void md5_init(struct md5 *m);
void md5_update(struct md5 *m, const void *data, size_t len);
void md5_final(struct md5 *m, unsigned char digest[16]);
void md5_hex(const unsigned char digest[16], char out[33]);

#endif
