/* iobench's results: collected as the matrix runs, printed at the end as one
 * table (with the reference ratios beside ours) or as JSON. */
#ifndef IOBENCH_REPORT_H
#define IOBENCH_REPORT_H
#include <stdint.h>
#include <stdio.h>

#include "iobench-work.h"

enum workload { W_SEQ, W_CHUNKS, W_READ, W_PARALLEL, WORKLOADS };
extern const char *const workload_name[WORKLOADS];

struct config {
	const char *name;	/* for --configs and JSON */
	const char *label;	/* for the table */
	const char *mkfs_type;	/* NULL: the raw device */
	const char *features;	/* extra mke2fs -O */
	const char *fstype;
	const char *mount_opts;
	int ext_journal;
	int direct;		/* the raw device with O_DIRECT */
};

struct options {
	const char *dev, *journal_dev;
	uint64_t dev_size, journal_size;
	uint64_t seq_size, read_size, per_proc;
	uint32_t block, chunks, chunk_size, procs;
	unsigned workloads, sync_modes;
	int json, force;
};

void report_begin(const struct options *o);
/* SYNC is the chunk variant, or -1 for the other workloads. */
void report_add(const struct config *c, enum workload w, int sync, const struct work_result *r);
void report_print(FILE *f);

#endif
