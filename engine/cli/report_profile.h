// report_profile.h — writes a profiler's results as a text table, JSON, or a Chrome trace (trace-event
// format, "X" complete events, opened by Perfetto and chrome://tracing). Each returns 0, or -1 when
// writing to f failed. Library code writes only to the stream it is given. The text marks with *
// the rows of a layer that saw fewer positions than its first rows (a last layer's pruned rows) and
// explains each such layer in a footnote under its phase.
#ifndef NL_CLI_REPORT_PROFILE_H
#define NL_CLI_REPORT_PROFILE_H

#include <stdio.h>

#include "normlab_lab.h"

typedef struct {
    const char *model;  // path shown in the header
    int product_threads;  // threads a product's rows are split over (NlRunOptions.threads; JSON: blas_threads)
    int engine_threads;  // engine worker threads (each profiled; their times are summed)
    const char *blas_core;  // OpenBLAS's kernel family (nl_blas_core)
    const char *blas_core_source;  // who chose it: "openblas", "environment" or "normlab"
    const char *rounding;  // --quantize, --quantize-act as the header says them ("weights q8"), or NULL
} ReportInfo;

#define REPORT_TOP 3  // the slowest layers a summary shows

int report_profile_text(FILE *f, const NlProfiler *prof, const ReportInfo *info);  // the full table
// The text with a "prompt: " line under the header (prompt NULL: none) and, when summary is set, the
// summary in place of the full table: per-component totals, the REPORT_TOP slowest layers, and the
// time no row accounts for.
int report_profile_view(FILE *f, const NlProfiler *prof, const ReportInfo *info, const char *prompt, int summary);
int report_profile_json(FILE *f, const NlProfiler *prof, const ReportInfo *info);
int report_profile_trace(FILE *f, const NlProfiler *prof, const ReportInfo *info);

// The profile command's "prompt:" line (into buf): the text, escaped and its middle cut when long,
// and where it came from: -p, -f (prompt_file, "-" for standard input) or the default; or "\n" when
// -p gave an empty prompt or the default's characters are not all in the vocabulary (fell_back).
const char *report_prompt_line(char *buf, size_t cap, const char *prompt_file, const char *prompt,
                               const char *default_prompt, int fell_back);
// The same line for a BPE model's prompt of `tokens` tokens (0: a character model's, whose tokens are
// its characters, counted from the text as report_prompt_line does): the count is of the tokens.
const char *report_prompt_line_tokens(char *buf, size_t cap, const char *prompt_file, const char *prompt,
                                      const char *default_prompt, int fell_back, size_t tokens);

// What report_profile_write could not do.
typedef enum { REPORT_OK, REPORT_TRACE_FULL, REPORT_TRACE_FAILED, REPORT_FAILED } ReportStatus;

// A run's profile: the trace to trace_f (when not NULL) first, with info->model as given, so that a
// failed write leaves the report unwritten; then to out, JSON, or the text with shown as the model,
// the prompt line (NULL: none) and the summary or the full table. REPORT_TRACE_FULL: the trace
// dropped events (*events: how many it holds, *made: how many the run made).
ReportStatus report_profile_write(FILE *out, FILE *trace_f, const NlProfiler *prof, const ReportInfo *info,
                                  const char *shown, int json, const char *prompt, int summary, size_t *events,
                                  size_t *made);

#endif
