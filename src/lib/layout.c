#include "layout.h"

#include <stdio.h>
#include <string.h>

#include "le.h"
#include "text.h"

#define MD_MAGIC 0xa92b4efcU

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t) le_get(p, 4);
}

static uint64_t le64(const uint8_t *p)
{
	return le_get(p, 8);
}

/* LEN bytes at device offset OFF, when the head or the tail holds them all. */
static const uint8_t *at(const struct layout_input *in, uint64_t off, size_t len)
{
	if (in->head && off <= in->head_len && len <= in->head_len - off)
		return in->head + off;
	if (in->tail && off >= in->tail_off && off - in->tail_off <= in->tail_len &&
	    len <= in->tail_len - (off - in->tail_off))
		return in->tail + (off - in->tail_off);
	return NULL;
}

/* On-disk names and labels go into whitespace-split tables: no spaces. */
static void text(char *out, size_t size, const uint8_t *p, size_t n)
{
	text_shown(out, size, p, n, TEXT_NO_SPACE);
}

static void md_level(int32_t level, char *out, size_t size)
{
	switch (level) {
	case -1: snprintf(out, size, "linear"); break;
	case -4: snprintf(out, size, "multipath"); break;
	case -5: snprintf(out, size, "faulty"); break;
	default: snprintf(out, size, "RAID%d", level); break;
	}
}

/* md metadata 1.x: 1.0 near the end, 1.1 at the start, 1.2 4 KiB in. The
 * superblock records its own offset, which tells a real one from a stale copy
 * or the superblock of a partition seen through its whole disk. */
static int md1(const struct layout_input *in, struct layout *out)
{
	static const char *const minor[] = {"1.1", "1.2", "1.0"};
	uint64_t where[3] = {0, 8, 0};

	if (in->size < 64 * 1024)
		return 0;
	where[2] = ((in->size >> 9) - 16) & ~(uint64_t) 7;
	for (int i = 0; i < 3; i++) {
		const uint8_t *sb = at(in, where[i] << 9, 256);
		char lvl[24], name[33];

		if (!sb || le32(sb) != MD_MAGIC || le32(sb + 4) != 1 || le64(sb + 144) != where[i])
			continue;
		md_level((int32_t) le32(sb + 72), lvl, sizeof(lvl));
		text(name, sizeof(name), sb + 32, 32);
		out->kind = LAYOUT_MD;
		out->at_end = i == 2;
		snprintf(out->what, sizeof(out->what),
			 "md %s member (array %02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x, "
			 "%u devices, metadata %s%s%s)", lvl,
			 sb[16], sb[17], sb[18], sb[19], sb[20], sb[21], sb[22], sb[23],
			 sb[24], sb[25], sb[26], sb[27], sb[28], sb[29], sb[30], sb[31],
			 le32(sb + 92), minor[i], name[0] ? ", name " : "", name);
		return 1;
	}
	return 0;
}

/* Where the partition table at the device's start says its last partition
 * (or, for a GPT, the disk it was made for) ends, in bytes; 0 when there is
 * no partition table. */
static uint64_t table_end(const struct layout_input *in)
{
	const uint8_t *h = in->head;
	uint64_t end = 0;

	if (in->head_len < 512 || h[510] != 0x55 || h[511] != 0xaa)
		return 0;
	for (int i = 0; i < 4; i++) {
		const uint8_t *e = h + 446 + 16 * i;
		uint64_t last = ((uint64_t) le32(e + 8) + le32(e + 12)) * 512;

		if (e[4] && last > end)
			end = last;
	}
	/* A GPT's header names its backup's place: the last sector it covers. */
	if (in->head_len >= 520 + 32 && !memcmp(h + 512, "EFI PART", 8))
		end = (le64(h + 512 + 32) + 1) * 512;
	else if (in->head_len >= 4096 + 40 && !memcmp(h + 4096, "EFI PART", 8))
		end = (le64(h + 4096 + 32) + 1) * 4096;
	return end;
}

/* md metadata 0.90: 64 KiB below the end, rounded down to 64 KiB. The
 * superblock has no offset of its own, so the last partition of a disk may
 * put its superblock where the whole disk's would be. A whole-disk leg of a
 * partitioned array shows the array's partition table, which ends within
 * the array's data (the size field, KiB a member gives); a partitioned
 * disk's table reaches past it. WHOLE asks for a whole-disk member only. */
static int md090(const struct layout_input *in, struct layout *out, int whole)
{
	uint64_t where = (in->size & ~(uint64_t) 65535) - 65536;
	const uint8_t *sb;
	char lvl[24];

	if (in->size < 128 * 1024)
		return 0;
	sb = at(in, where, 64);
	if (!sb || le32(sb) != MD_MAGIC || le32(sb + 4) != 0 || le32(sb + 8) != 90)
		return 0;
	if (whole && table_end(in) > (uint64_t) le32(sb + 32) * 1024)
		return 0;
	out->at_end = 1;
	md_level((int32_t) le32(sb + 28), lvl, sizeof(lvl));
	out->kind = LAYOUT_MD;
	snprintf(out->what, sizeof(out->what), "md %s member (array %08x:%08x:%08x:%08x, %u devices, metadata 0.90)",
		 lvl, le32(sb + 20), le32(sb + 52), le32(sb + 56), le32(sb + 60), le32(sb + 40));
	return 1;
}

/* The LVM label: "LABELONE" at the start of one of the first four sectors,
 * recording that sector's number, with type "LVM2 001". */
static const uint8_t *lvm_label(const uint8_t *head, size_t head_len)
{
	for (uint64_t s = 0; s < 4 && (s + 1) * 512 <= head_len; s++) {
		const uint8_t *p = head + s * 512;

		if (!memcmp(p, "LABELONE", 8) && le64(p + 8) == s && !memcmp(p + 24, "LVM2 001", 8) &&
		    le32(p + 20) >= 32 && le32(p + 20) <= 512 - 48)
			return p;
	}
	return NULL;
}

uint64_t layout_lvm_text_offset(const uint8_t *head, size_t head_len, uint64_t size)
{
	const uint8_t *label = lvm_label(head, head_len), *loc, *mda;
	uint64_t mda_off = 0, start, msize, off;
	int area = 0;

	if (!label)
		return 0;
	/* pv_header: uuid[32], size, then data areas and metadata areas, each
	 * list of (offset, size) pairs ending with a zero pair. */
	loc = label + le32(label + 20) + 40;
	for (int i = 0; i < 16 && loc + 16 <= head + head_len; i++, loc += 16) {
		if (le64(loc) == 0 && le64(loc + 8) == 0) {
			if (++area == 2)
				break;
			continue;
		}
		if (area == 1) {
			mda_off = le64(loc);
			break;
		}
	}
	if (!mda_off || mda_off > head_len || head_len - mda_off < 56)
		return 0;
	mda = head + mda_off;
	if (memcmp(mda + 4, " LVM2 x[5A%r0N*>", 16))
		return 0;
	start = le64(mda + 24);
	msize = le64(mda + 32);
	off = le64(mda + 40);
	if (start != mda_off || off >= msize || off == 0 || start + off >= size)
		return 0;
	return start + off;
}

static int lvm(const struct layout_input *in, struct layout *out)
{
	const uint8_t *label = lvm_label(in->head, in->head_len), *u;
	char vg[128] = "";
	size_t n = 0;

	if (!label)
		return 0;
	u = label + le32(label + 20);
	/* The metadata text starts with the VG's name, then " {". */
	if (in->lvm_text) {
		while (n < in->lvm_text_len && n + 1 < sizeof(vg) &&
		       (strchr("+_.-", in->lvm_text[n]) ||
			(in->lvm_text[n] >= 'a' && in->lvm_text[n] <= 'z') ||
			(in->lvm_text[n] >= 'A' && in->lvm_text[n] <= 'Z') ||
			(in->lvm_text[n] >= '0' && in->lvm_text[n] <= '9'))) {
			vg[n] = (char) in->lvm_text[n];
			n++;
		}
		vg[n] = 0;
		if (n == in->lvm_text_len || (in->lvm_text[n] != ' ' && in->lvm_text[n] != '{'))
			vg[0] = 0;
	}
	out->kind = LAYOUT_LVM;
	snprintf(out->what, sizeof(out->what), "LVM physical volume (%s%s, PV %.6s-%.4s-%.4s-%.4s-%.4s-%.4s-%.6s)",
		 vg[0] ? "VG " : "VG unknown", vg, u, u + 6, u + 10, u + 14, u + 18, u + 22, u + 26);
	/* The UUID is on-disk text: keep it printable. */
	text_shown(out->what, sizeof(out->what), out->what, sizeof(out->what), 0);
	return 1;
}

static int luks(const struct layout_input *in, struct layout *out)
{
	char uuid[41];

	if (in->head_len < 208 || memcmp(in->head, "LUKS\xba\xbe", 6))
		return 0;
	text(uuid, sizeof(uuid), in->head + 168, 40);
	out->kind = LAYOUT_LUKS;
	snprintf(out->what, sizeof(out->what), "LUKS%u container (UUID %s)",
		 (unsigned) (in->head[6] << 8 | in->head[7]), uuid);
	return 1;
}

static int bcache(const struct layout_input *in, struct layout *out)
{
	static const uint8_t magic[16] = {0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca,
					  0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81};
	const uint8_t *sb = at(in, 4096, 104);
	uint64_t version;
	char label[33];

	if (!sb || memcmp(sb + 24, magic, 16))
		return 0;
	version = le64(sb + 16);
	text(label, sizeof(label), sb + 72, 32);
	out->kind = LAYOUT_BCACHE;
	snprintf(out->what, sizeof(out->what), "bcache %s device%s%s",
		 version == 1 || version == 4 ? "backing" : "cache", label[0] ? ", label " : "", label);
	return 1;
}

/* Firmware RAID metadata, at the end of the disk (after sectors of 512
 * bytes or 4 KiB): Intel IMSM (Matrix/RST) in the second-to-last sector,
 * SNIA DDF (LSI, Adaptec, Dell firmware RAID) in the last one. */
static int fwraid(const struct layout_input *in, struct layout *out)
{
	static const unsigned sector[] = {512, 4096};

	for (int i = 0; i < 2; i++) {
		const uint8_t *p;
		char rev[12];

		if (in->size < 4 * (uint64_t) sector[i])
			continue;
		p = at(in, in->size - 2 * sector[i], 40);
		if (p && !memcmp(p, "Intel Raid ISM Cfg Sig. ", 24)) {
			text(rev, sizeof(rev), p + 24, 8);
			out->kind = LAYOUT_MD;
			out->at_end = 1;
			snprintf(out->what, sizeof(out->what), "Intel IMSM firmware RAID member (metadata %s)", rev);
			return 1;
		}
		p = at(in, in->size - sector[i], 40);
		if (p && p[0] == 0xde && p[1] == 0x11 && p[2] == 0xde && p[3] == 0x11) {
			char vendor[12];

			/* The vendor's T10 name, padded with spaces. */
			text(vendor, sizeof(vendor), p + 8, (size_t) (memchr(p + 8, ' ', 8) ? (const uint8_t *) memchr(p + 8, ' ', 8) - (p + 8) : 8));
			text(rev, sizeof(rev), p + 32, 8);
			out->kind = LAYOUT_MD;
			out->at_end = 1;
			snprintf(out->what, sizeof(out->what), "DDF firmware RAID member (vendor %s, revision %s)",
				 vendor[0] ? vendor : "?", rev);
			return 1;
		}
	}
	return 0;
}

/* A GPT header, or an MBR whose entries look like partitions (not the boot
 * sector of a FAT or NTFS filesystem, which also ends in 55 AA). */
static int ptable(const struct layout_input *in, struct layout *out)
{
	const uint8_t *h = in->head;
	int used = 0, gpt = 0;

	if ((in->head_len >= 520 && !memcmp(h + 512, "EFI PART", 8)) ||
	    (in->head_len >= 4104 && !memcmp(h + 4096, "EFI PART", 8)))
		gpt = 1;
	if (!gpt) {
		if (in->head_len < 512 || h[510] != 0x55 || h[511] != 0xaa)
			return 0;
		if (!memcmp(h + 3, "NTFS    ", 8) || !memcmp(h + 3, "EXFAT   ", 8) ||
		    !memcmp(h + 54, "FAT", 3) || !memcmp(h + 82, "FAT", 3))
			return 0;
		for (int i = 0; i < 4; i++) {
			const uint8_t *e = h + 446 + 16 * i;

			if (e[0] != 0 && e[0] != 0x80)
				return 0;
			if (e[4] == 0)
				continue;
			if (le32(e + 8) == 0 || le32(e + 12) == 0)
				return 0;
			if (e[4] == 0xee)
				gpt = 1;
			used++;
		}
		if (!used)
			return 0;
	}
	out->kind = LAYOUT_PTABLE;
	snprintf(out->what, sizeof(out->what), "disk with a%s partition table", gpt ? " GPT" : "n MBR");
	return 1;
}

void layout_probe(const struct layout_input *in, struct layout *out)
{
	memset(out, 0, sizeof(*out));
	if (!in->head || in->head_len < 512)
		return;
	/* An 0.90 superblock has no offset to check, so a partitioned disk
	 * whose last partition is an 0.90 member must read as partitioned. */
	/* RAID metadata at the end of a whole disk comes before the partition
	 * table: with the array partitioned, every leg shows that table too. */
	if (md1(in, out) || md090(in, out, 1) || fwraid(in, out) || lvm(in, out) || luks(in, out) ||
	    bcache(in, out) || ptable(in, out) || md090(in, out, 0))
		return;
}

/* Signatures of other filesystems and of swap, where their tools write
 * them (the offsets libblkid probes too): MAGIC at byte OFF. */
static const struct {
	const char *name;
	uint32_t off;
	uint8_t len;
	const char *magic;
} foreign[] = {
	{"xfs", 0, 4, "XFSB"},
	{"btrfs", 65600, 8, "_BHRfS_M"},
	{"swap", 4086, 10, "SWAPSPACE2"}, {"swap", 4086, 10, "SWAP-SPACE"},
	{"swap", 8182, 10, "SWAPSPACE2"}, {"swap", 16374, 10, "SWAPSPACE2"},
	{"swap", 65526, 10, "SWAPSPACE2"},
	{"suspended swap", 4086, 9, "S1SUSPEND"}, {"suspended swap", 4086, 9, "ULSUSPEND"},
	{"f2fs", 1024, 4, "\x10\x20\xf5\xf2"},
	{"bcachefs", 4096 + 24, 16, "\xc6\x85\x73\xf6\x66\xce\x90\xa9\xd9\x6a\x60\xcf\x80\x3d\xf7\xef"},
	{"reiserfs", 65536 + 52, 8, "ReIsEr2F"}, {"reiserfs", 65536 + 52, 8, "ReIsEr3F"},
	{"reiserfs", 65536 + 52, 8, "ReIsErFs"},
	{"jfs", 32768, 4, "JFS1"},
	{"ntfs", 3, 8, "NTFS    "},
	{"exfat", 3, 8, "EXFAT   "},
	{"vfat", 82, 5, "FAT32"}, {"vfat", 54, 5, "FAT16"}, {"vfat", 54, 5, "FAT12"},
	{"iso9660", 32769, 5, "CD001"},
	{"squashfs", 0, 4, "hsqs"},
	{"gfs2", 65536, 4, "\x01\x16\x19\x70"},
	{"ceph bluestore", 0, 22, "bluestore block device"},
};

/* ZFS: the uberblock ring of the first label (128 to 256 KiB), one
 * uberblock every KiB or more, each starting with its magic in the pool's
 * byte order. */
static int zfs(const struct layout_input *in)
{
	for (uint32_t off = 128 * 1024; off < 256 * 1024; off += 1024) {
		const uint8_t *p = at(in, off, 8);
		uint64_t magic = p ? le64(p) : 0;

		if (magic == 0x00bab10cULL || magic == 0x0cb1ba0000000000ULL)
			return 1;
	}
	return 0;
}

const char *layout_foreign(const struct layout_input *in, uint64_t from)
{
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
		const uint8_t *p = foreign[i].off >= from ? at(in, foreign[i].off, foreign[i].len) : NULL;

		if (p && !memcmp(p, foreign[i].magic, foreign[i].len))
			return foreign[i].name;
	}
	return zfs(in) ? "zfs" : NULL;
}

const char *layout_kind_name(enum layout_kind kind)
{
	switch (kind) {
	case LAYOUT_MD: return "md member";
	case LAYOUT_LVM: return "LVM PV";
	case LAYOUT_LUKS: return "LUKS";
	case LAYOUT_BCACHE: return "bcache";
	case LAYOUT_PTABLE: return "partitioned";
	case LAYOUT_HELD: return "in use";
	case LAYOUT_MULTIPATH: return "multipath";
	case LAYOUT_FOREIGN: return "not ext";
	default: return "";
	}
}

const char *layout_verdict(enum layout_kind kind)
{
	switch (kind) {
	case LAYOUT_NONE: return "";
	case LAYOUT_PTABLE: return "use its partitions";
	case LAYOUT_MULTIPATH: return "use the first path";
	case LAYOUT_FOREIGN: return "left alone";
	default: return "assemble first (rescue-assemble)";
	}
}
