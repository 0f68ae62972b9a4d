// cmd_profile.c — profile: a generate run with the text discarded and the profile as its result
// (report.c writes it: a summary, or with --layers the full table), and the writer generate --profile
// and eval --profile share (they print the full table).
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "report.h"

// The profile command's default prompt (our own line), used when the vocabulary has its characters.
static const char *const PROFILE_PROMPT = "KING:\nNow speak, good friend, and tell me true:\nWhat news from Milan?\n";

// The characters (UTF-8 code points) of s.
static size_t chars(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

// What the "prompt:" line says: the text (escaped as messages are, its middle cut when long) and
// where it came from. The default applies when the vocabulary has its characters; otherwise the
// run started from "\n", a prefill of one position per pass, which is how this tells the two apart.
static const char *prompt_line(char *buf, size_t cap, const Options *o, const NlProfiler *prof) {
    char esc[80];
    if (o->prompt_file) {
        if (strcmp(o->prompt_file, "-") == 0) snprintf(buf, cap, "standard input (-f -)");
        else snprintf(buf, cap, "the file \"%s\" (-f)", msg_escape(esc, sizeof esc, o->prompt_file));
        return buf;
    }
    const NlProfileCell *e = nl_profiler_cell(prof, NL_PHASE_PREFILL, -1, NL_COMP_EMBED);
    const char *text = o->prompt ? o->prompt : o->default_prompt;
    int fell_back = !o->prompt && e->calls && e->tokens == e->calls && chars(text) > 1;
    if (!text[0] || fell_back)
        snprintf(buf, cap, "\"\\n\" (1 character: %s)",
                 fell_back ? "the default's characters are not all in this vocabulary" : "-p gave an empty prompt");
    else
        snprintf(buf, cap, "\"%s\" (%zu characters, %s)", msg_escape(esc, sizeof esc, text), chars(text),
                 o->prompt ? "-p" : "the default");
    return buf;
}

// profile --layers: the full table; it shares the Options field of generate's and eval's --profile,
// which the profile command does not read.
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
    char buf[4400], shown[1024], said[256];
    const char *path = model_path(o, buf, sizeof buf);
    // profile: the prompt line and, without --layers, the summary; generate and eval --profile: the table
    NlReportInfo info = {json ? path : msg_escape(shown, sizeof shown, path), blas_threads, workers, nl_blas_core(),
                         o->blas.source};
    if (!json) info.model = path;  // the trace is JSON: escaped by its writer
    if (trace_f && (nl_report_trace(trace_f, prof, &info) != 0 || fflush(trace_f) == EOF)) {
        msg_error("%s: write failed: %s", o->trace_out, strerror(errno));
        return EXIT_DATA;
    }
    if (!json) info.model = shown;
    const char *prompt = o->profile_cmd ? prompt_line(said, sizeof said, o, prof) : NULL;
    int bad = json ? nl_report_json(out, prof, &info)
                   : nl_report_text_view(out, prof, &info, prompt, o->profile_cmd && !o->profile);
    if (bad != 0 || fflush(out) == EOF) {
        msg_error("cannot write the profile: %s", strerror(errno));
        return EXIT_DATA;
    }
    return 0;
}
