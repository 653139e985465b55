#ifndef IOBENCH_READ_H
#define IOBENCH_READ_H
#include <stdint.h>

/* Sequential then random O_DIRECT reads of DEV, each pass at most SECONDS
 * and MAX_BYTES; prints the figures (JSON when JSON). Returns 0, 1 after a
 * read error, 2 when DEV cannot be read at all. Writes nothing. */
int read_probe(const char *dev, double seconds, uint64_t max_bytes, int json);

#endif
