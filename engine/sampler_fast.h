// sampler_fast.h — the sampler's chain on float weights, for nl_sampler_sample (internal).
#ifndef NL_SAMPLER_FAST_H
#define NL_SAMPLER_FAST_H

#include "normlab.h"
#include "sampler.h"

#pragma GCC visibility push(hidden)

typedef struct NlFastSampler NlFastSampler;
int nl_fast_sampler_create(NlFastSampler **out, int vocab_size);  // -1: out of memory
void nl_fast_sampler_free(NlFastSampler *f);

enum { NL_FAST_EXACT = -1 };
// The token the exact chain (sampler.c) draws from the finite logits l (after the penalties), whose
// max is `max`, at temperature > 0: the same token, drawing from rng as it does, or NL_FAST_EXACT
// where only the exact chain can tell. Then *u_drawn is the number drawn from rng for the draw, or -1
// if none was, for the exact chain to use in its place.
int nl_fast_sample(NlFastSampler *f, const float *l, float max, const NlSamplerParams *p, NlRng *rng, double *u_drawn);

#pragma GCC visibility pop

#endif
