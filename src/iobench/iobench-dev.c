/* Device checks for iobench: in use by any name (inuse.c), or holding anything
 * libblkid recognises (through blkid -p, the same probe as wipefs). */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/inuse.h"
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

/* By any name (inuse.h): the answer write-stick and qemu/run give too. */
int dev_check_unused(const struct blockdev *d, char *why, size_t len)
{
	struct inuse u;
	int n = inuse_path(d->path, &u);
	if (n == 0)
		return 0;
	/* "/dev/vdb is mounted on ..." reads "/dev/vdb is in use: it is mounted on ..." */
	size_t k = strlen(d->path);
	if (n > 0 && strncmp(u.line[0], d->path, k) == 0 && u.line[0][k] == ' ')
		snprintf(why, len, "%s is in use: it%s", d->path, u.line[0] + k);
	else
		snprintf(why, len, "%s is in use: %s", d->path, u.line[0]);
	return -1;
}

/* Runs blkid -p (libblkid's low-level probe: every filesystem, RAID, LVM,
 * LUKS, bcache, swap and partition table signature it knows) on the device
 * and reads what it found. Returns blkid's exit status, or -1. */
static int blkid_probe_dev(const char *path, char *out, size_t len)
{
	int pfd[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(pfd) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execlp("blkid", "blkid", "-p", "-o", "export", "--", path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while (got < len - 1 && (n = read(pfd[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = 0;
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The value of KEY= in blkid's export output, or NULL. */
static const char *export_value(char *out, const char *key, char *val, size_t len)
{
	size_t k = strlen(key);

	for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, key, k) && line[k] == '=') {
			snprintf(val, len, "%.*s", (int)strcspn(line + k + 1, "\n"), line + k + 1);
			return val;
		}
	return NULL;
}

int dev_check_blank(const struct blockdev *d, char *why, size_t len)
{
	char out[4096], type[64], pttype[64];
	int status = blkid_probe_dev(d->path, out, sizeof(out));

	if (status == 2)	/* blkid: nothing found */
		return 0;
	if (status == 0 && export_value(out, "TYPE", type, sizeof(type))) {
		snprintf(why, len, "%s holds a '%s' signature (blkid -p)", d->path, type);
		return -1;
	}
	if (status == 0 && export_value(out, "PTTYPE", pttype, sizeof(pttype))) {
		snprintf(why, len, "%s holds a '%s' partition table (blkid -p)", d->path, pttype);
		return -1;
	}
	if (status == 0 || status == 1)
		snprintf(why, len, "%s holds more than one signature (blkid -p; wipefs lists them)", d->path);
	else
		snprintf(why, len, "%s could not be probed for signatures (blkid %s)", d->path,
			 status < 0 ? "did not run" : status == 127 ? "not found" : "failed");
	return -1;
}
