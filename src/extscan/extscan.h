/*
 * What the parts of extscan share: one device's result, the options, and
 * what the running kernel's ext4 supports. extscan.c runs the scan;
 * read.c reads and judges each device; system.c asks sysfs; print.c prints
 * the table and JSON.
 */
#ifndef EXTSCAN_H
#define EXTSCAN_H
#include <stddef.h>
#include <stdint.h>

#include "../lib/extsb.h"
#include "../lib/layout.h"

#define READ_TIMEOUT 5	/* seconds per device */

struct result {
	char dev[512];
	unsigned long long bytes;
	int ok;			/* superblock parsed */
	int not_ext;		/* readable, but not ext2/3/4: left out */
	unsigned long long backup;	/* block of the backup used when the primary is damaged */
	int primary_magic;	/* the primary superblock has the ext magic, valid or not */
	int named;		/* named on the command line: always a row */
	char error[96];		/* why it could not be read */
	struct layout member;	/* what the device belongs to: assemble that first */
	struct extsb sb;
	char mounted_rw[200];	/* where it is mounted read-write (an undo or scratch disk) */
	char twin[512];		/* another device with the same filesystem UUID (a clone) */
	char journal[512];	/* its external journal's device, or the volume whose journal it is */
	int journal_missing;	/* its external journal is on no device here (1) or on several (2) */
};

/* The options (extscan.c) and the running kernel's ext4 (system.c). */
extern int verbose, wide, json, metrics, list_only, member_only, journal_only;
extern struct extsb_support kernel;

/* read.c */
void scan(const char *path, struct result *r);

/* system.c */
void sysfs_attr(const char *name, const char *attr, char *out, size_t size);
int list_devices(char ***out);
void kernel_name(const char *path, char *out, size_t size);
int parent_disk(const char *name, char *out, size_t size);
void system_layout(const char *name, struct layout *l);
void disk_identity(const char *name, char *out, size_t size);
int cmp_str(const void *a, const void *b);
void probe_kernel(void);

/* print.c */
void uuid_text(const uint8_t *u, char *out);
const char *journal_text(const struct result *r);
int shown(const struct result *r);
void print_json(struct result *r, int n);

/* metrics.c */
void print_metrics(struct result *r, int n);
void print_table(struct result *r, int n);
#endif
