/*
 * libFuzzer target for the network parameters (ip=, nameserver=, vlan=,
 * ifname=, BOOTIF=). The first byte picks the parameter, the rest is its
 * value. Beyond the sanitizers: a value taken must come out as the line the
 * boot scripts `read`, words of harmless characters, one space apart, as
 * many as netargs.h promises.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/netargs.h"

static const char *const params[] = {"ip", "nameserver", "vlan", "ifname", "BOOTIF", "ipx"};

/* Words of OUT, or -1 when a word is empty or holds anything but [A-Za-z0-9.:/_-]. */
static int words(const char *out)
{
	int n = 0;

	for (const char *p = out;; p++) {
		size_t len = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.:/_-");

		if (!len)
			return -1;
		n++;
		p += len;
		if (!*p)
			return n;
		if (*p != ' ')
			return -1;
	}
}

static int expected(const char *param, const char *out)
{
	if (!strcmp(param, "ip"))
		return !strncmp(out, "static ", 7) ? 7 : 2;
	if (!strcmp(param, "vlan"))
		return 3;
	if (!strcmp(param, "ifname"))
		return 2;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *param, *why;
	char out[NETARGS_LINE], *value;

	if (!size)
		return 0;
	param = params[data[0] % (sizeof(params) / sizeof(params[0]))];
	/* The value in a buffer of its own size, so an overread shows. */
	value = malloc(size);
	if (!value)
		abort();
	memcpy(value, data + 1, size - 1);
	value[size - 1] = 0;
	why = netarg_parse(param, value, out, sizeof(out));
	if (!netarg_known(param) != !strcmp(param, "ipx"))
		abort();
	/* What OUT holds after a refusal is not promised: only a taken value is checked. */
	if (why ? !*why : *out && words(out) != expected(param, out))
		abort();
	/* ip=off and ip=none take nothing. */
	if (!why && !*out && strcmp(param, "ip"))
		abort();
	free(value);
	return 0;
}
