/*
 * Recognising what a block device belongs to before anything treats it as a
 * filesystem: an md RAID member (every metadata version), an LVM physical
 * volume, a LUKS container, a bcache device, or a disk holding a partition
 * table. Such a device may still start with a valid ext superblock (a RAID1
 * leg with metadata 0.90 or 1.0, a disk partitioned over an old filesystem):
 * checking or mounting it alone corrupts what it belongs to. No I/O here:
 * the input is raw bytes from the device (it is fuzzed).
 */
#ifndef LAYOUT_H
#define LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define LAYOUT_HEAD 262144	/* bytes read from the start of the device (ZFS's first label) */
#define LAYOUT_TAIL 131072	/* bytes read from its end (md 0.90 and 1.0) */
#define LAYOUT_LVM_TEXT 256	/* bytes of LVM metadata text read for the VG name */

enum layout_kind {
	LAYOUT_NONE, LAYOUT_MD, LAYOUT_LVM, LAYOUT_LUKS, LAYOUT_BCACHE, LAYOUT_PTABLE,
	/* Known from the system, not from the bytes: */
	LAYOUT_HELD,		/* an md array or dm mapping is built on it */
	LAYOUT_MULTIPATH,	/* another path to a disk already seen */
	/* Judged with the ext superblocks (extscan): */
	LAYOUT_FOREIGN,		/* another filesystem, or unknown data, over old ext backups */
};

struct layout_input {
	const uint8_t *head;	/* the device's first bytes */
	size_t head_len;
	const uint8_t *tail;	/* its last bytes, starting at tail_off */
	size_t tail_len;
	uint64_t tail_off;
	uint64_t size;		/* the device's size in bytes */
	const uint8_t *lvm_text;	/* LVM_TEXT bytes at layout_lvm_text_offset(), if read */
	size_t lvm_text_len;
};

struct layout {
	enum layout_kind kind;
	char what[200];		/* "md RAID1 member (array 1a2b..., metadata 1.0, name host:0)" */
	int at_end;		/* RAID metadata at the end of the device (md 0.90 and 1.0, IMSM,
				 * DDF): its data, partition table included, starts at the start */
};

/* Fills OUT with the first layout found on the device (kind LAYOUT_NONE and
 * an empty description when there is none). */
void layout_probe(const struct layout_input *in, struct layout *out);

/* Where the VG name of an LVM physical volume is (the start of its newest
 * metadata text), or 0 when the head holds no LVM label or the text lies
 * outside the device. */
uint64_t layout_lvm_text_offset(const uint8_t *head, size_t head_len, uint64_t size);

/* The name of a filesystem or swap signature other than ext on the device
 * (xfs, btrfs, swap, zfs, ...) at byte FROM or beyond, or NULL. Such a
 * device made over an old ext
 * volume still holds that volume's backup superblocks; none of them may
 * stand in for the primary there. */
const char *layout_foreign(const struct layout_input *in, uint64_t from);

/* Short name of a kind ("md member", "LVM PV", ...) and what to do instead
 * of checking or mounting it ("assemble first", ...). */
const char *layout_kind_name(enum layout_kind kind);
const char *layout_verdict(enum layout_kind kind);

#endif
