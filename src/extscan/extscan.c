/*
 * extscan: finds every ext2/3/4 filesystem on every block device and says in
 * one table what it is, what state it is in, and whether this kernel can
 * mount it and this e2fsck can check it. It only ever reads (O_RDONLY, one
 * superblock per device), each read in a child process with a time limit, so
 * a dying disk cannot hang it.
 *
 * usage: extscan [-v] [--json | --devices] [DEVICE...]
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

#include "../lib/extsb.h"
#include "../lib/layout.h"
#include "../lib/text.h"

#define READ_TIMEOUT 5	/* seconds per device */

/* The primary superblock (block 1 of 1 KiB), then where the first backup
 * sits with 1, 2 and 4 KiB blocks: group 1 starts at block 8193, 16384, 32768. */
static const struct { unsigned long long block; unsigned int log_block_size; } copies[] = {
	{1, 0}, {8193, 0}, {16384, 1}, {32768, 2},
};
#define NCOPIES 4
#define COPY_OFFSET(c) (copies[c].block << (10 + copies[c].log_block_size))

static int verbose, wide, json, list_only, member_only, journal_only;
static struct extsb_support kernel;

struct result {
	char dev[512];
	unsigned long long bytes;
	int ok;			/* superblock parsed */
	int not_ext;		/* readable, but not ext2/3/4: left out */
	unsigned long long backup;	/* block of the backup used when the primary is damaged */
	int primary_magic;	/* the primary superblock has the ext magic, valid or not */
	int named;		/* named on the command line: always a row */
	char error[96];		/* why it could not be read */
	struct layout member;	/* what the device belongs to: assemble that first */
	struct extsb sb;
	char mounted_rw[200];	/* where it is mounted read-write (an undo or scratch disk) */
	char twin[512];		/* another device with the same filesystem UUID (a clone) */
	char journal[512];	/* its external journal's device, or the volume whose journal it is */
	int journal_missing;	/* its external journal is on no device here (1) or on several (2) */
};

/* Everything one device is read for: its size, the superblock copies, its
 * first and last bytes (RAID, LVM, LUKS, bcache, partition tables) and the
 * LVM metadata text named there. */
struct raw {
	unsigned long long size;
	ssize_t sb_got;
	uint8_t sb[NCOPIES * EXTSB_SIZE];
	uint8_t head[LAYOUT_HEAD], tail[LAYOUT_TAIL], lvm_text[LAYOUT_LVM_TEXT];
	size_t head_len, tail_len, lvm_text_len;
	uint64_t tail_off;
};

static ssize_t read_at(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t) (off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return got ? (ssize_t) got : -1;
		if (n == 0)
			break;
		got += (size_t) n;
	}
	return (ssize_t) got;
}

static void read_raw(int fd, struct raw *w)
{
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		w->size = (unsigned long long) st.st_size;
	else if (ioctl(fd, BLKGETSIZE64, &w->size) != 0)
		w->size = 0;
	w->sb_got = read_at(fd, w->sb, EXTSB_SIZE, COPY_OFFSET(0));
	/* Backups only matter when the primary is whole but not valid. */
	if (w->sb_got == EXTSB_SIZE) {
		for (int c = 1; c < NCOPIES; c++)
			if (COPY_OFFSET(c) + EXTSB_SIZE > w->size ||
			    read_at(fd, w->sb + c * EXTSB_SIZE, EXTSB_SIZE, COPY_OFFSET(c)) != EXTSB_SIZE)
				memset(w->sb + c * EXTSB_SIZE, 0, EXTSB_SIZE);
		w->sb_got = NCOPIES * EXTSB_SIZE;
	}
	n = read_at(fd, w->head, w->size < LAYOUT_HEAD ? w->size : LAYOUT_HEAD, 0);
	w->head_len = n > 0 ? (size_t) n : 0;
	if (w->size > LAYOUT_HEAD) {
		w->tail_off = w->size > LAYOUT_TAIL ? w->size - LAYOUT_TAIL : 0;
		n = read_at(fd, w->tail, (size_t) (w->size - w->tail_off), w->tail_off);
		w->tail_len = n > 0 ? (size_t) n : 0;
	}
	uint64_t text = layout_lvm_text_offset(w->head, w->head_len, w->size);
	if (text) {
		n = read_at(fd, w->lvm_text, LAYOUT_LVM_TEXT, text);
		w->lvm_text_len = n > 0 ? (size_t) n : 0;
	}
}

static int blank(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Judges what RAW holds: the ext superblock (or a backup, where one may
 * stand in) and what the device belongs to. */
static void judge(const struct raw *w, struct result *r)
{
	struct layout_input in = {
		.head = w->head, .head_len = w->head_len, .tail = w->tail, .tail_len = w->tail_len,
		.tail_off = w->tail_off, .size = w->size, .lvm_text = w->lvm_text_len ? w->lvm_text : NULL,
		.lvm_text_len = w->lvm_text_len,
	};
	const char *why;

	r->bytes = w->size;
	layout_probe(&in, &r->member);
	if (w->sb_got < EXTSB_SIZE) {
		/* Too small to hold a superblock at all: not a filesystem. */
		r->not_ext = 1;
		return;
	}
	r->primary_magic = w->sb[0x38] == 0x53 && w->sb[0x39] == 0xef;
	if (extsb_parse(w->sb, EXTSB_SIZE, &r->sb, &why) == 0) {
		r->ok = 1;
		return;
	}
	/* A damaged primary: a valid backup still identifies the volume, but
	 * only where nothing else claims the device (a partition table, or
	 * XFS, btrfs or swap made over an old ext4, leave its backups behind)
	 * and the primary's place holds the ext magic or nothing at all. */
	for (int c = 1; c < NCOPIES && w->sb_got == NCOPIES * EXTSB_SIZE && r->member.kind == LAYOUT_NONE; c++) {
		const char *bwhy, *other;

		/* A copy counts only if its block size puts it where it was found. */
		if (extsb_parse(w->sb + c * EXTSB_SIZE, EXTSB_SIZE, &r->sb, &bwhy) != 0 ||
		    r->sb.log_block_size != copies[c].log_block_size)
			continue;
		/* The ext magic in place: the boot block before it is ext's too
		 * (a boot loader may have written there). */
		other = layout_foreign(&in, r->primary_magic ? 2048 : 0);
		if (other || !(r->primary_magic || blank(w->sb, EXTSB_SIZE))) {
			r->member.kind = LAYOUT_FOREIGN;
			if (other)
				snprintf(r->member.what, sizeof(r->member.what),
					 "another filesystem (%s) over old ext traces (a backup superblock at block %llu)",
					 other, copies[c].block);
			else
				snprintf(r->member.what, sizeof(r->member.what),
					 "unknown data over old ext traces (a backup superblock at block %llu; "
					 "if it is still ext: e2fsck -b %llu -B %u)", copies[c].block, copies[c].block,
					 1024U << copies[c].log_block_size);
			memset(&r->sb, 0, sizeof(r->sb));
			return;
		}
		r->ok = 1;
		r->backup = copies[c].block;
		return;
	}
	if (!r->primary_magic)
		r->not_ext = 1;
	else
		snprintf(r->error, sizeof(r->error), "damaged superblock: %s, and no valid backup", why);
}

/* Reads and judges PATH in a child, so a hung device only costs
 * READ_TIMEOUT seconds; the child sends back the finished result. */
static void scan(const char *path, struct result *r)
{
	int pfd[2], status;
	pid_t pid;
	size_t got = 0;
	ssize_t n;
	time_t deadline = time(NULL) + READ_TIMEOUT;

	memset(r, 0, sizeof(*r));
	snprintf(r->dev, sizeof(r->dev), "%s", path);
	if (pipe(pfd) < 0) {
		snprintf(r->error, sizeof(r->error), "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(r->error, sizeof(r->error), "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (pid == 0) {
		static struct raw w;
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		close(pfd[0]);
		if (fd < 0)
			snprintf(r->error, sizeof(r->error), "cannot open: %s", strerror(errno));
		else {
			read_raw(fd, &w);
			if (w.sb_got < 0 && w.head_len == 0)
				snprintf(r->error, sizeof(r->error), "read error: %s", strerror(errno));
			else
				judge(&w, r);
		}
		_exit(write(pfd[1], r, sizeof(*r)) == (ssize_t) sizeof(*r) ? 0 : 2);
	}
	close(pfd[1]);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		n = read(pfd[0], (char *) r + got, sizeof(*r) - got);
		if (n > 0) {
			got += (size_t) n;
			continue;
		}
		if (n == 0)
			break;
		if (errno != EAGAIN && errno != EINTR)
			break;
		if (time(NULL) >= deadline) {
			kill(pid, SIGKILL);
			close(pfd[0]);
			waitpid(pid, NULL, WNOHANG);
			snprintf(r->error, sizeof(r->error), "no answer within %d s", READ_TIMEOUT);
			return;
		}
		usleep(10000);
	}
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || got != sizeof(*r)) {
		memset(r, 0, sizeof(*r));
		snprintf(r->dev, sizeof(r->dev), "%s", path);
		snprintf(r->error, sizeof(r->error), "reader died");
	}
}

/* One line of a sysfs attribute of block device NAME (empty when absent). */
static void sysfs_attr(const char *name, const char *attr, char *out, size_t size)
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
static int list_devices(char ***out)
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
static void kernel_name(const char *path, char *out, size_t size)
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
static int parent_disk(const char *name, char *out, size_t size)
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
static void system_layout(const char *name, struct layout *l)
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
static void disk_identity(const char *name, char *out, size_t size)
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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The running kernel's ext4 says which optional features it was built with. */
static void probe_kernel(void)
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

static void when(int64_t t, char *out, size_t size)
{
	time_t tt = (time_t) t;
	struct tm tm;

	if (t <= 0 || !gmtime_r(&tt, &tm))
		snprintf(out, size, "never");
	else
		strftime(out, size, "%Y-%m-%d %H:%M UTC", &tm);
}

static void uuid_text(const uint8_t *u, char *out)
{
	sprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		u[13], u[14], u[15]);
}

static void size_text(unsigned long long b, char *out, size_t size)
{
	const char *unit = "KMGTP";
	double v = (double) b / 1024;
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, size, v >= 100 ? "%.0f%c" : "%.1f%c", v, unit[i]);
}

/* The state, led by a damaged primary superblock when a backup stood in. */
static void damaged_state(const struct result *r, char *out, size_t size)
{
	char st[128];

	extsb_state(&r->sb, st, sizeof(st));
	if (r->backup)
		snprintf(out, size, "primary superblock damaged (backup at block %llu), %s", r->backup, st);
	else
		snprintf(out, size, "%s", st);
}

/* A volume whose UUID another one has too. */
static const char *twin_text(const struct result *r)
{
	static char text[700];

	snprintf(text, sizeof(text), "same UUID as %s (a copy?): name it by /dev/disk/by-path/... or kernel name, "
		 "not by UUID", r->twin);
	return text;
}

/* Where a volume's external journal is, or whose journal a device is. */
static const char *journal_text(const struct result *r)
{
	static char text[700];
	char uuid[40];

	if (!strcmp(extsb_kind(&r->sb), "journal"))
		snprintf(text, sizeof(text), "the external journal of %s (protected and replayed with it)", r->journal);
	else if (r->journal[0])
		snprintf(text, sizeof(text), "external journal: %s", r->journal);
	else {
		uuid_text(r->sb.journal_uuid, uuid);
		snprintf(text, sizeof(text), "external journal %s: %s (mount only with noload)", uuid,
			 r->journal_missing == 2 ? "on more than one device (a disk and its copy?)" : "on no device here");
	}
	return text;
}

/* What the kernel cannot do with a volume, and what is left to the user. */
static void mount_detail(const struct extsb *sb, enum extsb_access ka, const char *kb, enum extsb_access fa,
			 char *out, size_t size)
{
	const char *check = fa == EXTSB_NONE ? "" : "; e2fsck can still check and repair it";

	if (ka == EXTSB_RO)
		snprintf(out, size, "mount: read-only only: %s", kb);
	else if (extsb_needs_newer(sb, &kernel))
		snprintf(out, size, "mount: this medium cannot mount it (needs a newer kernel): %s%s", kb, check);
	else
		snprintf(out, size, "mount: cannot mount: %s%s", kb, check);
}

static const char *access_word(enum extsb_access a)
{
	return a == EXTSB_RW ? "rw" : a == EXTSB_RO ? "ro" : "no";
}

/* JSON string: our strings are printable ASCII already; escape " and \. */
static void jstr(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
	putchar('"');
}

/* A row of the table: an ext volume, a device that could not be read, or a
 * member of something else (a partitioned disk only when an ext superblock
 * shows through its partition table, which is the trap). */
static int shown(const struct result *r)
{
	if (r->member.kind == LAYOUT_PTABLE && !r->named)
		return r->ok || r->primary_magic;
	return r->member.kind != LAYOUT_NONE || !r->not_ext;
}

static void print_json(struct result *r, int n)
{
	int first = 1;

	printf("[");
	for (int i = 0; i < n; i++) {
		char buf[1024], blk[96], uuid[40];
		enum extsb_access a;

		if (!shown(&r[i]))
			continue;
		printf("%s\n  {\"device\": ", first ? "" : ",");
		first = 0;
		jstr(r[i].dev);
		printf(", \"size_bytes\": %llu", r[i].bytes);
		if (r[i].member.kind != LAYOUT_NONE) {
			printf(", \"kind\": \"member\", \"member\": \"%s\", \"member_of\": ",
			       layout_kind_name(r[i].member.kind));
			jstr(r[i].member.what);
			printf(", \"verdict\": \"%s\", \"ext_superblock\": %s}", layout_verdict(r[i].member.kind),
			       r[i].ok || r[i].primary_magic ? "true" : "false");
			continue;
		}
		if (!r[i].ok) {
			printf(", \"error\": ");
			jstr(r[i].error);
			printf("}");
			continue;
		}
		uuid_text(r[i].sb.uuid, uuid);
		printf(", \"label\": ");
		jstr(r[i].sb.label);
		printf(", \"uuid\": \"%s\", \"kind\": \"%s\", \"state\": ", uuid, extsb_kind(&r[i].sb));
		damaged_state(&r[i], buf, sizeof(buf));
		jstr(buf);
		printf(", \"backup_superblock\": %llu", r[i].backup);
		a = extsb_access(&r[i].sb, &kernel, blk, sizeof(blk));
		printf(", \"kernel_mount\": \"%s\", \"kernel_blocker\": ", access_word(a));
		jstr(blk);
		printf(", \"kernel_needs_newer\": %s", extsb_needs_newer(&r[i].sb, &kernel) ? "true" : "false");
		a = extsb_access(&r[i].sb, &extsb_e2fsck, blk, sizeof(blk));
		printf(", \"e2fsck\": \"%s\", \"e2fsck_blocker\": ", a == EXTSB_NONE ? "no" : "yes");
		jstr(blk);
		printf(", \"same_uuid_as\": ");
		jstr(r[i].twin);
		printf(", \"mounted_rw\": ");
		jstr(r[i].mounted_rw);
		printf(", \"journal_device\": ");
		jstr(r[i].journal);
		printf(", \"last_mounted_on\": ");
		jstr(r[i].sb.last_mounted);
		printf(", \"last_mount_time\": %lld, \"mount_count\": %u, \"max_mount_count\": %d"
		       ", \"last_check_time\": %lld, \"features\": ",
		       (long long) r[i].sb.mtime, r[i].sb.mnt_count, r[i].sb.max_mnt_count,
		       (long long) r[i].sb.lastcheck);
		extsb_features(&r[i].sb, buf, sizeof(buf));
		jstr(buf);
		printf("}");
	}
	printf("\n]\n");
}

/* The wide table: every column on one line (--wide, or a terminal at least
 * WIDE_COLUMNS wide). */
#define WIDE_COLUMNS 180

static void print_wide(struct result *r, int n)
{
	int rows = 0, w = 16;

	/* /dev/mapper/luks-<uuid> is long; the column grows to fit. */
	for (int i = 0; i < n; i++)
		if (shown(&r[i]) && (int)strlen(r[i].dev) > w)
			w = strlen(r[i].dev);

	printf("%-*s %7s %-12s %-16s %-36s %-24s %-6s %-7s %-30s %-7s %s\n", w, "DEVICE", "SIZE",
	       "KIND", "LABEL", "UUID", "STATE", "MOUNT", "E2FSCK", "LAST MOUNTED", "MOUNTS",
	       "CHECKED");
	for (int i = 0; i < n; i++) {
		char size[16], state[256], kb[96], fb[96], uuid[40], mt[24], ck[24], lm[100], mounts[24];
		char line[256];
		enum extsb_access ka, fa;

		if (!shown(&r[i]))
			continue;
		rows++;
		size_text(r[i].bytes, size, sizeof(size));
		if (r[i].member.kind != LAYOUT_NONE) {
			printf("%-*s %7s %-12s %s: %s\n", w, r[i].dev, size, layout_kind_name(r[i].member.kind),
			       r[i].member.what, layout_verdict(r[i].member.kind));
			continue;
		}
		if (!r[i].ok) {
			printf("%-*s %7s could not read: %s\n", w, r[i].dev, size, r[i].error);
			continue;
		}
		damaged_state(&r[i], state, sizeof(state));
		ka = extsb_access(&r[i].sb, &kernel, kb, sizeof(kb));
		fa = extsb_access(&r[i].sb, &extsb_e2fsck, fb, sizeof(fb));
		uuid_text(r[i].sb.uuid, uuid);
		when(r[i].sb.mtime, mt, sizeof(mt));
		when(r[i].sb.lastcheck, ck, sizeof(ck));
		snprintf(lm, sizeof(lm), "%s %s", r[i].sb.last_mounted[0] ? r[i].sb.last_mounted : "-", mt);
		if (r[i].sb.max_mnt_count > 0)
			snprintf(mounts, sizeof(mounts), "%u/%d", r[i].sb.mnt_count, r[i].sb.max_mnt_count);
		else
			snprintf(mounts, sizeof(mounts), "%u", r[i].sb.mnt_count);
		printf("%-*s %7s %-12s %-16s %-36s %-24s %-6s %-7s %-30s %-7s %s\n", w, r[i].dev, size,
		       extsb_kind(&r[i].sb), r[i].sb.label[0] ? r[i].sb.label : "-", uuid, state,
		       access_word(ka), fa == EXTSB_NONE ? "no" : "yes", lm, mounts, ck);
		if (ka != EXTSB_RW) {
			mount_detail(&r[i].sb, ka, kb, fa, line, sizeof(line));
			printf("%-*s   %s\n", w, "", line);
		}
		if (fa == EXTSB_NONE)
			printf("%-*s   e2fsck: cannot check: %s\n", w, "", fb);
		if (r[i].twin[0])
			printf("%-*s   %s\n", w, "", twin_text(&r[i]));
		if (r[i].journal[0] || r[i].journal_missing)
			printf("%-*s   %s\n", w, "", journal_text(&r[i]));
		if (verbose) {
			char feats[1024];

			extsb_features(&r[i].sb, feats, sizeof(feats));
			printf("%-*s   features: %s\n", w, "", feats);
		}
	}
	if (!rows)
		printf("(no ext2/ext3/ext4 filesystems found)\n");
}

/* TEXT from column COL of a line WIDTH wide, broken at spaces, continued
 * at column INDENT. */
static void wrap(const char *text, int col, int indent, int width)
{
	while (*text) {
		int room = width - col, len = (int) strlen(text), cut = len;

		if (len > room) {
			for (cut = room; cut > 0 && text[cut] != ' '; cut--)
				;
			if (cut <= 0)
				cut = room > 0 ? room : len;
		}
		printf("%.*s\n", cut, text);
		text += cut;
		while (*text == ' ')
			text++;
		if (*text)
			printf("%*s", indent, "");
		col = indent;
	}
}

/* A line of details under a volume, indented and wrapped. */
static void detail(int width, const char *fmt, ...)
{
	char line[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("    ");
	wrap(line, 4, 6, width);
}

/* The table for a terminal (80 columns when its width is unknown): one line
 * per volume with the columns that matter, details below it. */
static void print_narrow(struct result *r, int n, int width)
{
	/* DEVICE SIZE KIND LABEL STATE MOUNT FSCK: 15+1+6+1+12+1+16+1+15+1+5+1+4 = 79 */
	const char *row = "%-15s %6s %-12s %-16s %-15s %-5s %s\n";
	int rows = 0;

	printf(row, "DEVICE", "SIZE", "KIND", "LABEL", "STATE", "MOUNT", "FSCK");
	for (int i = 0; i < n; i++) {
		char size[16], state[256], shortstate[20], kb[96], fb[96], uuid[40], mt[24], ck[24];
		char line[256];
		const char *dev = r[i].dev;
		enum extsb_access ka, fa;

		if (!shown(&r[i]))
			continue;
		rows++;
		size_text(r[i].bytes, size, sizeof(size));
		/* A long name (/dev/mapper/...) gets a line of its own. */
		if (strlen(dev) > 15) {
			printf("%s\n", dev);
			dev = "";
		}
		if (r[i].member.kind != LAYOUT_NONE || !r[i].ok) {
			char what[400];

			if (r[i].member.kind != LAYOUT_NONE)
				snprintf(what, sizeof(what), "%s: %s", r[i].member.what, layout_verdict(r[i].member.kind));
			else
				snprintf(what, sizeof(what), "could not read: %s", r[i].error);
			printf("%-15s %6s %-12s ", dev, size,
			       r[i].member.kind != LAYOUT_NONE ? layout_kind_name(r[i].member.kind) : "?");
			wrap(what, 36, 36, width);
			continue;
		}
		damaged_state(&r[i], state, sizeof(state));
		if (strlen(state) > 15)
			snprintf(shortstate, sizeof(shortstate), "%.14s+", state);
		else
			snprintf(shortstate, sizeof(shortstate), "%.15s", state);
		ka = extsb_access(&r[i].sb, &kernel, kb, sizeof(kb));
		fa = extsb_access(&r[i].sb, &extsb_e2fsck, fb, sizeof(fb));
		printf(row, dev, size, extsb_kind(&r[i].sb), r[i].sb.label[0] ? r[i].sb.label : "-", shortstate,
		       access_word(ka), fa == EXTSB_NONE ? "no" : "yes");
		if (strlen(state) > 15)
			detail(width, "state: %s", state);
		if (ka != EXTSB_RW) {
			mount_detail(&r[i].sb, ka, kb, fa, line, sizeof(line));
			detail(width, "%s", line);
		}
		if (fa == EXTSB_NONE)
			detail(width, "e2fsck: cannot check: %s", fb);
		if (r[i].twin[0])
			detail(width, "%s", twin_text(&r[i]));
		if (r[i].journal[0] || r[i].journal_missing)
			detail(width, "%s", journal_text(&r[i]));
		if (verbose) {
			char feats[1024];

			uuid_text(r[i].sb.uuid, uuid);
			when(r[i].sb.mtime, mt, sizeof(mt));
			when(r[i].sb.lastcheck, ck, sizeof(ck));
			detail(width, "UUID %s", uuid);
			detail(width, "last mounted on %s: %s, mounted %u times%s, last checked: %s",
			       r[i].sb.last_mounted[0] ? r[i].sb.last_mounted : "-", mt, r[i].sb.mnt_count,
			       r[i].sb.max_mnt_count > 0 ? " (check forced after the limit)" : "", ck);
			extsb_features(&r[i].sb, feats, sizeof(feats));
			detail(width, "features: %s", feats);
		}
	}
	if (!rows)
		printf("(no ext2/ext3/ext4 filesystems found)\n");
}

static void print_table(struct result *r, int n)
{
	struct winsize ws;
	int width = 80;

	if (isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		width = ws.ws_col;
	if (wide || width >= WIDE_COLUMNS)
		print_wide(r, n);
	else
		print_narrow(r, n, width);
}

/* A partition belongs to what its whole disk belongs to: the legs of a
 * partitioned whole-disk RAID1 (md 0.90 or 1.0, IMSM, DDF) each show the
 * array's partition table, and their partitions its filesystems. DISK is
 * the partition's disk; its result is R[j] when it was scanned, else it is
 * read now. */
static void inherit_disk_verdict(struct result *part, const char *name, struct result *r, int n,
				 char (*names)[256])
{
	char number[16], disk[256], path[300];
	struct result *d = NULL, own;

	sysfs_attr(name, "partition", number, sizeof(number));
	if (!number[0] || !parent_disk(name, disk, sizeof(disk)))
		return;
	for (int j = 0; j < n && !d; j++)
		if (!strcmp(names[j], disk))
			d = &r[j];
	if (!d) {
		snprintf(path, sizeof(path), "/dev/%.200s", disk);
		scan(path, &own);
		system_layout(disk, &own.member);
		d = &own;
	}
	/* Only metadata at the end of the disk puts the array's data, partition
	 * table included, at the leg's start; a stale label in the gap before
	 * the first partition says nothing about the partitions. */
	if (!d->member.at_end && d->member.kind != LAYOUT_HELD && d->member.kind != LAYOUT_MULTIPATH)
		return;
	part->member.kind = d->member.kind;
	snprintf(part->member.what, sizeof(part->member.what), "partition %.8s of %.32s: %.140s", number, disk,
		 d->member.what);
}

/* Mount points of devices mounted read-write (the undo and scratch disks an
 * unattended run mounts): checking a mounted filesystem reports errors that
 * are not there. /proc/mounts escapes space, tab, newline and backslash. */
static void mounted_rw(struct result *r, int n)
{
	FILE *f = fopen("/proc/mounts", "r");
	char line[4096];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char dev[1024], where[1024], type[64], opts[1024], *o, *w;
		struct stat a, b;

		if (sscanf(line, "%1023s %1023s %63s %1023s", dev, where, type, opts) != 4 ||
		    strncmp(opts, "rw", 2) || (opts[2] && opts[2] != ',') || stat(dev, &a) != 0 || !S_ISBLK(a.st_mode))
			continue;
		for (o = w = where; *o; w++) {
			if (o[0] == '\\' && o[1] >= '0' && o[1] <= '3' && o[2] >= '0' && o[2] <= '7' && o[3] >= '0' && o[3] <= '7') {
				*w = (char) ((o[1] - '0') << 6 | (o[2] - '0') << 3 | (o[3] - '0'));
				o += 4;
			} else {
				*w = *o++;
			}
		}
		*w = 0;
		for (int k = 0; k < n; k++)
			if (!r[k].mounted_rw[0] && stat(r[k].dev, &b) == 0 && S_ISBLK(b.st_mode) && a.st_rdev == b.st_rdev)
				text_shown(r[k].mounted_rw, sizeof(r[k].mounted_rw), where, strlen(where), 0);
	}
	fclose(f);
}

static const uint8_t no_uuid[16];

/* A volume and its external journal are one filesystem: a replay writes to
 * both, so whatever protects the one must protect the other. */
static void link_journals(struct result *r, int n)
{
	for (int k = 0; k < n; k++) {
		if (!r[k].ok || !memcmp(r[k].sb.journal_uuid, no_uuid, 16))
			continue;
		int found = -1, copies = 0;

		for (int j = 0; j < n; j++)
			if (r[j].ok && r[j].member.kind == LAYOUT_NONE && !strcmp(extsb_kind(&r[j].sb), "journal") &&
			    !memcmp(r[j].sb.uuid, r[k].sb.journal_uuid, 16)) {
				found = j;
				copies++;
			}
		/* The journal's disk and a copy of it: replaying the wrong one
		 * would write another disk's transactions into the volume. */
		if (copies != 1) {
			r[k].journal_missing = copies ? 2 : 1;
			continue;
		}
		snprintf(r[k].journal, sizeof(r[k].journal), "%s", r[found].dev);
		snprintf(r[found].journal, sizeof(r[found].journal), "%s", r[k].dev);
	}
}

/* What sysfs adds to the bytes: partitions and holders, and second paths to
 * one disk (same WWID or serial, same size, same contents). */
static void system_context(struct result *r, int n)
{
	char (*id)[200] = calloc((size_t) (n ? n : 1), sizeof(*id));
	char (*names)[256] = calloc((size_t) (n ? n : 1), sizeof(*names));

	if (!id || !names) {
		free(id);
		free(names);
		return;
	}
	for (int k = 0; k < n; k++)
		kernel_name(r[k].dev, names[k], sizeof(names[k]));
	for (int k = 0; k < n; k++) {
		const char *name = names[k];

		if (!name[0])
			continue;
		system_layout(name, &r[k].member);
		disk_identity(name, id[k], sizeof(id[k]));
		for (int j = 0; j < k && id[k][0]; j++) {
			if (strcmp(id[j], id[k]) || r[j].bytes != r[k].bytes || r[j].ok != r[k].ok ||
			    (r[k].ok && memcmp(r[j].sb.uuid, r[k].sb.uuid, 16)) ||
			    strcmp(r[j].member.what, r[k].member.what))
				continue;
			r[k].member.kind = LAYOUT_MULTIPATH;
			snprintf(r[k].member.what, sizeof(r[k].member.what), "second path to %.120s (same WWID/serial)",
				 r[j].dev);
			break;
		}
	}
	/* After every disk has its own verdict: partitions take their disk's. */
	for (int k = 0; k < n; k++)
		if (names[k][0] && r[k].member.kind == LAYOUT_NONE)
			inherit_disk_verdict(&r[k], names[k], r, n, names);
	/* Two volumes with one UUID: a failing disk and its copy. Each is
	 * still itself, but a name by UUID cannot tell them apart. */
	for (int k = 0; k < n; k++)
		for (int j = 0; j < n && r[k].ok && r[k].member.kind == LAYOUT_NONE && !r[k].twin[0]; j++)
			if (j != k && r[j].ok && r[j].member.kind == LAYOUT_NONE && !memcmp(r[j].sb.uuid, r[k].sb.uuid, 16))
				snprintf(r[k].twin, sizeof(r[k].twin), "%s", r[j].dev);
	link_journals(r, n);
	mounted_rw(r, n);
	free(id);
	free(names);
}

/* --journal DEV: every device is read, as the journal may be on any. */
static int find_journal(const char *want, int nargs)
{
	struct stat ws, ds;
	struct result *r;
	char **devs = NULL;
	int n, status = 1;

	if (!want || nargs != 1 || stat(want, &ws) != 0 || !S_ISBLK(ws.st_mode)) {
		fprintf(stderr, "extscan: --journal takes one block device\n");
		return 2;
	}
	n = list_devices(&devs);
	r = calloc((size_t) (n ? n : 1), sizeof(*r));
	if (!r) {
		fprintf(stderr, "extscan: out of memory\n");
		return 2;
	}
	for (int k = 0; k < n; k++)
		scan(devs[k], &r[k]);
	system_context(r, n);
	for (int k = 0; k < n; k++) {
		if (stat(r[k].dev, &ds) != 0 || ds.st_rdev != ws.st_rdev || strcmp(extsb_kind(&r[k].sb), "journal") == 0)
			continue;
		if (r[k].journal[0]) {
			printf("%s\n", r[k].journal);
			status = 0;
		} else if (r[k].journal_missing) {
			fprintf(stderr, "extscan: %s: %s\n", want, journal_text(&r[k]));
			status = 2;
		}
	}
	for (int k = 0; k < n; k++)
		free(devs[k]);
	free(devs);
	free(r);
	return status;
}

int main(int argc, char **argv)
{
	char **devs = NULL;
	int n = 0, i;
	struct result *r;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			verbose = 1;
		} else if (!strcmp(argv[i], "--wide")) {
			wide = 1;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--devices")) {
			list_only = 1;
		} else if (!strcmp(argv[i], "--member")) {
			member_only = 1;
		} else if (!strcmp(argv[i], "--journal")) {
			journal_only = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: extscan [-v] [--wide | --json | --devices | --member] [DEVICE...]\n"
			       "Lists ext2/3/4 filesystems on all block devices (or the ones named),\n"
			       "their state, and whether this kernel can mount and e2fsck can check them.\n"
			       "The table fits the terminal (80 columns when unknown); -v adds UUID,\n"
			       "times (UTC) and features; --wide puts every column on one line.\n"
			       "Members of md arrays, LVM, LUKS and bcache, partitioned disks and second\n"
			       "paths are shown as such: assemble or use what they belong to instead.\n"
			       "--devices prints one tab-separated line per device: DEVICE fs [BACKUP\n"
			       "BLOCKSIZE] for a volume to check (the backup superblock when the primary\n"
			       "is damaged), DEVICE skip REASON for one that must not be checked alone.\n"
			       "--member prints what each named device belongs to and exits 0 when\n"
			       "any belongs to something, 1 when none does.\n"
			       "--journal DEVICE prints the device of DEVICE's external journal (exit 0),\n"
			       "exits 1 when it has none, 2 when no device or more than one holds it.\n");
			return 0;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "extscan: unknown option '%s'; see extscan --help\n", argv[i]);
			return 2;
		} else {
			break;
		}
	}
	if (journal_only)
		return find_journal(i < argc ? argv[i] : NULL, argc - i);
	if (i < argc) {
		devs = argv + i;
		n = argc - i;
	} else {
		n = list_devices(&devs);
		qsort(devs, (size_t) n, sizeof(*devs), cmp_str);
	}
	probe_kernel();
	r = calloc((size_t) (n ? n : 1), sizeof(*r));
	if (!r) {
		fprintf(stderr, "extscan: out of memory\n");
		return 1;
	}
	for (int k = 0; k < n; k++) {
		scan(devs[k], &r[k]);
		/* A device named on the command line is always reported. */
		r[k].named = i < argc;
		if (i < argc && r[k].not_ext) {
			r[k].not_ext = 0;
			snprintf(r[k].error, sizeof(r[k].error), "no ext2/3/4 filesystem");
		}
	}
	system_context(r, n);
	if (member_only) {
		int any = 0;

		/* Another filesystem over old ext traces is not ext, but it
		 * belongs to nothing: it may be mounted as what it is. */
		for (int k = 0; k < n; k++)
			if (r[k].member.kind != LAYOUT_NONE && r[k].member.kind != LAYOUT_FOREIGN) {
				printf("%s: %s: %s\n", r[k].dev, r[k].member.what, layout_verdict(r[k].member.kind));
				any = 1;
			}
		free(r);
		return any ? 0 : 1;
	}
	if (list_only) {
		for (int k = 0; k < n; k++) {
			if (!shown(&r[k]))
				continue;
			if (r[k].member.kind != LAYOUT_NONE)
				printf("%s\tskip\t%s: %s\n", r[k].dev, r[k].member.what, layout_verdict(r[k].member.kind));
			else if (!r[k].ok)
				printf("%s\tskip\tcould not read: %s\n", r[k].dev, r[k].error);
			else if (!strcmp(extsb_kind(&r[k].sb), "journal"))
				continue;
			else if (r[k].mounted_rw[0])
				printf("%s\tskip\tmounted read-write at %s: not checked while in use\n", r[k].dev,
				       r[k].mounted_rw);
			/* A damaged primary: e2fsck needs -b BLOCK -B SIZE to start. */
			else if (r[k].backup)
				printf("%s\tfs\t%llu\t%u\n", r[k].dev, r[k].backup, 1024U << r[k].sb.log_block_size);
			else
				printf("%s\tfs\n", r[k].dev);
		}
	} else if (json) {
		print_json(r, n);
	} else {
		print_table(r, n);
	}
	free(r);
	if (i >= argc) {
		for (int k = 0; k < n; k++)
			free(devs[k]);
		free(devs);
	}
	return 0;
}
