// escape.h — -e's escapes (escape.c).
#ifndef NL_CLI_ESCAPE_H
#define NL_CLI_ESCAPE_H

#include <stddef.h>

// -e's escapes in text (a NUL-terminated argument) into a new *out of *len bytes; EXIT_USAGE with
// "WHAT: unknown escape ..." printed when one is not known.
int unescape(const char *what, const char *text, char **out, size_t *len);

#endif
