// report.h — writes a profiler's results as a text table, JSON, or a Chrome trace (trace-event
// format, "X" complete events, opened by Perfetto and chrome://tracing). Each returns 0, or -1 when
// writing to f failed. Library code writes only to the stream it is given. The text marks with *
// the rows of a layer that saw fewer positions than its first rows (a last layer's pruned rows) and
// explains each such layer in a footnote under its phase.
#ifndef NL_REPORT_H
#define NL_REPORT_H

#include <stdio.h>

#include "normlab_lab.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

typedef struct {
    const char *model;  // path shown in the header
    int blas_threads;  // threads OpenBLAS was told to use
    int engine_threads;  // engine worker threads (each profiled; their times are summed)
    const char *blas_core;  // OpenBLAS's kernel family (nl_blas_core)
    const char *blas_core_source;  // who chose it: "openblas", "environment" or "normlab"
} NlReportInfo;

#define NL_REPORT_TOP 3  // the slowest layers a summary shows

int nl_report_text(FILE *f, const NlProfiler *prof, const NlReportInfo *info);  // the full table
// The text with a "prompt: " line under the header (prompt NULL: none) and, when summary is set, the
// summary in place of the full table: per-component totals, the NL_REPORT_TOP slowest layers, and the
// time no row accounts for.
int nl_report_text_view(FILE *f, const NlProfiler *prof, const NlReportInfo *info, const char *prompt, int summary);
int nl_report_json(FILE *f, const NlProfiler *prof, const NlReportInfo *info);
int nl_report_trace(FILE *f, const NlProfiler *prof, const NlReportInfo *info);

// `normlab compare` rows: labels[i] names the model of rows[i].
typedef struct {
    const char *text;  // the text file scored
    int threads;  // worker threads measuring rows (1: one row at a time)
    int repeats;
    int invariance;  // rows carry the invariance experiment
    int quantize;  // some rows are quantized (--quantize, --quantize-act): the quantization section
    int lens;  // rows carry the logit lens
    int outliers;  // rows carry the outlier statistics
} NlCompareInfo;

int nl_report_compare_text(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n,
                           const NlCompareInfo *info);
int nl_report_compare_json(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n,
                           const NlCompareInfo *info);
int nl_report_compare_csv(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n,
                          const NlCompareInfo *info);

#pragma GCC visibility pop

#endif
