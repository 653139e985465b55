/* What iobench must know about a device before it may destroy it: is it a
 * block device, how big, is anything using it, does it hold data. */
#ifndef IOBENCH_DEV_H
#define IOBENCH_DEV_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct blockdev {
	const char *path;
	dev_t rdev;
	uint64_t size;
};

/* Each returns 0, or -1 with a one-line reason in why. */
int dev_identify(const char *path, struct blockdev *d, char *why, size_t len);
int dev_same(const char *a, const char *b);
/* In use by any of its names: mounted, swap, held, opened exclusively,
 * or another name of the same storage in use (inuse.h). */
int dev_check_unused(const struct blockdev *d, char *why, size_t len);
/* A filesystem, RAID/LVM/LUKS member or partition table at the usual places. */
int dev_check_blank(const struct blockdev *d, char *why, size_t len);

#endif
