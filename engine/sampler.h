// sampler.h — the sampler's internals: its random numbers (the tests draw from the same generator)
// and the exact chain's candidates (the tests check the fast chain against them).
#ifndef NL_SAMPLER_H
#define NL_SAMPLER_H

#include <stdint.h>

#include "normlab.h"

#pragma GCC visibility push(hidden)

// xoshiro256** seeded through splitmix64: every 64-bit seed, 0 included, gives its own stream.
typedef struct {
    uint64_t s[4];
} NlRng;
void nl_rng_seed(NlRng *rng, uint64_t seed);
uint64_t nl_rng_next(NlRng *rng);
double nl_rng_uniform(NlRng *rng);  // [0, 1) with 53 random bits

// The candidates left after temperature, then top-k, then top-p, sorted by descending probability
// (ties by id), with probabilities renormalised to sum to 1. Returns their count, or -1 when a
// logit is NaN or infinite. *ids and *probs are borrowed until the next call.
int nl_sampler_candidates(NlSampler *sampler, const float *logits, const int **ids, const double **probs);

#pragma GCC visibility pop

#endif
