/*
 * The kernel command line split as the kernel's next_arg() splits it.
 */
#include <stddef.h>

#include "kargs.h"

char *kargs_next(char *s, char **param, char **value)
{
	int in_quote = 0, quoted = 0;
	size_t i, equals = 0;

	if (*s == '"') {
		s++;
		in_quote = quoted = 1;
	}
	for (i = 0; s[i]; i++) {
		if ((s[i] == ' ' || s[i] == '\t' || s[i] == '\n') && !in_quote)
			break;
		if (!equals && s[i] == '=')
			equals = i;
		if (s[i] == '"')
			in_quote = !in_quote;
	}
	*param = s;
	*value = NULL;
	if (equals) {
		s[equals] = 0;
		*value = s + equals + 1;
		if (**value == '"') {
			(*value)++;
			if (i > 0 && s[i - 1] == '"')
				s[i - 1] = 0;
		}
	}
	if (quoted && i > 0 && s[i - 1] == '"')
		s[i - 1] = 0;
	if (s[i]) {
		s[i] = 0;
		i++;
	}
	while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')
		i++;
	return s + i;
}
