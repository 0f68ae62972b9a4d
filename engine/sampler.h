// sampler.h — the sampler's random numbers (internal; the tests draw from the same generator).
#ifndef NL_SAMPLER_H
#define NL_SAMPLER_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

// xoshiro256** seeded through splitmix64: every 64-bit seed, 0 included, gives its own stream.
typedef struct {
    uint64_t s[4];
} NlRng;
void nl_rng_seed(NlRng *rng, uint64_t seed);
uint64_t nl_rng_next(NlRng *rng);
double nl_rng_uniform(NlRng *rng);  // [0, 1) with 53 random bits

#pragma GCC visibility pop

#endif
