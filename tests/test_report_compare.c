// test_report_compare.c — compare's reports (engine/cli/report_compare.c, report_compare_data.c,
// report_attention.c, report_rows.c) on rows measured from a fixture: the JSON carries every field,
// the text and CSV name them, each section labels a row with what it ran (fold, w:q8, ...), and a
// long label widens its column instead of shifting the ones after it.
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "normlab_lab.h"
#include "ref_forward.h"
#include "report_compare.h"

static const int TEXT[] = {2, 3, 1,  3, 2, 4, 1, 5, 2, 3, 6, 1, 7, 2, 8, 3,
                           0, 9, 10, 2, 3, 1, 4, 5, 6, 7, 8, 9, 2, 2, 3};
#define N_TEXT (sizeof TEXT / sizeof TEXT[0])

// One row of m as trained; a quantized one (quant, the classes it rounded) against rows[reference].
static int quantized_row(const NlModel *m, NlQuant quant, unsigned classes, int reference, NlCompareRow *row) {
    const NlConfig *c = nl_model_config(m);
    NlCompareOptions o = {.repeats = 1, .lens = 1, .outliers = 1, .attention = 1};
    NlRunOptions run = {.norm = c->norm, .placement = c->placement, .batch = 1, .threads = 1};
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

static int compare_row(const NlModel *m, NlCompareRow *row) { return quantized_row(m, NL_QUANT_NONE, 0, -1, row); }

// A report written by fn into a new string (free it).
static char *written(int (*fn)(FILE *, const NlCompareRow *, const char *const *, size_t, const CompareInfo *),
                     const NlCompareRow *rows, const char *const *labels, size_t n, const CompareInfo *info) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    CHECK(fn(f, rows, labels, n, info) == 0, "written");
    fclose(f);
    return buf;
}

// The JSON rows carry the new fields, and the text and CSV name them.
static void reports_carry_lens_outliers_and_quantization(void) {
    NlModel *m = load_fixture("ln-pre-bias.json");
    NlCompareRow *rows = calloc(2, sizeof *rows);
    NlError err;
    NlModel *mq = NULL;
    unsigned rounded = 0;
    if (!m || !rows || nl_model_copy(&mq, m, &err) != 0 || nl_quantize_model(mq, NL_QUANT_Q8, 0, &rounded, &err) != 0 ||
        compare_row(m, &rows[0]) || quantized_row(mq, NL_QUANT_Q8, rounded, 0, &rows[1])) {
        CHECK(0, "rows");
        goto done;
    }
    const char *labels[2] = {"a", "a"};
    CompareInfo info = {
        .text = "text", .threads = 1, .repeats = 1, .invariance = 0, .quantize = 1, .lens = 1, .outliers = 1};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(report_compare_json(f, rows, labels, 2, &info) == 0, "written");
    fclose(f);
    cJSON *a = cJSON_Parse(buf);
    cJSON *r1 = cJSON_GetArrayItem(a, 1), *lens = cJSON_GetObjectItem(r1, "lens_bits_per_char");
    cJSON *out = cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "outliers");
    CHECK(cJSON_GetArraySize(lens) == 3 && cJSON_GetArrayItem(lens, 2)->valuedouble == rows[1].bits_per_char,
          "lens: L + 1 values, the last the row's bits/char");
    CHECK(cJSON_GetArraySize(out) == 12, "outliers: 5 places x 2 layers + the stream out + the head");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(r1, "outliers")), "none for a quantized row");
    CHECK(strcmp(cJSON_GetObjectItem(r1, "quantize")->valuestring, "q8") == 0, "quantize q8");
    free(buf);
    cJSON_Delete(a);
    buf = NULL;
    f = open_memstream(&buf, &len);
    CHECK(report_compare_text(f, rows, labels, 2, &info) == 0, "text written");
    fclose(f);
    char cost[64];
    snprintf(cost, sizeof cost, "%+9.4f", rows[1].bits_per_char - rows[0].bits_per_char);
    CHECK(strstr(buf, "logit lens") && strstr(buf, "outliers per layer") && strstr(buf, "w:q8") && strstr(buf, cost),
          "text: the three sections and the cost %s", cost);
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    CHECK(report_compare_csv(f, rows, labels, 2, &info) == 0, "csv written");
    fclose(f);
    CHECK(strstr(buf, ",lens_bits_per_char_2") && strstr(buf, ",outlier_1_out_in_kurtosis") &&
              strstr(buf, ",bits_per_char_cost"),
          "csv: the new columns");
    free(buf);
done:
    for (int i = 0; rows && i < 2; i++) nl_compare_row_free(&rows[i]);
    free(rows);
    nl_model_free(mq);  // (it borrows m's tensors)
    nl_model_free(m);
}

// A folded and centred row (the label "layernorm/pre fold+center", 25 characters) beside the row as
// trained: the attention section names each row's variant, the main table's columns stay where its
// header puts them, and the uniform baseline reaches every output.
static void reports_label_variants_and_keep_columns(void) {
    NlModel *m = load_fixture("ln-pre-bias.json");
    NlCompareRow *rows = calloc(2, sizeof *rows);
    if (!m || !rows || compare_row(m, &rows[0]) || compare_row(m, &rows[1])) {
        CHECK(0, "rows");
        goto done;
    }
    rows[1].folded = 2, rows[1].reference = 0;
    const char *labels[2] = {"a", "a"};
    CompareInfo info = {.text = "text", .threads = 1, .repeats = 1, .attention = 1, .fold = 1};
    char *text = written(report_compare_text, rows, labels, 2, &info), want[2][128];
    const NlAttentionStats *a0 = &rows[0].attention[0];
    snprintf(want[0], sizeof want[0], "layernorm/pre, %llu queries a head (sink, self: %llu; uniform %.3f)\n",
             (unsigned long long)a0->queries, (unsigned long long)a0->queries_past_first, a0->uniform);
    snprintf(want[1], sizeof want[1], "layernorm/pre fold+center, %llu queries a head",
             (unsigned long long)a0->queries);
    CHECK(text && strstr(text, want[0]) && strstr(text, want[1]) && a0->queries_past_first < a0->queries,
          "attention: each row with its variant, the queries and the uniform baseline (%s)", want[0]);
    const char *header = text ? strstr(text, "\nmodel ") : NULL;
    size_t at = header ? (size_t)(strstr(header, "params") - header) + 6 : 0;  // the column's right edge
    int rows_ok = 0;
    for (const char *line = header ? strchr(header + 1, '\n') : NULL; line && line[1] == 'a';
         line = strchr(line + 1, '\n'))
        rows_ok += strlen(line) > at && line[at - 1] >= '0' && line[at - 1] <= '9' && line[at] == ' ';
    CHECK(rows_ok == 2, "the params column ends under its header on both rows (%d)", rows_ok);
    free(text);
    char *json = written(report_compare_json, rows, labels, 2, &info);
    cJSON *a = json ? cJSON_Parse(json) : NULL;
    cJSON *att = cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "attention");
    CHECK(cJSON_GetObjectItem(att, "uniform") &&
              cJSON_GetObjectItem(att, "uniform")->valuedouble == rows[0].attention[0].uniform &&
              cJSON_GetObjectItem(att, "queries_past_first")->valuedouble == (double)a0->queries_past_first &&
              strcmp(cJSON_GetObjectItem(att, "sink_token")->valuestring, "text") == 0,
          "json: uniform, queries_past_first, sink_token");
    cJSON_Delete(a);
    free(json);
    char *csv = written(report_compare_csv, rows, labels, 2, &info);
    CHECK(csv && strstr(csv, ",attention_uniform,attention_entropy_bits_0_0"), "csv: attention_uniform");
    free(csv);
done:
    for (int i = 0; rows && i < 2; i++) nl_compare_row_free(&rows[i]);
    free(rows);
    nl_model_free(m);
}

int main(void) {
    RUN(reports_carry_lens_outliers_and_quantization);
    RUN(reports_label_variants_and_keep_columns);
    return check_summary("test_report_compare");
}
