// ref_forward.h — an independent double-precision forward pass in plain loops (no BLAS, no KV
// cache, no engine kernels), written from the formulas in docs/forward.md. Tests compare
// the engine against it.
#ifndef NL_REF_FORWARD_H
#define NL_REF_FORWARD_H

#include "model.h"
#include "rnn.h"
#include "transformer_weights.h"
#include "normlab.h"

// logits (n, V) for tokens[0..n) at positions 0..n-1 (n <= T). cfg carries any norm/placement
// override; a norm the model lacks (ln_f of a post model run as pre, ...) has unit gain and no
// bias, as in the engine. BatchNorm uses the running statistics (which the model must have).
// Returns 0, or -1 when out of memory.
int ref_forward(double *logits, const NlConfig *cfg, const NlTransformerWeights *w, const int *tokens, size_t n);
// The same with BatchNorm's statistics chosen: NL_BN_BATCH takes them from the n rows.
int ref_forward_bn(double *logits, const NlConfig *cfg, const NlTransformerWeights *w, const int *tokens, size_t n,
                   NlBnStats bn);

// What the engine's statistics (normlab_lab.h) report, recomputed here in double from the same
// definitions: per layer l (0..L-1 entering block l, L leaving the last) the mean over positions of
// the residual stream's RMS and |mean|, and of the std of every norm's output in that layer (the
// final norm as layer L); and for the invariance experiment, over every norm input x, the largest
// |N(x * s + shift) - N(x)| per norm type ([0] LayerNorm, [1] RMSNorm) and case, with the norm's
// gains and eps (0 for the last case).
enum { REF_MAX_LAYERS = 16, REF_MAX_HEADS = 16, REF_INV_CASES = 5 };
// Peri's output norms are kept apart (norm_post_std), and branch_rms is the RMS of each sublayer's
// output as it joins the stream (after an output norm, before DeepNorm's alpha), both sublayers.
typedef struct {
    double rms[REF_MAX_LAYERS + 1], abs_mean[REF_MAX_LAYERS + 1], norm_std[REF_MAX_LAYERS + 1];
    double norm_post_std[REF_MAX_LAYERS], branch_rms[REF_MAX_LAYERS];
    double positions[REF_MAX_LAYERS + 1], norm_positions[REF_MAX_LAYERS + 1];  // divisors of the sums
    double norm_post_positions[REF_MAX_LAYERS], branch_positions[REF_MAX_LAYERS];
    double invariance[2][REF_INV_CASES];
} RefStats;
// As ref_forward, filling *stats (sums divided into means before returning). L <= REF_MAX_LAYERS.
int ref_forward_stats(double *logits, const NlConfig *cfg, const NlTransformerWeights *w, const int *tokens, size_t n,
                      RefStats *stats);

// The rows every place NlSite names saw in one ref_forward call (double), and the logit lens: the
// logits when the stream entering layer l (l = L: leaving the last) is read out through the final
// norm (pre, peri; none in post) and the head. rows[l][site] is (n, width[l][site]), NULL where the
// place does not exist; lens (L + 1, n, V); attn (L, H, n, n) each head's attention probabilities,
// row i over keys 0..i (0 beyond). Free with ref_trace_free.
typedef struct {
    double *rows[REF_MAX_LAYERS + 1][NL_SITE_COUNT];
    size_t width[REF_MAX_LAYERS + 1][NL_SITE_COUNT];
    double *lens;
    double *attn;
} RefTrace;
// As ref_forward, filling *trace. Returns 0, or -1 when out of memory or L > REF_MAX_LAYERS.
int ref_forward_trace(double *logits, const NlConfig *cfg, const NlTransformerWeights *w, const int *tokens, size_t n,
                      RefTrace *trace);
void ref_trace_free(RefTrace *trace);

// One row of width D, double precision: LayerNorm (biased variance) and RMSNorm. bias may be NULL.
void ref_layernorm(double *out, const double *x, const float *gain, const float *bias, size_t D, double eps);
void ref_rmsnorm(double *out, const double *x, const float *gain, const float *bias, size_t D, double eps);
// BatchNorm of one row with the statistics given (mean, var (D)).
void ref_batchnorm(double *out, const double *x, const float *gain, const float *bias, const double *mean,
                   const double *var, size_t D, double eps);

// A recurrent model (arch lstm or gru) from the zero state, in plain loops and double precision:
// logits (n, V) for tokens[0..n). cfg->norm is the run's (layernorm or none; a norm the model lacks
// has unit gain and no bias). h_norm and c_norm (n), when not NULL, get ||h_t|| and ||c_t|| of the
// last layer (c_t: the LSTM's cell; the GRU's stays 0). Returns 0, or -1 when out of memory.
int ref_rnn_forward(double *logits, const NlConfig *cfg, const NlRecurrentWeights *w, const int *tokens, size_t n,
                    double *h_norm, double *c_norm);

#endif
