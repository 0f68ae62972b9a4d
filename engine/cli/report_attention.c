// report_attention.c — the attention statistics of compare's rows (see report_attention.h).
#include "report_attention.h"

#include <math.h>
#include <stddef.h>

#include "report_rows.h"

static cJSON *new_array_in(cJSON *array) {
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(array, a);
    return a;
}

// The four statistics of NlAttentionStats, in the order every output gives them.
static const struct {
    const char *name, *fmt;
    size_t field;
} STATS[] = {
    {"entropy_bits", "%.3f", offsetof(NlAttentionStats, entropy_bits)},
    {"sink", "%.3f", offsetof(NlAttentionStats, sink)},
    {"self", "%.3f", offsetof(NlAttentionStats, self)},
    {"distance", "%.2f", offsetof(NlAttentionStats, distance)},
};
#define N_STATS (sizeof STATS / sizeof STATS[0])

static double stat(const NlCompareRow *r, int l, int h, size_t k) {
    return *(const double *)((const char *)&r->attention[(size_t)l * (size_t)r->n_head + (size_t)h] + STATS[k].field);
}

void report_attention_text(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n) {
    fprintf(f, "\nattention per layer and head, means over every query of eval's windows: the entropy of the\n"
               "distribution over the keys (bits) and the distance attended (positions back); over the queries\n"
               "past each window's first (whose only key is itself: both shares 1), the share on the window's\n"
               "first position (sink) and on the query's own (self), beside uniform attention's on both\n");
    for (size_t i = 0; i < n; i++) {
        const NlCompareRow *r = &rows[i];
        char as[160];
        report_rows_run_as_variant(as, sizeof as, r);
        if (!r->has_attention) {
            fprintf(f, "%-34s %s  - (no attention)\n", labels[i], as);
            continue;
        }
        const NlAttentionStats *a0 = &r->attention[0];
        fprintf(f, "%-34s %s, %llu queries a head (sink, self: %llu; uniform %.3f)\n", labels[i], as,
                (unsigned long long)a0->queries, (unsigned long long)a0->queries_past_first, a0->uniform);
        if (r->sink_bos)
            fprintf(f, "    sink: %s\n",
                    r->sink_bos == 2 ? "BOS in every window"
                                     : "BOS in the first window only; later windows begin "
                                       "anywhere in the text, their sink is an arbitrary token");
        for (int l = 0; l < r->n_layer; l++)
            for (size_t k = 0; k < N_STATS; k++) {
                if (k == 0) fprintf(f, "    layer %-3d %-13s", l, STATS[k].name);
                else fprintf(f, "    %-9s %-13s", "", STATS[k].name);
                for (int h = 0; h < r->n_head; h++) {
                    fputc(h ? '/' : ' ', f);
                    fprintf(f, STATS[k].fmt, stat(r, l, h, k));
                }
                fputc('\n', f);
            }
        if (r->attention_pattern)
            fprintf(f, "    pattern of head %d.%d: %zu queries of the first window (JSON, --plot-dir)\n",
                    r->pattern_layer, r->pattern_head, r->pattern_rows);
    }
}

static cJSON *per_layer_head(const NlCompareRow *r, size_t k) {
    cJSON *layers = cJSON_CreateArray();
    for (int l = 0; l < r->n_layer; l++) {
        cJSON *heads = new_array_in(layers);
        for (int h = 0; h < r->n_head; h++) cJSON_AddItemToArray(heads, cJSON_CreateNumber(stat(r, l, h, k)));
    }
    return layers;
}

// (L, H, T) the sink share by query position; null where no query was at a position.
static cJSON *sink_by_position(const NlCompareRow *r) {
    cJSON *layers = cJSON_CreateArray();
    for (int l = 0; l < r->n_layer; l++) {
        cJSON *heads = new_array_in(layers);
        for (int h = 0; h < r->n_head; h++) {
            cJSON *at = new_array_in(heads);
            const double *v = r->attention_sink_at + ((size_t)l * (size_t)r->n_head + (size_t)h) * r->window;
            for (size_t t = 0; t < r->window; t++)
                cJSON_AddItemToArray(at, isfinite(v[t]) ? cJSON_CreateNumber(v[t]) : cJSON_CreateNull());
        }
    }
    return layers;
}

void report_attention_json(cJSON *o, const NlCompareRow *r, int pattern, const NlCompareJob *job) {
    if (pattern && !r->attention_pattern) cJSON_AddNullToObject(o, "attention_pattern");
    if (!r->has_attention) {
        cJSON_AddNullToObject(o, "attention");
        return;
    }
    cJSON *a = cJSON_AddObjectToObject(o, "attention");
    cJSON_AddNumberToObject(a, "queries", (double)r->attention[0].queries);
    cJSON_AddNumberToObject(a, "queries_past_first", (double)r->attention[0].queries_past_first);
    cJSON_AddNumberToObject(a, "uniform", r->attention[0].uniform);  // sink and self of uniform attention
    cJSON_AddStringToObject(a, "sink_token", r->sink_bos == 2 ? "bos" : r->sink_bos ? "bos_first_window" : "text");
    for (size_t k = 0; k < N_STATS; k++) cJSON_AddItemToObject(a, STATS[k].name, per_layer_head(r, k));
    cJSON_AddItemToObject(a, "sink_by_position", sink_by_position(r));
    if (!r->attention_pattern) return;
    cJSON *p = cJSON_AddObjectToObject(o, "attention_pattern");
    cJSON_AddNumberToObject(p, "layer", r->pattern_layer);
    cJSON_AddNumberToObject(p, "head", r->pattern_head);
    if (job && job->n >= r->pattern_rows) {  // the first window's tokens: the text's first pattern_rows
        cJSON *pieces = cJSON_AddArrayToObject(p, "pieces");
        for (size_t i = 0; i < r->pattern_rows; i++) {
            size_t len;
            const char *b = nl_tokenizer_bytes(nl_model_tokenizer(job->model), job->ids[i], &len);
            cJSON_AddItemToArray(pieces, cJSON_CreateString(b ? b : ""));
        }
    }
    cJSON *rows = cJSON_AddArrayToObject(p, "probabilities");  // row i: query i over keys 0..rows-1
    for (size_t i = 0; i < r->pattern_rows; i++) {
        cJSON *row = new_array_in(rows);
        for (size_t j = 0; j < r->pattern_rows; j++)
            cJSON_AddItemToArray(row, cJSON_CreateNumber(r->attention_pattern[i * r->pattern_rows + j]));
    }
}

void report_attention_csv_header(FILE *f, int L, int H) {
    fputs(",attention_uniform", f);
    for (size_t k = 0; k < N_STATS; k++)
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) fprintf(f, ",attention_%s_%d_%d", STATS[k].name, l, h);
}

void report_attention_csv_row(FILE *f, const NlCompareRow *r, int L, int H) {
    r->has_attention ? fprintf(f, ",%.6g", r->attention[0].uniform) : fputs(",", f);
    for (size_t k = 0; k < N_STATS; k++)
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) {
                int known = r->has_attention && l < r->n_layer && h < r->n_head;
                known ? fprintf(f, ",%.6g", stat(r, l, h, k)) : fputs(",", f);
            }
}
