/*
 * libFuzzer target for the superblock and feature parsing of extscan: any
 * bytes must be parsed or refused without a crash, a hang or a sanitizer
 * report, and every judgement must then work on the result.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../lib/extsb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct extsb sb;
	const char *why;
	char out[1024], blocker[96];

	if (extsb_parse(data, size, &sb, &why) != 0)
		return 0;
	(void) extsb_kind(&sb);
	extsb_state(&sb, out, sizeof(out));
	extsb_features(&sb, out, sizeof(out));
	/* A tiny buffer must truncate safely, too. */
	extsb_features(&sb, out, 8);
	extsb_state(&sb, out, 4);
	(void) extsb_access(&sb, &extsb_kernel, blocker, sizeof(blocker));
	(void) extsb_access(&sb, &extsb_e2fsck, blocker, 3);
	return 0;
}
