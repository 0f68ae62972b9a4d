// report_compare.c — compare's rows as text, JSON and CSV (see report_compare.h).
#include "report_compare.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jsonout.h"
#include "report_attention.h"
#include "report_rows.h"

// A recurrent row's hidden states: the RMS of the embeddings and of each layer's h, and the last
// layer's norm of each state vector (h_t, the LSTM's c_t) over time.
static void state_text(FILE *f, const NlCompareRow *r) {
    const NlFamilyInfo *fam = nl_family_info(r->arch);
    char a[512], v[1024];
    int K = report_rows_state_buckets(r);
    report_rows_join(a, sizeof a, r->residual_rms, r->n_layer + 1, "%.3g");
    fprintf(f, "    state rms     %s (embeddings, then %s of each layer)\n", a, fam->state_names[0]);
    for (int i = 0; i < fam->state_vectors && i < 2; i++) {
        report_rows_join(v, sizeof v, r->state_norm[i], K, "%.3g");
        fprintf(f, "    |%s_t| by t    %s\n", fam->state_names[i], v);
    }
}

// The quantized rows against their float32 rows.
static int quant_text_section(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n) {
    const char *per = report_rows_per_token(rows, n);
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
        report_rows_run_as(as, sizeof as, r);
        report_rows_variant(q, sizeof q, r);
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

// The folded rows against their rows as trained: the largest log-probability difference. (No float32
// floor beside it: the row's own consistency checks read 0 since a batch and the cache run the same
// chains; the floor that judges a fold is float32 against float64, tests/fold_test.py's, docs/lab.md.)
static int fold_text_section(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n) {
    fprintf(f, "\nfolding ('normlab fold'; docs/lab.md#folding-the-norms): max |d log p| = the largest difference of\n"
               "a log-probability from the row as trained, over every position and token; an exact fold stays\n"
               "within float32 rounding of the model (docs/lab.md gives each model's against float64)\n");
    fprintf(f, "%-34s %-36s %9s %14s\n", "model", "run as", "bits/tok", "max |d log p|");
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i], *base = r->reference >= 0 ? &rows[r->reference] : NULL;
        if (!r->folded || !base) continue;
        char as[160];
        report_rows_run_as_variant(as, sizeof as, r);
        fprintf(f, "%-34s %-36s %9.4f %14.3g\n", labels[i], as, r->bits_per_char, r->max_dlogp);
    }
    return ferror(f) ? -1 : 0;
}

static void lens_text_section(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n,
                              const CompareInfo *info) {
    const char *per = report_rows_per_token(rows, n);
    fprintf(f,
            "\nlogit lens (--lens-scale %s): %s with the prediction read after layer 0 (the embeddings), 1, ...,\n"
            "L through the model's own final norm and head, each row's reading in brackets: recompute = the final\n"
            "norm on the layer's stream with its own scale (tuned-lens's logit lens), final = with the last layer's\n"
            "scale at the position (TransformerLens's apply_ln_to_stack), last affine = post and DeepNorm: the\n"
            "affine of the norm that wrote the stream off and the last norm's on (the same on the folded model),\n"
            "head = the head alone (no norm, post BatchNorm); L is the row's %s; below it, means over the\n"
            "positions: the KL divergence of each layer's distribution from the last layer's, its entropy, and\n"
            "the share of positions whose most likely token is the last layer's (no translator is trained)\n",
            info->lens_scale ? "final" : "recompute", per, per);
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i];
        char as[160], v[2048];
        report_rows_run_as_variant(as, sizeof as, r);
        if (!r->has_lens) {
            fprintf(f, "%-34s %s  - (no residual stream)\n", labels[i], as);
            continue;
        }
        report_rows_join(v, sizeof v, r->lens_bits_per_char, r->n_layer + 1, "%.3f");
        fprintf(f, "%-34s %s [%s]\n    %s\n", labels[i], as, report_rows_lens_reading(r), v);
        for (size_t k = 0; k < REPORT_N_LENS_STATS; k++) {
            if (!REPORT_LENS_STATS[k].text) continue;
            report_rows_join(v, sizeof v, report_rows_lens_stat(r, k), r->n_layer + 1, REPORT_LENS_STATS[k].fmt);
            fprintf(f, "    %s: %s\n", REPORT_LENS_STATS[k].text, v);
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
        report_rows_run_as_variant(as, sizeof as, r);
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
    int w = report_rows_run_as_width(rows, n);  // a longer label widens the column, not shifts the rest
    fprintf(f, "%-34s %-*s %9s %8s %9s %s%8s %13s %12s %7s %11s %11s\n", "model", w, "run as", "params", "MB",
            bpe ? "bits/tok" : "bits/char", bpe ? "bits/byte    tokens     bytes " : "", "ppl", "prefill tok/s",
            "decode tok/s", "norm%", "vs batch16", "vs cache");
    int swapped = 0, bn = 0;  // a row run otherwise than trained; a BatchNorm row: their legends
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i];
        char as[160];
        report_rows_run_as_variant(as, sizeof as, r);
        char per_byte[64] = "";
        if (bpe) snprintf(per_byte, sizeof per_byte, "%9.4f %9zu %9zu ", r->bits_per_byte, r->chars, r->bytes);
        fprintf(f, "%-34s %-*s %9zu %8.3f %9.4f %s%8.3f %13.0f %12.0f %6.1f%% %11.3g %11.3g\n", labels[i], w, as,
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
            report_rows_run_as_variant(as, sizeof as, r);
            fprintf(f, "%-34s %s\n", labels[i], as);
            state_text(f, r);
            continue;
        }
        report_rows_join(a, sizeof a, r->residual_rms, L + 1, "%.3g");
        report_rows_join(b, sizeof b, r->residual_abs_mean, L + 1, "%.3g");
        report_rows_join(c, sizeof c, r->norm_std, r->norm == NL_NORM_NONE ? 0 : L + r->has_final_norm, "%.3g");
        report_rows_join(d, sizeof d, r->branch_rms, L, "%.3g");
        report_rows_run_as_variant(as, sizeof as, r);
        fprintf(f, "%-34s %s", labels[i], as);
        if (r->residual_scale != 1.0) fprintf(f, ", residual scale %.4g", r->residual_scale);
        fprintf(f, "\n    residual rms  %s\n    |mean|        %s\n    branch rms    %s\n    norm out std  %s\n", a, b,
                d, r->norm == NL_NORM_NONE ? "-" : c);
        if (r->output_norms && r->norm != NL_NORM_NONE) {
            report_rows_join(c, sizeof c, r->norm_post_std, L, "%.3g");
            fprintf(f, "    post out std  %s\n", c);
        }
    }
    if (info->quantize && quant_text_section(f, rows, labels, n) != 0) return -1;
    if (info->fold && fold_text_section(f, rows, labels, n) != 0) return -1;
    if (info->lens) lens_text_section(f, rows, labels, n, info);
    if (info->outliers) outliers_text_section(f, rows, labels, n);
    if (info->attention) report_attention_text(f, rows, labels, n);
    int with_blocks = 0;  // rows whose norms see a residual stream: the invariance experiment's
    for (size_t i = 0; i < n; i++) with_blocks += nl_family_info(rows[i].arch)->has_residual_stream;
    if (info->invariance && with_blocks) {
        fprintf(f, "\ninvariance: largest |N(x') - N(x)| over every norm input of the text, with the model's gains\n"
                   "and eps (scale_2_eps0: x' = 2x with eps = 0)\n");
        fprintf(f, "%-34s %-*s %-10s", "model", w, "run as", "norm");
        for (int k = 0; k < NL_INV_COUNT; k++) fprintf(f, " %11s", nl_invariance_name((NlInvarianceCase)k));
        fputc('\n', f);
        for (size_t i = 0; i < n; i++)
            for (int t = 0; t < 2 && nl_family_info(rows[i].arch)->has_residual_stream; t++) {
                char as[160];
                report_rows_run_as_variant(as, sizeof as, &rows[i]);
                fprintf(f, "%-34s %-*s %-10s", labels[i], w, as,
                        nl_name(NL_NAMES_NORM, t ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM));
                for (int k = 0; k < NL_INV_COUNT; k++)  // a model without norms has no norm input to test: -
                    if (rows[i].norm == NL_NORM_NONE) fprintf(f, " %11s", "-");
                    else fprintf(f, " %11.3g", rows[i].invariance[t][k]);
                fputc('\n', f);
            }
    }
    return ferror(f) ? -1 : 0;
}
