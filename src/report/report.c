/*
 * report: the JSON document rescue.report= sends (schema 1, README "The
 * report"): what this boot found and did, from the system's own state and
 * the records the boot scripts keep in /run/extrescue. Every string from a
 * disk, the network or the command line is escaped; key material on the
 * command line is removed; every list is bounded.
 *
 * With --metrics it prints the same facts in Prometheus' text format
 * (metrics.c) for rescue.metrics=; with --machine-id the name the fleet
 * knows this machine by (machine.c).
 *
 * usage: report [--metrics | --machine-id] [--root DIR]
 *        (DIR: where /proc, /sys, /etc and /run are; tests)
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

#include "../lib/kargs.h"
#include "report.h"

#define MAX_FILE (256 * 1024)
#define MAX_LINES 200
#define MAX_CMDLINE 4096	/* bytes of the command line shown */

const char *root = "";

/* The file ROOT/PATH, at most MAX_FILE bytes, NUL-terminated; NULL if absent. */
char *slurp(const char *path)
{
	char full[4096];
	size_t n;
	char *buf;
	FILE *f;

	snprintf(full, sizeof(full), "%s%s", root, path);
	f = fopen(full, "r");
	if (!f)
		return NULL;
	buf = malloc(MAX_FILE + 1);
	if (!buf) {
		fclose(f);
		return NULL;
	}
	n = fread(buf, 1, MAX_FILE, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* A JSON string of at most LIMIT bytes of S; bytes outside printable ASCII as \u00XX. */
static void jstr_n(const char *s, size_t limit)
{
	putchar('"');
	for (size_t i = 0; s && i < limit && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void jstr(const char *s)
{
	jstr_n(s, 4096);
}

/* The first line of S, trailing blanks removed, as a JSON string (or null). */
static void jline(char *s)
{
	size_t n;

	if (!s) {
		printf("null");
		return;
	}
	n = strcspn(s, "\n");
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	s[n] = 0;
	jstr_n(s, 256);
}

/* The lines of S (at most MAX_LINES) as a JSON array. */
static void jlines(char *s)
{
	char *line, *next;
	int n = 0;

	printf("[");
	for (line = s; line && *line && n < MAX_LINES; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!*line)
			continue;
		printf("%s\n    ", n++ ? "," : "");
		jstr_n(line, 512);
	}
	printf("]");
}

/* SHOW applied to the text of ROOT/PATH (NULL when absent). */
static void from_file(const char *path, void (*show)(char *))
{
	char *s = slurp(path);

	show(s);
	free(s);
}

static void jfile(const char *path)
{
	from_file(path, jline);
}

/* Command-line names whose values are secrets or key material; the whole
 * name is searched, however long (a prefix would let a long name through). */
static int secret(const char *param)
{
	static const char *const words[] = {"key", "pass", "secret", "token"};

	if (!strcasecmp(param, "rescue.keyfile"))
		return 0;
	for (const char *p = param; *p; p++)
		for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			if (!strncasecmp(p, words[i], strlen(words[i])))
				return 1;
	return 0;
}

/* Appends S to OUT (SIZE bytes, *LEN used) as far as it fits, always ending it. */
static void append(char *out, size_t size, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (n > size - 1 - *len)
		n = size - 1 - *len;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = 0;
}

/*
 * The command line S, word by word, into OUT (SIZE bytes, at least 1) with
 * secret values replaced, cut where OUT is full. Redacting lengthens a word
 * ("key=a" becomes "key=<removed>"), so no size derived from S is safe: OUT's
 * own size is the bound. A secret value is never copied, so a cut cannot leak it.
 */
static void redact(char *s, char *out, size_t size)
{
	size_t len = 0;

	out[0] = 0;
	for (char *w = s + strspn(s, " \t\n"); *w;) {
		char *param, *value;

		w = kargs_next(w, &param, &value);
		if (!*param)
			continue;
		if (len)
			append(out, size, &len, " ");
		append(out, size, &len, param);
		if (!value)
			continue;
		if (secret(param)) {
			append(out, size, &len, "=<removed>");
		} else if (strchr(value, ' ')) {
			append(out, size, &len, "=\"");
			append(out, size, &len, value);
			append(out, size, &len, "\"");
		} else {
			append(out, size, &len, "=");
			append(out, size, &len, value);
		}
	}
}

/* The command line S, secrets removed, as a JSON string (or null). */
static void jcmdline(char *s)
{
	char out[MAX_CMDLINE + 1];

	if (!s) {
		printf("null");
		return;
	}
	redact(s, out, sizeof(out));
	jstr_n(out, MAX_CMDLINE);
}

static int skip_entry(const struct dirent *d)
{
	return d->d_name[0] == '.';
}

/* Names in ROOT/DIR, sorted, at most MAX_NAMES (a /sys/class/block of many
 * partitions, loop and dm devices must not push a disk out before the
 * callers pick theirs); returns the count. */
int names(const char *dir, char out[][64])
{
	char full[4096];
	struct dirent *d;
	int n = 0;
	DIR *dp;

	snprintf(full, sizeof(full), "%s%s", root, dir);
	dp = opendir(full);
	if (!dp)
		return 0;
	while ((d = readdir(dp)) && n < MAX_NAMES)
		if (!skip_entry(d) && strlen(d->d_name) < 64)
			strcpy(out[n++], d->d_name);
	closedir(dp);
	qsort(out, (size_t)n, 64, (int (*)(const void *, const void *))strcmp);
	return n;
}

int exists(const char *fmt, const char *name)
{
	char path[4096], full[4200];
	FILE *f;

	snprintf(path, sizeof(path), fmt, name);
	snprintf(full, sizeof(full), "%s%s", root, path);
	f = fopen(full, "r");
	if (f)
		fclose(f);
	return f != NULL;
}

static void jfilef(const char *fmt, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), fmt, name);
	jfile(path);
}

/* NAME's addresses in ADDRS, "NAME ADDRESS/PREFIX" lines written by
 * report/send from `ip -o addr`, as a JSON array of at most 16. */
static void jaddresses(const char *addrs, const char *name)
{
	size_t nl = strlen(name);
	int k = 0;

	printf("[");
	for (const char *l = addrs; l && *l;) {
		size_t len = strcspn(l, "\n");

		if (len > nl + 1 && !strncmp(l, name, nl) && l[nl] == ' ' && k < 16) {
			printf("%s", k++ ? ", " : "");
			jstr_n(l + nl + 1, len - nl - 1);
		}
		l += len + (l[len] == '\n');
	}
	printf("]");
}

static void interfaces(void)
{
	static char n[MAX_NAMES][64];
	int count = names("/sys/class/net", n), first = 1, shown = 0;
	char *addrs = slurp("/run/extrescue/report/addresses");

	printf("[");
	for (int i = 0; i < count && shown < MAX_ITEMS; i++) {
		if (!strcmp(n[i], "lo"))
			continue;
		shown++;
		printf("%s\n      {\"name\": ", first ? "" : ",");
		first = 0;
		jstr(n[i]);
		printf(", \"mac\": ");
		jfilef("/sys/class/net/%s/address", n[i]);
		printf(", \"addresses\": ");
		jaddresses(addrs, n[i]);
		printf("}");
	}
	printf("]");
	free(addrs);
}

/* A whole disk a driver found (or a loop device): not a partition, md or dm. */
int whole_disk(const char *name)
{
	return !exists("/sys/class/block/%s/partition", name) && !exists("/sys/class/block/%s/md/level", name) &&
	       !exists("/sys/class/block/%s/dm/name", name) &&
	       (exists("/sys/class/block/%s/device", name) || exists("/sys/class/block/%s/loop/backing_file", name));
}

static void jcount(long long v)
{
	if (v < 0)
		printf("null");
	else
		printf("%lld", v);
}

/* A whole disk's health (disks/health), null where it gave no answer. */
static void jhealth(const struct disk_health *h)
{
	printf(", \"health\": ");
	if (h && h->health[0])
		jstr(h->health);
	else
		printf("null");
	printf(", \"reallocated_sectors\": ");
	jcount(h ? h->reallocated : -1);
	printf(", \"pending_sectors\": ");
	jcount(h ? h->pending : -1);
	printf(", \"media_errors\": ");
	jcount(h ? h->media : -1);
	printf(", \"io_errors\": ");
	jcount(h ? h->io_errors : -1);
}

/* Whole disks and partitions (what a driver found), or, with ASSEMBLED, the md
 * arrays and device-mapper devices this boot made. */
static void block_devices(int assembled)
{
	static char n[MAX_NAMES][64];
	static struct disk_health health[MAX_ITEMS];
	int count = names("/sys/class/block", n), first = 1, nh = assembled ? 0 : read_health(health), shown = 0;

	printf("[");
	for (int i = 0; i < count && shown < MAX_ITEMS; i++) {
		int md = exists("/sys/class/block/%s/md/level", n[i]), dm = exists("/sys/class/block/%s/dm/name", n[i]);
		char path[256], *text;

		if (assembled ? !md && !dm
			      : md || dm || (!exists("/sys/class/block/%s/device", n[i]) &&
					     !exists("/sys/class/block/%s/loop/backing_file", n[i]) &&
					     !exists("/sys/class/block/%s/partition", n[i])))
			continue;
		shown++;
		snprintf(path, sizeof(path), "/sys/class/block/%.63s/size", n[i]);
		text = slurp(path);
		printf("%s\n    {\"name\": ", first ? "" : ",");
		first = 0;
		jstr(n[i]);
		printf(", \"size_bytes\": %llu", text ? strtoull(text, NULL, 10) * 512ULL : 0ULL);
		free(text);
		if (md) {
			printf(", \"kind\": \"md\", \"level\": ");
			jfilef("/sys/class/block/%s/md/level", n[i]);
			printf(", \"state\": ");
			jfilef("/sys/class/block/%s/md/array_state", n[i]);
		} else if (dm) {
			printf(", \"kind\": \"dm\", \"dm_name\": ");
			jfilef("/sys/class/block/%s/dm/name", n[i]);
		} else {
			printf(", \"model\": ");
			if (exists("/sys/class/block/%s/device/model", n[i]))
				jfilef("/sys/class/block/%s/device/model", n[i]);
			else
				printf("null");
			printf(", \"partition\": %s", exists("/sys/class/block/%s/partition", n[i]) ? "true" : "false");
			if (whole_disk(n[i]))
				jhealth(health_of(health, nh, n[i]));
		}
		snprintf(path, sizeof(path), "/sys/class/block/%.63s/ro", n[i]);
		text = slurp(path);
		printf(", \"read_only\": %s", !text ? "null" : *text == '1' ? "true" : "false");
		free(text);
		printf("}");
	}
	printf("]");
}

/* An exit status as a JSON number, which allows no leading zeros ("007" is
 * 7), or null when S is not one. */
static void jstatus(const char *s)
{
	size_t n = strspn(s, "0123456789");

	if (n && !s[n] && n <= 9)
		printf("%ld", strtol(s, NULL, 10));
	else
		printf("null");
}

/* One of rescue-fsck's records, LINE, split in place into F: MODE DEVICE
 * STATUS SECONDS UNDO-FILE MEANING [JOURNAL-UNDO-FILE JOURNAL-DEVICE],
 * tab-separated. Returns the index of the last field (5 or more: whole). */
int fsck_fields(char *line, char *f[8])
{
	int k = 0;

	for (char *p = line; k < 8; k++) {
		f[k] = p;
		p = strchr(p, '\t');
		if (!p)
			break;
		*p++ = 0;
	}
	return k;
}

/* rescue-fsck's records in S (fsck_fields). */
static void jfsck(char *s)
{
	int n = 0;

	printf("[");
	for (char *line = s, *next; line && *line && n < MAX_ITEMS; line = next) {
		char *f[8] = {0};
		int k;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		k = fsck_fields(line, f);
		if (k < 5)
			continue;
		printf("%s\n    {\"mode\": ", n++ ? "," : "");
		jstr(f[0]);
		printf(", \"device\": ");
		jstr(f[1]);
		printf(", \"status\": ");
		jstatus(f[2]);
		printf(", \"meaning\": ");
		jstr(f[5]);
		printf(", \"seconds\": %ld, \"undo_file\": ", strtol(f[3], NULL, 10));
		if (*f[4] && strcmp(f[4], "-")) {
			char command[2200];

			jstr(f[4]);
			/* An external journal's own undo file goes back first (rescue-fsck's order). */
			if (k >= 7 && f[6] && f[7] && *f[6] && strcmp(f[6], "-"))
				snprintf(command, sizeof(command), "e2undo %.512s %.512s && e2undo %.512s %.512s", f[6], f[7],
					 f[4], f[1]);
			else
				snprintf(command, sizeof(command), "e2undo %.1024s %.1024s", f[4], f[1]);
			printf(", \"undo_command\": ");
			jstr(command);
		} else
			printf("null, \"undo_command\": null");
		printf("}");
	}
	printf("]");
}

/* The VERSION_ID of the os-release text OS as a JSON string (or null). */
static void jversion(char *os)
{
	char *v = os ? strstr(os, "VERSION_ID=") : NULL;

	if (!v) {
		printf("null");
		return;
	}
	v += 11;
	v[strcspn(v, "\n")] = 0;
	jstr_n(v, 64);
}

/* extscan's own JSON (its strings are escaped there) as it is, when it is
 * one whole array; null if it did not run or stopped half-way. */
static void jextscan(char *scan)
{
	if (scan && scan[strspn(scan, " \n")] == '[' && strlen(scan) < MAX_FILE &&
	    strrchr(scan, ']') && !strrchr(scan, ']')[1 + strspn(strrchr(scan, ']') + 1, " \n")])
		fputs(scan, stdout);
	else
		printf("null");
}

#ifndef FUZZING
int main(int argc, char **argv)
{
	char *uptime, id[MACHINE_ID];
	struct utsname uts;
	int metrics = 0, only_id = 0;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--root") && i + 1 < argc)
			root = argv[++i];
		else if (!strcmp(argv[i], "--metrics"))
			metrics = 1;
		else if (!strcmp(argv[i], "--machine-id"))
			only_id = 1;
	if (only_id) {
		machine_id(id, sizeof(id));
		printf("%s\n", id);
		return 0;
	}
	if (metrics) {
		print_metrics();
		return 0;
	}
	printf("{\n  \"schema\": 1,\n  \"extrescue\": ");
	from_file("/etc/os-release", jversion);
	printf(",\n  \"kernel\": ");
	jfile("/proc/sys/kernel/osrelease");
	/* The same rescue runs on x86_64 and arm64 servers: which one this is. */
	printf(",\n  \"architecture\": ");
	if (uname(&uts) == 0)
		jstr_n(uts.machine, 64);
	else
		printf("null");
	uptime = slurp("/proc/uptime");
	printf(",\n  \"uptime_seconds\": %ld", uptime ? strtol(uptime, NULL, 10) : -1L);
	free(uptime);
	machine_id(id, sizeof(id));
	printf(",\n  \"machine\": {\n    \"id\": ");
	jstr(id);
	printf(",\n    \"vendor\": ");
	jfile("/sys/class/dmi/id/sys_vendor");
	printf(",\n    \"product\": ");
	jfile("/sys/class/dmi/id/product_name");
	printf(",\n    \"serial\": ");
	jfile("/sys/class/dmi/id/product_serial");
	printf(",\n    \"hostname\": ");
	jfile("/proc/sys/kernel/hostname");
	printf(",\n    \"interfaces\": ");
	interfaces();
	printf("\n  },\n  \"cmdline\": ");
	from_file("/proc/cmdline", jcmdline);
	printf(",\n  \"disks\": ");
	block_devices(0);
	printf(",\n  \"assembled\": ");
	block_devices(1);
	printf(",\n  \"extscan\": ");
	from_file("/run/extscan.json", jextscan);
	printf(",\n  \"fsck\": ");
	from_file("/run/extrescue/fsck.results", jfsck);
	/* "ED25519 SHA256:..." lines, written by net/sshd when the server started. */
	printf(",\n  \"ssh_host_keys\": ");
	from_file("/run/extrescue/ssh/fingerprints", jlines);
	printf(",\n  \"errors\": ");
	from_file("/run/extrescue/errors", jlines);
	printf(",\n  \"messages\": ");
	from_file("/run/extrescue/report/messages", jlines);
	printf("\n}\n");
	return 0;
}
#endif
