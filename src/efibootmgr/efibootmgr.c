/*
 * efibootmgr: the UEFI boot entries (Boot####, BootOrder, BootNext) in the
 * firmware's variables, listed, created, reordered and deleted through
 * efivarfs. extrescue's own implementation of the commonly used subset of
 * efibootmgr's options (the archive the build may use does not serve the
 * sources of efibootmgr and efivar); the options mean what they mean there.
 *
 * Variables come from the firmware and disks from the broken server: both are
 * parsed as data, every length checked against what was read. Nothing is
 * written unless an option asks for it; efivarfs is mounted (or remounted
 * read-write) only for the time it takes and left as it was found.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../lib/le.h"

#define VARS "/sys/firmware/efi/efivars"
#define GLOBAL "8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define EFIVARFS_MAGIC 0xde5e81e4
#define VAR_MAX 65536
#define LOAD_OPTION_ACTIVE 1u
/* non-volatile, boot service and runtime access: what Boot#### variables have */
#define VAR_ATTRS 7u
#define MAX_ENTRIES 0x10000

static int verbose, quiet;
static int mounted_here, remounted_rw;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void cleanup(void)
{
	if (remounted_rw)
		mount(NULL, VARS, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	if (mounted_here)
		umount(VARS);
	remounted_rw = mounted_here = 0;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("efibootmgr: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cleanup();
	exit(1);
}

/* efivarfs at VARS, writable when WRITE; undone by cleanup(). */
static void use_efivarfs(int write)
{
	struct statfs sf;
	struct stat st;

	if (stat("/sys/firmware/efi", &st) != 0)
		die("not booted through UEFI (no /sys/firmware/efi): boot entries live in the firmware of a UEFI boot");
	if (statfs(VARS, &sf) != 0 || sf.f_type != EFIVARFS_MAGIC) {
		if (mount("efivarfs", VARS, "efivarfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | (write ? 0 : MS_RDONLY), NULL))
			die("cannot mount efivarfs on %s: %s", VARS, strerror(errno));
		mounted_here = 1;
		return;
	}
	if (write && (sf.f_flags & ST_RDONLY)) {
		if (mount(NULL, VARS, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
			die("cannot remount %s read-write: %s", VARS, strerror(errno));
		remounted_rw = 1;
	}
}

/* Reads variable NAME (of the global GUID) into BUF; returns the data's
 * length (after the 4 attribute bytes) or -1 when it does not exist. */
static int read_var(const char *name, uint8_t *buf, size_t size)
{
	char path[160];
	uint8_t raw[VAR_MAX + 4];
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), VARS "/%s-" GLOBAL, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while (got < (ssize_t) sizeof(raw) && (n = read(fd, raw + got, sizeof(raw) - (size_t) got)) > 0)
		got += n;
	close(fd);
	if (got < 4)
		return -1;
	got -= 4;
	if ((size_t) got > size)
		got = (ssize_t) size;
	memcpy(buf, raw + 4, (size_t) got);
	return (int) got;
}

/* efivarfs protects existing variables with the immutable flag. */
static void make_mutable(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), flags;

	if (fd < 0)
		return;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_IMMUTABLE_FL)) {
		flags &= ~FS_IMMUTABLE_FL;
		ioctl(fd, FS_IOC_SETFLAGS, &flags);
	}
	close(fd);
}

static void write_var(const char *name, const uint8_t *data, size_t len)
{
	char path[160];
	uint8_t raw[VAR_MAX + 4];
	uint32_t attrs = VAR_ATTRS;
	int fd;

	if (len > VAR_MAX)
		die("%s would be %zu bytes, more than a variable holds", name, len);
	snprintf(path, sizeof(path), VARS "/%s-" GLOBAL, name);
	make_mutable(path);
	memcpy(raw, &attrs, 4);
	memcpy(raw + 4, data, len);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0)
		die("cannot open %s for writing: %s", path, strerror(errno));
	if (write(fd, raw, len + 4) != (ssize_t) (len + 4))
		die("the firmware refused %s: %s", name, strerror(errno));
	close(fd);
}

static void delete_var(const char *name)
{
	char path[160];

	snprintf(path, sizeof(path), VARS "/%s-" GLOBAL, name);
	make_mutable(path);
	if (unlink(path) != 0 && errno != ENOENT)
		die("cannot delete %s: %s", name, strerror(errno));
}

/* A GUID as stored (first three fields little-endian) in its usual text. */
static void guid_text(const uint8_t *g, char *out, size_t size)
{
	snprintf(out, size, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 (unsigned) le_get(g, 4), (unsigned) le_get(g + 4, 2), (unsigned) le_get(g + 6, 2),
		 g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
}

/* UCS-2 (at most MAX code units, NUL-terminated or not) to printable ASCII;
 * returns the number of bytes the string took, its NUL included. */
static size_t ucs2_text(const uint8_t *p, size_t max_bytes, char *out, size_t size)
{
	size_t i = 0, o = 0;

	for (; i + 1 < max_bytes; i += 2) {
		unsigned c = (unsigned) le_get(p + i, 2);

		if (!c) {
			i += 2;
			break;
		}
		if (o + 1 < size)
			out[o++] = (c < 0x80 && isprint((int) c)) ? (char) c : '?';
	}
	out[o] = 0;
	return i;
}

/* The device path (LEN bytes at P) in efibootmgr's notation. */
static void path_text(const uint8_t *p, size_t len, char *out, size_t size)
{
	size_t o = 0;

	out[0] = 0;
	while (len >= 4 && o + 1 < size) {
		unsigned type = p[0], sub = p[1], n = (unsigned) le_get(p + 2, 2);
		char g[40], s[260];

		if (n < 4 || n > len)
			break;
		if (type == 0x7f && sub == 0xff)
			break;
		if (o && o + 1 < size)
			out[o++] = '/';
		if (type == 4 && sub == 1 && n >= 42) {
			unsigned mbr = p[40], sigtype = p[41];

			if (sigtype == 2)
				guid_text(p + 24, g, sizeof(g));
			else
				snprintf(g, sizeof(g), "%08x", (unsigned) le_get(p + 24, 4));
			o += (size_t) snprintf(out + o, size - o, "HD(%u,%s,%s,0x%llx,0x%llx)", (unsigned) le_get(p + 4, 4),
					       mbr == 2 ? "GPT" : "MBR", g, (unsigned long long) le_get(p + 8, 8),
					       (unsigned long long) le_get(p + 16, 8));
		} else if (type == 4 && sub == 4) {
			ucs2_text(p + 4, n - 4, s, sizeof(s));
			o += (size_t) snprintf(out + o, size - o, "File(%s)", s);
		} else {
			o += (size_t) snprintf(out + o, size - o, "Path(%u,%u,%u bytes)", type, sub, n - 4);
		}
		if (o >= size)
			o = size - 1;
		p += n;
		len -= n;
	}
}

static int boot_order(uint16_t *order)
{
	uint8_t buf[VAR_MAX];
	int n = read_var("BootOrder", buf, sizeof(buf));

	if (n < 0)
		return 0;
	for (int i = 0; i < n / 2; i++)
		order[i] = (uint16_t) le_get(buf + 2 * i, 2);
	return n / 2;
}

static void set_boot_order(const uint16_t *order, int n)
{
	uint8_t buf[VAR_MAX];

	if (n > VAR_MAX / 2)
		die("BootOrder would have %d entries, more than a variable holds", n);

	for (int i = 0; i < n; i++)
		le_put(buf + 2 * i, order[i], 2);
	write_var("BootOrder", buf, (size_t) n * 2);
}

static void print_entry(unsigned num)
{
	char name[16], desc[260], path[1024];
	uint8_t buf[VAR_MAX];
	int n;

	snprintf(name, sizeof(name), "Boot%04X", num);
	if ((n = read_var(name, buf, sizeof(buf))) < 6)
		return;
	size_t plen = (size_t) le_get(buf + 4, 2);
	size_t dlen = ucs2_text(buf + 6, (size_t) n - 6, desc, sizeof(desc));

	path[0] = 0;
	if (6 + dlen + plen <= (size_t) n)
		path_text(buf + 6 + dlen, plen, path, sizeof(path));
	printf("%s%s %s", name, (le_get(buf, 4) & LOAD_OPTION_ACTIVE) ? "*" : " ", desc);
	if (verbose)
		printf("\t%s", path[0] ? path : "(no device path)");
	putchar('\n');
}

static int cmp_u16(const void *a, const void *b)
{
	return (int) *(const uint16_t *) a - (int) *(const uint16_t *) b;
}

/* Every Boot#### variable present (four hex digits, the global GUID), sorted. */
static int entries(uint16_t *out)
{
	struct dirent *e;
	DIR *d = opendir(VARS);
	int n = 0;

	if (!d)
		die("cannot read %s: %s", VARS, strerror(errno));
	while ((e = readdir(d)) && n < MAX_ENTRIES) {
		const char *s = e->d_name;

		if (strlen(s) == 8 + 1 + strlen(GLOBAL) && !strncmp(s, "Boot", 4) && isxdigit((unsigned char) s[4]) &&
		    isxdigit((unsigned char) s[5]) && isxdigit((unsigned char) s[6]) && isxdigit((unsigned char) s[7]) &&
		    s[8] == '-' && !strcasecmp(s + 9, GLOBAL))
			out[n++] = (uint16_t) strtoul(s + 4, NULL, 16);
	}
	closedir(d);
	qsort(out, (size_t) n, sizeof(*out), cmp_u16);
	return n;
}

static void list(void)
{
	static uint16_t order[VAR_MAX / 2 + 1], all[MAX_ENTRIES];
	uint8_t buf[16];
	int n;

	if (read_var("BootCurrent", buf, sizeof(buf)) >= 2)
		printf("BootCurrent: %04X\n", (unsigned) le_get(buf, 2));
	if (read_var("BootNext", buf, sizeof(buf)) >= 2)
		printf("BootNext: %04X\n", (unsigned) le_get(buf, 2));
	if (read_var("Timeout", buf, sizeof(buf)) >= 2)
		printf("Timeout: %u seconds\n", (unsigned) le_get(buf, 2));
	n = boot_order(order);
	printf("BootOrder: ");
	for (int i = 0; i < n; i++)
		printf("%s%04X", i ? "," : "", order[i]);
	putchar('\n');
	n = entries(all);
	for (int i = 0; i < n; i++)
		print_entry(all[i]);
}

/* Partition PART of DISK as an HD() device path node (42 bytes at NODE):
 * from the GPT when there is one, else from the MBR. */
static void hd_node(const char *disk, unsigned part, uint8_t *node)
{
	uint8_t sec[4096], ent[128];
	int fd = open(disk, O_RDONLY | O_CLOEXEC), ssz = 512;

	if (fd < 0)
		die("cannot open %s: %s", disk, strerror(errno));
	ioctl(fd, BLKSSZGET, &ssz);
	if (ssz < 512 || ssz > (int) sizeof(sec))
		ssz = 512;
	memset(node, 0, 42);
	node[0] = 4, node[1] = 1;
	le_put(node + 2, 42, 2);
	le_put(node + 4, part, 4);
	if (pread(fd, sec, (size_t) ssz, ssz) == ssz && !memcmp(sec, "EFI PART", 8)) {
		uint64_t table = le_get(sec + 72, 8);
		uint32_t count = (uint32_t) le_get(sec + 80, 4), esize = (uint32_t) le_get(sec + 84, 4);

		if (part < 1 || part > count || esize < 128 || esize > 4096)
			die("%s: its GPT has no partition %u", disk, part);
		if (pread(fd, ent, sizeof(ent), (off_t) (table * (uint64_t) ssz + (uint64_t) (part - 1) * esize)) !=
		    (ssize_t) sizeof(ent))
			die("%s: cannot read GPT entry %u", disk, part);
		static const uint8_t unused[16];
		if (!memcmp(ent, unused, 16))
			die("%s: GPT entry %u is unused", disk, part);
		uint64_t first = le_get(ent + 32, 8), last = le_get(ent + 40, 8);
		if (last < first)
			die("%s: GPT entry %u ends before it starts", disk, part);
		le_put(node + 8, first, 8);
		le_put(node + 16, last - first + 1, 8);
		memcpy(node + 24, ent + 16, 16);
		node[40] = 2, node[41] = 2;	/* GPT, GUID signature */
	} else if (pread(fd, sec, 512, 0) == 512 && sec[510] == 0x55 && sec[511] == 0xaa) {
		if (part < 1 || part > 4 || !sec[446 + 16 * (part - 1) + 4])
			die("%s: its MBR has no primary partition %u", disk, part);
		const uint8_t *e = sec + 446 + 16 * (part - 1);
		le_put(node + 8, le_get(e + 8, 4), 8);
		le_put(node + 16, le_get(e + 12, 4), 8);
		memcpy(node + 24, sec + 440, 4);
		node[40] = 1, node[41] = 1;	/* MBR, 32-bit signature */
	} else {
		die("%s has neither a GPT nor an MBR", disk);
	}
	close(fd);
}

static void create(const char *disk, unsigned part, const char *label, const char *loader, int inactive)
{
	static uint16_t order[VAR_MAX / 2 + 1], all[MAX_ENTRIES];
	uint8_t opt[4096], *p;
	char name[16];
	size_t llen = strlen(label), flen = strlen(loader);
	unsigned num = 0;
	int n, k;

	if (llen > 256 || flen > 512)
		die("the label or the loader path is too long");
	n = entries(all);
	for (k = 0; k < n && all[k] == num; k++)
		num++;
	if (num >= MAX_ENTRIES)
		die("no free Boot#### number");
	le_put(opt, inactive ? 0 : LOAD_OPTION_ACTIVE, 4);
	p = opt + 6;
	for (size_t i = 0; i <= llen; i++, p += 2)
		le_put(p, (unsigned char) label[i], 2);
	uint8_t *path = p;
	hd_node(disk, part, p);
	p += 42;
	/* File(): the loader, in backslashes, from the partition's root. */
	size_t units = flen + (loader[0] != '\\' && loader[0] != '/') + 1;
	p[0] = 4, p[1] = 4;
	le_put(p + 2, 4 + 2 * units, 2);
	uint8_t *f = p + 4;
	if (loader[0] != '\\' && loader[0] != '/')
		le_put(f, '\\', 2), f += 2;
	for (size_t i = 0; i <= flen; i++, f += 2)
		le_put(f, loader[i] == '/' ? '\\' : (unsigned char) loader[i], 2);
	p = f;
	p[0] = 0x7f, p[1] = 0xff;
	le_put(p + 2, 4, 2);
	p += 4;
	le_put(opt + 4, (uint64_t) (p - path), 2);
	snprintf(name, sizeof(name), "Boot%04X", num);
	write_var(name, opt, (size_t) (p - opt));
	/* New entries go first, as efibootmgr does. */
	n = boot_order(order + 1);
	order[0] = (uint16_t) num;
	set_boot_order(order, n + 1);
	if (!quiet)
		printf("efibootmgr: created %s\n", name);
}

static unsigned hex_entry(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 16);

	if (!*s || *end || v >= MAX_ENTRIES)
		die("'%s' is not a boot entry number (hex, up to FFFF)", s);
	return (unsigned) v;
}

static void delete_entry(unsigned num)
{
	static uint16_t order[VAR_MAX / 2 + 1];
	char name[16];
	int n, k = 0;
	uint8_t buf[4];

	snprintf(name, sizeof(name), "Boot%04X", num);
	if (read_var(name, buf, sizeof(buf)) < 0)
		die("there is no %s", name);
	delete_var(name);
	n = boot_order(order);
	for (int i = 0; i < n; i++)
		if (order[i] != num)
			order[k++] = order[i];
	if (k != n)
		set_boot_order(order, k);
	if (!quiet)
		printf("efibootmgr: deleted %s\n", name);
}

static void set_order(const char *list_arg)
{
	static uint16_t order[VAR_MAX / 2 + 1];
	char *copy = strdup(list_arg), *tok, *save = NULL;
	int n = 0;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok && n < VAR_MAX / 2; tok = strtok_r(NULL, ",", &save))
		order[n++] = (uint16_t) hex_entry(tok);
	free(copy);
	set_boot_order(order, n);
}

static void usage(FILE *to)
{
	fputs("usage: efibootmgr [-v] [-q]                      list BootCurrent, BootOrder and the Boot#### entries\n"
	      "       efibootmgr -c [-d DISK] [-p PART] [-L LABEL] [-l LOADER] [-A]\n"
	      "                                               create an entry for LOADER on DISK's partition PART\n"
	      "                                               (defaults /dev/sda, 1, Linux, \\EFI\\BOOT\\BOOTX64.EFI;\n"
	      "                                               -A: inactive), first in BootOrder\n"
	      "       efibootmgr -b NNNN -B                   delete BootNNNN (hex) and take it out of BootOrder\n"
	      "       efibootmgr -o NNNN,NNNN,...             set BootOrder\n"
	      "       efibootmgr -n NNNN | -N                 set or delete BootNext\n"
	      "extrescue's own implementation of these efibootmgr options.\n", to);
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{"create", no_argument, NULL, 'c'}, {"disk", required_argument, NULL, 'd'},
		{"part", required_argument, NULL, 'p'}, {"label", required_argument, NULL, 'L'},
		{"loader", required_argument, NULL, 'l'}, {"inactive", no_argument, NULL, 'A'},
		{"bootnum", required_argument, NULL, 'b'}, {"delete-bootnum", no_argument, NULL, 'B'},
		{"bootorder", required_argument, NULL, 'o'}, {"bootnext", required_argument, NULL, 'n'},
		{"delete-bootnext", no_argument, NULL, 'N'}, {"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
	};
	const char *disk = "/dev/sda", *label = "Linux", *loader = "\\EFI\\BOOT\\BOOTX64.EFI";
	const char *order = NULL, *next = NULL;
	int do_create = 0, do_delete = 0, del_next = 0, inactive = 0, c;
	long bootnum = -1, part = 1;
	char *end;

	while ((c = getopt_long(argc, argv, "cd:p:L:l:Ab:Bo:n:Nvqh", longs, NULL)) != -1) {
		switch (c) {
		case 'c': do_create = 1; break;
		case 'd': disk = optarg; break;
		case 'p':
			part = strtol(optarg, &end, 10);
			if (*end || part < 1 || part > 128)
				die("-p takes a partition number (1-128)");
			break;
		case 'L': label = optarg; break;
		case 'l': loader = optarg; break;
		case 'A': inactive = 1; break;
		case 'b': bootnum = hex_entry(optarg); break;
		case 'B': do_delete = 1; break;
		case 'o': order = optarg; break;
		case 'n': next = optarg; break;
		case 'N': del_next = 1; break;
		case 'v': verbose = 1; break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'; see efibootmgr --help", argv[optind]);
	if (do_delete && bootnum < 0)
		die("-B needs -b NNNN: the entry to delete");
	if (do_create && do_delete)
		die("-c and -B do not go together");
	use_efivarfs(do_create || do_delete || order || next || del_next);
	if (do_create)
		create(disk, (unsigned) part, label, loader, inactive);
	if (do_delete)
		delete_entry((unsigned) bootnum);
	if (order)
		set_order(order);
	if (next) {
		uint8_t v[2];

		le_put(v, hex_entry(next), 2);
		write_var("BootNext", v, 2);
	}
	if (del_next)
		delete_var("BootNext");
	if (!quiet)
		list();
	cleanup();
	return 0;
}
