// report.c — text, JSON and Chrome-trace views of a profiler (see report.h).
#include "report.h"

#include <string.h>

#include <cjson/cJSON.h>

static void add_cell(NlProfileCell *a, const NlProfileCell *b) {
    a->calls += b->calls;
    a->tokens += b->tokens;
    a->seconds += b->seconds;
    a->flops += b->flops;
    a->bytes += b->bytes;
    a->cycles += b->cycles;
    a->instructions += b->instructions;
}

// The layer-less components (layer -1) and the per-layer ones.
static int is_model_level(int comp) {
    return comp == NL_COMP_EMBED || comp == NL_COMP_FINAL_NORM || comp == NL_COMP_LM_HEAD || comp == NL_COMP_SAMPLING;
}

static double rows_seconds(const NlProfiler *p, NlPhase ph, int L) {
    double s = 0.0;
    for (int l = -1; l < L; l++)
        for (int c = 0; c < NL_COMP_COUNT; c++) s += nl_profiler_cell(p, ph, l, (NlComponent)c)->seconds;
    return s;
}

static int print_row(FILE *f, const char *layer, const char *name, const NlProfileCell *c, double wall,
                     uint64_t tokens, int hw) {
    if (c->calls == 0) return 0;
    double us_tok = tokens ? 1e6 * c->seconds / (double)tokens : 0.0;
    double gflops = c->seconds > 0 ? c->flops / c->seconds / 1e9 : 0.0, gbs = c->seconds > 0 ? c->bytes / c->seconds / 1e9 : 0.0;
    int r = fprintf(f, "%5s %-14s %7llu %10.3f %9.3f %6.1f%% %10.3f %8.2f %9.3f %7.2f", layer, name,
                    (unsigned long long)c->calls, 1e3 * c->seconds, us_tok, wall > 0 ? 100 * c->seconds / wall : 0.0,
                    c->flops / 1e6, gflops, c->bytes / 1e6, gbs);
    if (r > 0 && hw) r = fprintf(f, " %5.2f", c->cycles ? (double)c->instructions / (double)c->cycles : 0.0);
    return r > 0 && fputc('\n', f) != EOF ? 0 : -1;
}

static int text_phase(FILE *f, const NlProfiler *p, NlPhase ph, int L, int hw) {
    double wall = nl_profiler_wall(p, ph), rows = rows_seconds(p, ph, L);
    uint64_t tokens = nl_profiler_tokens(p, ph);
    int rc = 0;
    if (fprintf(f, "\n== %s: %llu positions through the forward pass\n", nl_phase_name(ph), (unsigned long long)tokens) < 0) return -1;
    fprintf(f, "%5s %-14s %7s %10s %9s %7s %10s %8s %9s %7s%s\n", "layer", "component", "calls", "total ms",
            "us/token", "share", "MFLOP", "GFLOP/s", "MB", "GB/s", hw ? "   IPC" : "");
    char lbuf[16];
    for (int l = -1; l < L; l++)
        for (int c = 0; c < NL_COMP_COUNT; c++) {
            if (is_model_level(c) != (l < 0)) continue;
            snprintf(lbuf, sizeof lbuf, l < 0 ? "-" : "%d", l);
            rc |= print_row(f, lbuf, nl_component_name((NlComponent)c), nl_profiler_cell(p, ph, l, (NlComponent)c), wall, tokens, hw);
        }
    fprintf(f, "-- per layer\n");
    for (int l = 0; l < L; l++) {
        NlProfileCell t = {0};
        for (int c = 0; c < NL_COMP_COUNT; c++) add_cell(&t, nl_profiler_cell(p, ph, l, (NlComponent)c));
        snprintf(lbuf, sizeof lbuf, "%d", l);
        rc |= print_row(f, lbuf, "(all)", &t, wall, tokens, hw);
    }
    fprintf(f, "-- per component, all layers\n");
    for (int c = 0; c < NL_COMP_COUNT; c++) {
        NlProfileCell t = {0};
        for (int l = -1; l < L; l++) add_cell(&t, nl_profiler_cell(p, ph, l, (NlComponent)c));
        rc |= print_row(f, "all", nl_component_name((NlComponent)c), &t, wall, tokens, hw);
    }
    if (fprintf(f, "wall %.3f ms; rows %.3f ms; not covered by any row %.3f ms (%.2f%% of wall)\n", 1e3 * wall,
                1e3 * rows, 1e3 * (wall - rows), wall > 0 ? 100 * (wall - rows) / wall : 0.0) < 0)
        return -1;
    return rc;
}

static void header(FILE *f, const NlProfiler *p, const NlReportInfo *info) {
    fprintf(f, "normlab profile: %s; OpenBLAS threads %d, engine threads %d; hardware counters %s\n", info->model,
            info->blas_threads, info->engine_threads,
            nl_profiler_hw_available(p) ? "on (IPC column)" : "unavailable (perf_event_open refused or absent)");
}

int nl_report_text(FILE *f, const NlProfiler *p, const NlReportInfo *info) {
    int L = nl_profiler_config(p)->n_layer, hw = nl_profiler_hw_available(p), rc = 0;
    header(f, p, info);
    for (int ph = 0; ph < NL_PHASE_COUNT; ph++)
        if (nl_profiler_wall(p, (NlPhase)ph) > 0) rc |= text_phase(f, p, (NlPhase)ph, L, hw);
    return rc || ferror(f) ? -1 : 0;
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
    uint64_t tokens = nl_profiler_tokens(p, ph);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "phase", nl_phase_name(ph));
    cJSON_AddNumberToObject(o, "tokens", (double)tokens);
    cJSON_AddNumberToObject(o, "wall_seconds", wall);
    cJSON_AddNumberToObject(o, "rows_seconds", rows_s);
    cJSON_AddNumberToObject(o, "uncovered_seconds", wall - rows_s);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows"), *layers = cJSON_AddArrayToObject(o, "layer_totals");
    cJSON *comps = cJSON_AddArrayToObject(o, "component_totals");
    for (int l = -1; l < L; l++)
        for (int c = 0; c < NL_COMP_COUNT; c++)
            if (is_model_level(c) == (l < 0))
                cJSON_AddItemToArray(rows, cell_json(l, nl_component_name((NlComponent)c), nl_profiler_cell(p, ph, l, (NlComponent)c), wall, tokens, hw));
    for (int l = 0; l < L; l++) {
        NlProfileCell t = {0};
        for (int c = 0; c < NL_COMP_COUNT; c++) add_cell(&t, nl_profiler_cell(p, ph, l, (NlComponent)c));
        cJSON_AddItemToArray(layers, cell_json(l, "(all)", &t, wall, tokens, hw));
    }
    for (int c = 0; c < NL_COMP_COUNT; c++) {
        NlProfileCell t = {0};
        for (int l = -1; l < L; l++) add_cell(&t, nl_profiler_cell(p, ph, l, (NlComponent)c));
        cJSON_AddItemToArray(comps, cell_json(-1, nl_component_name((NlComponent)c), &t, wall, tokens, hw));
    }
    return o;
}

int nl_report_json(FILE *f, const NlProfiler *p, const NlReportInfo *info) {
    int L = nl_profiler_config(p)->n_layer, hw = nl_profiler_hw_available(p);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", info->model);
    cJSON_AddNumberToObject(root, "blas_threads", info->blas_threads);
    cJSON_AddNumberToObject(root, "engine_threads", info->engine_threads);
    cJSON_AddBoolToObject(root, "hw_counters", hw);
    cJSON *phases = cJSON_AddArrayToObject(root, "phases");
    for (int ph = 0; ph < NL_PHASE_COUNT; ph++) cJSON_AddItemToArray(phases, phase_json(p, (NlPhase)ph, L, hw));
    char *text = cJSON_Print(root);
    int rc = text && fputs(text, f) != EOF && fputc('\n', f) != EOF ? 0 : -1;
    cJSON_free(text);
    cJSON_Delete(root);
    return rc || ferror(f) ? -1 : 0;
}

int nl_report_trace(FILE *f, const NlProfiler *p, const NlReportInfo *info) {
    const NlProfileEvent *ev;
    size_t dropped, n = nl_profiler_events(p, &ev, &dropped);
    cJSON *model = cJSON_CreateString(info->model);  // escaped by cJSON
    char *quoted = cJSON_PrintUnformatted(model);
    fprintf(f, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"model\": %s, \"dropped_events\": %zu},\n"
               "\"traceEvents\": [\n", quoted ? quoted : "null", dropped);
    cJSON_free(quoted);
    cJSON_Delete(model);
    fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"normlab\"}}");
    for (size_t i = 0; i < n; i++) {
        char name[32];
        if (ev[i].comp == NL_COMP_COUNT) snprintf(name, sizeof name, "layer %d", ev[i].layer);
        else snprintf(name, sizeof name, "%s", nl_component_name((NlComponent)ev[i].comp));
        fprintf(f, ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, "
                   "\"tid\": 1, \"args\": {\"layer\": %d}}", name, nl_phase_name((NlPhase)ev[i].phase),
                1e6 * ev[i].start, 1e6 * ev[i].duration, ev[i].layer);
    }
    fputs("\n]}\n", f);
    return ferror(f) ? -1 : 0;
}
