// report_profile.c — text, JSON and Chrome-trace views of a profiler (see report_profile.h).
#include "report_profile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jsonout.h"
#include "msg.h"

// The layer-less components (layer -1) and the per-layer ones.
static int is_model_level(int comp) {
    return comp == NL_COMP_EMBED || comp == NL_COMP_FINAL_NORM || comp == NL_COMP_LM_HEAD || comp == NL_COMP_SAMPLING;
}

// Whether a run of cfg has component comp (its family says): the JSON report lists exactly these,
// called or not.
static int has_component(const NlConfig *cfg, int comp) { return nl_component_in_run(cfg, (NlComponent)comp); }

static double rows_seconds(const NlProfiler *p, NlPhase ph, int L) {
    double s = 0.0;
    for (int l = -1; l < L; l++)
        for (int c = 0; c < NL_COMP_COUNT; c++) s += nl_profiler_cell(p, ph, l, (NlComponent)c)->seconds;
    return s;
}

static int print_row(FILE *f, const char *layer, const char *name, const NlProfileCell *c, double wall, uint64_t tokens,
                     int hw) {
    if (c->calls == 0) return 0;
    double us_tok = tokens ? 1e6 * c->seconds / (double)tokens : 0.0;
    double gflops = c->seconds > 0 ? c->flops / c->seconds / 1e9 : 0.0,
           gbs = c->seconds > 0 ? c->bytes / c->seconds / 1e9 : 0.0;
    int r = fprintf(f, "%5s %-14s %7llu %10.3f %9.3f %6.1f%% %10.3f %8.2f %9.3f %7.2f", layer, name,
                    (unsigned long long)c->calls, 1e3 * c->seconds, us_tok, wall > 0 ? 100 * c->seconds / wall : 0.0,
                    c->flops / 1e6, gflops, c->bytes / 1e6, gbs);
    if (r > 0 && hw) r = fprintf(f, " %5.2f", c->cycles ? (double)c->instructions / (double)c->cycles : 0.0);
    return r > 0 && fputc('\n', f) != EOF ? 0 : -1;
}

// The cell of layer l that saw the most positions per call: the rows every position goes through.
// NULL for a family that prunes no rows (a recurrent layer's step sees one position a call by design).
static const NlProfileCell *fullest_cell(const NlProfiler *p, NlPhase ph, int l) {
    const NlProfileCell *best = NULL;
    if (!nl_profiler_family(p)->prunes_rows) return NULL;
    for (int c = 0; c < NL_COMP_COUNT; c++) {
        const NlProfileCell *x = nl_profiler_cell(p, ph, l, (NlComponent)c);
        if (x->calls && (!best || x->tokens * best->calls > best->tokens * x->calls)) best = x;
    }
    return best;
}

// Whether cell x saw fewer positions per call than its layer's fullest cell: a last layer's rows
// after its keys and values, where only each pass's last position goes on (no logit reads the rest).
static int pruned_cell(const NlProfileCell *x, const NlProfileCell *full) {
    return full && x->calls && x->tokens * full->calls < full->tokens * x->calls;
}

static int pruned_layer(const NlProfiler *p, NlPhase ph, int l) {
    const NlProfileCell *full = fullest_cell(p, ph, l);
    for (int c = 0; c < NL_COMP_COUNT; c++)
        if (pruned_cell(nl_profiler_cell(p, ph, l, (NlComponent)c), full)) return 1;
    return 0;
}

// "3", or "3*" where the row is one of a pruned layer's (see footnotes).
static const char *layer_label(char *buf, size_t len, int l, int marked) {
    snprintf(buf, len, l < 0 ? "-" : marked ? "%d*" : "%d", l);
    return buf;
}

static NlProfileCell layer_total(const NlProfiler *p, NlPhase ph, int l) {
    NlProfileCell t = {0};
    for (int c = 0; c < NL_COMP_COUNT; c++) nl_profile_cell_add(&t, nl_profiler_cell(p, ph, l, (NlComponent)c));
    return t;
}

// What per-token figures divide by: the tokens the phase produced, or its positions when unset.
static uint64_t per_token(const NlProfiler *p, NlPhase ph) {
    uint64_t made = nl_profiler_produced(p, ph);
    return made ? made : nl_profiler_tokens(p, ph);
}

static int phase_head(FILE *f, const NlProfiler *p, NlPhase ph, int hw) {
    unsigned long long pos = nl_profiler_tokens(p, ph), made = nl_profiler_produced(p, ph);
    int rc = made && made != pos
                 ? fprintf(f, "\n== %s: %llu token%s (%llu positions through the forward pass)\n", nl_phase_name(ph),
                           made, made == 1 ? "" : "s", pos)
                 : fprintf(f, "\n== %s: %llu positions through the forward pass\n", nl_phase_name(ph), pos);
    if (rc < 0) return -1;
    return fprintf(f, "%5s %-14s %7s %10s %9s %7s %10s %8s %9s %7s%s\n", "layer", "component", "calls", "total ms",
                   made ? "us/token" : "us/pos", "share", "MFLOP", "GFLOP/s", "MB", "GB/s", hw ? "   IPC" : "") < 0
               ? -1
               : 0;
}

static int component_totals(FILE *f, const NlProfiler *p, NlPhase ph, int L, int hw) {
    double wall = nl_profiler_wall(p, ph);
    uint64_t tokens = per_token(p, ph);
    int rc = fprintf(f, "-- per component, all layers\n") < 0 ? -1 : 0;
    for (int c = 0; c < NL_COMP_COUNT; c++) {
        NlProfileCell t = {0};
        for (int l = -1; l < L; l++) nl_profile_cell_add(&t, nl_profiler_cell(p, ph, l, (NlComponent)c));
        rc |= print_row(f, "all", nl_component_name((NlComponent)c), &t, wall, tokens, hw);
    }
    return rc;
}

// The time no row accounts for (the unattributed time), then a footnote for each pruned layer.
static int phase_foot(FILE *f, const NlProfiler *p, NlPhase ph, int L) {
    double wall = nl_profiler_wall(p, ph), rows = rows_seconds(p, ph, L);
    int th = nl_profiler_threads(p);
    char over[48] = "";
    if (th > 1) snprintf(over, sizeof over, " (each summed over %d threads)", th);
    if (fprintf(f, "wall %.3f ms; rows %.3f ms; not covered by any row %.3f ms (%.2f%% of wall)%s\n", 1e3 * wall,
                1e3 * rows, 1e3 * (wall - rows), wall > 0 ? 100 * (wall - rows) / wall : 0.0, over) < 0)
        return -1;
    for (int l = 0; l < L; l++) {
        const NlProfileCell *full = fullest_cell(p, ph, l);
        for (int c = 0; c < NL_COMP_COUNT; c++) {
            const NlProfileCell *x = nl_profiler_cell(p, ph, l, (NlComponent)c);
            if (!pruned_cell(x, full)) continue;
            if (fprintf(f,
                        "* layer %d: from %s on, each pass computes only its last position, the one a logit needs "
                        "(%llu of %llu positions; the rows no logit reads are pruned)\n",
                        l, nl_component_name((NlComponent)c), (unsigned long long)(x->tokens * full->calls / x->calls),
                        (unsigned long long)full->tokens) < 0)
                return -1;
            break;
        }
    }
    return 0;
}

// The full layer x component table.
static int text_phase(FILE *f, const NlProfiler *p, NlPhase ph, int L, int hw) {
    double wall = nl_profiler_wall(p, ph);
    uint64_t tokens = per_token(p, ph);
    int rc = phase_head(f, p, ph, hw);
    char lbuf[16];
    for (int l = -1; l < L; l++) {
        const NlProfileCell *full = l < 0 ? NULL : fullest_cell(p, ph, l);
        for (int c = 0; c < NL_COMP_COUNT; c++) {
            if (is_model_level(c) != (l < 0)) continue;
            const NlProfileCell *x = nl_profiler_cell(p, ph, l, (NlComponent)c);
            rc |= print_row(f, layer_label(lbuf, sizeof lbuf, l, pruned_cell(x, full)),
                            nl_component_name((NlComponent)c), x, wall, tokens, hw);
        }
    }
    rc |= fprintf(f, "-- per layer\n") < 0 ? -1 : 0;
    for (int l = 0; l < L; l++) {
        NlProfileCell t = layer_total(p, ph, l);
        rc |= print_row(f, layer_label(lbuf, sizeof lbuf, l, pruned_layer(p, ph, l)), "(all)", &t, wall, tokens, hw);
    }
    rc |= component_totals(f, p, ph, L, hw);
    return rc | phase_foot(f, p, ph, L);
}

// The summary: the per-component totals, the slowest layers (slowest first; ties: the lower index)
// and the unattributed time.
static int summary_phase(FILE *f, const NlProfiler *p, NlPhase ph, int L, int hw) {
    double wall = nl_profiler_wall(p, ph), last = INFINITY;
    uint64_t tokens = per_token(p, ph);
    int rc = phase_head(f, p, ph, hw), K = L < REPORT_TOP ? L : REPORT_TOP, prev = -1;
    rc |= component_totals(f, p, ph, L, hw);
    if (L > K) rc |= fprintf(f, "-- the %d slowest of %d layers (all of them: --layers)\n", K, L) < 0 ? -1 : 0;
    else rc |= fprintf(f, "-- per layer, slowest first\n") < 0 ? -1 : 0;
    for (int k = 0; k < K; k++) {  // the next slowest after (last, prev): no allocation for any L
        int best = -1;
        double best_s = -1.0;
        for (int l = 0; l < L; l++) {
            double s = layer_total(p, ph, l).seconds;
            int after = s < last || (s == last && l > prev);
            if (after && s > best_s) best = l, best_s = s;
        }
        if (best < 0) break;
        NlProfileCell t = layer_total(p, ph, best);
        char lbuf[16];
        rc |= print_row(f, layer_label(lbuf, sizeof lbuf, best, pruned_layer(p, ph, best)), "(all)", &t, wall, tokens,
                        hw);
        last = best_s, prev = best;
    }
    return rc | phase_foot(f, p, ph, L);
}

static void header(FILE *f, const NlProfiler *p, const ReportInfo *info, const char *prompt) {
    int e = info->engine_threads, t = info->product_threads;
    char threads[96], rounded[160] = "";
    if (e > 1) snprintf(threads, sizeof threads, "threads %d (%d engine threads, each product on %d)", e, e, t);
    else snprintf(threads, sizeof threads, "threads %d (one engine thread, each product split over up to %d)", t, t);
    if (info->rounding) snprintf(rounded, sizeof rounded, "; rounded (simulated): %s", info->rounding);
    fprintf(f, "normlab profile: %s; OpenBLAS %s kernels (chosen by %s), %s%s; hardware counters %s\n", info->model,
            info->blas_core, info->blas_core_source, threads, rounded,
            nl_profiler_hw_available(p) ? "on (IPC column)" : "unavailable (perf_event_open refused or absent)");
    if (prompt) fprintf(f, "prompt: %s\n", prompt);
}

int report_profile_view(FILE *f, const NlProfiler *p, const ReportInfo *info, const char *prompt, int summary) {
    int L = nl_profiler_layers(p), hw = nl_profiler_hw_available(p), rc = 0;
    header(f, p, info, prompt);
    for (int ph = 0; ph < NL_PHASE_COUNT; ph++)
        if (nl_profiler_wall(p, (NlPhase)ph) > 0)
            rc |= summary ? summary_phase(f, p, (NlPhase)ph, L, hw) : text_phase(f, p, (NlPhase)ph, L, hw);
    return rc || ferror(f) ? -1 : 0;
}

int report_profile_text(FILE *f, const NlProfiler *p, const ReportInfo *info) {
    return report_profile_view(f, p, info, NULL, 0);
}

static cJSON *cell_json(int layer, const char *name, const NlProfileCell *c, double wall, uint64_t tokens, int hw) {
    cJSON *r = cJSON_CreateObject();
    if (layer >= 0) cJSON_AddNumberToObject(r, "layer", layer);
    else cJSON_AddNullToObject(r, "layer");
    cJSON_AddStringToObject(r, "component", name);
    cJSON_AddNumberToObject(r, "calls", (double)c->calls);
    cJSON_AddNumberToObject(r, "tokens", (double)c->tokens);
    cJSON_AddNumberToObject(r, "seconds", c->seconds);
    cJSON_AddNumberToObject(r, "us_per_token", tokens ? 1e6 * c->seconds / (double)tokens : 0.0);
    cJSON_AddNumberToObject(r, "share", wall > 0 ? c->seconds / wall : 0.0);
    cJSON_AddNumberToObject(r, "flops", c->flops);
    cJSON_AddNumberToObject(r, "gflops_per_s", c->seconds > 0 ? c->flops / c->seconds / 1e9 : 0.0);
    cJSON_AddNumberToObject(r, "bytes", c->bytes);
    cJSON_AddNumberToObject(r, "gb_per_s", c->seconds > 0 ? c->bytes / c->seconds / 1e9 : 0.0);
    if (hw) cJSON_AddNumberToObject(r, "ipc", c->cycles ? (double)c->instructions / (double)c->cycles : 0.0);
    return r;
}

static cJSON *phase_json(const NlProfiler *p, NlPhase ph, int L, int hw) {
    double wall = nl_profiler_wall(p, ph), rows_s = rows_seconds(p, ph, L);
    uint64_t tokens = per_token(p, ph);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "phase", nl_phase_name(ph));
    cJSON_AddNumberToObject(o, "tokens", (double)tokens);
    cJSON_AddNumberToObject(o, "positions", (double)nl_profiler_tokens(p, ph));
    cJSON_AddNumberToObject(o, "wall_seconds", wall);
    cJSON_AddNumberToObject(o, "rows_seconds", rows_s);
    cJSON_AddNumberToObject(o, "uncovered_seconds", wall - rows_s);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows"), *layers = cJSON_AddArrayToObject(o, "layer_totals");
    cJSON *comps = cJSON_AddArrayToObject(o, "component_totals");
    const NlConfig *cfg = nl_profiler_config(p);
    for (int l = -1; l < L; l++)
        for (int c = 0; c < NL_COMP_COUNT; c++)
            if (is_model_level(c) == (l < 0) && has_component(cfg, c))
                cJSON_AddItemToArray(rows, cell_json(l, nl_component_name((NlComponent)c),
                                                     nl_profiler_cell(p, ph, l, (NlComponent)c), wall, tokens, hw));
    for (int l = 0; l < L; l++) {
        NlProfileCell t = {0};
        for (int c = 0; c < NL_COMP_COUNT; c++) nl_profile_cell_add(&t, nl_profiler_cell(p, ph, l, (NlComponent)c));
        cJSON_AddItemToArray(layers, cell_json(l, "(all)", &t, wall, tokens, hw));
    }
    for (int c = 0; c < NL_COMP_COUNT; c++) {
        NlProfileCell t = {0};
        if (!has_component(cfg, c)) continue;
        for (int l = -1; l < L; l++) nl_profile_cell_add(&t, nl_profiler_cell(p, ph, l, (NlComponent)c));
        cJSON_AddItemToArray(comps, cell_json(-1, nl_component_name((NlComponent)c), &t, wall, tokens, hw));
    }
    return o;
}

int report_profile_json(FILE *f, const NlProfiler *p, const ReportInfo *info) {
    int L = nl_profiler_layers(p), hw = nl_profiler_hw_available(p);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", info->model);
    cJSON_AddNumberToObject(root, "blas_threads", info->product_threads);
    cJSON_AddNumberToObject(root, "engine_threads", info->engine_threads);
    cJSON_AddStringToObject(root, "blas_core", info->blas_core);
    cJSON_AddStringToObject(root, "blas_core_source", info->blas_core_source);
    cJSON_AddNumberToObject(root, "threads_summed", nl_profiler_threads(p));  // wall and cells: summed over these
    cJSON_AddBoolToObject(root, "hw_counters", hw);
    if (info->rounding) cJSON_AddStringToObject(root, "rounded", info->rounding);
    cJSON *phases = cJSON_AddArrayToObject(root, "phases");
    for (int ph = 0; ph < NL_PHASE_COUNT; ph++) cJSON_AddItemToArray(phases, phase_json(p, (NlPhase)ph, L, hw));
    char *text = nl_jsonx_print(root, 1);
    int rc = text && fputs(text, f) != EOF && fputc('\n', f) != EOF ? 0 : -1;
    free(text);
    cJSON_Delete(root);
    return rc || ferror(f) ? -1 : 0;
}

int report_profile_trace(FILE *f, const NlProfiler *p, const ReportInfo *info) {
    const NlProfileEvent *ev;
    size_t dropped, n = nl_profiler_events(p, &ev, &dropped);
    cJSON *model = cJSON_CreateString(info->model);
    char *quoted = model ? nl_jsonx_print(model, 0) : NULL;
    fprintf(f,
            "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"model\": %s, \"dropped_events\": %zu},\n"
            "\"traceEvents\": [\n",
            quoted ? quoted : "null", dropped);
    free(quoted);
    cJSON_Delete(model);
    fprintf(f,
            "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"normlab\"}}");
    for (size_t i = 0; i < n; i++) {
        char name[32];
        if (ev[i].comp == NL_COMP_COUNT) snprintf(name, sizeof name, "layer %d", ev[i].layer);
        else snprintf(name, sizeof name, "%s", nl_component_name((NlComponent)ev[i].comp));
        fprintf(f,
                ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, "
                "\"tid\": 1, \"args\": {\"layer\": %d}}",
                name, nl_phase_name((NlPhase)ev[i].phase), 1e6 * ev[i].start, 1e6 * ev[i].duration, ev[i].layer);
    }
    fputs("\n]}\n", f);
    return ferror(f) ? -1 : 0;
}

// The characters (UTF-8 code points) of s.
static size_t chars(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

const char *report_prompt_line(char *buf, size_t cap, const char *prompt_file, const char *prompt,
                               const char *default_prompt, int fell_back) {
    return report_prompt_line_tokens(buf, cap, prompt_file, prompt, default_prompt, fell_back, 0);
}

const char *report_prompt_line_tokens(char *buf, size_t cap, const char *prompt_file, const char *prompt,
                                      const char *default_prompt, int fell_back, size_t tokens) {
    char esc[80];
    if (prompt_file) {
        if (strcmp(prompt_file, "-") == 0) snprintf(buf, cap, "standard input (-f -)");
        else snprintf(buf, cap, "the file \"%s\" (-f)", msg_escape(esc, sizeof esc, prompt_file));
        return buf;
    }
    const char *text = prompt ? prompt : default_prompt ? default_prompt : "";
    if (!text[0] || fell_back)
        snprintf(buf, cap, "\"\\n\" (1 %s: %s)", tokens ? "token" : "character",
                 fell_back ? "the default's characters are not all in this vocabulary" : "-p gave an empty prompt");
    else if (tokens)
        snprintf(buf, cap, "\"%s\" (%zu token%s, %s)", msg_escape(esc, sizeof esc, text), tokens,
                 tokens == 1 ? "" : "s", prompt ? "-p" : "the default");
    else
        snprintf(buf, cap, "\"%s\" (%zu characters, %s)", msg_escape(esc, sizeof esc, text), chars(text),
                 prompt ? "-p" : "the default");
    return buf;
}

ReportStatus report_profile_write(FILE *out, FILE *trace_f, const NlProfiler *prof, const ReportInfo *info,
                                  const char *shown, int json, const char *prompt, int summary, size_t *events,
                                  size_t *made) {
    const NlProfileEvent *ev;
    size_t dropped;
    *events = nl_profiler_events(prof, &ev, &dropped);
    *made = *events + dropped;
    if (trace_f && dropped) return REPORT_TRACE_FULL;
    if (trace_f && (report_profile_trace(trace_f, prof, info) != 0 || fflush(trace_f) == EOF))
        return REPORT_TRACE_FAILED;
    ReportInfo as_shown = *info;
    if (!json) as_shown.model = shown;
    int bad = json ? report_profile_json(out, prof, info) : report_profile_view(out, prof, &as_shown, prompt, summary);
    return bad != 0 || fflush(out) == EOF ? REPORT_FAILED : REPORT_OK;
}
