// stops.c — --stop: one filter a stream's new text passes through, token by token, for the streamer
// (stream.c) and the collector (cmd_generate.c) alike: the text before the first stop text goes
// out, and an end that may still become one is held back, so that a stop text is never let out.
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <limits.h>

#include "cli.h"
#include "stops.h"

// The start of the first stop text in text[0..len), and in *which its index, or len when there is
// none; only matches ending after `from` are looked for (text[0..from) held none).
static size_t stop_find(const StrList *stops, const char *text, size_t len, size_t from, int *which) {
    size_t first = len;
    for (int i = 0; i < stops->n; i++) {
        size_t m = strlen(stops->items[i]), start = from >= m ? from - m + 1 : 0;
        if (m == 0 || m > len || start > len - m) continue;
        const char *hit = memmem(text + start, len - start, stops->items[i], m);
        if (hit && (size_t)(hit - text) < first) first = (size_t)(hit - text), *which = i;
    }
    return first;
}

// The longest end of text[0..len) that is the start of a stop text, shorter than it (0: none).
static size_t stop_partial(const StrList *stops, const char *text, size_t len) {
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

// Room for `more` bytes after the held ones, which move to the front (what went out last goes).
static int make_room(StopFilter *f, size_t more) {
    if (f->out) memmove(f->text, f->text + f->out, f->n - f->out);
    f->n -= f->out;
    f->out = 0;
    if (f->n + more <= f->cap) return 0;
    char *bigger = realloc(f->text, 2 * (f->n + more));
    if (!bigger) return -1;
    f->text = bigger;
    f->cap = 2 * (f->n + more);
    return 0;
}

int stop_filter_push(StopFilter *f, const char *bytes, size_t len, const char **out, size_t *n_out, int *which) {
    if (!f->stops->n) {  // nothing to look for: every byte goes out at once
        *out = bytes, *n_out = len;
        return 0;
    }
    if (make_room(f, len) != 0) return -1;
    size_t from = f->n;
    if (len) memcpy(f->text + from, bytes, len);
    f->n += len;
    size_t at = stop_find(f->stops, f->text, f->n, from, which);
    *out = f->text;
    if (at < f->n) {  // the text before it goes; the filter starts over empty
        *n_out = at;
        f->n = f->out = 0;
        return 1;
    }
    *n_out = f->out = f->n - stop_partial(f->stops, f->text, f->n);
    return 0;
}

size_t stop_filter_held(const StopFilter *f) { return f->n - f->out; }

void stop_filter_flush(StopFilter *f, const char **out, size_t *n_out) {
    *out = f->text + f->out;
    *n_out = f->n - f->out;
    f->n = f->out = 0;
}

void stop_filter_free(StopFilter *f) {
    free(f->text);
    f->text = NULL;
    f->n = f->out = f->cap = 0;
}
