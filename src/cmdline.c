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
 * usage: cmdline [--dir DIR] [FILE]    (defaults: /run/extrescue, /proc/cmdline)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kargs.h"
#include "text.h"
#include "netargs.h"
#include "sshkey.h"

#define MAX_LINE 8192	/* x86 passes at most 2048; be generous, then stop */
#define MAX_VALUE 1024
#define MAX_REPEAT 16	/* values of one repeatable parameter */

enum kind { WORD, NUMBER, NAMES, DEVICE, KEYFILE, SSHKEY, URL };

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
	{"smoke", NUMBER, NULL, 1, 600, 0},
};

static const char *dir = "/run/extrescue";

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
		else
			file = argv[i];
	}
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/param", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/net", dir);
	mkdir(path, 0755);
	/* What is appended to starts empty. */
	for (const char *const *f = (const char *const[]){"consoles", "param/ssh_key", "net/ip",
		"net/nameserver", "net/vlan", "net/ifname", NULL}; *f; f++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *f);
		remove(path);
	}
	f = fopen(file, "r");
	if (!f) {
		fprintf(stderr, "extrescue: cannot read %s: %s; no parameters taken\n", file, strerror(errno));
		return 0;
	}
	n = fread(line, 1, MAX_LINE, f);
	fclose(f);
	line[n] = 0;
	take_all(line);
	return 0;
}
#endif
