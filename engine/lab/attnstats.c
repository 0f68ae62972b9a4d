// attnstats.c — attention statistics (attnstats.h): per layer and head, the mean over queries of the
// attention distribution's entropy, its share on the first position (the sink) and on the query's
// own, and the distance it reaches back; the sink share by query position; one head's full pattern.
#include "attnstats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double entropy, distance;  // sums over every query: bits, positions
    double sink, self, uniform;  // sums over the queries past a window's first: shares, and 1/(t+1)
    uint64_t queries, past_first;
} HeadSums;

struct NlAttnSums {
    size_t L, H, T;
    HeadSums *heads;  // (L, H)
    double *sink_at;  // (L, H, T) the first position's share summed by query position
    uint64_t *queries_at;  // (L, T) the queries seen at each position (every head sees the same)
    int pattern_layer, pattern_head;  // -1: no pattern kept
    float *pattern;  // (T, T)
    size_t pattern_rows;  // rows kept so far
    int pattern_done;  // the first window has passed
};

NlAttnSums *nl_attn_sums_create(size_t L, size_t H, size_t T) {
    NlAttnSums *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    *a = (NlAttnSums){.L = L, .H = H, .T = T, .pattern_layer = -1, .pattern_head = -1};
    a->heads = calloc(L * H, sizeof *a->heads);
    a->sink_at = calloc(L * H * T, sizeof *a->sink_at);
    a->queries_at = calloc(L * T, sizeof *a->queries_at);
    if (!a->heads || !a->sink_at || !a->queries_at) {
        nl_attn_sums_free(a);
        return NULL;
    }
    return a;
}

void nl_attn_sums_free(NlAttnSums *a) {
    if (!a) return;
    free(a->heads);
    free(a->sink_at);
    free(a->queries_at);
    free(a->pattern);
    free(a);
}

// Row len - 1 of the kept pattern, while the first window's rows arrive (in order, from query 0:
// a query at or before the last kept one starts the next window).
static void keep_row(NlAttnSums *a, const float *p, size_t len) {
    if (a->pattern_done || len > a->T) return;
    if (len <= a->pattern_rows || len != a->pattern_rows + 1) {
        a->pattern_done = a->pattern_rows > 0;
        return;
    }
    memcpy(a->pattern + (len - 1) * a->T, p, len * sizeof *p);
    a->pattern_rows = len;
}

void nl_attn_sums_add(NlAttnSums *a, int layer, size_t b, size_t head, const float *p, size_t len, double entropy) {
    if (layer < 0 || (size_t)layer >= a->L || head >= a->H || len == 0 || len > a->T) return;
    size_t t = len - 1;
    double distance = 0.0;
    for (size_t j = 0; j < len; j++) distance += (double)p[j] * (double)(t - j);
    HeadSums *h = &a->heads[(size_t)layer * a->H + head];
    h->entropy += entropy / log(2.0);
    h->distance += distance;
    h->queries++;
    if (t > 0) {  // query 0 has no key but itself: its sink and self shares are 1 by construction
        h->sink += p[0];
        h->self += p[t];
        h->uniform += 1.0 / (double)len;
        h->past_first++;
    }
    a->sink_at[((size_t)layer * a->H + head) * a->T + t] += p[0];
    if (head == 0) a->queries_at[(size_t)layer * a->T + t]++;
    if (b == 0 && layer == a->pattern_layer && (int)head == a->pattern_head) keep_row(a, p, len);
}

void nl_attn_sums_read(const NlAttnSums *a, int layer, int head, NlAttentionStats *out) {
    const HeadSums *h = &a->heads[(size_t)layer * a->H + (size_t)head];
    double n = h->queries ? (double)h->queries : 1.0, m = h->past_first ? (double)h->past_first : 1.0;
    *out = (NlAttentionStats){.entropy_bits = h->entropy / n,
                              .sink = h->sink / m,
                              .self = h->self / m,
                              .uniform = h->uniform / m,
                              .distance = h->distance / n,
                              .queries = h->queries,
                              .queries_past_first = h->past_first};
}

double nl_attn_sums_sink_at(const NlAttnSums *a, int layer, int head, size_t t) {
    uint64_t n = a->queries_at[(size_t)layer * a->T + t];
    return n ? a->sink_at[((size_t)layer * a->H + (size_t)head) * a->T + t] / (double)n : NAN;
}

int nl_attn_sums_keep_pattern(NlAttnSums *a, int layer, int head) {
    if (!a->pattern) a->pattern = calloc(a->T * a->T, sizeof *a->pattern);
    if (!a->pattern) return -1;
    a->pattern_layer = layer;
    a->pattern_head = head;
    return 0;
}

const float *nl_attn_sums_pattern(const NlAttnSums *a, size_t *rows) {
    *rows = a->pattern_rows;
    return a->pattern_rows ? a->pattern : NULL;
}
