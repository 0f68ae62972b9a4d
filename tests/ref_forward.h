// ref_forward.h — an independent double-precision forward pass in plain loops (no BLAS, no KV
// cache, no engine kernels), written from the formulas in README "Forward pass". Tests compare
// the engine against it.
#ifndef NL_REF_FORWARD_H
#define NL_REF_FORWARD_H

#include "model.h"
#include "normlab.h"

// logits (n, V) for tokens[0..n) at positions 0..n-1 (n <= T). cfg carries any norm/placement
// override; a "pre" run of a model without ln_f uses unit gain and no bias, as the engine does.
// Returns 0, or -1 when out of memory.
int ref_forward(double *logits, const NlConfig *cfg, const NlWeights *w, const int *tokens, size_t n);

// One row of width D, double precision: LayerNorm (biased variance) and RMSNorm. bias may be NULL.
void ref_layernorm(double *out, const double *x, const float *gain, const float *bias, size_t D, double eps);
void ref_rmsnorm(double *out, const double *x, const float *gain, const float *bias, size_t D, double eps);

#endif
