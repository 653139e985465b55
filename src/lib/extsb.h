/*
 * Parsing an ext2/3/4 superblock from raw bytes, and judging it against what
 * this kernel and this e2fsck support. No I/O here: the input may be any
 * bytes at all (it is fuzzed).
 */
#ifndef EXTSB_H
#define EXTSB_H

#include <stddef.h>
#include <stdint.h>

#define EXTSB_SIZE 1024

struct extsb {
	uint32_t compat, incompat, ro_compat;
	uint16_t state, mnt_count;
	int16_t max_mnt_count;
	uint32_t log_block_size, inodes_count, free_inodes, error_count, last_orphan;
	uint64_t blocks_count, free_blocks;
	int64_t mtime, lastcheck;	/* seconds since the epoch, 0 = never */
	uint8_t uuid[16];
	uint8_t journal_uuid[16];	/* of its external journal; all zero when none */
	char label[17];		/* NUL-terminated, printable only */
	char last_mounted[65];	/* NUL-terminated, printable only */
};

/* The feature sets and block sizes a tool supports. */
struct extsb_support {
	uint32_t compat, incompat, ro_compat;
	int strict_compat;	/* e2fsck refuses unknown compat bits too; the kernel does not */
	uint32_t max_log_block_size;	/* largest block it takes, as 1024 << this */
	uint32_t page_log_block_size;	/* the page size, as 1024 << this (0: no limit) */
};

/*
 * Linux 7.2's EXT4_FEATURE_*_SUPP (blocks up to 64 KiB, larger than the page
 * only without encrypt), e2fsprogs 1.47.4's EXT2_LIB_FEATURE_*_SUPP. extscan
 * narrows the kernel's to what the running kernel advertises.
 */
extern const struct extsb_support extsb_kernel, extsb_e2fsck;

/* 0 when BUF (LEN bytes, normally EXTSB_SIZE) holds a plausible superblock,
 * else -1 with *why set to a short reason. */
int extsb_parse(const uint8_t *buf, size_t len, struct extsb *sb, const char **why);

/* "ext2", "ext3", "ext3+extents", "ext4" or "journal" (an external journal). */
const char *extsb_kind(const struct extsb *sb);

/* Writes the volume's state in words to OUT ("clean", "errors recorded, ..."). */
void extsb_state(const struct extsb *sb, char *out, size_t size);

enum extsb_access { EXTSB_RW, EXTSB_RO, EXTSB_NONE };

/*
 * What a tool supporting SUP can do with the volume. *blocker names the first
 * feature that limits it, "unknown feature 0x..." for a bit nobody knows, or
 * the block size it does not take (written to BLOCKER, SIZE bytes).
 */
enum extsb_access extsb_access(const struct extsb *sb, const struct extsb_support *sup,
			       char *blocker, size_t size);

/* 1 when a newer version of the tool may lift the blocker extsb_access found:
 * a feature bit nobody names yet, or a block size larger than SUP takes. */
int extsb_needs_newer(const struct extsb *sb, const struct extsb_support *sup);

/* Writes the names of all feature bits set (unknown ones in hex) to OUT. */
void extsb_features(const struct extsb *sb, char *out, size_t size);

#endif
