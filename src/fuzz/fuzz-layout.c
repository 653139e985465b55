/*
 * libFuzzer target for what a device belongs to (layout.h): md, LVM, LUKS,
 * bcache, partition tables and the foreign signatures, from any bytes at the
 * device's start, its end and its LVM metadata text.
 *
 * The input describes a device with a hole in its middle:
 *   bytes 0-3   HEAD: how many bytes of the device's start follow (LE, at most LAYOUT_HEAD)
 *   bytes 4-5   TEXT: how many bytes of LVM metadata text follow (LE, at most LAYOUT_LVM_TEXT)
 *   bytes 6-9   GAP: 512-byte sectors of unknown bytes between the start and the end (LE)
 *   then the start, the LVM text, and the device's last bytes (the rest, at most LAYOUT_TAIL).
 * The device's size is HEAD + GAP * 512 + the end's length, so an md 1.0 or
 * 0.90 superblock in the end sits where it would on a real device. The text
 * is given to the probe only when layout_lvm_text_offset() finds one, as
 * extscan reads it. Beyond the sanitizers: every description is printable
 * and bounded, and a text offset lies inside the device.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/layout.h"

#define HEADER 10

static uint32_t le(const uint8_t *p, int n)
{
	uint32_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/* N bytes of DATA from *AT (fewer when it ends), in a buffer of their own size. */
static uint8_t *take(const uint8_t *data, size_t size, size_t *at, size_t n)
{
	uint8_t *p;

	if (n > size - *at)
		n = size - *at;
	p = malloc(n ? n : 1);
	if (!p)
		abort();
	memcpy(p, data + *at, n);
	*at += n;
	return p;
}

static void printable(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (n == size)
		abort();
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct layout_input in = {0};
	struct layout out;
	size_t at = HEADER, head_len, text_len;
	uint8_t *head, *text, *tail;
	const char *foreign;
	uint64_t text_off;

	if (size < HEADER)
		return 0;
	head_len = le(data, 4) < LAYOUT_HEAD ? le(data, 4) : LAYOUT_HEAD;
	text_len = le(data + 4, 2) < LAYOUT_LVM_TEXT ? le(data + 4, 2) : LAYOUT_LVM_TEXT;
	head = take(data, size, &at, head_len);
	head_len = at - HEADER;
	text = take(data, size, &at, text_len);
	text_len = at - HEADER - head_len;
	tail = take(data, size, &at, LAYOUT_TAIL);

	in.head = head;
	in.head_len = head_len;
	in.tail = tail;
	in.tail_len = at - HEADER - head_len - text_len;
	in.size = head_len + (uint64_t)le(data + 6, 4) * 512 + in.tail_len;
	in.tail_off = in.size - in.tail_len;
	text_off = layout_lvm_text_offset(head, head_len, in.size);
	if (text_off >= in.size && text_off)
		abort();
	if (text_off) {
		in.lvm_text = text;
		in.lvm_text_len = text_len;
	}

	layout_probe(&in, &out);
	printable(out.what, sizeof(out.what));
	if (out.kind == LAYOUT_NONE && out.what[0])
		abort();
	printable(layout_kind_name(out.kind), 64);
	printable(layout_verdict(out.kind), 128);
	foreign = layout_foreign(&in, 0);
	if (foreign)
		printable(foreign, 64);

	free(head);
	free(text);
	free(tail);
	return 0;
}
