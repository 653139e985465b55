/*
 * inroot: where a path of the mounted system really is. The broken root's
 * fstab names mount points, and its tree may hold symlinks; both are hostile
 * input. A mount point "/../../usr/sbin", or "/data" being a symlink to
 * "/usr/sbin", must land inside ROOT as that system itself would see it,
 * never on the rescue system's own tree. The kernel does the resolving
 * (openat2 with RESOLVE_IN_ROOT: ".." stops at ROOT, absolute symlinks start
 * at ROOT), so there is no path string logic here to get wrong.
 *
 * usage: inroot [--mkdir] ROOT PATH
 *        inroot --replace ROOT PATH [SUFFIX] < NEW
 * Prints the resolved path (inside ROOT); --mkdir first creates what is
 * missing, each directory inside ROOT. --replace writes standard input as
 * the new contents of the file PATH is, on ROOT's own filesystem, keeping
 * the old contents beside it as NAME+SUFFIX when asked (see
 * inroot-replace.c); every write into the mounted system goes through it.
 * Exit 1 with a reason when it cannot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inroot.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int inroot_open(int root, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = {
		.flags = (unsigned long long)flags,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | resolve,
	};

	return (int) syscall(SYS_openat2, root, path, &how, sizeof(how));
}

static int open_in(int root, const char *path)
{
	return inroot_open(root, path, O_PATH | O_CLOEXEC, 0);
}

/* Creates each missing directory of PATH, one component at a time, every
 * parent resolved inside ROOT again. */
static int make_dirs(int root, const char *path)
{
	char prefix[4096] = "/";
	size_t len = 1;
	const char *p = path;

	while (*p) {
		size_t n;
		int fd, parent;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (!n)
			break;
		if (len + n + 2 > sizeof(prefix))
			return errno = ENAMETOOLONG, -1;
		parent = open_in(root, prefix);
		if (parent < 0)
			return -1;
		memcpy(prefix + len, p, n);
		prefix[len + n] = 0;
		fd = open_in(root, prefix);
		if (fd >= 0) {
			close(fd);
		} else if (errno == ENOENT && mkdirat(parent, prefix + len, 0755) != 0) {
			close(parent);
			return -1;
		}
		close(parent);
		len += n;
		prefix[len++] = '/';
		prefix[len] = 0;
		p += n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int mkdirs = 0, replace = 0, root, fd;
	char link[64], where[4096], why[512];
	ssize_t n;

	if (argc > 1 && !strcmp(argv[1], "--mkdir")) {
		mkdirs = 1;
		argv++;
		argc--;
	} else if (argc > 1 && !strcmp(argv[1], "--replace")) {
		replace = 1;
		argv++;
		argc--;
	}
	if (argc != 3 && !(replace && argc == 4)) {
		fprintf(stderr, "usage: inroot [--mkdir] ROOT PATH | inroot --replace ROOT PATH [SUFFIX] < NEW\n");
		return 2;
	}
	root = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		fprintf(stderr, "inroot: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (replace) {
		if (inroot_replace(root, argv[2], argc == 4 ? argv[3] : NULL, where, sizeof(where),
				   why, sizeof(why)) != 0) {
			fprintf(stderr, "inroot: cannot replace %s inside %s: %s\n", argv[2], argv[1], why);
			return 1;
		}
		puts(where);
		return 0;
	}
	if (mkdirs && make_dirs(root, argv[2]) != 0) {
		fprintf(stderr, "inroot: cannot create %s inside %s: %s\n", argv[2], argv[1], strerror(errno));
		return 1;
	}
	fd = open_in(root, argv[2]);
	if (fd < 0) {
		fprintf(stderr, "inroot: %s inside %s: %s\n", argv[2], argv[1], strerror(errno));
		return 1;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, where, sizeof(where) - 1);
	if (n <= 0) {
		fprintf(stderr, "inroot: cannot read %s: %s\n", link, strerror(errno));
		return 1;
	}
	where[n] = 0;
	puts(where);
	return 0;
}
