#ifndef EXTRESCUE_KARGS_H
#define EXTRESCUE_KARGS_H

/*
 * One word of the command line at S, split as the kernel does: spaces
 * separate words, double quotes group, no other escapes; the quotes around a
 * value (or the whole word) are not part of it. Sets PARAM and VALUE (NULL
 * without '='), ends them in place, and returns where the next word starts.
 */
char *kargs_next(char *s, char **param, char **value);

#endif
