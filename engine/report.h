// report.h — writes a profiler's results as a text table, JSON, or a Chrome trace (trace-event
// format, "X" complete events, opened by Perfetto and chrome://tracing). Each returns 0, or -1 when
// writing to f failed. Library code writes only to the stream it is given.
#ifndef NL_REPORT_H
#define NL_REPORT_H

#include <stdio.h>

#include "normlab.h"

typedef struct {
    const char *model;     // path shown in the header
    int blas_threads;      // threads OpenBLAS was told to use
    int engine_threads;    // threads of the engine's own loops (1: it has none)
} NlReportInfo;

int nl_report_text(FILE *f, const NlProfiler *prof, const NlReportInfo *info);
int nl_report_json(FILE *f, const NlProfiler *prof, const NlReportInfo *info);
int nl_report_trace(FILE *f, const NlProfiler *prof, const NlReportInfo *info);

#endif
