/*
 * cmdline: the kernel command line as data. Splits it the way the kernel
 * does (spaces separate words, double quotes group, no other escapes),
 * checks every rescue.* parameter against what it may be, and writes each
 * accepted value to a file of its own (DIR/param/KEY; one line per value for
 * the repeatable ones), each console= to DIR/consoles, one per line, and each
 * network parameter (ip=, nameserver=, vlan=, ifname=, BOOTIF=) normalised to
 * DIR/net/NAME, one line per value (see netargs.h). Nothing is evaluated: the shell scripts read
 * those files with cat. A parameter that is unknown or malformed gets one
 * warning line on standard error and is left out; the exit status is 0
 * whatever the input, because PID 1 must go on.
 *
 * With --stick, FILE is the cmdline file on the stick's EXTRESCUE partition
 * (edited on any laptop): lines ending in LF or CRLF, a line whose first
 * non-blank is '#' a comment, the rest read as one command line that adds
 * to the kernel's. Only rescue.* (not rescue.stick or rescue.iso), ip=,
 * nameserver=, vlan= and ifname= are taken, anything else is named and left out; a
 * parameter the kernel's line set is left as the kernel set it; each name
 * taken is a line of DIR/stick-taken. A file over MAX_LINE bytes gives
 * nothing.
 *
 * usage: cmdline [--dir DIR] [--stick] [FILE]    (defaults: /run/extrescue, /proc/cmdline)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/kargs.h"
#include "../lib/text.h"
#include "../lib/netargs.h"
#include "../lib/sshkey.h"

#define MAX_LINE 8192	/* x86 passes at most 2048; be generous, then stop */
#define MAX_VALUE 1024
#define MAX_REPEAT 16	/* values of one repeatable parameter */

enum kind { WORD, NUMBER, NAMES, DEVICE, KEYFILE, SSHKEY, URL, BASE_URL, PATH, SYSLOG };

static const struct param {
	const char *key;
	enum kind kind;
	const char *words;	/* WORD: the accepted values, '|'-separated */
	long min, max;		/* NUMBER: the range accepted */
	int repeat;		/* may be given more than once */
} params[] = {
	{"fsck", WORD, "report|check|repair", 0, 0, 0},
	{"devices", NAMES, NULL, 0, 0, 0},
	{"undo", DEVICE, NULL, 0, 0, 0},
	{"scratch", DEVICE, NULL, 0, 0, 0},
	{"after", WORD, "shell|poweroff|reboot", 0, 0, 0},
	{"settle", NUMBER, NULL, 0, 3600, 0},
	{"assemble", WORD, "ro|rw", 0, 0, 0},
	{"keyfile", KEYFILE, NULL, 0, 0, 0},
	{"timeout", NUMBER, NULL, 1, 86400, 0},
	{"progress", NUMBER, NULL, 1, 86400, 0},
	{"ssh_key", SSHKEY, NULL, 0, 0, 1},
	{"ssh_key_insecure", WORD, "0|1", 0, 0, 0},
	{"report", URL, NULL, 0, 0, 0},
	/* A Prometheus Pushgateway; a syslog server as HOST[:PORT][,tcp|,udp]. */
	{"metrics", BASE_URL, NULL, 0, 0, 0},
	{"syslog", SYSLOG, NULL, 0, 0, 0},
	{"smoke", NUMBER, NULL, 1, 600, 0},
	{"smoke_timeout", NUMBER, NULL, 1, 86400, 0},
	{"scsi_timeout", NUMBER, NULL, 1, 600, 0},
	{"stick", DEVICE, NULL, 0, 0, 0},
	/* The ISO file a multi-boot stick's GRUB loop-mounted ($iso_path). */
	{"iso", PATH, NULL, 0, 0, 0},
};

static const char *dir = "/run/extrescue";
/* Reading the stick's file, not the kernel's line (see the top). */
static int stick;
/* The network parameters the stick may set (not BOOTIF=: a PXE loader's). */
static const char *const stick_net[] = {"ip", "nameserver", "vlan", "ifname"};

static int one_of(const char *v, const char *words)
{
	size_t n = strlen(v);

	for (const char *w = words; *w;) {
		size_t len = strcspn(w, "|");

		if (len == n && !strncmp(w, v, n))
			return 1;
		w += len + (w[len] == '|');
	}
	return 0;
}

/* An http:// URL whose path may be left out (http://HOST:PORT). */
static const char *base_url_check(const char *v)
{
	char url[MAX_VALUE + 16];

	/* A query or fragment would be dropped from the push's path, or worse kept. */
	if (strpbrk(v, "?#"))
		return "holds ? or #: name the Pushgateway as http://HOST[:PORT][/PATH]";
	if (strncmp(v, "http://", 7) || strchr(v + 7, '/'))
		return url_check(v);
	snprintf(url, sizeof(url), "%s/", v);
	return url_check(url);
}

/* HOST[:PORT][,tcp|,udp]: the host and port as an http:// URL's would be. */
static const char *syslog_check(const char *v)
{
	char url[MAX_VALUE + 16];
	size_t n = strcspn(v, ",");

	if (v[n] && strcmp(v + n, ",tcp") && strcmp(v + n, ",udp"))
		return "is not HOST[:PORT][,tcp|,udp]";
	if (memchr(v, '/', n) || n > MAX_VALUE)
		return "is not HOST[:PORT][,tcp|,udp]";
	snprintf(url, sizeof(url), "http://%.*s/", (int) n, v);
	return url_check(url) ? "is not HOST[:PORT][,tcp|,udp]" : NULL;
}

/* NULL when VALUE suits P, else why not. */
static const char *judge(const struct param *p, const char *v)
{
	char *end;
	long n;

	if (strlen(v) > MAX_VALUE)
		return "is longer than 1024 characters";
	if (!text_printable(v))
		return "holds control characters";
	switch (p->kind) {
	case WORD:
		return one_of(v, p->words) ? NULL : "is not one of the accepted values";
	case NUMBER:
		errno = 0;
		n = strtol(v, &end, 10);
		return (!*v || *end || errno || n < p->min || n > p->max) ? "is not a number in range" : NULL;
	case NAMES:
		/* Device names, comma-separated, none empty. */
		if (!*v || *v == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
			return "has an empty device name";
		return NULL;
	case DEVICE:
		return *v ? NULL : "is empty";
	case KEYFILE:
		return (strchr(v, ':') && *v != ':' && v[strlen(v) - 1] != ':') ? NULL : "is not DEVICE:PATH";
	case SSHKEY:
		/* A key, or where to fetch an authorized_keys file from. */
		return strstr(v, "://") ? keyurl_check(v, NULL, 0, NULL) : sshkey_check(v);
	case URL:
		return url_check(v);
	case BASE_URL:
		return base_url_check(v);
	case SYSLOG:
		return syslog_check(v);
	case PATH:
		/* Shown and compared, never opened outside the stick's tree. */
		if (*v != '/' || strstr(v, "/../") || (strlen(v) >= 3 && !strcmp(v + strlen(v) - 3, "/..")))
			return "is not an absolute path without ..";
		return NULL;
	}
	return "is not understood";
}

static void warn(const char *prefix, const char *key, const char *value, const char *why)
{
	/* Shown, not trusted: at most 40 characters, controls as '?'. */
	char shown[41] = "";

	if (value)
		text_shown(shown, sizeof(shown), value, 40, 0);
	fprintf(stderr, "extrescue: %s%s%s%s%s %s; ignored\n", prefix, key, value ? "=" : "", shown,
		value && strlen(value) > 40 ? "..." : "", why);
}

static void save(const char *file, const char *value, const char *mode)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, mode);
	if (!f) {
		fprintf(stderr, "extrescue: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "%s%s", value, *mode == 'a' ? "\n" : "");
	fclose(f);
}

/* How many values FILE already took; the first call for a file counts 1. */
static int count(const char *file)
{
	static char seen[8][32];
	static int times[8];

	for (int i = 0; i < 8; i++) {
		if (!seen[i][0])
			snprintf(seen[i], sizeof(seen[i]), "%s", file);
		if (!strcmp(seen[i], file))
			return ++times[i];
	}
	return MAX_REPEAT + 1;
}

/* In --stick mode: whether PARAM may come from the stick; says why not. */
static int stick_may(const char *param)
{
	for (size_t i = 0; i < sizeof(stick_net) / sizeof(stick_net[0]); i++)
		if (!strcmp(param, stick_net[i]))
			return 1;
	/* rescue.stick and rescue.iso say where this boot came from: the boot
	 * loader's to say, not the stick's. */
	if (!strncmp(param, "rescue.", 7) && strcmp(param, "rescue.stick") && strcmp(param, "rescue.iso"))
		return 1;
	fprintf(stderr, "extrescue: the stick's cmdline may not set %.40s%s; left out\n",
		text_printable(param) ? param : "?", strlen(param) > 40 ? "..." : "");
	return 0;
}

/* In --stick mode: whether FILE (param/KEY, net/NAME) may take PARAM's value
 * from the stick: not when the kernel's line set it, which is said once. */
static int stick_takes(const char *file, const char *param)
{
	static char mine[32][32], theirs[32][32];
	char path[512];
	struct stat st;
	int i;

	for (i = 0; i < 32 && mine[i][0]; i++)
		if (!strcmp(mine[i], file))
			return 1;
	for (int j = 0; j < 32 && theirs[j][0]; j++)
		if (!strcmp(theirs[j], file))
			return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (!stat(path, &st)) {
		for (int j = 0; j < 32; j++)
			if (!theirs[j][0]) {
				snprintf(theirs[j], sizeof(theirs[j]), "%s", file);
				break;
			}
		fprintf(stderr, "extrescue: the stick's %s= is left out: the boot command line sets it\n", param);
		return 0;
	}
	if (i == 32)
		return 0;
	snprintf(mine[i], sizeof(mine[i]), "%s", file);
	save("stick-taken", param, "a");
	return 1;
}

static void take_net(const char *param, const char *value)
{
	char line[NETARGS_LINE], file[64];
	const char *why;

	if (!value) {
		warn("", param, NULL, "has no value");
		return;
	}
	why = text_printable(value) ? netarg_parse(param, value, line, sizeof(line)) : "holds control characters";
	if (why) {
		warn("", param, value, why);
		return;
	}
	snprintf(file, sizeof(file), "net/%s", param);
	if (!*line)
		return;
	if (stick && !stick_takes(file, param))
		return;
	if (count(file) > MAX_REPEAT) {
		warn("", param, value, "is one too many (at most 16)");
		return;
	}
	save(file, line, "a");
}

static void take(char *param, char *value)
{
	static int keys_seen;
	char *key, label[32];

	if (stick && !stick_may(param))
		return;
	if (!strcmp(param, "console") && value) {
		if (text_printable(value) && strlen(value) <= 64)
			save("consoles", value, "a");
		return;
	}
	if (netarg_known(param)) {
		take_net(param, value);
		return;
	}
	if (strncmp(param, "rescue.", 7))
		return;
	key = param + 7;
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		const char *why;
		char file[64];

		if (strcmp(params[i].key, key))
			continue;
		if (!value) {
			warn("rescue.", key, NULL, "has no value");
			return;
		}
		if (params[i].kind == SSHKEY)
			keys_seen++;
		if ((why = judge(&params[i], value))) {
			/* Key text is not repeated: messages go into the report. */
			if (params[i].kind == SSHKEY && !strstr(value, "://")) {
				snprintf(label, sizeof(label), "<key %d>", keys_seen);
				value = label;
			}
			warn("rescue.", key, value, why);
			return;
		}
		snprintf(file, sizeof(file), "param/%s", key);
		if (stick && !stick_takes(file, param))
			return;
		if (params[i].repeat && count(file) > MAX_REPEAT) {
			warn("rescue.", key, value, "is one too many (at most 16)");
			return;
		}
		save(file, value, params[i].repeat ? "a" : "w");
		return;
	}
	warn("rescue.", key[0] && strlen(key) < 32 && text_printable(key) ? key : "?", NULL,
	     "is not a parameter extrescue knows");
}

/* Every parameter of LINE, a NUL-terminated command line (split in place). */
static void take_all(char *line)
{
	for (char *s = line + strspn(line, " \t\n"); *s;) {
		char *param, *value;

		s = kargs_next(s, &param, &value);
		if (*param)
			take(param, value);
	}
}

#ifndef FUZZING
/* The stick's file as one line, in place: comment lines blanked, the line
 * ends (CR and LF) made spaces. */
static void uncomment(char *text)
{
	for (char *line = text; *line;) {
		char *end = line + strcspn(line, "\n");
		char *first = line + strspn(line, " \t\r");

		if (*first == '#')
			memset(line, ' ', end - line);
		for (char *c = line; c < end; c++)
			if (*c == '\r')
				*c = ' ';
		if (!*end)
			break;
		*end = ' ';
		line = end + 1;
	}
}

int main(int argc, char **argv)
{
	const char *file = "/proc/cmdline";
	static char line[MAX_LINE + 1];
	char path[512];
	size_t n;
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--stick"))
			stick = 1;
		else
			file = argv[i];
	}
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/param", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/net", dir);
	mkdir(path, 0755);
	/* What is appended to starts empty; the stick adds to the kernel's. */
	for (const char *const *f = stick ? (const char *const[]){"stick-taken", NULL} :
	     (const char *const[]){"consoles", "param/ssh_key", "net/ip",
		"net/nameserver", "net/vlan", "net/ifname", "stick-taken", NULL}; *f; f++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *f);
		remove(path);
	}
	f = fopen(file, "r");
	if (!f) {
		fprintf(stderr, "extrescue: cannot read %s: %s; no parameters taken\n", file, strerror(errno));
		return 0;
	}
	n = fread(line, 1, MAX_LINE + 1, f);
	fclose(f);
	if (stick && n > MAX_LINE) {
		fprintf(stderr, "extrescue: the stick's cmdline is larger than %d bytes; none of it is taken\n", MAX_LINE);
		return 0;
	}
	n = n > MAX_LINE ? MAX_LINE : n;
	line[n] = 0;
	if (stick) {
		if (memchr(line, 0, n)) {
			fprintf(stderr, "extrescue: the stick's cmdline is not text (it holds NUL bytes); none of it is taken\n");
			return 0;
		}
		uncomment(line);
	}
	take_all(line);
	return 0;
}
#endif
