// transformer.c — the transformer forward pass over a KV cache (docs/forward.md; the reference:
// tools/lib/nlmodel.py in float64):
//   x = wte[tok] + wpe[pos]                                  (RoPE, the Llama family: x = wte[tok])
//   each layer: its block's recipe, step by step (recipe.h: norms, attention, MLP, residual adds;
//               pre: x = x + Attn(N1(x)); x = x + MLP(N2(x)), and the other placements' rows there)
//   the final norm where the recipe has one, then logits = x @ lm_head^T
// Norm "none" is the identity wherever a norm stands. The Llama family (docs/llama.md) runs the same
// blocks with grouped key/value heads, q and k normalised per head (QK-norm) and rotated (RoPE) before
// they enter the cache, and a gated MLP: c_proj(silu(gate x) * up x).
#define _DEFAULT_SOURCE  // MADV_HUGEPAGE
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "family.h"
#include "kernels.h"
#include "linear.h"
#include "model.h"
#include "normlab.h"
#include "observe.h"
#include "transformer.h"
#include "transformer_weights.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#endif

#include "transformer_state.h"

// All of a state's buffers live in one anonymous mapping, aligned to 2 MiB and marked for
// transparent huge pages: the first touch of a 4 KiB page cost 11.6 us on the VM we measure on
// (64 MiB touched page by page), and a 16-stream KV cache is 2,048 of them. Pages are zero until
// written and become resident only when touched; the cache's tile-outermost layout touches it only
// as far as it is filled. A model whose weights are read from memory at every step (streamed:
// GPT-2 small's shape) keeps 4 KiB pages: there one stream's decode touches a few rows of each
// buffer, and a huge page apiece came to 25 MB of resident memory (a Q8_0 GPT-2 small at 1.25x its
// file's 129 MiB), where its cache's page faults cost about 2% of a token's time.
#define ARENA_ALIGN ((size_t)2 << 20)
#define BUF_ALIGN ((size_t)64)  // each buffer starts on its own cache line

typedef struct {
    float **dst;
    size_t count;  // floats
} BufferSpec;

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Maps one arena for the buffers and points each *dst into it. Under AddressSanitizer the gaps
// between buffers are poisoned, so an overrun is still reported.
static int arena_create(Transformer *s, const BufferSpec *bufs, size_t n, int huge) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += round_up(bufs[i].count * sizeof(float) + BUF_ALIGN, BUF_ALIGN);
    s->arena_bytes = round_up(total, ARENA_ALIGN) + ARENA_ALIGN;  // room to align the start
    void *map = mmap(NULL, s->arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return -1;
    s->arena = map;
    char *at = (char *)round_up((size_t)map, ARENA_ALIGN);
#ifdef MADV_HUGEPAGE
    if (huge) (void)madvise(at, round_up(total, ARENA_ALIGN), MADV_HUGEPAGE);  // advice only: fine if refused
#endif
    for (size_t i = 0; i < n; i++) {
        size_t bytes = bufs[i].count * sizeof(float);
        *bufs[i].dst = (float *)at;
        at += round_up(bytes + BUF_ALIGN, BUF_ALIGN);
        ASAN_POISON_MEMORY_REGION((char *)*bufs[i].dst + bytes, round_up(bytes + BUF_ALIGN, BUF_ALIGN) - bytes);
    }
    return 0;
}

// *out = the model's norm `w` as the run uses it: unit gain and no bias where the model has none;
// BatchNorm with running statistics needs the model's, and DyT its alpha.
// (`norm` names it in an error: "ln_1" of layer l, or "ln_f" with layer -1.)
static int resolve_norm(const Transformer *s, NlNormWeights w, int layer, const char *norm, NlNormWeights *out,
                        NlError *err) {
    *out = w;
    if (!out->gain) *out = (NlNormWeights){.gain = s->ones};
    int bn = s->cfg->norm == NL_NORM_BATCHNORM && s->bn_stats == NL_BN_RUNNING && !out->mean;
    if (!bn && (s->cfg->norm != NL_NORM_DYT || out->alpha)) return 0;
    char name[64] = "";
    if (layer >= 0) snprintf(name, sizeof name, "h.%d.", layer);
    if (!bn)
        return nl_error(err, NL_ERR_ARG,
                        "dyt needs its alpha, tensor \"%s%s.alpha\", which this %s model lacks (a norm of its own, "
                        "trained as dyt: a unit-gain stand-in has no alpha)",
                        name, norm, nl_name(NL_NAMES_NORM, s->model_cfg->norm));
    nl_error(err, NL_ERR_ARG,
             "batchnorm with running statistics needs tensor \"%s%s.running_mean\", which this %s model lacks; "
             "use batch statistics",
             name, norm, nl_name(NL_NAMES_NORM, s->model_cfg->norm));
    return -1;
}

// Resolves every norm the run's recipe uses (the others stay unset).
static int resolve_norms(Transformer *s, NlError *err) {
    const NlTransformerWeights *w = s->w;
    const NlConfig *c = s->cfg;
    s->norms = calloc((size_t)c->n_layer, sizeof *s->norms);
    if (!s->norms) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    for (int l = 0; l < c->n_layer; l++) {
        const NlLayerWeights *lw = &w->layers[l];
        LayerNorms *n = &s->norms[l];
        unsigned used = nl_recipe_block(&c->recipe, l)->norms;
        if (c->qk_norm && (resolve_norm(s, lw->q_norm, l, "attn.q_norm", &n->q_norm, err) != 0 ||
                           resolve_norm(s, lw->k_norm, l, "attn.k_norm", &n->k_norm, err) != 0))
            return -1;
        for (int k = 0; k < NL_NS_COUNT; k++)
            if ((used >> k & 1u) && resolve_norm(s, lw->norm[k], l, nl_recipe_norm_name(k), &n->norm[k], err) != 0)
                return -1;
    }
    if (!c->recipe.final_norm) return 0;
    return resolve_norm(s, w->ln_f, -1, "ln_f", &s->ln_f, err);
}

static void transformer_destroy(void *impl) {
    Transformer *s = impl;
    if (!s) return;
    if (s->arena) {
        ASAN_UNPOISON_MEMORY_REGION(s->arena, s->arena_bytes);
        munmap(s->arena, s->arena_bytes);
    }
    free(s->norms);
    free(s);
}

// What a row of this file cannot run: QK-norm outside the Llama family, BatchNorm inside it.
static int refuse_run(const NlConfig *model_cfg, const NlConfig *cfg, const NlRunOptions *opts, NlError *err) {
    int llama = model_cfg->arch == NL_ARCH_LLAMA;
    if (!llama && opts && opts->qk_norm != NL_QK_NORM_AS_CONFIGURED)
        return nl_error(err, NL_ERR_ARG, "QK-norm applies to the Llama family, not to this %s model",
                        nl_name(NL_NAMES_ARCH, model_cfg->arch));
    if (llama && cfg->norm == NL_NORM_BATCHNORM)
        return nl_error(err, NL_ERR_ARG, "a llama model runs with norm rmsnorm, layernorm or none, not batchnorm");
    return 0;
}

// The floats of scratch the model's linears need (nl_linear_scratch): 0 when every weight is float32.
static size_t linear_scratch(const NlTransformerWeights *w, const NlConfig *c, int workers) {
    size_t most = nl_linear_scratch(&w->lm_head, workers);
    for (int l = 0; l < c->n_layer; l++) {
        const NlLinear *four[4] = {&w->layers[l].attn, &w->layers[l].proj, &w->layers[l].fc, &w->layers[l].out};
        for (int j = 0; j < 4; j++)
            most = nl_linear_scratch(four[j], workers) > most ? nl_linear_scratch(four[j], workers) : most;
    }
    return most;
}

static int transformer_create(void **impl, const void *weights, const NlConfig *model_cfg, const NlConfig *cfg,
                              const NlRunOptions *opts, NlLinearInputHook hook, size_t batch, NlPool *pool,
                              const NlObserver *obs, NlError *err) {
    *impl = NULL;
    if (refuse_run(model_cfg, cfg, opts, err) != 0) return -1;
    Transformer *s = calloc(1, sizeof *s);
    if (!s) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    *s = (Transformer){.w = weights, .model_cfg = model_cfg, .cfg = cfg, .obs = obs, .batch = batch, .pool = pool};
    s->bn_stats = opts ? opts->bn_stats : NL_BN_RUNNING;
    s->input_hook = hook;
    size_t T = (size_t)cfg->block_size, D = (size_t)cfg->n_embd, F = (size_t)cfg->n_inner, Dh = head_width(cfg);
    size_t V = (size_t)cfg->vocab_size, BT = batch * T, hidden = cfg->gated_mlp ? 2 * F : F;
    size_t KV = batch * nl_transformer_state_bytes(model_cfg) / (2 * sizeof(float));  // floats in each of K and V
    size_t A = nl_query_width(cfg), N = nl_recipe_norms(&cfg->recipe) >> NL_NS_LN_2_SUB & 1u && F > D ? F : D;
    N = cfg->qk_norm && A > N ? A : N;  // the widest norm
    size_t extra = (size_t)nl_recipe_buffers(&cfg->recipe);  // scratch buffers beyond the first two
    extra = extra > 2 ? extra - 2 : 0;
    const BufferSpec bufs[] = {
        {&s->buf[0], BT * D},
        {&s->buf[1], BT * D},
        {&s->qkv, BT * qkv_width(cfg)},
        {&s->att, BT * A},
        {&s->buf[2], BT * D},
        {&s->hid, BT * hidden},
        {&s->rope, cfg->rope ? T * Dh : 0},
        {&s->rope_local, cfg->rope && cfg->rope_local_theta ? T * Dh : 0},
        {&s->scores, (size_t)nl_pool_workers(pool) * NL_ATTEND_BLOCK * nl_tiles(T) * NL_TILE},
        {&s->logits, BT * V},
        {&s->k_cache, KV},
        {&s->v_cache, KV},
        {&s->ones, N},
        {&s->bn_mean, N},
        {&s->bn_var, N},
        {&s->qin, s->input_hook.fn ? BT * (D > F ? (D > A ? D : A) : (F > A ? F : A)) : 0},
        {&s->scratch, linear_scratch(s->w, cfg, nl_pool_workers(pool))},
        {&s->buf[3], extra > 0 ? BT * D : 0},
        {&s->buf[4], extra > 1 ? BT * D : 0},
        {&s->buf[5], extra > 2 ? BT * D : 0},
        {&s->buf[6], extra > 3 ? BT * D : 0},
    };
    if (arena_create(s, bufs, sizeof bufs / sizeof bufs[0], !s->w->lm_head.streamed) != 0) {
        nl_error(err, NL_ERR_NOMEM, "out of memory for activations and KV cache (%zu bytes of cache)",
                 batch * nl_transformer_state_bytes(model_cfg));
        transformer_destroy(s);
        return -1;
    }
    for (size_t i = 0; i < N; i++) s->ones[i] = 1.0f;
    size_t rot = cfg->rope_dims ? (size_t)cfg->rope_dims : Dh;
    if (cfg->rope) nl_rope_table(s->rope, T, Dh, rot, (float)cfg->rope_theta);
    if (cfg->rope && cfg->rope_local_theta) nl_rope_table(s->rope_local, T, Dh, rot, (float)cfg->rope_local_theta);
    if (resolve_norms(s, err) != 0) {
        transformer_destroy(s);
        return -1;
    }
    *impl = s;
    return 0;
}

// x (B*n, D) -> (B*keep, D): the last keep rows of each sequence, in place.
static void keep_last_rows(float *x, size_t B, size_t n, size_t keep, size_t D) {
    if (keep == n) return;
    for (size_t b = 0; b < B; b++) memmove(x + b * keep * D, x + (b * n + n - keep) * D, keep * D * sizeof(float));
}

// The gain of a norm as run, or NULL when the run has no norms (what the watcher's site is told).
static const float *gain_of(const Transformer *s, const NlNormWeights *w) {
    return s->cfg->norm == NL_NORM_NONE ? NULL : w->gain;
}

// The gain NlSite names for the stream entering layer l (l = L: leaving the last): the norm it last
// passed through (post: the previous layer's ln_2), else the one it is about to (pre, peri: ln_1; at
// L, ln_f); NULL with neither (post's embeddings).
static const float *stream_gain(const Transformer *s, size_t l) {
    int layer, slot = nl_recipe_stream_norm(&s->cfg->recipe, s->cfg->n_layer, (int)l, &layer);
    if (slot == NL_NS_NONE) return NULL;
    return gain_of(s, slot == NL_NS_FINAL ? &s->ln_f : &s->norms[layer].norm[slot]);
}

static void watch_site(const Transformer *s, size_t l, NlSite site, const float *x, size_t rows, size_t width,
                       const float *gain) {
    if (s->obs->site) s->obs->site(s->obs->watcher, (int)l, site, x, rows, width, gain);
}

// y (rows, n_out) = x @ lin^T + b, x first copied for the run's input hook to rewrite (--quantize-act).
static void linear(Transformer *s, float *y, const float *x, size_t rows, const NlLinear *lin) {
    if (s->input_hook.fn) {
        memcpy(s->qin, x, rows * lin->n_in * sizeof(float));
        s->input_hook.fn(s->input_hook.ctx, s->qin, rows, lin->n_in);
        x = s->qin;
    }
    nl_linear(y, x, rows, lin, s->pool, s->scratch);
}

// out = N(in) over rows of width; BatchNorm with batch statistics computes them from these rows first
// and points w at them.
static void norm_rows(Transformer *s, float *out, const float *in, NlNormWeights *w, size_t rows, size_t width) {
    if (s->cfg->norm == NL_NORM_BATCHNORM && s->bn_stats == NL_BN_BATCH) {
        nl_batch_stats(s->bn_mean, s->bn_var, in, rows, width);
        w->mean = s->bn_mean;
        w->var = s->bn_var;
    }
    nl_norm(out, in, *w, s->cfg->norm, rows, width, (float)s->cfg->norm_eps);
}

// out = N(in) over B*n rows of width, timed as comp, observed by the statistics when attached (the
// final norm as layer L there; a branch's inner norm not: its rows are not the stream's width). Norm
// none is a copy, neither timed nor observed.
static void normalize(Transformer *s, float *out, const float *in, NlNormWeights w, int layer, NlComponent comp,
                      size_t B, size_t n, size_t width, size_t len) {
    size_t rows = B * n;
    if (s->cfg->norm == NL_NORM_NONE) {
        if (out != in) memcpy(out, in, rows * width * sizeof(float));
        return;
    }
    NL_TIMED(s->obs, layer, comp, B, n, len, norm_rows(s, out, in, &w, rows, width));
    if (!s->obs->norm || comp == NL_COMP_NORM1_SUB || comp == NL_COMP_NORM2_SUB) return;
    int post = comp == NL_COMP_NORM1_POST || comp == NL_COMP_NORM2_POST;
    s->obs->norm(s->obs->watcher, comp == NL_COMP_FINAL_NORM ? s->cfg->n_layer : layer, post, in, out, w, rows);
}

// out (B*keep, D) = c_proj(Attn(c_attn(in))) for layer l, in (B*n, D) the output of the norm of
// gain in_gain: keys and values of all n positions, the output for the last keep of each sequence;
// inner (NL_NS_NONE: none) normalises Attn's output first.
static void attn_block(Transformer *s, float *out, const float *in, const float *in_gain, int inner, size_t l, size_t B,
                       size_t n, size_t pos, size_t keep) {
    const NlLayerWeights *w = &s->w->layers[l];
    size_t len = pos + n, rows = B * n;
    const float *proj_gain = NULL;
    watch_site(s, l, NL_SITE_QKV, in, rows, w->attn.n_in, in_gain);
    NL_TIMED(s->obs, l, NL_COMP_QKV, B, n, len, linear(s, s->qkv, in, rows, &w->attn));
    NL_TIMED(s->obs, l, NL_COMP_ATTENTION, B, keep, len, nl_transformer_attention(s, B, l, n, pos, keep));
    if (inner != NL_NS_NONE) {
        normalize(s, s->att, s->att, s->norms[l].norm[inner], (int)l, NL_COMP_NORM1_SUB, B, keep, w->proj.n_in, len);
        proj_gain = gain_of(s, &s->norms[l].norm[inner]);
    }
    watch_site(s, l, NL_SITE_PROJ, s->att, B * keep, w->proj.n_in, proj_gain);
    NL_TIMED(s->obs, l, NL_COMP_ATTN_PROJ, B, keep, len, linear(s, out, s->att, B * keep, &w->proj));
}

// out (B*n, D) = c_proj(act(c_fc(in))) for layer l, in the output of the norm of gain in_gain; inner
// (NL_NS_NONE: none) normalises the hidden first.
static void mlp_block(Transformer *s, float *out, const float *in, const float *in_gain, int inner, size_t l, size_t B,
                      size_t n, size_t len) {
    const NlLayerWeights *w = &s->w->layers[l];
    size_t F = (size_t)s->cfg->n_inner, rows = B * n;
    const float *out_gain = NULL;
    watch_site(s, l, NL_SITE_FC, in, rows, w->fc.n_in, in_gain);
    NL_TIMED(s->obs, l, NL_COMP_MLP_UP, B, n, len, linear(s, s->hid, in, rows, &w->fc));
    if (s->cfg->gated_mlp)  // (rows, 2F) -> (rows, F)
        NL_TIMED(s->obs, l, NL_COMP_ACTIVATION, B, n, len, nl_gated_activation(s->hid, rows, F, s->cfg->activation));
    else NL_TIMED(s->obs, l, NL_COMP_ACTIVATION, B, n, len, nl_activation(s->hid, rows * F, s->cfg->activation));
    if (inner != NL_NS_NONE) {
        normalize(s, s->hid, s->hid, s->norms[l].norm[inner], (int)l, NL_COMP_NORM2_SUB, B, n, F, len);
        out_gain = gain_of(s, &s->norms[l].norm[inner]);
    }
    watch_site(s, l, NL_SITE_OUT, s->hid, rows, w->out.n_in, out_gain);
    NL_TIMED(s->obs, l, NL_COMP_MLP_DOWN, B, n, len, linear(s, out, s->hid, rows, &w->out));
}

// x (B*n, D) += branch, or x = a*x + branch (a: residual_scale, a scaled add: DeepNorm).
static void residual(Transformer *s, const float *branch, int scaled, size_t l, size_t B, size_t n, size_t len) {
    size_t rows = B * n, D = (size_t)s->cfg->n_embd;
    float a = scaled ? (float)s->cfg->residual_scale : 1.0f;
    if (s->obs->branch) s->obs->branch(s->obs->watcher, (int)l, branch, rows);
    NL_TIMED(s->obs, l, NL_COMP_RESIDUAL, B, n, len,
             a == 1.0f ? nl_add(s->buf[0], branch, rows * D) : nl_add_scaled(s->buf[0], a, branch, rows * D));
}

// A block's buffers as it runs: the rows per sequence each holds, and the gain of the norm whose
// output it is (the watched sites' gains).
typedef struct {
    size_t n[1 + NL_RECIPE_SLOTS_MAX];
    const float *gain[1 + NL_RECIPE_SLOTS_MAX];
} Held;

// Buffer b for a step on `cur` rows of each of B sequences: a buffer written before attention pruned
// its rows to the last cur of each sequence first.
static float *take(Transformer *s, Held *h, int b, size_t B, size_t cur) {
    if (h->n[b] > cur) keep_last_rows(s->buf[b], B, h->n[b], cur, (size_t)s->cfg->n_embd), h->n[b] = cur;
    return s->buf[b];
}

// Buffer b becomes the stream (a norm into x wrote it), the stream's buffer free for a later step.
static void into_stream(Transformer *s, Held *h, int b) {
    float *t = s->buf[0];
    s->buf[0] = s->buf[b], s->buf[b] = t;
    h->n[0] = h->n[b], h->gain[0] = h->gain[b];
}

// Layer l over B sequences of n new positions, step by step as its recipe says. Only the last `keep`
// rows of each sequence leave attention (keep < n in a last layer whose other rows no logit needs):
// x becomes (B*keep, D).
static void block(Transformer *s, size_t l, size_t B, size_t n, size_t pos, size_t keep) {
    const NlBlockRecipe *r = nl_recipe_block(&s->cfg->recipe, (int)l);
    const LayerNorms *w = &s->norms[l];
    size_t D = (size_t)s->cfg->n_embd, len = pos + n, cur = n;  // cur: the rows each step runs on
    Held h = {.n = {n}, .gain = {stream_gain(s, l)}};
    double t_layer = nl_obs_begin(s->obs);
    if (s->obs->patch) s->obs->patch(s->obs->watcher, (int)l, s->buf[0], B * n, D);
    if (s->obs->residual) s->obs->residual(s->obs->watcher, (int)l, s->buf[0], B * n, D);
    watch_site(s, l, NL_SITE_RESIDUAL, s->buf[0], B * n, D, h.gain[0]);
    for (int k = 0; k < r->n_steps; k++) {
        const NlStep *st = &r->step[k];
        float *in = take(s, &h, st->in, B, cur);
        int out = st->op == NL_STEP_NORM && st->out == 0 ? st->via : st->out;
        switch (st->op) {
        case NL_STEP_NORM:
            normalize(s, s->buf[out], in, w->norm[st->norm], (int)l, nl_recipe_norm_component(st->norm), B, cur, D,
                      len);
            h.n[out] = cur, h.gain[out] = gain_of(s, &w->norm[st->norm]);
            if (st->out == 0) into_stream(s, &h, out);
            break;
        case NL_STEP_ATTN:
            attn_block(s, s->buf[out], in, h.gain[st->in], st->norm, l, B, n, pos, keep);
            cur = keep, h.n[out] = keep, h.gain[out] = NULL;
            break;
        case NL_STEP_MLP:
            mlp_block(s, s->buf[out], in, h.gain[st->in], st->norm, l, B, cur, len);
            h.n[out] = cur, h.gain[out] = NULL;
            break;
        default:  // NL_STEP_ADD
            take(s, &h, 0, B, cur);
            residual(s, in, st->scaled, l, B, cur, len);
            h.gain[0] = NULL;
        }
    }
    nl_obs_record_layer(s->obs, t_layer, (int)l);
}

// x (B*n, D) = wte[tokens] + wpe[pos ..] (with RoPE, wte[tokens]: positions turn q and k instead)
static void embed(Transformer *s, const int *tokens, size_t B, size_t n, size_t pos) {
    const NlTransformerWeights *w = s->w;
    size_t D = (size_t)s->cfg->n_embd;
    for (size_t r = 0; r < B * n; r++) {
        assert(tokens[r] >= 0 && tokens[r] < s->cfg->vocab_size);
        nl_weight_rows(s->buf[0] + r * D, w->wte, (size_t)tokens[r], 1, D);
        if (s->cfg->embed_scale) nl_scale(s->buf[0] + r * D, (float)s->cfg->embed_scale, D);
        if (w->wpe.data) nl_add(s->buf[0] + r * D, nl_weight_f32(w->wpe) + (pos + r % n) * D, D);
    }
}

// buf[1] (B*k, D) = the last k of the n rows of each sequence in x, through the final norm where the
// recipe has one (over all n rows, so that batch statistics are those of the call).
static void head_input(Transformer *s, size_t B, size_t n, size_t k, size_t len) {
    size_t D = (size_t)s->cfg->n_embd;
    if (!s->cfg->recipe.final_norm) memcpy(s->buf[1], s->buf[0], B * n * D * sizeof(float));
    else normalize(s, s->buf[1], s->buf[0], s->ln_f, -1, NL_COMP_FINAL_NORM, B, n, D, len);
    keep_last_rows(s->buf[1], B, n, k, D);
}

// The logits (B*k, V) of the last k of the n rows of each sequence in x (the stream after the last
// layer): through the final norm unless post (or `normed`: x is the head's input already), then the head.
static const float *readout(Transformer *s, size_t B, size_t n, size_t k, size_t len, int normed) {
    const NlLinear *head = &s->w->lm_head;
    size_t L = (size_t)s->cfg->n_layer;
    if (!normed) head_input(s, B, n, k, len);
    else
        memcpy(s->buf[1], s->buf[0], B * n * head->n_in * sizeof(float)),
            keep_last_rows(s->buf[1], B, n, k, head->n_in);
    watch_site(s, L, NL_SITE_HEAD, s->buf[1], B * k, head->n_in, stream_gain(s, L));
    NL_TIMED(s->obs, -1, NL_COMP_LM_HEAD, B, k, len, linear(s, s->logits, s->buf[1], B * k, head));
    if (s->cfg->final_softcap)  // Gemma 2's logits, cap tanh(logit / cap)
        nl_softcap(s->logits, B * k * (size_t)s->cfg->vocab_size, (float)s->cfg->final_softcap);
    return s->logits;
}

static const float *transformer_forward(void *impl, const int *tokens, size_t B, size_t n, size_t pos,
                                        size_t n_logits) {
    Transformer *s = impl;
    size_t D = (size_t)s->cfg->n_embd, L = (size_t)s->cfg->n_layer, len = pos + n;
    assert(B >= 1 && B <= s->batch && n >= 1 && len <= (size_t)s->cfg->block_size && n_logits >= 1 && n_logits <= n);
    NL_TIMED(s->obs, -1, NL_COMP_EMBED, B, n, len, embed(s, tokens, B, n, pos));
    // Only the last n_logits positions of each sequence reach the head, so after the last layer's
    // attention only they are computed on (llama.cpp does the same). With statistics attached every
    // position is, so that they describe the whole stream; so with BatchNorm's batch statistics,
    // which are those of every row of the call.
    int all_rows = s->obs->watcher || (s->cfg->norm == NL_NORM_BATCHNORM && s->bn_stats == NL_BN_BATCH);
    size_t keep = all_rows ? n : n_logits;
    for (size_t l = 0; l < L; l++) block(s, l, B, n, pos, l + 1 == L ? keep : n);
    if (s->obs->patch) s->obs->patch(s->obs->watcher, (int)L, s->buf[0], B * keep, D);
    if (s->obs->residual) s->obs->residual(s->obs->watcher, (int)L, s->buf[0], B * keep, D);
    watch_site(s, L, NL_SITE_RESIDUAL, s->buf[0], B * keep, D, stream_gain(s, L));
    return readout(s, B, keep, n_logits, len, 0);
}

// x (B*n, D) as if it left the last layer: into the stream, then out as transformer_forward reads it
// (normed: x is the head's input, the final norm not applied).
static const float *transformer_readout(void *impl, const float *x, size_t B, size_t n, size_t n_logits, int normed) {
    Transformer *s = impl;
    assert(B >= 1 && B <= s->batch && n >= 1 && n <= (size_t)s->cfg->block_size && n_logits >= 1 && n_logits <= n);
    memcpy(s->buf[0], x, B * n * (size_t)s->cfg->n_embd * sizeof(float));
    return readout(s, B, n, n_logits, n, normed);
}

static size_t transformer_window(const NlConfig *cfg) { return (size_t)cfg->block_size; }

// The operations both rows share: the Llama family runs these blocks with its config's RoPE,
// grouped KV heads, QK-norm and gated MLP, and differs in what it is and how info describes it.
#define TRANSFORMER_OPS                                                                                             \
    .bind = nl_transformer_bind, .copy_weights = nl_transformer_copy_weights,                                       \
    .free_weights = nl_transformer_free_weights, .matrices = nl_transformer_matrices, .create = transformer_create, \
    .destroy = transformer_destroy, .forward = transformer_forward, .copy = nl_transformer_copy,                    \
    .shift = nl_transformer_shift, .window = transformer_window, .call_logits = transformer_window,                 \
    .state_bytes = nl_transformer_state_bytes, .has_component = nl_transformer_has_component,                       \
    .lab_cost = nl_transformer_cost, .lab_readout = transformer_readout, .fold = nl_transformer_fold

const NlFamily *nl_family_transformer(void) {
    static const NlFamilyInfo INFO = {
        .name = "transformer",
        .has_placement = 1,
        .windowed = 1,
        .has_residual_stream = 1,
        .state_bytes_key = "kv_cache_bytes",
        .norms = 1u << NL_NORM_LAYERNORM | 1u << NL_NORM_RMSNORM | 1u << NL_NORM_BATCHNORM | 1u << NL_NORM_NONE |
                 1u << NL_NORM_DYT,
        .trace_events_per_layer = 16,  // a recipe's at most 11 components, 2 inner norms, the layer, and slack
        .prunes_rows = 1,  // after the last layer's attention (transformer_forward)
        .matrix_classes = NL_MATRIX_ATTN | NL_MATRIX_MLP | NL_MATRIX_HEAD | NL_MATRIX_EMBED,
    };
    static const NlFamily TABLE = {.info = &INFO, .describe = nl_transformer_describe, TRANSFORMER_OPS};
    return &TABLE;
}

const NlFamily *nl_family_llama(void) {
    static const NlFamilyInfo INFO = {
        .name = "llama",
        .has_placement = 1,
        .qk_norm = 1,
        .windowed = 1,
        .has_residual_stream = 1,
        .state_bytes_key = "kv_cache_bytes",
        .norms = 1u << NL_NORM_LAYERNORM | 1u << NL_NORM_RMSNORM | 1u << NL_NORM_NONE | 1u << NL_NORM_DYT,
        .trace_events_per_layer = 16,
        .prunes_rows = 1,
        .matrix_classes = NL_MATRIX_ATTN | NL_MATRIX_MLP | NL_MATRIX_HEAD | NL_MATRIX_EMBED,
    };
    static const NlFamily TABLE = {.info = &INFO, .describe = nl_llama_describe, TRANSFORMER_OPS};
    return &TABLE;
}
