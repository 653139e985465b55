/*
 * report --metrics: the report's facts in Prometheus' text format, for
 * rescue.metrics= (report/metrics adds `extscan --metrics` for the volumes
 * and pushes both to a Pushgateway, grouped by machine). Each family is
 * written whole, one series a volume or disk: a family split in two, or a
 * series twice, would make the Pushgateway refuse the whole push.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "../lib/promtext.h"
#include "report.h"

/* rescue-fsck's records, the last one of each device kept. */
struct fsck_record {
	char mode[16], device[256];
	long status;		/* -1: skipped, e2fsck did not run */
	long seconds;
	int undo;
};

static int read_fsck(struct fsck_record *r)
{
	char *s = slurp("/run/extrescue/fsck.results"), *next;
	int n = 0;

	for (char *line = s; line && *line; line = next) {
		char *f[8] = {0}, *end;
		int i;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (fsck_fields(line, f) < 5)
			continue;
		for (i = 0; i < n && strcmp(r[i].device, f[1]); i++)
			;
		if (i == n && n == MAX_ITEMS)
			continue;
		n += i == n;
		snprintf(r[i].mode, sizeof(r[i].mode), "%s", f[0]);
		snprintf(r[i].device, sizeof(r[i].device), "%s", f[1]);
		r[i].status = strtol(f[2], &end, 10);
		if (!*f[2] || *end || strspn(f[2], "0123456789") != strlen(f[2]) || strlen(f[2]) > 9)
			r[i].status = -1;
		r[i].seconds = strtol(f[3], NULL, 10);
		r[i].undo = *f[4] && strcmp(f[4], "-");
	}
	free(s);
	return n;
}

static void fsck_series(const char *name, const struct fsck_record *r, long value)
{
	printf("%s{device=", name);
	prom_value(r->device, 256);
	printf(",mode=");
	prom_value(r->mode, 16);
	printf("} %ld\n", value);
}

/* e2fsck's exit status in families an alert can use (e2fsck(8)): 1 and 2
 * errors corrected, 4 errors left, 8 and up the check did not finish. */
static void fsck_metrics(void)
{
	static struct fsck_record r[MAX_ITEMS];
	int n = read_fsck(r);

	prom_family("extrescue_fsck_completed", "gauge",
		    "1 when e2fsck ran to its end on the volume (exit status below 8); 0 when skipped or failed.");
	for (int i = 0; i < n; i++)
		fsck_series("extrescue_fsck_completed", &r[i], r[i].status >= 0 && r[i].status < 8);
	prom_family("extrescue_fsck_exit_status", "gauge", "e2fsck's exit status (absent when it did not run).");
	for (int i = 0; i < n; i++)
		if (r[i].status >= 0)
			fsck_series("extrescue_fsck_exit_status", &r[i], r[i].status);
	prom_family("extrescue_fsck_errors_corrected", "gauge", "1 when e2fsck corrected errors (exit status 1 or 2).");
	for (int i = 0; i < n; i++)
		fsck_series("extrescue_fsck_errors_corrected", &r[i], r[i].status > 0 && (r[i].status & 3));
	prom_family("extrescue_fsck_errors_uncorrected", "gauge",
		    "1 when errors are left on the volume (exit status 4: a check found them, or a repair could not fix them).");
	for (int i = 0; i < n; i++)
		fsck_series("extrescue_fsck_errors_uncorrected", &r[i], r[i].status > 0 && (r[i].status & 4));
	prom_family("extrescue_fsck_duration_seconds", "gauge", "How long e2fsck ran on the volume.");
	for (int i = 0; i < n; i++)
		fsck_series("extrescue_fsck_duration_seconds", &r[i], r[i].seconds);
	prom_family("extrescue_fsck_undo_kept", "gauge", "1 when an undo file of the repair was kept.");
	for (int i = 0; i < n; i++)
		fsck_series("extrescue_fsck_undo_kept", &r[i], r[i].undo);
}

static void disk_series(const char *name, const char *disk, long long value)
{
	printf("%s{disk=", name);
	prom_value(disk, 64);
	printf("} %lld\n", value);
}

/* A health count family: only the disks whose firmware keeps that count. */
static void disk_counts(const char *name, const char *help, const struct disk_health *h, int n, size_t field)
{
	prom_family(name, "gauge", help);
	for (int i = 0; i < n; i++) {
		long long v = *(const long long *) ((const char *) &h[i] + field);

		if (v >= 0)
			disk_series(name, h[i].name, v);
	}
}

static void disk_metrics(void)
{
	static char n[MAX_NAMES][64];
	static struct disk_health all[MAX_ITEMS], h[MAX_ITEMS];
	int count = names("/sys/class/block", n), nall = read_health(all), nh = 0;

	/* The disks there now; a health line of a disk that went is left out. */
	for (int i = 0; i < count && nh < MAX_ITEMS; i++)
		if (whole_disk(n[i])) {
			const struct disk_health *known = health_of(all, nall, n[i]);

			if (known)
				h[nh] = *known;
			else
				h[nh] = (struct disk_health){.reallocated = -1, .pending = -1, .media = -1, .io_errors = -1};
			snprintf(h[nh].name, sizeof(h[nh].name), "%.63s", n[i]);
			nh++;
		}
	prom_family("extrescue_disk_info", "gauge", "A whole disk the kernel found, with its model.");
	for (int i = 0; i < nh; i++) {
		char path[160], *model;

		snprintf(path, sizeof(path), "/sys/class/block/%.63s/device/model", h[i].name);
		model = slurp(path);
		if (model)
			model[strcspn(model, "\n")] = 0;
		printf("extrescue_disk_info{disk=");
		prom_value(h[i].name, 64);
		printf(",model=");
		prom_value(model ? model + strspn(model, " ") : "", 64);
		printf("} 1\n");
		free(model);
	}
	prom_family("extrescue_disk_health_ok", "gauge",
		    "1 when the disk's SMART or NVMe health says passed, 0 when failed (absent: no answer).");
	for (int i = 0; i < nh; i++)
		if (h[i].health[0])
			disk_series("extrescue_disk_health_ok", h[i].name, !strcmp(h[i].health, "passed"));
	disk_counts("extrescue_disk_reallocated_sectors", "Sectors the disk has reallocated (ATA attribute 5, SCSI grown defects).",
		    h, nh, offsetof(struct disk_health, reallocated));
	disk_counts("extrescue_disk_pending_sectors", "Sectors waiting to be reallocated (ATA attribute 197).",
		    h, nh, offsetof(struct disk_health, pending));
	disk_counts("extrescue_disk_media_errors", "NVMe media and data integrity errors.",
		    h, nh, offsetof(struct disk_health, media));
	prom_family("extrescue_disk_io_errors_total", "counter",
		    "I/O errors the kernel logged for the disk since the boot (rate-limited: at least that many).");
	for (int i = 0; i < nh; i++)
		if (h[i].io_errors >= 0)
			disk_series("extrescue_disk_io_errors_total", h[i].name, h[i].io_errors);
}

/* Lines in ROOT/PATH (bounded by slurp). */
static int lines_in(const char *path)
{
	char *s = slurp(path);
	int n = 0;

	for (char *p = s; p && *p; p++)
		n += *p == '\n' || (!p[1] && *p != '\n');
	free(s);
	return n;
}

static void first_line_value(const char *path, size_t limit)
{
	char *s = slurp(path);

	if (s)
		s[strcspn(s, "\n")] = 0;
	prom_value(s ? s : "", limit);
	free(s);
}

static void boot_metrics(void)
{
	char id[MACHINE_ID], *os = slurp("/etc/os-release"), *v = os ? strstr(os, "VERSION_ID=") : NULL, *up;
	struct utsname uts;

	if (v) {
		v += 11;
		v[strcspn(v, "\n")] = 0;
	}
	prom_family("extrescue_build_info", "gauge", "The rescue image that ran: its version, kernel and architecture.");
	printf("extrescue_build_info{version=");
	prom_value(v ? v : "", 64);
	printf(",kernel=");
	first_line_value("/proc/sys/kernel/osrelease", 64);
	printf(",architecture=");
	prom_value(uname(&uts) == 0 ? uts.machine : "", 32);
	printf("} 1\n");
	free(os);
	machine_id(id, sizeof(id));
	prom_family("extrescue_machine_info", "gauge", "The machine as its firmware names it.");
	printf("extrescue_machine_info{id=\"%s\",vendor=", id);
	first_line_value("/sys/class/dmi/id/sys_vendor", 64);
	printf(",product=");
	first_line_value("/sys/class/dmi/id/product_name", 64);
	printf(",serial=");
	first_line_value("/sys/class/dmi/id/product_serial", 64);
	printf("} 1\n");
	up = slurp("/proc/uptime");
	prom_family("extrescue_boot_duration_seconds", "gauge",
		    "Seconds from the kernel's start to the report: the boot and its unattended work.");
	printf("extrescue_boot_duration_seconds %.2f\n", up ? strtod(up, NULL) : 0.0);
	free(up);
	prom_family("extrescue_boot_errors", "gauge",
		    "Problems the boot met: parameters refused, network or SSH set-up, a report not sent.");
	printf("extrescue_boot_errors %d\n", lines_in("/run/extrescue/errors"));
}

void print_metrics(void)
{
	boot_metrics();
	fsck_metrics();
	disk_metrics();
}
