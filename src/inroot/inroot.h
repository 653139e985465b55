#ifndef EXTRESCUE_INROOT_H
#define EXTRESCUE_INROOT_H
#include <stddef.h>

/* PATH resolved inside the directory ROOT (an fd) as the mounted system
 * would resolve it, with the openat2 RESOLVE_* flags RESOLVE added to
 * RESOLVE_IN_ROOT and RESOLVE_NO_MAGICLINKS; opened with FLAGS. The fd, or -1
 * with errno. */
int inroot_open(int root, const char *path, int flags, unsigned long long resolve);

/*
 * Standard input becomes the contents of the regular file PATH resolves to
 * inside ROOT, on ROOT's own filesystem: written to a file created beside it
 * under a new name, synced, renamed over it. With SUFFIX (no '/'), the old
 * contents are first copied to a new file of that name plus SUFFIX. WHERE
 * (SIZE bytes) gets the path replaced; WHY, on failure, what went wrong.
 * 0, or -1.
 */
int inroot_replace(int root, const char *path, const char *suffix, char *where, size_t size,
		   char *why, size_t why_size);

#endif
