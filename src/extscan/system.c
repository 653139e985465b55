/*
 * What the running system knows beyond the bytes: the block devices worth a
 * look, their kernel names, holders, disks and identities (sysfs), and the
 * optional features the running kernel's ext4 was built with.
 */
#include <dirent.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/text.h"
#include "extscan.h"

/* One line of a sysfs attribute of block device NAME (empty when absent). */
void sysfs_attr(const char *name, const char *attr, char *out, size_t size)
{
	char path[400];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "/sys/class/block/%s/%s", name, attr);
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(out, (int) size, f))
		out[0] = 0;
	fclose(f);
	out[strcspn(out, "\n")] = 0;
}

static unsigned long long sysfs_bytes(const char *name)
{
	char v[32];

	sysfs_attr(name, "size", v, sizeof(v));
	return strtoull(v, NULL, 10) * 512;
}

/* /dev/NAME, or for device-mapper the /dev/mapper/ name LVM and cryptsetup
 * gave it (what an fstab or crypttab names). */
static char *dm_path(const char *name)
{
	char path[300], dm[200] = "";
	struct stat st;

	if (!strncmp(name, "dm-", 3))
		sysfs_attr(name, "dm/name", dm, sizeof(dm));
	snprintf(path, sizeof(path), "/dev/mapper/%s", dm);
	if (dm[0] && stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		return strdup(path);
	snprintf(path, sizeof(path), "/dev/%s", name);
	return strdup(path);
}

/* extrescue's own read-only overlays (dm snapshots named xr-ro-*) and the loop
 * devices holding their exceptions in RAM are views, not disks. */
static int own_overlay(const char *name)
{
	char v[300];

	sysfs_attr(name, "dm/name", v, sizeof(v));
	if (!strncmp(v, "xr-ro-", 6))
		return 1;
	sysfs_attr(name, "loop/backing_file", v, sizeof(v));
	return !strncmp(v, "/run/extrescue/", 15);
}

/* A mapping whose table never loaded stays suspended: a read of it would
 * wait for ever. */
static int suspended(const char *name)
{
	char v[16];

	sysfs_attr(name, "dm/suspended", v, sizeof(v));
	return v[0] == '1';
}

/* Block devices worth a look: all of /sys/class/block but empty ones, RAM
 * disks, our own overlays and suspended mappings. */
int list_devices(char ***out)
{
	DIR *d = opendir("/sys/class/block");
	struct dirent *e;
	char **v = NULL;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char **nv;

		if (e->d_name[0] == '.' || !strncmp(e->d_name, "ram", 3) || !strncmp(e->d_name, "zram", 4))
			continue;
		if (sysfs_bytes(e->d_name) < 2 * EXTSB_SIZE || own_overlay(e->d_name) || suspended(e->d_name))
			continue;
		nv = realloc(v, sizeof(*v) * (size_t) (n + 1));
		if (!nv)
			break;
		v = nv;
		v[n] = dm_path(e->d_name);
		if (!v[n])
			break;
		n++;
	}
	closedir(d);
	*out = v;
	return n;
}

/* The kernel's name (sda1, dm-3) of the block device at PATH, or "" for a
 * regular file. */
void kernel_name(const char *path, char *out, size_t size)
{
	char link[300], target[300];
	struct stat st;
	ssize_t n;

	out[0] = 0;
	if (stat(path, &st) != 0 || !S_ISBLK(st.st_mode))
		return;
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = 0;
	snprintf(out, size, "%.200s", strrchr(target, '/') ? strrchr(target, '/') + 1 : target);
}

/* The first md array or dm mapping built on kernel name NAME, as "dm-3 NAME",
 * into OUT; 0 when none. Our own read-only overlays (xr-ro-*) do not count. */
static int holder(const char *name, char *out, size_t size)
{
	char path[300], v[200];
	struct dirent *e;
	DIR *d;
	int found = 0;

	snprintf(path, sizeof(path), "/sys/class/block/%s/holders", name);
	if (!(d = opendir(path)))
		return 0;
	while (!found && (e = readdir(d))) {
		char attr[300];

		if (e->d_name[0] == '.')
			continue;
		snprintf(attr, sizeof(attr), "holders/%s/dm/name", e->d_name);
		sysfs_attr(name, attr, v, sizeof(v));
		if (!strncmp(v, "xr-ro-", 6))
			continue;
		snprintf(out, size, "%.40s%s%.120s", e->d_name, v[0] ? " " : "", v);
		found = 1;
	}
	closedir(d);
	return found;
}

/* The kernel name of partition NAME's disk: /sys/class/block/NAME links
 * into its disk's directory. */
int parent_disk(const char *name, char *out, size_t size)
{
	char link[300], target[300], *slash;
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/class/block/%s", name);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = 0;
	if (!(slash = strrchr(target, '/')))
		return 0;
	*slash = 0;
	snprintf(out, size, "%.200s", strrchr(target, '/') ? strrchr(target, '/') + 1 : target);
	return out[0] != 0;
}

/* What the running system knows beyond the bytes: a disk whose partitions
 * the kernel found, a device an md array or dm mapping is built on. */
void system_layout(const char *name, struct layout *l)
{
	char path[300], v[300], list[160] = "";
	struct dirent *e;
	DIR *d;
	size_t n = 0;

	snprintf(path, sizeof(path), "/sys/class/block/%s", name);
	if ((d = opendir(path))) {
		while ((e = readdir(d))) {
			char attr[300];

			snprintf(attr, sizeof(attr), "%s/partition", e->d_name);
			sysfs_attr(name, attr, v, sizeof(v));
			if (e->d_name[0] != '.' && v[0] && n < sizeof(list))
				n += (size_t) snprintf(list + n, sizeof(list) - n, "%s%s", n ? " " : "", e->d_name);
		}
		closedir(d);
	}
	if (n && l->kind == LAYOUT_PTABLE && strlen(l->what) < 60) {
		char table[64];

		snprintf(table, sizeof(table), "%s", l->what);
		snprintf(l->what, sizeof(l->what), "%s (partitions %.120s)", table, list);
		return;
	}
	if (n && l->kind == LAYOUT_NONE) {
		l->kind = LAYOUT_PTABLE;
		snprintf(l->what, sizeof(l->what), "disk with partitions %.150s", list);
		return;
	}
	if (l->kind != LAYOUT_NONE)
		return;
	if (holder(name, v, sizeof(v))) {
		l->kind = LAYOUT_HELD;
		snprintf(l->what, sizeof(l->what), "in use by %.160s", v);
		return;
	}
	/* A partition of a disk something holds (a multipath mapping, whose
	 * own partitions are mapped on it): the partition is that disk's too. */
	sysfs_attr(name, "partition", v, sizeof(v));
	if (v[0] && parent_disk(name, path, sizeof(path)) && holder(path, v, sizeof(v))) {
		l->kind = LAYOUT_HELD;
		snprintf(l->what, sizeof(l->what), "on a disk in use by %.150s", v);
	}
}

/* The identity of the disk behind kernel name NAME (WWID or serial; for a
 * partition, its disk's and its number), or "" when it has none. */
void disk_identity(const char *name, char *out, size_t size)
{
	char v[200], part[16], parent[300];

	out[0] = 0;
	sysfs_attr(name, "partition", part, sizeof(part));
	if (part[0]) {
		if (!parent_disk(name, parent, sizeof(parent)))
			return;
		disk_identity(parent, v, sizeof(v));
		if (v[0])
			snprintf(out, size, "%s-part%s", v, part);
		return;
	}
	static const char *const attrs[] = {"device/wwid", "wwid", "device/serial", "serial"};
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]) && !out[0]; i++) {
		sysfs_attr(name, attrs[i], v, sizeof(v));
		/* Blank or all-zero identities are what cheap bridges report for every disk. */
		if (strspn(v, " 0") < strlen(v))
			snprintf(out, size, "%s", v);
	}
}

int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The running kernel's ext4 says which optional features it was built with. */
void probe_kernel(void)
{
	static const struct { const char *file; int ro; uint32_t bit; } optional[] = {
		{"casefold", 0, 0x20000}, {"encryption", 0, 0x10000}, {"verity", 1, 0x8000},
	};
	struct stat st;
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0)
		page = 4096;
	kernel = extsb_kernel;
	if (stat("/sys/fs/ext4/features", &st) != 0)
		return;	/* not running on our kernel (e.g. on a build host): keep the table */
	kernel.page_log_block_size = 0;
	while (page > 1024 && (1024L << (kernel.page_log_block_size + 1)) <= page)
		kernel.page_log_block_size++;
	/* Blocks larger than the page: only a kernel that says so (Linux 6.19+ with THP). */
	if (stat("/sys/fs/ext4/features/blocksize_gt_pagesize", &st) != 0 &&
	    kernel.max_log_block_size > kernel.page_log_block_size)
		kernel.max_log_block_size = kernel.page_log_block_size;
	for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++) {
		char path[80];

		snprintf(path, sizeof(path), "/sys/fs/ext4/features/%s", optional[i].file);
		if (stat(path, &st) != 0) {
			if (optional[i].ro)
				kernel.ro_compat &= ~optional[i].bit;
			else
				kernel.incompat &= ~optional[i].bit;
		}
	}
}

