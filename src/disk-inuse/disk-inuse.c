/* disk-inuse: whether a disk is in use by any of its names (inuse.h), for
 * the scripts that write disks (rescue-stick, which is write-stick) and
 * qemu/run. One finding per line on stdout, each naming the device as
 * given and, for another name of the same storage, that name too.
 * usage: disk-inuse PATH...        a block device or an image file
 *        disk-inuse --name NAME... a block device by its kernel name
 * Exit status: 0 nothing uses them, 1 something does, 2 a name is wrong. */
#include <stdio.h>
#include <string.h>

#include "../lib/inuse.h"

int main(int argc, char **argv)
{
	int by_name = 0, status = 0, args = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--name") == 0) {
			by_name = 1;
			continue;
		}
		struct inuse u;
		int n = by_name ? inuse_name(argv[i], &u) : inuse_path(argv[i], &u);
		args++;
		if (n < 0) {
			fprintf(stderr, "disk-inuse: %s\n", u.line[0]);
			status = 2;
			continue;
		}
		for (int j = 0; j < n; j++)
			printf("%s\n", u.line[j]);
		if (n && status == 0)
			status = 1;
	}
	if (!args) {
		fprintf(stderr, "disk-inuse: name a disk; usage: disk-inuse PATH... | --name NAME...\n");
		return 2;
	}
	return status;
}
