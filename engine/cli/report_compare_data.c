// report_compare_data.c — compare's rows as JSON and CSV (see report_compare.h).
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jsonout.h"
#include "report_attention.h"
#include "report_compare.h"
#include "report_rows.h"

static cJSON *numbers(const double *v, int count) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < count; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *ints(const int *v, int count) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < count && v[i] >= 0; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static void quant_json(cJSON *o, const NlCompareRow *r) {
    cJSON_AddStringToObject(o, "quantize", nl_quant_name(r->quant));
    cJSON *classes = cJSON_AddArrayToObject(o, "quantized");
    for (unsigned bit = 1; bit <= NL_MATRIX_RECURRENT; bit <<= 1) {
        char name[16];
        if (r->quant_classes & bit)
            cJSON_AddItemToArray(classes, cJSON_CreateString(nl_quant_classes_name(bit, name, sizeof name)));
    }
    cJSON_AddStringToObject(o, "quantize_act", nl_quant_name(r->quant_act));
    if (r->has_kl) {
        cJSON_AddNumberToObject(o, "kl_divergence", r->kl_divergence);
        cJSON_AddNumberToObject(o, "kl_divergence_stderr", r->kl_divergence_stderr);
        cJSON_AddNumberToObject(o, "same_top", r->same_top);
    }
}

// The places seen, layer by layer: [{layer, site, rows, max_ratio, ...}].
static cJSON *outliers_json(const NlCompareRow *r) {
    cJSON *a = cJSON_CreateArray();
    for (int l = 0; l <= r->n_layer; l++)
        for (int k = 0; k < NL_SITE_COUNT; k++) {
            const NlOutlierStats *s = &r->outliers[l][k];
            if (!s->rows) continue;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "layer", l);
            cJSON_AddStringToObject(e, "site", nl_site_name((NlSite)k));
            cJSON_AddNumberToObject(e, "rows", (double)s->rows);
            cJSON_AddNumberToObject(e, "max_abs_over_rms", s->max_ratio);
            cJSON_AddNumberToObject(e, "max_abs", s->max_abs);
            cJSON_AddNumberToObject(e, "max_abs_over_mean_abs", s->max_over_mean_abs);
            cJSON_AddNumberToObject(e, "max_channel", s->max_channel);
            cJSON_AddNumberToObject(e, "max_position", (double)s->max_position);
            cJSON_AddNumberToObject(e, "share_abs_ge_6", s->share_6);
            cJSON_AddNumberToObject(e, "share_abs_ge_6rms", s->share_6rms);
            if (isfinite(s->kurtosis)) cJSON_AddNumberToObject(e, "kurtosis", s->kurtosis);
            else cJSON_AddNullToObject(e, "kurtosis");
            cJSON_AddItemToObject(e, "top_channels", ints(s->top, 3));
            cJSON_AddItemToObject(e, "top_mean_abs",
                                  numbers(s->top_mean_abs, s->top[2] >= 0   ? 3
                                                           : s->top[1] >= 0 ? 2
                                                                            : 1));
            if (s->has_gain) {
                cJSON_AddItemToObject(e, "gain_top_channels", ints(s->gain_top, 3));
                cJSON_AddNumberToObject(e, "gain_overlap", s->gain_overlap);
            }
            cJSON_AddItemToArray(a, e);
        }
    return a;
}

static cJSON *compare_row_json(const NlCompareRow *r, const char *label, const CompareInfo *info,
                               const NlCompareJob *job) {
    cJSON *o = cJSON_CreateObject();
    const NlFamilyInfo *fam = nl_family_info(r->arch);
    cJSON_AddStringToObject(o, "model", label);
    cJSON_AddStringToObject(o, "arch", fam->name);
    cJSON_AddStringToObject(o, "norm", nl_name(NL_NAMES_NORM, r->norm));
    if (!fam->has_placement) cJSON_AddNullToObject(o, "placement");
    else cJSON_AddStringToObject(o, "placement", nl_name(NL_NAMES_PLACEMENT, r->placement));
    cJSON_AddStringToObject(o, "override", report_rows_override(r));
    if (r->norm == NL_NORM_BATCHNORM) cJSON_AddStringToObject(o, "bn_stats", nl_name(NL_NAMES_BN_STATS, r->bn_stats));
    if (fam->qk_norm) cJSON_AddBoolToObject(o, "qk_norm", r->qk_norm);  // the table's "+qk" / "-qk"
    cJSON_AddNumberToObject(o, "residual_scale", r->residual_scale);
    cJSON_AddNumberToObject(o, "parameters", (double)r->parameters);
    cJSON_AddNumberToObject(o, "weight_bytes", (double)r->weight_bytes);
    cJSON_AddStringToObject(o, "text", info->text);
    cJSON_AddNumberToObject(o, "chars", (double)r->chars);
    cJSON_AddNumberToObject(o, "nats_per_char", r->nats_per_char);
    cJSON_AddNumberToObject(o, "bits_per_char", r->bits_per_char);  // per token (kept: a BPE row's too)
    cJSON_AddStringToObject(o, "tokenizer", r->bpe ? "bpe" : "char");
    // The keys that hold for either kind, as eval's JSON has them: the unit, and the same figures per token.
    cJSON_AddStringToObject(o, "unit", r->bpe ? "token" : "char");
    cJSON_AddNumberToObject(o, "tokens", (double)r->chars);
    cJSON_AddNumberToObject(o, "nats_per_token", r->nats_per_char);
    cJSON_AddNumberToObject(o, "bits_per_token", r->bits_per_char);
    cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
    cJSON_AddNumberToObject(o, "bits_per_byte", r->bits_per_byte);
    cJSON_AddNumberToObject(o, "perplexity", r->perplexity);
    cJSON_AddNumberToObject(o, "threads", info->threads);
    cJSON_AddNumberToObject(o, "repeats", info->repeats);
    cJSON_AddNumberToObject(o, "prefill_tok_s", r->prefill_tok_s);
    cJSON_AddNumberToObject(o, "prefill_tok_s_min", r->prefill_tok_s_min);
    cJSON_AddNumberToObject(o, "prefill_tok_s_max", r->prefill_tok_s_max);
    cJSON_AddNumberToObject(o, "decode_tok_s", r->decode_tok_s);
    cJSON_AddNumberToObject(o, "decode_tok_s_min", r->decode_tok_s_min);
    cJSON_AddNumberToObject(o, "decode_tok_s_max", r->decode_tok_s_max);
    cJSON_AddNumberToObject(o, "norm_time_share", r->norm_share);
    cJSON *share = cJSON_AddObjectToObject(o, "time_share");
    for (int k = 0; k < NL_COMP_COUNT; k++)  // every component, but the inner norms where the run has none
        if (k != NL_COMP_SAMPLING && (r->in_run[k] || (k != NL_COMP_NORM1_SUB && k != NL_COMP_NORM2_SUB)))
            cJSON_AddNumberToObject(share, nl_component_name((NlComponent)k), r->time_share[k]);
    cJSON_AddItemToObject(o, "residual_rms", numbers(r->residual_rms, r->n_layer + 1));
    cJSON_AddItemToObject(o, "residual_abs_mean", numbers(r->residual_abs_mean, r->n_layer + 1));
    if (fam->state_vectors) {  // the last layer's state norms over time: bucket k holds t in [2^k - 1, 2^(k+1) - 1)
        int K = report_rows_state_buckets(r);
        double starts[NL_STATE_BUCKETS];
        for (int k = 0; k < K; k++) starts[k] = (double)((1ull << k) - 1);
        cJSON_AddItemToObject(o, "state_bucket_start", numbers(starts, K));
        for (int i = 0; i < fam->state_vectors && i < 2; i++) {
            char key[32];
            snprintf(key, sizeof key, "state_norm_%s", fam->state_names[i]);
            cJSON_AddItemToObject(o, key, numbers(r->state_norm[i], K));
        }
    }
    int blocks = fam->has_residual_stream;
    cJSON_AddItemToObject(o, "branch_rms", numbers(r->branch_rms, blocks ? r->n_layer : 0));
    cJSON_AddItemToObject(
        o, "norm_std", numbers(r->norm_std, r->norm == NL_NORM_NONE || !blocks ? 0 : r->n_layer + r->has_final_norm));
    if (r->output_norms && r->norm != NL_NORM_NONE)
        cJSON_AddItemToObject(o, "norm_post_std", numbers(r->norm_post_std, r->n_layer));
    cJSON_AddNumberToObject(o, "batch16_max_logit_diff", r->batch_diff);
    cJSON_AddNumberToObject(o, "cache_max_logit_diff", r->cache_diff);
    if (info->quantize) quant_json(o, r);
    if (info->fold) {
        cJSON_AddStringToObject(o, "folded", r->folded == 2 ? "fold+center" : r->folded ? "fold" : "none");
        if (r->folded && r->has_kl) {
            cJSON_AddNumberToObject(o, "fold_max_dlogp", r->max_dlogp);
            cJSON_AddNumberToObject(o, "fold_kl_divergence", r->kl_divergence);
        }
    }
    if (info->lens && r->has_lens) {  // per token, as bits_per_char; lens_bits_per_token says so by name
        cJSON_AddStringToObject(o, "lens_reading", report_rows_lens_reading(r));
        cJSON_AddItemToObject(o, "lens_bits_per_char", numbers(r->lens_bits_per_char, r->n_layer + 1));
        cJSON_AddItemToObject(o, "lens_bits_per_token", numbers(r->lens_bits_per_char, r->n_layer + 1));
        for (size_t k = 0; k < REPORT_N_LENS_STATS; k++)
            cJSON_AddItemToObject(o, REPORT_LENS_STATS[k].name, numbers(report_rows_lens_stat(r, k), r->n_layer + 1));
    } else if (info->lens) {
        cJSON_AddNullToObject(o, "lens_reading");
        cJSON_AddNullToObject(o, "lens_bits_per_char");
        cJSON_AddNullToObject(o, "lens_bits_per_token");
        for (size_t k = 0; k < REPORT_N_LENS_STATS; k++) cJSON_AddNullToObject(o, REPORT_LENS_STATS[k].name);
    }
    if (info->outliers && r->has_outliers) cJSON_AddItemToObject(o, "outliers", outliers_json(r));
    else if (info->outliers) cJSON_AddNullToObject(o, "outliers");
    if (info->attention) report_attention_json(o, r, info->pattern, job);
    if (info->invariance && blocks) {
        cJSON *inv = cJSON_AddObjectToObject(o, "invariance");
        for (int t = 0; t < 2; t++) {
            cJSON *per = cJSON_AddObjectToObject(inv, nl_name(NL_NAMES_NORM, t ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM));
            for (int k = 0; k < NL_INV_COUNT; k++)
                cJSON_AddNumberToObject(per, nl_invariance_name((NlInvarianceCase)k), r->invariance[t][k]);
        }
    }
    return o;
}

int report_compare_json(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n,
                        const CompareInfo *info) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, compare_row_json(&rows[i], labels[i], info, info->jobs ? &info->jobs[i] : NULL));
    char *text = nl_jsonx_print(a, 1);
    int rc = text && fputs(text, f) != EOF && fputc('\n', f) != EOF ? 0 : -1;
    free(text);
    cJSON_Delete(a);
    return rc || ferror(f) ? -1 : 0;
}

// CSV field: quoted when it holds a comma, quote or newline.
static void csv_field(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static const char *const OUTLIER_CSV[] = {"max_abs_over_rms", "share_abs_ge_6", "share_abs_ge_6rms",
                                          "kurtosis",         "top_channel",    "gain_overlap"};
#define N_OUTLIER_CSV (int)(sizeof OUTLIER_CSV / sizeof OUTLIER_CSV[0])

// One place's OUTLIER_CSV fields, empty where it saw nothing (s NULL or no rows) or has no gain.
static void outlier_csv(FILE *f, const NlOutlierStats *s) {
    if (!s || !s->rows) {
        for (int c = 0; c < N_OUTLIER_CSV; c++) fputc(',', f);
        return;
    }
    fprintf(f, ",%.6g,%.6g,%.6g,", s->max_ratio, s->share_6, s->share_6rms);
    if (isfinite(s->kurtosis)) fprintf(f, "%.6g", s->kurtosis);
    fprintf(f, ",%d,", s->top[0]);
    if (s->has_gain) fprintf(f, "%d", s->gain_overlap);
}

static void quant_csv(FILE *f, const NlCompareRow *rows, size_t i) {
    const NlCompareRow *r = &rows[i];
    char classes[64];
    long j = rows[i].reference;
    nl_quant_classes_name(r->quant_classes, classes, sizeof classes);
    for (char *c = classes; *c; c++) *c = *c == ',' ? ' ' : *c;  // one CSV field
    fprintf(f, ",%s,%s,%s,", nl_quant_name(r->quant), classes, nl_quant_name(r->quant_act));
    if (j >= 0 && (r->quant || r->quant_act)) fprintf(f, "%.9g", r->bits_per_char - rows[j].bits_per_char);
    if (r->has_kl) fprintf(f, ",%.9g,%.9g,%.9g", r->kl_divergence, r->kl_divergence_stderr, r->same_top);
    else fputs(",,,", f);
}

int report_compare_csv(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n,
                       const CompareInfo *info) {
    int L = 0, LA = 0, H = 0;  // LA, H: the most layers and heads of a row with attention
    for (size_t i = 0; i < n; i++) L = rows[i].n_layer > L ? rows[i].n_layer : L;
    for (size_t i = 0; i < n; i++)
        if (rows[i].has_attention) {
            LA = rows[i].n_layer > LA ? rows[i].n_layer : LA;
            H = rows[i].n_head > H ? rows[i].n_head : H;
        }
    fputs("model,norm,placement,override,bn_stats,residual_scale,parameters,weight_bytes,text,chars,nats_per_char,bits_"
          "per_char,perplexity,"
          "threads,repeats,"
          "prefill_tok_s,prefill_tok_s_min,prefill_tok_s_max,decode_tok_s,decode_tok_s_min,decode_tok_s_max,"
          "norm_time_share,batch16_max_logit_diff,cache_max_logit_diff,arch",
          f);
    for (int l = 0; l <= L; l++) fprintf(f, ",residual_rms_%d", l);
    for (int l = 0; l <= L; l++) fprintf(f, ",residual_abs_mean_%d", l);
    for (int l = 0; l < L; l++) fprintf(f, ",branch_rms_%d", l);
    for (int l = 0; l <= L; l++) fprintf(f, ",norm_std_%d", l);
    for (int l = 0; l < L; l++) fprintf(f, ",norm_post_std_%d", l);
    if (info->invariance)
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < NL_INV_COUNT; k++)
                fprintf(f, ",invariance_%s_%s", nl_name(NL_NAMES_NORM, t ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM),
                        nl_invariance_name((NlInvarianceCase)k));
    if (info->quantize)
        fputs(",quantize,quantized,quantize_act,bits_per_char_cost,kl_divergence,kl_divergence_stderr,same_top", f);
    if (info->fold) fputs(",folded,fold_max_dlogp", f);
    if (info->lens) fputs(",lens_reading", f);
    for (int l = 0; info->lens && l <= L; l++) fprintf(f, ",lens_bits_per_char_%d", l);
    for (size_t k = 0; info->lens && k < REPORT_N_LENS_STATS; k++)
        for (int l = 0; l <= L; l++) fprintf(f, ",%s_%d", REPORT_LENS_STATS[k].name, l);
    for (int l = 0; info->outliers && l <= L; l++)
        for (int k = 0; k < NL_SITE_COUNT; k++)
            for (int c = 0; c < N_OUTLIER_CSV; c++)
                fprintf(f, ",outlier_%d_%s_%s", l, nl_site_name((NlSite)k), OUTLIER_CSV[c]);
    if (info->attention) report_attention_csv_header(f, LA, H);
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i];
        csv_field(f, labels[i]);
        const NlFamilyInfo *fam = nl_family_info(r->arch);
        fprintf(f, ",%s,%s,%s,%s,%.6g,%zu,%zu,", nl_name(NL_NAMES_NORM, r->norm),
                fam->has_placement ? nl_name(NL_NAMES_PLACEMENT, r->placement) : "", report_rows_override(r),
                r->norm == NL_NORM_BATCHNORM ? nl_name(NL_NAMES_BN_STATS, r->bn_stats) : "", r->residual_scale,
                r->parameters, r->weight_bytes);
        csv_field(f, info->text);
        fprintf(f, ",%zu,%.9g,%.9g,%.9g,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g", r->chars, r->nats_per_char,
                r->bits_per_char, r->perplexity, info->threads, info->repeats, r->prefill_tok_s, r->prefill_tok_s_min,
                r->prefill_tok_s_max, r->decode_tok_s, r->decode_tok_s_min, r->decode_tok_s_max, r->norm_share,
                r->batch_diff, r->cache_diff);
        fprintf(f, ",%s", fam->name);
        int nstd = r->norm == NL_NORM_NONE || !fam->has_residual_stream ? 0 : r->n_layer + r->has_final_norm;
        int npost = r->output_norms && r->norm != NL_NORM_NONE ? r->n_layer : 0;
        for (int l = 0; l <= L; l++) l <= r->n_layer ? fprintf(f, ",%.6g", r->residual_rms[l]) : fputs(",", f);
        for (int l = 0; l <= L; l++) l <= r->n_layer ? fprintf(f, ",%.6g", r->residual_abs_mean[l]) : fputs(",", f);
        for (int l = 0; l < L; l++)
            l < r->n_layer && fam->has_residual_stream ? fprintf(f, ",%.6g", r->branch_rms[l]) : fputs(",", f);
        for (int l = 0; l <= L; l++) l < nstd ? fprintf(f, ",%.6g", r->norm_std[l]) : fputs(",", f);
        for (int l = 0; l < L; l++) l < npost ? fprintf(f, ",%.6g", r->norm_post_std[l]) : fputs(",", f);
        if (info->invariance)
            for (int t = 0; t < 2; t++)
                for (int k = 0; k < NL_INV_COUNT; k++)
                    fam->has_residual_stream ? fprintf(f, ",%.6g", r->invariance[t][k]) : fputs(",", f);
        if (info->quantize) quant_csv(f, rows, i);
        if (info->fold) {
            fprintf(f, ",%s,", r->folded == 2 ? "fold+center" : r->folded ? "fold" : "none");
            if (r->folded && r->has_kl) fprintf(f, "%.9g", r->max_dlogp);
        }
        if (info->lens) fprintf(f, ",%s", r->has_lens ? report_rows_lens_reading(r) : "");
        for (int l = 0; info->lens && l <= L; l++) {
            int known = r->has_lens && l <= r->n_layer;  // (apart: clang-format spaced "&& l" as "&&l")
            known ? fprintf(f, ",%.6g", r->lens_bits_per_char[l]) : fputs(",", f);
        }
        for (size_t k = 0; info->lens && k < REPORT_N_LENS_STATS; k++)
            for (int l = 0; l <= L; l++)
                r->has_lens &&l <= r->n_layer ? fprintf(f, ",%.6g", report_rows_lens_stat(r, k)[l]) : fputs(",", f);
        for (int l = 0; info->outliers && l <= L; l++)
            for (int k = 0; k < NL_SITE_COUNT; k++)
                outlier_csv(f, r->has_outliers && l <= r->n_layer ? &r->outliers[l][k] : NULL);
        if (info->attention) report_attention_csv_row(f, r, LA, H);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}
