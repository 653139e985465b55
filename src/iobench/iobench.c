/*
 * iobench: measures a disk the way the ext3/ext4 benchmarks behind extents,
 * mballoc and delalloc did. It makes each filesystem configuration on the
 * device itself, runs the reference workloads on it, and prints one table of
 * MB/s and ratios beside the reference ratios. It destroys the data on the
 * device, so it asks for the device's name twice and refuses one in use or
 * holding data.
 *
 * usage: iobench --matrix DEV --yes-destroy=DEV [options]   (see usage())
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iobench-dev.h"
#include "iobench-read.h"
#include "iobench-report.h"
#include "iobench-work.h"

#define MiB (1024ull * 1024)

static const struct config configs[] = {
	{"raw", "raw device", NULL, NULL, NULL, NULL, 0, 0},
	/* The reference's raw figure went through the page cache, as dd does;
	 * O_DIRECT shows what the device itself can do. */
	{"raw-direct", "raw device, O_DIRECT", NULL, NULL, NULL, NULL, 0, 1},
	{"ext2", "ext2", "ext2", NULL, "ext2", "", 0, 0},
	{"ext3-writeback", "ext3 writeback", "ext3", NULL, "ext3", "data=writeback", 0, 0},
	{"ext3-ordered", "ext3 ordered", "ext3", NULL, "ext3", "data=ordered", 0, 0},
	{"ext3-journal", "ext3 journal", "ext3", NULL, "ext3", "data=journal", 0, 0},
	{"ext3-writeback-extj", "ext3 writeback, ext. journal", "ext3", NULL, "ext3", "data=writeback", 1, 0},
	{"ext3-ordered-extj", "ext3 ordered, ext. journal", "ext3", NULL, "ext3", "data=ordered", 1, 0},
	{"ext3-journal-extj", "ext3 journal, ext. journal", "ext3", NULL, "ext3", "data=journal", 1, 0},
	/* ext3's on-disk layout plus extents, served by ext4 with mballoc and
	 * delalloc: what the reference called patched ext3. */
	{"ext3-extents", "ext3+extents", "ext3", "extents", "ext4", "data=ordered", 0, 0},
	{"ext4", "ext4", "ext4", NULL, "ext4", "", 0, 0},
	{"ext4-nodelalloc", "ext4 nodelalloc", "ext4", NULL, "ext4", "nodelalloc", 0, 0},
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

static struct options opt = {
	.seq_size = 2048 * MiB,
	.block = 512 * 1024,
	.chunks = 1024,
	.chunk_size = MiB,
	.read_size = 622 * MiB,
	.procs = 16,
	.per_proc = 64 * MiB,
};

/* What is mounted now, so Ctrl-C and errors can undo it. */
static char mountpoint[64];
static int mounted;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: iobench --matrix DEV --yes-destroy=DEV [options]\n"
		"       iobench --read DEV [--seconds=N] [--max=SIZE] [--json]\n"
		"--read: sequential 1M and random 4K O_DIRECT reads, each at most N seconds (default 3)\n"
		"and SIZE bytes (default 256M); MB/s, IOPS, latency percentiles; writes nothing.\n"
		"Makes each filesystem configuration on DEV, runs the reference workloads and prints\n"
		"MB/s with ratios to the raw device. DESTROYS ALL DATA ON DEV.\n"
		"  --journal-dev=JDEV      also run ext3 with its journal on JDEV (needs --yes-destroy=JDEV)\n"
		"  --yes-destroy=DEV       confirm, naming the device again (once per device)\n"
		"  --force                 run even if a device holds a filesystem or partition table\n"
		"  --configs=LIST          of: raw raw-direct ext2 ext3-writeback ext3-ordered ext3-journal\n"
		"                          ext3-writeback-extj ext3-ordered-extj ext3-journal-extj\n"
		"                          ext3-extents ext4 ext4-nodelalloc (default: all that apply)\n"
		"  --workloads=LIST        of: seq-write chunks read parallel (default: all)\n"
		"  --sync=LIST             chunk variants of: none fsync fdatasync O_SYNC mount-sync\n"
		"  --seq-size=SIZE         sequential write size (default 2G), in --block=SIZE writes (512K)\n"
		"  --chunks=N --chunk-size=SIZE   synchronous chunks (default 1024 x 1M)\n"
		"  --read-size=SIZE        large-file read with md5 (default 622M)\n"
		"  --procs=N --proc-size=SIZE     parallel clients and bytes each writes (16 x 64M)\n"
		"  --json                  print JSON instead of the table\n"
		"SIZE takes K, M, G suffixes (powers of 1024). MB/s is 10^6 bytes per second.\n");
}

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "iobench: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "; see iobench --help\n");
	exit(2);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (errno || end == s || *end || *s == '-' || v == 0 || v > (1ull << 50) >> shift)
		die_usage("bad size '%s' (a positive number with an optional K, M or G)", s);
	return v << shift;
}

static unsigned parse_count(const char *s, unsigned max)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v == 0 || v > max)
		die_usage("bad count '%s'", s);
	return v;
}

/* Sets bits in MASK for each name of LIST found in NAMES. */
static unsigned parse_list(const char *list, const char *const *names, unsigned n, const char *what)
{
	unsigned mask = 0;
	char *copy = strdup(list), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned i = 0;
		while (i < n && strcasecmp(t, names[i]) != 0)
			i++;
		if (i == n) {
			fprintf(stderr, "iobench: unknown %s '%s'; see iobench --help\n", what, t);
			exit(2);
		}
		mask |= 1u << i;
	}
	free(copy);
	if (!mask)
		die_usage("empty %s list", what);
	return mask;
}

static void on_signal(int sig)
{
	(void)sig;
	work_stop = 1;
}

static void unmount_now(void)
{
	if (mounted && umount2(mountpoint, 0) < 0 && umount2(mountpoint, MNT_DETACH) < 0)
		fprintf(stderr, "iobench: cannot unmount %s: %s; unmount it by hand\n", mountpoint, strerror(errno));
	mounted = 0;
}

static void cleanup(void)
{
	unmount_now();
	if (mountpoint[0])
		rmdir(mountpoint);
}

static void stop_interrupted(void)
{
	int was = mounted;
	cleanup();
	fprintf(stderr, "iobench: interrupted; %s; %s holds a partial test filesystem\n",
		was ? "unmounted the test filesystem" : "nothing was mounted", opt.dev);
	exit(130);
}

static void fail(const char *config, const char *step, const char *why)
{
	if (work_stop)
		stop_interrupted();
	cleanup();
	fprintf(stderr, "iobench: %s: %s failed: %s\n", config, step, why);
	exit(1);
}

/* Runs ARGV quietly; on failure returns -1 with its last line of output in why. */
static int run(char *const argv[], char *why, size_t len)
{
	int out[2];
	if (pipe(out) < 0)
		return snprintf(why, len, "pipe: %s", strerror(errno)), -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(out[1], 2);
		close(out[0]);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	char buf[4096], last[512] = "";
	size_t have = 0;
	ssize_t n;
	while ((n = read(out[0], buf + have, sizeof(buf) - 1 - have)) > 0 || (n < 0 && errno == EINTR)) {
		if (n < 0)
			continue;
		have += n;
		buf[have] = 0;
		char *nl;
		while ((nl = strchr(buf, '\n'))) {
			*nl = 0;
			if (buf[0])
				snprintf(last, sizeof(last), "%.500s", buf);
			memmove(buf, nl + 1, strlen(nl + 1) + 1);
			have = strlen(buf);
		}
		if (have == sizeof(buf) - 1)
			have = 0;
	}
	close(out[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, len, "%s: %s", argv[0], last[0] ? last : "failed");
		return -1;
	}
	return 0;
}

static void make_fs(const struct config *c)
{
	char why[600];
	/* Inode tables and journal written now, not by a kernel thread in the
	 * middle of a measurement. */
	char *mk[16] = {"mke2fs", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", "-t",
			(char *)c->mkfs_type};
	int n = 9;
	char journal[PATH_MAX + 16];
	if (c->features) {
		mk[n++] = "-O";
		mk[n++] = (char *)c->features;
	}
	if (c->ext_journal) {
		char *jmk[] = {"mke2fs", "-q", "-F", "-b", "4096", "-O", "journal_dev", (char *)opt.journal_dev, NULL};
		if (run(jmk, why, sizeof(why)) < 0)
			fail(c->name, "making the journal device", why);
		snprintf(journal, sizeof(journal), "device=%s", opt.journal_dev);
		mk[n++] = "-J";
		mk[n++] = journal;
	}
	mk[n++] = (char *)opt.dev;
	mk[n] = NULL;
	if (run(mk, why, sizeof(why)) < 0)
		fail(c->name, "mke2fs", why);
}

static void mount_fs(const struct config *c, int sync)
{
	if (mount(opt.dev, mountpoint, c->fstype, sync ? MS_SYNCHRONOUS : 0, c->mount_opts) < 0) {
		char why[300];
		snprintf(why, sizeof(why), "mount -t %s -o %s%s %s: %s", c->fstype, sync ? "sync," : "",
			 c->mount_opts[0] ? c->mount_opts : "defaults", opt.dev, strerror(errno));
		fail(c->name, "mount", why);
	}
	mounted = 1;
}

static void progress(const struct config *c, unsigned idx, unsigned total, const char *what)
{
	fprintf(stderr, "iobench: [%u/%u] %s: %s\n", idx, total, c->label, what);
}

static void record(const struct config *c, enum workload w, int sync, int rc, const struct work_result *r)
{
	if (rc == -2 || work_stop)
		stop_interrupted();
	if (rc < 0)
		fail(c->name, workload_name[w], work_error);
	report_add(c, w, sync, r);
}

static void run_config(const struct config *c, unsigned idx, unsigned total)
{
	struct work_result r;
	int raw = c->mkfs_type == NULL ? (c->direct ? TARGET_RAW_DIRECT : TARGET_RAW) : TARGET_FILE;
	char file[128];
	const char *target = raw ? opt.dev : mountpoint;

	if (!raw) {
		progress(c, idx, total, "mke2fs");
		make_fs(c);
		mount_fs(c, 0);
	}
	snprintf(file, sizeof(file), "%s/iobench.dat", mountpoint);
	if (opt.workloads & 1u << W_SEQ) {
		progress(c, idx, total, "sequential write");
		record(c, W_SEQ, -1, work_seq_write(raw ? opt.dev : file, raw, opt.seq_size, opt.block, &r), &r);
	}
	for (int s = 0; s < SYNC_MODES && (opt.workloads & 1u << W_CHUNKS) && !c->direct; s++) {
		if (!(opt.sync_modes & 1u << s) || (raw && s == SYNC_MOUNT))
			continue;
		char what[64];
		snprintf(what, sizeof(what), "chunks, sync %s", sync_mode_name[s]);
		progress(c, idx, total, what);
		if (s == SYNC_MOUNT) {
			unmount_now();
			mount_fs(c, 1);
		}
		record(c, W_CHUNKS, s, work_chunks(target, raw, s, opt.chunks, opt.chunk_size, &r), &r);
		if (s == SYNC_MOUNT) {
			unmount_now();
			mount_fs(c, 0);
		}
	}
	if (opt.workloads & 1u << W_READ) {
		progress(c, idx, total, "large-file read with md5");
		record(c, W_READ, -1, work_read_md5(raw ? opt.dev : file, raw, opt.read_size, &r), &r);
		if (!r.md5_ok)
			fail(c->name, "read", "the md5 of the data read back differs from what was written");
	}
	if (!raw && (opt.workloads & 1u << W_PARALLEL)) {
		progress(c, idx, total, "parallel clients");
		record(c, W_PARALLEL, -1, work_parallel(mountpoint, opt.procs, opt.per_proc, &r), &r);
	}
	if (!raw)
		unmount_now();
}

/* Refuses a device unless named twice, unused, and blank (or --force). */
static void check_device(const char *path, struct blockdev *d, char *const confirmed[], int nconfirmed)
{
	char why[512];
	if (dev_identify(path, d, why, sizeof(why)) < 0) {
		fprintf(stderr, "iobench: %s\n", why);
		exit(2);
	}
	int ok = 0;
	for (int i = 0; i < nconfirmed; i++)
		ok |= dev_same(confirmed[i], path);
	if (!ok) {
		fprintf(stderr, "iobench: this destroys all data on %s; to go ahead, add --yes-destroy=%s\n", path, path);
		exit(2);
	}
	if (dev_check_unused(d, why, sizeof(why)) < 0) {
		fprintf(stderr, "iobench: refusing: %s\n", why);
		exit(2);
	}
	if (!opt.force && dev_check_blank(d, why, sizeof(why)) < 0) {
		fprintf(stderr, "iobench: refusing: %s; add --force to destroy it anyway\n", why);
		exit(2);
	}
}

/* Filesystem overhead: inode tables, bitmaps and the journal take a few
 * percent; 16 MiB covers the fixed part on small devices. */
static void check_sizes(const struct blockdev *d, const struct blockdev *j)
{
	uint64_t largest = 0;
	const char *which = "";
	if ((opt.workloads & 1u << W_SEQ) && opt.seq_size > largest)
		largest = opt.seq_size, which = "--seq-size";
	if ((opt.workloads & 1u << W_CHUNKS) && (uint64_t)opt.chunks * opt.chunk_size > largest)
		largest = (uint64_t)opt.chunks * opt.chunk_size, which = "--chunks x --chunk-size";
	if ((opt.workloads & 1u << W_READ) && opt.read_size > largest)
		largest = opt.read_size, which = "--read-size";
	if ((opt.workloads & 1u << W_PARALLEL) && 8 * MiB * opt.procs > largest)
		largest = 8 * MiB * opt.procs, which = "--procs";
	uint64_t room = d->size / 100 * 93;
	room = room > 16 * MiB ? room - 16 * MiB : 0;
	if (largest > room) {
		fprintf(stderr, "iobench: %s (%llu MiB) is too small: %s needs %llu MiB and a filesystem there holds "
			"about %llu MiB; choose smaller sizes or a bigger device\n", d->path,
			(unsigned long long)(d->size / MiB), which, (unsigned long long)((largest + MiB - 1) / MiB),
			(unsigned long long)(room / MiB));
		exit(2);
	}
	if (j && j->size < 4 * MiB) {
		fprintf(stderr, "iobench: journal device %s is %llu KiB; a journal needs at least 4 MiB\n", j->path,
			(unsigned long long)(j->size / 1024));
		exit(2);
	}
}

int main(int argc, char **argv)
{
	char *confirmed[8];
	int nconfirmed = 0;
	const char *config_list = NULL, *workload_list = NULL, *sync_list = NULL;
	const char *read_dev = NULL;
	unsigned read_seconds = 3;
	uint64_t read_max = 256 * MiB;

	for (int i = 1; i < argc; i++) {
		char *a = argv[i], *v = strchr(a, '=');
		if (strncmp(a, "--", 2) != 0) {
			die_usage("unexpected argument '%s'", a);
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			opt.json = 1;
		} else if (!strcmp(a, "--force")) {
			opt.force = 1;
		} else if (!strcmp(a, "--read")) {
			if (i + 1 >= argc)
				die_usage("%s needs a device", a);
			read_dev = argv[++i];
		} else if (!strcmp(a, "--matrix")) {
			if (i + 1 >= argc)
				die_usage("%s needs a device", a);
			opt.dev = argv[++i];
		} else if (!v) {
			die_usage("unknown option '%s'", a);
		} else {
			*v++ = 0;
			if (!*v)
				die_usage("%s needs a value", a);
			if (!strcmp(a, "--yes-destroy")) {
				if (nconfirmed == 8)
					die_usage("too many %s", a);
				confirmed[nconfirmed++] = v;
			} else if (!strcmp(a, "--matrix")) opt.dev = v;
			else if (!strcmp(a, "--journal-dev")) opt.journal_dev = v;
			else if (!strcmp(a, "--seconds")) read_seconds = parse_count(v, 3600);
			else if (!strcmp(a, "--max")) read_max = parse_size(v);
			else if (!strcmp(a, "--configs")) config_list = v;
			else if (!strcmp(a, "--workloads")) workload_list = v;
			else if (!strcmp(a, "--sync")) sync_list = v;
			else if (!strcmp(a, "--seq-size")) opt.seq_size = parse_size(v);
			else if (!strcmp(a, "--block")) opt.block = parse_size(v);
			else if (!strcmp(a, "--chunks")) opt.chunks = parse_count(v, 1u << 20);
			else if (!strcmp(a, "--chunk-size")) opt.chunk_size = parse_size(v);
			else if (!strcmp(a, "--read-size")) opt.read_size = parse_size(v);
			else if (!strcmp(a, "--procs")) opt.procs = parse_count(v, 1024);
			else if (!strcmp(a, "--proc-size")) opt.per_proc = parse_size(v);
			else die_usage("unknown option '%s'", a);
		}
	}
	if (read_dev) {
		if (opt.dev)
			die_usage("%s", "--read and --matrix are two different runs");
		if (strpbrk(read_dev, "\"\\") || strlen(read_dev) > 255)
			die_usage("bad device name '%s'", read_dev);
		return read_probe(read_dev, read_seconds, read_max, opt.json);
	}
	if (!opt.dev)
		die_usage("%s", "no device: give --matrix DEV or --read DEV");
	if (opt.block > 64 * MiB || opt.chunk_size > 1024 * MiB)
		die_usage("%s", "--block is at most 64M and --chunk-size at most 1G");
	if ((opt.seq_size | opt.read_size | opt.block) % 4096)
		die_usage("%s", "--seq-size, --read-size and --block must be multiples of 4K (O_DIRECT needs it)");

	const char *cnames[NCONFIGS];
	for (unsigned i = 0; i < NCONFIGS; i++)
		cnames[i] = configs[i].name;
	unsigned want = config_list ? parse_list(config_list, cnames, NCONFIGS, "configuration") : ~0u;
	opt.workloads = workload_list ? parse_list(workload_list, workload_name, WORKLOADS, "workload") : ~0u;
	opt.sync_modes = sync_list ? parse_list(sync_list, sync_mode_name, SYNC_MODES, "sync variant") : ~0u;
	if (!opt.journal_dev) {
		for (unsigned i = 0; i < NCONFIGS; i++)
			if (configs[i].ext_journal && config_list && (want & 1u << i))
				die_usage("%s needs --journal-dev", configs[i].name);
	} else if (dev_same(opt.journal_dev, opt.dev)) {
		die_usage("%s", "the journal device must differ from the device under test");
	}

	struct blockdev d, j;
	check_device(opt.dev, &d, confirmed, nconfirmed);
	if (opt.journal_dev)
		check_device(opt.journal_dev, &j, confirmed, nconfirmed);
	check_sizes(&d, opt.journal_dev ? &j : NULL);
	opt.dev_size = d.size;
	opt.journal_size = opt.journal_dev ? j.size : 0;

	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	const char *tmp = getenv("TMPDIR");
	snprintf(mountpoint, sizeof(mountpoint), "%s/iobench.XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(mountpoint)) {
		fprintf(stderr, "iobench: cannot make a mount point %s: %s\n", mountpoint, strerror(errno));
		return 1;
	}

	unsigned total = 0, idx = 0;
	for (unsigned i = 0; i < NCONFIGS; i++)
		if ((want & 1u << i) && (!configs[i].ext_journal || opt.journal_dev))
			total++;
	report_begin(&opt);
	for (unsigned i = 0; i < NCONFIGS; i++)
		if ((want & 1u << i) && (!configs[i].ext_journal || opt.journal_dev))
			run_config(&configs[i], ++idx, total);
	rmdir(mountpoint);
	mountpoint[0] = 0;
	report_print(stdout);
	return 0;
}
