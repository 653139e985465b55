/*
 * extscan's reads: one device's superblock copies, first and last bytes,
 * read in a child with a time limit, and judged.
 */
#include <dirent.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/text.h"
#include "extscan.h"

/* The primary superblock (block 1 of 1 KiB), then where the first backup
 * sits with 1, 2 and 4 KiB blocks: group 1 starts at block 8193, 16384, 32768. */
static const struct { unsigned long long block; unsigned int log_block_size; } copies[] = {
	{1, 0}, {8193, 0}, {16384, 1}, {32768, 2},
};
#define NCOPIES 4
#define COPY_OFFSET(c) (copies[c].block << (10 + copies[c].log_block_size))

/* Everything one device is read for: its size, the superblock copies, its
 * first and last bytes (RAID, LVM, LUKS, bcache, partition tables) and the
 * LVM metadata text named there. */
struct raw {
	unsigned long long size;
	ssize_t sb_got;
	uint8_t sb[NCOPIES * EXTSB_SIZE];
	uint8_t head[LAYOUT_HEAD], tail[LAYOUT_TAIL], lvm_text[LAYOUT_LVM_TEXT];
	size_t head_len, tail_len, lvm_text_len;
	uint64_t tail_off;
};

static ssize_t read_at(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t) (off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return got ? (ssize_t) got : -1;
		if (n == 0)
			break;
		got += (size_t) n;
	}
	return (ssize_t) got;
}

static void read_raw(int fd, struct raw *w)
{
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		w->size = (unsigned long long) st.st_size;
	else if (ioctl(fd, BLKGETSIZE64, &w->size) != 0)
		w->size = 0;
	w->sb_got = read_at(fd, w->sb, EXTSB_SIZE, COPY_OFFSET(0));
	/* Backups only matter when the primary is whole but not valid. */
	if (w->sb_got == EXTSB_SIZE) {
		for (int c = 1; c < NCOPIES; c++)
			if (COPY_OFFSET(c) + EXTSB_SIZE > w->size ||
			    read_at(fd, w->sb + c * EXTSB_SIZE, EXTSB_SIZE, COPY_OFFSET(c)) != EXTSB_SIZE)
				memset(w->sb + c * EXTSB_SIZE, 0, EXTSB_SIZE);
		w->sb_got = NCOPIES * EXTSB_SIZE;
	}
	n = read_at(fd, w->head, w->size < LAYOUT_HEAD ? w->size : LAYOUT_HEAD, 0);
	w->head_len = n > 0 ? (size_t) n : 0;
	if (w->size > LAYOUT_HEAD) {
		w->tail_off = w->size > LAYOUT_TAIL ? w->size - LAYOUT_TAIL : 0;
		n = read_at(fd, w->tail, (size_t) (w->size - w->tail_off), w->tail_off);
		w->tail_len = n > 0 ? (size_t) n : 0;
	}
	uint64_t text = layout_lvm_text_offset(w->head, w->head_len, w->size);
	if (text) {
		n = read_at(fd, w->lvm_text, LAYOUT_LVM_TEXT, text);
		w->lvm_text_len = n > 0 ? (size_t) n : 0;
	}
}

static int blank(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Judges what RAW holds: the ext superblock (or a backup, where one may
 * stand in) and what the device belongs to. */
static void judge(const struct raw *w, struct result *r)
{
	struct layout_input in = {
		.head = w->head, .head_len = w->head_len, .tail = w->tail, .tail_len = w->tail_len,
		.tail_off = w->tail_off, .size = w->size, .lvm_text = w->lvm_text_len ? w->lvm_text : NULL,
		.lvm_text_len = w->lvm_text_len,
	};
	const char *why;

	r->bytes = w->size;
	layout_probe(&in, &r->member);
	if (w->sb_got < EXTSB_SIZE) {
		/* Too small to hold a superblock at all: not a filesystem. */
		r->not_ext = 1;
		return;
	}
	r->primary_magic = w->sb[0x38] == 0x53 && w->sb[0x39] == 0xef;
	if (extsb_parse(w->sb, EXTSB_SIZE, &r->sb, &why) == 0) {
		r->ok = 1;
		return;
	}
	/* A damaged primary: a valid backup still identifies the volume, but
	 * only where nothing else claims the device (a partition table, or
	 * XFS, btrfs or swap made over an old ext4, leave its backups behind)
	 * and the primary's place holds the ext magic or nothing at all. */
	for (int c = 1; c < NCOPIES && w->sb_got == NCOPIES * EXTSB_SIZE && r->member.kind == LAYOUT_NONE; c++) {
		const char *bwhy, *other;

		/* A copy counts only if its block size puts it where it was found. */
		if (extsb_parse(w->sb + c * EXTSB_SIZE, EXTSB_SIZE, &r->sb, &bwhy) != 0 ||
		    r->sb.log_block_size != copies[c].log_block_size)
			continue;
		/* The ext magic in place: the boot block before it is ext's too
		 * (a boot loader may have written there). */
		other = layout_foreign(&in, r->primary_magic ? 2048 : 0);
		if (other || !(r->primary_magic || blank(w->sb, EXTSB_SIZE))) {
			r->member.kind = LAYOUT_FOREIGN;
			if (other)
				snprintf(r->member.what, sizeof(r->member.what),
					 "another filesystem (%s) over old ext traces (a backup superblock at block %llu)",
					 other, copies[c].block);
			else
				snprintf(r->member.what, sizeof(r->member.what),
					 "unknown data over old ext traces (a backup superblock at block %llu; "
					 "if it is still ext: e2fsck -b %llu -B %u)", copies[c].block, copies[c].block,
					 1024U << copies[c].log_block_size);
			memset(&r->sb, 0, sizeof(r->sb));
			return;
		}
		r->ok = 1;
		r->backup = copies[c].block;
		return;
	}
	if (!r->primary_magic)
		r->not_ext = 1;
	else
		snprintf(r->error, sizeof(r->error), "damaged superblock: %s, and no valid backup", why);
}

/* Reads and judges PATH in a child, so a hung device only costs
 * READ_TIMEOUT seconds; the child sends back the finished result. */
void scan(const char *path, struct result *r)
{
	int pfd[2], status;
	pid_t pid;
	size_t got = 0;
	ssize_t n;
	time_t deadline = time(NULL) + READ_TIMEOUT;

	memset(r, 0, sizeof(*r));
	snprintf(r->dev, sizeof(r->dev), "%s", path);
	if (pipe(pfd) < 0) {
		snprintf(r->error, sizeof(r->error), "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(r->error, sizeof(r->error), "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (pid == 0) {
		static struct raw w;
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		close(pfd[0]);
		if (fd < 0)
			snprintf(r->error, sizeof(r->error), "cannot open: %s", strerror(errno));
		else {
			read_raw(fd, &w);
			if (w.sb_got < 0 && w.head_len == 0)
				snprintf(r->error, sizeof(r->error), "read error: %s", strerror(errno));
			else
				judge(&w, r);
		}
		_exit(write(pfd[1], r, sizeof(*r)) == (ssize_t) sizeof(*r) ? 0 : 2);
	}
	close(pfd[1]);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		n = read(pfd[0], (char *) r + got, sizeof(*r) - got);
		if (n > 0) {
			got += (size_t) n;
			continue;
		}
		if (n == 0)
			break;
		if (errno != EAGAIN && errno != EINTR)
			break;
		if (time(NULL) >= deadline) {
			kill(pid, SIGKILL);
			close(pfd[0]);
			waitpid(pid, NULL, WNOHANG);
			snprintf(r->error, sizeof(r->error), "no answer within %d s", READ_TIMEOUT);
			return;
		}
		usleep(10000);
	}
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || got != sizeof(*r)) {
		memset(r, 0, sizeof(*r));
		snprintf(r->dev, sizeof(r->dev), "%s", path);
		snprintf(r->error, sizeof(r->error), "reader died");
	}
}
