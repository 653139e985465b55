/*
 * extscan --metrics: each ext volume's facts in Prometheus' text format, for
 * rescue.metrics= (report/metrics pushes them beside the report's own). One
 * family after the other, each volume a series labelled by its device, so an
 * alert can name the volume; the volume's label and UUID are in _info alone.
 */
#include <stdio.h>
#include <string.h>

#include "../lib/promtext.h"
#include "extscan.h"

/* The volumes a series is about: readable ext filesystems (not members,
 * not an external journal, which is its volume's part). */
static int volume(const struct result *r)
{
	return shown(r) && r->member.kind == LAYOUT_NONE && r->ok && strcmp(extsb_kind(&r->sb), "journal");
}

static void series(const char *name, const struct result *r, const char *more, double value)
{
	printf("%s{device=", name);
	prom_value(r->dev, 256);
	printf("%s} %.17g\n", more ? more : "", value);
}

static void volume_info(const struct result *r)
{
	char uuid[40];

	uuid_text(r->sb.uuid, uuid);
	printf("extrescue_volume_info{device=");
	prom_value(r->dev, 256);
	printf(",label=");
	prom_value(r->sb.label, 64);
	printf(",uuid=\"%s\",kind=\"%s\"} 1\n", uuid, extsb_kind(&r->sb));
}

void print_metrics(struct result *r, int n)
{
	static const char *const access[] = {"rw", "ro", "none"};
	char blk[96];

	prom_family("extrescue_volume_info", "gauge", "An ext volume found on this machine, with its label and UUID.");
	for (int i = 0; i < n; i++)
		if (volume(&r[i]))
			volume_info(&r[i]);
	prom_family("extrescue_volume_size_bytes", "gauge", "The volume's device size.");
	for (int i = 0; i < n; i++)
		if (volume(&r[i]))
			series("extrescue_volume_size_bytes", &r[i], NULL, (double) r[i].bytes);
	prom_family("extrescue_volume_clean", "gauge",
		    "1 when the superblock says clean: no errors, no journal to replay, no orphans.");
	for (int i = 0; i < n; i++)
		if (volume(&r[i])) {
			char st[128];

			extsb_state(&r[i].sb, st, sizeof(st));
			series("extrescue_volume_clean", &r[i], NULL, !r[i].backup && !strcmp(st, "clean"));
		}
	prom_family("extrescue_volume_errors_recorded", "gauge", "1 when the kernel recorded errors in the superblock.");
	for (int i = 0; i < n; i++)
		if (volume(&r[i]))
			series("extrescue_volume_errors_recorded", &r[i], NULL,
			       (r[i].sb.state & 2) || r[i].sb.error_count);
	prom_family("extrescue_volume_needs_recovery", "gauge", "1 when the journal holds transactions to replay.");
	for (int i = 0; i < n; i++)
		if (volume(&r[i]))
			series("extrescue_volume_needs_recovery", &r[i], NULL, (r[i].sb.incompat & 0x0004) != 0);
	prom_family("extrescue_volume_primary_superblock_damaged", "gauge",
		    "1 when the primary superblock is damaged and a backup was read.");
	for (int i = 0; i < n; i++)
		if (volume(&r[i]))
			series("extrescue_volume_primary_superblock_damaged", &r[i], NULL, r[i].backup != 0);
	/* A state set: one series per answer, 1 on the one that holds. */
	prom_family("extrescue_volume_mount_access", "gauge",
		    "How this medium's kernel can mount the volume: rw, ro or none (1 on the one that holds).");
	for (int i = 0; i < n; i++)
		if (volume(&r[i])) {
			enum extsb_access a = extsb_access(&r[i].sb, &kernel, blk, sizeof(blk));
			int held = a == EXTSB_RW ? 0 : a == EXTSB_RO ? 1 : 2;

			for (int k = 0; k < 3; k++) {
				char more[32];

				snprintf(more, sizeof(more), ",access=\"%s\"", access[k]);
				series("extrescue_volume_mount_access", &r[i], more, k == held);
			}
		}
	prom_family("extrescue_volume_needs_newer_kernel", "gauge",
		    "1 when the volume has features newer than this medium's kernel knows.");
	for (int i = 0; i < n; i++)
		if (volume(&r[i]))
			series("extrescue_volume_needs_newer_kernel", &r[i], NULL, extsb_needs_newer(&r[i].sb, &kernel));
	prom_family("extrescue_volume_checkable", "gauge", "1 when this medium's e2fsck can check the volume.");
	for (int i = 0; i < n; i++)
		if (volume(&r[i]))
			series("extrescue_volume_checkable", &r[i], NULL,
			       extsb_access(&r[i].sb, &extsb_e2fsck, blk, sizeof(blk)) != EXTSB_NONE);
	/* A device whose superblock does not read is as alarming as a damaged one. */
	prom_family("extrescue_device_read_error", "gauge",
		    "1 for a device extscan could not read (its error is in the report's extscan list).");
	for (int i = 0; i < n; i++)
		if (shown(&r[i]) && r[i].member.kind == LAYOUT_NONE && !r[i].ok)
			series("extrescue_device_read_error", &r[i], NULL, 1);
	prom_family("extrescue_volume_last_check_timestamp_seconds", "gauge",
		    "When e2fsck last checked the volume whole, as the superblock says (absent: never).");
	for (int i = 0; i < n; i++)
		if (volume(&r[i]) && r[i].sb.lastcheck > 0)
			series("extrescue_volume_last_check_timestamp_seconds", &r[i], NULL, (double) r[i].sb.lastcheck);
}
