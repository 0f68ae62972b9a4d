// test_lab.c — the outlier statistics and the logit lens against independent
// double-precision recomputations: the statistics on planted rows and on the
// fixtures' activations (the reference forward pass's, ref_forward_trace), the
// lens per layer against the reference's readout of each layer, and the lens's
// last layer against the model's own eval, bit for bit.
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "normlab_lab.h"
#include "ref_forward.h"

static const int TEXT[] = {2, 3, 1,  3, 2, 4, 1, 5, 2, 3, 6, 1, 7, 2, 8, 3,
                           0, 9, 10, 2, 3, 1, 4, 5, 6, 7, 8, 9, 2, 2, 3};
#define N_TEXT (sizeof TEXT / sizeof TEXT[0])

// ---- the statistics' definitions, recomputed in double, two passes
// (normlab_lab.h NlOutlierStats)

typedef struct {
    double *x;  // (rows, width) every row a place saw
    size_t rows, width, cap;
} Rows;

static void rows_add(Rows *r, const double *x, size_t n, size_t width) {
    if (r->rows + n > r->cap) {
        r->cap = 2 * (r->rows + n);
        r->x = realloc(r->x, r->cap * width * sizeof *r->x);
    }
    memcpy(r->x + r->rows * width, x, n * width * sizeof *x);
    r->rows += n;
    r->width = width;
}

static NlOutlierStats ref_outliers(const Rows *r, const float *gain) {
    NlOutlierStats o = {.top = {-1, -1, -1}, .gain_top = {-1, -1, -1}};
    size_t W = r->width, N = r->rows * W;
    double mean = 0.0, m2 = 0.0, m4 = 0.0, over6 = 0, over6rms = 0, *chan = calloc(W, sizeof *chan);
    for (size_t i = 0; i < N; i++) mean += r->x[i] / (double)N;
    for (size_t i = 0; i < N; i++) {
        double d = r->x[i] - mean;
        m2 += d * d / (double)N;
        m4 += d * d * d * d / (double)N;
    }
    for (size_t row = 0; row < r->rows; row++) {
        const double *x = r->x + row * W;
        double sq = 0.0, amax = 0.0;
        for (size_t i = 0; i < W; i++) sq += x[i] * x[i], amax = fmax(amax, fabs(x[i]));
        double rms = sqrt(sq / (double)W);
        for (size_t i = 0; i < W; i++) {
            over6 += fabs(x[i]) >= 6.0;
            over6rms += fabs(x[i]) >= 6.0 * rms;
            chan[i] += fabs(x[i]);
            o.max_over_mean_abs += fabs(x[i]) / (double)N;  // the mean |x| for now
            if (fabs(x[i]) > o.max_abs) o.max_abs = fabs(x[i]), o.max_channel = (int)i, o.max_position = row;
        }
        o.max_ratio = fmax(o.max_ratio, amax / rms);
    }
    o.max_over_mean_abs = o.max_abs / o.max_over_mean_abs;
    o.rows = r->rows;
    o.values = N;
    o.share_6 = over6 / (double)N;
    o.share_6rms = over6rms / (double)N;
    o.kurtosis = m4 / (m2 * m2);
    for (int k = 0; k < 3; k++) {  // selection: the largest not yet taken, the
        // lowest channel on ties
        for (size_t i = 0; i < W; i++) {
            int taken = 0;
            for (int j = 0; j < k; j++) taken |= o.top[j] == (int)i;
            if (!taken && (o.top[k] < 0 || chan[i] > chan[o.top[k]])) o.top[k] = (int)i;
        }
        o.top_mean_abs[k] = o.top[k] >= 0 ? chan[o.top[k]] / (double)r->rows : 0.0;
        for (size_t i = 0; gain && i < W; i++) {
            int taken = 0;
            for (int j = 0; j < k; j++) taken |= o.gain_top[j] == (int)i;
            if (!taken && (o.gain_top[k] < 0 || fabs(gain[i]) > fabs(gain[o.gain_top[k]]))) o.gain_top[k] = (int)i;
        }
    }
    o.has_gain = gain != NULL;
    for (int a = 0; a < 3 && gain; a++)
        for (int b = 0; b < 3; b++) o.gain_overlap += o.top[a] == o.gain_top[b];
    free(chan);
    return o;
}

static int close_rel(double got, double want, double rtol) {
    return fabs(got - want) <= rtol * fmax(fabs(want), 1e-12);
}

// got (the engine's, from float32 rows) against want (double): values within
// rtol, shares within `flips` values crossing a threshold, channels exact.
static void check_outliers(const char *what, const NlOutlierStats *got, const NlOutlierStats *want, double rtol,
                           double flips) {
    CHECK(got->rows == want->rows && got->values == want->values, "%s: rows %llu values %llu (want %llu, %llu)", what,
          (unsigned long long)got->rows, (unsigned long long)got->values, (unsigned long long)want->rows,
          (unsigned long long)want->values);
    CHECK(close_rel(got->max_ratio, want->max_ratio, rtol), "%s: max/rms %.9g want %.9g", what, got->max_ratio,
          want->max_ratio);
    CHECK(close_rel(got->kurtosis, want->kurtosis, rtol), "%s: kurtosis %.9g want %.9g", what, got->kurtosis,
          want->kurtosis);
    CHECK(close_rel(got->max_abs, want->max_abs, rtol) &&
              close_rel(got->max_over_mean_abs, want->max_over_mean_abs, rtol) && got->max_channel == want->max_channel,
          "%s: largest |x| %.9g (%.9g x the mean |x|) at channel %d, want %.9g (%.9g) at %d", what, got->max_abs,
          got->max_over_mean_abs, got->max_channel, want->max_abs, want->max_over_mean_abs, want->max_channel);
    double tol = flips / (double)want->values + 1e-15;
    CHECK(fabs(got->share_6 - want->share_6) <= tol, "%s: share >= 6 %.9g want %.9g", what, got->share_6,
          want->share_6);
    CHECK(fabs(got->share_6rms - want->share_6rms) <= tol, "%s: share >= 6 rms %.9g want %.9g", what, got->share_6rms,
          want->share_6rms);
    for (int k = 0; k < 3; k++) {
        CHECK(got->top[k] == want->top[k], "%s: top channel %d is %d, want %d", what, k, got->top[k], want->top[k]);
        CHECK(close_rel(got->top_mean_abs[k], want->top_mean_abs[k], rtol), "%s: its mean |x| %.9g want %.9g", what,
              got->top_mean_abs[k], want->top_mean_abs[k]);
        CHECK(got->gain_top[k] == want->gain_top[k], "%s: gain channel %d is %d, want %d", what, k, got->gain_top[k],
              want->gain_top[k]);
    }
    CHECK(got->has_gain == want->has_gain && got->gain_overlap == want->gain_overlap,
          "%s: gain overlap %d/%d want %d/%d", what, got->gain_overlap, got->has_gain, want->gain_overlap,
          want->has_gain);
}

// The statistics' view of rows W wide: one layer of a LayerNorm transformer (the planted rows below
// reach them through the site watcher of any state).
static NlConfig width_config(int W) {
    return (NlConfig){.arch = NL_ARCH_TRANSFORMER,
                      .vocab_size = 3,
                      .n_layer = 1,
                      .n_head = 1,
                      .n_embd = W,
                      .block_size = 4,
                      .n_inner = W,
                      .norm = NL_NORM_LAYERNORM};
}

// Planted rows through the statistics' watcher: 64 channels, channel 7 an
// outlier of 20-40 x, 3 and 9 tied (the lower must rank first), rows of every
// sign and scale; the gain's largest channels 9, 7, 50.
static void outliers_of_planted_rows_match_double(void) {
    enum { R = 40, W = 64 };
    static float x[R * W];
    static double xd[R * W];
    float gain[W];
    uint64_t s = 12345;
    for (size_t i = 0; i < R * W; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        size_t r = i / W, c = i % W;
        x[i] = (float)(u * (1.0 + (double)(r % 5)));
        if (c == 7) x[i] = (float)((r % 2 ? 1 : -1) * (20.0 + (double)r / 2));
        if (c == 9) x[i] = x[r * W + 3] = (float)(3.0 + u);
    }
    for (size_t i = 0; i < R * W; i++) xd[i] = x[i];
    for (int i = 0; i < W; i++) gain[i] = 0.5f + 0.01f * (float)i;
    gain[9] = -3.0f, gain[7] = 2.5f, gain[50] = 2.0f;
    NlConfig cfg = width_config(W);
    NlStats *st = NULL;
    NlError err;
    if (nl_stats_create(&st, &cfg, 4, NL_STATS_OUTLIERS, &err) != 0) {
        CHECK(0, "%s", err.msg);
        return;
    }
    NlModel *m = load_fixture("ln-pre-bias.json");  // any state: its observer calls the statistics
    NlState *state = NULL;
    if (!m || nl_state_create(&state, m, NULL, &err) != 0) {
        CHECK(0, "state");
        nl_stats_free(st);
        nl_model_free(m);
        return;
    }
    nl_state_set_stats(state, st);
    const NlObserver *obs = nl_state_observer(state);
    CHECK(obs->site != NULL, "outliers asked: the site callback is set");
    obs->site(obs->watcher, 1, NL_SITE_FC, x, 25, W,
              gain);  // two calls: sums over calls
    obs->site(obs->watcher, 1, NL_SITE_FC, x + 25 * W, R - 25, W, gain);
    obs->site(obs->watcher, 0, NL_SITE_PROJ, x, R, W, NULL);
    NlOutlierStats got, none;
    Rows rows = {xd, R, W, R};
    CHECK(nl_stats_outliers(st, 1, NL_SITE_FC, &got) == 0, "seen");
    NlOutlierStats want = ref_outliers(&rows, gain);
    check_outliers("planted, with gain", &got, &want, 1e-12, 0);
    CHECK(got.top[0] == 7 && got.top[1] == 3 && got.top[2] == 9, "the outlier first, then the tie 3 before 9");
    CHECK(got.gain_top[0] == 9 && got.gain_top[1] == 7 && got.gain_top[2] == 50 && got.gain_overlap == 2,
          "gains 9, 7, 50 (|gain|): two of the top channels");
    CHECK(got.share_6 > 0.01 && got.share_6rms > 0.01 && got.kurtosis > 10, "planted outliers are seen: %g %g %g",
          got.share_6, got.share_6rms, got.kurtosis);
    CHECK(nl_stats_outliers(st, 0, NL_SITE_PROJ, &got) == 0, "seen");
    want = ref_outliers(&rows, NULL);
    check_outliers("planted, no gain", &got, &want, 1e-12, 0);
    CHECK(got.max_position == want.max_position, "one call: the largest |x| at row %zu of it, want %zu",
          got.max_position, want.max_position);
    CHECK(nl_stats_outliers(st, 0, NL_SITE_FC, &none) != 0 && none.rows == 0, "a place not seen says so");
    nl_state_free(state);
    nl_model_free(m);
    nl_stats_free(st);
}

// The documented shares count |x| >= 6 and |x| >= 6 RMS, boundaries included (docs/lab.md): a row with
// 6, -6 and the float just below 6, and a row whose one nonzero value 6 is exactly 6 times its RMS
// (36 channels: RMS = sqrt(36 / 36) = 1, every step exact in double).
static void outlier_shares_count_exactly_6(void) {
    enum { W = 36 };
    float x[2 * W] = {0};
    x[0] = 6.0f, x[1] = -6.0f, x[2] = nextafterf(6.0f, 0.0f), x[W] = 6.0f;
    NlConfig cfg = width_config(W);
    NlStats *st = NULL;
    NlState *state = NULL;
    NlError err;
    NlModel *m = load_fixture("ln-pre-bias.json");
    if (!m || nl_stats_create(&st, &cfg, 4, NL_STATS_OUTLIERS, &err) != 0 ||
        nl_state_create(&state, m, NULL, &err) != 0) {
        CHECK(0, "set-up");
    } else {
        nl_state_set_stats(state, st);
        const NlObserver *obs = nl_state_observer(state);
        obs->site(obs->watcher, 0, NL_SITE_RESIDUAL, x, 2, W, NULL);
        NlOutlierStats got;
        CHECK(nl_stats_outliers(st, 0, NL_SITE_RESIDUAL, &got) == 0, "seen");
        CHECK(got.share_6 == 3.0 / 72, "|x| >= 6: 6, -6 and the second row's 6 of 72 values, not 5.9999995: %.9g",
              got.share_6);
        CHECK(got.share_6rms == 1.0 / 72, "|x| >= 6 RMS: the value exactly 6 times its row's RMS: %.9g",
              got.share_6rms);
    }
    nl_state_free(state);
    nl_model_free(m);
    nl_stats_free(st);
}

// The gain NlSite names for a place of a fixture run as trained, from the
// model's own tensors.
static const float *site_gain(const NlConfig *c, const NlTransformerWeights *w, int l, NlSite site) {
    int L = c->n_layer, post = c->placement == NL_PLACE_POST;
    if (c->norm == NL_NORM_NONE) return NULL;
    const float *before = post    ? (l > 0 ? w->layers[l - 1].norm[NL_NS_LN_2].gain : NULL)
                          : l < L ? w->layers[l].norm[NL_NS_LN_1].gain
                                  : w->ln_f.gain;
    switch (site) {
    case NL_SITE_RESIDUAL:
    case NL_SITE_QKV:
    case NL_SITE_HEAD: return before;
    case NL_SITE_FC: return post ? w->layers[l].norm[NL_NS_LN_1].gain : w->layers[l].norm[NL_NS_LN_2].gain;
    default: return NULL;
    }
}

typedef struct {
    Rows rows[REF_MAX_LAYERS + 1][NL_SITE_COUNT];
    double *lens_nll;  // (L + 1) summed over the scored characters
    // (L + 1) each, summed likewise (nats): KL(last layer || layer), its square, the layer's entropy,
    // and the positions whose top token (ties: the lowest index) is the last layer's
    double *lens_kl, *lens_kl_sq, *lens_entropy, *lens_agree;
    // (L, H) sums over every query of every window: entropy (bits) and distance, and over the queries
    // past a window's first the sink and self shares; the queries, those past the first and their
    // sum of 1/(t + 1); (L, H, T) the sink share by query position and (T) the queries there; the
    // last head of the last layer's pattern on the first window (T, T)
    double attn[REF_MAX_LAYERS][REF_MAX_HEADS][4], attn_queries, attn_past_first, attn_uniform;
    double *sink_at, *queries_at, *pattern;
    size_t pattern_rows;
} RefRun;

// One window's attention (tr->attn, len queries) into the sums.
static void ref_attention_window(const RefTrace *tr, size_t L, size_t H, size_t T, size_t len, int first, RefRun *out) {
    for (size_t l = 0; l < L; l++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < len; i++) {
                const double *p = tr->attn + ((l * H + h) * len + i) * len;
                double entropy = 0.0, distance = 0.0;
                for (size_t j = 0; j <= i; j++) {
                    if (p[j] > 0.0) entropy -= p[j] * log2(p[j]);
                    distance += p[j] * (double)(i - j);
                }
                double *sums = out->attn[l][h];
                sums[0] += entropy, sums[3] += distance;
                if (i > 0) sums[1] += p[0], sums[2] += p[i];  // query 0's are 1 by construction: left out
                out->sink_at[(l * H + h) * T + i] += p[0];
                if (l == 0 && h == 0) out->queries_at[i]++, out->attn_queries++;
                if (l == 0 && h == 0 && i > 0) out->attn_past_first++, out->attn_uniform += 1.0 / (double)(i + 1);
                if (first && l == L - 1 && h == H - 1) memcpy(out->pattern + i * T, p, (i + 1) * sizeof *p);
            }
    if (first) out->pattern_rows = len;
}

// The lens's statistics (Belrose et al.'s) of one position from the definitions: the readout z (V) of a layer
// against the last layer's zf, both as log-softmax in double.
static void ref_lens_position(const double *z, const double *zf, size_t V, RefRun *out, size_t l) {
    double lse = 0.0, lse_f = 0.0, max = z[0], max_f = zf[0], kl = 0.0, entropy = 0.0;
    size_t top = 0, top_f = 0;
    for (size_t v = 1; v < V; v++) {
        if (z[v] > z[top]) top = v;
        if (zf[v] > zf[top_f]) top_f = v;
    }
    max = z[top];
    max_f = zf[top_f];
    for (size_t v = 0; v < V; v++) {
        lse += exp(z[v] - max);
        lse_f += exp(zf[v] - max_f);
    }
    lse = max + log(lse);
    lse_f = max_f + log(lse_f);
    for (size_t v = 0; v < V; v++) {
        double logp = z[v] - lse, logp_f = zf[v] - lse_f;
        kl += exp(logp_f) * (logp_f - logp);
        entropy -= exp(logp) * logp;
    }
    out->lens_kl[l] += kl;
    out->lens_kl_sq[l] += kl * kl;
    out->lens_entropy[l] += entropy;
    out->lens_agree[l] += top == top_f;
}

// The reference's traces over compare's eval windows (nl_eval_window, stride
// T/2, one at a time).
static int ref_run(const NlModel *m, RefRun *out) {
    const NlConfig *c = nl_model_config(m);
    size_t T = (size_t)c->block_size, V = (size_t)c->vocab_size, L = (size_t)c->n_layer;
    size_t windows = nl_eval_windows(N_TEXT, T, T / 2);
    memset(out, 0, sizeof *out);
    out->lens_nll = calloc(5 * (L + 1), sizeof *out->lens_nll);
    double *logits = malloc(T * V * sizeof *logits);
    size_t H = (size_t)c->n_head;
    out->sink_at = calloc(L * H * T, sizeof *out->sink_at);
    out->queries_at = calloc(T, sizeof *out->queries_at);
    out->pattern = calloc(T * T, sizeof *out->pattern);
    int rc = out->lens_nll && logits && out->sink_at && out->queries_at && out->pattern && H <= REF_MAX_HEADS ? 0 : -1;
    if (rc == 0) {
        out->lens_kl = out->lens_nll + (L + 1);
        out->lens_kl_sq = out->lens_nll + 2 * (L + 1);
        out->lens_entropy = out->lens_nll + 3 * (L + 1);
        out->lens_agree = out->lens_nll + 4 * (L + 1);
    }
    for (size_t win = 0; rc == 0 && win < windows; win++) {
        size_t start, begin, end;
        nl_eval_window(N_TEXT, T, T / 2, win, &start, &begin, &end);
        RefTrace tr;
        size_t len = end - start;
        rc = ref_forward_trace(logits, c, nl_model_transformer_weights(m), TEXT + start, len, &tr);
        for (size_t l = 0; rc == 0 && l <= L; l++) {
            for (int k = 0; k < NL_SITE_COUNT; k++)
                if (tr.rows[l][k]) {
                    size_t rows = k == NL_SITE_HEAD ? end - begin : len;  // the head sees the scored rows
                    rows_add(&out->rows[l][k], tr.rows[l][k] + (len - rows) * tr.width[l][k], rows, tr.width[l][k]);
                }
            for (size_t p = begin; p < end; p++) {  // -ln softmax[target]
                const double *z = tr.lens + (l * len + (p - start)) * V;
                double max = z[0], sum = 0.0;
                for (size_t v = 1; v < V; v++) max = fmax(max, z[v]);
                for (size_t v = 0; v < V; v++) sum += exp(z[v] - max);
                out->lens_nll[l] += log(sum) - (z[TEXT[p + 1]] - max);
                ref_lens_position(z, tr.lens + (L * len + (p - start)) * V, V, out, l);
            }
        }
        if (rc == 0) ref_attention_window(&tr, L, H, T, len, win == 0, out);
        ref_trace_free(&tr);
    }
    free(logits);
    return rc;
}

static void ref_run_free(RefRun *r) {
    for (int l = 0; l <= REF_MAX_LAYERS; l++)
        for (int k = 0; k < NL_SITE_COUNT; k++) free(r->rows[l][k].x);
    free(r->lens_nll);
    free(r->sink_at);
    free(r->queries_at);
    free(r->pattern);
}

static const char *const FIXTURES[] = {"ln-pre-bias.json",  "ln-post-nobias.json", "ln-peri-bias.json",
                                       "rms-pre-bias.json", "deepnorm.json",       "nonorm.json",
                                       "bn-pre-bias.json",  "ln-pre-untied.json"};
#define N_FIXTURES (sizeof FIXTURES / sizeof FIXTURES[0])

// One row of m as trained; a quantized one (quant, the classes it rounded) against rows[reference].
static int quantized_row(const NlModel *m, NlBnStats bn, NlQuant quant, unsigned classes, int reference,
                         NlCompareRow *row) {
    const NlConfig *c = nl_model_config(m);
    NlCompareOptions o = {.repeats = 1,
                          .invariance = 0,
                          .fault = NL_FAULT_NONE,
                          .lens = 1,
                          .outliers = 1,
                          .attention = 1,
                          .pattern = 1,
                          .pattern_layer = c->n_layer - 1,
                          .pattern_head = c->n_head - 1};
    NlRunOptions run = {.norm = c->norm, .placement = c->placement, .batch = 1, .threads = 1, .bn_stats = bn};
    NlError err;
    NlCompareJob job = {.model = m,
                        .run = run,
                        .ids = TEXT,
                        .n = N_TEXT,
                        .quant = quant,
                        .quant_classes = classes,
                        .reference = reference};
    int rc = nl_compare_model(&job, &o, row, &err);
    CHECK(rc == 0, "compare: %s", err.msg);
    return rc;
}

static int compare_row(const NlModel *m, NlBnStats bn, NlCompareRow *row) {
    return quantized_row(m, bn, NL_QUANT_NONE, 0, -1, row);
}

// Every place of every layer of compare's eval against the reference's
// activations: float32 against float64 (1e-4 relative; a share may differ by a
// value on its threshold).
static void check_fixture_outliers(const char *name, const NlModel *m, const NlCompareRow *row, const RefRun *ref) {
    const NlConfig *c = nl_model_config(m);
    int seen = 0;
    CHECK(row->has_outliers, "%s: outliers set", name);
    for (int l = 0; l <= c->n_layer; l++)
        for (int k = 0; k < NL_SITE_COUNT; k++) {
            char what[96];
            snprintf(what, sizeof what, "%s layer %d %s", name, l, nl_site_name((NlSite)k));
            const Rows *r = &ref->rows[l][k];
            CHECK((r->rows > 0) == (row->outliers[l][k].rows > 0), "%s: seen by both or neither", what);
            if (!r->rows) continue;
            NlOutlierStats want = ref_outliers(r, site_gain(c, nl_model_transformer_weights(m), l, (NlSite)k));
            check_outliers(what, &row->outliers[l][k], &want, 1e-4, 1);
            seen++;
        }
    CHECK(seen == 5 * c->n_layer + 2, "%s: 5 places a layer, the stream out and the head (%d)", name, seen);
}

// The attention statistics of every head against the reference's probabilities
// (float32 against float64, 1e-6), the sink share by position likewise, and the
// kept pattern: its rows sum to 1 (1e-6), zero above the diagonal, equal to the
// reference's first window within PATTERN_TOL: one probability of the last layer, float32 noise of every
// layer before it, which bn-pre-bias.json's running statistics magnify (Zen 5, the x86-64-v4 build: 1.5e-7
// with GELU's erf evaluated in float, 6.9e-7 with libm's erf rounded once, 1.04e-6 with the rational erf
// in double, the engine's; every other fixture under 2.2e-7). A wrong head, layer or row is off by 1e-3 or more.
#define PATTERN_TOL 3e-6
static void check_fixture_attention(const char *name, const NlModel *m, const NlCompareRow *row, const RefRun *ref) {
    const NlConfig *c = nl_model_config(m);
    size_t L = (size_t)c->n_layer, H = (size_t)c->n_head, T = (size_t)c->block_size;
    CHECK(row->has_attention && row->n_head == (int)H && row->window == T, "%s: attention set", name);
    if (!row->has_attention) return;
    double worst = 0.0, worst_at = 0.0;
    int queries_ok = 1;
    for (size_t l = 0; l < L; l++)
        for (size_t h = 0; h < H; h++) {
            const NlAttentionStats *a = &row->attention[l * H + h];
            double got[5] = {a->entropy_bits, a->sink, a->self, a->distance, a->uniform};
            double per[5] = {ref->attn_queries, ref->attn_past_first, ref->attn_past_first, ref->attn_queries, 1.0};
            for (int k = 0; k < 4; k++) worst = fmax(worst, fabs(got[k] - ref->attn[l][h][k] / per[k]));
            worst = fmax(worst, fabs(got[4] - ref->attn_uniform / ref->attn_past_first));
            queries_ok &=
                (double)a->queries == ref->attn_queries && (double)a->queries_past_first == ref->attn_past_first;
            for (size_t t = 0; t < T; t++) {
                double want = ref->queries_at[t] ? ref->sink_at[(l * H + h) * T + t] / ref->queries_at[t] : NAN;
                double have = row->attention_sink_at[(l * H + h) * T + t];
                worst_at = isnan(want) ? (isnan(have) ? worst_at : INFINITY) : fmax(worst_at, fabs(have - want));
            }
        }
    CHECK(queries_ok, "%s: every head saw the reference's %.0f queries, %.0f past a window's first", name,
          ref->attn_queries, ref->attn_past_first);
    CHECK(worst <= 1e-6,
          "%s: entropy, distance, and sink, self and uniform past each window's first query, of every head within "
          "1e-6 (worst %.3g)",
          name, worst);
    CHECK(worst_at <= 1e-6, "%s: the sink share by position within 1e-6 (worst %.3g)", name, worst_at);
    const NlAttentionStats *first = &row->attention[0];
    CHECK(first->sink > 0.0 && first->sink < 1.0 && first->entropy_bits > 0.0,
          "%s: layer 0 head 0 is not trivial "
          "(sink %.3g, entropy %.3g)",
          name, first->sink, first->entropy_bits);
    size_t n = row->pattern_rows;
    CHECK(row->attention_pattern && n == ref->pattern_rows && row->pattern_layer == (int)L - 1 &&
              row->pattern_head == (int)H - 1,
          "%s: the pattern of head %zu.%zu kept, %zu rows (want %zu)", name, L - 1, H - 1, n, ref->pattern_rows);
    double row_sum_err = 0.0, diff = 0.0, above = 0.0;
    for (size_t i = 0; row->attention_pattern && i < n; i++) {
        double sum = 0.0;
        for (size_t j = 0; j < n; j++) {
            float p = row->attention_pattern[i * n + j];
            sum += p;
            if (j > i) above = fmax(above, fabs(p));
            diff = fmax(diff, fabs(p - ref->pattern[i * T + j]));
        }
        row_sum_err = fmax(row_sum_err, fabs(sum - 1.0));
    }
    printf("     %s: head %zu.%zu's pattern within %.3g of the reference's (tolerance %.0e)\n", name, L - 1, H - 1,
           diff, PATTERN_TOL);
    CHECK(row_sum_err <= 1e-6 && above == 0.0 && diff <= PATTERN_TOL,
          "%s: the pattern's rows sum to 1 (worst %.3g), 0 above the diagonal, the reference's within 3e-6 (%.3g)",
          name, row_sum_err, diff);
}

// The lens's statistics (Belrose et al.'s) against the reference's from the same readouts:
// KL and entropy within 1e-6 bits, the KL's standard error within 1e-6 bits,
// top-1 agreement exactly (float32 against float64: no near tie on this text);
// the last layer's KL exactly 0 and its agreement exactly 1.
static void check_fixture_lens_stats(const char *name, int L, const NlCompareRow *row, const RefRun *ref) {
    double n = (double)(N_TEXT - 1), bit = log(2.0);
    for (int l = 0; l <= L; l++) {
        double kl = ref->lens_kl[l] / n, var = ref->lens_kl_sq[l] / n - kl * kl;
        double se = sqrt(fmax(var, 0.0) / (n - 1)) / bit, entropy = ref->lens_entropy[l] / n / bit;
        CHECK(fabs(row->lens_kl_bits[l] - kl / bit) <= 1e-6, "%s: lens KL after layer %d %.9g bits want %.9g", name, l,
              row->lens_kl_bits[l], kl / bit);
        CHECK(fabs(row->lens_kl_bits_stderr[l] - se) <= 1e-6, "%s: its standard error %.9g want %.9g", name,
              row->lens_kl_bits_stderr[l], se);
        CHECK(fabs(row->lens_entropy_bits[l] - entropy) <= 1e-6, "%s: entropy after layer %d %.9g bits want %.9g", name,
              l, row->lens_entropy_bits[l], entropy);
        CHECK(row->lens_top1_agree[l] == ref->lens_agree[l] / n, "%s: top-1 agreement after layer %d %.9g want %.9g",
              name, l, row->lens_top1_agree[l], ref->lens_agree[l] / n);
    }
    CHECK(row->lens_kl_bits[L] == 0.0 && row->lens_kl_bits_stderr[L] == 0.0 && row->lens_top1_agree[L] == 1.0,
          "%s: the last layer against itself: KL exactly 0 (%g), agreement exactly 1 (%g)", name, row->lens_kl_bits[L],
          row->lens_top1_agree[L]);
    CHECK(row->lens_kl_bits[0] > 1e-3, "%s: the embeddings' readout is apart from the last layer's (%g bits)", name,
          row->lens_kl_bits[0]);
}

// The lens after each layer against the reference's readout of that layer's
// stream (1e-5 relative), and its last layer the row's own bits/char exactly.
static void check_fixture_lens(const char *name, const NlModel *m, const NlCompareRow *row, const RefRun *ref) {
    int L = nl_model_config(m)->n_layer;
    CHECK(row->has_lens, "%s: lens set", name);
    for (int l = 0; l <= L; l++) {
        double want = ref->lens_nll[l] / (double)(N_TEXT - 1) / log(2.0);
        CHECK(close_rel(row->lens_bits_per_char[l], want, 1e-5), "%s: lens after layer %d %.9g want %.9g", name, l,
              row->lens_bits_per_char[l], want);
    }
    CHECK(row->lens_bits_per_char[L] == row->bits_per_char, "%s: the lens's last layer %.17g is eval's %.17g", name,
          row->lens_bits_per_char[L], row->bits_per_char);
    CHECK(fabs(row->lens_bits_per_char[0] - row->lens_bits_per_char[L]) > 1e-3, "%s: the layers are read apart", name);
    check_fixture_lens_stats(name, L, row, ref);
}

// On its own, at another stride: with statistics attached eval computes every
// row of the last layer, as the lens does, and agrees bit for bit; without, it
// prunes the rows no logit needs, and products of fewer rows round differently
// in the last bits.
static void check_lens_alone(const char *name, const NlModel *m) {
    const NlConfig *c = nl_model_config(m);
    NlState *s = NULL;
    NlStats *st = NULL;
    NlError err;
    NlEvalResult watched, plain;
    double *bits = calloc((size_t)c->n_layer + 1, sizeof *bits);
    int ok = bits && nl_state_create(&s, m, NULL, &err) == 0 && nl_lens(s, TEXT, N_TEXT, 3, bits, &err) == 0 &&
             nl_eval(&(s), 1, TEXT, N_TEXT, &(NlEvalOptions){.stride = 3}, &plain, &err) == 0 &&
             nl_stats_create(&st, c, (size_t)c->block_size, 0, &err) == 0;
    if (ok) nl_state_set_stats(s, st);
    if (ok && nl_eval(&(s), 1, TEXT, N_TEXT, &(NlEvalOptions){.stride = 3}, &watched, &err) == 0) {
        double w = watched.nll_sum / (double)watched.count / log(2.0),
               p = plain.nll_sum / (double)plain.count / log(2.0);
        CHECK(bits[c->n_layer] == w, "%s: stride 3: lens %.17g, eval with statistics %.17g", name, bits[c->n_layer], w);
        CHECK(close_rel(bits[c->n_layer], p, 1e-6), "%s: stride 3: lens %.17g, plain eval %.17g", name,
              bits[c->n_layer], p);
    } else CHECK(0, "%s: lens and eval ran", name);
    free(bits);
    nl_state_free(s);
    nl_stats_free(st);
}

// The lens rides on eval's own pass, over what is attached before it: the statistics see the pass
// as they do without it (every layer's residual RMS, norm output std and branch RMS, bit for bit),
// the profiler counts the same calls of every component (the readouts are not timed), and the
// lens's own bits/char after the last layer is that eval's.
static void lens_rides_on_eval_over_statistics_and_profiler(void) {
    NlModel *m = load_fixture("ln-peri-bias.json");
    if (!m) return;
    const NlConfig *c = nl_model_config(m);
    NlState *s = NULL;
    NlStats *st[2] = {NULL, NULL};
    NlProfiler *prof[2] = {NULL, NULL};
    NlLens *lens = NULL;
    NlError err;
    NlEvalResult r[2];
    double *bits = calloc((size_t)c->n_layer + 1, sizeof *bits);
    int ok = bits && nl_state_create(&s, m, NULL, &err) == 0;
    for (int k = 0; ok && k < 2; k++) {  // k = 1: with the lens
        NlEvalOptions eo = {.stride = 3};
        ok = nl_stats_create(&st[k], c, (size_t)c->block_size, 0, &err) == 0 &&
             nl_profiler_create(&prof[k], c, 0, 0, &err) == 0 &&
             (k == 0 || nl_lens_create(&lens, c, 1, TEXT, N_TEXT, 3, &err) == 0);
        if (!ok) break;
        nl_state_set_stats(s, st[k]);
        nl_state_set_profiler(s, prof[k]);
        ok = (k == 1 ? nl_lens_eval(lens, s, &eo, &r[k], &err) : nl_eval(&s, 1, TEXT, N_TEXT, &eo, &r[k], &err)) == 0;
        CHECK(nl_state_observer(s)->watcher == st[k], "nl_lens_eval puts the statistics back");
        nl_state_set_stats(s, NULL);
        nl_state_set_profiler(s, NULL);
    }
    CHECK(ok && nl_lens_bits(lens, bits, &err) == 0, "lens ran: %s", ok ? "" : err.msg);
    if (ok) {
        CHECK(r[0].nll_sum == r[1].nll_sum, "the same eval with the lens: %.17g %.17g", r[0].nll_sum, r[1].nll_sum);
        CHECK(bits[c->n_layer] == r[1].nll_sum / (double)r[1].count / log(2.0), "the lens's last layer is eval's");
        for (int l = 0; l <= c->n_layer; l++) {
            CHECK(nl_stats_residual_rms(st[0], l) == nl_stats_residual_rms(st[1], l) &&
                      nl_stats_norm_std(st[0], l) == nl_stats_norm_std(st[1], l),
                  "layer %d's residual RMS and norm std", l);
            if (l < c->n_layer)
                CHECK(nl_stats_branch_rms(st[0], l) == nl_stats_branch_rms(st[1], l) &&
                          nl_stats_branch_rms(st[0], l) > 0,
                      "layer %d's branch RMS", l);
        }
        for (int l = -1; l < c->n_layer; l++)
            for (int k = 0; k < NL_COMP_COUNT; k++)
                CHECK(nl_profiler_cell(prof[0], NL_PHASE_PREFILL, l, (NlComponent)k)->calls ==
                          nl_profiler_cell(prof[1], NL_PHASE_PREFILL, l, (NlComponent)k)->calls,
                      "layer %d component %d: the same calls", l, k);
    }
    for (int k = 0; k < 2; k++) {
        nl_stats_free(st[k]);
        nl_profiler_free(prof[k]);
    }
    nl_lens_free(lens);
    nl_state_free(s);
    free(bits);
    nl_model_free(m);
}

static void fixtures_match_reference(void) {
    NlCompareRow *row = calloc(1, sizeof *row);
    for (size_t f = 0; row && f < N_FIXTURES; f++) {
        NlModel *m = load_fixture(FIXTURES[f]);
        RefRun ref = {0};
        if (!m) continue;
        if (compare_row(m, NL_BN_RUNNING, row) == 0 && ref_run(m, &ref) == 0) {
            check_fixture_outliers(FIXTURES[f], m, row, &ref);
            check_fixture_lens(FIXTURES[f], m, row, &ref);
            check_fixture_attention(FIXTURES[f], m, row, &ref);
        } else CHECK(0, "%s: compare and the reference ran", FIXTURES[f]);
        check_lens_alone(FIXTURES[f], m);
        nl_compare_row_free(row);
        ref_run_free(&ref);
        nl_model_free(m);
    }
    free(row);
}

// BatchNorm with the statistics of each call: the readout normalises all the
// call's rows, as eval.
static void lens_with_batch_statistics_ends_at_eval(void) {
    NlModel *m = load_fixture("bn-pre-bias.json");
    NlCompareRow *row = calloc(1, sizeof *row);
    if (m && row && compare_row(m, NL_BN_BATCH, row) == 0) {
        int L = nl_model_config(m)->n_layer;
        CHECK(row->lens_bits_per_char[L] == row->bits_per_char, "batch statistics: lens %.17g eval %.17g",
              row->lens_bits_per_char[L], row->bits_per_char);
    }
    nl_compare_row_free(row);
    free(row);
    nl_model_free(m);
}

static void lens_refuses_a_recurrent_model(void) {
    NlModel *m = load_fixture("lstm-ln.json");
    NlState *s = NULL;
    NlError err;
    double bits[8];
    if (!m || nl_state_create(&s, m, NULL, &err) != 0) {
        CHECK(0, "state");
        nl_model_free(m);
        return;
    }
    CHECK(nl_lens(s, TEXT, N_TEXT, 4, bits, &err) != 0 && err.code == NL_ERR_ARG && strstr(err.msg, "residual"),
          "refused: %s", err.msg);
    CHECK(nl_state_readout(s, NULL, 1, 1, 1) == NULL, "no readout for a recurrent model");
    NlCompareRow *row = calloc(1, sizeof *row);
    NlCompareOptions o = {.repeats = 1, .invariance = 0, .fault = NL_FAULT_NONE, .lens = 1, .outliers = 1};
    if (row &&
        nl_compare_model(&(NlCompareJob){.model = m, .run = NL_RUN_DEFAULTS, .ids = TEXT, .n = N_TEXT, .reference = -1},
                         &o, row, &err) == 0) {
        CHECK(!row->has_lens, "a recurrent row has no lens");
        CHECK(row->outliers[0][NL_SITE_H].rows > 0 && row->outliers[0][NL_SITE_C].rows > 0, "but h and c outliers");
    } else CHECK(0, "compare: %s", err.msg);
    nl_compare_row_free(row);
    free(row);
    nl_state_free(s);
    nl_model_free(m);
}

int main(void) {
    RUN(outliers_of_planted_rows_match_double);
    RUN(outlier_shares_count_exactly_6);
    RUN(fixtures_match_reference);
    RUN(lens_rides_on_eval_over_statistics_and_profiler);
    RUN(lens_with_batch_statistics_ends_at_eval);
    RUN(lens_refuses_a_recurrent_model);
    return check_summary("test_lab");
}
