/*
 * iobench --read DEV: how a disk reads, without writing a byte of it. A
 * sequential pass of 1 MiB O_DIRECT reads from the start, then random 4 KiB
 * O_DIRECT reads over the whole device, each bounded by time and by bytes,
 * so a slow or failing disk (or a controller under TCG) costs seconds, not
 * minutes. Prints MB/s, IOPS and read latency percentiles; a read error
 * stops the pass and is reported with its byte offset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <time.h>
#include <unistd.h>

#include "iobench-read.h"

#define SEQ_BLOCK (1u << 20)
#define RAND_BLOCK 4096u
#define MAX_SAMPLES 100000

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* xorshift64*: the same offsets on every run, no libc state. */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

struct pass {
	const char *name;
	uint64_t bytes, ios, error_at;
	int error;
	double seconds, *lat;
	unsigned nlat;
};

/* Reads BLOCK-sized pieces at the offsets NEXT() gives for at most SECONDS
 * and MAX_BYTES; stops at the first error. */
static void run_pass(int fd, char *buf, unsigned block, struct pass *p, double seconds, uint64_t max_bytes,
		     uint64_t (*next)(void *), void *state)
{
	double start = now(), t = start;
	while (t - start < seconds && p->bytes < max_bytes) {
		uint64_t off = next(state);
		if (off == UINT64_MAX)
			break;
		ssize_t n = pread(fd, buf, block, (off_t)off);
		double t2 = now();
		if (n < 0 || n == 0) {
			p->error = n < 0 ? errno : EIO;
			p->error_at = off;
			/* Which 4 KiB of a large read failed: the first one that fails alone. */
			for (uint64_t o = off; block > RAND_BLOCK && o < off + block; o += RAND_BLOCK)
				if (pread(fd, buf, RAND_BLOCK, (off_t)o) < 0) {
					p->error = errno;
					p->error_at = o;
					break;
				}
			break;
		}
		if (p->nlat < MAX_SAMPLES)
			p->lat[p->nlat++] = (t2 - t) * 1e6;
		p->bytes += (uint64_t)n;
		p->ios++;
		t = t2;
	}
	p->seconds = now() - start;
}

struct seq_state { uint64_t off, size; };
static uint64_t seq_next(void *v)
{
	struct seq_state *s = v;
	if (s->off + SEQ_BLOCK > s->size)
		return UINT64_MAX;
	uint64_t o = s->off;
	s->off += SEQ_BLOCK;
	return o;
}

struct rand_state { uint64_t seed, blocks; };
static uint64_t rand_next(void *v)
{
	struct rand_state *s = v;
	return next_random(&s->seed) % s->blocks * RAND_BLOCK;
}

static double pct(const struct pass *p, double q)
{
	if (!p->nlat)
		return 0;
	unsigned i = (unsigned)(q * (p->nlat - 1) + 0.5);
	return p->lat[i];
}

static void print_pass(const struct pass *p, int json, int last)
{
	qsort(p->lat, p->nlat, sizeof(double), cmp_double);
	double mbs = p->seconds > 0 ? p->bytes / p->seconds / 1e6 : 0;
	double iops = p->seconds > 0 ? p->ios / p->seconds : 0;
	if (json) {
		printf("  \"%s\": {\"bytes\": %llu, \"seconds\": %.3f, \"mb_per_s\": %.2f, \"iops\": %.1f, "
		       "\"lat_us_p50\": %.0f, \"lat_us_p99\": %.0f, \"lat_us_max\": %.0f, \"error\": ",
		       p->name, (unsigned long long)p->bytes, p->seconds, mbs, iops, pct(p, 0.5), pct(p, 0.99),
		       pct(p, 1.0));
		if (p->error)
			printf("{\"offset\": %llu, \"sector\": %llu, \"message\": \"%s\"}}%s\n",
			       (unsigned long long)p->error_at, (unsigned long long)p->error_at / 512, strerror(p->error),
			       last ? "" : ",");
		else
			printf("null}%s\n", last ? "" : ",");
		return;
	}
	printf("%-10s %9.1f MB/s %9.0f IOPS   latency us: p50 %.0f  p99 %.0f  max %.0f   (%llu MiB in %.1f s)\n",
	       p->name, mbs, iops, pct(p, 0.5), pct(p, 0.99), pct(p, 1.0),
	       (unsigned long long)(p->bytes >> 20), p->seconds);
	if (p->error)
		printf("%-10s read error at byte %llu (sector %llu): %s\n", p->name,
		       (unsigned long long)p->error_at, (unsigned long long)p->error_at / 512, strerror(p->error));
}

int read_probe(const char *dev, double seconds, uint64_t max_bytes, int json)
{
	int fd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "iobench: cannot open %s: %s\n", dev, strerror(errno));
		return 2;
	}
	uint64_t size = 0;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) != 0)
			size = 0;
	} else if (fstat(fd, &st) == 0) {
		size = (uint64_t)st.st_size;
	}
	if (size < RAND_BLOCK) {
		fprintf(stderr, "iobench: %s is empty or its size unknown\n", dev);
		close(fd);
		return 2;
	}
	char *buf;
	double *lat = malloc(2 * MAX_SAMPLES * sizeof(double));
	if (!lat || posix_memalign((void **)&buf, 4096, SEQ_BLOCK)) {
		fprintf(stderr, "iobench: out of memory\n");
		return 2;
	}
	struct pass seq = {.name = "sequential", .lat = lat}, rnd = {.name = "random-4k", .lat = lat + MAX_SAMPLES};
	struct seq_state ss = {0, size};
	struct rand_state rs = {0x9e3779b97f4a7c15ull, size / RAND_BLOCK};
	run_pass(fd, buf, SEQ_BLOCK, &seq, seconds, max_bytes, seq_next, &ss);
	run_pass(fd, buf, RAND_BLOCK, &rnd, seconds, max_bytes, rand_next, &rs);
	close(fd);
	if (json)
		printf("{\"device\": \"%s\", \"size_bytes\": %llu,\n", dev, (unsigned long long)size);
	else
		printf("%s: %llu bytes, read only (O_DIRECT), at most %.0f s and %llu MiB a pass\n", dev,
		       (unsigned long long)size, seconds, (unsigned long long)(max_bytes >> 20));
	print_pass(&seq, json, 0);
	print_pass(&rnd, json, 1);
	if (json)
		printf("}\n");
	free(lat);
	free(buf);
	return seq.error || rnd.error ? 1 : 0;
}
