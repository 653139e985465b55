/* Device checks for iobench. The signature probe reads only the places where
 * the common formats put their magic; it is a guard against a wrong device
 * name, not a full blkid. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "iobench-dev.h"

int dev_identify(const char *path, struct blockdev *d, char *why, size_t len)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISBLK(st.st_mode)) {
		snprintf(why, len, "%s is not a block device; name a disk, partition or loop device", path);
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &d->size) < 0) {
		snprintf(why, len, "%s: cannot read its size: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	d->path = path;
	d->rdev = st.st_rdev;
	return 0;
}

int dev_same(const char *a, const char *b)
{
	struct stat sa, sb;
	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return strcmp(a, b) == 0;
	if (S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode))
		return sa.st_rdev == sb.st_rdev;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The device and its partitions, as "maj:min" strings (at most 64). */
static int family(dev_t rdev, char ids[][24], int max)
{
	char dir[96];
	int n = 0;
	snprintf(ids[n++], 24, "%u:%u", major(rdev), minor(rdev));
	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u", major(rdev), minor(rdev));
	DIR *dp = opendir(dir);
	if (!dp)
		return n;
	struct dirent *e;
	while (n < max && (e = readdir(dp))) {
		char path[400], buf[24];
		snprintf(path, sizeof(path), "%s/%s/dev", dir, e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			buf[strcspn(buf, "\n")] = 0;
			snprintf(ids[n++], 24, "%s", buf);
		}
		fclose(f);
	}
	closedir(dp);
	return n;
}

static int has_holders(const char *id)
{
	char path[96];
	snprintf(path, sizeof(path), "/sys/dev/block/%s/holders", id);
	DIR *dp = opendir(path);
	if (!dp)
		return 0;
	struct dirent *e;
	int held = 0;
	while (!held && (e = readdir(dp)))
		held = e->d_name[0] != '.';
	closedir(dp);
	return held;
}

int dev_check_unused(const struct blockdev *d, char *why, size_t len)
{
	char ids[64][24];
	int n = family(d->rdev, ids, 64);
	char line[4096];

	FILE *f = fopen("/proc/self/mountinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char id[24], mnt[1024];
		if (sscanf(line, "%*s %*s %23s %*s %1023s", id, mnt) != 2)
			continue;
		for (int i = 0; i < n; i++)
			if (strcmp(id, ids[i]) == 0) {
				snprintf(why, len, "%s is in use: %s is mounted on %s", d->path, i ? "a partition of it" : "it", mnt);
				fclose(f);
				return -1;
			}
	}
	if (f)
		fclose(f);
	for (int i = 0; i < n; i++)
		if (has_holders(ids[i])) {
			snprintf(why, len, "%s is in use: %s held by md or device-mapper (see /sys/dev/block/%s/holders)",
				 d->path, i ? "a partition of it is" : "it is", ids[i]);
			return -1;
		}
	/* Swap and anything else that holds the device open exclusively. */
	int fd = open(d->path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "%s is in use (%s): swap, a mount or another program holds it", d->path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

struct magic {
	const char *what;
	uint64_t off;
	const char *bytes;
	size_t n;
};

static const struct magic magics[] = {
	{"an ext2/3/4 filesystem", 1024 + 56, "\x53\xef", 2},
	{"a GPT partition table", 512, "EFI PART", 8},
	{"a GPT partition table (4 KiB sectors)", 4096, "EFI PART", 8},
	{"a LUKS header", 0, "LUKS\xba\xbe", 6},
	{"an LVM physical volume", 0, "LABELONE", 8},
	{"an LVM physical volume", 512, "LABELONE", 8},
	{"an LVM physical volume", 1024, "LABELONE", 8},
	{"an LVM physical volume", 1536, "LABELONE", 8},
	{"an md RAID member (1.1)", 0, "\xfc\x4e\x2b\xa9", 4},
	{"an md RAID member (1.2)", 4096, "\xfc\x4e\x2b\xa9", 4},
	{"an XFS filesystem", 0, "XFSB", 4},
	{"a Btrfs filesystem", 65536 + 64, "_BHRfS_M", 8},
	{"swap space", 4096 - 10, "SWAPSPACE2", 10},
	{"an ISO 9660 filesystem", 32769, "CD001", 5},
	{"a FAT filesystem", 82, "FAT32   ", 8},
	{"a FAT filesystem", 54, "FAT1", 4},
};

int dev_check_blank(const struct blockdev *d, char *why, size_t len)
{
	static unsigned char head[65536 + 4096];
	int fd = open(d->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "%s: %s", d->path, strerror(errno));
		return -1;
	}
	ssize_t got = pread(fd, head, sizeof(head), 0);
	if (got < 0) {
		snprintf(why, len, "%s: cannot read: %s", d->path, strerror(errno));
		close(fd);
		return -1;
	}
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
		const struct magic *m = &magics[i];
		if (m->off + m->n <= (uint64_t)got && memcmp(head + m->off, m->bytes, m->n) == 0) {
			snprintf(why, len, "%s holds %s", d->path, m->what);
			close(fd);
			return -1;
		}
	}
	/* An MBR: the boot signature and at least one partition entry. */
	if (got >= 512 && head[510] == 0x55 && head[511] == 0xaa) {
		for (int p = 0; p < 4; p++)
			if (head[446 + 16 * p + 4] != 0) {
				snprintf(why, len, "%s holds an MBR partition table", d->path);
				close(fd);
				return -1;
			}
	}
	/* md 0.90 and 1.0 keep their superblock at the end of the device. */
	unsigned char tail[4];
	uint64_t ends[2] = {((d->size >> 16) - 1) << 16, (d->size - 8192) & ~(uint64_t)4095};
	for (int i = 0; i < 2; i++) {
		if (d->size < 131072)
			break;
		if (pread(fd, tail, 4, ends[i]) == 4 &&
		    (memcmp(tail, "\xfc\x4e\x2b\xa9", 4) == 0 || memcmp(tail, "\xa9\x2b\x4e\xfc", 4) == 0)) {
			snprintf(why, len, "%s holds an md RAID member (%s)", d->path, i ? "1.0" : "0.90");
			close(fd);
			return -1;
		}
	}
	close(fd);
	return 0;
}
