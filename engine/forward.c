// forward.c — the transformer forward pass over a KV cache, mirroring tools/reference.py:
//   x = wte[tok] + wpe[pos]
//   pre:  x = x + Attn(N1(x)); x = x + MLP(N2(x))   ... then ln_f
//   post: x = N1(x + Attn(x)); x = N2(x + MLP(x))
//   logits = x @ lm_head^T
#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "normlab.h"

struct NlState {
    const NlModel *model;
    NlConfig cfg;          // the model's config with the run options applied
    NlNormWeights ln_f;    // final norm (unit gain when forced onto a model without one)
    float *x;        // (T, D) residual stream
    float *xn;       // (T, D) normalised sublayer input
    float *qkv;      // (T, 3*D)
    float *att;      // (T, D) attention output, heads concatenated
    float *tmp;      // (T, D) sublayer output
    float *hid;      // (T, F) MLP hidden
    float *scores;   // (T, T) attention probabilities of one head
    float *logits;   // (T, V)
    float *k_cache;  // (L, H, T, Dh) contiguous per head
    float *v_cache;  // (L, H, T, Dh)
    float *ones;     // (D) unit gain
    NlProfiler *prof;  // borrowed; NULL = profiling off (no clock reads)
};

// Runs stmt as one call of component comp (layer l, n positions, ctx keys), timed when profiling.
#define TIMED(s, l, comp, n, ctx, stmt)                                \
    do {                                                               \
        double t_ = nl_profiler_begin((s)->prof);                      \
        stmt;                                                          \
        nl_profiler_record((s)->prof, t_, (int)(l), comp, n, ctx);     \
    } while (0)

size_t nl_state_kv_bytes(const NlModel *model) {
    const NlConfig *c = nl_model_config(model);
    return 2 * (size_t)c->n_layer * (size_t)c->block_size * (size_t)c->n_embd * sizeof(float);
}

int nl_state_create(NlState **out, const NlModel *model, const NlRunOptions *opts, NlError *err) {
    *out = NULL;
    NlState *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err->msg, sizeof err->msg, "out of memory"); return -1; }
    s->model = model;
    s->cfg = *nl_model_config(model);
    if (opts) { s->cfg.norm = opts->norm; s->cfg.placement = opts->placement; }
    size_t T = (size_t)s->cfg.block_size, D = (size_t)s->cfg.n_embd, F = (size_t)s->cfg.n_inner;
    size_t V = (size_t)s->cfg.vocab_size, L = (size_t)s->cfg.n_layer;
    s->x = malloc(T * D * sizeof(float));
    s->xn = malloc(T * D * sizeof(float));
    s->qkv = malloc(T * 3 * D * sizeof(float));
    s->att = malloc(T * D * sizeof(float));
    s->tmp = malloc(T * D * sizeof(float));
    s->hid = malloc(T * F * sizeof(float));
    s->scores = malloc(T * T * sizeof(float));
    s->logits = malloc(T * V * sizeof(float));
    s->k_cache = calloc(L * T * D, sizeof(float));
    s->v_cache = calloc(L * T * D, sizeof(float));
    s->ones = malloc(D * sizeof(float));
    if (!s->x || !s->xn || !s->qkv || !s->att || !s->tmp || !s->hid || !s->scores || !s->logits ||
        !s->k_cache || !s->v_cache || !s->ones) {
        snprintf(err->msg, sizeof err->msg, "out of memory for activations and KV cache (%zu bytes of cache)",
                 nl_state_kv_bytes(model));
        nl_state_free(s);
        return -1;
    }
    for (size_t i = 0; i < D; i++) s->ones[i] = 1.0f;
    s->ln_f = nl_model_weights(model)->ln_f;
    if (!s->ln_f.gain) s->ln_f = (NlNormWeights){s->ones, NULL};
    *out = s;
    return 0;
}

const NlConfig *nl_state_config(const NlState *s) { return &s->cfg; }
void nl_state_set_profiler(NlState *s, NlProfiler *prof) { s->prof = prof; }
NlProfiler *nl_state_profiler(const NlState *s) { return s->prof; }

void nl_state_free(NlState *s) {
    if (!s) return;
    float *bufs[] = {s->x, s->xn, s->qkv, s->att, s->tmp, s->hid, s->scores, s->logits, s->k_cache, s->v_cache, s->ones};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(s);
}

// Causal self-attention of n new positions (pos..pos+n-1) of layer l, one head at a time.
// Appends their keys and values to the cache, then att (n, D) = softmax(q K^T / sqrt(Dh)) V.
static void attention(NlState *s, size_t l, size_t n, size_t pos) {
    size_t T = (size_t)s->cfg.block_size, D = (size_t)s->cfg.n_embd, H = (size_t)s->cfg.n_head;
    size_t Dh = D / H, len = pos + n;
    float scale = 1.0f / sqrtf((float)Dh);
    for (size_t h = 0; h < H; h++) {
        float *K = s->k_cache + (l * H + h) * T * Dh;  // (T, Dh)
        float *V = s->v_cache + (l * H + h) * T * Dh;  // (T, Dh)
        const float *q = s->qkv + h * Dh;              // row i at q + i * 3D
        for (size_t i = 0; i < n; i++) {
            memcpy(K + (pos + i) * Dh, s->qkv + i * 3 * D + D + h * Dh, Dh * sizeof(float));
            memcpy(V + (pos + i) * Dh, s->qkv + i * 3 * D + 2 * D + h * Dh, Dh * sizeof(float));
        }
        if (n == 1) {
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)len, (int)Dh, scale, K, (int)Dh, q, 1, 0.0f, s->scores, 1);
            nl_softmax(s->scores, len);
            cblas_sgemv(CblasRowMajor, CblasTrans, (int)len, (int)Dh, 1.0f, V, (int)Dh, s->scores, 1, 0.0f,
                        s->att + h * Dh, 1);
            continue;
        }
        // scores (n, len) = scale * Q (n, Dh) @ K^T; row i sees keys 0..pos+i only.
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)len, (int)Dh, scale, q, (int)(3 * D),
                    K, (int)Dh, 0.0f, s->scores, (int)len);
        for (size_t i = 0; i < n; i++) {
            float *row = s->scores + i * len;
            nl_softmax(row, pos + i + 1);
            memset(row + pos + i + 1, 0, (n - i - 1) * sizeof(float));
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)Dh, (int)len, 1.0f, s->scores,
                    (int)len, V, (int)Dh, 0.0f, s->att + h * Dh, (int)D);
    }
}

// out (n, D) = c_proj(Attn(c_attn(in))) for layer l.
static void attn_block(NlState *s, float *out, const float *in, size_t l, size_t n, size_t pos) {
    const NlLayerWeights *w = &nl_model_weights(s->model)->layers[l];
    size_t D = (size_t)s->cfg.n_embd, len = pos + n;
    TIMED(s, l, NL_COMP_QKV, n, len, nl_linear(s->qkv, in, w->attn_w, w->attn_b, n, 3 * D, D));
    TIMED(s, l, NL_COMP_ATTENTION, n, len, attention(s, l, n, pos));
    TIMED(s, l, NL_COMP_ATTN_PROJ, n, len, nl_linear(out, s->att, w->proj_w, w->proj_b, n, D, D));
}

// out (n, D) = c_proj(act(c_fc(in))) for layer l.
static void mlp_block(NlState *s, float *out, const float *in, size_t l, size_t n, size_t len) {
    const NlLayerWeights *w = &nl_model_weights(s->model)->layers[l];
    size_t D = (size_t)s->cfg.n_embd, F = (size_t)s->cfg.n_inner;
    TIMED(s, l, NL_COMP_MLP_UP, n, len, nl_linear(s->hid, in, w->fc_w, w->fc_b, n, F, D));
    TIMED(s, l, NL_COMP_ACTIVATION, n, len, nl_activation(s->hid, n * F, s->cfg.activation));
    TIMED(s, l, NL_COMP_MLP_DOWN, n, len, nl_linear(out, s->hid, w->out_w, w->out_b, n, D, F));
}

static void block(NlState *s, size_t l, size_t n, size_t pos) {
    const NlLayerWeights *w = &nl_model_weights(s->model)->layers[l];
    size_t D = (size_t)s->cfg.n_embd, len = pos + n;
    NlNormType nt = s->cfg.norm;
    float eps = (float)s->cfg.norm_eps;
    double t_layer = nl_profiler_begin(s->prof);
    if (s->cfg.placement == NL_PLACE_PRE) {  // x = x + Attn(N1(x)); x = x + MLP(N2(x))
        TIMED(s, l, NL_COMP_NORM1, n, len, nl_norm(s->xn, s->x, w->ln_1, nt, n, D, eps));
        attn_block(s, s->tmp, s->xn, l, n, pos);
        TIMED(s, l, NL_COMP_RESIDUAL, n, len, nl_add(s->x, s->tmp, n * D));
        TIMED(s, l, NL_COMP_NORM2, n, len, nl_norm(s->xn, s->x, w->ln_2, nt, n, D, eps));
        mlp_block(s, s->tmp, s->xn, l, n, len);
        TIMED(s, l, NL_COMP_RESIDUAL, n, len, nl_add(s->x, s->tmp, n * D));
    } else {  // x = N1(x + Attn(x)); x = N2(x + MLP(x))
        attn_block(s, s->tmp, s->x, l, n, pos);
        TIMED(s, l, NL_COMP_RESIDUAL, n, len, nl_add(s->x, s->tmp, n * D));
        TIMED(s, l, NL_COMP_NORM1, n, len, nl_norm(s->x, s->x, w->ln_1, nt, n, D, eps));
        mlp_block(s, s->tmp, s->x, l, n, len);
        TIMED(s, l, NL_COMP_RESIDUAL, n, len, nl_add(s->x, s->tmp, n * D));
        TIMED(s, l, NL_COMP_NORM2, n, len, nl_norm(s->x, s->x, w->ln_2, nt, n, D, eps));
    }
    nl_profiler_record_layer(s->prof, t_layer, (int)l);
}

// x (n, D) = wte[tokens] + wpe[pos ..]
static void embed(NlState *s, const int *tokens, size_t n, size_t pos) {
    const NlWeights *w = nl_model_weights(s->model);
    size_t D = (size_t)s->cfg.n_embd;
    for (size_t i = 0; i < n; i++) {
        assert(tokens[i] >= 0 && tokens[i] < s->cfg.vocab_size);
        const float *te = w->wte + (size_t)tokens[i] * D, *pe = w->wpe + (pos + i) * D;
        for (size_t k = 0; k < D; k++) s->x[i * D + k] = te[k] + pe[k];
    }
}

const float *nl_forward(NlState *s, const int *tokens, size_t n, size_t pos, size_t n_logits) {
    const NlWeights *w = nl_model_weights(s->model);
    size_t D = (size_t)s->cfg.n_embd, V = (size_t)s->cfg.vocab_size, len = pos + n;
    assert(n >= 1 && len <= (size_t)s->cfg.block_size && n_logits >= 1 && n_logits <= n);
    TIMED(s, -1, NL_COMP_EMBED, n, len, embed(s, tokens, n, pos));
    for (size_t l = 0; l < (size_t)s->cfg.n_layer; l++) block(s, l, n, pos);
    // Only the last n_logits positions reach the head.
    const float *last = s->x + (n - n_logits) * D;
    if (s->cfg.placement == NL_PLACE_PRE) {
        TIMED(s, -1, NL_COMP_FINAL_NORM, n_logits, len,
              nl_norm(s->xn, last, s->ln_f, s->cfg.norm, n_logits, D, (float)s->cfg.norm_eps));
        last = s->xn;
    }
    TIMED(s, -1, NL_COMP_LM_HEAD, n_logits, len, nl_linear(s->logits, last, w->lm_head, NULL, n_logits, V, D));
    return s->logits;
}
