// compare.c — one row of `normlab compare`: quality, speed, hidden-state statistics and
// consistency checks of a model run under a given norm type and placement.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "normlab_internal.h"
#include "normlab_lab.h"

#define BATCH 16

const NlPlacementInfo *nl_placement_info(NlPlacement p) { return nl_recipe_info(p); }

unsigned nl_placement_norms(NlPlacement p) {
    NlRecipe r;
    NlError err;
    if (nl_recipe_of_placement(&r, p, 4, 1, &err) != 0) return 0;
    return nl_recipe_norms(&r) | (r.final_norm ? 1u << NL_NS_COUNT : 0u);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summarize(double *v, int n, double *median, double *min, double *max) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    *min = v[0];
    *max = v[n - 1];
}

// The reference job's log-softmax at every position eval scores, into k->base (eval's windows).
static int kl_reference(const NlCompareJob *ref, size_t stride, NlKlRecord *k, NlError *err) {
    NlRunOptions run = ref->run;
    run.batch = 1;
    NlState *s = NULL;
    NlEvalResult r;
    NlEvalOptions eo = {.stride = stride, .scored = nl_kl_scored, .scored_ctx = k};
    if (nl_quant_state_create(&s, ref->model, &run, ref->quant_act, err) != 0) return -1;
    int rc = nl_eval(&s, 1, ref->ids, ref->n, &eo, &r, err);
    nl_state_free(s);
    return rc;
}

// A quantized row's figures against its float32 row's distribution (nl_kl_summary's).
static int kl_figures(const NlKlRecord *k, NlCompareRow *row, NlError *err) {
    NlKlSummary sum;
    if (nl_kl_summary(k, &sum, err) != 0) return -1;
    row->has_kl = 1;
    row->kl_divergence = sum.kl;
    row->kl_divergence_stderr = sum.kl_se;
    row->same_top = sum.same_top;
    row->max_dlogp = sum.max_dlogp;
    return 0;
}

// The lens's figures of an eval (L + 1 layers) into the row's arrays.
static int lens_figures(const NlLens *lens, size_t L, NlCompareRow *row, NlError *err) {
    NlLensLayer *layers = malloc((L + 1) * sizeof *layers);
    if (!layers) return nl_error(err, NL_ERR_NOMEM, "out of memory");
    int rc = nl_lens_bits(lens, row->lens_bits_per_char, err) != 0 || nl_lens_layers(lens, layers, err) != 0 ? -1 : 0;
    for (size_t l = 0; rc == 0 && l <= L; l++) {
        row->lens_kl_bits[l] = layers[l].kl_bits;
        row->lens_kl_bits_stderr[l] = layers[l].kl_bits_stderr;
        row->lens_entropy_bits[l] = layers[l].entropy_bits;
        row->lens_top1_agree[l] = layers[l].top1_agree;
    }
    free(layers);
    return rc;
}

// The attention figures of the statistics st (of model c) into the row: per head, by position, the pattern.
static int attention_figures(const NlStats *st, const NlConfig *c, NlCompareRow *row, NlError *err) {
    size_t L = (size_t)c->n_layer, H = (size_t)c->n_head, T = (size_t)c->block_size, rows;
    const float *pattern = nl_stats_pattern(st, &rows);
    row->attention = malloc(L * H * sizeof *row->attention);
    row->attention_sink_at = malloc(L * H * T * sizeof *row->attention_sink_at);
    row->attention_pattern = pattern ? malloc(rows * rows * sizeof *row->attention_pattern) : NULL;
    if (!row->attention || !row->attention_sink_at || (pattern && !row->attention_pattern))
        return nl_error(err, NL_ERR_NOMEM, "out of memory for the attention statistics");
    for (size_t l = 0; l < L; l++)
        for (size_t h = 0; h < H; h++) {
            (void)nl_stats_attention(st, (int)l, (int)h, &row->attention[l * H + h]);
            for (size_t t = 0; t < T; t++)
                row->attention_sink_at[(l * H + h) * T + t] = nl_stats_attention_sink_at(st, (int)l, (int)h, t);
        }
    for (size_t i = 0; pattern && i < rows; i++)
        memcpy(row->attention_pattern + i * rows, pattern + i * T, rows * sizeof *pattern);
    row->pattern_rows = pattern ? rows : 0;
    row->has_attention = 1;
    row->n_head = (int)H;
    row->window = T;
    return 0;
}

// Eval with statistics and a profile attached: quality, hidden states, time per component; and the
// logit lens read from the same pass, when row->has_lens.
static int measure_eval(NlState *s, const NlConfig *c, const int *ids, size_t n, const NlCompareOptions *opts,
                        NlKlRecord *kl, NlCompareRow *row, NlError *err) {
    NlStats *st = NULL;
    NlProfiler *prof = NULL;
    NlLens *lens = NULL;
    size_t T = (size_t)c->block_size, stride = T / 2 ? T / 2 : 1;  // (a recurrent model ignores stride)
    int rc = -1, blocks = nl_family_info(c->arch)->has_residual_stream;
    int invariance = opts->invariance && blocks;  // an experiment on the norms of a residual stream
    int outliers = opts->outliers && !row->quant && !row->quant_act;  // of the float32 model's activations
    int attention = opts->attention && blocks;
    int what = (invariance ? NL_STATS_INVARIANCE : 0) | (outliers ? NL_STATS_OUTLIERS : 0) |
               (attention ? NL_STATS_ATTENTION : 0);
    if (nl_stats_create(&st, c, T, what, err) != 0 || nl_profiler_create(&prof, c, 0, 0, err) != 0) goto cleanup;
    if (attention && opts->pattern && nl_stats_keep_pattern(st, opts->pattern_layer, opts->pattern_head, err) != 0)
        goto cleanup;
    if (row->has_lens && nl_lens_create(&lens, c, 1, ids, n, stride, err) != 0) goto cleanup;
    if (lens) (void)nl_lens_set_scale(lens, c, opts->lens_scale);
    if (lens) row->lens_reading = nl_lens_reading(lens);
    nl_state_set_stats(s, st);
    nl_state_set_profiler(s, prof);
    NlEvalResult r;
    NlEvalOptions eo = {.stride = stride, .scored = kl ? nl_kl_scored : NULL, .scored_ctx = kl};
    int failed = lens ? nl_lens_eval(lens, s, &eo, &r, err) : nl_eval(&s, 1, ids, n, &eo, &r, err);
    if (failed || (lens && lens_figures(lens, (size_t)c->n_layer, row, err) != 0)) goto cleanup;
    row->chars = r.count;
    row->bytes = r.bytes;  // the scored tokens' bytes: all but the first
    row->nats_per_char = r.nll_sum / (double)r.count;
    row->bits_per_char = row->nats_per_char / log(2.0);
    row->bits_per_byte = row->bytes ? row->bits_per_char * (double)r.count / (double)row->bytes : 0.0;
    row->perplexity = exp(row->nats_per_char);
    double total = 0.0, per_comp[NL_COMP_COUNT] = {0};
    for (int l = -1; l < c->n_layer; l++)
        for (int k = 0; k < NL_COMP_COUNT; k++)
            per_comp[k] += nl_profiler_cell(prof, NL_PHASE_PREFILL, l, (NlComponent)k)->seconds;
    for (int k = 0; k < NL_COMP_COUNT; k++) total += per_comp[k];
    for (int k = 0; k < NL_COMP_COUNT; k++) row->time_share[k] = total > 0 ? per_comp[k] / total : 0.0;
    static const NlComponent NORMS[] = {NL_COMP_NORM1,     NL_COMP_NORM2,     NL_COMP_NORM1_POST, NL_COMP_NORM2_POST,
                                        NL_COMP_NORM1_SUB, NL_COMP_NORM2_SUB, NL_COMP_FINAL_NORM};
    for (int k = 0; k < NL_COMP_COUNT; k++) row->in_run[k] = (unsigned char)nl_config_has_component(c, (NlComponent)k);
    for (size_t k = 0; k < sizeof NORMS / sizeof NORMS[0]; k++) row->norm_share += row->time_share[NORMS[k]];
    if (c->norm == NL_NORM_LAYERNORM) row->norm_share += row->time_share[NL_COMP_RNN_NORM];  // (else: bias adds)
    row->n_layer = c->n_layer;
    row->has_final_norm = blocks && c->recipe.final_norm && c->norm != NL_NORM_NONE;
    row->output_norms = blocks && (nl_recipe_norms(&c->recipe) & (1u << NL_NS_LN_1_POST | 1u << NL_NS_LN_2_POST)) != 0;
    for (int k = 0; k < NL_STATE_BUCKETS; k++)
        for (int cell = 0; cell < 2; cell++)
            row->state_norm[cell][k] = nl_stats_state_norm(st, c->n_layer - 1, cell, k);
    for (int l = 0; l <= c->n_layer; l++) {
        row->residual_rms[l] = nl_stats_residual_rms(st, l);
        row->residual_abs_mean[l] = nl_stats_residual_abs_mean(st, l);
        row->norm_std[l] = nl_stats_norm_std(st, l);
        if (blocks && l < c->n_layer &&
            !(nl_recipe_block(&c->recipe, l)->norms & (1u << NL_NS_LN_1 | 1u << NL_NS_LN_2)))
            row->norm_std[l] = NAN;  // no input norm in this layer's block (post-sublayer): none to measure
        if (l == c->n_layer) break;
        row->norm_post_std[l] = nl_stats_norm_post_std(st, l);
        row->branch_rms[l] = nl_stats_branch_rms(st, l);
    }
    for (int t = 0; t < 2 && invariance; t++)
        for (int k = 0; k < NL_INV_COUNT; k++)
            row->invariance[t][k] =
                nl_stats_invariance(st, t ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM, (NlInvarianceCase)k);
    row->has_outliers = outliers;
    for (int l = 0; outliers && l <= c->n_layer; l++)
        for (int k = 0; k < NL_SITE_COUNT; k++) nl_stats_outliers(st, l, (NlSite)k, &row->outliers[l][k]);
    if (attention && attention_figures(st, c, row, err) != 0) goto cleanup;
    if (attention && opts->pattern) {
        row->pattern_layer = opts->pattern_layer;
        row->pattern_head = opts->pattern_head;
    }
    rc = 0;
cleanup:
    nl_state_set_stats(s, NULL);
    nl_state_set_profiler(s, NULL);
    nl_stats_free(st);
    nl_profiler_free(prof);
    nl_lens_free(lens);
    return rc;
}

int nl_attention_sink_bos(const NlModel *model, const int *ids, size_t n, size_t stride) {
    NlTokenizerInfo ti = nl_tokenizer_info(nl_model_tokenizer(model));
    size_t T = (size_t)nl_model_config(model)->block_size;
    if (!nl_family_info(nl_model_config(model)->arch)->has_residual_stream || !ti.add_bos || ti.bos < 0 || n == 0 ||
        ids[0] != ti.bos)
        return 0;
    return nl_eval_windows(n, T, stride) > 1 ? 1 : 2;  // the windows after the first begin anywhere in the text
}

// Prefill of one window and teacher-forced decoding of the same window, timed `repeats` times.
static int measure_speed(NlState *s, const int *ids, size_t m, int repeats, NlCompareRow *row, NlError *err) {
    double *pre = malloc((size_t)repeats * sizeof *pre), *dec = malloc((size_t)repeats * sizeof *dec);
    if (!pre || !dec) {
        free(pre);
        free(dec);
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    for (int r = 0; r < repeats; r++) {
        double t0 = nl_clock_seconds();
        nl_forward(s, ids, m, 0, 1);
        pre[r] = (double)m / (nl_clock_seconds() - t0);
        nl_forward(s, ids, 1, 0, 1);
        t0 = nl_clock_seconds();
        for (size_t p = 1; p < m; p++) nl_forward(s, ids + p, 1, p, 1);
        dec[r] = m > 1 ? (double)(m - 1) / (nl_clock_seconds() - t0) : 0.0;
    }
    summarize(pre, repeats, &row->prefill_tok_s, &row->prefill_tok_s_min, &row->prefill_tok_s_max);
    summarize(dec, repeats, &row->decode_tok_s, &row->decode_tok_s_min, &row->decode_tok_s_max);
    free(pre);
    free(dec);
    return 0;
}

static double max_diff(const float *a, const float *b, size_t count) {
    double worst = 0.0;
    for (size_t i = 0; i < count; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
    return worst;
}

// Full prefill logits of one window against token-by-token decoding of it.
static double cache_consistency(NlState *s, const int *ids, size_t m, size_t V, float *full, int fault) {
    memcpy(full, nl_forward(s, ids, m, 0, m), m * V * sizeof *full);
    double worst = 0.0;
    for (size_t p = 0; p < m; p++) {
        int tok = ids[p];
        if (fault == NL_FAULT_CACHE && p == m / 2) tok = (tok + 1) % (int)V;  // tests: a wrong input
        worst = fmax(worst, max_diff(nl_forward(s, &tok, 1, p, 1), full + p * V, V));
    }
    return worst;
}

// 16 windows of the text, each scored alone and all in one batch (a state run as alone is: run, and
// its activations rounded under act).
static int batch_consistency(const NlModel *model, NlRunOptions run, NlQuant act, NlState *alone, const int *ids,
                             size_t n, size_t m, size_t V, int fault, double *out, NlError *err) {
    NlState *batch = NULL;
    int *windows = malloc(BATCH * m * sizeof *windows);
    float *together = malloc(BATCH * m * V * sizeof *together);
    run.batch = BATCH;
    int rc = -1;
    if (!windows || !together) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    if (nl_quant_state_create(&batch, model, &run, act, err) != 0) goto cleanup;
    for (size_t b = 0; b < BATCH; b++) {  // evenly spaced windows (they overlap on short texts)
        size_t start = n > m ? b * (n - m) / (BATCH - 1) : 0;
        memcpy(windows + b * m, ids + start, m * sizeof *windows);
    }
    if (fault == NL_FAULT_BATCH)
        windows[3 * m] = (windows[3 * m] + 1) % (int)V;  // tests: window 3 differs in the batch
    memcpy(together, nl_forward_batch(batch, windows, BATCH, m, 0, m), BATCH * m * V * sizeof *together);
    if (fault == NL_FAULT_BATCH) windows[3 * m] = (windows[3 * m] + (int)V - 1) % (int)V;  // scored alone as it was
    *out = 0.0;
    for (size_t b = 0; b < BATCH; b++)
        *out = fmax(*out, max_diff(nl_forward(alone, windows + b * m, m, 0, m), together + b * m * V, m * V));
    rc = 0;
cleanup:
    nl_state_free(batch);
    free(windows);
    free(together);
    return rc;
}

// A zeroed row with its per-layer arrays for L layers.
static int row_create(NlCompareRow *row, size_t L, NlError *err) {
    memset(row, 0, sizeof *row);
    double *d = calloc(10 * L + 8, sizeof *d);
    row->outliers = calloc(L + 1, sizeof *row->outliers);
    if (!d || !row->outliers) {
        free(d);
        free(row->outliers);
        row->outliers = NULL;
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    row->residual_rms = d;  // the block owns the arrays after it
    row->residual_abs_mean = d + (L + 1);
    row->norm_std = d + 2 * (L + 1);
    row->lens_bits_per_char = d + 3 * (L + 1);
    row->norm_post_std = d + 4 * (L + 1);
    row->branch_rms = d + 4 * (L + 1) + L;
    row->lens_kl_bits = d + 6 * L + 4;
    row->lens_kl_bits_stderr = d + 7 * L + 5;
    row->lens_entropy_bits = d + 8 * L + 6;
    row->lens_top1_agree = d + 9 * L + 7;
    return 0;
}

void nl_compare_row_free(NlCompareRow *row) {
    if (!row) return;
    free(row->residual_rms);
    free(row->outliers);
    row->residual_rms = row->residual_abs_mean = row->norm_std = row->lens_bits_per_char = NULL;
    row->lens_kl_bits = row->lens_kl_bits_stderr = row->lens_entropy_bits = row->lens_top1_agree = NULL;
    free(row->attention);
    free(row->attention_sink_at);
    free(row->attention_pattern);
    row->attention = NULL;
    row->attention_sink_at = NULL;
    row->attention_pattern = NULL;
    row->norm_post_std = row->branch_rms = NULL;
    row->outliers = NULL;
}

// One row; with ref (a quantized row's float32 job), its KL divergence from that row's distribution.
static int compare_one(const NlCompareJob *job, const NlCompareJob *ref, const NlCompareOptions *opts,
                       NlCompareRow *row, NlError *err) {
    const NlModel *model = job->model;
    NlRunOptions run = job->run;
    const int *ids = job->ids;
    size_t n = job->n;
    const NlConfig *trained = nl_model_config(model);
    if (row_create(row, (size_t)trained->n_layer, err) != 0) return -1;
    row->arch = trained->arch;
    row->norm = run.norm;
    row->placement = run.placement;
    row->bn_stats = run.bn_stats;
    row->swapped_norm = run.norm != trained->norm;
    row->swapped_placement = run.placement != trained->placement;
    row->quant = job->quant;
    row->quant_classes = job->quant_classes;
    row->quant_act = job->quant_act;
    row->reference = job->reference;
    row->folded = job->folded;
    row->parameters = nl_model_parameters(model);
    const NlTokenizer *tok = nl_model_tokenizer(model);
    row->bpe = nl_tokenizer_info(tok).kind != NL_TOKENIZER_CHAR;  // (a subword vocabulary: BPE or sentencepiece)
    size_t Tw = (size_t)trained->block_size;
    row->sink_bos = nl_attention_sink_bos(model, ids, n, Tw / 2 ? Tw / 2 : 1);
    row->weight_bytes = nl_model_weight_bytes(model);
    run.batch = 1;
    NlState *s = NULL;
    size_t T = nl_model_call_logits(model);  // a window, or a recurrent model's chunk
    size_t V = (size_t)trained->vocab_size, m = n < T ? n : T;
    float *full = malloc(m * V * sizeof *full);
    int rc = -1;
    if (!full) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    if (nl_quant_state_create(&s, model, &run, job->quant_act, err) != 0) goto cleanup;
    row->residual_scale = nl_recipe_scaled(&nl_state_config(s)->recipe) ? nl_state_config(s)->residual_scale : 1.0;
    row->qk_norm = nl_state_config(s)->qk_norm;
    row->swapped_qk_norm = row->qk_norm != trained->qk_norm;
    row->has_lens = opts->lens && nl_family_info(trained->arch)->has_residual_stream;
    size_t stride = trained->block_size / 2 ? (size_t)trained->block_size / 2 : 1, scored = n > 1 ? n - 1 : 0;
    NlKlRecord kl = {0};
    if (ref && scored) {  // (measure_eval's stride: the same windows, so the same positions)
        if (nl_kl_record_init(&kl, V, ids, n, NL_KL_COMPARE, err) != 0) goto kl_cleanup;
        kl.compare = 0;  // the float32 row's pass fills base, then this row's is compared with it
        if (kl_reference(ref, stride, &kl, err) != 0) goto kl_cleanup;
        kl.compare = 1;
    }
    if (measure_eval(s, nl_state_config(s), ids, n, opts, kl.compare ? &kl : NULL, row, err) != 0) goto kl_cleanup;
    if (kl.compare && kl_figures(&kl, row, err) != 0) goto kl_cleanup;
    nl_kl_record_free(&kl);
    if (measure_speed(s, ids, m, opts->repeats, row, err) != 0) goto cleanup;
    row->cache_diff = cache_consistency(s, ids, m, V, full, opts->fault);
    if (batch_consistency(model, run, job->quant_act, s, ids, n, m, V, opts->fault, &row->batch_diff, err) != 0)
        goto cleanup;
    rc = 0;
    goto cleanup;
kl_cleanup:
    nl_kl_record_free(&kl);
cleanup:
    free(full);
    nl_state_free(s);
    return rc;
}

int nl_compare_model(const NlCompareJob *job, const NlCompareOptions *opts, NlCompareRow *row, NlError *err) {
    return compare_one(job, NULL, opts, row, err);
}

// ---- several rows on worker threads

typedef struct {
    const NlCompareJob *jobs;
    size_t n_jobs, n_workers;
    const NlCompareOptions *opts;
    NlCompareRow *rows;
    int *rc;  // (n_jobs)
    NlError *errs;  // (n_jobs)
} RowsJob;

// Worker w of P measures rows w, w + P, ...
static void rows_worker(void *arg, int worker) {
    RowsJob *j = arg;
    for (size_t i = (size_t)worker; i < j->n_jobs; i += j->n_workers) {
        const NlCompareJob *job = &j->jobs[i];
        const NlCompareJob *ref =
            job->reference >= 0 && (size_t)job->reference < j->n_jobs ? &j->jobs[job->reference] : NULL;
        j->rc[i] = compare_one(job, ref, j->opts, &j->rows[i], &j->errs[i]);
    }
}

int nl_compare_models(const NlCompareJob *jobs, size_t n_jobs, int threads, const NlCompareOptions *opts,
                      NlCompareRow *rows, size_t *failed, NlError *err) {
    RowsJob j = {.jobs = jobs,
                 .n_jobs = n_jobs,
                 .n_workers = threads < 1 ? 1 : (size_t)threads,
                 .opts = opts,
                 .rows = rows,
                 .rc = calloc(n_jobs, sizeof(int)),
                 .errs = calloc(n_jobs, sizeof(NlError))};
    if (j.n_workers > n_jobs) j.n_workers = n_jobs;
    *failed = n_jobs;
    if (!j.rc || !j.errs) {
        free(j.rc);
        free(j.errs);
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        return -1;
    }
    nl_parallel_run((int)j.n_workers, rows_worker, &j);
    int rc = 0;
    for (size_t i = 0; i < n_jobs && rc == 0; i++)
        if (j.rc[i] != 0) {
            *failed = i;
            *err = j.errs[i];
            rc = -1;
        }
    free(j.rc);
    free(j.errs);
    return rc;
}
