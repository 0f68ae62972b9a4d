// report_compare.c — compare's rows as text, JSON and CSV (see report_compare.h).
#include "report_compare.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jsonout.h"
#include "report_attention.h"

// "layernorm*/pre": the norm and placement a row ran as, * where not as trained; BatchNorm with
// its statistics ("batchnorm:batch").
static void run_as(char *buf, size_t len, const NlCompareRow *r) {
    if (!nl_family_info(r->arch)->has_placement) {  // "lstm/none*"
        snprintf(buf, len, "%s/%s%s", nl_name(NL_NAMES_ARCH, r->arch), nl_name(NL_NAMES_NORM, r->norm),
                 r->swapped_norm ? "*" : "");
        return;
    }
    snprintf(buf, len, "%s%s%s/%s%s", nl_name(NL_NAMES_NORM, r->norm), r->swapped_norm ? "*" : "",
             r->norm == NL_NORM_BATCHNORM ? (r->bn_stats == NL_BN_BATCH ? ":batch" : ":running") : "",
             nl_name(NL_NAMES_PLACEMENT, r->placement), r->swapped_placement ? "*" : "");
    if (nl_family_info(r->arch)->qk_norm)  // "rmsnorm/pre+qk", "rmsnorm/pre-qk*"
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", r->qk_norm ? "+qk" : "-qk",
                 r->swapped_qk_norm ? "*" : "");
}

// " w:q8" / " w:q4[attn,mlp]" / " a:q8": a quantized row's rounding ([the classes] when not all the
// family's), " fold" / " fold+center" a folded row's; "" for a float32 one.
static void quant_text(char *buf, size_t len, const NlCompareRow *r) {
    unsigned all = nl_family_info(r->arch)->matrix_classes;
    char classes[64];
    buf[0] = '\0';
    if (r->quant && (r->quant_classes & all) == all) snprintf(buf, len, " w:%s", nl_quant_name(r->quant));
    else if (r->quant)
        snprintf(buf, len, " w:%s[%s]", nl_quant_name(r->quant),
                 nl_quant_classes_name(r->quant_classes, classes, sizeof classes));
    if (r->quant_act) snprintf(buf + strlen(buf), len - strlen(buf), " a:%s", nl_quant_name(r->quant_act));
    if (r->folded) snprintf(buf + strlen(buf), len - strlen(buf), " %s", r->folded == 2 ? "fold+center" : "fold");
}

// run_as with a quantized row's rounding after it ("layernorm/pre w:q8").
static void run_as_quant(char *buf, size_t len, const NlCompareRow *r) {
    char q[96];
    run_as(buf, len, r);
    quant_text(q, sizeof q, r);
    snprintf(buf + strlen(buf), len - strlen(buf), "%s", q);
}

static const char *override_name(const NlCompareRow *r) {
    if (r->swapped_norm && r->swapped_placement) return "norm+placement";
    if (r->swapped_qk_norm) return "qk_norm";
    return r->swapped_norm ? "norm" : r->swapped_placement ? "placement" : "none";
}

// "a/b/c" of count values.
static void join(char *buf, size_t len, const double *v, int count, const char *fmt) {
    buf[0] = '\0';
    for (int i = 0; i < count; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, i ? "/" : "");
        used = strlen(buf);
        snprintf(buf + used, len - used, fmt, v[i]);
    }
}

// The time buckets of a recurrent row's state norms that saw positions (a prefix of them).
static int state_buckets(const NlCompareRow *r) {
    int k = 0;
    while (k < NL_STATE_BUCKETS && !isnan(r->state_norm[0][k])) k++;
    return k;
}

// A recurrent row's hidden states: the RMS of the embeddings and of each layer's h, and the last
// layer's norm of each state vector (h_t, the LSTM's c_t) over time.
static void state_text(FILE *f, const NlCompareRow *r) {
    const NlFamilyInfo *fam = nl_family_info(r->arch);
    char a[512], v[1024];
    int K = state_buckets(r);
    join(a, sizeof a, r->residual_rms, r->n_layer + 1, "%.3g");
    fprintf(f, "    state rms     %s (embeddings, then %s of each layer)\n", a, fam->state_names[0]);
    for (int i = 0; i < fam->state_vectors && i < 2; i++) {
        join(v, sizeof v, r->state_norm[i], K, "%.3g");
        fprintf(f, "    |%s_t| by t    %s\n", fam->state_names[i], v);
    }
}

// The name of the rows' per-token figure: "bits/tok" with a BPE model among them (a row's tokens are
// then characters or BPE tokens, as the header says), else "bits/char".
static const char *per_token_name(const NlCompareRow *rows, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (rows[i].bpe) return "bits/tok";
    return "bits/char";
}

// The quantized rows against their float32 rows.
static int quant_text_section(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n) {
    const char *per = per_token_name(rows, n);
    fprintf(f,
            "\nquantization (simulated: values rounded, products still float32): w = weights, a = every linear's\n"
            "input rows; q8 = per row to 127 levels of max|x|/127, q4 = per 32 columns to 7; cost = %s\n"
            "minus the float32 row's; KL = the mean KL divergence from the float32 row's distribution, position\n"
            "by position (nats, with its standard error); same top = the positions whose most likely token is\n"
            "the float32 row's\n",
            per);
    for (size_t i = 0; i < n; i++)
        if (rows[i].quant >= NL_QUANT_F16) {  // a real type's row: the stored model itself
            fprintf(f, "(f16, bf16, q8_0, q4_0 are not simulated: the weights stored so, as 'normlab quantize' writes\n"
                       "them, and run by their own kernels; MB is their size: docs/quantization.md)\n");
            break;
        }
    fprintf(f, "%-34s %-24s %-24s %9s %9s %21s %9s\n", "model", "run as", "rounded", per, "cost", "KL", "same top");
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i];
        if (!r->quant && !r->quant_act) continue;
        char as[48], q[96];
        run_as(as, sizeof as, r);
        quant_text(q, sizeof q, r);
        long j = rows[i].reference;
        fprintf(f, "%-34s %-24s %-24s %9.4f ", labels[i], as, q + 1, r->bits_per_char);
        if (j >= 0) fprintf(f, "%+9.4f", r->bits_per_char - rows[j].bits_per_char);
        else fprintf(f, "%9s", "-");
        if (r->has_kl) {
            char kl[48];
            snprintf(kl, sizeof kl, "%.3g ± %.2g", r->kl_divergence, r->kl_divergence_stderr);
            fprintf(f, " %22s %8.2f%%\n", kl, 100 * r->same_top);  // (± is two bytes, one column)
        } else {
            fprintf(f, " %21s %9s\n", "-", "-");
        }
    }
    return ferror(f) ? -1 : 0;
}

// The folded rows against their rows as trained: the largest log-probability difference beside the
// float32 rounding the engine already shows on the row as trained (its larger consistency check).
static int fold_text_section(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n) {
    fprintf(f, "\nfolding ('normlab fold'; docs/lab.md#folding-the-norms): max |d log p| = the largest difference of\n"
               "a log-probability from the row as trained, over every position and token; float32 = that row's own\n"
               "larger consistency check (vs batch16, vs cache), the rounding any change of summation order shows\n");
    fprintf(f, "%-34s %-36s %9s %14s %11s\n", "model", "run as", "bits/tok", "max |d log p|", "float32");
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i], *base = r->reference >= 0 ? &rows[r->reference] : NULL;
        if (!r->folded || !base) continue;
        char as[160];
        run_as_quant(as, sizeof as, r);
        fprintf(f, "%-34s %-36s %9.4f %14.3g %11.3g\n", labels[i], as, r->bits_per_char, r->max_dlogp,
                base->batch_diff > base->cache_diff ? base->batch_diff : base->cache_diff);
    }
    return ferror(f) ? -1 : 0;
}

// The lens's statistics beside its bits: each an (L + 1) array of NlCompareRow at `field`.
static const struct {
    const char *text, *name, *fmt;  // text: NULL where the text report leaves it out
    size_t field;
} LENS_STATS[] = {
    {"KL(last || layer), bits", "lens_kl_bits", "%.4f", offsetof(NlCompareRow, lens_kl_bits)},
    {NULL, "lens_kl_bits_stderr", NULL, offsetof(NlCompareRow, lens_kl_bits_stderr)},
    {"entropy, bits", "lens_entropy_bits", "%.3f", offsetof(NlCompareRow, lens_entropy_bits)},
    {"top-1 as the last layer", "lens_top1_agreement", "%.3f", offsetof(NlCompareRow, lens_top1_agree)},
};
#define N_LENS_STATS (sizeof LENS_STATS / sizeof LENS_STATS[0])

static const double *lens_stat(const NlCompareRow *r, size_t k) {
    return *(double *const *)((const char *)r + LENS_STATS[k].field);
}

static void lens_text_section(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n) {
    const char *per = per_token_name(rows, n);
    fprintf(f,
            "\nlogit lens: %s with the prediction read after layer 0 (the embeddings), 1, ..., L through\n"
            "the model's own final norm and head (post, DeepNorm: the head alone; no norm: raw); L is the row's\n"
            "%s; below it the tuned lens's statistics, means over the positions: the KL divergence of each\n"
            "layer's distribution from the last layer's, its entropy, and the share of positions whose most\n"
            "likely token is the last layer's\n",
            per, per);
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i];
        char as[160], v[2048];
        run_as_quant(as, sizeof as, r);
        if (!r->has_lens) {
            fprintf(f, "%-34s %s  - (no residual stream)\n", labels[i], as);
            continue;
        }
        join(v, sizeof v, r->lens_bits_per_char, r->n_layer + 1, "%.3f");
        fprintf(f, "%-34s %s\n    %s\n", labels[i], as, v);
        for (size_t k = 0; k < N_LENS_STATS; k++) {
            if (!LENS_STATS[k].text) continue;
            join(v, sizeof v, lens_stat(r, k), r->n_layer + 1, LENS_STATS[k].fmt);
            fprintf(f, "    %s: %s\n", LENS_STATS[k].text, v);
        }
    }
}

// A share: "0" when none, else in scientific notation (1.99e-04).
static const char *share_text(char *buf, size_t cap, double share) {
    if (share == 0.0) snprintf(buf, cap, "0");
    else snprintf(buf, cap, "%.2e", share);
    return buf;
}

static void outliers_text_section(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n) {
    fprintf(
        f,
        "\noutliers per layer and place, of the float32 rows (residual: the stream entering the layer; at the\n"
        "layer after the last, leaving it; X_in: the input of linear X; RMS per position): max|x|/RMS, the share of\n"
        "|x| >= 6 and of |x| >= 6 RMS, kurtosis (3: Gaussian), the 3 channels of largest mean |x| (with it),\n"
        "and how many of them are among the 3 of largest |gain| of the norm that made or reads the rows (-: none)\n");
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i];
        char as[160];
        if (!r->has_outliers) continue;  // a quantized row: its activations are the float32 row's, rounded
        run_as_quant(as, sizeof as, r);
        fprintf(f, "%-34s %s\n", labels[i], as);
        fprintf(f, "    %5s %-8s %8s %9s %9s %9s  %-34s %s\n", "layer", "place", "max/rms", ">=6", ">=6rms", "kurtosis",
                "top channels (mean |x|)", "gains");
        for (int l = 0; l <= r->n_layer; l++)
            for (int k = 0; k < NL_SITE_COUNT; k++) {
                const NlOutlierStats *o = &r->outliers[l][k];
                if (!o->rows) continue;
                char top[96] = "", gains[8] = "-";
                for (int t = 0; t < 3 && o->top[t] >= 0; t++)
                    snprintf(top + strlen(top), sizeof top - strlen(top), "%s%d (%.3g)", t ? " " : "", o->top[t],
                             o->top_mean_abs[t]);
                if (o->has_gain) snprintf(gains, sizeof gains, "%d/3", o->gain_overlap);
                char s6[16], s6rms[16];
                fprintf(f, "    %5d %-8s %8.2f %9s %9s %9.2f  %-34s %s\n", l, nl_site_name((NlSite)k), o->max_ratio,
                        share_text(s6, sizeof s6, o->share_6), share_text(s6rms, sizeof s6rms, o->share_6rms),
                        o->kurtosis, top, gains);
            }
    }
}

int report_compare_text(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n,
                        const CompareInfo *info) {
    int bpe = 0;  // a BPE model among the rows: bits/char is per token, and bits/byte joins the table
    for (size_t i = 0; i < n; i++) bpe |= rows[i].bpe;
    if (bpe)  // each row's own counts: a BPE row scores fewer tokens and bytes (all but its first token's)
        fprintf(f,
                "normlab compare: %s (bits/tok: per token, a character or a BPE token; bits/byte: per byte of the "
                "text, the same for every model; tokens, bytes: what each row scored); rows measured %s; speeds are "
                "medians of %d run%s\n",
                info->text, info->threads > 1 ? "side by side on several threads" : "one at a time", info->repeats,
                info->repeats == 1 ? "" : "s");
    else
        fprintf(f, "normlab compare: %s (%zu characters scored); rows measured %s; speeds are medians of %d run%s\n",
                info->text, n ? rows[0].chars : 0,
                info->threads > 1 ? "side by side on several threads" : "one at a time", info->repeats,
                info->repeats == 1 ? "" : "s");
    fprintf(f, "%-34s %-24s %9s %8s %9s %s%8s %13s %12s %7s %11s %11s\n", "model", "run as", "params", "MB",
            bpe ? "bits/tok" : "bits/char", bpe ? "bits/byte    tokens     bytes " : "", "ppl", "prefill tok/s",
            "decode tok/s", "norm%", "vs batch16", "vs cache");
    int swapped = 0, bn = 0;  // a row run otherwise than trained; a BatchNorm row: their legends
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i];
        char as[160];
        run_as_quant(as, sizeof as, r);
        char per_byte[64] = "";
        if (bpe) snprintf(per_byte, sizeof per_byte, "%9.4f %9zu %9zu ", r->bits_per_byte, r->chars, r->bytes);
        fprintf(f, "%-34s %-24s %9zu %8.3f %9.4f %s%8.3f %13.0f %12.0f %6.1f%% %11.3g %11.3g\n", labels[i], as,
                r->parameters, r->weight_bytes / 1e6, r->bits_per_char, per_byte, r->perplexity, r->prefill_tok_s,
                r->decode_tok_s, 100 * r->norm_share, r->batch_diff, r->cache_diff);
        swapped |= r->swapped_norm || r->swapped_placement || r->swapped_qk_norm;
        bn |= r->norm == NL_NORM_BATCHNORM;
    }
    fprintf(f,
            "(vs batch16, vs cache: the largest |logit difference| between a sequence alone and in a batch of 16,\n"
            " and between a full prefill and KV-cache decoding; 0 means bit-identical%s%s)\n",
            swapped ? "; * run otherwise than trained" : "",
            bn ? "; batchnorm:running/:batch = BatchNorm with running or batch statistics" : "");
    fprintf(f, "\nhidden states, means over positions (docs/lab.md#hidden-states says what each line holds)\n");
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i];
        char a[512], b[512], c[512], d[512], as[160];
        int L = r->n_layer;
        if (!nl_family_info(r->arch)->has_residual_stream) {
            run_as_quant(as, sizeof as, r);
            fprintf(f, "%-34s %s\n", labels[i], as);
            state_text(f, r);
            continue;
        }
        join(a, sizeof a, r->residual_rms, L + 1, "%.3g");
        join(b, sizeof b, r->residual_abs_mean, L + 1, "%.3g");
        join(c, sizeof c, r->norm_std, r->norm == NL_NORM_NONE ? 0 : L + r->has_final_norm, "%.3g");
        join(d, sizeof d, r->branch_rms, L, "%.3g");
        run_as_quant(as, sizeof as, r);
        fprintf(f, "%-34s %s", labels[i], as);
        if (r->residual_scale != 1.0) fprintf(f, ", residual scale %.4g", r->residual_scale);
        fprintf(f, "\n    residual rms  %s\n    |mean|        %s\n    branch rms    %s\n    norm out std  %s\n", a, b,
                d, r->norm == NL_NORM_NONE ? "-" : c);
        if (r->placement == NL_PLACE_PERI && r->norm != NL_NORM_NONE) {
            join(c, sizeof c, r->norm_post_std, L, "%.3g");
            fprintf(f, "    post out std  %s\n", c);
        }
    }
    if (info->quantize && quant_text_section(f, rows, labels, n) != 0) return -1;
    if (info->fold && fold_text_section(f, rows, labels, n) != 0) return -1;
    if (info->lens) lens_text_section(f, rows, labels, n);
    if (info->outliers) outliers_text_section(f, rows, labels, n);
    if (info->attention) report_attention_text(f, rows, labels, n);
    int with_blocks = 0;  // rows whose norms see a residual stream: the invariance experiment's
    for (size_t i = 0; i < n; i++) with_blocks += nl_family_info(rows[i].arch)->has_residual_stream;
    if (info->invariance && with_blocks) {
        fprintf(f, "\ninvariance: largest |N(x') - N(x)| over every norm input of the text, with the model's gains\n"
                   "and eps (scale_2_eps0: x' = 2x with eps = 0)\n");
        fprintf(f, "%-34s %-24s %-10s", "model", "run as", "norm");
        for (int k = 0; k < NL_INV_COUNT; k++) fprintf(f, " %11s", nl_invariance_name((NlInvarianceCase)k));
        fputc('\n', f);
        for (size_t i = 0; i < n; i++)
            for (int t = 0; t < 2 && nl_family_info(rows[i].arch)->has_residual_stream; t++) {
                char as[160];
                run_as_quant(as, sizeof as, &rows[i]);
                fprintf(f, "%-34s %-24s %-10s", labels[i], as,
                        nl_name(NL_NAMES_NORM, t ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM));
                for (int k = 0; k < NL_INV_COUNT; k++)  // a model without norms has no norm input to test: -
                    if (rows[i].norm == NL_NORM_NONE) fprintf(f, " %11s", "-");
                    else fprintf(f, " %11.3g", rows[i].invariance[t][k]);
                fputc('\n', f);
            }
    }
    return ferror(f) ? -1 : 0;
}

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

static cJSON *compare_row_json(const NlCompareRow *r, const char *label, const CompareInfo *info) {
    cJSON *o = cJSON_CreateObject();
    const NlFamilyInfo *fam = nl_family_info(r->arch);
    cJSON_AddStringToObject(o, "model", label);
    cJSON_AddStringToObject(o, "arch", fam->name);
    cJSON_AddStringToObject(o, "norm", nl_name(NL_NAMES_NORM, r->norm));
    if (!fam->has_placement) cJSON_AddNullToObject(o, "placement");
    else cJSON_AddStringToObject(o, "placement", nl_name(NL_NAMES_PLACEMENT, r->placement));
    cJSON_AddStringToObject(o, "override", override_name(r));
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
    for (int k = 0; k < NL_COMP_COUNT; k++)
        if (k != NL_COMP_SAMPLING) cJSON_AddNumberToObject(share, nl_component_name((NlComponent)k), r->time_share[k]);
    cJSON_AddItemToObject(o, "residual_rms", numbers(r->residual_rms, r->n_layer + 1));
    cJSON_AddItemToObject(o, "residual_abs_mean", numbers(r->residual_abs_mean, r->n_layer + 1));
    if (fam->state_vectors) {  // the last layer's state norms over time: bucket k holds t in [2^k - 1, 2^(k+1) - 1)
        int K = state_buckets(r);
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
    if (r->placement == NL_PLACE_PERI && r->norm != NL_NORM_NONE)
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
        cJSON_AddItemToObject(o, "lens_bits_per_char", numbers(r->lens_bits_per_char, r->n_layer + 1));
        cJSON_AddItemToObject(o, "lens_bits_per_token", numbers(r->lens_bits_per_char, r->n_layer + 1));
        for (size_t k = 0; k < N_LENS_STATS; k++)
            cJSON_AddItemToObject(o, LENS_STATS[k].name, numbers(lens_stat(r, k), r->n_layer + 1));
    } else if (info->lens) {
        cJSON_AddNullToObject(o, "lens_bits_per_char");
        cJSON_AddNullToObject(o, "lens_bits_per_token");
        for (size_t k = 0; k < N_LENS_STATS; k++) cJSON_AddNullToObject(o, LENS_STATS[k].name);
    }
    if (info->outliers && r->has_outliers) cJSON_AddItemToObject(o, "outliers", outliers_json(r));
    else if (info->outliers) cJSON_AddNullToObject(o, "outliers");
    if (info->attention) report_attention_json(o, r, info->pattern);
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
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, compare_row_json(&rows[i], labels[i], info));
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
    for (int l = 0; info->lens && l <= L; l++) fprintf(f, ",lens_bits_per_char_%d", l);
    for (size_t k = 0; info->lens && k < N_LENS_STATS; k++)
        for (int l = 0; l <= L; l++) fprintf(f, ",%s_%d", LENS_STATS[k].name, l);
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
                fam->has_placement ? nl_name(NL_NAMES_PLACEMENT, r->placement) : "", override_name(r),
                r->norm == NL_NORM_BATCHNORM ? nl_name(NL_NAMES_BN_STATS, r->bn_stats) : "", r->residual_scale,
                r->parameters, r->weight_bytes);
        csv_field(f, info->text);
        fprintf(f, ",%zu,%.9g,%.9g,%.9g,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g", r->chars, r->nats_per_char,
                r->bits_per_char, r->perplexity, info->threads, info->repeats, r->prefill_tok_s, r->prefill_tok_s_min,
                r->prefill_tok_s_max, r->decode_tok_s, r->decode_tok_s_min, r->decode_tok_s_max, r->norm_share,
                r->batch_diff, r->cache_diff);
        fprintf(f, ",%s", fam->name);
        int nstd = r->norm == NL_NORM_NONE || !fam->has_residual_stream ? 0 : r->n_layer + r->has_final_norm;
        int npost = r->placement == NL_PLACE_PERI && r->norm != NL_NORM_NONE ? r->n_layer : 0;
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
        for (int l = 0; info->lens && l <= L; l++) {
            int known = r->has_lens && l <= r->n_layer;  // (apart: clang-format spaced "&& l" as "&&l")
            known ? fprintf(f, ",%.6g", r->lens_bits_per_char[l]) : fputs(",", f);
        }
        for (size_t k = 0; info->lens && k < N_LENS_STATS; k++)
            for (int l = 0; l <= L; l++)
                r->has_lens &&l <= r->n_layer ? fprintf(f, ",%.6g", lens_stat(r, k)[l]) : fputs(",", f);
        for (int l = 0; info->outliers && l <= L; l++)
            for (int k = 0; k < NL_SITE_COUNT; k++)
                outlier_csv(f, r->has_outliers && l <= r->n_layer ? &r->outliers[l][k] : NULL);
        if (info->attention) report_attention_csv_row(f, r, LA, H);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}
