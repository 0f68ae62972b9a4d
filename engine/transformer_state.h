// transformer_state.h — the transformer family's state, shared by its two files: transformer.c
// (creating a state, the blocks, the readout, the family's rows) and transformer_attention.c (the
// KV cache and attention).
#ifndef NL_TRANSFORMER_STATE_H
#define NL_TRANSFORMER_STATE_H

#include <stddef.h>

#include "family.h"
#include "linear.h"
#include "model.h"
#include "normlab.h"
#include "transformer_weights.h"

#pragma GCC visibility push(hidden)

typedef struct {
    NlNormWeights norm[NL_NS_COUNT];  // each norm slot the run's recipe names (recipe.h), as run
    NlNormWeights q_norm, k_norm;  // (Dh) QK-norm as run (its gains, or unit gains); unused without it
} LayerNorms;

// The transformer family's state (family.h); `s` throughout this file.
typedef struct {
    const NlTransformerWeights *w;  // the model's, borrowed
    const NlConfig *model_cfg;  // the model's config as loaded, borrowed
    const NlConfig *cfg;  // the NlState's: the model's config with the run options applied
    const NlObserver *obs;  // the NlState's
    NlBnStats bn_stats;
    LayerNorms *norms;  // (L) the norms as run: the model's, or unit gain where it has none
    NlNormWeights ln_f;  // final norm (unit gain when forced onto a model without one)
    size_t batch;  // B: sequences per call, at most
    NlPool *pool;  // the NlState's workers for a product's rows, or NULL
    // buf[0] (B*T, D) the residual stream; buf[1..] (B*T, D) the recipe's scratch slots (a norm's
    // output, a branch's); a norm into the stream writes a free one, which then becomes buf[0]
    float *buf[1 + NL_RECIPE_SLOTS_MAX];
    float *qkv;  // (B*T, W) W = (H + 2 KVH) Dh: q, k, v of each position (3D with KVH = H)
    float *att;  // (B*T, H Dh) attention output, heads concatenated (D but where head_dim is set)
    float *hid;  // (B*T, F) MLP hidden; gated: (B*T, 2F) gate and up, then (B*T, F)
    float *rope;  // (T, Dh) RoPE's cos and sin of each position's angles, pair by pair (RoPE only)
    float *rope_local;  // (T, Dh) the same at the local layers' base where the config has rope_local_theta
    float *scores;  // (workers, NL_ATTEND_BLOCK, T rounded up to whole tiles) each worker's probabilities
    float *logits;  // (B*T, V)
    float *k_cache;  // (B, T/32, L, KVH, Dh, 32) keys in tiles of 32 positions (kernels.h), T rounded up
    float *v_cache;  // (B, T/32, L, KVH, 32, Dh) values, the same tiles
    float *ones;  // (N) unit gain, N the widest norm's width (D; F with an MLP inner norm; H Dh, QK-norm's)
    float *bn_mean, *bn_var;  // (N) BatchNorm's statistics of the current call (batch statistics)
    NlLinearInputHook input_hook;  // the run's hook on every linear's input rows (fn NULL: none)
    float *qin;  // (B*T, max(D, F, H Dh)) a linear's input as the hook rewrote it
    float *scratch;  // the linears' tiles of weights not stored as float32 (nl_linear_scratch), or none
    void *arena;  // every buffer above, in one mapping
    size_t arena_bytes;
} Transformer;

static inline size_t head_width(const NlConfig *c) { return nl_head_width(c); }  // Dh
static inline size_t kv_width(const NlConfig *c) { return (size_t)c->n_kv_head * head_width(c); }  // KVH Dh
static inline size_t qkv_width(const NlConfig *c) { return nl_query_width(c) + 2 * kv_width(c); }  // W

// Layer l's RoPE table: the local one on a sliding-window layer where the model has one.
static inline const float *layer_rope(const Transformer *s, size_t l) {
    return s->cfg->rope_local_theta && nl_layer_window(s->cfg, l) ? s->rope_local : s->rope;
}

// The bytes of one sequence's KV cache: keys and values of every layer, positions rounded up to whole
// tiles, as allocated (the family's state_bytes).
size_t nl_transformer_state_bytes(const NlConfig *c);
// Floats between a head's consecutive cache tiles (every layer's key/value heads of 32 positions),
// and of one sequence's whole K (or V) cache.
size_t nl_transformer_tile_floats(const Transformer *s);
size_t nl_transformer_seq_floats(const Transformer *s);
// Layer l's attention for n new positions from pos of B sequences: their keys and values into the
// cache, then att (B*keep, D) for the last keep of each, heads split over the pool's workers (the
// same bits as one thread); a watcher sees each query's probabilities.
void nl_transformer_attention(Transformer *s, size_t B, size_t l, size_t n, size_t pos, size_t keep);
// The family's copy (sequence from's cache of n positions into sequence to's) and shift (RoPE's
// context shift of sequence b: positions keep+drop..len-1 down by drop, keys turned back).
void nl_transformer_copy(void *impl, size_t from, size_t to, size_t n);
int nl_transformer_shift(void *impl, size_t b, size_t keep, size_t drop, size_t len);

#pragma GCC visibility pop

#endif
