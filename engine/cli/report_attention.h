// report_attention.h — the attention statistics of compare's rows (NlCompareRow.attention, the
// sink share by position, one head's pattern) as a text section, JSON members and CSV columns.
#ifndef NL_CLI_REPORT_ATTENTION_H
#define NL_CLI_REPORT_ATTENTION_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "normlab_lab.h"

// The text section: per row, per layer, each head's entropy, sink and self shares and distance.
void report_attention_text(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n);
// Row r's "attention" member into o, and with pattern (asked) its "attention_pattern" (null where r
// has none), with the pieces of its tokens where job (r's) is given.
void report_attention_json(cJSON *o, const NlCompareRow *r, int pattern, const NlCompareJob *job);
// The CSV header's columns (L layers, H heads: the most of any row) and row r's values.
void report_attention_csv_header(FILE *f, int L, int H);
void report_attention_csv_row(FILE *f, const NlCompareRow *r, int L, int H);

#endif
