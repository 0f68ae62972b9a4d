// transformer_attention.c — the transformer's KV cache and attention (transformer.c runs the rest of
// a block): new keys and values into the cache (QK-norm and RoPE first, where the family has them),
// causal self-attention over it split by query heads across the pool's workers, a watcher's
// probabilities, and the cache's copy between sequences and RoPE's context shift.
#include <assert.h>
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "observe.h"
#include "transformer_state.h"

// 1 / sqrt(Dh): the scores' scale, q K^T / sqrt(Dh).
// The scores' factor: config.json's attn_scale (Gemma 2's query_pre_attn_scalar^-1/2), else 1 / sqrt(Dh).
static float attention_scale(const NlConfig *c, size_t Dh) {
    return c->attn_scale ? (float)c->attn_scale : 1.0f / sqrtf((float)Dh);
}

size_t nl_transformer_state_bytes(const NlConfig *c) {
    // keys and values of every layer, positions rounded up to whole tiles, as allocated
    return 2 * (size_t)c->n_layer * nl_tiles((size_t)c->block_size) * NL_TILE * kv_width(c) * sizeof(float);
}

// A cache tile holds one tile of positions for every layer and key/value head: L * KVH Dh * NL_TILE floats.
size_t nl_transformer_tile_floats(const Transformer *s) { return (size_t)s->cfg->n_layer * kv_width(s->cfg) * NL_TILE; }

// Floats of one sequence in the K cache (and in the V cache): all its tiles.
size_t nl_transformer_seq_floats(const Transformer *s) {
    return nl_transformer_state_bytes(s->model_cfg) / (2 * sizeof(float));
}

void nl_transformer_copy(void *impl, size_t from, size_t to, size_t n) {
    Transformer *s = impl;
    size_t per_seq = nl_transformer_seq_floats(s);
    assert(from < s->batch && to < s->batch && n <= (size_t)s->cfg->block_size);
    if (from == to) return;
    size_t count = nl_tiles(n) * nl_transformer_tile_floats(s);  // the tiles holding positions 0..n-1, all layers
    memcpy(s->k_cache + to * per_seq, s->k_cache + from * per_seq, count * sizeof(float));
    memcpy(s->v_cache + to * per_seq, s->v_cache + from * per_seq, count * sizeof(float));
}

// RoPE's context shift of sequence b (nl_state_shift): positions keep+drop..len-1 move down by drop
// in every layer's and key/value head's cache (nl_rope_shift).
int nl_transformer_shift(void *impl, size_t b, size_t keep, size_t drop, size_t len) {
    Transformer *s = impl;
    const NlConfig *c = s->cfg;
    size_t Dh = head_width(c), KVH = (size_t)c->n_kv_head, stride = nl_transformer_tile_floats(s);
    if (!c->rope || keep + drop > len || len > (size_t)c->block_size || Dh > NL_ROPE_SHIFT_HEAD_MAX) return -1;
    for (size_t l = 0; drop && l < (size_t)c->n_layer; l++)
        for (size_t g = 0; g < KVH; g++) {
            size_t head = b * nl_transformer_seq_floats(s) + (l * KVH + g) * Dh * NL_TILE;
            nl_rope_shift(s->k_cache + head, s->v_cache + head, stride, Dh, keep, drop, len,
                          layer_rope(s, l) + drop * Dh);
        }
    return 0;
}

// Where attention runs as products (nl_attend_rows) rather than one fused pass per query
// (nl_attend_one): ATTEND_ROWS_MIN queries of a head in one call or more, heads of ATTEND_HEAD_MIN or
// more (the measurements: docs/performance.md, "Attention as products").
enum { ATTEND_ROWS_MIN = 24, ATTEND_HEAD_MIN = 64 };

// The new positions' keys and values into the cache of layer l: each position's q and k heads
// normalised (QK-norm) and rotated (RoPE) first, where the family has them, in qkv (B*n, W).
static void cache_new_positions(Transformer *s, size_t B, size_t l, size_t n, size_t pos) {
    const NlConfig *c = s->cfg;
    size_t H = (size_t)c->n_head, KVH = (size_t)c->n_kv_head, Dh = head_width(c), W = qkv_width(c);
    size_t stride = nl_transformer_tile_floats(s);  // between a head's consecutive tiles
    const LayerNorms *w = &s->norms[l];
    for (size_t b = 0; b < B; b++)
        for (size_t i = 0; i < n; i++) {
            float *q = s->qkv + (b * n + i) * W, *k = q + H * Dh;  // (H, Dh) and (KVH, Dh)
            const float *v = k + KVH * Dh;
            if (c->qk_norm && c->norm != NL_NORM_NONE) {  // H rows of Dh, or one of H Dh (and of k's)
                size_t whole = c->qk_norm == NL_QK_OVER_PROJECTION;
                nl_norm(q, q, w->q_norm, c->norm, whole ? 1 : H, whole ? H * Dh : Dh, (float)c->norm_eps);
                nl_norm(k, k, w->k_norm, c->norm, whole ? 1 : KVH, whole ? KVH * Dh : Dh, (float)c->norm_eps);
            }
            if (c->rope) {
                nl_rope(q, H, Dh, layer_rope(s, l) + (pos + i) * Dh);
                nl_rope(k, KVH, Dh, layer_rope(s, l) + (pos + i) * Dh);
            }
            for (size_t g = 0; g < KVH; g++) {
                size_t head = b * nl_transformer_seq_floats(s) + (l * KVH + g) * Dh * NL_TILE;  // its first tile
                float *K = s->k_cache + head, *V = s->v_cache + head;
                for (size_t d = 0; d < Dh; d++) K[nl_key_offset(pos + i, d, stride)] = k[g * Dh + d];
                memcpy(V + nl_value_offset(pos + i, Dh, stride), v + g * Dh, Dh * sizeof(float));
            }
        }
}

// Causal self-attention of n new positions (pos..pos+n-1) of sequence b in layer l, query heads
// h0..h1-1, each reading its group's key/value head (h / (H / KVH)) from the cache, which holds the
// new positions already: att (keep, D) = softmax(q K^T / sqrt(Dh)) V for the last `keep` of them (all
// n, except in a last layer whose other rows nobody reads). scores is the caller's scratch, one
// query's probabilities.
static void attention_heads(Transformer *s, size_t b, size_t l, size_t n, size_t pos, size_t keep, size_t h0, size_t h1,
                            float *scores) {
    size_t H = (size_t)s->cfg->n_head, KVH = (size_t)s->cfg->n_kv_head;
    size_t Dh = head_width(s->cfg), A = H * Dh, W = qkv_width(s->cfg),
           stride = nl_transformer_tile_floats(s);  // between a head's consecutive tiles
    float scale = attention_scale(s->cfg, Dh), cap = (float)s->cfg->attn_softcap;
    size_t window = nl_layer_window(s->cfg, l);  // a local layer's: each query's last W keys
    const float *qkv = s->qkv + b * n * W;  // (n, W) of this sequence
    float *att = s->att + b * keep * A;  // (keep, H Dh)
    for (size_t h = h0; h < h1; h++) {
        size_t head =
            b * nl_transformer_seq_floats(s) + (l * KVH + h / (H / KVH)) * Dh * NL_TILE;  // its group's first tile
        const float *K = s->k_cache + head, *V = s->v_cache + head;
        const float *q = qkv + h * Dh;  // row i at q + i * W
        // Row i sees keys 0..pos+i: one fused pass over the cache per query, or, for many, products.
        if (keep >= ATTEND_ROWS_MIN && Dh >= ATTEND_HEAD_MIN) {
            nl_attend_rows(att + h * Dh, A, q + (n - keep) * W, W, keep, pos + (n - keep) + 1, window, K, V, stride, Dh,
                           scale, cap, scores, nl_tiles((size_t)s->cfg->block_size) * NL_TILE);
            continue;
        }
        for (size_t i = n - keep; i < n; i++)
            nl_attend_one(att + (i - (n - keep)) * A + h * Dh, q + i * W, K, V, stride, pos + i + 1, window, Dh, scale,
                          cap, scores);
    }
}

typedef struct {
    Transformer *s;
    size_t B, l, n, pos, keep, heads;  // heads: how many each share takes (the last takes the rest)
} AttentionJob;

static void attention_share(void *ctx, int share) {
    const AttentionJob *j = ctx;
    size_t H = (size_t)j->s->cfg->n_head, h0 = (size_t)share * j->heads;
    size_t h1 = h0 + j->heads < H ? h0 + j->heads : H;
    float *scores = j->s->scores + (size_t)share * NL_ATTEND_BLOCK * nl_tiles((size_t)j->s->cfg->block_size) * NL_TILE;
    for (size_t b = 0; h0 < h1 && b < j->B; b++) attention_heads(j->s, b, j->l, j->n, j->pos, j->keep, h0, h1, scores);
}

// Each query's probabilities over its keys, for a watcher: after the pass, on the calling thread.
static void watch_attention(Transformer *s, size_t B, size_t l, size_t n, size_t pos, size_t keep) {
    size_t H = (size_t)s->cfg->n_head, KVH = (size_t)s->cfg->n_kv_head, Dh = head_width(s->cfg);
    size_t W = qkv_width(s->cfg), stride = nl_transformer_tile_floats(s);
    float scale = attention_scale(s->cfg, Dh), cap = (float)s->cfg->attn_softcap;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            const float *K = s->k_cache + b * nl_transformer_seq_floats(s) + (l * KVH + h / (H / KVH)) * Dh * NL_TILE;
            for (size_t i = n - keep; i < n; i++) {
                const float *q = s->qkv + (b * n + i) * W + h * Dh;
                double entropy = nl_attention_probs(s->scores, q, K, stride, pos + i + 1, nl_layer_window(s->cfg, l),
                                                    Dh, scale, cap);
                s->obs->attention(s->obs->watcher, (int)l, b, h, s->scores, pos + i + 1, entropy);
            }
        }
}

// The new keys and values enter the cache first; then query heads are independent (each writes its
// own output columns, reading the cache), so the pool's workers take a share of them each: the same
// bits as one thread.
void nl_transformer_attention(Transformer *s, size_t B, size_t l, size_t n, size_t pos, size_t keep) {
    size_t H = (size_t)s->cfg->n_head, workers = (size_t)nl_pool_workers(s->pool);
    cache_new_positions(s, B, l, n, pos);
    AttentionJob j = {s, B, l, n, pos, keep, (H + workers - 1) / workers};  // scores: one slot a share
    if (workers < 2 || H < 2) attention_share(&j, 0);
    else nl_pool_run(s->pool, attention_share, &j);
    if (s->obs->attention) watch_attention(s, B, l, n, pos, keep);
}
