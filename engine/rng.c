// rng.c — the sampler's random numbers: xoshiro256** seeded through splitmix64 (sampler.h). A file
// of its own so that the exact chain (sampler.c) and the fast one (sampler_fast.c) both draw from it
// without calling each other.
#include <stdint.h>

#include "sampler.h"

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
