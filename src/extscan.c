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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "extsb.h"

#define READ_TIMEOUT 5	/* seconds per device */

/* The primary superblock (block 1 of 1 KiB), then where the first backup
 * sits with 1, 2 and 4 KiB blocks: group 1 starts at block 8193, 16384, 32768. */
static const struct { unsigned long long block; unsigned int log_block_size; } copies[] = {
	{1, 0}, {8193, 0}, {16384, 1}, {32768, 2},
};
#define NCOPIES 4
#define COPY_OFFSET(c) (copies[c].block << (10 + copies[c].log_block_size))

static int verbose, json, list_only;
static struct extsb_support kernel;

struct result {
	char dev[512];
	unsigned long long bytes;
	int ok;			/* superblock parsed */
	int not_ext;		/* readable, but not ext2/3/4: left out */
	unsigned long long backup;	/* block of the backup used when the primary is damaged */
	char error[96];		/* why it could not be read */
	struct extsb sb;
};

/* Reads the size and the superblock area of PATH in a child, so a hung
 * device only costs READ_TIMEOUT seconds. Returns the superblock bytes read
 * into BUF (the size into *BYTES), or -1 with ERR set. */
static ssize_t read_super(const char *path, uint8_t *buf, unsigned long long *bytes,
			  char *err, size_t errsize)
{
	uint8_t msg[8 + NCOPIES * EXTSB_SIZE];

	int pfd[2], status;
	pid_t pid;
	ssize_t got = 0, n;
	time_t deadline = time(NULL) + READ_TIMEOUT;

	if (pipe(pfd) < 0)
		return snprintf(err, errsize, "pipe: %s", strerror(errno)), -1;
	pid = fork();
	if (pid < 0)
		return snprintf(err, errsize, "fork: %s", strerror(errno)), -1;
	if (pid == 0) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		unsigned long long size = 0;
		struct stat st;
		ssize_t r;

		close(pfd[0]);
		if (fd < 0)
			_exit(10 + (errno & 0x7f) % 100);
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			size = (unsigned long long) st.st_size;
		else if (ioctl(fd, BLKGETSIZE64, &size) != 0)
			size = 0;
		memcpy(msg, &size, 8);
		r = pread(fd, msg + 8, EXTSB_SIZE, (off_t) COPY_OFFSET(0));
		if (r < 0)
			_exit(110 + (errno & 0x7f) % 100);
		/* Backups only matter when the primary is whole but not valid. */
		if (r == EXTSB_SIZE)
			for (int c = 1; c < NCOPIES; c++)
				if (COPY_OFFSET(c) + EXTSB_SIZE > size ||
				    pread(fd, msg + 8 + c * EXTSB_SIZE, EXTSB_SIZE, (off_t) COPY_OFFSET(c)) != EXTSB_SIZE)
					memset(msg + 8 + c * EXTSB_SIZE, 0, EXTSB_SIZE);
		if (r == EXTSB_SIZE)
			r = NCOPIES * EXTSB_SIZE;
		if (write(pfd[1], msg, (size_t) r + 8) != r + 8)
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		n = read(pfd[0], msg + got, sizeof(msg) - (size_t) got);
		if (n > 0) {
			got += n;
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
			return snprintf(err, errsize, "no answer within %d s", READ_TIMEOUT), -1;
		}
		usleep(10000);
	}
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return snprintf(err, errsize, "reader died"), -1;
	if (WEXITSTATUS(status) >= 110)
		return snprintf(err, errsize, "read error: %s", strerror(WEXITSTATUS(status) - 110)), -1;
	if (WEXITSTATUS(status) >= 10)
		return snprintf(err, errsize, "cannot open: %s", strerror(WEXITSTATUS(status) - 10)), -1;
	if (got < 8)
		return snprintf(err, errsize, "reader failed"), -1;
	memcpy(bytes, msg, 8);
	memcpy(buf, msg + 8, (size_t) got - 8);
	return got - 8;
}

static unsigned long long sysfs_bytes(const char *name)
{
	char path[300];
	unsigned long long sectors = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/block/%s/size", name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &sectors) != 1)
		sectors = 0;
	fclose(f);
	return sectors * 512;
}

static void scan(const char *path, struct result *r)
{
	uint8_t buf[NCOPIES * EXTSB_SIZE];
	const char *why;
	ssize_t got;

	memset(r, 0, sizeof(*r));
	snprintf(r->dev, sizeof(r->dev), "%s", path);
	got = read_super(path, buf, &r->bytes, r->error, sizeof(r->error));
	if (got < 0)
		return;
	if (got < EXTSB_SIZE) {
		/* Too small to hold a superblock at all: not a filesystem. */
		r->not_ext = 1;
		return;
	}
	if (extsb_parse(buf, EXTSB_SIZE, &r->sb, &why) == 0) {
		r->ok = 1;
		return;
	}
	/* A damaged primary: a valid backup still identifies the volume. */
	for (int c = 1; c < NCOPIES && got == NCOPIES * EXTSB_SIZE; c++) {
		const char *bwhy;

		/* A copy counts only if its block size puts it where it was found. */
		if (extsb_parse(buf + c * EXTSB_SIZE, EXTSB_SIZE, &r->sb, &bwhy) == 0 &&
		    r->sb.log_block_size == copies[c].log_block_size) {
			r->ok = 1;
			r->backup = copies[c].block;
			return;
		}
	}
	if (strcmp(why, "no ext2/3/4 magic") == 0)
		r->not_ext = 1;
	else
		snprintf(r->error, sizeof(r->error), "damaged superblock: %s, and no valid backup", why);
}

/* /dev/NAME, or for device-mapper the /dev/mapper/ name LVM and cryptsetup
 * gave it (what an fstab or crypttab names). */
static char *dm_path(const char *name)
{
	char path[300], dm[200] = "";
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/block/%s/dm/name", name);
	if (!strncmp(name, "dm-", 3) && (f = fopen(path, "r"))) {
		if (fgets(dm, sizeof(dm), f))
			dm[strcspn(dm, "\n")] = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/dev/mapper/%s", dm);
		if (dm[0] && stat(path, &st) == 0 && S_ISBLK(st.st_mode))
			return strdup(path);
	}
	snprintf(path, sizeof(path), "/dev/%s", name);
	return strdup(path);
}

/* Block devices worth a look: all of /sys/class/block but empty ones and RAM disks. */
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
		if (sysfs_bytes(e->d_name) < 2 * EXTSB_SIZE)
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

	kernel = extsb_kernel;
	if (stat("/sys/fs/ext4/features", &st) != 0)
		return;	/* not running on our kernel (e.g. on a build host): keep the table */
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
		strftime(out, size, "%Y-%m-%d %H:%M", &tm);
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
	snprintf(out, size, "%.1f%c", v, unit[i]);
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

static void print_json(struct result *r, int n)
{
	int first = 1;

	printf("[");
	for (int i = 0; i < n; i++) {
		char buf[1024], blk[96], uuid[40];
		enum extsb_access a;

		if (r[i].not_ext)
			continue;
		printf("%s\n  {\"device\": ", first ? "" : ",");
		first = 0;
		jstr(r[i].dev);
		printf(", \"size_bytes\": %llu", r[i].bytes);
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
		a = extsb_access(&r[i].sb, &extsb_e2fsck, blk, sizeof(blk));
		printf(", \"e2fsck\": \"%s\", \"e2fsck_blocker\": ", a == EXTSB_NONE ? "no" : "yes");
		jstr(blk);
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

static void print_table(struct result *r, int n)
{
	int shown = 0, w = 16;

	/* /dev/mapper/luks-<uuid> is long; the column grows to fit. */
	for (int i = 0; i < n; i++)
		if (!r[i].not_ext && (int)strlen(r[i].dev) > w)
			w = strlen(r[i].dev);

	printf("%-*s %7s %-12s %-16s %-36s %-24s %-6s %-7s %-30s %-7s %s\n", w, "DEVICE", "SIZE",
	       "KIND", "LABEL", "UUID", "STATE", "MOUNT", "E2FSCK", "LAST MOUNTED", "MOUNTS",
	       "CHECKED");
	for (int i = 0; i < n; i++) {
		char size[16], state[256], kb[96], fb[96], uuid[40], mt[20], ck[20], lm[100], mounts[24];
		enum extsb_access ka, fa;

		if (r[i].not_ext)
			continue;
		shown++;
		size_text(r[i].bytes, size, sizeof(size));
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
		if (ka != EXTSB_RW)
			printf("%-*s   mount: %s: %s\n", w, "", ka == EXTSB_RO ? "read-only only" : "cannot mount", kb);
		if (fa == EXTSB_NONE)
			printf("%-*s   e2fsck: cannot check: %s\n", w, "", fb);
		if (verbose) {
			char feats[1024];

			extsb_features(&r[i].sb, feats, sizeof(feats));
			printf("%-*s   features: %s\n", w, "", feats);
		}
	}
	if (!shown)
		printf("(no ext2/ext3/ext4 filesystems found)\n");
}

int main(int argc, char **argv)
{
	char **devs = NULL;
	int n = 0, i;
	struct result *r;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			verbose = 1;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--devices")) {
			list_only = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: extscan [-v] [--json | --devices] [DEVICE...]\n"
			       "Lists ext2/3/4 filesystems on all block devices (or the ones named),\n"
			       "their state, and whether this kernel can mount and e2fsck can check them.\n"
			       "--devices prints only the device of each volume (no external journals),\n"
			       "followed by the backup superblock and block size when the primary is damaged.\n");
			return 0;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "extscan: unknown option '%s'; see extscan --help\n", argv[i]);
			return 2;
		} else {
			break;
		}
	}
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
		if (i < argc && r[k].not_ext) {
			r[k].not_ext = 0;
			snprintf(r[k].error, sizeof(r[k].error), "no ext2/3/4 filesystem");
		}
	}
	if (list_only) {
		for (int k = 0; k < n; k++) {
			if (!r[k].ok || !strcmp(extsb_kind(&r[k].sb), "journal"))
				continue;
			/* A damaged primary: e2fsck needs -b BLOCK -B SIZE to start. */
			if (r[k].backup)
				printf("%s %llu %u\n", r[k].dev, r[k].backup, 1024U << r[k].sb.log_block_size);
			else
				printf("%s\n", r[k].dev);
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
