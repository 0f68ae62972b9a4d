// stops.c — --stop: where a stop text first appears in a stream's new text, and how much of the
// text's end might still become one (held back while streaming, so a stop text is never printed).
#define _GNU_SOURCE
#include <string.h>

#include <limits.h>

#include "cli.h"
#include "stops.h"

size_t stop_find(const StrList *stops, const char *text, size_t len, size_t from, int *which) {
    size_t first = len;
    for (int i = 0; i < stops->n; i++) {
        size_t m = strlen(stops->items[i]), start = from >= m ? from - m + 1 : 0;
        if (m == 0 || m > len || start > len - m) continue;
        const char *hit = memmem(text + start, len - start, stops->items[i], m);
        if (hit && (size_t)(hit - text) < first) first = (size_t)(hit - text), *which = i;
    }
    return first;
}

size_t stop_partial(const StrList *stops, const char *text, size_t len) {
    size_t most = 0;
    for (int i = 0; i < stops->n; i++) {
        size_t m = strlen(stops->items[i]);
        for (size_t k = m - 1 < len ? m - 1 : len; k > most; k--)
            if (memcmp(text + len - k, stops->items[i], k) == 0) {
                most = k;
                break;
            }
    }
    return most;
}
