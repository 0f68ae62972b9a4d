// profile.c — per-(phase, layer, component) timers, FLOP and byte counts, trace events, and
// optional hardware counters. Nothing here runs unless a profiler is attached to the state.
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "normlab_internal.h"
#include "normlab_lab.h"

struct NlProfiler {
    NlConfig cfg;
    NlPhase phase;
    double t_origin;
    NlProfileCell *cells;  // (NL_PHASE_COUNT, L + 1, NL_COMP_COUNT); layer -1 stored at index 0
    double wall[NL_PHASE_COUNT];
    uint64_t tokens[NL_PHASE_COUNT];
    uint64_t produced[NL_PHASE_COUNT];  // the tokens each phase produced (0: unset)
    NlProfileEvent *events;  // (cap_events), grown by doubling up to max_events
    size_t n_events, cap_events, max_events, dropped;
    int use_tsc;  // clock in TSC ticks (else seconds of CLOCK_MONOTONIC)
    double tick;  // seconds per clock unit
    int hw_fd;  // perf group leader (cycles), or -1
    uint64_t hw_start[2];  // cycles, instructions at the last begin
    int threads;  // engine threads whose time the cells hold (1 + profilers merged in)
};

static const char *const COMP_NAMES[NL_COMP_COUNT] = {
    "embed",      "norm1",          "qkv",      "attention",  "norm1_sub",  "attn_proj", "norm1_post",
    "residual",   "norm2",          "mlp_up",   "activation", "norm2_sub",  "mlp_down",  "norm2_post",
    "input_proj", "recurrent_proj", "rnn_norm", "gates",      "final_norm", "lm_head",   "sampling"};
static const char *const PHASE_NAMES[NL_PHASE_COUNT] = {"prefill", "decode"};

const char *nl_component_name(NlComponent comp) { return COMP_NAMES[comp]; }
const char *nl_phase_name(NlPhase phase) { return PHASE_NAMES[phase]; }
int nl_component_in_run(const NlConfig *c, NlComponent comp) { return nl_config_has_component(c, comp); }
size_t nl_profile_eval_windows(size_t n, size_t block_size, size_t stride) {
    return nl_eval_windows(n, block_size, stride);
}

// The clock: on x86-64 with an invariant TSC (constant_tsc and nonstop_tsc: monotonic, same rate on
// every core) the raw time-stamp counter, calibrated against CLOCK_MONOTONIC; it does not serialise
// the pipeline, which clock_gettime under a hypervisor's clock source does (measured: +14% on a
// 120-token generate with clock_gettime, ~2% with the TSC). Elsewhere CLOCK_MONOTONIC itself.
#if defined(__x86_64__)
#include <x86intrin.h>

static int invariant_tsc(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    int constant = 0, nonstop = 0;
    while (f && fgets(line, sizeof line, f) && !(constant && nonstop)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
    }
    if (f) fclose(f);
    return constant && nonstop;
}

static double ticks(int tsc) { return tsc ? (double)__rdtsc() : nl_clock_seconds(); }

// Seconds per TSC tick, measured over 5 ms of CLOCK_MONOTONIC.
static double calibrate(void) {
    double t0 = nl_clock_seconds(), c0 = (double)__rdtsc(), t1;
    while ((t1 = nl_clock_seconds()) - t0 < 5e-3) {}
    return (t1 - t0) / ((double)__rdtsc() - c0);
}
#else
static int invariant_tsc(void) { return 0; }
static double ticks(int tsc) {
    (void)tsc;
    return nl_clock_seconds();
}
static double calibrate(void) { return 1.0; }
#endif

static double now(const NlProfiler *p) { return ticks(p->use_tsc); }

// ---- hardware counters (Linux perf_event_open; absent or refused -> unavailable)

static int perf_open(uint64_t config, int group) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_HARDWARE;
    a.size = sizeof a;
    a.config = config;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.read_format = PERF_FORMAT_GROUP;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, group, 0);
}

static void hw_open(NlProfiler *p) {
    p->hw_fd = perf_open(PERF_COUNT_HW_CPU_CYCLES, -1);
    if (p->hw_fd < 0) return;
    if (perf_open(PERF_COUNT_HW_INSTRUCTIONS, p->hw_fd) < 0) {
        close(p->hw_fd);
        p->hw_fd = -1;
        return;
    }
    ioctl(p->hw_fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
}

static void hw_read(const NlProfiler *p, uint64_t out[2]) {
    uint64_t buf[3] = {0, 0, 0};  // nr, cycles, instructions
    if (read(p->hw_fd, buf, sizeof buf) != (ssize_t)sizeof buf) buf[1] = buf[2] = 0;
    out[0] = buf[1];
    out[1] = buf[2];
}

// ---- lifetime

int nl_profiler_create(NlProfiler **out, const NlConfig *cfg, size_t max_events, int hw_counters, NlError *err) {
    *out = NULL;
    NlProfiler *p = calloc(1, sizeof *p);
    size_t n_cells = (size_t)NL_PHASE_COUNT * ((size_t)cfg->n_layer + 1) * NL_COMP_COUNT;
    if (p) {
        p->cells = calloc(n_cells, sizeof *p->cells);
        if (max_events > NL_TRACE_MAX_EVENTS) max_events = NL_TRACE_MAX_EVENTS;
        p->cap_events = max_events < 4096 ? max_events : 4096;  // grows as events arrive
        p->events = p->cap_events ? malloc(p->cap_events * sizeof *p->events) : NULL;
    }
    if (!p || !p->cells || (p->cap_events && !p->events)) {
        nl_error(err, NL_ERR_NOMEM, "out of memory for the profiler");
        if (p) {
            free(p->cells);
            free(p->events);
        }
        free(p);
        return -1;
    }
    p->cfg = *cfg;
    p->max_events = max_events;
    p->hw_fd = -1;
    p->threads = 1;
    if (hw_counters) hw_open(p);
    p->use_tsc = invariant_tsc();
    p->tick = p->use_tsc ? calibrate() : 1.0;
    p->t_origin = now(p);
    *out = p;
    return 0;
}

void nl_profiler_free(NlProfiler *p) {
    if (!p) return;
    if (p->hw_fd >= 0) close(p->hw_fd);  // closing the leader releases the group
    free(p->cells);
    free(p->events);
    free(p);
}

// ---- recording

static NlProfileCell *cell(const NlProfiler *p, NlPhase phase, int layer, NlComponent comp) {
    size_t L1 = (size_t)p->cfg.n_layer + 1;
    return &p->cells[((size_t)phase * L1 + (size_t)(layer + 1)) * NL_COMP_COUNT + comp];
}

void nl_profiler_set_phase(NlProfiler *p, NlPhase phase) {
    if (p) p->phase = phase;
}

double nl_profiler_begin(NlProfiler *p) {
    if (!p) return 0.0;
    if (p->hw_fd >= 0) hw_read(p, p->hw_start);
    return now(p);
}

void nl_profiler_add_wall(NlProfiler *p, double begin) {
    if (p) p->wall[p->phase] += (now(p) - begin) * p->tick;
}

static void add_event(NlProfiler *p, double begin, double end, int layer, int comp) {
    if (p->n_events == p->cap_events) {  // double, up to the cap; past it (or out of memory) count as dropped
        size_t cap = p->cap_events * 2 < p->max_events ? p->cap_events * 2 : p->max_events;
        NlProfileEvent *more = cap > p->cap_events ? realloc(p->events, cap * sizeof *more) : NULL;
        if (!more) {
            p->dropped++;
            return;
        }
        p->events = more;
        p->cap_events = cap;
    }
    p->events[p->n_events++] = (NlProfileEvent){(begin - p->t_origin) * p->tick, (end - begin) * p->tick,
                                                (int16_t)layer, (uint8_t)comp, (uint8_t)p->phase};
}

void nl_profiler_record(NlProfiler *p, double begin, int layer, NlComponent comp, size_t batch, size_t n, size_t ctx) {
    if (!p) return;
    double end = now(p);
    NlProfileCell *c = cell(p, p->phase, layer, comp);
    double flops, bytes;
    nl_profile_cost(&p->cfg, layer, comp, batch, n, ctx, &flops, &bytes);
    c->calls++;
    c->tokens += batch * n;
    c->seconds += (end - begin) * p->tick;
    c->flops += flops;
    c->bytes += bytes;
    if (comp == NL_COMP_EMBED) p->tokens[p->phase] += batch * n;
    if (p->hw_fd >= 0) {
        uint64_t hw[2];
        hw_read(p, hw);
        c->cycles += hw[0] - p->hw_start[0];
        c->instructions += hw[1] - p->hw_start[1];
    }
    add_event(p, begin, end, layer, comp);
}

void nl_profiler_record_layer(NlProfiler *p, double begin, int layer) {
    if (p) add_event(p, begin, now(p), layer, NL_COMP_COUNT);
}

// The profiler as a state's timer (normlab.h NlObserver): the callbacks above, behind void pointers.
static double timer_begin(void *p) { return nl_profiler_begin(p); }
static void timer_record(void *p, double begin, int layer, NlComponent comp, size_t batch, size_t n, size_t ctx) {
    nl_profiler_record(p, begin, layer, comp, batch, n, ctx);
}
static void timer_record_layer(void *p, double begin, int layer) { nl_profiler_record_layer(p, begin, layer); }
static void timer_add_wall(void *p, double begin) { nl_profiler_add_wall(p, begin); }
static void timer_set_phase(void *p, NlPhase phase) { nl_profiler_set_phase(p, phase); }

void nl_state_set_profiler(NlState *state, NlProfiler *prof) {
    NlObserver obs = *nl_state_observer(state);  // the statistics' half stays as it is
    obs.timer = prof;
    obs.begin = prof ? timer_begin : NULL;
    obs.record = prof ? timer_record : NULL;
    obs.record_layer = prof ? timer_record_layer : NULL;
    obs.add_wall = prof ? timer_add_wall : NULL;
    obs.set_phase = prof ? timer_set_phase : NULL;
    nl_state_set_observer(state, &obs);
}

NlProfiler *nl_state_profiler(const NlState *state) {
    const NlObserver *obs = nl_state_observer(state);
    return obs->begin == timer_begin ? obs->timer : NULL;  // another timer is not a profiler
}

void nl_profile_cell_add(NlProfileCell *a, const NlProfileCell *b) {
    a->calls += b->calls;
    a->tokens += b->tokens;
    a->seconds += b->seconds;
    a->flops += b->flops;
    a->bytes += b->bytes;
    a->cycles += b->cycles;
    a->instructions += b->instructions;
}

void nl_profiler_merge(NlProfiler *p, const NlProfiler *other) {
    size_t n_cells = (size_t)NL_PHASE_COUNT * ((size_t)p->cfg.n_layer + 1) * NL_COMP_COUNT;
    for (size_t i = 0; i < n_cells; i++) nl_profile_cell_add(&p->cells[i], &other->cells[i]);
    for (int ph = 0; ph < NL_PHASE_COUNT; ph++) {
        p->wall[ph] += other->wall[ph];
        p->tokens[ph] += other->tokens[ph];
    }
    p->dropped += other->dropped;  // other's events stay out: one trace shows one thread
    p->threads += other->threads;
}

// ---- reading

const NlProfileCell *nl_profiler_cell(const NlProfiler *p, NlPhase phase, int layer, NlComponent comp) {
    return cell(p, phase, layer, comp);
}
double nl_profiler_wall(const NlProfiler *p, NlPhase phase) { return p->wall[phase]; }
uint64_t nl_profiler_tokens(const NlProfiler *p, NlPhase phase) { return p->tokens[phase]; }
void nl_profiler_set_produced(NlProfiler *p, NlPhase phase, uint64_t tokens) { p->produced[phase] = tokens; }
uint64_t nl_profiler_produced(const NlProfiler *p, NlPhase phase) { return p->produced[phase]; }
int nl_profiler_hw_available(const NlProfiler *p) { return p->hw_fd >= 0; }
int nl_profiler_threads(const NlProfiler *p) { return p->threads; }
const NlConfig *nl_profiler_config(const NlProfiler *p) { return &p->cfg; }
int nl_profiler_layers(const NlProfiler *p) { return p->cfg.n_layer; }
const NlFamilyInfo *nl_profiler_family(const NlProfiler *p) { return nl_family_info(p->cfg.arch); }

size_t nl_profiler_events(const NlProfiler *p, const NlProfileEvent **events, size_t *dropped) {
    *events = p->events;
    *dropped = p->dropped;
    return p->n_events;
}
