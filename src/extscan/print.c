/*
 * extscan's output: the table for a terminal (narrow or wide) and JSON.
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

#include "../lib/text.h"
#include "extscan.h"

static void when(int64_t t, char *out, size_t size)
{
	time_t tt = (time_t) t;
	struct tm tm;

	if (t <= 0 || !gmtime_r(&tt, &tm))
		snprintf(out, size, "never");
	else
		strftime(out, size, "%Y-%m-%d %H:%M UTC", &tm);
}

void uuid_text(const uint8_t *u, char *out)
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
const char *journal_text(const struct result *r)
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
int shown(const struct result *r)
{
	if (r->member.kind == LAYOUT_PTABLE && !r->named)
		return r->ok || r->primary_magic;
	return r->member.kind != LAYOUT_NONE || !r->not_ext;
}

void print_json(struct result *r, int n)
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

void print_table(struct result *r, int n)
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
