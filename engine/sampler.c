// sampler.c — seeded PRNG and the temperature -> top-k -> top-p sampler.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "normlab.h"
#include "sampler.h"

typedef struct {
    double p;
    int id;
} Candidate;

struct NlSampler {
    int V;
    NlSamplerParams params;
    NlRng rng;
    Candidate *cands;  // (V) scratch: sorted by descending probability up to n_sorted
    Candidate *spare;  // (V) scratch for the radix sort
    int n_sorted;
    int *ids;  // (V) kept candidate ids, by descending probability
    double *probs;  // (V) their renormalised probabilities
};

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void nl_rng_seed(NlRng *rng, uint64_t seed) {
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t nl_rng_next(NlRng *rng) {
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double nl_rng_uniform(NlRng *rng) { return (double)(nl_rng_next(rng) >> 11) * 0x1.0p-53; }

int nl_sampler_create(NlSampler **out, int vocab_size, NlSamplerParams params, uint64_t seed, NlError *err) {
    *out = NULL;
    if (vocab_size < 1 || !(params.temperature >= 0.0 && params.temperature <= 1e300) || params.top_k < 0 ||
        !(params.top_p > 0.0 && params.top_p <= 1.0)) {  // written so that NaN fails too
        nl_error(err, NL_ERR_ARG,
                 "sampler: need vocab_size >= 1, a temperature in [0, 1e300], top_k >= 0 and top_p in (0, 1]; "
                 "got %d, %g, %d, %g",
                 vocab_size, params.temperature, params.top_k, params.top_p);
        return -1;
    }
    NlSampler *s = calloc(1, sizeof *s);
    if (s) {
        s->cands = malloc((size_t)vocab_size * sizeof *s->cands);
        s->spare = malloc((size_t)vocab_size * sizeof *s->spare);
        s->ids = malloc((size_t)vocab_size * sizeof *s->ids);
        s->probs = malloc((size_t)vocab_size * sizeof *s->probs);
    }
    if (!s || !s->cands || !s->spare || !s->ids || !s->probs) {
        nl_sampler_free(s);
        nl_error(err, NL_ERR_NOMEM, "out of memory for the sampler");
        return -1;
    }
    s->V = vocab_size;
    s->params = params;
    nl_rng_seed(&s->rng, seed);
    *out = s;
    return 0;
}

void nl_sampler_free(NlSampler *s) {
    if (!s) return;
    free(s->cands);
    free(s->spare);
    free(s->ids);
    free(s->probs);
    free(s);
}

static int by_prob_desc(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

// Sorts c[0..n) in by_prob_desc order, in O(n): the candidates are put back in id order (their ids
// are distinct and below V), then a stable least-significant-digit radix sort on the bits of -p
// (p >= 0, so its bit pattern orders like the number) keeps equal p in id order.
enum { RADIX_BITS = 11, RADIX = 1 << RADIX_BITS };

static void radix_sort(NlSampler *s, Candidate *c, int n) {
    Candidate *a = c, *b = s->spare;
    for (int i = 0; i < s->V; i++) b[i].id = -1;  // back to id order: scatter by id, then gather
    for (int i = 0; i < n; i++) b[c[i].id] = c[i];
    for (int i = 0, k = 0; i < s->V; i++)
        if (b[i].id >= 0) a[k++] = b[i];
    for (int shift = 0; shift < 64; shift += RADIX_BITS) {
        size_t count[RADIX + 1] = {0};
        for (int i = 0; i < n; i++) {
            uint64_t key;
            memcpy(&key, &a[i].p, sizeof key);
            count[((~key) >> shift & (RADIX - 1)) + 1]++;
        }
        for (int d = 0; d < RADIX; d++) count[d + 1] += count[d];
        for (int i = 0; i < n; i++) {
            uint64_t key;
            memcpy(&key, &a[i].p, sizeof key);
            b[count[(~key) >> shift & (RADIX - 1)]++] = a[i];
        }
        Candidate *t = a;
        a = b;
        b = t;
    }
    if (a != c) memcpy(c, a, (size_t)n * sizeof *c);
}

// Makes cands[0..i] the i + 1 most likely in final order (descending probability, ties by id: a
// total order, so the result does not depend on how it is reached). Sampling usually stops after a
// few candidates, so the first ones are picked by selection, O(V) each, and the rest sorted at once
// (radix for many, qsort for few) only if the walk goes further. A large vocabulary selects only
// two: 16 selections over 50,257 candidates cost more than the radix sort.
enum { SELECT_SMALL = 16, SELECT_LARGE = 2, RADIX_MIN = 512 };

static void sort_through(NlSampler *s, int i) {
    if (i < s->n_sorted) return;
    if (i >= (s->V >= RADIX_MIN ? SELECT_LARGE : SELECT_SMALL)) {
        int rest = s->V - s->n_sorted;
        if (rest >= RADIX_MIN) radix_sort(s, s->cands + s->n_sorted, rest);
        else qsort(s->cands + s->n_sorted, (size_t)rest, sizeof *s->cands, by_prob_desc);
        s->n_sorted = s->V;
        return;
    }
    for (; s->n_sorted <= i; s->n_sorted++) {
        int best = s->n_sorted;
        for (int j = best + 1; j < s->V; j++)
            if (by_prob_desc(&s->cands[j], &s->cands[best]) < 0) best = j;
        Candidate t = s->cands[best];
        s->cands[best] = s->cands[s->n_sorted];
        s->cands[s->n_sorted] = t;
    }
}

// Applies temperature, top-k and top-p: cands[0..n) are the kept candidates (sorted as far as the
// cuts needed), total their probability mass. Returns n, or -1 on a non-finite logit.
static int keep(NlSampler *s, const float *logits, double *total_out) {
    int V = s->V, best = 0;
    for (int i = 0; i < V; i++) {
        if (!isfinite(logits[i])) return -1;
        if (logits[i] > logits[best]) best = i;
    }
    s->n_sorted = 0;
    if (s->params.temperature == 0.0) {
        s->cands[0] = (Candidate){1.0, best};
        s->n_sorted = 1;
        *total_out = 1.0;
        return 1;
    }
    // Temperature: p_i proportional to exp((l_i - max) / t), in double.
    double max = logits[best], total = 0.0;
    for (int i = 0; i < V; i++) {
        s->cands[i] = (Candidate){exp(((double)logits[i] - max) / s->params.temperature), i};
        total += s->cands[i].p;
    }
    // Top-k keeps the k most likely; top-p then keeps the shortest prefix whose mass reaches p.
    int n = (s->params.top_k > 0 && s->params.top_k < V) ? s->params.top_k : V;
    if (n < V) {
        sort_through(s, n - 1);
        total = 0.0;
        for (int i = 0; i < n; i++) total += s->cands[i].p;
    }
    if (s->params.top_p < 1.0) {
        double cum = 0.0;
        int m = 0;
        while (m < n && cum < s->params.top_p * total) {
            sort_through(s, m);
            cum += s->cands[m++].p;
        }
        n = m > 0 ? m : 1;
        total = cum > 0.0 ? cum : s->cands[0].p;
    }
    *total_out = total;
    return n;
}

int nl_sampler_candidates(NlSampler *s, const float *logits, const int **ids, const double **probs) {
    double total;
    int n = keep(s, logits, &total);
    if (n < 0) return -1;
    sort_through(s, n - 1);
    for (int i = 0; i < n; i++) {
        s->ids[i] = s->cands[i].id;
        s->probs[i] = s->cands[i].p / total;
    }
    *ids = s->ids;
    *probs = s->probs;
    return n;
}

// Inverse CDF over the kept candidates in sorted order, sorting only as far as the draw reaches.
int nl_sampler_sample(NlSampler *s, const float *logits) {
    double total;
    int n = keep(s, logits, &total);
    if (n < 0) return -1;
    if (n == 1) return s->cands[0].id;
    double u = nl_rng_uniform(&s->rng), cum = 0.0;
    for (int i = 0; i < n; i++) {
        sort_through(s, i);
        cum += s->cands[i].p / total;
        if (u < cum) return s->cands[i].id;
    }
    return s->cands[n - 1].id;  // u within rounding of 1
}
