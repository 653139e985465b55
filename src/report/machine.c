/*
 * The name a fleet knows a machine by, and its disks' health as
 * disks/health wrote it: the two facts the report and the metrics share.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../lib/kargs.h"
#include "report.h"

/* Serial numbers firmware ships when nobody set one: as a name they would
 * put a whole fleet under one machine. */
static int unset_serial(const char *s)
{
	static const char *const words[] = {
		"none", "n/a", "na", "not specified", "not applicable", "not available", "unknown", "invalid",
		"default string", "to be filled by o.e.m.", "system serial number", "chassis serial number",
		"serial number", "0123456789", "1234567890", "123456789",
	};
	size_t n = strlen(s), same = strspn(s, (char[]){s[0], 0});

	if (!n || same == n)	/* empty, or one character repeated: 0000, FFFF, ... */
		return 1;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcasecmp(s, words[i]))
			return 1;
	return 0;
}

/* The first line of ROOT/PATH, blanks trimmed, into OUT; "" if absent. */
static void first_line(const char *path, char *out, size_t size)
{
	char *s = slurp(path), *p;
	size_t n;

	out[0] = 0;
	if (!s)
		return;
	p = s + strspn(s, " \t");
	n = strcspn(p, "\n");
	while (n && isspace((unsigned char) p[n - 1]))
		n--;
	if (n >= size)
		n = size - 1;
	memcpy(out, p, n);
	out[n] = 0;
	free(s);
}

/* BOOTIF=01-aa-bb-cc-dd-ee-ff (PXE's booting NIC) as aa:bb:cc:dd:ee:ff. */
static int boot_mac(char *out, size_t size)
{
	char *line = slurp("/proc/cmdline"), *param, *value;
	int found = 0;

	for (char *w = line; w && *w && !found;) {
		w = kargs_next(w, &param, &value);
		if (strcmp(param, "BOOTIF") || !value || strlen(value) != 20 || strncmp(value, "01-", 3))
			continue;
		found = 1;
		for (int i = 3; i < 20; i++)
			if (i % 3 == 2 ? value[i] != '-' : !isxdigit((unsigned char) value[i]))
				found = 0;
		if (found && size > 17) {
			for (int i = 0; i < 17; i++)
				out[i] = value[i + 3] == '-' ? ':' : (char) tolower((unsigned char) value[i + 3]);
			out[17] = 0;
		}
	}
	free(line);
	return found && size > 17;
}

/* The first interface (by name) with a MAC that is not all zeros. */
static void first_mac(char *out, size_t size)
{
	static char n[MAX_NAMES][64];
	int count = names("/sys/class/net", n);
	char path[128];

	out[0] = 0;
	for (int i = 0; i < count && !out[0]; i++) {
		snprintf(path, sizeof(path), "/sys/class/net/%.63s/address", n[i]);
		first_line(path, out, size);
		if (strspn(out, "0:") == strlen(out))
			out[0] = 0;
	}
}

/*
 * The DMI serial number unless it is absent or one firmware ships unset, else the
 * booting NIC's MAC, else the first NIC's, else the host name; only
 * [A-Za-z0-9._:-] kept (the rest '_'), as it becomes a label, a syslog
 * HOSTNAME and a file name.
 */
void machine_id(char *out, size_t size)
{
	char raw[256];

	first_line("/sys/class/dmi/id/product_serial", raw, sizeof(raw));
	if (unset_serial(raw) && !boot_mac(raw, sizeof(raw))) {
		first_mac(raw, sizeof(raw));
		if (!raw[0])
			first_line("/proc/sys/kernel/hostname", raw, sizeof(raw));
	}
	snprintf(out, size, "%s", raw[0] ? raw : "unknown");
	for (char *p = out; *p; p++)
		if (!isalnum((unsigned char) *p) && !strchr("._:-", *p))
			*p = '_';
}

/* A count from disks/health, or -1 for "-" and anything not a number. */
static long long count_of(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n && !s[n] && n <= 15 ? strtoll(s, NULL, 10) : -1;
}

/* /run/extrescue/report/health: NAME HEALTH REALLOCATED PENDING MEDIA IO,
 * tab-separated (disks/health). Returns how many disks it names. */
int read_health(struct disk_health h[MAX_ITEMS])
{
	char *s = slurp("/run/extrescue/report/health"), *next;
	int n = 0;

	for (char *line = s; line && *line && n < MAX_ITEMS; line = next) {
		char *f[6];
		int k = 0;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		for (char *p = line; k < 6 && p; k++) {
			f[k] = p;
			p = strchr(p, '\t');
			if (p)
				*p++ = 0;
		}
		if (k < 6 || strlen(f[0]) >= sizeof(h[n].name))
			continue;
		strcpy(h[n].name, f[0]);
		snprintf(h[n].health, sizeof(h[n].health), "%s",
			 !strcmp(f[1], "passed") || !strcmp(f[1], "failed") ? f[1] : "");
		h[n].reallocated = count_of(f[2]);
		h[n].pending = count_of(f[3]);
		h[n].media = count_of(f[4]);
		h[n].io_errors = count_of(f[5]);
		n++;
	}
	free(s);
	return n;
}

const struct disk_health *health_of(const struct disk_health *h, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(h[i].name, name))
			return &h[i];
	return NULL;
}
