#include "extsb.h"
#include "le.h"
#include "text.h"

#include <stdio.h>
#include <string.h>

enum { COMPAT, INCOMPAT, RO_COMPAT };

static const struct feature {
	int set;
	uint32_t bit;
	const char *name;
} features[] = {
	{COMPAT, 0x0001, "dir_prealloc"}, {COMPAT, 0x0002, "imagic_inodes"},
	{COMPAT, 0x0004, "has_journal"}, {COMPAT, 0x0008, "ext_attr"},
	{COMPAT, 0x0010, "resize_inode"}, {COMPAT, 0x0020, "dir_index"},
	{COMPAT, 0x0040, "lazy_bg"}, {COMPAT, 0x0100, "snapshot_bitmap"},
	{COMPAT, 0x0200, "sparse_super2"}, {COMPAT, 0x0400, "fast_commit"},
	{COMPAT, 0x0800, "stable_inodes"}, {COMPAT, 0x1000, "orphan_file"},
	{INCOMPAT, 0x0001, "compression"}, {INCOMPAT, 0x0002, "filetype"},
	{INCOMPAT, 0x0004, "needs_recovery"}, {INCOMPAT, 0x0008, "journal_dev"},
	{INCOMPAT, 0x0010, "meta_bg"}, {INCOMPAT, 0x0040, "extent"},
	{INCOMPAT, 0x0080, "64bit"}, {INCOMPAT, 0x0100, "mmp"},
	{INCOMPAT, 0x0200, "flex_bg"}, {INCOMPAT, 0x0400, "ea_inode"},
	{INCOMPAT, 0x1000, "dirdata"}, {INCOMPAT, 0x2000, "metadata_csum_seed"},
	{INCOMPAT, 0x4000, "large_dir"}, {INCOMPAT, 0x8000, "inline_data"},
	{INCOMPAT, 0x10000, "encrypt"}, {INCOMPAT, 0x20000, "casefold"},
	{RO_COMPAT, 0x0001, "sparse_super"}, {RO_COMPAT, 0x0002, "large_file"},
	{RO_COMPAT, 0x0004, "btree_dir"}, {RO_COMPAT, 0x0008, "huge_file"},
	{RO_COMPAT, 0x0010, "uninit_bg"}, {RO_COMPAT, 0x0020, "dir_nlink"},
	{RO_COMPAT, 0x0040, "extra_isize"}, {RO_COMPAT, 0x0080, "snapshot"},
	{RO_COMPAT, 0x0100, "quota"}, {RO_COMPAT, 0x0200, "bigalloc"},
	{RO_COMPAT, 0x0400, "metadata_csum"}, {RO_COMPAT, 0x0800, "replica"},
	{RO_COMPAT, 0x1000, "read-only"}, {RO_COMPAT, 0x2000, "project"},
	{RO_COMPAT, 0x4000, "shared_blocks"}, {RO_COMPAT, 0x8000, "verity"},
	{RO_COMPAT, 0x10000, "orphan_present"},
};

const struct extsb_support extsb_kernel = {
	.compat = 0x0008 | 0x1000,
	.incompat = 0x0002 | 0x0004 | 0x0010 | 0x0040 | 0x0080 | 0x0200 | 0x0400 | 0x0100 |
		    0x8000 | 0x10000 | 0x20000 | 0x2000 | 0x4000,
	.ro_compat = 0x0001 | 0x0002 | 0x0010 | 0x0020 | 0x0040 | 0x0004 | 0x0008 | 0x0200 |
		     0x0400 | 0x0100 | 0x2000 | 0x8000 | 0x10000,
	.max_log_block_size = 6,
	.page_log_block_size = 2,
};

const struct extsb_support extsb_e2fsck = {
	.compat = 0x0001 | 0x0002 | 0x0004 | 0x0010 | 0x0020 | 0x0008 | 0x0200 | 0x0400 |
		  0x0800 | 0x1000,
	.incompat = 0x0002 | 0x0008 | 0x0010 | 0x0004 | 0x0040 | 0x0200 | 0x0400 | 0x0100 |
		    0x0080 | 0x8000 | 0x10000 | 0x20000 | 0x2000 | 0x4000,
	.ro_compat = 0x0001 | 0x0008 | 0x0002 | 0x0020 | 0x0040 | 0x0010 | 0x0200 | 0x0100 |
		     0x0400 | 0x1000 | 0x2000 | 0x4000 | 0x8000 | 0x10000,
	.strict_compat = 1,
	.max_log_block_size = 6,
};

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t) le_get(p, 2);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t) le_get(p, 4);
}

int extsb_parse(const uint8_t *buf, size_t len, struct extsb *sb, const char **why)
{
	memset(sb, 0, sizeof(*sb));
	if (len < EXTSB_SIZE)
		return *why = "short read", -1;
	if (le16(buf + 0x38) != 0xEF53)
		return *why = "no ext2/3/4 magic", -1;
	sb->log_block_size = le32(buf + 0x18);
	/* 1 KiB to 64 KiB blocks are all that exist. */
	if (sb->log_block_size > 6)
		return *why = "absurd block size", -1;
	sb->inodes_count = le32(buf + 0x00);
	sb->free_inodes = le32(buf + 0x10);
	sb->compat = le32(buf + 0x5c);
	sb->incompat = le32(buf + 0x60);
	sb->ro_compat = le32(buf + 0x64);
	sb->blocks_count = le32(buf + 0x04);
	sb->free_blocks = le32(buf + 0x0c);
	if (sb->incompat & 0x0080) {	/* 64bit: the high halves count */
		sb->blocks_count |= (uint64_t) le32(buf + 0x150) << 32;
		sb->free_blocks |= (uint64_t) le32(buf + 0x158) << 32;
	}
	if (!(sb->incompat & 0x0008) &&
	    (sb->inodes_count == 0 || sb->blocks_count == 0 || sb->free_inodes > sb->inodes_count ||
	     sb->free_blocks > sb->blocks_count))
		return *why = "absurd inode or block counts", -1;
	sb->state = le16(buf + 0x3a);
	sb->mnt_count = le16(buf + 0x34);
	sb->max_mnt_count = (int16_t) le16(buf + 0x36);
	sb->error_count = le32(buf + 0x194);
	sb->last_orphan = le32(buf + 0xe8);
	sb->mtime = le32(buf + 0x2c) | (int64_t) buf[0x275] << 32;
	sb->lastcheck = le32(buf + 0x40) | (int64_t) buf[0x277] << 32;
	memcpy(sb->uuid, buf + 0x68, 16);
	/* A journal on another device: no journal inode, that device's UUID. */
	if ((sb->compat & 0x0004) && le32(buf + 0xe0) == 0)
		memcpy(sb->journal_uuid, buf + 0xd0, 16);
	text_shown(sb->label, sizeof(sb->label), buf + 0x78, 16, 0);
	text_shown(sb->last_mounted, sizeof(sb->last_mounted), buf + 0x88, 64, 0);
	return 0;
}

/* Features only ext4 has; any of them makes a journalled volume "ext4". */
#define EXT4_ONLY_INCOMPAT (0x0080 | 0x0100 | 0x0200 | 0x0400 | 0x2000 | 0x4000 | 0x8000 | \
			    0x10000 | 0x20000)
#define EXT4_ONLY_RO (0x0008 | 0x0010 | 0x0020 | 0x0040 | 0x0100 | 0x0200 | 0x0400 | \
		      0x2000 | 0x8000 | 0x10000)

const char *extsb_kind(const struct extsb *sb)
{
	int ext4_only = (sb->incompat & EXT4_ONLY_INCOMPAT) || (sb->ro_compat & EXT4_ONLY_RO) ||
			(sb->compat & (0x0200 | 0x0400 | 0x1000));

	if (sb->incompat & 0x0008)
		return "journal";
	if (ext4_only)
		return "ext4";
	if (sb->incompat & 0x0040)	/* extents alone: the original patch series */
		return (sb->compat & 0x0004) ? "ext3+extents" : "ext4";
	return (sb->compat & 0x0004) ? "ext3" : "ext2";
}

void extsb_state(const struct extsb *sb, char *out, size_t size)
{
	size_t n = 0;

	out[0] = 0;
#define ADD(s) (n += snprintf(out + n, n < size ? size - n : 0, "%s%s", n ? ", " : "", (s)))
	if (sb->incompat & 0x0008) {
		ADD("external journal");
		return;
	}
	if (!(sb->state & 1))
		ADD("not clean");
	if ((sb->state & 2) || sb->error_count)
		ADD("errors recorded");
	if (sb->incompat & 0x0004)
		ADD("journal needs recovery");
	if (sb->last_orphan || (sb->ro_compat & 0x10000))
		ADD("orphans present");
	if (!n)
		ADD("clean");
#undef ADD
}

static const char *name_of(int set, uint32_t bit)
{
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++)
		if (features[i].set == set && features[i].bit == bit)
			return features[i].name;
	return NULL;
}

/* The lowest bit of UNSUPPORTED, by name or as "unknown feature 0x..."
 * (then 1: a bit no version known here names). */
static int blocker_name(int set, uint32_t unsupported, char *out, size_t size)
{
	uint32_t bit = unsupported & -unsupported;
	const char *name = name_of(set, bit);
	static const char *const sets[] = {"compat", "incompat", "ro_compat"};

	if (name)
		return snprintf(out, size, "%s", name), 0;
	snprintf(out, size, "unknown feature 0x%x (%s)", bit, sets[set]);
	return 1;
}

/* extsb_access, also saying whether a newer tool could lift the blocker
 * (*newer: a block size above SUP's, or a bit nobody names yet). */
static enum extsb_access access_why(const struct extsb *sb, const struct extsb_support *sup,
				    char *blocker, size_t size, int *newer)
{
	uint32_t bad;

	blocker[0] = 0;
	*newer = 0;
	if (sb->log_block_size > sup->max_log_block_size) {
		snprintf(blocker, size, "block size %u (this kernel takes up to %u)", 1024U << sb->log_block_size,
			 1024U << sup->max_log_block_size);
		*newer = 1;
		return EXTSB_NONE;
	}
	/* Linux refuses an encrypted volume whose blocks are larger than a page. */
	if (sup->page_log_block_size && sb->log_block_size > sup->page_log_block_size &&
	    (sb->incompat & 0x10000)) {
		snprintf(blocker, size, "encrypt with block size %u (larger than the page)",
			 1024U << sb->log_block_size);
		return EXTSB_NONE;
	}
	if (sup->strict_compat && (bad = sb->compat & ~sup->compat)) {
		*newer = blocker_name(COMPAT, bad, blocker, size);
		return EXTSB_NONE;
	}
	if ((bad = sb->incompat & ~sup->incompat)) {
		*newer = blocker_name(INCOMPAT, bad, blocker, size);
		return EXTSB_NONE;
	}
	if ((bad = sb->ro_compat & ~sup->ro_compat)) {
		*newer = blocker_name(RO_COMPAT, bad, blocker, size);
		return EXTSB_RO;
	}
	return EXTSB_RW;
}

enum extsb_access extsb_access(const struct extsb *sb, const struct extsb_support *sup,
			       char *blocker, size_t size)
{
	int newer;

	return access_why(sb, sup, blocker, size, &newer);
}

int extsb_needs_newer(const struct extsb *sb, const struct extsb_support *sup)
{
	char blocker[96];
	int newer;

	return access_why(sb, sup, blocker, sizeof(blocker), &newer) != EXTSB_RW && newer;
}

void extsb_features(const struct extsb *sb, char *out, size_t size)
{
	const uint32_t sets[3] = {sb->compat, sb->incompat, sb->ro_compat};
	size_t n = 0;

	out[0] = 0;
	for (int set = 0; set < 3; set++)
		for (int b = 0; b < 32; b++) {
			uint32_t bit = (uint32_t) 1 << b;
			const char *name;

			if (!(sets[set] & bit))
				continue;
			name = name_of(set, bit);
			if (name)
				n += snprintf(out + n, n < size ? size - n : 0, "%s%s", n ? " " : "", name);
			else
				n += snprintf(out + n, n < size ? size - n : 0, "%sFEATURE_%c%d",
					      n ? " " : "", "CIR"[set], b);
		}
}
