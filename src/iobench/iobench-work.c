/* Workloads for iobench. Data is pseudo-random (never zeros, which some
 * storage compresses or skips) and every 512 KiB carries its own offset, so
 * the read-back checksum would notice a misplaced block. */
#define _GNU_SOURCE	/* syncfs, ppoll */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "iobench-work.h"
#include "../lib/md5.h"

const char *const sync_mode_name[SYNC_MODES] = {"none", "fsync", "fdatasync", "O_SYNC", "mount-sync"};
volatile sig_atomic_t work_stop;
char work_error[512];

#define BUF_SIZE (1u << 20)
#define STAMP 8

static unsigned char *pattern(void)
{
	static unsigned char *buf;
	if (!buf) {
		buf = aligned_alloc(4096, BUF_SIZE);
		if (!buf)
			abort();
		uint64_t x = 0x9e3779b97f4a7c15ull;
		for (size_t i = 0; i < BUF_SIZE; i += 8) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			memcpy(buf + i, &x, 8);
		}
	}
	return buf;
}

static void stamp(unsigned char *buf, uint64_t off)
{
	memcpy(buf, &off, STAMP);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(work_error, sizeof(work_error), fmt, ap);
	va_end(ap);
	if (work_stop || saved == EINTR)
		return -2;
	size_t n = strlen(work_error);
	snprintf(work_error + n, sizeof(work_error) - n, ": %s", strerror(saved));
	return -1;
}

/* DIR/PREFIXnnnnnn; -1 if it does not fit (the checked return also tells the
 * compiler the truncation case is handled). */
static int name_in(char *out, size_t len, const char *dir, const char *prefix, uint32_t n)
{
	int w = snprintf(out, len, "%s/%s%06u", dir, prefix, n);
	if (w < 0 || (size_t)w >= len)
		return errno = ENAMETOOLONG, -1;
	return 0;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		if (work_stop)
			return errno = EINTR, -1;
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR && !work_stop)
				continue;
			return -1;
		}
		p += w;
		n -= w;
	}
	return 0;
}

static int open_target(const char *path, int raw, int extra)
{
	if (raw)
		return open(path, O_WRONLY | O_CLOEXEC | extra);
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | extra, 0644);
}

/* Writes SIZE bytes of the pattern; feeds them to MD5 if given. */
static int fill(int fd, uint64_t size, uint32_t bs, struct md5 *m)
{
	unsigned char *buf = pattern();
	for (uint64_t off = 0; off < size; off += bs) {
		uint32_t n = size - off < bs ? size - off : bs;
		unsigned char *p = buf + (off % BUF_SIZE);
		if (off % BUF_SIZE + n > BUF_SIZE)
			p = buf;
		stamp(p, off);
		if (m)
			md5_update(m, p, n);
		if (write_all(fd, p, n) < 0)
			return -1;
	}
	return 0;
}

int work_seq_write(const char *path, int raw, uint64_t size, uint32_t bs, struct work_result *r)
{
	memset(r, 0, sizeof(*r));
	pattern();
	double t0 = now();
	int fd = open_target(path, raw, raw == TARGET_RAW_DIRECT ? O_DIRECT : 0);
	if (fd < 0)
		return fail("open %s", path);
	if (fill(fd, size, bs, NULL) < 0 || fsync(fd) < 0) {
		int rc = fail("write %s", path);
		close(fd);
		return rc;
	}
	if (close(fd) < 0)
		return fail("close %s", path);
	r->seconds = now() - t0;
	r->bytes = size;
	if (!raw && unlink(path) < 0)
		return fail("unlink %s", path);
	return 0;
}

static int sync_fd(int fd, enum sync_mode mode)
{
	if (mode == SYNC_FSYNC)
		return fsync(fd);
	if (mode == SYNC_FDATASYNC)
		return fdatasync(fd);
	return 0;
}

/* Syncs the filesystem holding PATH (or the device itself). */
static int sync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = syncfs(fd);
	close(fd);
	return rc;
}

int work_chunks(const char *path, int raw, enum sync_mode mode, uint32_t count, uint32_t size,
		struct work_result *r)
{
	char name[4096];
	memset(r, 0, sizeof(*r));
	pattern();
	int extra = mode == SYNC_OSYNC ? O_SYNC : 0;
	double t0 = now();
	for (uint32_t i = 0; i < count; i++) {
		int fd;
		if (raw) {
			fd = open_target(path, 1, extra);
			if (fd >= 0 && lseek(fd, (off_t)i * size, SEEK_SET) < 0)
				return close(fd), fail("seek %s", path);
		} else {
			fd = name_in(name, sizeof(name), path, "chunk-", i) < 0 ? -1 : open_target(name, 0, extra);
		}
		if (fd < 0)
			return fail("open %s", raw ? path : name);
		if (fill(fd, size, size < BUF_SIZE ? size : BUF_SIZE, NULL) < 0 || sync_fd(fd, mode) < 0) {
			int rc = fail("write %s", raw ? path : name);
			close(fd);
			return rc;
		}
		if (close(fd) < 0)
			return fail("close %s", raw ? path : name);
	}
	/* Without per-file syncs the data would still be in memory: one sync at
	 * the end makes the figure the disk's, not the page cache's. */
	if ((mode == SYNC_NONE || mode == SYNC_MOUNT) && sync_path(path) < 0)
		return fail("sync %s", path);
	r->seconds = now() - t0;
	r->bytes = (uint64_t)count * size;
	for (uint32_t i = 0; !raw && i < count; i++) {
		if (name_in(name, sizeof(name), path, "chunk-", i) < 0 || unlink(name) < 0)
			return fail("unlink %s", name);
	}
	return 0;
}

/* Empties the page cache of PATH so the read comes from the disk. */
static int drop_caches(int fd, int raw)
{
	if (fsync(fd) < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
		return -1;
	if (raw)
		ioctl(fd, BLKFLSBUF, 0);
	sync();
	int p = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (p >= 0) {
		if (write(p, "3", 1) < 0) {
			/* Not root: fadvise above is the best we can do. */
		}
		close(p);
	}
	return 0;
}

int work_read_md5(const char *path, int raw, uint64_t size, struct work_result *r)
{
	struct md5 want, got;
	unsigned char dw[16], dg[16];
	char hw[33];
	memset(r, 0, sizeof(*r));
	md5_init(&want);
	int fd = open_target(path, raw, 0);
	if (fd < 0)
		return fail("open %s", path);
	if (fill(fd, size, 512 * 1024, &want) < 0 || drop_caches(fd, raw) < 0) {
		int rc = fail("write %s", path);
		close(fd);
		return rc;
	}
	close(fd);
	md5_final(&want, dw);

	unsigned char *buf = aligned_alloc(4096, BUF_SIZE);
	if (!buf)
		return fail("memory");
	md5_init(&got);
	double t0 = now();
	fd = open(path, O_RDONLY | O_CLOEXEC | (raw == TARGET_RAW_DIRECT ? O_DIRECT : 0));
	if (fd < 0)
		return free(buf), fail("open %s", path);
	for (uint64_t off = 0; off < size;) {
		size_t want_n = size - off < BUF_SIZE ? size - off : BUF_SIZE;
		ssize_t n = work_stop ? (errno = EINTR, -1) : read(fd, buf, want_n);
		if (n <= 0) {
			int rc = n == 0 ? (errno = EIO, fail("read %s: short file at %llu", path, (unsigned long long)off))
					: fail("read %s", path);
			close(fd);
			free(buf);
			return rc;
		}
		md5_update(&got, buf, n);
		off += n;
	}
	close(fd);
	md5_final(&got, dg);
	r->seconds = now() - t0;
	r->bytes = size;
	md5_hex(dg, r->md5);
	md5_hex(dw, hw);
	r->md5_ok = strcmp(hw, r->md5) == 0;
	free(buf);
	if (!raw && unlink(path) < 0)
		return fail("unlink %s", path);
	return 0;
}

/* One dbench-like client: files of mixed sizes, every fourth one fsynced, each
 * read back, at most eight alive at a time. Returns bytes moved, or -1. */
static int64_t client(const char *dir, uint64_t per_proc)
{
	static const uint32_t sizes[] = {4096, 16384, 65536, 262144, 1 << 20};
	unsigned char *in = malloc(65536);
	char name[4200];
	uint64_t written = 0, moved = 0;
	uint32_t i;
	if (!in || mkdir(dir, 0755) < 0)
		return -1;
	for (i = 0; written < per_proc && !work_stop; i++) {
		uint32_t size = sizes[i % 5];
		if (name_in(name, sizeof(name), dir, "f", i) < 0)
			return -1;
		int fd = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || fill(fd, size, 65536, NULL) < 0 || (i % 4 == 3 && fsync(fd) < 0))
			return -1;
		struct stat st;
		if (fstat(fd, &st) < 0 || lseek(fd, 0, SEEK_SET) < 0)
			return -1;
		for (ssize_t n; (n = read(fd, in, 65536)) != 0;) {
			if (n < 0)
				return -1;
			moved += n;
		}
		close(fd);
		written += size;
		moved += size;
		if (i >= 8) {
			if (name_in(name, sizeof(name), dir, "f", i - 8) < 0 || unlink(name) < 0)
				return -1;
		}
	}
	for (uint32_t j = i > 8 ? i - 8 : 0; j < i; j++) {
		if (name_in(name, sizeof(name), dir, "f", j) == 0)
			unlink(name);
	}
	rmdir(dir);
	free(in);
	return work_stop ? -1 : (int64_t)moved;
}

static int tell_clients(const pid_t *pids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		kill(pids[i], SIGINT);
	return 1;
}

int work_parallel(const char *dir, uint32_t procs, uint64_t per_proc, struct work_result *r)
{
	int go[2], report[2];
	memset(r, 0, sizeof(*r));
	pattern();
	if (pipe(go) < 0 || pipe(report) < 0)
		return fail("pipe");
	pid_t *pids = calloc(procs, sizeof(pid_t));
	if (!pids)
		return fail("memory");
	uint32_t started = 0;
	for (; started < procs; started++) {
		pid_t pid = fork();
		if (pid < 0)
			break;
		if (pid == 0) {
			char sub[4200], c;
			close(go[1]);
			close(report[0]);
			/* Wait for the starting gun so all clients run together. */
			if (read(go[0], &c, 1) < 0) {
				/* closed: go */
			}
			int64_t moved = name_in(sub, sizeof(sub), dir, "client-", started) < 0 ? -1 : client(sub, per_proc);
			if (moved < 0 && snprintf(work_error, sizeof(work_error), "client %u: %s", started, strerror(errno)) < 0)
				_exit(1);
			if (write(report[1], &moved, sizeof(moved)) < 0)
				_exit(1);
			if (moved < 0 && write(report[1], work_error, sizeof(work_error)) < 0)
				_exit(1);
			_exit(moved < 0);
		}
		pids[started] = pid;
	}
	int fork_errno = errno;
	close(go[0]);
	close(report[1]);
	double t0 = now();
	close(go[1]);
	uint64_t total = 0;
	int rc = 0;
	char why[sizeof(work_error)] = "";
	/* A signal sent to iobench alone (kill, a supervisor; Ctrl-C reaches
	 * the whole group) would leave the clients writing to their end: they
	 * hear it from here. It is let in only while waiting (ppoll), so it
	 * cannot slip in between the look at work_stop and the wait. */
	sigset_t stops, was;
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &was);
	int told = 0;
	for (uint32_t i = 0; i < started; i++) {
		int64_t moved;
		struct pollfd ready = {.fd = report[0], .events = POLLIN};
		do {
			if (work_stop && !told)
				told = tell_clients(pids, started);
		} while (ppoll(&ready, 1, NULL, &was) < 0 && errno == EINTR);
		if (read(report[0], &moved, sizeof(moved)) != sizeof(moved)) {
			rc = -1;
			snprintf(why, sizeof(why), "a client died without reporting");
			continue;
		}
		if (moved < 0) {
			rc = -1;
			if (read(report[0], why, sizeof(why)) < 0)
				snprintf(why, sizeof(why), "a client failed");
			why[sizeof(why) - 1] = 0;
		} else
			total += moved;
	}
	for (uint32_t i = 0; i < started; i++)
		waitpid(pids[i], NULL, 0);
	sigprocmask(SIG_SETMASK, &was, NULL);
	r->seconds = now() - t0;
	r->bytes = total;
	close(report[0]);
	free(pids);
	if (started < procs) {
		errno = fork_errno;
		return fail("fork client %u", started);
	}
	if (work_stop)
		return errno = EINTR, fail("parallel");
	if (rc < 0) {
		snprintf(work_error, sizeof(work_error), "parallel: %s", why);
		return -1;
	}
	return sync_path(dir) < 0 ? fail("sync %s", dir) : 0;
}
