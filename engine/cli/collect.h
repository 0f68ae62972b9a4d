// collect.h — each stream's text collected, then written whole (--samples, --json): every token
// through the stream's --stop filter (stops.c) into its text, and with --n-probs the sampler's record
// of it (collect.c).
#ifndef NL_CLI_COLLECT_H
#define NL_CLI_COLLECT_H

#include <stdatomic.h>

#include "cli.h"
#include "stops.h"

// --n-probs: one stream's generated tokens, each with its top tokens, as the sampler recorded them.
typedef struct {
    int *ids;  // (n, 1 + width): the token, then its top tokens
    double *logprobs;  // (n, 1 + width): theirs
    size_t *at;  // (n) where the token's bytes start in the stream's text
    size_t n, cap;
} Probs;

// Each stream's text collected, then written whole (--samples, --json).
typedef struct {
    const NlTokenizer *tok;
    char **text;  // (N) growing NUL-terminated buffers
    size_t *len, *cap;
    atomic_int failed;  // set from any worker thread
    StopFilter *stop;  // (N) --stop's filter of each stream's text
    const char **stopped_by;  // (N) the stop text that ended the stream, or NULL
    NlSampler **samplers;  // (N) with --n-probs: what each stream's last draw recorded
    int width;  // --n-probs: the top tokens recorded a draw (0: none)
    Probs *probs;  // (N) with --n-probs
    EndTokens end;  // the tokens that end a stream, unrecorded
    // (N) END_BY_EOS or END_BY_BOS: the stream ended at one of them (each set by the worker running it)
    unsigned char *at_eos;
} Collect;

// An NlEmitFn on a Collect: the token's bytes through the stream's filter into its text.
int collect_token(int stream, int token, void *ctx);
// The streams' ends: the text each filter still holds back joins its text; -1 when out of memory.
int collect_end(Collect *c, int n);
void collect_free(Collect *c, int n);  // the n streams' texts, filters and records

#endif
