// sampler.c — seeded PRNG and the temperature -> top-k -> top-p sampler.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "normlab.h"

typedef struct {
    double p;
    int id;
} Candidate;

struct NlSampler {
    int V;
    NlSamplerParams params;
    NlRng rng;
    Candidate *cands;  // (V) scratch for sorting
    int *ids;          // (V) kept candidate ids, by descending probability
    double *probs;     // (V) their renormalised probabilities
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
    NlSampler *s = calloc(1, sizeof *s);
    if (s) {
        s->cands = malloc((size_t)vocab_size * sizeof *s->cands);
        s->ids = malloc((size_t)vocab_size * sizeof *s->ids);
        s->probs = malloc((size_t)vocab_size * sizeof *s->probs);
    }
    if (!s || !s->cands || !s->ids || !s->probs) {
        nl_sampler_free(s);
        snprintf(err->msg, sizeof err->msg, "out of memory for the sampler");
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
    free(s->ids);
    free(s->probs);
    free(s);
}

static int by_prob_desc(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int nl_sampler_candidates(NlSampler *s, const float *logits, const int **ids, const double **probs) {
    int V = s->V, best = 0;
    for (int i = 0; i < V; i++) {
        if (!isfinite(logits[i])) return -1;
        if (logits[i] > logits[best]) best = i;
    }
    *ids = s->ids;
    *probs = s->probs;
    if (s->params.temperature == 0.0) {
        s->ids[0] = best;
        s->probs[0] = 1.0;
        return 1;
    }
    // Temperature: p_i proportional to exp((l_i - max) / t), in double.
    double max = logits[best], total = 0.0;
    for (int i = 0; i < V; i++) {
        s->cands[i] = (Candidate){exp(((double)logits[i] - max) / s->params.temperature), i};
        total += s->cands[i].p;
    }
    qsort(s->cands, (size_t)V, sizeof *s->cands, by_prob_desc);
    // Top-k keeps the k most likely; top-p then keeps the shortest prefix whose mass reaches p.
    int n = (s->params.top_k > 0 && s->params.top_k < V) ? s->params.top_k : V;
    if (n < V) {
        total = 0.0;
        for (int i = 0; i < n; i++) total += s->cands[i].p;
    }
    if (s->params.top_p < 1.0) {
        double cum = 0.0;
        int m = 0;
        while (m < n && cum < s->params.top_p * total) cum += s->cands[m++].p;
        n = m > 0 ? m : 1;
        total = cum > 0.0 ? cum : s->cands[0].p;
    }
    for (int i = 0; i < n; i++) {
        s->ids[i] = s->cands[i].id;
        s->probs[i] = s->cands[i].p / total;
    }
    return n;
}

int nl_sampler_sample(NlSampler *s, const float *logits) {
    const int *ids;
    const double *probs;
    int n = nl_sampler_candidates(s, logits, &ids, &probs);
    if (n < 0) return -1;
    if (n == 1) return ids[0];
    double u = nl_rng_uniform(&s->rng), cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += probs[i];
        if (u < cum) return ids[i];
    }
    return ids[n - 1];  // u within rounding of 1
}
