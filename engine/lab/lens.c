// lens.c — the logit lens (nostalgebraist 2020): the residual stream after each layer read out
// through the model's own final norm and head, scored on a text during nl_eval's own pass.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "normlab_internal.h"
#include "normlab_lab.h"

struct NlLens {
    const int *ids;  // (n) the text eval scores, borrowed
    size_t n, T, D, V, n_layer, stride, room;  // room: B*T rows a layer
    float *rows;  // (L + 1, B*T, D) the stream entering each layer (and leaving the last) of one call
    double *sums;  // (L + 1) the loss of each layer's readout, summed window by window
    // The lens's statistics (Belrose et al.'s), summed over the scored positions (nats): KL(final ||
    // layer) and its square, the layer's entropy, and the positions whose top token is the final's.
    double *kl, *kl_sq, *entropy, *agree;  // (L + 1) each
    float *final;  // (B*T, V) one call's scored positions read after the last layer: eval's logits
    double *final_lse;  // (B*T) their ln sum exp
    double *final_p;  // (B*T, V) their probabilities, e^(logit - lse): computed once, read by every layer
    double *final_psum;  // (B*T) the sum of each position's (1 but for rounding)
    size_t *final_top;  // (B*T) their most likely token (ties: the lowest index)
    // Where the lens normalises a layer's stream itself (NlLensScale), and how: `post_affine` (post
    // placement, LayerNorm or RMSNorm): the layer's own norm's affine stripped and the last one's
    // applied; `scale_final` (pre or peri, LayerNorm or RMSNorm, NL_LENS_FINAL): the final norm with the
    // last layer's scale at the position. Both read the norms' weights as the pass runs them (norm_w).
    int post_affine, scale_final, head_alone;  // head_alone: no norm to read through (none, post BatchNorm)
    NlNormType norm;
    double eps;
    NlNormWeights *norm_w;  // (L + 1) the last norm each layer ran (post: ln_2), [L] the final norm
    float *xn;  // (B*T, D) a layer's rows as the head's input
    NlObserver saved;  // the state's observer before nl_lens_eval attached it (the statistics, the profiler)
};

// The stream as it passes: copied for the readout after the call, then handed on to the watcher
// the lens was attached over.
static void capture(void *w, int layer, const float *x, size_t rows, size_t width) {
    NlLens *lens = w;
    if (layer >= 0 && (size_t)layer <= lens->n_layer && width == lens->D && rows <= lens->room)
        memcpy(lens->rows + (size_t)layer * lens->room * width, x, rows * width * sizeof(float));
    if (lens->saved.residual) lens->saved.residual(lens->saved.watcher, layer, x, rows, width);
}

static void pass_norm(void *w, int layer, int post, const float *in, const float *out, NlNormWeights nw, size_t rows) {
    NlLens *lens = w;
    if (!post && layer >= 0 && (size_t)layer <= lens->n_layer) lens->norm_w[layer] = nw;
    if (lens->saved.norm) lens->saved.norm(lens->saved.watcher, layer, post, in, out, nw, rows);
}

static void pass_branch(void *w, int layer, const float *branch, size_t rows) {
    NlLens *lens = w;
    lens->saved.branch(lens->saved.watcher, layer, branch, rows);
}

static void pass_state(void *w, int layer, size_t t, const float *h, const float *c, size_t B) {
    NlLens *lens = w;
    lens->saved.state(lens->saved.watcher, layer, t, h, c, B);
}

static void pass_site(void *w, int layer, NlSite site, const float *x, size_t rows, size_t width, const float *gain) {
    NlLens *lens = w;
    lens->saved.site(lens->saved.watcher, layer, site, x, rows, width, gain);
}

// The most likely of z (V); ties: the lowest index.
static size_t top_of(const float *z, size_t V) {
    size_t top = 0;
    for (size_t v = 1; v < V; v++)
        if (z[v] > z[top]) top = v;
    return top;
}

// Layer l's logits z (V) at scored position i against the final layer's kept there: KL(final ||
// layer), the layer's entropy (nats) and whether the two most likely tokens agree, added to layer
// l's sums. The final layer against itself adds exactly 0. Returns ln sum exp z.
static double add_position(NlLens *lens, size_t l, const float *z, size_t i) {
    size_t V = lens->V;
    const float *fin = lens->final + i * V;
    const double *p = lens->final_p + i * V;
    double lse, entropy = nl_softmax_entropy(z, V, &lse), fin_lse = lens->final_lse[i];
    // KL = sum p (a - b), the log-probabilities a = fin - fin_lse and b = z - lse: sum p (fin - z) -
    // (fin_lse - lse) sum p, in four sums side by side (each difference exact in double)
    double part[4] = {0.0, 0.0, 0.0, 0.0};
    size_t v = 0;
    for (; v + 4 <= V; v += 4)
        for (size_t k = 0; k < 4; k++) part[k] += p[v + k] * ((double)fin[v + k] - (double)z[v + k]);
    for (; v < V; v++) part[0] += p[v] * ((double)fin[v] - (double)z[v]);
    double kl = (part[0] + part[1]) + (part[2] + part[3]) - (fin_lse - lse) * lens->final_psum[i];
    lens->kl[l] += kl;
    lens->kl_sq[l] += kl * kl;
    lens->entropy[l] += entropy;
    lens->agree[l] += top_of(z, V) == lens->final_top[i];
    return lse;
}

// Layer l's readout of the call's windows (count, k_max, V): each scored position's loss and
// statistics. With keep, the readout is the final layer's, kept as the others' reference first.
static void score_layer(NlLens *lens, size_t l, const float *logits, size_t first, size_t count, size_t k_max,
                        int keep) {
    size_t V = lens->V, start, begin, end, scored = 0;
    for (size_t b = 0; b < count; b++) {
        nl_eval_window(lens->n, lens->T, lens->stride, first + b, &start, &begin, &end);
        size_t k = end - begin;
        const float *last = logits + (b * k_max + k_max - k) * V;  // its last k positions
        double sum = 0.0;
        for (size_t i = 0; i < k; i++, scored++) {
            const float *z = last + i * V;
            int target = lens->ids[begin + i + 1];
            if (keep) {  // the final layer, kept as the others' reference
                memcpy(lens->final + scored * V, z, V * sizeof *z);
                (void)nl_softmax_entropy(z, V, &lens->final_lse[scored]);  // (the lse every layer's is)
                double psum = 0.0;
                for (size_t v = 0; v < V; v++)
                    psum += lens->final_p[scored * V + v] = exp((double)z[v] - lens->final_lse[scored]);
                lens->final_psum[scored] = psum;
                lens->final_top[scored] = top_of(z, V);
            }
            double lse = add_position(lens, l, z, scored);
            sum += keep ? nl_nll(z, V, target) : lse - (double)z[target];  // (the last: eval's sum, bit for bit)
        }
        lens->sums[l] += sum;
    }
}

static void pass_attention(void *w, int layer, size_t b, size_t head, const float *p, size_t len, double entropy) {
    NlLens *lens = w;
    lens->saved.attention(lens->saved.watcher, layer, b, head, p, len, entropy);
}

// A norm's gain and bias at channel i (none: 1 and 0).
static double gain_at(NlNormWeights w, size_t i) { return w.gain ? (double)w.gain[i] : 1.0; }
static double bias_at(NlNormWeights w, size_t i) { return w.bias ? (double)w.bias[i] : 0.0; }

// Layer l's n captured rows made the head's input (lens->xn), in double:
// post_affine: g_L (x - b_l) / g_l + b_L, with (g_l, b_l) the affine of the norm that wrote the stream
//   (the previous layer's ln_2) and (g_L, b_L) the last one's, which the head reads after; layer 0,
//   written by no norm, gets the last affine alone. The exact fold moves (g_L, b_L) into the head and
//   leaves the others, so the readout is the same on the model and its folded copy.
// scale_final: the final norm with the last layer's scale at the same row (TransformerLens's
//   apply_ln_to_stack): g_f (x - mean x) / s_L + b_f, s_L = sqrt(var x_L + eps) (RMSNorm: x / s_L with
//   s_L = sqrt(mean x_L^2 + eps)).
static const float *head_rows(NlLens *lens, size_t l, size_t n) {
    size_t D = lens->D, L = lens->n_layer;
    const float *x = lens->rows + l * lens->room * D, *xl = lens->rows + L * lens->room * D;
    NlNormWeights fin = lens->norm_w[lens->post_affine ? L - 1 : L], own = lens->norm_w[l ? l - 1 : 0];
    int ln = lens->norm == NL_NORM_LAYERNORM;
    for (size_t r = 0; r < n; r++) {
        const float *v = x + r * D;
        float *y = lens->xn + r * D;
        if (lens->post_affine) {
            for (size_t i = 0; i < D; i++) {
                double u = l ? ((double)v[i] - bias_at(own, i)) / gain_at(own, i) : (double)v[i];
                y[i] = (float)(gain_at(fin, i) * u + bias_at(fin, i));
            }
            continue;
        }
        double mean = 0.0, mean_l = 0.0, sq = 0.0;
        for (size_t i = 0; i < D; i++) mean += v[i], mean_l += xl[r * D + i];
        mean = ln ? mean / (double)D : 0.0, mean_l = ln ? mean_l / (double)D : 0.0;
        for (size_t i = 0; i < D; i++) sq += ((double)xl[r * D + i] - mean_l) * ((double)xl[r * D + i] - mean_l);
        double scale = sqrt(sq / (double)D + lens->eps);
        for (size_t i = 0; i < D; i++)
            y[i] = (float)(gain_at(fin, i) * ((double)v[i] - mean) / scale + bias_at(fin, i));
    }
    return lens->xn;
}

// eval's call hook: windows first.. first+count-1 have just run in s, their streams captured; each
// layer's rows are read out (with the observer off, so that the profiler does not time the lens)
// and scored on the windows' targets, the last layer first: the others are measured against it.
static void score_call(void *ctx, NlState *s, size_t first, size_t count, const float *logits) {
    NlLens *lens = ctx;
    size_t len = 0, k_max = 0, start, begin, end;
    for (size_t b = 0; b < count; b++) {
        nl_eval_window(lens->n, lens->T, lens->stride, first + b, &start, &begin, &end);
        len = end - start;  // the same for every window of a call
        k_max = end - begin > k_max ? end - begin : k_max;
    }
    NlObserver attached = *nl_state_observer(s);
    nl_state_set_observer(s, NULL);
    // The last layer's are the call's own logits (read before any readout reuses their buffer).
    score_layer(lens, lens->n_layer, logits, first, count, k_max, 1);
    for (size_t l = 0; l < lens->n_layer; l++) {
        const float *x = lens->rows + l * lens->room * lens->D;
        const float *z = lens->post_affine || lens->scale_final
                             ? nl_state_readout_head(s, head_rows(lens, l, count * len), count, len, k_max)
                             : nl_state_readout(s, x, count, len, k_max);
        score_layer(lens, l, z, first, count, k_max, 0);
    }
    nl_state_set_observer(s, &attached);
}

int nl_lens_create(NlLens **out, const NlConfig *c, size_t batch, const int *ids, size_t n, size_t stride,
                   NlError *err) {
    *out = NULL;
    if (!nl_family_info(c->arch)->has_residual_stream) {
        nl_error(err, NL_ERR_ARG, "the logit lens reads a residual stream, which a recurrent (%s) model has not",
                 nl_name(NL_NAMES_ARCH, c->arch));
        return -1;
    }
    size_t T = (size_t)c->block_size, L = (size_t)c->n_layer, B = batch ? batch : 1;
    if (nl_eval_windows(n, T, stride) == 0 || stride > T) {
        nl_error(err, NL_ERR_ARG, "the logit lens needs a text of at least 2 characters and a stride of 1 to %zu", T);
        return -1;
    }
    NlLens *lens = calloc(1, sizeof *lens);
    if (lens) {
        *lens = (NlLens){.ids = ids,
                         .n = n,
                         .T = T,
                         .D = (size_t)c->n_embd,
                         .V = (size_t)c->vocab_size,
                         .n_layer = L,
                         .stride = stride,
                         .room = B * T};
        lens->rows = malloc((L + 1) * B * T * lens->D * sizeof(float));
        lens->sums = calloc(5 * (L + 1), sizeof *lens->sums);  // the statistics' sums after the losses'
        lens->final = malloc(B * T * lens->V * sizeof *lens->final);
        lens->final_lse = malloc(B * T * sizeof *lens->final_lse);
        lens->final_p = malloc(B * T * lens->V * sizeof *lens->final_p);
        lens->final_psum = malloc(B * T * sizeof *lens->final_psum);
        lens->final_top = malloc(B * T * sizeof *lens->final_top);
        lens->norm_w = calloc(L + 1, sizeof *lens->norm_w);
        lens->xn = malloc(B * T * lens->D * sizeof *lens->xn);
        int affine = c->norm == NL_NORM_LAYERNORM || c->norm == NL_NORM_RMSNORM;
        lens->post_affine = affine && !c->recipe.final_norm;  // the stream leaves through a norm (post)
        lens->head_alone = c->norm == NL_NORM_NONE || (!affine && !c->recipe.final_norm);
        lens->norm = c->norm;
        lens->eps = c->norm_eps;
    }
    if (lens && lens->sums) {
        lens->kl = lens->sums + (L + 1);
        lens->kl_sq = lens->sums + 2 * (L + 1);
        lens->entropy = lens->sums + 3 * (L + 1);
        lens->agree = lens->sums + 4 * (L + 1);
    }
    if (!lens || !lens->rows || !lens->sums || !lens->final || !lens->final_lse || !lens->final_p ||
        !lens->final_psum || !lens->final_top || !lens->norm_w || !lens->xn) {
        nl_lens_free(lens);
        nl_error(err, NL_ERR_NOMEM, "out of memory for the logit lens");
        return -1;
    }
    *out = lens;
    return 0;
}

void nl_lens_free(NlLens *lens) {
    if (!lens) return;
    free(lens->rows);
    free(lens->sums);
    free(lens->final);
    free(lens->final_lse);
    free(lens->final_p);
    free(lens->final_psum);
    free(lens->final_top);
    free(lens->norm_w);
    free(lens->xn);
    free(lens);
}

static void lens_attach(NlLens *lens, NlState *s) {
    const NlObserver *was = nl_state_observer(s);
    NlObserver obs = *was;  // the timer's half stays as it is
    lens->saved = *was;
    obs.watcher = lens;
    obs.residual = capture;
    obs.norm = pass_norm;  // (the norms' weights, for the lens's own readouts)
    obs.branch = was->branch ? pass_branch : NULL;
    obs.state = was->state ? pass_state : NULL;
    obs.site = was->site ? pass_site : NULL;
    obs.attention = was->attention ? pass_attention : NULL;
    nl_state_set_observer(s, &obs);
}

int nl_lens_set_scale(NlLens *lens, const NlConfig *c, NlLensScale scale) {
    int affine = c->norm == NL_NORM_LAYERNORM || c->norm == NL_NORM_RMSNORM;
    lens->scale_final = scale == NL_LENS_FINAL && affine && c->recipe.final_norm;
    return lens->scale_final;
}

const char *nl_lens_reading(const NlLens *lens) {
    return lens->scale_final ? "final" : lens->post_affine ? "last affine" : lens->head_alone ? "head" : "recompute";
}

int nl_lens_eval(NlLens *lens, NlState *s, const NlEvalOptions *opts, NlEvalResult *out, NlError *err) {
    NlEvalOptions eo = opts ? *opts : (NlEvalOptions){0};
    eo.stride = lens->stride;
    lens_attach(lens, s);
    int rc = nl_eval_calls(&s, 1, lens->ids, lens->n, &eo, score_call, lens, out, err);
    nl_state_set_observer(s, &lens->saved);
    return rc;
}

// 0, or -1 naming the first layer whose loss (then: whose KL divergence) is not finite.
static int check_finite(const NlLens *lens, NlError *err) {
    for (size_t l = 0; l <= lens->n_layer; l++)
        if (!isfinite(lens->sums[l]))
            return nl_error(err, NL_ERR_NUMERIC, "the logit lens after layer %zu has a non-finite loss", l);
    for (size_t l = 0; l <= lens->n_layer; l++)
        if (!isfinite(lens->kl[l]))
            return nl_error(err, NL_ERR_NUMERIC, "the logit lens after layer %zu has a non-finite KL divergence", l);
    return 0;
}

int nl_lens_bits(const NlLens *lens, double *bits, NlError *err) {
    for (size_t l = 0; l <= lens->n_layer; l++) bits[l] = lens->sums[l] / (double)(lens->n - 1) / log(2.0);
    return check_finite(lens, err);
}

int nl_lens_layers(const NlLens *lens, NlLensLayer *layers, NlError *err) {
    double scored = (double)(lens->n - 1), bit = log(2.0);
    for (size_t l = 0; l <= lens->n_layer; l++) {
        double mean = lens->kl[l] / scored, var = lens->kl_sq[l] / scored - mean * mean;  // nats
        double se = scored > 1 ? sqrt(fmax(var, 0.0) / (scored - 1)) : 0.0;  // sd (n-1) / sqrt(n)
        layers[l] = (NlLensLayer){.kl_bits = mean / bit,
                                  .kl_bits_stderr = se / bit,
                                  .entropy_bits = lens->entropy[l] / scored / bit,
                                  .top1_agree = lens->agree[l] / scored};
    }
    return check_finite(lens, err);
}

int nl_lens(NlState *s, const int *ids, size_t n, size_t stride, double *bits, NlError *err) {
    NlLens *lens = NULL;
    NlEvalResult r;
    if (nl_lens_create(&lens, nl_state_config(s), nl_state_batch(s), ids, n, stride, err) != 0) return -1;
    int rc = nl_lens_eval(lens, s, NULL, &r, err);
    if (rc == 0) rc = nl_lens_bits(lens, bits, err);
    nl_lens_free(lens);
    return rc;
}
