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
#include "extscan.h"

int verbose, wide, json, metrics, list_only, member_only, journal_only;
struct extsb_support kernel;

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
		} else if (!strcmp(argv[i], "--metrics")) {
			metrics = 1;
		} else if (!strcmp(argv[i], "--devices")) {
			list_only = 1;
		} else if (!strcmp(argv[i], "--member")) {
			member_only = 1;
		} else if (!strcmp(argv[i], "--journal")) {
			journal_only = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: extscan [-v] [--wide | --json | --metrics | --devices | --member] [DEVICE...]\n"
			       "Lists ext2/3/4 filesystems on all block devices (or the ones named),\n"
			       "their state, and whether this kernel can mount and e2fsck can check them.\n"
			       "The table fits the terminal (80 columns when unknown); -v adds UUID,\n"
			       "times (UTC) and features; --wide puts every column on one line.\n"
			       "Members of md arrays, LVM, LUKS and bcache, partitioned disks and second\n"
			       "paths are shown as such: assemble or use what they belong to instead.\n"
			       "--metrics prints each volume's facts in Prometheus' text format.\n"
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
	} else if (metrics) {
		print_metrics(r, n);
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
