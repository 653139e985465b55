/*
 * inroot --replace: new contents for a file of the mounted system, never
 * written through a name that system planted. The file is found inside ROOT
 * as inroot finds any path, and on ROOT's own filesystem only: rescue-mount
 * binds the rescue system's /dev, /proc, /sys and /run into the tree for the
 * chroot, so "/dev/sdb" resolved inside ROOT is still the rescue system's
 * disk, and a symlink to it (etc/fstab.new -> /dev/sdb) must not be
 * followed there. The new contents go to a file created beside the old one
 * (O_EXCL|O_NOFOLLOW: never an existing file, never through a symlink), are
 * synced and renamed over it, so a failure half-way leaves the old file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inroot.h"

/* Nothing the rescue commands write is near this; a runaway pipe is. */
#define MAX_CONTENTS (16 << 20)
#define SAME_FS (RESOLVE_NO_XDEV)

/* The path of FD as the kernel names it in our mount namespace. */
static int fd_path(int fd, char *out, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, size - 1);
	if (n <= 0 || (size_t)n >= size - 1)
		return -1;
	out[n] = 0;
	return 0;
}

/* FROM copied into TO, at most MAX_CONTENTS bytes. 0, or -1 with errno. */
static int copy(int from, int to)
{
	static char buf[65536];
	size_t total = 0;

	for (;;) {
		ssize_t n = read(from, buf, sizeof(buf)), off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return (int)n;
		total += (size_t)n;
		if (total > MAX_CONTENTS)
			return errno = EFBIG, -1;
		while (off < n) {
			ssize_t w = write(to, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return -1;
			off += w;
		}
	}
}

/* A new file NAME in DIR with the owner and mode of LIKE, so the system
 * sees the file it had. The fd, or -1 with errno (and no file left). */
static int create_new(int dir, const char *name, const struct stat *like)
{
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int err;

	if (fd < 0)
		return -1;
	/* Owner first: chown clears set-id bits. */
	if (fchown(fd, like->st_uid, like->st_gid) == 0 && fchmod(fd, like->st_mode & 07777) == 0)
		return fd;
	err = errno;
	close(fd);
	unlinkat(dir, name, 0);
	return errno = err, -1;
}

static unsigned int random_word(void)
{
	unsigned int r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) == (ssize_t)sizeof(r))
		return r;
	return (unsigned int)getpid() * 2654435761u ^ (unsigned int)time(NULL);
}

/* A copy of the file OLD (open) as NAME in DIR, times kept, synced. */
static int keep_copy(int dir, int old, const char *name, const struct stat *st)
{
	struct timespec times[2] = {st->st_atim, st->st_mtim};
	int fd = create_new(dir, name, st), err;

	if (fd < 0)
		return -1;
	if (copy(old, fd) == 0 && futimens(fd, times) == 0 && fsync(fd) == 0 && close(fd) == 0)
		return 0;
	err = errno;
	close(fd);
	unlinkat(dir, name, 0);
	return errno = err, -1;
}

int inroot_replace(int root, const char *path, const char *suffix, char *where, size_t size,
		   char *why, size_t why_size)
{
	char root_path[4096], full[4096], dir_part[4096], tmp[300], keep[300];
	int fd = -1, dir = -1, old = -1, out = -1, status = -1;
	struct stat st, again;
	const char *rel, *base;
	size_t len;

#define FAIL(...) do { snprintf(why, why_size, __VA_ARGS__); goto done; } while (0)
	fd = inroot_open(root, path, O_PATH | O_CLOEXEC, SAME_FS);
	if (fd < 0 && errno == EXDEV)
		FAIL("it leads off the root's own filesystem (into a mount beneath it); not written");
	if (fd < 0)
		FAIL("%s", strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		FAIL("it is not a regular file; not written");
	if (fd_path(root, root_path, sizeof(root_path)) != 0 || fd_path(fd, full, sizeof(full)) != 0)
		FAIL("cannot tell where it is (/proc not mounted?)");
	len = strcmp(root_path, "/") ? strlen(root_path) : 0;
	if (strncmp(full, root_path, len) || full[len] != '/')
		FAIL("it resolves outside the root");
	/* The file's own directory and name, reached again with no symlink at
	 * all: the resolved path has none left. */
	rel = full + len;
	base = strrchr(rel, '/') + 1;
	snprintf(dir_part, sizeof(dir_part), "%.*s", (int)(base - rel), rel);
	if (!*base || strlen(base) > 200)
		FAIL("its name is empty or too long");
	dir = inroot_open(root, dir_part, O_RDONLY | O_DIRECTORY | O_CLOEXEC, SAME_FS | RESOLVE_NO_SYMLINKS);
	if (dir < 0 || fstatat(dir, base, &again, AT_SYMLINK_NOFOLLOW) != 0 ||
	    again.st_dev != st.st_dev || again.st_ino != st.st_ino)
		FAIL("it changed while being looked at; not written");
	if (suffix) {
		if (!*suffix || strchr(suffix, '/') || strlen(suffix) > 64)
			FAIL("the suffix '%.64s' is not a plain name part", suffix);
		snprintf(keep, sizeof(keep), "%s%s", base, suffix);
		old = openat(dir, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (old < 0 || fstat(old, &again) != 0 || again.st_ino != st.st_ino)
			FAIL("cannot read it: %s", strerror(errno));
		if (keep_copy(dir, old, keep, &st) != 0)
			FAIL("cannot keep the old contents as %s: %s", keep, strerror(errno));
	}
	for (int tries = 0; out < 0; tries++) {
		snprintf(tmp, sizeof(tmp), ".%s.extrescue-%08x", base, random_word());
		out = create_new(dir, tmp, &st);
		if (out < 0 && (errno != EEXIST || tries == 32))
			FAIL("cannot create a new file beside it: %s", strerror(errno));
	}
	if (copy(STDIN_FILENO, out) != 0 || fsync(out) != 0 || close(out) != 0) {
		out = -1;
		unlinkat(dir, tmp, 0);
		FAIL("cannot write the new contents: %s", strerror(errno));
	}
	out = -1;
	if (renameat(dir, tmp, dir, base) != 0) {
		unlinkat(dir, tmp, 0);
		FAIL("cannot rename the new file over it: %s", strerror(errno));
	}
	fsync(dir);
	snprintf(where, size, "%s", full);
	status = 0;
done:
#undef FAIL
	for (int *f = (int[]){fd, dir, old, out, -2}; *f != -2; f++)
		if (*f >= 0)
			close(*f);
	return status;
}
