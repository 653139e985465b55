/* "Is this disk in use, by any name?": the one answer write-stick (and
 * rescue-stick), qemu/run's --disk and --pci, and iobench all ask before
 * they write. A device is in use when it or a partition of it is mounted
 * (by device number, or by name for filesystems that show an anonymous
 * device number: btrfs), is swap, has holders (md, device-mapper,
 * multipath, bcache), or the kernel refuses an exclusive open; and so is
 * every other block device that is the same storage: a loop device over
 * the same file, a disk with the same SCSI wwid (VPD page 0x83), an NVMe
 * namespace with the same wwid, NGUID or EUI-64. The host's tables are
 * read from EXTRESCUE_SYSFS and EXTRESCUE_PROCFS (default /sys and /proc)
 * so tests can give a tree of their own. */
#ifndef INUSE_H
#define INUSE_H
#include <stddef.h>

#define INUSE_MAX 16
#define INUSE_LINE 512

struct inuse {
	int n;                          /* findings, at most INUSE_MAX */
	char line[INUSE_MAX][INUSE_LINE];
};

/* PATH is a block device or an image file (in use when a loop device over
 * it is). Returns the number of findings (0: free), or -1 with the reason
 * in line[0] when PATH cannot be looked at. */
int inuse_path(const char *path, struct inuse *u);
/* The same for a block device by its kernel name (sdb, nvme0n1, loop0). */
int inuse_name(const char *name, struct inuse *u);

#endif
