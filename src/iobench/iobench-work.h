/* The four reference workloads. Each runs on a path (a file or directory on
 * a mounted filesystem, or the raw block device), times only the part the
 * reference timed, and fills a result. On failure it returns -1 and leaves a
 * one-line reason in work_error; on Ctrl-C it returns -2. */
#ifndef IOBENCH_WORK_H
#define IOBENCH_WORK_H
#include <signal.h>
#include <stdint.h>

enum sync_mode { SYNC_NONE, SYNC_FSYNC, SYNC_FDATASYNC, SYNC_OSYNC, SYNC_MOUNT, SYNC_MODES };
extern const char *const sync_mode_name[SYNC_MODES];

struct work_result {
	double seconds;
	uint64_t bytes;		/* bytes moved in the timed part */
	char md5[33];		/* large-file read: digest of what was read */
	int md5_ok;		/* ... and whether it equals what was written */
};

/* What RAW means in the calls below: a file on a mounted filesystem, the
 * block device through the page cache (as dd writes it), or the block device
 * with O_DIRECT (the device's own speed; sizes must be multiples of 4 KiB). */
enum { TARGET_FILE, TARGET_RAW, TARGET_RAW_DIRECT };

extern volatile sig_atomic_t work_stop;
extern char work_error[512];

/* 1: SIZE bytes in BS-byte write()s to a new file or the device, then fsync. */
int work_seq_write(const char *path, int raw, uint64_t size, uint32_t bs, struct work_result *r);
/* 2: COUNT chunks of SIZE bytes, each open, write, sync as MODE, close. */
int work_chunks(const char *path, int raw, enum sync_mode mode, uint32_t count, uint32_t size,
		struct work_result *r);
/* 3: write SIZE bytes, drop caches, read back and md5 (only the read is timed). */
int work_read_md5(const char *path, int raw, uint64_t size, struct work_result *r);
/* 4: PROCS processes each create, write, read and delete files in their own
 * directory until each has written PER_PROC bytes; bytes written + read. */
int work_parallel(const char *dir, uint32_t procs, uint64_t per_proc, struct work_result *r);

#endif
