/* report's parts: the JSON document (report.c), the machine's name and its
 * disks' health (machine.c), the metrics (metrics.c). */
#ifndef REPORT_H
#define REPORT_H

#include <stddef.h>

#define MAX_ITEMS 64		/* entries of a list in the report */
#define MAX_NAMES 1024		/* names read from a /sys folder, before they are picked */
#define MACHINE_ID 65		/* bytes of a machine's name, NUL included */

/* report.c */
extern const char *root;
char *slurp(const char *path);
int names(const char *dir, char out[][64]);
int exists(const char *fmt, const char *name);
int whole_disk(const char *name);
int fsck_fields(char *line, char *f[8]);

/* machine.c */
struct disk_health {
	char name[64];
	char health[8];		/* "passed", "failed", or "" (no answer) */
	long long reallocated, pending, media, io_errors;	/* -1: not known */
};
void machine_id(char *out, size_t size);
int read_health(struct disk_health h[MAX_ITEMS]);
const struct disk_health *health_of(const struct disk_health *h, int n, const char *name);

/* metrics.c */
void print_metrics(void);

#endif
