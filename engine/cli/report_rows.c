// report_rows.c — what compare's text, JSON and CSV writers share (see report_rows.h).
#include "report_rows.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

// "layernorm*/pre": the norm and placement a row ran as, * where not as trained; BatchNorm with
// its statistics ("batchnorm:batch").
void report_rows_run_as(char *buf, size_t len, const NlCompareRow *r) {
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
void report_rows_variant(char *buf, size_t len, const NlCompareRow *r) {
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
void report_rows_run_as_variant(char *buf, size_t len, const NlCompareRow *r) {
    char q[96];
    report_rows_run_as(buf, len, r);
    report_rows_variant(q, sizeof q, r);
    snprintf(buf + strlen(buf), len - strlen(buf), "%s", q);
}

const char *report_rows_override(const NlCompareRow *r) {
    if (r->swapped_norm && r->swapped_placement) return "norm+placement";
    if (r->swapped_qk_norm) return "qk_norm";
    return r->swapped_norm ? "norm" : r->swapped_placement ? "placement" : "none";
}

// "a/b/c" of count values.
void report_rows_join(char *buf, size_t len, const double *v, int count, const char *fmt) {
    buf[0] = '\0';
    for (int i = 0; i < count; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, i ? "/" : "");
        used = strlen(buf);
        if (isnan(v[i])) snprintf(buf + used, len - used, "-");  // none measured (a layer without such a norm)
        else snprintf(buf + used, len - used, fmt, v[i]);
    }
}

// The time buckets of a recurrent row's state norms that saw positions (a prefix of them).
int report_rows_state_buckets(const NlCompareRow *r) {
    int k = 0;
    while (k < NL_STATE_BUCKETS && !isnan(r->state_norm[0][k])) k++;
    return k;
}

// The name of the rows' per-token figure: "bits/tok" with a BPE model among them (a row's tokens are
// then characters or BPE tokens, as the header says), else "bits/char".
const char *report_rows_per_token(const NlCompareRow *rows, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (rows[i].bpe) return "bits/tok";
    return "bits/char";
}

// The lens's statistics beside its bits: each an (L + 1) array of NlCompareRow at `field`.
const ReportLensStat REPORT_LENS_STATS[] = {
    {"KL(last || layer), bits", "lens_kl_bits", "%.4f", offsetof(NlCompareRow, lens_kl_bits)},
    {NULL, "lens_kl_bits_stderr", NULL, offsetof(NlCompareRow, lens_kl_bits_stderr)},
    {"entropy, bits", "lens_entropy_bits", "%.3f", offsetof(NlCompareRow, lens_entropy_bits)},
    {"top-1 as the last layer", "lens_top1_agreement", "%.3f", offsetof(NlCompareRow, lens_top1_agree)},
};
const size_t REPORT_N_LENS_STATS = sizeof REPORT_LENS_STATS / sizeof REPORT_LENS_STATS[0];

const double *report_rows_lens_stat(const NlCompareRow *r, size_t k) {
    return *(double *const *)((const char *)r + REPORT_LENS_STATS[k].field);
}

int report_rows_run_as_width(const NlCompareRow *rows, size_t n) {
    int width = 24;
    for (size_t i = 0; i < n; i++) {
        char as[160];
        report_rows_run_as_variant(as, sizeof as, &rows[i]);
        width = (int)strlen(as) > width ? (int)strlen(as) : width;
    }
    return width;
}

const char *report_rows_lens_reading(const NlCompareRow *r) { return r->lens_reading ? r->lens_reading : "-"; }
