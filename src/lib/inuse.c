/* The in-use answer (inuse.h): sysfs and /proc read as bounded data. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "inuse.h"

#define NAME_MAX_LEN 64
#define MAX_PARTS 128
#define MAX_DEVICES 65536

static const char *root(const char *var, const char *fallback)
{
	const char *v = getenv(var);
	return v && *v ? v : fallback;
}
static const char *sysfs(void) { return root("EXTRESCUE_SYSFS", "/sys"); }
static const char *procfs(void) { return root("EXTRESCUE_PROCFS", "/proc"); }

static void add(struct inuse *u, const char *fmt, ...)
{
	if (u->n >= INUSE_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(u->line[u->n], INUSE_LINE, fmt, ap);
	va_end(ap);
	u->n++;
}

/* The first line of a small file, without its newline; "" when unreadable. */
static char *read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	buf[0] = 0;
	if (!f)
		return buf;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

static char *block_attr(const char *name, const char *attr, char *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%.300s/class/block/%.63s/%s", sysfs(), name, attr);
	return read_line(path, buf, len);
}

static int exists(const char *name, const char *attr)
{
	char path[512];
	snprintf(path, sizeof(path), "%.300s/class/block/%.63s/%s", sysfs(), name, attr);
	return access(path, F_OK) == 0;
}

/* Kernel names are [A-Za-z0-9_.:!-]; anything else read from sysfs is not one. */
static int good_name(const char *s)
{
	size_t n = strlen(s);
	if (!n || n >= NAME_MAX_LEN || s[0] == '.')
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:!-") == n;
}

/* The kernel's name of block device number RDEV, or "" when sysfs has none. */
static char *name_of_rdev(dev_t rdev, char *out)
{
	char link[512], target[1024];
	snprintf(link, sizeof(link), "%.300s/dev/block/%u:%u", sysfs(), major(rdev), minor(rdev));
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	out[0] = 0;
	if (n > 0) {
		target[n] = 0;
		const char *b = strrchr(target, '/');
		b = b ? b + 1 : target;
		if (good_name(b))
			snprintf(out, NAME_MAX_LEN, "%.63s", b);
	}
	return out;
}

/* Whole disk of a partition (its sysfs folder's parent), else NAME itself. */
static void disk_of(const char *name, char *out)
{
	char path[512], real[PATH_MAX];
	snprintf(out, NAME_MAX_LEN, "%s", name);
	if (!exists(name, "partition"))
		return;
	snprintf(path, sizeof(path), "%.300s/class/block/%.63s/..", sysfs(), name);
	if (!realpath(path, real))
		return;
	const char *b = strrchr(real, '/');
	if (b && good_name(b + 1))
		snprintf(out, NAME_MAX_LEN, "%s", b + 1);
}

/* NAME and its partitions. */
static int family(const char *name, char out[][NAME_MAX_LEN], int max)
{
	char path[512];
	int n = 0;
	snprintf(out[n++], NAME_MAX_LEN, "%s", name);
	snprintf(path, sizeof(path), "%.300s/class/block/%.63s", sysfs(), name);
	DIR *dp = opendir(path);
	struct dirent *e;
	while (dp && n < max && (e = readdir(dp))) {
		char attr[NAME_MAX_LEN + 16];
		if (!good_name(e->d_name))
			continue;
		snprintf(attr, sizeof(attr), "%.63s/partition", e->d_name);
		if (exists(name, attr))
			snprintf(out[n++], NAME_MAX_LEN, "%.63s", e->d_name);
	}
	if (dp)
		closedir(dp);
	return n;
}

/* mountinfo's octal escapes (\040 for a blank) decoded in place. */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; w++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w = *r++;
		}
	}
	*w = 0;
}

/* Whether SOURCE (a mount's or swap's device path) names block device PART:
 * by its base name, or by the device number the path has. */
static int names_part(const char *source, const char *part)
{
	struct stat st;
	char name[NAME_MAX_LEN];
	const char *b = strrchr(source, '/');
	if (strncmp(source, "/dev/", 5) != 0)
		return 0;
	if (strcmp(b + 1, part) == 0)
		return 1;
	return stat(source, &st) == 0 && S_ISBLK(st.st_mode) && strcmp(name_of_rdev(st.st_rdev, name), part) == 0;
}

/* Where PART (dev DEV) is mounted, into WHERE; 1 when it is. */
static int mounted(const char *part, const char *dev, char *where, size_t len)
{
	char path[512], line[8192];
	snprintf(path, sizeof(path), "%.300s/self/mountinfo", procfs());
	FILE *f = fopen(path, "r");
	int found = 0;
	for (int lines = 0; f && !found && lines < 100000 && fgets(line, sizeof(line), f); lines++) {
		char *sep = strstr(line, " - ");
		char majmin[32], mnt[4096], fstype[64], source[4096];
		if (!sep || sscanf(line, "%*s %*s %31s %*s %4095s", majmin, mnt) != 2 ||
		    sscanf(sep + 3, "%63s %4095s", fstype, source) != 2)
			continue;
		unescape(mnt);
		unescape(source);
		if ((*dev && strcmp(majmin, dev) == 0) || names_part(source, part)) {
			snprintf(where, len, "%.1000s", mnt);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static int swapped(const char *part)
{
	char path[512], line[4096];
	snprintf(path, sizeof(path), "%.300s/swaps", procfs());
	FILE *f = fopen(path, "r");
	int found = 0;
	for (int lines = 0; f && !found && lines < 10000 && fgets(line, sizeof(line), f); lines++) {
		char source[4096], type[32];
		if (lines == 0 || sscanf(line, "%4095s %31s", source, type) != 2 || strcmp(type, "partition") != 0)
			continue;
		unescape(source);
		found = names_part(source, part);
	}
	if (f)
		fclose(f);
	return found;
}

/* The holders of PART ("dm-0 (vg-root), md127") into OUT; 1 when any. */
static int holders(const char *part, char *out, size_t len)
{
	char path[512];
	size_t used = 0;
	out[0] = 0;
	snprintf(path, sizeof(path), "%.300s/class/block/%.63s/holders", sysfs(), part);
	DIR *dp = opendir(path);
	struct dirent *e;
	while (dp && (e = readdir(dp))) {
		char dm[128];
		if (!good_name(e->d_name) || used + 1 >= len)
			continue;
		block_attr(e->d_name, "dm/name", dm, sizeof(dm));
		if (!good_name(dm))
			dm[0] = 0;
		int w = snprintf(out + used, len - used, "%s%s%s%s%s", used ? ", " : "", e->d_name,
				 *dm ? " (" : "", dm, *dm ? ")" : "");
		used += w > 0 ? (size_t)w : 0;
		if (used >= len)
			used = len - 1;
	}
	if (dp)
		closedir(dp);
	return out[0] != 0;
}

/* The kernel's own word on NAME: an exclusive open of /dev/NAME, asked only
 * when that node is the device sysfs describes (a test's tree may name
 * devices this host does not have). Knows claims no table shows: ZFS, a
 * mount in another namespace, a target driver. */
static int excl_busy(const char *name)
{
	char path[NAME_MAX_LEN + 8], dev[32], want[32];
	struct stat st;
	snprintf(path, sizeof(path), "/dev/%s", name);
	if (stat(path, &st) < 0 || !S_ISBLK(st.st_mode))
		return 0;
	snprintf(want, sizeof(want), "%u:%u", major(st.st_rdev), minor(st.st_rdev));
	if (strcmp(block_attr(name, "dev", dev, sizeof(dev)), want) != 0)
		return 0;
	int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == EBUSY;
	close(fd);
	return 0;
}

/* What uses NAME or its partitions, each finding prefixed with PREFIX. */
static void uses(const char *name, const char *prefix, struct inuse *u)
{
	char parts[MAX_PARTS][NAME_MAX_LEN];
	int n = family(name, parts, MAX_PARTS), before = u->n;
	for (int i = 0; i < n; i++) {
		char dev[32], where[1024], held[512];
		block_attr(parts[i], "dev", dev, sizeof(dev));
		if (mounted(parts[i], dev, where, sizeof(where)))
			add(u, "%s/dev/%s is mounted on %s", prefix, parts[i], where);
		if (swapped(parts[i]))
			add(u, "%s/dev/%s is swap space", prefix, parts[i]);
		if (holders(parts[i], held, sizeof(held)))
			add(u, "%s/dev/%s is held by %s", prefix, parts[i], held);
	}
	if (u->n == before && excl_busy(name))
		add(u, "%s/dev/%s is in use (the kernel refused an exclusive open: a mount, swap or another program holds it)",
		    prefix, name);
}

/* Identity of storage: what makes two block devices the same disk. */
struct ident {
	char what[24];          /* "backing file", "wwid", "nguid", "eui" */
	char value[300];
	dev_t fdev;             /* a loop's backing file: device and inode */
	ino_t fino;
};

/* A wwid, NGUID or EUI-64 that is all zeros (after a "naa."-style
 * prefix) identifies nothing. */
static int meaningful(const char *v)
{
	const char *p = strchr(v, '.');
	return strpbrk(p ? p + 1 : v, "123456789abcdefABCDEF") != NULL;
}

/* Up to 4 identities of whole disk NAME. */
static int identities(const char *name, struct ident *id)
{
	int n = 0;
	char file[4096];
	struct stat st;
	if (*block_attr(name, "loop/backing_file", file, sizeof(file)) && stat(file, &st) == 0) {
		snprintf(id[n].what, sizeof(id[n].what), "backing file");
		snprintf(id[n].value, sizeof(id[n].value), "%.299s", file);
		id[n].fdev = st.st_dev;
		id[n].fino = st.st_ino;
		n++;
	}
	static const char *const attrs[][2] = {
		{"wwid", "device/wwid"}, {"wwid", "wwid"}, {"nguid", "nguid"}, {"eui", "eui"},
	};
	for (size_t a = 0; a < sizeof(attrs) / sizeof(attrs[0]) && n < 4; a++) {
		char v[300];
		if (!meaningful(block_attr(name, attrs[a][1], v, sizeof(v))))
			continue;
		snprintf(id[n].what, sizeof(id[n].what), "%s", attrs[a][0]);
		snprintf(id[n].value, sizeof(id[n].value), "%s", v);
		id[n].fdev = 0;
		id[n].fino = 0;
		n++;
	}
	return n;
}

static int same_ident(const struct ident *a, const struct ident *b)
{
	if (strcmp(a->what, b->what) != 0)
		return 0;
	if (strcmp(a->what, "backing file") == 0)
		return a->fdev == b->fdev && a->fino == b->fino;
	return strcmp(a->value, b->value) == 0;
}

/* Calls FN for every whole block device other than SKIP. */
static void each_disk(const char *skip, void (*fn)(const char *, void *), void *arg)
{
	char path[512];
	snprintf(path, sizeof(path), "%.300s/class/block", sysfs());
	DIR *dp = opendir(path);
	struct dirent *e;
	for (int count = 0; dp && count < MAX_DEVICES && (e = readdir(dp));)
		if (good_name(e->d_name) && strcmp(e->d_name, skip) != 0 && !exists(e->d_name, "partition")) {
			fn(e->d_name, arg);
			count++;
		}
	if (dp)
		closedir(dp);
}

struct twin_search {
	const char *given;      /* as the user named it */
	const char *part_no;    /* the partition number named, or NULL for the whole disk */
	struct ident id[4];
	int nid;
	struct inuse *u;
};

/* The partition of disk NAME with number NO, into OUT; 0 when none. */
static int partition_numbered(const char *name, const char *no, char *out)
{
	char parts[MAX_PARTS][NAME_MAX_LEN], v[16];
	int n = family(name, parts, MAX_PARTS);
	for (int i = 1; i < n; i++)
		if (strcmp(block_attr(parts[i], "partition", v, sizeof(v)), no) == 0) {
			snprintf(out, NAME_MAX_LEN, "%s", parts[i]);
			return 1;
		}
	return 0;
}

static void twin_check(const char *other, void *arg)
{
	struct twin_search *s = arg;
	struct ident id[4];
	int n = identities(other, id);
	for (int i = 0; i < s->nid; i++)
		for (int j = 0; j < n; j++) {
			if (!same_ident(&s->id[i], &id[j]))
				continue;
			char target[NAME_MAX_LEN], prefix[INUSE_LINE];
			snprintf(target, sizeof(target), "%s", other);
			if (s->part_no && !partition_numbered(other, s->part_no, target))
				return;
			if (strcmp(id[j].what, "backing file") == 0)
				snprintf(prefix, sizeof(prefix), "%.72s is the same storage as /dev/%.63s (both loop devices over %.200s): ",
					 s->given, target, id[j].value);
			else
				snprintf(prefix, sizeof(prefix), "%.72s is the same storage as /dev/%.63s (the same %.23s %.200s): ",
					 s->given, target, id[j].what, id[j].value);
			uses(target, prefix, s->u);
			return;
		}
}

int inuse_name(const char *name, struct inuse *u)
{
	char given[NAME_MAX_LEN + 8], disk[NAME_MAX_LEN], no[16];
	u->n = 0;
	if (!good_name(name) || !exists(name, "dev")) {
		snprintf(u->line[0], INUSE_LINE, "%s is not a block device this host's sysfs knows", name);
		return -1;
	}
	snprintf(given, sizeof(given), "/dev/%s", name);
	uses(name, "", u);
	/* The other names of the same storage: of the whole disk, mapped back
	 * to the partition with the same number when a partition was named. */
	struct twin_search s = {.given = given, .u = u};
	disk_of(name, disk);
	if (strcmp(disk, name) != 0)
		s.part_no = block_attr(name, "partition", no, sizeof(no));
	s.nid = identities(disk, s.id);
	if (s.nid)
		each_disk(disk, twin_check, &s);
	return u->n;
}

struct file_search {
	const char *path;
	struct stat st;
	struct inuse *u;
};

static void loop_over_file(const char *name, void *arg)
{
	struct file_search *s = arg;
	char file[4096], prefix[INUSE_LINE];
	struct stat st;
	if (!*block_attr(name, "loop/backing_file", file, sizeof(file)) || stat(file, &st) < 0 ||
	    st.st_dev != s->st.st_dev || st.st_ino != s->st.st_ino)
		return;
	/* Attached is in use: whoever set the loop device up writes through it. */
	snprintf(prefix, sizeof(prefix), "%.200s is attached to the loop device /dev/%.63s: ", s->path, name);
	int before = s->u->n;
	uses(name, prefix, s->u);
	if (s->u->n == before)
		add(s->u, "%.200s is attached to the loop device /dev/%.63s (losetup -d /dev/%.63s detaches it)",
		    s->path, name, name);
}

int inuse_path(const char *path, struct inuse *u)
{
	struct stat st;
	char name[NAME_MAX_LEN];
	u->n = 0;
	if (stat(path, &st) < 0) {
		snprintf(u->line[0], INUSE_LINE, "%.200s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISREG(st.st_mode)) {
		struct file_search s = {.path = path, .st = st, .u = u};
		each_disk("", loop_over_file, &s);
		return u->n;
	}
	if (!S_ISBLK(st.st_mode)) {
		snprintf(u->line[0], INUSE_LINE, "%.200s is neither a block device nor an image file", path);
		return -1;
	}
	if (!*name_of_rdev(st.st_rdev, name)) {
		snprintf(u->line[0], INUSE_LINE, "%.200s: sysfs has no block device %u:%u", path, major(st.st_rdev),
			 minor(st.st_rdev));
		return -1;
	}
	int n = inuse_name(name, u);
	/* The findings name the device as the user did. */
	char kernel[NAME_MAX_LEN + 8];
	size_t k = (size_t)snprintf(kernel, sizeof(kernel), "/dev/%s", name);
	for (int i = 0; n > 0 && i < u->n && strcmp(kernel, path) != 0; i++)
		if (strncmp(u->line[i], kernel, k) == 0 && u->line[i][k] == ' ') {
			char rest[INUSE_LINE];
			snprintf(rest, sizeof(rest), "%s", u->line[i] + k);
			snprintf(u->line[i], INUSE_LINE, "%.200s (%.70s)%.230s", path, kernel, rest);
		}
	return n;
}
