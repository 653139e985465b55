/*
 * Public keys and URLs from the command line or a fetched authorized_keys
 * file: checked as data before anything uses them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sshkey.h"

static const char *const key_types[] = {
	"ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
	"ssh-rsa", "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
};

static int b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes N characters of S into OUT (room for 3 * N / 4 bytes); the length,
 * or -1 when S is not canonical base64 (padding only at the end). */
static long b64_decode(const char *s, size_t n, unsigned char *out)
{
	uint32_t acc = 0;
	long len = 0;
	size_t pad = 0;
	int bits = 0;

	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int v = b64_value((unsigned char)s[i]);

		if (s[i] == '=' && i >= n - 2) {
			pad++;
			continue;
		}
		if (v < 0 || pad)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[len++] = (unsigned char)(acc >> bits);
		}
	}
	return len;
}

const char *sshkey_check(const char *line)
{
	size_t type_len, blob_len, i;
	const char *blob;
	unsigned char *raw;
	const char *why = NULL;
	uint32_t inner;
	long raw_len;
	int known = 0;

	if (strlen(line) > SSHKEY_MAX_LINE)
		return "is longer than 4096 characters";
	for (i = 0; line[i]; i++)
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e)
			return "holds control or non-ASCII characters";
	type_len = strcspn(line, " \t");
	for (i = 0; i < sizeof(key_types) / sizeof(key_types[0]); i++)
		if (strlen(key_types[i]) == type_len && !strncmp(line, key_types[i], type_len))
			known = 1;
	if (!known)
		return "is not a public key of a type Dropbear takes (ed25519, ecdsa, rsa)";
	blob = line + type_len;
	blob += strspn(blob, " \t");
	blob_len = strcspn(blob, " \t");
	if (blob_len < 16)
		return "has no key data after its type";
	raw = malloc(blob_len);
	if (!raw)
		return "could not be checked (out of memory)";
	raw_len = b64_decode(blob, blob_len, raw);
	/* The blob starts with the key type again, as a length-prefixed string. */
	if (raw_len < 4)
		why = "has key data that is not base64";
	else {
		inner = (uint32_t)raw[0] << 24 | (uint32_t)raw[1] << 16 | (uint32_t)raw[2] << 8 | raw[3];
		if (inner != type_len || (long)(4 + inner) > raw_len || memcmp(raw + 4, line, type_len))
			why = "has key data of another type than it names";
	}
	free(raw);
	return why;
}

static int host_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

const char *url_check(const char *url)
{
	const char *host, *p;
	long port;
	char *end;

	if (strncmp(url, "http://", 7))
		return "is not an http:// URL (the image fetches http only)";
	host = p = url + 7;
	if (*p == '[') {
		p++;
		while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F') ||
		       *p == ':' || *p == '.')
			p++;
		if (*p != ']' || p == host + 1)
			return "has a malformed [IPv6] host";
		p++;
	} else {
		while (host_char((unsigned char)*p))
			p++;
		if (p == host || p - host > 253)
			return "has no host name";
	}
	if (*p == ':') {
		/* strtol would skip blanks and take a sign. */
		if (p[1] < '0' || p[1] > '9')
			return "has a port that is not 1-65535";
		port = strtol(p + 1, &end, 10);
		if (end == p + 1 || port < 1 || port > 65535)
			return "has a port that is not 1-65535";
		p = end;
	}
	if (*p != '/')
		return "has no /PATH after its host";
	for (; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p > 0x7e || strchr("\"'\\`<>", *p))
			return "holds spaces, quotes or control characters";
	return NULL;
}

const char *keyurl_check(const char *value, char *url, size_t url_size, char pin[KEYURL_PIN + 1])
{
	static const char mark[] = "#sha256=";
	const char *hash = strchr(value, '#'), *why;
	size_t len = hash ? (size_t)(hash - value) : strlen(value);
	char plain[1025];

	if (len >= sizeof(plain))
		return "is longer than 1024 characters";
	memcpy(plain, value, len);
	plain[len] = 0;
	if ((why = url_check(plain)))
		return why;
	if (hash) {
		const char *hex = hash + sizeof(mark) - 1;

		if (strncmp(hash, mark, sizeof(mark) - 1))
			return "has a # part that is not #sha256= and the file's sha256 (64 hex digits)";
		if (strlen(hex) != KEYURL_PIN || strspn(hex, "0123456789abcdefABCDEF") != KEYURL_PIN)
			return "has a #sha256= pin that is not 64 hex digits";
	}
	if (url) {
		if (len >= url_size)
			return "is too long";
		memcpy(url, plain, len + 1);
	}
	if (pin) {
		pin[0] = 0;
		for (size_t i = 0; hash && i < KEYURL_PIN; i++) {
			char c = hash[sizeof(mark) - 1 + i];

			pin[i] = (char)(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
			pin[i + 1] = 0;
		}
	}
	return NULL;
}
