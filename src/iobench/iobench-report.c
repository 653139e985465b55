/* Tables in the layout of the reference: one section per workload, each row
 * a configuration, MB/s, our ratio, and the reference's ratio for that row.
 * Ratios are to the raw device where the reference had one; the synchronous
 * chunk runs (a single disk, no raw figure) are relative to ext2 without sync,
 * and the parallel runs to ext2, so ours and theirs share a basis. */
#include <stdlib.h>
#include <string.h>

#include "iobench-report.h"

struct reference {
	enum workload w;
	const char *config;
	int sync;
	double lo, hi;		/* ratio */
	const char *mbps;	/* what the reference measured */
};

static const struct reference refs[] = {
	{W_SEQ, "raw", -1, 1.00, 1.00, "306-312"},
	{W_SEQ, "ext2", -1, 0.83, 0.87, "247-267"},
	{W_SEQ, "ext3-ordered", -1, 0.42, 0.47, "130-144"},
	{W_SEQ, "ext3-extents", -1, 0.70, 0.70, "214-216"},
	{W_CHUNKS, "ext2", SYNC_NONE, 1.00, 1.00, "83"},
	{W_CHUNKS, "ext2", SYNC_FDATASYNC, 0.39, 0.39, "32"},
	{W_CHUNKS, "ext2", SYNC_OSYNC, 0.39, 0.39, "32"},
	{W_CHUNKS, "ext2", SYNC_MOUNT, 0.28, 0.28, "23"},
	{W_CHUNKS, "ext3-writeback", SYNC_FSYNC, 0.84, 0.84, "70"},
	{W_CHUNKS, "ext3-ordered", SYNC_FSYNC, 0.72, 0.72, "60"},
	{W_CHUNKS, "ext3-journal", SYNC_FSYNC, 0.18, 0.18, "15"},
	{W_CHUNKS, "ext3-ordered", SYNC_FDATASYNC, 0.27, 0.27, "22"},
	{W_CHUNKS, "ext3-journal", SYNC_FDATASYNC, 0.20, 0.20, "17"},
};

/* The goals this project set itself, shown where there is no reference. */
static const struct reference goals[] = {
	{W_SEQ, "ext4", -1, 0.90, 0, NULL},
	{W_READ, "ext4", -1, 0.95, 0, NULL},
};

const char *const workload_name[WORKLOADS] = {"seq-write", "chunks", "read", "parallel"};

static const char *const basis_config[WORKLOADS] = {"raw", "ext2", "raw", "ext2"};
static const char *const basis_text[WORKLOADS] = {"the raw device", "ext2 without sync", "the raw device", "ext2"};

struct row {
	const struct config *c;
	enum workload w;
	int sync;
	struct work_result r;
};

static const struct options *opts;
static struct row *rows;
static size_t nrows;

void report_begin(const struct options *o)
{
	opts = o;
}

void report_add(const struct config *c, enum workload w, int sync, const struct work_result *r)
{
	struct row *grown = realloc(rows, (nrows + 1) * sizeof(*rows));
	if (!grown)
		abort();
	rows = grown;
	rows[nrows++] = (struct row){c, w, sync, *r};
}

static double mbps(const struct work_result *r)
{
	return r->seconds > 0 ? r->bytes / r->seconds / 1e6 : 0;
}

static const struct reference *find(const struct reference *t, size_t n, const struct row *row)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].w == row->w && t[i].sync == row->sync && !strcmp(t[i].config, row->c->name))
			return &t[i];
	return NULL;
}
#define FIND(t, row) find(t, sizeof(t) / sizeof(t[0]), row)

/* Our ratio for ROW, or a negative number when its basis was not measured. */
static double ratio(const struct row *row)
{
	int sync = row->w == W_CHUNKS ? SYNC_NONE : -1;
	for (size_t i = 0; i < nrows; i++)
		if (rows[i].w == row->w && rows[i].sync == sync && !strcmp(rows[i].c->name, basis_config[row->w]))
			return mbps(&rows[i].r) > 0 ? mbps(&row->r) / mbps(&rows[i].r) : -1;
	return -1;
}

static void reference_text(const struct row *row, char *out, size_t len)
{
	const struct reference *ref = FIND(refs, row), *goal = FIND(goals, row);
	if (ref && ref->lo != ref->hi)
		snprintf(out, len, "%.2f-%.2f (%s MB/s)", ref->lo, ref->hi, ref->mbps);
	else if (ref)
		snprintf(out, len, "%.2f (%s MB/s)", ref->lo, ref->mbps);
	else if (goal)
		snprintf(out, len, "goal >= %.2f", goal->lo);
	else
		snprintf(out, len, "-");
}

static void size_text(uint64_t bytes, char *out, size_t len)
{
	if (bytes % (1u << 30) == 0)
		snprintf(out, len, "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes % (1u << 20) == 0)
		snprintf(out, len, "%llu MiB", (unsigned long long)(bytes >> 20));
	else
		snprintf(out, len, "%llu KiB", (unsigned long long)(bytes >> 10));
}

static void print_table(FILE *f)
{
	char a[32], b[32], c[32];
	fprintf(f, "iobench on %s (%llu MiB)", opts->dev, (unsigned long long)(opts->dev_size >> 20));
	if (opts->journal_dev)
		fprintf(f, ", external journal on %s (%llu MiB)", opts->journal_dev,
			(unsigned long long)(opts->journal_size >> 20));
	fprintf(f, "; MB/s = 10^6 bytes/s\n");
	for (int w = 0; w < WORKLOADS; w++) {
		int any = 0;
		for (size_t i = 0; i < nrows; i++)
			any |= (int)rows[i].w == w;
		if (!any)
			continue;
		switch (w) {
		case W_SEQ:
			size_text(opts->seq_size, a, sizeof(a));
			size_text(opts->block, b, sizeof(b));
			fprintf(f, "\nSequential write: %s in %s writes, fsync included", a, b);
			break;
		case W_CHUNKS:
			size_text(opts->chunk_size, a, sizeof(a));
			fprintf(f, "\nSynchronous chunks: %u files of %s, each open/write/sync/close", opts->chunks, a);
			break;
		case W_READ:
			size_text(opts->read_size, a, sizeof(a));
			fprintf(f, "\nLarge-file read with md5: %s, caches dropped first", a);
			break;
		case W_PARALLEL:
			size_text(opts->per_proc, a, sizeof(a));
			fprintf(f, "\nParallel: %u processes each writing %s in files read back; MB/s of writes + reads",
				opts->procs, a);
			break;
		}
		fprintf(f, "; ratio to %s\n", basis_text[w]);
		fprintf(f, "  %-29s %-10s %9s %8s %6s  %s\n", "configuration", w == W_CHUNKS ? "sync" : "",
			"seconds", "MB/s", "ratio", w == W_READ ? "md5" : "reference ratio");
		for (size_t i = 0; i < nrows; i++) {
			const struct row *row = &rows[i];
			if ((int)row->w != w)
				continue;
			double q = ratio(row);
			snprintf(c, sizeof(c), q < 0 ? "-" : "%.2f", q);
			if (w == W_READ)
				snprintf(b, sizeof(b), "%.8s %s", row->r.md5, row->r.md5_ok ? "ok" : "MISMATCH");
			else
				reference_text(row, b, sizeof(b));
			fprintf(f, "  %-29s %-10s %9.2f %8.1f %6s  %s\n", row->c->label,
				row->sync >= 0 ? sync_mode_name[row->sync] : "", row->r.seconds, mbps(&row->r), c, b);
		}
	}
	fprintf(f, "\nReference: sequential write on a 2006 storage array; synchronous chunks on one 15k SCSI disk.\n");
}

static void print_json(FILE *f)
{
	fprintf(f, "{\"device\": \"%s\", \"device_bytes\": %llu, ", opts->dev, (unsigned long long)opts->dev_size);
	if (opts->journal_dev)
		fprintf(f, "\"journal_device\": \"%s\", \"journal_bytes\": %llu, ", opts->journal_dev,
			(unsigned long long)opts->journal_size);
	fprintf(f, "\"sizes\": {\"seq_write\": %llu, \"block\": %u, \"chunks\": %u, \"chunk_size\": %u, "
		"\"read\": %llu, \"procs\": %u, \"per_proc\": %llu},\n \"results\": [",
		(unsigned long long)opts->seq_size, opts->block, opts->chunks, opts->chunk_size,
		(unsigned long long)opts->read_size, opts->procs, (unsigned long long)opts->per_proc);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *row = &rows[i];
		const struct reference *ref = FIND(refs, row);
		double q = ratio(row);
		fprintf(f, "%s\n  {\"workload\": \"%s\", \"config\": \"%s\", \"sync\": ", i ? "," : "", workload_name[row->w],
			row->c->name);
		if (row->sync >= 0)
			fprintf(f, "\"%s\"", sync_mode_name[row->sync]);
		else
			fprintf(f, "null");
		fprintf(f, ", \"seconds\": %.4f, \"bytes\": %llu, \"mb_per_s\": %.2f, \"ratio_basis\": \"%s\", \"ratio\": ",
			row->r.seconds, (unsigned long long)row->r.bytes, mbps(&row->r), basis_config[row->w]);
		if (q < 0)
			fprintf(f, "null");
		else
			fprintf(f, "%.4f", q);
		if (ref)
			fprintf(f, ", \"reference_ratio\": [%.2f, %.2f]", ref->lo, ref->hi);
		if (row->w == W_READ)
			fprintf(f, ", \"md5\": \"%s\", \"md5_ok\": %s", row->r.md5, row->r.md5_ok ? "true" : "false");
		fprintf(f, "}");
	}
	fprintf(f, "\n ]}\n");
}

void report_print(FILE *f)
{
	if (opts->json)
		print_json(f);
	else
		print_table(f);
}
