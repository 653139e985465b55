/* Prometheus' text exposition format (version 0.0.4), for rescue.metrics=:
 * one family's HELP and TYPE, and label values from hostile text. A value
 * the Pushgateway cannot parse would make it refuse the whole push, so every
 * byte outside printable ASCII becomes '?' (the format wants UTF-8; a
 * label's bytes come from a disk) and \ " are escaped. */
#ifndef PROMTEXT_H
#define PROMTEXT_H

#include <stdio.h>

/* At most LIMIT bytes of S as a quoted label value. */
static inline void prom_value(const char *s, size_t limit)
{
	putchar('"');
	for (size_t i = 0; s && i < limit && s[i]; i++) {
		unsigned char c = (unsigned char) s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else
			putchar(c >= 0x20 && c < 0x7f ? c : '?');
	}
	putchar('"');
}

/* TYPE is gauge or counter; HELP is ours (plain ASCII, no backslash). */
static inline void prom_family(const char *name, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

#endif
