// stops.h — where a --stop text ends a stream (stops.c).
#ifndef NL_CLI_STOPS_H
#define NL_CLI_STOPS_H

#include <stddef.h>

#include "cli.h"

// The start of the first stop text in text[0..len), and in *which its index, or len when there is
// none; only matches ending after `from` are looked for (text[0..from) held none).
size_t stop_find(const StrList *stops, const char *text, size_t len, size_t from, int *which);
// The longest end of text[0..len) that is the start of a stop text, shorter than it (0: none).
size_t stop_partial(const StrList *stops, const char *text, size_t len);

#endif
