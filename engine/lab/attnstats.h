// attnstats.h — the attention statistics' sums, layer by layer and head by head, from the queries a
// watcher sees (NlObserver.attention); the hidden-state statistics (stats.c) own one when asked
// (NL_STATS_ATTENTION) and read their figures from it (normlab_lab.h NlAttentionStats).
#ifndef NL_ATTNSTATS_H
#define NL_ATTNSTATS_H

#include <stddef.h>

#include "normlab_lab.h"

#pragma GCC visibility push(hidden)

typedef struct NlAttnSums NlAttnSums;

// Sums for L layers of H heads, queries at positions 0..T-1 of their window; NULL when out of memory.
NlAttnSums *nl_attn_sums_create(size_t L, size_t H, size_t T);
void nl_attn_sums_free(NlAttnSums *sums);
// One query of head `head` in layer: p (len) over keys 0..len-1, the query at position len - 1 of
// sequence b of its call, and the distribution's entropy in nats.
void nl_attn_sums_add(NlAttnSums *sums, int layer, size_t b, size_t head, const float *p, size_t len, double entropy);
// The means over the queries seen (queries 0 when none).
void nl_attn_sums_read(const NlAttnSums *sums, int layer, int head, NlAttentionStats *out);
// The mean share on the first position of the queries at position t; NaN when none was seen.
double nl_attn_sums_sink_at(const NlAttnSums *sums, int layer, int head, size_t t);
// Keeps the full pattern of one head of one layer: the first window's (sequence 0 of the first call).
// -1 when out of memory.
int nl_attn_sums_keep_pattern(NlAttnSums *sums, int layer, int head);
// That pattern (rows, rows): row i the probabilities of query i over keys 0..i, 0 beyond; NULL when none.
const float *nl_attn_sums_pattern(const NlAttnSums *sums, size_t *rows);

#pragma GCC visibility pop

#endif
