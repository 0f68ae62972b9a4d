// report_rows.h — what compare's text, JSON and CSV writers (report_compare.c,
// report_compare_data.c, report_attention.c) share: how a row ran, in words, and the lens's table.
#ifndef NL_CLI_REPORT_ROWS_H
#define NL_CLI_REPORT_ROWS_H

#include <stddef.h>
#include <stdio.h>

#include "normlab_lab.h"

// "layernorm*/pre": the norm and placement a row ran as, * where not as trained.
void report_rows_run_as(char *buf, size_t len, const NlCompareRow *r);
// " w:q8", " a:q8", " fold", " fold+center": what a row changed of its model; "" for none.
void report_rows_variant(char *buf, size_t len, const NlCompareRow *r);
// report_rows_run_as with report_rows_variant after it ("layernorm/pre w:q8").
void report_rows_run_as_variant(char *buf, size_t len, const NlCompareRow *r);
// The "run as" column's width: 24, or the longest label of the rows where one is longer.
int report_rows_run_as_width(const NlCompareRow *rows, size_t n);
// "none", "norm", "placement", "norm+placement" or "qk_norm": what the row ran otherwise than trained.
const char *report_rows_override(const NlCompareRow *r);
// "a/b/c" of count values, each printed with fmt.
void report_rows_join(char *buf, size_t len, const double *v, int count, const char *fmt);
// The time buckets of a recurrent row's state norms that saw positions (a prefix of them).
int report_rows_state_buckets(const NlCompareRow *r);
// "bits/tok" with a BPE model among the rows, else "bits/char".
const char *report_rows_per_token(const NlCompareRow *rows, size_t n);

// The lens's statistics beside its bits: each an (L + 1) array of NlCompareRow at `field`.
typedef struct {
    const char *text, *name, *fmt;  // text: NULL where the text report leaves it out
    size_t field;
} ReportLensStat;
extern const ReportLensStat REPORT_LENS_STATS[];
extern const size_t REPORT_N_LENS_STATS;
const double *report_rows_lens_stat(const NlCompareRow *r, size_t k);
// How the row's lens read a layer: "recompute", "final", "last affine" or "head" (docs/lab.md).
const char *report_rows_lens_reading(const NlCompareRow *r);

#endif
