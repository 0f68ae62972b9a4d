// kernels.h — the numeric building blocks of the forward pass but its products (linear.h). Outputs
// first, then inputs, weights, sizes. Matrices are row-major; weights are in torch.nn.Linear layout
// (out, in). None of these allocate. One header, a file a job: norms.c, activations.c, rope.c,
// rnn_cells.c, attention.c, and sampler_math.c (the sampler's and eval's scans of a row), with the
// element-wise math they share inline in vecmath.h.
#ifndef NL_KERNELS_H
#define NL_KERNELS_H

#include <stddef.h>

#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

// LayerNorm of n rows of width D: (x - mean) / sqrt(var + eps) * gain + bias, biased variance,
// statistics accumulated in double in two passes (a large common offset keeps its precision).
// bias may be NULL. out may equal x.
void nl_layernorm(float *out, const float *x, const float *gain, const float *bias, size_t n, size_t D, float eps);
// RMSNorm of n rows: x / sqrt(mean(x^2) + eps) * gain (+ bias when not NULL). out may equal x.
void nl_rmsnorm(float *out, const float *x, const float *gain, const float *bias, size_t n, size_t D, float eps);
// BatchNorm at inference, per feature i: (x - mean[i]) / sqrt(var[i] + eps) * gain[i] + bias[i],
// with the statistics given (running, or those of a call from nl_batch_stats). out may equal x.
void nl_batchnorm(float *out, const float *x, const float *gain, const float *bias, const float *mean, const float *var,
                  size_t n, size_t D, float eps);
// mean, var (D): each feature's mean and biased (1/n) variance over the n rows of x (n, D), in
// double, two passes: BatchNorm's statistics of a batch as PyTorch normalises with them in training.
void nl_batch_stats(float *mean, float *var, const float *x, size_t n, size_t D);
// DyT (Dynamic Tanh, Zhu et al. 2025) of n rows of width D: gain[i] * tanh(alpha x[i]) + bias[i], one
// scalar alpha, no statistics; bias may be NULL. tanh is vecmath.h's tanh_odd: odd bit for bit, within
// 1e-7 of libm's tanh, absolute, and 2e-7 relative (tests/test_norms.c). out may equal x.
void nl_dyt(float *out, const float *x, const float *gain, const float *bias, float alpha, size_t n, size_t D);
// nl_norm (normlab_internal.h) dispatches on type; BatchNorm reads w.mean and w.var, DyT *w.alpha.

// In place over count values. GELU uses nl_erf; SiLU is x / (1 + e^-x) through nl_exp.
void nl_activation(float *x, size_t count, NlActivation act);
// A gated MLP's hidden rows, in place: h (rows, 2F) of gate and up halves becomes (rows, F) =
// act(gate) * up, Llama's SwiGLU with SiLU.
void nl_gated_activation(float *h, size_t rows, size_t F, NlActivation act);
// RoPE on one position's heads, x (heads, Dh): each pair (x[2i], x[2i+1]) of a head rotated by the
// angle whose cosine and sine are cos_sin[2i] and cos_sin[2i+1] (the position's row of the table,
// Dh floats: llama2.c's and Meta's interleaved pairs).
void nl_rope(float *x, size_t heads, size_t Dh, const float *cos_sin);
// The RoPE table (T, Dh): position p's pair i (i even, i < rot) turns by p theta^(-i/rot), computed in
// float as llama2.c's run.c does (1 / powf(theta, i / rot), then cosf and sinf of p times it): the
// cosine at rope[p Dh + i], the sine at rope[p Dh + i + 1]. Pairs from rot on do not turn (cosine 1,
// sine 0: nl_rope leaves them exactly as they are): partial rotary (GPT-NeoX's rotary_pct, Phi's
// partial_rotary_factor) over the first rot dims of a head; rot = Dh turns them all.
void nl_rope_table(float *rope, size_t T, size_t Dh, size_t rot, float theta);
// One key/value head's cache tiles (K, V as nl_key_offset and nl_value_offset lay them out, stride
// between tiles): positions keep+drop..len-1 move down by drop, each key turned back by the angles
// of `drop` positions (cos_sin: the table's row drop; its sines negated), values copied as they are.
// Dh <= NL_ROPE_SHIFT_HEAD_MAX.
enum { NL_ROPE_SHIFT_HEAD_MAX = 1024 };
void nl_rope_shift(float *K, float *V, size_t stride, size_t Dh, size_t keep, size_t drop, size_t len,
                   const float *cos_sin);
// erf for float arguments, vectorisable; |nl_erf(x) - erf(x)| <= 1e-7 (tests/test_kernels.c; evaluated in double).
float nl_erf(float x);
// y += x over count values.
void nl_add(float *y, const float *x, size_t count);
// x *= alpha over count values: Gemma's embeddings times sqrt(D) (config.json's embed_scale).
void nl_scale(float *x, float alpha, size_t count);
// y = alpha * y + x over count values (DeepNorm's scaled residual).
void nl_add_scaled(float *y, float alpha, const float *x, size_t count);
// e^x, vectorisable; within 2 ulp of exp on [-87.3, 88], 0 below, e^88 above (tests/test_kernels.c).
float nl_exp(float x);
// The max of x[0..n) (n >= 1); a NaN counts only as x[0].
float nl_max(const float *x, size_t n);
// Whether x[0..n) (n >= 1) is all finite; its max in *max (when it is).
int nl_max_finite(const float *x, size_t n, float *max);
// e^((x - max) * scale) with the difference and product carried exactly: within 2 ulp of exp's
// value whatever the arguments, 0 below e^-87.3 (tests/test_kernels.c).
float nl_exp_scaled(float x, float max, double scale);
// w[i] = nl_exp_scaled(x[i], max, scale) over n values (w may be NULL: the sum only); returns their
// sum in double.
double nl_exp_weights(float *w, const float *x, size_t n, float max, double scale);
// For thresholds th[0] >= th[1] >= th[2] over n values x with weights w: above[k] and below[k] the
// sums of the weights of the x >= th[k] and of the x < th[k], count[k] the number of x >= th[k]; each
// sum from its own weights, 16 at a time in float and those in double: within 9e-7 of itself.
void nl_mass_split(const float *x, const float *w, size_t n, const float th[3], double above[3], double below[3],
                   size_t count[3]);
// The indices of the x[i] in [lo, hi), in order, into ids (at most cap of them); returns their count.
size_t nl_collect_band(int *ids, size_t cap, const float *x, size_t n, float lo, float hi);
// sigmoid and tanh through nl_exp, vectorisable; within 3e-7 of libm's, absolute (tests/test_kernels.c).
float nl_sigmoid(float x);
float nl_tanh(float x);
// The recurrent cells' element-wise steps over S features (gate blocks of S in `a`/`zr`):
// LSTM, a = (4S) preactivations f | i | o | g: c = sigmoid(f) c + sigmoid(i) tanh(g), in place;
void nl_lstm_cell(float *c, const float *a, size_t S);
// then h = sigmoid(o) tanh(cn), cn the (normalised) new cell.
void nl_lstm_output(float *h, const float *a, const float *cn, size_t S);
// GRU, zr = (2S) z | r: h = (1 - sigmoid(z)) h + sigmoid(z) tanh(xc + sigmoid(r) hc), in place.
void nl_gru_update(float *h, const float *zr, const float *xc, const float *hc, size_t S);

// The KV cache holds positions in tiles of NL_TILE. One tile of one head is Dh * NL_TILE floats:
// keys transposed, (Dh, NL_TILE), so one query's scores are 8-key-wide multiply-adds with no
// horizontal sums; values (NL_TILE, Dh). Consecutive tiles of a head are `stride` floats apart (the
// cache puts the tile outermost, so it is touched only as far as it is filled).
enum { NL_TILE = 32 };
static inline size_t nl_tiles(size_t len) { return (len + NL_TILE - 1) / NL_TILE; }
static inline size_t nl_key_offset(size_t j, size_t i, size_t stride) {  // key j, element i
    return (j / NL_TILE) * stride + i * NL_TILE + j % NL_TILE;
}
static inline size_t nl_value_offset(size_t j, size_t Dh, size_t stride) {  // value j
    return (j / NL_TILE) * stride + (j % NL_TILE) * Dh;
}

// One query against len cached keys and values of one head, fused (scores, softmax, weighted sum):
// out (Dh) = softmax(scale * K q) V, K and V tiled as above from the head's first tile. scores
// (nl_tiles(len) * NL_TILE floats) is scratch. Keys are read in whole tiles: the last tile's
// positions past len must be readable (any finite or stale value; they do not change the result).
// At these sizes a BLAS call costs more than the arithmetic. softcap > 0 caps each score s (after
// scale) at softcap tanh(s / softcap) before the softmax (Gemma 2's attention soft-capping); 0: none.
// window > 0: the query sees only the last `window` keys (len - window .. len - 1; a sliding-window
// layer's: Mistral, Gemma 2 and 3), the ones before it never read; 0: all len.
void nl_attend_one(float *out, const float *q, const float *K, const float *V, size_t stride, size_t len, size_t window,
                   size_t Dh, float scale, float softcap, float *scores);
// nl_attend_one in vectors of `lanes` floats: 8, or 16 where the CPU has AVX-512 (x86-64-v4), the
// width nl_attend_one picks there. Returns -1, computing nothing, for a width that cannot run here.
// For the test that holds both widths to the same bits.
int nl_attend_one_lanes(size_t lanes, float *out, const float *q, const float *K, const float *V, size_t stride,
                        size_t len, size_t window, size_t Dh, float scale, float softcap, float *scores);

// Many queries of one head as products (OpenBLAS sgemm per cache tile, one thread): query r (q + r *
// q_stride, r < n) sees keys 0 .. first_len + r - 1, and out + r * out_stride (Dh) = softmax(scale *
// K q_r) V. Queries go NL_ATTEND_BLOCK at a time; scores (NL_ATTEND_BLOCK * ld floats, ld =
// nl_tiles of the longest length times NL_TILE, at least) is scratch. The cache's positions up to
// first_len + n - 1 must be written; its keys past that in the last tile may be anything. window > 0:
// each row sees only its last `window` keys (the others are scored, then masked to 0).
enum { NL_ATTEND_BLOCK = 64 };
void nl_attend_rows(float *out, size_t out_stride, const float *q, size_t q_stride, size_t n, size_t first_len,
                    size_t window, const float *K, const float *V, size_t stride, size_t Dh, float scale, float softcap,
                    float *scores, size_t ld);

// p (len) = softmax(scale * K q) of one query over keys 0..len-1 of a head's cache (nl_key_offset's
// layout, stride between tiles): the probabilities nl_attend_one weights the values by, computed
// apart from it, for a watcher (the lab's attention statistics); returns the distribution's entropy in
// nats, -sum p ln p, from the scores in double (no logarithm of each p). Plain loops: off the fast path.
// window > 0: the keys before the last `window` get probability 0, the others a softmax of their own.
double nl_attention_probs(float *p, const float *q, const float *K, size_t stride, size_t len, size_t window, size_t Dh,
                          float scale, float softcap);
// x = cap tanh(x / cap) over count values (Gemma 2's soft-capping of scores and logits; tanh_odd).
void nl_softcap(float *x, size_t count, float cap);

// Index of the first NaN or infinity in x[0..n), or SIZE_MAX. Vectorised: it scans every weight at load.
size_t nl_first_nonfinite(const float *x, size_t n);

#pragma GCC visibility pop

// GCC gives the dispatchers of target_clones default visibility whatever the declaration says
// (visibility attributes and pragmas are ignored for them), so each kernels' file hides its own
// with this, at file scope after the function, as the rest of this header is hidden.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NL_HIDDEN_CLONE(name) __asm__(".hidden " #name "\n.hidden " #name ".resolver\n")
#else
#define NL_HIDDEN_CLONE(name) _Static_assert(1, #name)
#endif

#endif
