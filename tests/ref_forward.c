// ref_forward.c — see ref_forward.h. Deliberately simple: every position recomputed, doubles.
#include "ref_forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ref_layernorm(double *out, const double *x, const float *gain, const float *bias, size_t D, double eps) {
    double mean = 0.0, var = 0.0;
    for (size_t i = 0; i < D; i++) mean += x[i];
    mean /= (double)D;
    for (size_t i = 0; i < D; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= (double)D;
    for (size_t i = 0; i < D; i++) out[i] = (x[i] - mean) / sqrt(var + eps) * gain[i] + (bias ? bias[i] : 0.0);
}

void ref_rmsnorm(double *out, const double *x, const float *gain, const float *bias, size_t D, double eps) {
    double ms = 0.0;
    for (size_t i = 0; i < D; i++) ms += x[i] * x[i];
    ms /= (double)D;
    for (size_t i = 0; i < D; i++) out[i] = x[i] / sqrt(ms + eps) * gain[i] + (bias ? bias[i] : 0.0);
}

void ref_batchnorm(double *out, const double *x, const float *gain, const float *bias, const double *mean,
                   const double *var, size_t D, double eps) {
    for (size_t i = 0; i < D; i++) out[i] = (x[i] - mean[i]) / sqrt(var[i] + eps) * gain[i] + (bias ? bias[i] : 0.0);
}

static void norm_one(double *out, const double *x, NlNormWeights w, NlNormType type, size_t D, double eps) {
    if (type == NL_NORM_LAYERNORM) ref_layernorm(out, x, w.gain, w.bias, D, eps);
    else ref_rmsnorm(out, x, w.gain, w.bias, D, eps);
}

// BatchNorm's statistics: batch (over the n rows of the call, biased variance) or running.
static NlBnStats bn_stats;

// The statistics observer, NULL when off; `layer` is the layer a norm belongs to (L: the final one).
static RefStats *observe;
// The trace of ref_forward_trace, NULL when off; trace_failed when a copy could not be allocated.
static RefTrace *trace;
static int trace_failed;

// Keeps a copy of the n rows of width at (layer, site) in the trace.
static void trace_rows(int layer, NlSite site, const double *x, size_t n, size_t width) {
    if (!trace) return;
    double *copy = malloc(n * width * sizeof *copy);
    if (!copy) {
        trace_failed = 1;
        return;
    }
    memcpy(copy, x, n * width * sizeof *copy);
    free(trace->rows[layer][site]);
    trace->rows[layer][site] = copy;
    trace->width[layer][site] = width;
}

static void observe_residual(const double *x, size_t n, size_t D, int layer) {
    for (size_t r = 0; observe && r < n; r++) {
        double sum = 0.0, sq = 0.0;
        for (size_t i = 0; i < D; i++) {
            sum += x[r * D + i];
            sq += x[r * D + i] * x[r * D + i];
        }
        observe->rms[layer] += sqrt(sq / (double)D);
        observe->abs_mean[layer] += fabs(sum / (double)D);
        observe->positions[layer] += 1;
    }
}

static void observe_branch(const double *y, size_t n, size_t D, int layer) {
    for (size_t r = 0; observe && r < n; r++) {
        double sq = 0.0;
        for (size_t i = 0; i < D; i++) sq += y[r * D + i] * y[r * D + i];
        observe->branch_rms[layer] += sqrt(sq / (double)D);
        observe->branch_positions[layer] += 1;
    }
}

static void observe_norm(const double *in, const double *out, NlNormWeights w, const NlConfig *c, size_t n, int layer,
                         int post) {
    static const double SCALE[REF_INV_CASES] = {0.5, 2.0, 10.0, 1.0, 2.0}, SHIFT[REF_INV_CASES] = {0, 0, 0, 1.0, 0};
    size_t D = (size_t)c->n_embd;
    double xp[1024], a[1024], b[1024];  // D <= 1024 in the fixtures
    for (size_t r = 0; observe && r < n; r++) {
        const double *y = out + r * D, *x = in + r * D;
        double sum = 0.0, sq = 0.0;
        for (size_t i = 0; i < D; i++) sum += y[i];
        for (size_t i = 0; i < D; i++) sq += (y[i] - sum / (double)D) * (y[i] - sum / (double)D);
        *(post ? &observe->norm_post_std[layer] : &observe->norm_std[layer]) += sqrt(sq / (double)D);
        *(post ? &observe->norm_post_positions[layer] : &observe->norm_positions[layer]) += 1;
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < REF_INV_CASES; k++) {
                double eps = k == REF_INV_CASES - 1 ? 0.0 : c->norm_eps;
                for (size_t i = 0; i < D; i++) xp[i] = x[i] * SCALE[k] + SHIFT[k];
                norm_one(a, x, w, t ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM, D, eps);
                norm_one(b, xp, w, t ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM, D, eps);
                for (size_t i = 0; i < D; i++)
                    observe->invariance[t][k] = fmax(observe->invariance[t][k], fabs(b[i] - a[i]));
            }
    }
}

// out = N(x) over n rows; a norm the model lacks (gain NULL) has unit gain; none is a copy. post:
// peri's output norm, observed apart.
static void norm_rows(double *out, const double *x, NlNormWeights w, const NlConfig *c, size_t n, int layer, int post,
                      const float *ones) {
    size_t D = (size_t)c->n_embd;
    if (c->norm == NL_NORM_NONE) {
        memcpy(out, x, n * D * sizeof *out);
        return;
    }
    if (!w.gain) w = (NlNormWeights){.gain = ones};
    if (c->norm == NL_NORM_BATCHNORM) {
        double mean[1024], var[1024];  // D <= 1024 in the fixtures
        for (size_t i = 0; i < D; i++) {
            double m = 0.0, v = 0.0;
            for (size_t r = 0; r < n; r++) m += x[r * D + i];
            m /= (double)n;
            for (size_t r = 0; r < n; r++) v += (x[r * D + i] - m) * (x[r * D + i] - m);
            mean[i] = bn_stats == NL_BN_BATCH ? m : w.mean[i];
            var[i] = bn_stats == NL_BN_BATCH ? v / (double)n : w.var[i];
        }
        for (size_t r = 0; r < n; r++) ref_batchnorm(out + r * D, x + r * D, w.gain, w.bias, mean, var, D, c->norm_eps);
    } else
        for (size_t r = 0; r < n; r++) norm_one(out + r * D, x + r * D, w, c->norm, D, c->norm_eps);
    observe_norm(x, out, w, c, n, layer, post);
}

// y (n, n_out) = x (n, n_in) W^T + b
// The float32 values of w (rows, cols): its own, or (a weight stored otherwise) widened into a new
// array *tmp (free() it) by the engine's dequantizer, which tests/test_dtype.c checks against ggml's rules.
static const float *widened(NlWeight w, size_t rows, size_t cols, float **tmp) {
    *tmp = NULL;
    if (w.type == NL_DTYPE_F32) return w.data;
    if ((*tmp = malloc(rows * cols * sizeof **tmp))) nl_weight_rows(*tmp, w, 0, rows, cols);
    return *tmp;
}

static void linear(double *y, const double *x, NlWeight w, const float *b, size_t n, size_t n_out, size_t n_in) {
    float *tmp;
    const float *W = widened(w, n_out, n_in, &tmp);
    for (size_t r = 0; W && r < n; r++)
        for (size_t o = 0; o < n_out; o++) {
            double acc = b ? b[o] : 0.0;
            for (size_t i = 0; i < n_in; i++) acc += x[r * n_in + i] * W[o * n_in + i];
            y[r * n_out + o] = acc;
        }
    free(tmp);
}

// x (cols) = row `row` of w, widened.
static void embed_row(double *x, NlWeight w, size_t row, size_t cols) {
    float *v = malloc(cols * sizeof *v);
    if (v) nl_weight_rows(v, w, row, 1, cols);
    for (size_t k = 0; k < cols; k++) x[k] = v ? v[k] : NAN;
    free(v);
}

static double act(double v, NlActivation a) {
    if (a == NL_ACT_GELU) return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    if (a == NL_ACT_GELU_TANH)
        return 0.5 * v * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
    return v > 0 ? v : 0.0;
}

// out (n, D) = c_proj(causal multi-head attention of in (n, D))
static void attn(double *out, const double *in, const NlLayerWeights *w, const NlConfig *c, size_t n, double *qkv,
                 double *y, int layer) {
    size_t D = (size_t)c->n_embd, H = (size_t)c->n_head, Dh = D / H;
    linear(qkv, in, w->attn.w, w->attn.b, n, 3 * D, D);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < n; i++) {
            double p[1024], max = -INFINITY, sum = 0.0;  // T <= 1024 in the fixtures
            for (size_t j = 0; j <= i; j++) {
                double s = 0.0;
                for (size_t k = 0; k < Dh; k++) s += qkv[i * 3 * D + h * Dh + k] * qkv[j * 3 * D + D + h * Dh + k];
                p[j] = s / sqrt((double)Dh);
                if (p[j] > max) max = p[j];
            }
            for (size_t j = 0; j <= i; j++) sum += (p[j] = exp(p[j] - max));
            for (size_t j = 0; trace && j <= i; j++)  // (the trace's rows are n long: ref_forward's n)
                trace->attn[(((size_t)layer * H + h) * n + i) * n + j] = p[j] / sum;
            for (size_t k = 0; k < Dh; k++) {
                double acc = 0.0;
                for (size_t j = 0; j <= i; j++) acc += p[j] / sum * qkv[j * 3 * D + 2 * D + h * Dh + k];
                y[i * D + h * Dh + k] = acc;
            }
        }
    trace_rows(layer, NL_SITE_QKV, in, n, D);
    trace_rows(layer, NL_SITE_PROJ, y, n, D);
    linear(out, y, w->proj.w, w->proj.b, n, D, D);
}

static void mlp(double *out, const double *in, const NlLayerWeights *w, const NlConfig *c, size_t n, double *hid,
                int layer) {
    size_t D = (size_t)c->n_embd, F = (size_t)c->n_inner;
    linear(hid, in, w->fc.w, w->fc.b, n, F, D);
    for (size_t i = 0; i < n * F; i++) hid[i] = act(hid[i], c->activation);
    trace_rows(layer, NL_SITE_FC, in, n, D);
    trace_rows(layer, NL_SITE_OUT, hid, n, F);
    linear(out, hid, w->out.w, w->out.b, n, D, F);
}

// logits (n, V) of the stream x (n, D) read out as after the last layer: through the final norm
// (none in post placement), then the head; xn is scratch (n, D). Keeps the head's input in the trace
// as layer `layer`'s when head_site.
static void readout(double *logits, const double *x, double *xn, const NlConfig *c, const NlTransformerWeights *w,
                    size_t n, const float *ones, int head_site) {
    size_t D = (size_t)c->n_embd, V = (size_t)c->vocab_size;
    const double *last = x;
    if (c->placement != NL_PLACE_POST) {
        norm_rows(xn, x, w->ln_f, c, n, c->n_layer, 0, ones);
        last = xn;
    }
    if (head_site) trace_rows(c->n_layer, NL_SITE_HEAD, last, n, D);
    linear(logits, last, w->lm_head.w, NULL, n, V, D);
}

// The lens's logits of the stream entering layer l (when tracing; the final norm is not observed).
// Post placement with LayerNorm or RMSNorm, below the last layer: the affine of the norm that wrote
// the stream (layer l - 1's ln_2; none for the embeddings) taken off and the last ln_2's put on,
// g_L (x - b_l) / g_l + b_L, then the head (normlab_lab.h's lens).
static void trace_lens(const double *x, double *xn, const NlConfig *c, const NlTransformerWeights *w, size_t n,
                       const float *ones, int layer) {
    if (!trace) return;
    RefStats *saved = observe;
    observe = NULL;
    size_t D = (size_t)c->n_embd;
    int affine = c->norm == NL_NORM_LAYERNORM || c->norm == NL_NORM_RMSNORM;
    double *moved =
        c->placement == NL_PLACE_POST && affine && layer < c->n_layer ? malloc(n * D * sizeof *moved) : NULL;
    if (moved) {
        NlNormWeights fin = w->layers[c->n_layer - 1].norm[NL_NS_LN_2],
                      own = layer ? w->layers[layer - 1].norm[NL_NS_LN_2] : fin;
        for (size_t i = 0; i < n * D; i++) {
            size_t k = i % D;
            double g = own.gain ? own.gain[k] : 1.0, b = own.bias ? own.bias[k] : 0.0;
            double u = layer ? (x[i] - b) / g : x[i];
            moved[i] = (fin.gain ? fin.gain[k] : 1.0) * u + (fin.bias ? fin.bias[k] : 0.0);
        }
    }
    readout(trace->lens + (size_t)layer * n * (size_t)c->vocab_size, moved ? moved : x, xn, c, w, n, ones, 0);
    free(moved);
    observe = saved;
}

int ref_forward_bn(double *logits, const NlConfig *c, const NlTransformerWeights *w, const int *tokens, size_t n,
                   NlBnStats bn) {
    bn_stats = bn;
    int rc = ref_forward(logits, c, w, tokens, n);
    bn_stats = NL_BN_RUNNING;
    return rc;
}

int ref_forward(double *logits, const NlConfig *c, const NlTransformerWeights *w, const int *tokens, size_t n) {
    size_t D = (size_t)c->n_embd, F = (size_t)c->n_inner;
    double *x = malloc(n * D * sizeof *x), *xn = malloc(n * D * sizeof *xn), *t = malloc(n * D * sizeof *t);
    double *qkv = malloc(n * 3 * D * sizeof *qkv), *y = malloc(n * D * sizeof *y), *hid = malloc(n * F * sizeof *hid);
    float *ones = malloc(D * sizeof *ones);
    int rc = (x && xn && t && qkv && y && hid && ones) ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < D; i++) ones[i] = 1.0f;
    double a = c->placement == NL_PLACE_POST ? c->residual_scale : 1.0;
    for (size_t i = 0; rc == 0 && i < n; i++) embed_row(x + i * D, w->wte, (size_t)tokens[i], D);
    for (size_t i = 0; rc == 0 && i < n; i++)
        for (size_t k = 0; k < D; k++) x[i * D + k] += nl_weight_f32(w->wpe)[i * D + k];
    for (int l = 0; rc == 0 && l < c->n_layer; l++) {
        const NlLayerWeights *lw = &w->layers[l];
        observe_residual(x, n, D, l);
        trace_rows(l, NL_SITE_RESIDUAL, x, n, D);
        trace_lens(x, xn, c, w, n, ones, l);
        if (c->placement != NL_PLACE_POST) {  // pre; peri also normalises each sublayer's output
            int peri = c->placement == NL_PLACE_PERI;
            norm_rows(xn, x, lw->norm[NL_NS_LN_1], c, n, l, 0, ones);
            attn(t, xn, lw, c, n, qkv, y, l);
            if (peri) norm_rows(xn, t, lw->norm[NL_NS_LN_1_POST], c, n, l, 1, ones);
            observe_branch(peri ? xn : t, n, D, l);
            for (size_t i = 0; i < n * D; i++) x[i] += peri ? xn[i] : t[i];
            norm_rows(xn, x, lw->norm[NL_NS_LN_2], c, n, l, 0, ones);
            mlp(t, xn, lw, c, n, hid, l);
            if (peri) norm_rows(xn, t, lw->norm[NL_NS_LN_2_POST], c, n, l, 1, ones);
            observe_branch(peri ? xn : t, n, D, l);
            for (size_t i = 0; i < n * D; i++) x[i] += peri ? xn[i] : t[i];
        } else {  // x = N(a x + Sublayer(x))
            attn(t, x, lw, c, n, qkv, y, l);
            observe_branch(t, n, D, l);
            for (size_t i = 0; i < n * D; i++) t[i] += a * x[i];
            norm_rows(x, t, lw->norm[NL_NS_LN_1], c, n, l, 0, ones);
            mlp(t, x, lw, c, n, hid, l);
            observe_branch(t, n, D, l);
            for (size_t i = 0; i < n * D; i++) t[i] += a * x[i];
            norm_rows(x, t, lw->norm[NL_NS_LN_2], c, n, l, 0, ones);
        }
    }
    if (rc == 0) observe_residual(x, n, D, c->n_layer);
    if (rc == 0) trace_rows(c->n_layer, NL_SITE_RESIDUAL, x, n, D);
    if (rc == 0) trace_lens(x, xn, c, w, n, ones, c->n_layer);
    if (rc == 0) readout(logits, x, xn, c, w, n, ones, 1);
    free(x);
    free(xn);
    free(t);
    free(qkv);
    free(y);
    free(hid);
    free(ones);
    return rc;
}

int ref_forward_stats(double *logits, const NlConfig *cfg, const NlTransformerWeights *w, const int *tokens, size_t n,
                      RefStats *stats) {
    memset(stats, 0, sizeof *stats);
    if (cfg->n_layer > REF_MAX_LAYERS) return -1;
    observe = stats;
    int rc = ref_forward(logits, cfg, w, tokens, n);
    observe = NULL;
    for (int l = 0; l <= cfg->n_layer; l++) {
        if (stats->positions[l] > 0) stats->rms[l] /= stats->positions[l], stats->abs_mean[l] /= stats->positions[l];
        if (stats->norm_positions[l] > 0) stats->norm_std[l] /= stats->norm_positions[l];
        if (l == cfg->n_layer) break;
        if (stats->norm_post_positions[l] > 0) stats->norm_post_std[l] /= stats->norm_post_positions[l];
        if (stats->branch_positions[l] > 0) stats->branch_rms[l] /= stats->branch_positions[l];
    }
    return rc;
}

int ref_forward_trace(double *logits, const NlConfig *cfg, const NlTransformerWeights *w, const int *tokens, size_t n,
                      RefTrace *t) {
    memset(t, 0, sizeof *t);
    if (cfg->n_layer > REF_MAX_LAYERS) return -1;
    t->lens = malloc(((size_t)cfg->n_layer + 1) * n * (size_t)cfg->vocab_size * sizeof *t->lens);
    t->attn = calloc((size_t)cfg->n_layer * (size_t)cfg->n_head * n * n, sizeof *t->attn);
    if (!t->lens || !t->attn) {
        ref_trace_free(t);
        return -1;
    }
    trace = t;
    trace_failed = 0;
    int rc = ref_forward(logits, cfg, w, tokens, n);
    trace = NULL;
    return rc || trace_failed ? -1 : 0;
}

void ref_trace_free(RefTrace *t) {
    for (int l = 0; l <= REF_MAX_LAYERS; l++)
        for (int k = 0; k < NL_SITE_COUNT; k++) free(t->rows[l][k]);
    free(t->lens);
    free(t->attn);
    memset(t, 0, sizeof *t);
}

// ---- recurrent models (docs/forward.md), one position at a time, in double

static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

// out (n) = LayerNorm(x) with the norm's gain (unit when the model has none) and bias, or x for norm none.
static void rnn_norm(double *out, const double *x, NlNormWeights w, int ln, size_t n, double eps) {
    if (!ln) {
        memcpy(out, x, n * sizeof *out);
        return;
    }
    double mean = 0.0, var = 0.0;
    for (size_t i = 0; i < n; i++) mean += x[i] / (double)n;
    for (size_t i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean) / (double)n;
    for (size_t i = 0; i < n; i++)
        out[i] = (x[i] - mean) / sqrt(var + eps) * (w.gain ? w.gain[i] : 1.0) + (w.bias ? w.bias[i] : 0.0);
}

// y (rows) = W (rows, cols) x, plain loops.
static void matvec(double *y, NlWeight w, const double *x, size_t rows, size_t cols) {
    float *tmp;
    const float *W = widened(w, rows, cols, &tmp);
    for (size_t r = 0; W && r < rows; r++) {
        double s = 0.0;
        for (size_t k = 0; k < cols; k++) s += (double)W[r * cols + k] * x[k];
        y[r] = s;
    }
    free(tmp);
}

static double bias_at(const float *b, size_t i) { return b ? b[i] : 0.0; }

// One step of layer lw: x (in) and state h, c (S) -> new h, c.
static void rnn_step(const NlConfig *c, const NlRnnLayerWeights *lw, const double *x, size_t in, double *h,
                     double *cell, double *p, double *q, double *pn, double *qn) {
    size_t S = (size_t)c->n_hidden;
    int ln = c->norm == NL_NORM_LAYERNORM;
    double eps = c->norm_eps;
    if (c->arch == NL_ARCH_LSTM) {
        matvec(p, lw->ih.w, x, 4 * S, in);
        matvec(q, lw->hh.w, h, 4 * S, S);
        rnn_norm(pn, p, lw->ln_ih, ln, 4 * S, eps);
        rnn_norm(qn, q, lw->ln_hh, ln, 4 * S, eps);
        for (size_t k = 0; k < 4 * S; k++) pn[k] += qn[k] + bias_at(lw->bias, k);  // f | i | o | g
        for (size_t k = 0; k < S; k++) cell[k] = sigmoid(pn[k]) * cell[k] + sigmoid(pn[S + k]) * tanh(pn[3 * S + k]);
        rnn_norm(qn, cell, lw->ln_cell, ln, S, eps);
        for (size_t k = 0; k < S; k++) h[k] = sigmoid(pn[2 * S + k]) * tanh(qn[k]);
        return;
    }
    matvec(p, lw->ih.w, x, 3 * S, in);  // z | r | candidate
    matvec(q, lw->hh.w, h, 3 * S, S);
    rnn_norm(pn, p, lw->ln_ih, ln, 2 * S, eps);
    rnn_norm(pn + 2 * S, p + 2 * S, lw->ln_ih_cand, ln, S, eps);
    rnn_norm(qn, q, lw->ln_hh, ln, 2 * S, eps);
    rnn_norm(qn + 2 * S, q + 2 * S, lw->ln_hh_cand, ln, S, eps);
    for (size_t k = 0; k < S; k++) {
        double z = pn[k] + bias_at(lw->bias_ih, k) + qn[k] + bias_at(lw->bias_hh, k);
        double r = pn[S + k] + bias_at(lw->bias_ih, S + k) + qn[S + k] + bias_at(lw->bias_hh, S + k);
        double cand = tanh(pn[2 * S + k] + bias_at(lw->bias_ih, 2 * S + k) +
                           sigmoid(r) * (qn[2 * S + k] + bias_at(lw->bias_hh, 2 * S + k)));
        h[k] = (1.0 - sigmoid(z)) * h[k] + sigmoid(z) * cand;
    }
}

int ref_rnn_forward(double *logits, const NlConfig *c, const NlRecurrentWeights *w, const int *tokens, size_t n,
                    double *h_norm, double *c_norm) {
    size_t L = (size_t)c->n_layer, S = (size_t)c->n_hidden, E = (size_t)c->n_input, V = (size_t)c->vocab_size;
    size_t in_max = E > S ? E : S;
    double *h = calloc(L * S, sizeof *h), *cell = calloc(L * S, sizeof *cell), *x = malloc(in_max * sizeof *x);
    double *p = malloc(4 * S * sizeof *p), *q = malloc(4 * S * sizeof *q);
    double *pn = malloc(4 * S * sizeof *pn), *qn = malloc(4 * S * sizeof *qn);
    int rc = h && cell && x && p && q && pn && qn ? 0 : -1;
    for (size_t t = 0; rc == 0 && t < n; t++) {
        embed_row(x, w->wte, (size_t)tokens[t], E);
        for (size_t l = 0; l < L; l++) {
            rnn_step(c, &w->layers[l], x, l == 0 ? E : S, h + l * S, cell + l * S, p, q, pn, qn);
            memcpy(x, h + l * S, S * sizeof *x);
        }
        matvec(logits + t * V, w->lm_head.w, x, V, S);
        for (size_t v = 0; v < V; v++) logits[t * V + v] += w->lm_head.b[v];
        double hh = 0.0, cc = 0.0;
        for (size_t k = 0; k < S; k++) {
            hh += x[k] * x[k];
            cc += cell[(L - 1) * S + k] * cell[(L - 1) * S + k];
        }
        if (h_norm) h_norm[t] = sqrt(hh);
        if (c_norm) c_norm[t] = sqrt(cc);
    }
    free(h);
    free(cell);
    free(x);
    free(p);
    free(q);
    free(pn);
    free(qn);
    return rc;
}
