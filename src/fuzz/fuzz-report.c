/*
 * libFuzzer target for what report parses: the command line it redacts,
 * rescue-fsck's records, line lists, os-release, the address list, a first
 * line and extscan's JSON. The input is those texts in that order separated
 * by NUL bytes (a NUL ends a text read by report anyway); a missing one is an
 * absent file. Beyond the sanitizers, the document they make must be valid
 * JSON and a redaction cut short must be a prefix of the whole.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The parsers are report's static functions: built into this file, main left out. */
#include "../report/report.c"

enum { CMDLINE, FSCK, LINES, OS_RELEASE, ADDRESSES, LINE, EXTSCAN, PARTS };

static char *captured;
static size_t captured_size;

/* JSON as RFC 8259 has it; P..END, returns past the value or NULL. */
static const char *json_value(const char *p, const char *end, int depth);

static const char *json_space(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static const char *json_string(const char *p, const char *end)
{
	if (p == end || *p++ != '"')
		return NULL;
	while (p < end && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p++ != '\\')
			continue;
		if (p == end)
			return NULL;
		if (*p == 'u') {
			for (int i = 1; i <= 4; i++)
				if (p + i >= end || !strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
					return NULL;
			p += 5;
		} else if (*p && strchr("\"\\/bfnrt", *p))
			p++;
		else
			return NULL;
	}
	return p < end ? p + 1 : NULL;
}

static const char *json_digits(const char *p, const char *end)
{
	const char *start = p;

	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p > start ? p : NULL;
}

static const char *json_number(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if (!(p = json_digits(p, end)))
		return NULL;
	if (p < end && *p == '.' && !(p = json_digits(p + 1, end)))
		return NULL;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (!(p = json_digits(p, end)))
			return NULL;
	}
	return p;
}

/* An object (CLOSE '}') or an array (CLOSE ']') after its opening bracket. */
static const char *json_members(const char *p, const char *end, char close, int depth)
{
	p = json_space(p, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		if (close == '}') {
			if (!(p = json_string(p, end)))
				return NULL;
			p = json_space(p, end);
			if (p == end || *p++ != ':')
				return NULL;
		}
		if (!(p = json_value(p, end, depth + 1)))
			return NULL;
		p = json_space(p, end);
		if (p < end && *p == ',') {
			p = json_space(p + 1, end);
			continue;
		}
		return p < end && *p == close ? p + 1 : NULL;
	}
}

static const char *json_value(const char *p, const char *end, int depth)
{
	p = json_space(p, end);
	if (p == end || depth > 32)
		return NULL;
	switch (*p) {
	case '{': return json_members(p + 1, end, '}', depth);
	case '[': return json_members(p + 1, end, ']', depth);
	case '"': return json_string(p, end);
	case 't': return end - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
	case 'f': return end - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
	case 'n': return end - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
	default: return json_number(p, end);
	}
}

static int valid_json(const char *p, size_t n)
{
	const char *end = p + n;

	p = json_value(p, end, 0);
	return p && json_space(p, end) == end;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FILE *f = tmpfile();

	(void)argc;
	(void)argv;
	/* What report prints lands in a file of our own, read back to be checked. */
	if (!f || dup2(fileno(f), STDOUT_FILENO) < 0)
		abort();
	/* Nothing of the machine running the fuzzer enters the document. */
	root = "/nonexistent-fuzz-report-root";
	return 0;
}

/* The texts of DATA, each in a buffer of its own size so overreads show. */
static void split(const uint8_t *data, size_t size, char *part[PARTS])
{
	size_t at = 0;

	for (int i = 0; i < PARTS; i++) {
		size_t n = 0;

		while (at + n < size && data[at + n])
			n++;
		part[i] = NULL;
		if (at < size || i == 0) {
			part[i] = malloc(n + 1);
			if (!part[i])
				abort();
			memcpy(part[i], data + at, n);
			part[i][n] = 0;
		}
		at += n + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *part[PARTS], *again, whole[MAX_CMDLINE + 1], cut[16];
	long got;

	split(data, size, part);
	/* The cmdline text again, for the short redaction (redact() splits in place). */
	again = strdup(part[CMDLINE]);
	if (!again)
		abort();

	fflush(stdout);
	if (ftruncate(STDOUT_FILENO, 0) || lseek(STDOUT_FILENO, 0, SEEK_SET))
		abort();
	printf("{\"extrescue\": ");
	jversion(part[OS_RELEASE]);
	printf(", \"kernel\": ");
	jline(part[LINE]);
	printf(", \"interfaces\": ");
	interfaces();
	printf(", \"eth0\": ");
	jaddresses(part[ADDRESSES], "eth0");
	printf(", \"e\": ");
	jaddresses(part[ADDRESSES], "e");
	printf(", \"cmdline\": ");
	jcmdline(part[CMDLINE]);
	printf(", \"disks\": ");
	block_devices(0);
	printf(", \"fsck\": ");
	jfsck(part[FSCK]);
	printf(", \"errors\": ");
	jlines(part[LINES]);
	printf("}\n");
	fflush(stdout);
	got = lseek(STDOUT_FILENO, 0, SEEK_CUR);
	if (got < 0)
		abort();
	if ((size_t)got > captured_size) {
		captured_size = (size_t)got;
		captured = realloc(captured, captured_size);
		if (!captured)
			abort();
	}
	if (pread(STDOUT_FILENO, captured, (size_t)got, 0) != got)
		abort();
	if (!valid_json(captured, (size_t)got)) {
		fprintf(stderr, "fuzz-report: not JSON: %.*s\n", (int)got, captured);
		abort();
	}

	/* extscan's text is copied as it is when it looks whole: memory safety only. */
	jextscan(part[EXTSCAN]);

	/* A short buffer cuts the redaction, never overruns it or changes what it holds. */
	free(part[CMDLINE]);
	part[CMDLINE] = strdup(again);
	if (!part[CMDLINE])
		abort();
	redact(part[CMDLINE], whole, sizeof(whole));
	redact(again, cut, sizeof(cut));
	if (strlen(cut) >= sizeof(cut) || strncmp(cut, whole, sizeof(cut) - 1))
		abort();
	redact(again, cut, 1);
	if (cut[0])
		abort();

	free(again);
	for (int i = 0; i < PARTS; i++)
		free(part[i]);
	return 0;
}
