// stats.c — hidden-state statistics and the LayerNorm/RMSNorm invariance experiment, collected
// from the forward pass when a collector is attached to the state.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attnstats.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "normlab_lab.h"

typedef struct {
    double rms, abs_mean;  // sums over positions of the residual stream's RMS and |mean|
    uint64_t positions;
    double norm_std;  // sum over positions (of both input norms) of the output's std
    uint64_t norm_positions;
    double norm_post_std;  // the same for peri's output norms
    uint64_t norm_post_positions;
    double branch_rms;  // sum over positions (of both sublayers) of the RMS of what enters the stream
    uint64_t branch_positions;
    double state_norm[2][NL_STATE_BUCKETS];  // recurrent: sums of ||h_t||, ||c_t|| per time bucket
    uint64_t state_positions[NL_STATE_BUCKETS];
} LayerStats;

// One place's sums for the outlier statistics (NlOutlierStats).
typedef struct {
    uint64_t rows, values, over_6, over_6rms;
    double max_ratio;
    double max_abs, abs_sum;  // the largest |x| seen, and the sum of every |x|
    size_t max_channel, max_row;  // where the largest was: its channel, its row in its call
    double sum[4];  // of x, x^2, x^3, x^4 over every value
    double *chan_abs;  // (width) sums of |x| per channel; width is the place's
    size_t width;
    int has_gain;
    int gain_top[3];
} SiteStats;

struct NlStats {
    NlConfig cfg;
    LayerStats *layers;  // (L + 1)
    SiteStats *sites;  // ((L + 1) * NL_SITE_COUNT) with NL_STATS_OUTLIERS, else NULL
    double *chan_abs;  // every place's channel sums, max_width each
    size_t max_width;
    int invariance;
    int stream;  // the stream's own figures are collected (not NL_STATS_NO_STREAM)
    double max_change[2][NL_INV_COUNT];  // [norm type][case]
    float *scratch;  // (3, max_rows, D) perturbed input, reference and perturbed outputs
    size_t max_rows;
    NlAttnSums *attention;  // with NL_STATS_ATTENTION (a transformer), else NULL
};

static const char *const INV_NAMES[NL_INV_COUNT] = {"scale_0.5", "scale_2", "scale_10", "shift_1", "scale_2_eps0"};
const char *nl_invariance_name(NlInvarianceCase c) { return INV_NAMES[c]; }

static const char *const SITE_NAMES[NL_SITE_COUNT] = {"residual", "qkv_in",  "proj_in", "fc_in",
                                                      "out_in",   "head_in", "h",       "c"};
const char *nl_site_name(NlSite site) { return site < NL_SITE_COUNT ? SITE_NAMES[site] : "?"; }

static size_t max4(size_t a, size_t b, size_t c, size_t d) {
    size_t m = a > b ? a : b;
    m = m > c ? m : c;
    return m > d ? m : d;
}

int nl_stats_create(NlStats **out, const NlConfig *cfg, size_t max_rows, int what, NlError *err) {
    *out = NULL;
    NlStats *s = calloc(1, sizeof *s);
    int invariance =
        (what & NL_STATS_INVARIANCE) && nl_family_info(cfg->arch)->has_residual_stream;  // norms of a stream
    int outliers = (what & NL_STATS_OUTLIERS) != 0;
    int attention = (what & NL_STATS_ATTENTION) && nl_family_info(cfg->arch)->has_residual_stream;
    size_t n_sites = ((size_t)cfg->n_layer + 1) * NL_SITE_COUNT;
    size_t width = max4((size_t)cfg->n_embd, (size_t)cfg->n_inner, (size_t)cfg->n_hidden, (size_t)cfg->n_input);
    if (s) {
        s->layers = calloc((size_t)cfg->n_layer + 1, sizeof *s->layers);
        if (invariance) s->scratch = malloc(3 * max_rows * (size_t)cfg->n_embd * sizeof(float));
        if (outliers) s->sites = calloc(n_sites, sizeof *s->sites);
        if (outliers) s->chan_abs = calloc(n_sites * width, sizeof *s->chan_abs);
        if (attention)
            s->attention = nl_attn_sums_create((size_t)cfg->n_layer, (size_t)cfg->n_head, (size_t)cfg->block_size);
    }
    if (!s || !s->layers || (invariance && !s->scratch) || (outliers && (!s->sites || !s->chan_abs)) ||
        (attention && !s->attention)) {
        nl_stats_free(s);
        nl_error(err, NL_ERR_NOMEM, "out of memory for hidden-state statistics");
        return -1;
    }
    s->cfg = *cfg;
    s->max_width = width;
    for (size_t i = 0; outliers && i < n_sites; i++) s->sites[i].chan_abs = s->chan_abs + i * width;
    s->invariance = invariance;
    s->stream = !(what & NL_STATS_NO_STREAM);
    s->max_rows = max_rows;
    *out = s;
    return 0;
}

void nl_stats_free(NlStats *s) {
    if (!s) return;
    free(s->layers);
    free(s->sites);
    free(s->chan_abs);
    free(s->scratch);
    nl_attn_sums_free(s->attention);
    free(s);
}

// Adds each row's RMS to *rms_sum and, when abs_mean_sum is not NULL, its |mean| to *abs_mean_sum.
static void add_rows(const float *x, size_t rows, size_t D, double *rms_sum, double *abs_mean_sum) {
    for (size_t r = 0; r < rows; r++, x += D) {
        double sum = 0.0, sq = 0.0;
        for (size_t i = 0; i < D; i++) {
            sum += x[i];
            sq += (double)x[i] * x[i];
        }
        *rms_sum += sqrt(sq / (double)D);
        if (abs_mean_sum) *abs_mean_sum += fabs(sum / (double)D);
    }
}

static void nl_stats_residual(NlStats *s, int layer, const float *x, size_t rows, size_t width) {
    LayerStats *ls = &s->layers[layer];
    add_rows(x, rows, width, &ls->rms, &ls->abs_mean);
    ls->positions += rows;
}

static void nl_stats_branch(NlStats *s, int layer, const float *x, size_t rows) {
    LayerStats *ls = &s->layers[layer];
    add_rows(x, rows, (size_t)s->cfg.n_embd, &ls->branch_rms, NULL);
    ls->branch_positions += rows;
}

static int time_bucket(size_t t) {
    int k = 0;
    while (k + 1 < NL_STATE_BUCKETS && t + 1 >= ((size_t)2 << k)) k++;
    return k;
}

static double norm2(const float *x, size_t n) {
    double sq = 0.0;
    for (size_t i = 0; i < n; i++) sq += (double)x[i] * x[i];
    return sqrt(sq);
}

static void nl_stats_state(NlStats *s, int layer, size_t t, const float *h, const float *c, size_t B) {
    size_t S = (size_t)s->cfg.n_hidden;
    LayerStats *ls = &s->layers[layer], *out = &s->layers[layer + 1];
    int k = time_bucket(t);
    add_rows(h, B, S, &out->rms, &out->abs_mean);
    out->positions += B;
    for (size_t b = 0; b < B; b++) {
        ls->state_norm[0][k] += norm2(h + b * S, S);
        if (c) ls->state_norm[1][k] += norm2(c + b * S, S);
    }
    ls->state_positions[k] += B;
}

double nl_stats_state_norm(const NlStats *s, int layer, int cell, int bucket) {
    const LayerStats *ls = &s->layers[layer];
    if (bucket < 0 || bucket >= NL_STATE_BUCKETS || !ls->state_positions[bucket]) return NAN;
    if (cell >= nl_family_info(s->cfg.arch)->state_vectors) return NAN;  // the state has no such vector
    return ls->state_norm[cell != 0][bucket] / (double)ls->state_positions[bucket];
}

// Largest |N(perturbed in) - N(in)| under norm type t, for one case, over rows.
static double change(NlStats *s, NlNormType t, NlInvarianceCase c, const float *in, NlNormWeights w, size_t rows) {
    static const double SCALE[NL_INV_COUNT] = {0.5, 2.0, 10.0, 1.0, 2.0}, SHIFT[NL_INV_COUNT] = {0, 0, 0, 1.0, 0};
    size_t D = (size_t)s->cfg.n_embd, count = rows * D;
    float *xp = s->scratch, *ref = xp + count, *got = ref + count;
    float eps = c == NL_INV_SCALE_2_EPS0 ? 0.0f : (float)s->cfg.norm_eps;
    for (size_t i = 0; i < count; i++) xp[i] = (float)(in[i] * SCALE[c] + SHIFT[c]);
    nl_norm(ref, in, w, t, rows, D, eps);
    nl_norm(got, xp, w, t, rows, D, eps);
    double worst = 0.0;
    for (size_t i = 0; i < count; i++) worst = fmax(worst, fabs((double)got[i] - ref[i]));
    return worst;
}

static void nl_stats_norm(NlStats *s, int layer, int post, const float *in, const float *out, NlNormWeights w,
                          size_t rows) {
    size_t D = (size_t)s->cfg.n_embd;
    LayerStats *ls = &s->layers[layer];
    double std_sum = 0.0;
    for (size_t r = 0; r < rows; r++) {
        const float *y = out + r * D;
        double sum = 0.0, sq = 0.0;
        for (size_t i = 0; i < D; i++) sum += y[i];
        double mean = sum / (double)D;
        for (size_t i = 0; i < D; i++) sq += (y[i] - mean) * (y[i] - mean);
        std_sum += sqrt(sq / (double)D);
    }
    *(post ? &ls->norm_post_std : &ls->norm_std) += std_sum;
    *(post ? &ls->norm_post_positions : &ls->norm_positions) += rows;
    if (!s->invariance || rows > s->max_rows) return;
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < NL_INV_COUNT; c++) {
            double d = change(s, t ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM, (NlInvarianceCase)c, in, w, rows);
            if (d > s->max_change[t][c]) s->max_change[t][c] = d;
        }
}

// ---- outliers

// Puts channel i of value v into top (3 channels, largest value first, the lower channel on ties:
// channels come in increasing order) and their values topv.
static void insert_top(int *top, double *topv, int i, double v) {
    int at = 3;
    while (at > 0 && (top[at - 1] < 0 || v > topv[at - 1])) at--;
    for (int k = 2; k > at; k--) {
        top[k] = top[k - 1];
        topv[k] = topv[k - 1];
    }
    if (at < 3) top[at] = i, topv[at] = v;
}

static void gain_top3(const float *gain, size_t width, int *top) {
    double topv[3];
    for (int k = 0; k < 3; k++) top[k] = -1;
    for (size_t i = 0; i < width; i++) insert_top(top, topv, (int)i, fabs((double)gain[i]));
}

static void nl_stats_site(NlStats *s, int layer, NlSite site, const float *x, size_t rows, size_t width,
                          const float *gain) {
    if (!s->sites || layer < 0 || layer > s->cfg.n_layer || site >= NL_SITE_COUNT || width > s->max_width) return;
    SiteStats *st = &s->sites[(size_t)layer * NL_SITE_COUNT + site];
    if (!st->rows && gain) {
        st->has_gain = 1;
        gain_top3(gain, width, st->gain_top);
    }
    st->width = width;
    for (size_t r = 0; r < rows; r++, x += width) {
        double sq = 0.0, amax = 0.0;
        for (size_t i = 0; i < width; i++) {
            double v = x[i], v2 = v * v;
            sq += v2;
            amax = fmax(amax, fabs(v));
            st->abs_sum += fabs(v);
            if (fabs(v) > st->max_abs) st->max_abs = fabs(v), st->max_channel = i, st->max_row = r;
            st->sum[0] += v;
            st->sum[1] += v2;
            st->sum[2] += v2 * v;
            st->sum[3] += v2 * v2;
            st->chan_abs[i] += fabs(v);
        }
        double rms = sqrt(sq / (double)width);
        for (size_t i = 0; i < width; i++) {
            st->over_6 += fabs((double)x[i]) >= 6.0;
            st->over_6rms += rms > 0 && fabs((double)x[i]) >= 6.0 * rms;
        }
        if (rms > 0) st->max_ratio = fmax(st->max_ratio, amax / rms);
    }
    st->rows += rows;
    st->values += rows * width;
}

int nl_stats_outliers(const NlStats *s, int layer, NlSite site, NlOutlierStats *out) {
    *out = (NlOutlierStats){.top = {-1, -1, -1}, .gain_top = {-1, -1, -1}};
    if (!s->sites || layer < 0 || layer > s->cfg.n_layer || site >= NL_SITE_COUNT) return -1;
    const SiteStats *st = &s->sites[(size_t)layer * NL_SITE_COUNT + site];
    if (!st->rows) return -1;
    double n = (double)st->values, mean = st->sum[0] / n, ex2 = st->sum[1] / n, ex3 = st->sum[2] / n;
    double var = ex2 - mean * mean;
    double m4 = st->sum[3] / n - 4 * mean * ex3 + 6 * mean * mean * ex2 - 3 * mean * mean * mean * mean;
    out->rows = st->rows;
    out->values = st->values;
    out->max_ratio = st->max_ratio;
    out->max_abs = st->max_abs;
    out->max_channel = (int)st->max_channel;
    out->max_position = st->max_row;
    out->max_over_mean_abs = st->abs_sum > 0 ? st->max_abs / (st->abs_sum / n) : 0;
    out->share_6 = (double)st->over_6 / n;
    out->share_6rms = (double)st->over_6rms / n;
    out->kurtosis = var > 0 ? m4 / (var * var) : NAN;
    for (size_t i = 0; i < st->width; i++) insert_top(out->top, out->top_mean_abs, (int)i, st->chan_abs[i]);
    for (int k = 0; k < 3; k++) out->top_mean_abs[k] = out->top[k] >= 0 ? out->top_mean_abs[k] / (double)st->rows : 0;
    out->has_gain = st->has_gain;
    for (int k = 0; k < 3; k++) out->gain_top[k] = st->has_gain ? st->gain_top[k] : -1;
    for (int a = 0; a < 3 && st->has_gain; a++)
        for (int b = 0; b < 3; b++) out->gain_overlap += out->top[a] >= 0 && out->top[a] == out->gain_top[b];
    return 0;
}

static double per(double sum, uint64_t n) { return n ? sum / (double)n : 0.0; }

double nl_stats_residual_rms(const NlStats *s, int layer) {
    return per(s->layers[layer].rms, s->layers[layer].positions);
}
double nl_stats_residual_abs_mean(const NlStats *s, int layer) {
    return per(s->layers[layer].abs_mean, s->layers[layer].positions);
}
double nl_stats_norm_std(const NlStats *s, int layer) {
    return per(s->layers[layer].norm_std, s->layers[layer].norm_positions);
}
double nl_stats_norm_post_std(const NlStats *s, int layer) {
    return per(s->layers[layer].norm_post_std, s->layers[layer].norm_post_positions);
}
double nl_stats_branch_rms(const NlStats *s, int layer) {
    return per(s->layers[layer].branch_rms, s->layers[layer].branch_positions);
}
double nl_stats_invariance(const NlStats *s, NlNormType t, NlInvarianceCase c) {
    return s->max_change[t == NL_NORM_RMSNORM][c];  // [0] LayerNorm, [1] RMSNorm
}

int nl_stats_attention(const NlStats *s, int layer, int head, NlAttentionStats *out) {
    if (!s->attention || layer < 0 || layer >= s->cfg.n_layer || head < 0 || head >= s->cfg.n_head) return -1;
    nl_attn_sums_read(s->attention, layer, head, out);
    return 0;
}

double nl_stats_attention_sink_at(const NlStats *s, int layer, int head, size_t t) {
    if (!s->attention || layer < 0 || layer >= s->cfg.n_layer || head < 0 || head >= s->cfg.n_head ||
        t >= (size_t)s->cfg.block_size)
        return NAN;
    return nl_attn_sums_sink_at(s->attention, layer, head, t);
}

int nl_stats_keep_pattern(NlStats *s, int layer, int head, NlError *err) {
    if (!s->attention || layer < 0 || layer >= s->cfg.n_layer || head < 0 || head >= s->cfg.n_head)
        return nl_error(err, NL_ERR_ARG, "no attention pattern %d.%d: the model has %d layers of %d heads", layer, head,
                        s->cfg.n_layer, s->cfg.n_head);
    if (nl_attn_sums_keep_pattern(s->attention, layer, head) != 0)
        return nl_error(err, NL_ERR_NOMEM, "out of memory for an attention pattern");
    return 0;
}

const float *nl_stats_pattern(const NlStats *s, size_t *rows) {
    *rows = 0;
    return s->attention ? nl_attn_sums_pattern(s->attention, rows) : NULL;
}

// The statistics as a state's watcher (normlab.h NlObserver).
static void watch_residual(void *s, int layer, const float *x, size_t rows, size_t width) {
    nl_stats_residual(s, layer, x, rows, width);
}
static void watch_norm(void *s, int layer, int post, const float *in, const float *out, NlNormWeights w, size_t rows) {
    nl_stats_norm(s, layer, post, in, out, w, rows);
}
static void watch_branch(void *s, int layer, const float *x, size_t rows) { nl_stats_branch(s, layer, x, rows); }
static void watch_state(void *s, int layer, size_t t, const float *h, const float *c, size_t B) {
    nl_stats_state(s, layer, t, h, c, B);
}
static void watch_site(void *s, int layer, NlSite site, const float *x, size_t rows, size_t width, const float *gain) {
    nl_stats_site(s, layer, site, x, rows, width, gain);
}
static void watch_attention(void *s, int layer, size_t b, size_t head, const float *p, size_t len, double entropy) {
    nl_attn_sums_add(((NlStats *)s)->attention, layer, b, head, p, len, entropy);
}

void nl_state_set_stats(NlState *state, NlStats *stats) {
    NlObserver obs = *nl_state_observer(state);  // the profiler's half stays as it is
    obs.watcher = stats;
    int stream = stats && stats->stream;
    obs.residual = stream ? watch_residual : NULL;
    obs.norm = stream || (stats && stats->invariance) ? watch_norm : NULL;  // (invariance is measured there)
    obs.branch = stream ? watch_branch : NULL;
    obs.state = stream ? watch_state : NULL;
    obs.site = stats && stats->sites ? watch_site : NULL;
    obs.attention = stats && stats->attention ? watch_attention : NULL;
    nl_state_set_observer(state, &obs);
}
