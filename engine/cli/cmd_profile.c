// cmd_profile.c — profile: a generate run with the text discarded and the profile as its result
// (report.c writes it), and the writer generate --profile and eval --profile share.
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "report.h"

// The profile command's default prompt (our own line), used when the vocabulary has its characters.
static const char *const PROFILE_PROMPT = "KING:\nNow speak, good friend, and tell me true:\nWhat news from Milan?\n";

int cmd_profile(Options *o) {
    o->profile_cmd = 1;
    o->default_prompt = PROFILE_PROMPT;
    return generate_run(o);
}

// Writes the profile of a run on `workers` engine threads with up to blas_threads OpenBLAS threads:
// the trace file first (so that a failed write leaves the output empty), then the report to out.
int profile_write(const Options *o, const NlProfiler *prof, int workers, int blas_threads, FILE *out, int json,
                  FILE *trace_f) {
    size_t n_events, dropped;
    const NlProfileEvent *events;
    n_events = nl_profiler_events(prof, &events, &dropped);
    if (trace_f && dropped) {
        msg_error("the trace holds at most %zu events and this run made %zu; profile fewer tokens (-n)", n_events,
                  n_events + dropped);
        return EXIT_DATA;
    }
    char buf[4400], shown[1024];
    const char *path = model_path(o, buf, sizeof buf);
    NlReportInfo info = {json ? path : msg_escape(shown, sizeof shown, path), blas_threads, workers, nl_blas_core(),
                         o->blas.source};
    if (!json) info.model = path;  // the trace is JSON: escaped by its writer
    if (trace_f && (nl_report_trace(trace_f, prof, &info) != 0 || fflush(trace_f) == EOF)) {
        msg_error("%s: write failed: %s", o->trace_out, strerror(errno));
        return EXIT_DATA;
    }
    if (!json) info.model = shown;
    int bad = json ? nl_report_json(out, prof, &info) : nl_report_text(out, prof, &info);
    if (bad != 0 || fflush(out) == EOF) {
        msg_error("cannot write the profile: %s", strerror(errno));
        return EXIT_DATA;
    }
    return 0;
}
