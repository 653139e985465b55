#ifndef EXTRESCUE_SSHKEY_H
#define EXTRESCUE_SSHKEY_H

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

#endif
