// stops.h — where a --stop text ends a stream: one filter the streamer and the collector share (stops.c).
#ifndef NL_CLI_STOPS_H
#define NL_CLI_STOPS_H

#include <stddef.h>

#include "cli.h"

// --stop's filter, one per stream. Set .stops (none: n 0, every byte passes at once).
typedef struct {
    const StrList *stops;  // --stop (none: n 0)
    char *text;  // (cap) text[out..n): new text held back while it may still begin a stop text
    size_t n, out, cap;  // text[0..out) went out at the last push
} StopFilter;
// A token's bytes through f: *out, *n_out the text that may now go out (borrowed until the next
// call). Returns 0; 1 when a stop text was found (the text out ends where it starts, *which is its
// index, and f starts over empty); -1 when out of memory.
int stop_filter_push(StopFilter *f, const char *bytes, size_t len, const char **out, size_t *n_out, int *which);
size_t stop_filter_held(const StopFilter *f);  // the bytes held back now
// The end of a stream: the text still held back, to go out (f starts over empty).
void stop_filter_flush(StopFilter *f, const char **out, size_t *n_out);
void stop_filter_free(StopFilter *f);

// The tokens that end a stream unprinted, llama.cpp's end-of-generation set: a sentencepiece
// model's eos (</s>), and its bos (<s>) when sampled, where llama2.c's run.c ends a story; -1: none.
typedef struct {
    int eos, bos;
} EndTokens;
enum { END_BY_EOS = 1, END_BY_BOS = 2 };  // which of them ended a stream, as bits
static inline int end_tokens_has(EndTokens e, int token) { return token >= 0 && (token == e.eos || token == e.bos); }
static inline int end_tokens_any(EndTokens e) { return e.eos >= 0 || e.bos >= 0; }

#endif
