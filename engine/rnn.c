// rnn.c — the recurrent models' forward pass, as docs/forward.md specifies it (the reference:
// tools/lib/nlmodel.py in float64). N is LayerNorm over the whole vector it is written over, or the
// identity (norm none); a bias the model lacks is zero. For each layer, x its input and (h, c) its state:
//   LSTM: a = N_hh(W_hh h) + N_ih(W_ih x) + b (4S: f i o g); c = s(f) c + s(i) tanh(g); h = s(o) tanh(N_cell(c))
//   GRU:  [z r] = N_ih(W_ih x)[zr] + b_ih + N_hh(W_hh h)[zr] + b_hh
//         h = (1 - s(z)) h + s(z) tanh(N_ih_cand(W_ih x)[cand] + b_ih + s(r) (N_hh_cand(U h) + b_hh))
//   logits = lm_head h + lm_head_b, x of layer 0 = wte[token]
// A call runs its positions in chunks of up to NL_RNN_LOGITS: each layer projects the whole chunk's
// inputs in one product (sgemm), normalises them row by row (LayerNorm is per position), then steps
// the recurrence one position at a time, one product of the B sequences' states (sgemv for one).
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "family.h"
#include "kernels.h"
#include "linear.h"
#include "model.h"
#include "observe.h"
#include "rnn.h"

typedef struct {
    NlNormWeights ih, hh, cell, ih_cand, hh_cand;  // as run: unit gain where the model has none
} RnnNorms;

// The recurrent family's state (family.h).
typedef struct {
    NlConfig cfg;  // the model's, with the run's norm
    const NlObserver *obs;  // the NlState's
    const NlRecurrentWeights *w;
    RnnNorms *norms;  // (L)
    size_t batch;  // B at most
    NlPool *pool;  // the NlState's workers for a product's rows, or NULL
    size_t pos;  // positions the states have taken in
    int lstm, ln;
    size_t S, G;  // state width, gate blocks
    float *h, *c;  // (L, B, S) each; c is the LSTM's (allocated, and unused, for the GRU)
    float *xin, *xout;  // (B*CHUNK, in) a chunk's rows into the current layer (in = E or S), and (B*CHUNK, S)
        // its h rows out; room for max(E, S) each
    float *px;  // (B*CHUNK, G*S) the chunk's input projections
    float *ph;  // (B, G*S) one step's recurrent projections
    float *cn;  // (B, S) the LSTM's normalised cell
    float *logits;  // (B*CHUNK, V)
    float *ones;  // (G*S) unit gain
    NlLinearInputHook input_hook;  // the run's hook on every product's input rows (fn NULL: none)
    float *qin;  // (B*CHUNK, max(E, S)) a product's input as the hook rewrote it
    float *scratch;  // the products' tiles of weights not stored as float32 (nl_linear_scratch), or NULL
} NlRnn;

#define CHUNK NL_RNN_LOGITS  // positions a layer projects at once, and the most logits one call returns

// The norm as run: none has no gain (the identity); layernorm uses the model's, or unit gain.
static NlNormWeights as_run(const NlRnn *r, NlNormWeights w) {
    if (!r->ln) return (NlNormWeights){0};
    return w.gain ? w : (NlNormWeights){.gain = r->ones};
}

static void rnn_destroy(void *impl);

// The state of `batch` sequences of model run with norm (layernorm or none, checked by rnn_create).
static int rnn_build(NlRnn **out, const NlRecurrentWeights *w, const NlConfig *mc, NlNormType norm, size_t batch,
                     NlPool *pool, NlError *err) {
    *out = NULL;
    NlRnn *r = calloc(1, sizeof *r);
    size_t L = (size_t)mc->n_layer, S = (size_t)mc->n_hidden, E = (size_t)mc->n_input, V = (size_t)mc->vocab_size;
    size_t G = mc->arch == NL_ARCH_LSTM ? 4 : 3, in_max = E > S ? E : S, B = batch ? batch : 1;
    if (r) {
        r->norms = calloc(L, sizeof *r->norms);
        r->h = calloc(L * B * S, sizeof(float));
        r->c = calloc(L * B * S, sizeof(float));
        r->xin = malloc(B * CHUNK * in_max * sizeof(float));
        r->xout = malloc(B * CHUNK * in_max * sizeof(float));
        r->px = malloc(B * CHUNK * G * S * sizeof(float));
        r->ph = malloc(B * G * S * sizeof(float));
        r->cn = malloc(B * S * sizeof(float));
        r->logits = malloc(B * CHUNK * V * sizeof(float));
        r->ones = malloc(G * S * sizeof(float));
    }
    if (!r || !r->norms || !r->h || !r->c || !r->xin || !r->xout || !r->px || !r->ph || !r->cn || !r->logits ||
        !r->ones) {
        rnn_destroy(r);
        nl_error(err, NL_ERR_NOMEM, "out of memory for the recurrent state");
        return -1;
    }
    r->cfg = *mc;
    r->cfg.norm = norm;
    r->w = w;
    r->batch = B;
    r->pool = pool;
    r->lstm = mc->arch == NL_ARCH_LSTM;
    r->ln = norm == NL_NORM_LAYERNORM;
    r->S = S;
    r->G = G;
    for (size_t i = 0; i < G * S; i++) r->ones[i] = 1.0f;
    for (size_t l = 0; l < L; l++) {
        const NlRnnLayerWeights *lw = &r->w->layers[l];
        r->norms[l] = (RnnNorms){as_run(r, lw->ln_ih), as_run(r, lw->ln_hh), as_run(r, lw->ln_cell),
                                 as_run(r, lw->ln_ih_cand), as_run(r, lw->ln_hh_cand)};
    }
    *out = r;
    return 0;
}

static void rnn_destroy(void *impl) {
    NlRnn *r = impl;
    if (!r) return;
    free(r->norms);
    free(r->h);
    free(r->c);
    free(r->xin);
    free(r->xout);
    free(r->px);
    free(r->ph);
    free(r->cn);
    free(r->logits);
    free(r->ones);
    free(r->qin);
    free(r->scratch);
    free(r);
}

// Sequence `to` continues from sequence `from`'s state (h and c of every layer), whatever n.
static void rnn_copy(void *impl, size_t from, size_t to, size_t n) {
    NlRnn *r = impl;
    (void)n;
    assert(from < r->batch && to < r->batch);
    if (from == to) return;
    size_t S = r->S;
    for (size_t l = 0; l < (size_t)r->cfg.n_layer; l++) {
        float *h = r->h + l * r->batch * S, *c = r->c + l * r->batch * S;
        memcpy(h + to * S, h + from * S, S * sizeof(float));
        memcpy(c + to * S, c + from * S, S * sizeof(float));
    }
}

// x (rows, width at stride `stride`) = N(x) + bias, in place, on `width` features of each row.
static void norm_in_place(const NlRnn *r, float *x, size_t rows, size_t stride, size_t width, NlNormWeights n,
                          const float *bias) {
    for (size_t i = 0; i < rows; i++) {
        float *row = x + i * stride;
        if (n.gain) nl_layernorm(row, row, n.gain, n.bias, 1, width, (float)r->cfg.norm_eps);
        if (bias) nl_add(row, bias, width);
    }
}

// The normalisations (and biases) of a layer's products, `rows` rows of G*S: its input
// projections (input 1) or one step's recurrent projections (input 0).
static void norm_products(const NlRnn *r, const RnnNorms *n, const NlRnnLayerWeights *lw, float *p, size_t rows,
                          int input) {
    size_t S = r->S, GS = r->G * S;
    if (r->lstm) {
        norm_in_place(r, p, rows, GS, GS, input ? n->ih : n->hh, input ? lw->bias : NULL);
        return;
    }
    const float *b = input ? lw->bias_ih : lw->bias_hh;
    norm_in_place(r, p, rows, GS, 2 * S, input ? n->ih : n->hh, b);
    norm_in_place(r, p + 2 * S, rows, GS, S, input ? n->ih_cand : n->hh_cand, b ? b + 2 * S : NULL);
}

// Features each row of norm_products normalises (the profile's cost of rnn_norm).
static size_t normed_features(const NlRnn *r) { return r->lstm ? 4 * r->S : 3 * r->S; }

// y (rows, n_out) = x @ lin^T + b, x first copied for the run's input hook to rewrite (--quantize-act).
static void product(NlRnn *r, float *y, const float *x, size_t rows, const NlLinear *lin) {
    if (r->input_hook.fn) {
        memcpy(r->qin, x, rows * lin->n_in * sizeof(float));
        r->input_hook.fn(r->input_hook.ctx, r->qin, rows, lin->n_in);
        x = r->qin;
    }
    nl_linear(y, x, rows, lin, r->pool, r->scratch);
}

// cn (B, S) = N_cell(c), the LSTM's cell as its output reads it.
static void norm_cell(NlRnn *r, const RnnNorms *n, const float *c, size_t B) {
    memcpy(r->cn, c, B * r->S * sizeof(float));
    norm_in_place(r, r->cn, B, r->S, r->S, n->cell, NULL);
}

// h = sigmoid(o) tanh(cn) for B sequences, cn the (normalised) cells (B, S).
static void lstm_output(NlRnn *r, float *h, const float *cn, size_t B) {
    for (size_t b = 0; b < B; b++) nl_lstm_output(h + b * r->S, r->ph + b * r->G * r->S, cn + b * r->S, r->S);
}

// One position t (of nc in the chunk) of layer l for B sequences: the recurrence.
static void step(NlRnn *r, int l, size_t B, size_t nc, size_t t, const NlObserver *obs) {
    const NlRnnLayerWeights *lw = &r->w->layers[l];
    const RnnNorms *n = &r->norms[l];
    size_t S = r->S, GS = r->G * S;
    float *h = r->h + (size_t)l * r->batch * S, *c = r->c + (size_t)l * r->batch * S;
    NL_TIMED(obs, l, NL_COMP_RNN_RECURRENT, B, 1, S, product(r, r->ph, h, B, &lw->hh));
    if (r->ln || lw->bias_hh)  // else nothing to normalise or add: no record, so no cost counted
        NL_TIMED(obs, l, NL_COMP_RNN_NORM, B, 1, normed_features(r), norm_products(r, n, lw, r->ph, B, 0));
    double t0 = nl_obs_begin(obs);
    for (size_t b = 0; b < B; b++) {
        const float *px = r->px + (b * nc + t) * GS;
        float *a = r->ph + b * GS, *hb = h + b * S;
        if (r->lstm) {
            nl_add(a, px, GS);
            nl_lstm_cell(c + b * S, a, S);
        } else {
            nl_add(a, px, 2 * S);
            nl_gru_update(hb, a, px + 2 * S, a + 2 * S, S);
        }
    }
    nl_obs_record(obs, t0, l, NL_COMP_RNN_GATES, B, 1, 0);  // ctx 0: the update (LSTM: of c)
    if (r->lstm) {
        if (r->ln) NL_TIMED(obs, l, NL_COMP_RNN_NORM, B, 1, S, norm_cell(r, n, c, B));
        NL_TIMED(obs, l, NL_COMP_RNN_GATES, B, 1, 1, lstm_output(r, h, r->ln ? r->cn : c, B));  // ctx 1: h
    }
    for (size_t b = 0; b < B; b++) memcpy(r->xout + (b * nc + t) * S, h + b * S, S * sizeof(float));
    if (obs->state) obs->state(obs->watcher, l, r->pos + t, h, r->lstm ? c : NULL, B);
    if (obs->site) obs->site(obs->watcher, l, NL_SITE_H, h, B, S, NULL);
    if (obs->site && r->lstm) obs->site(obs->watcher, l, NL_SITE_C, c, B, S, NULL);
}

// Layer l over a chunk of nc positions of B sequences: rows xin (B*nc, in) -> xout (B*nc, S).
static void layer(NlRnn *r, int l, size_t B, size_t nc, const NlObserver *obs) {
    double t_layer = nl_obs_begin(obs);
    const NlRnnLayerWeights *lw = &r->w->layers[l];
    size_t S = r->S, in = l == 0 ? (size_t)r->cfg.n_input : S, rows = B * nc;
    NL_TIMED(obs, l, NL_COMP_RNN_INPUT, B, nc, in, product(r, r->px, r->xin, rows, &lw->ih));
    if (r->ln || lw->bias || lw->bias_ih)
        NL_TIMED(obs, l, NL_COMP_RNN_NORM, B, nc, normed_features(r),
                 norm_products(r, &r->norms[l], lw, r->px, rows, 1));
    for (size_t t = 0; t < nc; t++) step(r, l, B, nc, t, obs);
    nl_obs_record_layer(obs, t_layer, l);
}

// xin (B*nc, E) = the embeddings of tokens (B rows of `stride`, nc each).
static void embed(NlRnn *r, const int *tokens, size_t stride, size_t B, size_t nc) {
    size_t E = (size_t)r->cfg.n_input;
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < nc; t++)
            nl_weight_rows(r->xin + (b * nc + t) * E, r->w->wte, (size_t)tokens[b * stride + t], 1, E);
}

// Logits of chunk positions t0..t0+k-1 of each sequence (the last layer's h, xin (B*nc, S)) into
// the output rows from `at` of each sequence's n_logits.
static void head(NlRnn *r, size_t B, size_t nc, size_t t0, size_t k, size_t n_logits, size_t at) {
    size_t S = r->S, V = (size_t)r->cfg.vocab_size;
    for (size_t b = 0; b < B; b++)
        product(r, r->logits + (b * n_logits + at) * V, r->xin + (b * nc + t0) * S, k, &r->w->lm_head);
}

// tokens (B, n): pos 0 starts the first B sequences from the zero state; any other pos must be where the
// previous call left them (positions are only counted, never windowed). Returns the logits of the
// last n_logits positions (B, n_logits, V), n_logits <= NL_RNN_LOGITS.
static const float *rnn_forward(void *impl, const int *tokens, size_t B, size_t n, size_t pos, size_t n_logits) {
    NlRnn *r = impl;
    const NlObserver *obs = r->obs;
    assert(B >= 1 && B <= r->batch && n >= 1 && n_logits >= 1 && n_logits <= n && n_logits <= CHUNK);
    assert(pos == 0 || pos == r->pos);
    size_t S = r->S, L = (size_t)r->cfg.n_layer;
    if (pos == 0) {
        for (size_t l = 0; l < L; l++) {
            memset(r->h + l * r->batch * S, 0, B * S * sizeof(float));
            memset(r->c + l * r->batch * S, 0, B * S * sizeof(float));
        }
        r->pos = 0;
    }
    size_t first_logit = n - n_logits;
    for (size_t p0 = 0; p0 < n; p0 += CHUNK) {
        size_t nc = n - p0 < CHUNK ? n - p0 : CHUNK;
        NL_TIMED(obs, -1, NL_COMP_EMBED, B, nc, 0, embed(r, tokens + p0, n, B, nc));
        if (obs->residual) obs->residual(obs->watcher, 0, r->xin, B * nc, (size_t)r->cfg.n_input);
        for (size_t l = 0; l < L; l++) {
            layer(r, (int)l, B, nc, obs);
            float *swap = r->xin;
            r->xin = r->xout;
            r->xout = swap;
        }
        r->pos += nc;
        if (p0 + nc <= first_logit) continue;
        size_t from = p0 > first_logit ? p0 : first_logit, k = p0 + nc - from;  // logits rows in this chunk
        NL_TIMED(obs, -1, NL_COMP_LM_HEAD, B, k, 0, head(r, B, nc, from - p0, k, n_logits, from - first_logit));
    }
    return r->logits;
}

// A recurrent model's state: its norm may be run as layernorm or none; the transformer's other
// options (a placement, another norm) are refused; BatchNorm statistics do not apply.
// The floats of scratch the model's products need (nl_linear_scratch): 0 when every weight is float32.
static size_t rnn_scratch(const NlRecurrentWeights *w, const NlConfig *c, int workers) {
    size_t most = nl_linear_scratch(&w->lm_head, workers);
    for (int l = 0; l < c->n_layer; l++) {
        size_t ih = nl_linear_scratch(&w->layers[l].ih, workers), hh = nl_linear_scratch(&w->layers[l].hh, workers);
        most = ih > most ? ih : most;
        most = hh > most ? hh : most;
    }
    return most;
}

static int rnn_create(void **impl, const void *weights, const NlConfig *model_cfg, const NlConfig *cfg,
                      const NlRunOptions *opts, NlLinearInputHook hook, size_t batch, NlPool *pool,
                      const NlObserver *obs, NlError *err) {
    *impl = NULL;
    const NlRunOptions o = opts ? *opts : NL_RUN_DEFAULTS;
    const char *arch = nl_name(NL_NAMES_ARCH, cfg->arch);
    if (nl_placement_named(o.placement)) {
        nl_error(err, NL_ERR_ARG, "a placement applies to transformers, not to this recurrent (%s) model", arch);
        return -1;
    }
    if (o.qk_norm != NL_QK_NORM_AS_CONFIGURED) {
        nl_error(err, NL_ERR_ARG, "QK-norm applies to the Llama family, not to this recurrent (%s) model", arch);
        return -1;
    }
    if (o.norm != NL_NORM_AS_CONFIGURED && o.norm != NL_NORM_LAYERNORM && o.norm != NL_NORM_NONE) {
        nl_error(err, NL_ERR_ARG, "a recurrent (%s) model runs with norm layernorm or none, not %s", arch,
                 nl_name(NL_NAMES_NORM, o.norm));
        return -1;
    }
    NlRnn *r = NULL;
    if (rnn_build(&r, weights, model_cfg, cfg->norm, batch, pool, err) != 0) return -1;
    r->obs = obs;
    r->input_hook = hook;
    size_t in_max = cfg->n_input > cfg->n_hidden ? (size_t)cfg->n_input : (size_t)cfg->n_hidden;
    size_t scratch = rnn_scratch(weights, cfg, nl_pool_workers(pool));
    if ((r->input_hook.fn && !(r->qin = malloc(r->batch * CHUNK * in_max * sizeof(float)))) ||
        (scratch && !(r->scratch = malloc(scratch * sizeof(float))))) {
        rnn_destroy(r);
        nl_error(err, NL_ERR_NOMEM, "out of memory for the recurrent state");
        return -1;
    }
    *impl = r;
    return 0;
}

static size_t rnn_window(const NlConfig *cfg) {
    (void)cfg;
    return SIZE_MAX;  // the state carries any length
}

static size_t rnn_call_logits(const NlConfig *cfg) {
    (void)cfg;
    return CHUNK;
}

// the state vectors of every layer: h, and the LSTM's c (as its table's info counts them; asked of
// the table here, not through the registry, which would make state.c and this file call each other)
static size_t rnn_state_bytes(const NlConfig *c) {
    const NlFamily *family = c->arch == NL_ARCH_LSTM ? nl_family_lstm() : nl_family_gru();
    return (size_t)c->n_layer * (size_t)c->n_hidden * (size_t)family->info->state_vectors * sizeof(float);
}

// ---- what the families are, for info, reports and the profiler

// info's fields: config.json's n_embd is E.
static size_t rnn_describe(const NlConfig *c, NlConfigField *f) {
    size_t k = 0;
    f[k++] = (NlConfigField){"n_embd", NL_FIELD_NUMBER, c->n_input, NULL};
    f[k++] = (NlConfigField){"n_hidden", NL_FIELD_NUMBER, c->n_hidden, NULL};
    f[k++] = (NlConfigField){"norm", NL_FIELD_STRING, 0, nl_name(NL_NAMES_NORM, c->norm)};
    f[k++] = (NlConfigField){"norm_eps", NL_FIELD_NUMBER, c->norm_eps, NULL};
    return k;
}

// The embedding, a layer's four components, the head and sampling.
static int rnn_has_component(const NlConfig *c, NlComponent comp) {
    (void)c;
    return (comp >= NL_COMP_RNN_INPUT && comp <= NL_COMP_RNN_GATES) || comp == NL_COMP_EMBED ||
           comp == NL_COMP_LM_HEAD || comp == NL_COMP_SAMPLING;
}

// cost.h's rules for one call of comp on `batch` sequences of n positions; ctx as NlComponent says.
static void rnn_cost(const NlConfig *c, int layer, NlComponent comp, size_t batch, size_t n_, size_t ctx, double *flops,
                     double *bytes) {
    (void)layer;
    int lstm = c->arch == NL_ARCH_LSTM;
    double E = c->n_input, S = c->n_hidden, G = lstm ? 4 : 3, V = c->vocab_size, n = (double)batch * (double)n_;
    *flops = *bytes = 0;
    switch (comp) {
    case NL_COMP_EMBED:
        *flops = n * E;
        *bytes = 4 * 3 * n * E;
        break;
    case NL_COMP_RNN_INPUT: nl_cost_linear(0, n, (double)ctx, G * S, flops, bytes); break;
    case NL_COMP_RNN_RECURRENT: nl_cost_linear(0, n, S, G * S, flops, bytes); break;
    case NL_COMP_RNN_NORM:  // ctx features a row: LayerNorm 8 FLOPs each; plain cells only add biases
        *flops = n * (double)ctx * (c->norm == NL_NORM_LAYERNORM ? 8 : 1);
        *bytes = 4 * (2 * n * (double)ctx + 2 * (double)ctx);
        break;
    case NL_COMP_RNN_GATES:  // per unit. LSTM: update of c (ctx 0) 4 adds, 3 sigmoid/tanh, 3 products and
        // sums; h (ctx 1) 2 sigmoid/tanh and a product. GRU: 2 adds, 3 sigmoid/tanh, 5 products and sums
        if (lstm && ctx == 1) {
            *flops = n * S * 3;
            *bytes = 4 * n * 3 * S;  // o and the normalised cell in, h out
        } else {
            *flops = n * S * 10;
            *bytes = 4 * n * (2 * G * S + 2 * S);  // both projections in, the state in and out
        }
        break;
    case NL_COMP_LM_HEAD:  // reads h and adds a bias
        nl_cost_linear(1, n, S, V, flops, bytes);
        break;
    case NL_COMP_SAMPLING: *bytes = 4 * (double)batch * V; break;
    default: break;  // another family's
    }
}

// ---- the weights (bind.h)

// A recurrent layer's LayerNorm over n features: rnn.{layer}.{norm}.weight and .bias, both required.
static int take_rnn_norm(NlBinder *b, int layer, const char *norm, size_t n, NlNormWeights *w) {
    char prefix[48];
    snprintf(prefix, sizeof prefix, "rnn.%d.%s", layer, norm);
    return nl_bind_norm(b, NL_NORM_LAYERNORM, n, prefix, w);
}

// rnn.{i}.weight_ih (G*S, in), weight_hh (G*S, S); the LSTM's bias (4S); the plain GRU's bias_ih and
// bias_hh (3S); with layernorm, the LSTM's ln_ih, ln_hh (4S) and ln_cell (S), the GRU's ln_ih,
// ln_hh (2S), ln_ih_cand and ln_hh_cand (S).
static int bind_rnn_layer(NlBinder *b, const NlConfig *c, int i, NlRnnLayerWeights *lw) {
    size_t S = (size_t)c->n_hidden, in = i == 0 ? (size_t)c->n_input : S;
    int lstm = c->arch == NL_ARCH_LSTM, ln = c->norm == NL_NORM_LAYERNORM;
    size_t G = lstm ? 4 : 3, gates = lstm ? 4 * S : 2 * S;
    char name[64];
    // the recurrent products keep the plain rule (tier -1): the loader makes no copies for them
    lw->ih = (NlLinear){.n_out = G * S, .n_in = in, .tier = -1};
    lw->hh = (NlLinear){.n_out = G * S, .n_in = S, .tier = -1};
    snprintf(name, sizeof name, "rnn.%d.weight_ih", i);
    if (nl_bind_matrix(b, name, G * S, in, &lw->ih.w) != 0) return -1;
    snprintf(name, sizeof name, "rnn.%d.weight_hh", i);
    if (nl_bind_matrix(b, name, G * S, S, &lw->hh.w) != 0) return -1;
    if (lstm) {
        snprintf(name, sizeof name, "rnn.%d.bias", i);
        if (nl_bind_tensor(b, name, 4 * S, 0, 1, &lw->bias) != 0) return -1;
    } else if (!ln) {
        snprintf(name, sizeof name, "rnn.%d.bias_ih", i);
        if (nl_bind_tensor(b, name, 3 * S, 0, 1, &lw->bias_ih) != 0) return -1;
        snprintf(name, sizeof name, "rnn.%d.bias_hh", i);
        if (nl_bind_tensor(b, name, 3 * S, 0, 1, &lw->bias_hh) != 0) return -1;
    }
    if (!ln) return 0;
    if (take_rnn_norm(b, i, "ln_ih", gates, &lw->ln_ih) != 0 || take_rnn_norm(b, i, "ln_hh", gates, &lw->ln_hh) != 0)
        return -1;
    if (lstm) return take_rnn_norm(b, i, "ln_cell", S, &lw->ln_cell);
    if (take_rnn_norm(b, i, "ln_ih_cand", S, &lw->ln_ih_cand) != 0) return -1;
    return take_rnn_norm(b, i, "ln_hh_cand", S, &lw->ln_hh_cand);
}

// A recurrent model: wte (V, E), its layers, lm_head.weight (V, S) and lm_head.bias (V).
static int rnn_bind(void **weights, const NlConfig *c, NlBinder *b) {
    size_t V = (size_t)c->vocab_size;
    NlRecurrentWeights *w = nl_bind_alloc(b, 1, sizeof *w);
    if (!(*weights = w)) return -1;
    if (nl_bind_matrix(b, "wte.weight", V, (size_t)c->n_input, &w->wte) != 0) return -1;
    if (!(w->layers = nl_bind_alloc(b, (size_t)c->n_layer, sizeof *w->layers))) return -1;
    for (int i = 0; i < c->n_layer; i++)
        if (bind_rnn_layer(b, c, i, &w->layers[i]) != 0) return -1;
    w->lm_head = (NlLinear){.n_out = V, .n_in = (size_t)c->n_hidden, .tier = -1};
    if (nl_bind_matrix(b, "lm_head.weight", V, (size_t)c->n_hidden, &w->lm_head.w) != 0) return -1;
    return nl_bind_tensor(b, "lm_head.bias", V, 0, 1, &w->lm_head.b);
}

static void *rnn_copy_weights(const void *weights, const NlConfig *c) {
    const NlRecurrentWeights *from = weights;
    void *layers;
    NlRecurrentWeights *w = nl_bind_copy(from, sizeof *w, from->layers, (size_t)c->n_layer, sizeof *w->layers, &layers);
    if (w) w->layers = layers;
    return w;
}

static void rnn_free_weights(void *weights) {
    NlRecurrentWeights *w = weights;
    if (w) free(w->layers);
    free(w);
}

// wte, each layer's weight_ih and weight_hh, the head: 2L + 2 slots. The recurrent products keep
// the plain rule (no linear to plan): the loader makes no copies for them.
static size_t rnn_matrices(void *weights, const NlConfig *c, NlMatrixSlot *slots) {
    size_t n = 2 * (size_t)c->n_layer + 2, k = 0;
    if (!slots) return n;
    NlRecurrentWeights *w = weights;
    slots[k++] = (NlMatrixSlot){{&w->wte, NULL}, NULL, (size_t)c->vocab_size, (size_t)c->n_input,
                                NL_MATRIX_EMBED, 0,    "wte.weight"};
    for (int l = 0; l < c->n_layer; l++) {
        NlLinear *ih = &w->layers[l].ih, *hh = &w->layers[l].hh;
        slots[k] = (NlMatrixSlot){{&ih->w, NULL}, NULL, ih->n_out, ih->n_in, NL_MATRIX_RECURRENT, 0, ""};
        snprintf(slots[k++].name, sizeof slots->name, "rnn.%d.weight_ih", l);
        slots[k] = (NlMatrixSlot){{&hh->w, NULL}, NULL, hh->n_out, hh->n_in, NL_MATRIX_RECURRENT, 0, ""};
        snprintf(slots[k++].name, sizeof slots->name, "rnn.%d.weight_hh", l);
    }
    slots[k++] = (NlMatrixSlot){{&w->lm_head.w, NULL}, NULL, w->lm_head.n_out, w->lm_head.n_in,
                                NL_MATRIX_HEAD,        0,    "lm_head.weight"};
    return k;
}

// ---- the tables

// The LSTM and the GRU share every operation; their tables differ in what they are.
#define RNN_OPS                                                                                                     \
    .bind = rnn_bind, .copy_weights = rnn_copy_weights, .free_weights = rnn_free_weights, .matrices = rnn_matrices, \
    .create = rnn_create, .destroy = rnn_destroy, .forward = rnn_forward, .copy = rnn_copy, .window = rnn_window,   \
    .call_logits = rnn_call_logits, .state_bytes = rnn_state_bytes, .describe = rnn_describe,                       \
    .has_component = rnn_has_component, .lab_cost = rnn_cost, .lab_readout = NULL  // no residual stream to read out

const NlFamily *nl_family_lstm(void) {
    static const NlFamilyInfo INFO = {
        .name = "lstm",
        .state_vectors = 2,
        .state_names = {"h", "c"},
        .state_bytes_key = "state_bytes",
        .norms = 1u << NL_NORM_LAYERNORM | 1u << NL_NORM_NONE,
        .trace_events_per_layer = 8,  // at most 5 a position, 3 more a chunk
        .matrix_classes = NL_MATRIX_HEAD | NL_MATRIX_EMBED | NL_MATRIX_RECURRENT,
    };
    static const NlFamily TABLE = {.info = &INFO, RNN_OPS};
    return &TABLE;
}

const NlFamily *nl_family_gru(void) {
    static const NlFamilyInfo INFO = {
        .name = "gru",
        .state_vectors = 1,
        .state_names = {"h"},
        .state_bytes_key = "state_bytes",
        .norms = 1u << NL_NORM_LAYERNORM | 1u << NL_NORM_NONE,
        .trace_events_per_layer = 8,
        .matrix_classes = NL_MATRIX_HEAD | NL_MATRIX_EMBED | NL_MATRIX_RECURRENT,
    };
    static const NlFamily TABLE = {.info = &INFO, RNN_OPS};
    return &TABLE;
}
