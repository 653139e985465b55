#include "layout.h"

#include <stdio.h>
#include <string.h>

#define MD_MAGIC 0xa92b4efcU

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t) le32(p + 4) << 32;
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

/* On-disk names and labels: printable ASCII only, at most N bytes. */
static void text(char *out, size_t size, const uint8_t *p, size_t n)
{
	size_t j = 0;

	for (size_t i = 0; i < n && p[i] && j + 1 < size; i++)
		out[j++] = (p[i] > 0x20 && p[i] < 0x7f) ? (char) p[i] : '?';
	out[j] = 0;
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

/* md metadata 0.90: 64 KiB below the end, rounded down to 64 KiB. */
static int md090(const struct layout_input *in, struct layout *out)
{
	const uint8_t *sb;
	char lvl[24];

	if (in->size < 128 * 1024)
		return 0;
	sb = at(in, (in->size & ~(uint64_t) 65535) - 65536, 64);
	if (!sb || le32(sb) != MD_MAGIC || le32(sb + 4) != 0 || le32(sb + 8) != 90)
		return 0;
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
	for (char *p = out->what; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			*p = '?';
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
	if (md1(in, out) || lvm(in, out) || luks(in, out) || bcache(in, out) || ptable(in, out) ||
	    md090(in, out))
		return;
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
	default: return "";
	}
}

const char *layout_verdict(enum layout_kind kind)
{
	switch (kind) {
	case LAYOUT_NONE: return "";
	case LAYOUT_PTABLE: return "use its partitions";
	case LAYOUT_MULTIPATH: return "use the first path";
	default: return "assemble first (rescue-assemble)";
	}
}
