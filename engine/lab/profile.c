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

#include "normlab_lab.h"

struct NlProfiler {
    NlConfig cfg;
    NlPhase phase;
    double t_origin;
    NlProfileCell *cells;  // (NL_PHASE_COUNT, L + 1, NL_COMP_COUNT); layer -1 stored at index 0
    double wall[NL_PHASE_COUNT];
    uint64_t tokens[NL_PHASE_COUNT];
    NlProfileEvent *events;  // (cap_events), grown by doubling up to max_events
    size_t n_events, cap_events, max_events, dropped;
    int use_tsc;  // clock in TSC ticks (else seconds of CLOCK_MONOTONIC)
    double tick;  // seconds per clock unit
    int hw_fd;  // perf group leader (cycles), or -1
    uint64_t hw_start[2];  // cycles, instructions at the last begin
    int threads;  // engine threads whose time the cells hold (1 + profilers merged in)
};

static const char *const COMP_NAMES[NL_COMP_COUNT] = {
    "embed",    "norm1",  "qkv",        "attention", "attn_proj",  "norm1_post", "residual",
    "norm2",    "mlp_up", "activation", "mlp_down",  "norm2_post", "input_proj", "recurrent_proj",
    "rnn_norm", "gates",  "final_norm", "lm_head",   "sampling"};
static const char *const PHASE_NAMES[NL_PHASE_COUNT] = {"prefill", "decode"};

const char *nl_component_name(NlComponent comp) { return COMP_NAMES[comp]; }
const char *nl_phase_name(NlPhase phase) { return PHASE_NAMES[phase]; }

static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

static double ticks(int tsc) { return tsc ? (double)__rdtsc() : monotonic(); }

// Seconds per TSC tick, measured over 5 ms of CLOCK_MONOTONIC.
static double calibrate(void) {
    double t0 = monotonic(), c0 = (double)__rdtsc(), t1;
    while ((t1 = monotonic()) - t0 < 5e-3) {}
    return (t1 - t0) / ((double)__rdtsc() - c0);
}
#else
static int invariant_tsc(void) { return 0; }
static double ticks(int tsc) {
    (void)tsc;
    return monotonic();
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
    nl_profile_cost(&p->cfg, comp, batch, n, ctx, &flops, &bytes);
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
int nl_profiler_hw_available(const NlProfiler *p) { return p->hw_fd >= 0; }
int nl_profiler_threads(const NlProfiler *p) { return p->threads; }
const NlConfig *nl_profiler_config(const NlProfiler *p) { return &p->cfg; }

size_t nl_profiler_events(const NlProfiler *p, const NlProfileEvent **events, size_t *dropped) {
    *events = p->events;
    *dropped = p->dropped;
    return p->n_events;
}

// ---- counting rules (README "Profiling"): a multiply-add is 2 FLOPs, every other arithmetic
// operation or transcendental 1; bytes are the tensors read and written (weights, activations,
// KV cache), 4 bytes per float, scratch excluded.

static double norm_flops(const NlConfig *c) {
    double D = c->n_embd;
    // LayerNorm: sum (D), centre + square + accumulate (3D), centre + scale + gain + bias (4D).
    // RMSNorm: square + accumulate (2D), scale + gain + bias (3D). Bias assumed present.
    // BatchNorm: centre, add eps, square root, divide, gain, bias (6D) per row; the batch
    // statistics' passes are not counted. None: no norm runs.
    switch (c->norm) {
    case NL_NORM_LAYERNORM: return 8 * D;
    case NL_NORM_BATCHNORM: return 6 * D;
    case NL_NORM_NONE: return 0;
    default: return 5 * D;
    }
}

static double act_flops(NlActivation a) { return a == NL_ACT_GELU ? 5 : a == NL_ACT_GELU_TANH ? 9 : 1; }

// A linear (n, in) -> (n, out): 2 n in out FLOPs (+ n out for the bias); weights read once.
static void linear_cost(const NlConfig *c, double n, double in, double out, double *flops, double *bytes) {
    *flops = 2 * n * in * out + (c->bias ? n * out : 0);
    *bytes = 4 * (in * out + (c->bias ? out : 0) + n * in + n * out);
}

// Attention of one sequence: n queries against ctx keys.
static void attention_cost(const NlConfig *c, double n, double ctx, double *flops, double *bytes) {
    double D = c->n_embd;
    // The fused kernel computes only the unmasked (query, key) pairs: q k^T and p v, 2 Dh FLOPs
    // each per head, so 4 D per pair in all; softmax (max, subtract + exp, sum, scale) 4 per score.
    double unmasked = n * (ctx - n) + n * (n + 1) / 2;
    *flops = 4 * unmasked * D + 4 * unmasked * c->n_head;
    *bytes = 4 * (n * 3 * D + 2 * n * D + 2 * ctx * D + n * D);  // qkv in, K/V appended, K/V read, out
}

void nl_profile_cost(const NlConfig *c, NlComponent comp, size_t batch, size_t n_, size_t ctx_, double *flops,
                     double *bytes) {
    double B = (double)batch, ctx = (double)ctx_, D = c->n_embd, F = c->n_inner, V = c->vocab_size;
    double S = c->n_hidden, G = c->arch == NL_ARCH_LSTM ? 4 : 3;
    double n = B * (double)n_;  // rows through the row-wise components and the linears
    *flops = 0;
    *bytes = 0;
    switch (comp) {
    case NL_COMP_EMBED:
        *flops = n * D;
        *bytes = 4 * 3 * n * D;
        break;
    case NL_COMP_NORM1:
    case NL_COMP_NORM2:
    case NL_COMP_NORM1_POST:
    case NL_COMP_NORM2_POST:
    case NL_COMP_FINAL_NORM:
        *flops = n * norm_flops(c);
        *bytes = 4 * (2 * n * D + 2 * D);
        break;
    case NL_COMP_QKV: linear_cost(c, n, D, 3 * D, flops, bytes); break;
    case NL_COMP_ATTN_PROJ: linear_cost(c, n, D, D, flops, bytes); break;
    case NL_COMP_MLP_UP: linear_cost(c, n, D, F, flops, bytes); break;
    case NL_COMP_MLP_DOWN: linear_cost(c, n, F, D, flops, bytes); break;
    case NL_COMP_ATTENTION:
        attention_cost(c, (double)n_, ctx, flops, bytes);
        *flops *= B;
        *bytes *= B;
        break;
    case NL_COMP_RESIDUAL:
        *flops = n * D;
        *bytes = 4 * 3 * n * D;
        break;
    case NL_COMP_ACTIVATION:
        *flops = n * F * act_flops(c->activation);
        *bytes = 4 * 2 * n * F;
        break;
    case NL_COMP_RNN_INPUT: linear_cost(c, n, ctx, G * S, flops, bytes); break;
    case NL_COMP_RNN_RECURRENT: linear_cost(c, n, S, G * S, flops, bytes); break;
    case NL_COMP_RNN_NORM:  // ctx features a row: LayerNorm 8 FLOPs each; plain cells only add biases
        *flops = n * ctx * (c->norm == NL_NORM_LAYERNORM ? 8 : 1);
        *bytes = 4 * (2 * n * ctx + 2 * ctx);
        break;
    case NL_COMP_RNN_GATES:  // per unit. LSTM: update of c (ctx 0) 4 adds, 3 sigmoid/tanh, 3 products and
        // sums; h (ctx 1) 2 sigmoid/tanh and a product. GRU: 2 adds, 3 sigmoid/tanh, 5 products and sums
        if (c->arch == NL_ARCH_LSTM && ctx_ == 1) {
            *flops = n * S * 3;
            *bytes = 4 * n * 3 * S;  // o and the normalised cell in, h out
        } else {
            *flops = n * S * 10;
            *bytes = 4 * n * (2 * G * S + 2 * S);  // both projections in, the state in and out
        }
        break;
    case NL_COMP_LM_HEAD:
        if (S > 0) D = S;  // a recurrent model's head reads h and adds a bias
        *flops = 2 * n * D * V + (S > 0 ? n * V : 0);
        *bytes = 4 * (V * D + n * D + n * V + (S > 0 ? V : 0));
        break;
    case NL_COMP_SAMPLING:
        *flops = 0;
        *bytes = 4 * B * V;
        break;
    case NL_COMP_COUNT: break;
    }
}
