#ifndef EXTRESCUE_SSHKEY_H
#define EXTRESCUE_SSHKEY_H

#include <stddef.h>

#define SSHKEY_MAX_LINE 4096	/* an RSA 16384 key is about 2.8 KB of text */

/*
 * NULL when LINE is one public key as authorized_keys holds it, "TYPE BASE64
 * [COMMENT]", of a type Dropbear takes, its base64 decoding to a blob that
 * names the same type; otherwise why not. Options before the key are not
 * accepted: a rescue login never needs them.
 */
const char *sshkey_check(const char *line);

/* NULL when URL is http://HOST[:PORT]/PATH as the image's wget can fetch
 * it; otherwise why not. */
const char *url_check(const char *url);

#define KEYURL_PIN 64	/* hex digits of a sha256 */

/*
 * NULL when VALUE is a URL of an authorized_keys file as rescue.ssh_key=
 * takes it: http://HOST[:PORT]/PATH, then optionally #sha256= and the 64 hex
 * digits of the file's sha256 (the pin); otherwise why not. When taken, URL
 * (URL_SIZE bytes) gets the URL without its pin and PIN the pin in lower case,
 * or "" without one; either may be NULL.
 */
const char *keyurl_check(const char *value, char *url, size_t url_size, char pin[KEYURL_PIN + 1]);

#endif
