// cmd_generate.c — generate, and the run profile shares (cmd_profile.c): one path, which a RunMode
// (cli.h) tells what to show: the text, the seed, the profile where.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdatomic.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cmd_generate.h"
#include "generate_report.h"
#include "collect.h"
#include "commands.h"
#include "io_check.h"
#include "jsonout.h"
#include "models.h"
#include "output.h"
#include "process.h"
#include "prompts.h"
#include "report_profile.h"
#include "stops.h"
#include "stream.h"
#include "utf8.h"
#include "workers.h"
#include "option_rows.h"

static int stream_token(int stream, int token, void *ctx) {
    (void)stream;
    return emit_token(token, ctx);
}

static int stream_nothing(int stream, int token, void *ctx) {
    (void)stream;
    (void)token;
    (void)ctx;
    return 0;
}

// One sampler per stream; stream i is seeded with seed + i.
static int make_samplers(const Options *o, const NlModel *model, uint64_t seed, const int *ids, size_t n,
                         NlSampler **samplers) {
    int rc = 0;
    for (int i = 0; i < o->samples && !rc; i++) rc = make_sampler(o, model, seed + (uint64_t)i, ids, n, &samplers[i]);
    return rc;
}

// Streams decoded together in one forward call by default (--samples): groups of 8 measured within
// 5% of one batch of 16 on one thread, and leave groups for a second thread from 16 streams up.
#define SAMPLE_GROUP 8

// --exact-window needs a window: a usage error for a recurrent model (named when label is).
static int check_window(const Options *o, const NlModel *model, const char *label) {
    if (model_windowed(model) || !o->exact_window) return 0;
    if (label) msg_usage(o->cmd, "--exact-window applies to transformers; %s is a recurrent model (no window)", label);
    else msg_usage(o->cmd, "--exact-window applies to transformers; a recurrent model has no window");
    return EXIT_USAGE;
}

// A seed drawn from the OS (drawn) is said (greedy needs none): once, however many models share it.
static void say_seed(const Options *o, int drawn, uint64_t seed) {
    if (!o->has_seed && drawn && o->sampling.temperature > 0) msg_error("seed %llu", (unsigned long long)seed);
}

// generate, and profile (the same run with the text discarded and the profile as the result).
// Several samples run in groups of --batch streams, the groups spread over the engine threads.
// Before decoding: --exact-window needs a window; a random seed is said (greedy needs none).
static int check_run(const Options *o, const RunMode *mode, const NlModel *model, uint64_t seed) {
    int rc = check_window(o, model, NULL);
    if (rc) return rc;
    say_seed(o, mode->draw_seed, seed);
    return 0;
}

// One generate or profile run of one model: what it holds, from setup to cleanup.
typedef struct {
    const RunMode *mode;
    int group, workers, rounds;  // streams per forward call, engine threads, groups per thread
    const char *name;  // with several models: the model as -m gave it; NULL: one model (-m or the default)
    char run[64];  // with several models: its run_name ("layernorm/pre")
    NlModel *model;
    Workers wk;
    NlSampler **samplers;  // (samples)
    OutFile out, trace_o;  // one model's outputs (several share theirs)
    int *ids;  // (n) the prompt's ids
    char *text, *prompt;  // the prompt as read, and as the model saw it (for echoing)
    size_t n, len, prompt_len;  // the prompt's tokens, the text's bytes, the echoed prompt's bytes
    int fell_back;  // the mode's default prompt could not be encoded: the run starts from a newline
    int eos_ended;  // END_BY_* bits: some stream ended at the end-of-sequence token, or at a sampled bos
    uint64_t seed;
    Collect col;  // the texts, with several samples or --json
    NlGenerateStats st;
} GenRun;

// Sizes the run's groups and threads. Hardware counters are opened per thread by the profiler's
// creator: with --counters, one worker.
static void plan_groups(const Options *o, GenRun *r) {
    r->group = o->batch ? o->batch : SAMPLE_GROUP;
    if (r->group > o->samples) r->group = o->samples;
    int n_groups = (o->samples + r->group - 1) / r->group, threads = o->counters ? 1 : o->threads;
    r->workers = threads < n_groups ? threads : n_groups;
    r->rounds = (n_groups + r->workers - 1) / r->workers;
}

// With several models: the prompt as read (given, len bytes), encoded for r's model; its messages
// name the model ("prompt (for MODEL): character ...").
static int prompt_for(const Options *o, GenRun *r, const char *given, size_t len) {
    char what[8400];
    if (!(r->text = malloc(len + 1))) {
        msg_error("out of memory");
        return EXIT_DATA;
    }
    memcpy(r->text, given, len);
    r->text[len] = '\0';
    r->len = len;
    snprintf(what, sizeof what, "%s (for %s)", o->prompt_file ? o->prompt_file : "prompt", r->name);
    return prompt_encode(o, r->model, what, &r->text, &r->len, &r->ids, &r->n);
}

// The model of r, its prompt and its engine states: for one model, -m's (or the default) and
// prompt_ids; with several, r->name and the prompt as read (given, len bytes), encoded for it.
static int setup_model(const Options *o, GenRun *r, const char *given, size_t len) {
    size_t k = (size_t)o->samples;
    r->samplers = calloc(k, sizeof *r->samplers);
    r->col = (Collect){.text = calloc(k, sizeof(char *)),
                       .len = calloc(k, sizeof(size_t)),
                       .cap = calloc(k, sizeof(size_t)),
                       .stop = calloc(k, sizeof(StopFilter)),
                       .stopped_by = calloc(k, sizeof(char *)),
                       .at_eos = calloc(k, 1),
                       .samplers = r->samplers,
                       .width = o->sampling.n_probs,
                       .probs = o->sampling.n_probs ? calloc(k, sizeof(Probs)) : NULL};
    for (size_t i = 0; r->col.stop && i < k; i++) r->col.stop[i].stops = &o->stops;
    int rc = r->samplers && r->col.text && r->col.len && r->col.cap && r->col.stop && r->col.stopped_by &&
                     r->col.at_eos && (r->col.probs || !o->sampling.n_probs)
                 ? 0
                 : EXIT_DATA;
    if (rc) msg_error("out of memory");
    Options with = *o;
    if (r->name) with.model = r->name;
    if (!rc) rc = load_model(&with, &r->model);
    if (!rc)
        rc = r->name
                 ? prompt_for(o, r, given, len)
                 : prompt_ids(o, r->model, r->mode->default_prompt, &r->ids, &r->n, &r->text, &r->len, &r->fell_back);
    // Workers share OpenBLAS's process-wide thread count: one thread per product when there are several.
    // the trace's budget: forward passes, or a recurrent model's positions (the prompt's count)
    size_t passes = (size_t)o->n_new + 2 + (rc == 0 && !model_windowed(r->model) ? r->n : 0);
    if (!rc)
        rc = workers_create(&r->wk, o, r->model, r->workers, r->group, r->workers > 1 ? 1 : o->threads,
                            o->profile || r->mode->profile_result, (size_t)r->rounds * passes);
    if (!rc && r->name) {
        NlModelDesc d = model_desc(r->model);
        run_name(r->run, sizeof r->run, d.arch, o->norm >= 0 ? (NlNormType)o->norm : d.norm,
                 o->placement >= 0 ? (NlPlacement)o->placement : d.placement, run_qk_norm(&d, o->qk_norm));
    }
    return rc;
}

// A prompt longer than the context T keeps its last T - R tokens, R = min(-n - 1, T/2) the room the
// new tokens need before a shift (nanoGPT crops to T, and then the first new token forces a shift;
// --exact-window keeps its T), after a bos at its start, which stays (llama.cpp's n_keep): what is
// dropped is said, naming r's model when there are several. Returns 1 if it cut the prompt.
static int crop_prompt(const Options *o, GenRun *r) {
    size_t T = model_context(r->model), n = r->n, len, bytes = 0;
    if (!model_windowed(r->model) || n <= T) return 0;
    size_t need = o->n_new > 1 && !o->exact_window ? (size_t)o->n_new - 1 : 0, room = need < T / 2 ? need : T / 2;
    size_t keep = T - room, drop = n - keep, bos = model_keep(r->model, r->ids, n);  // (keep >= T/2 >= bos)
    const NlTokenizer *tok = nl_model_tokenizer(r->model);
    int at_start = nl_tokenizer_info(tok).dummy_prefix;
    for (size_t i = bos; i < bos + drop; i++) bytes += (text_piece(tok, r->ids[i], &at_start, &len), len);
    memmove(r->ids + bos, r->ids + bos + drop, (keep - bos) * sizeof *r->ids);
    r->n = keep;
    const char *unit = token_unit(r->model);
    char esc[1024], named[1040] = "";
    if (r->name) snprintf(named, sizeof named, "%s: ", msg_escape(esc, sizeof esc, r->name));
    char left[96] = "";
    if (room)
        snprintf(left, sizeof left, ", leaving room for %zu new %s%s before a context shift", room, unit, plural(room));
    msg_error(
        "warning: %sthe prompt has %zu %ss, more than the context's %zu: its first %zu%s (%zu byte%s) are dropped%s",
        named, n, unit, T, drop, bos ? " after the bos" : "", bytes, plural(bytes), left);
    return 1;
}

// r's prompt cut to fit, its samplers, seeded from r->seed, and the prompt as the model saw it (for echoing).
static int setup_streams(const Options *o, GenRun *r) {
    int whole = !crop_prompt(o, r);
    int rc = make_samplers(o, r->model, r->seed, r->ids, r->n, r->samplers);
    if (!rc && !(r->prompt = prompt_text(r->model, r->ids, r->n, whole, &r->prompt_len))) {
        msg_error("out of memory");
        rc = EXIT_DATA;
    }
    return rc;
}

// Everything the run needs before its first forward pass: outputs checked, the model, the prompt,
// the engine states, the open outputs and the samplers.
static int setup_run(const Options *o, GenRun *r) {
    const char *outs[2] = {o->output ? o->output : "-", o->trace_out};  // the main output is stdout when not given
    int rc = check_outputs(o, outs, o->trace_out ? 2 : 1);
    if (!rc) rc = setup_model(o, r, NULL, 0);
    // With a trace, the table (on stdout) is held until the trace file is in place.
    if (!rc) rc = o->trace_out ? out_open_held(&r->out, o->output ? o->output : "-") : open_main_output(o, &r->out);
    if (!rc && o->trace_out) rc = out_open(&r->trace_o, o->trace_out);
    r->seed = o->has_seed ? o->seed : r->mode->draw_seed ? seed_from_os() : 0;
    if (!rc) rc = setup_streams(o, r);
    return rc;
}

// Decodes every stream of r: streamed to out as it comes (after the prompt, when echoed), or
// collected in r->col; the timings in r->st. *write_failed: an errno once a write of the text failed.
static int decode_streams(const Options *o, GenRun *r, FILE *out, int *write_failed) {
    int collect = o->samples > 1 || o->json;
    size_t T = model_context(r->model), n = r->n;  // a recurrent model's (SIZE_MAX) takes the whole prompt
    EmitCtx ectx = {.tok = nl_model_tokenizer(r->model),
                    .out = out,
                    .stop = {.stops = &o->stops},
                    .end = model_end_tokens(o, r->model)};
    if (o->echo && !collect && r->mode->keep_text &&
        (fwrite(r->prompt, 1, r->prompt_len, out) != r->prompt_len || fflush(out) == EOF))
        ectx.write_failed = errno;
    r->col.tok = nl_model_tokenizer(r->model);
    r->col.end = ectx.end;
    if (o->warmup) nl_forward(r->wk.states[0], r->ids + (n > T ? n - T : 0), n > T ? T : n, 0, 1);
    NlGenerateOptions gopts = {.n_new = (size_t)o->n_new,
                               .exact_window = o->exact_window,
                               .keep = model_keep(r->model, r->ids, n),
                               .emit = !r->mode->keep_text ? stream_nothing
                                       : collect           ? collect_token
                                                           : stream_token,
                               .emit_ctx = collect ? (void *)&r->col : (void *)&ectx};
    NlError err;
    int g = ectx.write_failed ? 1
                              : nl_generate(r->wk.states, (size_t)r->workers, r->samplers, (size_t)o->samples, r->ids,
                                            n, &gopts, &r->st, &err);
    // at a terminal the streamed text ends its line, so that the shell's prompt starts its own (several
    // -m: each block's newline); a file or pipe gets the text's bytes only, as before
    if (!collect && r->mode->keep_text && g >= 0 && !emit_end(&ectx) && !r->name && isatty(fileno(out)) &&
        (fputc('\n', out) == EOF || fflush(out) == EOF))
        ectx.write_failed = errno ? errno : EIO;
    stop_filter_free(&ectx.stop);
    r->eos_ended = ectx.eos_ended;
    for (int i = 0; i < o->samples; i++) r->eos_ended |= r->col.at_eos[i];
    if (g < 0) return fail(&err);
    if (collect && r->mode->keep_text && collect_end(&r->col, o->samples) != 0) r->col.failed = 1;
    if (r->col.failed) {
        msg_error("out of memory for the samples");
        return EXIT_DATA;
    }
    *write_failed = ectx.write_failed;
    return 0;
}

// The run's profile: the result on the main output (profile), or with --profile the full table on
// stderr; a trace (--trace) first. One model's: its engine threads, and OpenBLAS's (one per product
// with several workers).
static int write_profile(const Options *o, const GenRun *r, const NlProfiler *prof) {
    char buf[4400], shown[1024], said[256], rounded[160];
    const char *path = model_path(o, buf, sizeof buf);
    const RunMode *mode = r->mode;
    int json = mode->profile_result && o->json;
    ReportInfo info = {.model = json ? path : msg_escape(shown, sizeof shown, path),
                       .product_threads = r->workers > 1 ? 1 : o->threads,
                       .engine_threads = r->workers,
                       .blas_core = nl_blas_core(),
                       .blas_core_source = o->blas.source,
                       .rounding = rounding_text(o, rounded, sizeof rounded)};
    if (!json) info.model = path;  // the trace is JSON: escaped by its writer
    size_t bpe_tokens = nl_tokenizer_info(nl_model_tokenizer(r->model)).kind != NL_TOKENIZER_CHAR ? r->n : 0;
    const char *prompt = mode->profile_result
                             ? report_prompt_line_tokens(said, sizeof said, o->prompt_file, o->prompt,
                                                         mode->default_prompt, r->fell_back, bpe_tokens)
                             : NULL;
    size_t held, made;
    switch (report_profile_write(mode->profile_result ? r->out.f : stderr, r->trace_o.f, prof, &info, shown, json,
                                 prompt, mode->profile_result && !o->layers, &held, &made)) {
    case REPORT_OK: return 0;
    case REPORT_TRACE_FULL:
        msg_error("the trace holds at most %zu events and this run made %zu; profile fewer tokens (-n)", held, made);
        return EXIT_DATA;
    case REPORT_TRACE_FAILED: msg_error("%s: write failed: %s", o->trace_out, strerror(errno)); return EXIT_DATA;
    default: msg_error("cannot write the profile: %s", strerror(errno)); return EXIT_DATA;
    }
}

// Decodes every stream: streamed as it comes, or collected and printed whole; then the timing
// line and the profile. write_failed: an errno once a write of the text failed.
static int decode_run(const Options *o, GenRun *r, int *write_failed) {
    int collect = o->samples > 1 || o->json, rc = decode_streams(o, r, r->out.f, write_failed);
    if (rc) return rc;
    if (collect && r->mode->keep_text &&
        print_samples(r->out.f, &r->col, o->samples, r->seed, o, r->prompt, r->prompt_len, &r->st, NULL, NULL) != 0)
        *write_failed = errno ? errno : EIO;
    if (*write_failed) return EXIT_DATA;
    print_timing(&r->st, new_tokens(o, &r->st), o->samples, NULL, token_unit(r->model),
                 new_tokens(o, &r->st) < (size_t)o->n_new ? stop_kind(o, r->eos_ended) : 0);
    NlProfiler *prof = workers_profile(&r->wk);
    if (prof) {  // per-token figures: the prompt's tokens, and the tokens decoded (not re-run after a shift)
        nl_profiler_set_produced(prof, NL_PHASE_PREFILL, nl_profiler_tokens(prof, NL_PHASE_PREFILL));
        nl_profiler_set_produced(prof, NL_PHASE_DECODE, r->st.decode_tokens * (uint64_t)o->samples);
    }
    return prof ? write_profile(o, r, prof) : 0;
}

// Frees what a run held (not its outputs).
static void run_free(const Options *o, GenRun *r) {
    free(r->ids);
    free(r->text);
    free(r->prompt);
    workers_free(&r->wk);
    for (int i = 0; r->samplers && i < o->samples; i++) nl_sampler_free(r->samplers[i]);
    free(r->samplers);
    collect_free(&r->col, o->samples);
    nl_model_free(r->model);
}

// Puts the outputs in place (all or none) and frees what the run held; returns rc, or EXIT_DATA
// when the outputs could not be put in place.
static int finish_run(const Options *o, GenRun *r, int rc) {
    OutFile *const outputs[2] = {&r->trace_o, &r->out};
    if (out_finish_all(outputs, 2, rc == 0) != 0) rc = EXIT_DATA;
    run_free(o, r);
    return rc;
}

// generate's own mode: the text is the result, the seed is said, --profile goes to stderr.
static const RunMode GENERATE = {.keep_text = 1, .draw_seed = 1, .profile_result = 0, .default_prompt = NULL};

int generate_run(Options *o, const RunMode *mode) {
    GenRun r = {.mode = mode};
    plan_groups(o, &r);
    int rc = setup_run(o, &r), write_failed = 0;
    if (!rc) rc = check_run(o, mode, r.model, r.seed);
    if (!rc) rc = decode_run(o, &r, &write_failed);
    if (write_failed) msg_error("cannot write %s: %s", o->output ? o->output : "to stdout", strerror(write_failed));
    return finish_run(o, &r, rc);
}

// generate with several -m: one run per model in the order given, all with one seed, every one set
// up (model loaded, prompt encoded for it, states and samplers made) before anything is printed.
typedef struct {
    int n;
    GenRun *runs;  // (n)
    OutFile out;  // the models' blocks, one after another
    char *text;  // the prompt as read, once ("-f -" reads standard input once)
    size_t len;
} ManyRun;

static int many_setup(const Options *o, ManyRun *m) {
    const char *outs[1] = {o->output ? o->output : "-"};
    m->runs = calloc((size_t)o->n_models, sizeof *m->runs);
    m->n = m->runs ? o->n_models : 0;
    int rc = m->runs ? 0 : EXIT_DATA;
    if (rc) msg_error("out of memory");
    if (!rc) rc = check_outputs(o, outs, 1);
    if (!rc) rc = prompt_read(o, &m->text, &m->len);
    uint64_t seed = o->has_seed ? o->seed : seed_from_os();  // every model's samplers draw the same numbers
    for (int i = 0; !rc && i < m->n; i++) {
        GenRun *r = &m->runs[i];
        r->mode = &GENERATE;
        r->name = o->models[i];
        r->seed = seed;
        plan_groups(o, r);
        rc = setup_model(o, r, m->text, m->len);
        if (!rc) rc = check_window(o, r->model, r->name);
    }
    if (!rc) say_seed(o, 1, seed);
    if (!rc) rc = open_main_output(o, &m->out);
    for (int i = 0; !rc && i < m->n; i++) rc = setup_streams(o, &m->runs[i]);
    return rc;
}

// "=== MODEL (RUN) ===", with DeepNorm's alpha where the model's residual is scaled.
static int print_header(FILE *out, const GenRun *r) {
    NlModelDesc d = model_desc(r->model);
    double alpha = desc_number(&d, "residual_scale", 1.0);  // a post model's (DeepNorm's)
    if (alpha != 1.0) return fprintf(out, "=== %s (%s, DeepNorm alpha %.4g) ===\n", r->name, r->run, alpha) > 0;
    return fprintf(out, "=== %s (%s) ===\n", r->name, r->run) > 0;
}

// Each model's block in turn: its header line, then its text streamed as it comes and a newline;
// with --samples or --json, every model's streams collected first and then printed whole (JSON lines
// with "model" and "run"). Then each model's timing line.
static int many_decode(const Options *o, ManyRun *m, int *write_failed) {
    int collect = o->samples > 1 || o->json;
    FILE *out = m->out.f;
    for (int i = 0; i < m->n; i++) {
        GenRun *r = &m->runs[i];
        if (!collect && !print_header(out, r)) *write_failed = errno ? errno : EIO;
        int rc = *write_failed ? 0 : decode_streams(o, r, out, write_failed);
        if (rc) return rc;
        if (!*write_failed && !collect && (fputc('\n', out) == EOF || fflush(out) == EOF))
            *write_failed = errno ? errno : EIO;
        if (*write_failed) return EXIT_DATA;
    }
    for (int i = 0; collect && i < m->n; i++) {
        GenRun *r = &m->runs[i];
        if ((!o->json && !print_header(out, r)) || print_samples(out, &r->col, o->samples, r->seed, o, r->prompt,
                                                                 r->prompt_len, &r->st, r->name, r->run) != 0) {
            *write_failed = errno ? errno : EIO;
            return EXIT_DATA;
        }
    }
    for (int i = 0; i < m->n; i++)
        print_timing(&m->runs[i].st, new_tokens(o, &m->runs[i].st), o->samples, m->runs[i].name,
                     token_unit(m->runs[i].model),
                     new_tokens(o, &m->runs[i].st) < (size_t)o->n_new ? stop_kind(o, m->runs[i].eos_ended) : 0);
    return 0;
}

static int many_finish(const Options *o, ManyRun *m, int rc) {
    if (out_finish(&m->out, rc == 0) != 0) rc = EXIT_DATA;
    for (int i = 0; i < m->n; i++) run_free(o, &m->runs[i]);
    free(m->runs);
    free(m->text);
    return rc;
}

static int generate_many(const Options *o) {
    ManyRun m = {0};
    int rc = many_setup(o, &m), write_failed = 0;
    if (!rc) rc = many_decode(o, &m, &write_failed);
    if (write_failed) msg_error("cannot write %s: %s", o->output ? o->output : "to stdout", strerror(write_failed));
    return many_finish(o, &m, rc);
}

// One model (-m once, or the default) is generate_run; several run one after another (generate_many),
// --profile refused: its report is one model's.
int cmd_generate(Options *o) {
    prompt_warn_number(o);
    if (o->interactive) return generate_interactive(o);
    if (o->n_models == 1) o->model = o->models[0];
    if (o->n_models < 2) return generate_run(o, &GENERATE);
    return generate_many(o);
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec GENERATE_OPTIONS[] = {
    OPT_HELP,
    {.name = "model",
     .letter = 'm',
     .type = OT_MODELS,
     .arg = "NAME|PATH",
     .def_text = "$NORMLAB_MODEL, else shakespeare-pre-ln",
     .help = "a model by name ('normlab list') or path (a directory or a .json file). Repeatable: the same "
             "prompt, seed and sampling through each model in the order given, each block under a line "
             "'=== MODEL (RUN) ===' (RUN: norm/placement, or family/norm for a recurrent model) and ending in a "
             "newline; every model must know the prompt's characters (checked before any output); one model "
             "with --profile"},
    OPT_PROMPT,
    OPT_START,
    OPT_PROMPT_FILE,
    OPT_STEPS,
    OPT_SAMPLING,
    {.name = "n-probs",
     .type = OT_INT,
     .arg = "N",
     .lo = 0,
     .hi = NL_SAMPLER_PROBS_MAX,
     .range = "an integer in [0, 100]",
     .def = "0",
     .field = OPT_FIELD(sampling.n_probs),
     .help = "with --json: each sample's \"completion_probabilities\", one {id, token, logprob, top_logprobs} per "
             "generated token, top_logprobs the N most likely {id, token, logprob} of the model's own distribution "
             "(temperature 1, no penalties), natural logs, as llama-server's"},
    {.name = "stop",
     .alias = "reverse-prompt",
     .letter = 'r',
     .type = OT_LIST,
     .arg = "TEXT",
     .field = OPT_FIELD(stops),
     .help = "end a stream where its new text first holds TEXT, found across tokens; TEXT itself is not "
             "printed. Repeatable: the first of them to appear ends it (-r, --reverse-prompt: llama.cpp's names)"},
    {.name = "ignore-eos",
     .type = OT_FLAG,
     .field = OPT_FIELD(ignore_eos),
     .value = 1,
     .help = "a sentencepiece model: go on past its end-of-sequence token (</s>) and a sampled begin-of-sequence "
             "token (<s>), either of which otherwise ends a stream unprinted, as in llama.cpp (llama2.c's run.c "
             "ends at <s>); the other kinds have none"},
    {.name = "interactive",
     .letter = 'i',
     .type = OT_FLAG,
     .field = OPT_FIELD(interactive),
     .value = 1,
     .help = "after the prompt's -n tokens (or a --stop text, which stays in the context unprinted), read a line "
             "from standard input (asked with '> ' on stderr) and continue the text after it with -n more, turn "
             "after turn on one KV cache (a full window shifts, keeping its last half); the end of input "
             "(Ctrl-D) ends it. llama-cli's -i"},
    OPT_ESCAPE,
    {.name = "seed",
     .letter = 's',
     .type = OT_SEED,
     .arg = "S",
     .range = "-1 (random) or an integer in [0, 2^64-1]",
     .def = "-1",
     .help = "-1 draws a seed from the system and prints it to stderr; a given seed is not printed. With several -m, "
             "one seed for all (printed once): every model's sampler draws the same random numbers"},
    {.name = "echo",
     .type = OT_FLAG,
     .field = OPT_FIELD(echo),
     .value = 1,
     .help = "print the prompt before the continuation (the default)"},
    {.name = "no-echo",
     .type = OT_FLAG,
     .field = OPT_FIELD(echo),
     .value = 0,
     .help = "do not print the prompt before the continuation (for scripts)"},
    {.name = "json",
     .type = OT_FLAG,
     .field = OPT_FIELD(json),
     .value = 1,
     .help = "one JSON object: {seed, prompt, text, prompt_tokens, prefill_seconds, decode_tokens, "
             "decode_seconds, decode_tok_s, context_shifts}, and shift_seconds after a context shift (decode_* "
             "count every decode step, the shifts' too; the line on stderr says those apart); with --stop or an "
             "end-of-sequence token, also llama-server's {stop_type, stopping_word}; with --samples N > 1, one "
             "line per sample: "
             "{sample, seed, prompt, text}; with several -m, those lines for each model in turn, each starting with "
             "{model (as given), run (as in the text's header)}, all printed once every model is done"},
    OPT_OUTPUT,
    OPT_SAMPLES,
    OPT_BATCH,
    OPT_THREADS_AS("an integer in [1, 1024] (the threads: run.c's -t, the temperature, is --temp here)", NULL,
                   THREADS_EVERY_CPU,
                   "engine threads: sample groups run side by side; one stream's matrix-vector products and "
                   "attention heads are split over N threads (at most the CPUs). The text is the same at any N"),
    OPT_NORM,
    OPT_PLACEMENT,
    OPT_QK_NORM,
    OPT_BN_STATS,
    OPT_EXACT_WINDOW,
    OPT_SKIP_UNKNOWN,
    OPT_SPECIAL,
    {.name = "warmup",
     .type = OT_FLAG,
     .field = OPT_FIELD(warmup),
     .value = 1,
     .help = "run the prompt once, untimed, before the timed run (benchmarks)"},
    OPT_PROFILE,
    OPT_COUNTERS,
    OPT_QUANTIZE,
    OPT_QUANTIZE_ONLY,
    OPT_QUANTIZE_ACT,
    OPT_NO_MMAP,
    OPT_NO_REPACK,
    OPT_END,
};

// generate -i: one stream, printed as it comes, of one model, reading standard input
#define ALONE_WITH_I(b, what)                                                                              \
    {                                                                                                      \
        REL_CONFLICTS, GIVEN_INT(interactive), b,                                                          \
            "-i is one stream printed as it comes, read from standard input: " what " does not go with it" \
    }

const OptRelation GENERATE_RELATIONS[] = {
    QUANTIZE_ONLY(quantize),
    START_ALONE,
    PROMPT_OR_FILE,
    COUNTERS_NEED_PROFILE,
    REQUIRES(GIVEN_INT(sampling.n_probs), GIVEN_INT(json),
             "--n-probs goes with --json: the probabilities are written in the JSON lines"),
    ALONE_WITH_I(GIVEN_ABOVE(samples, 1), "--samples"),
    ALONE_WITH_I(GIVEN_INT(json), "--json"),
    ALONE_WITH_I(GIVEN_ABOVE(n_models, 1), "several -m"),
    ALONE_WITH_I(GIVEN_INT(profile), "--profile"),
    ALONE_WITH_I(GIVEN_INT(exact_window), "--exact-window"),
    ALONE_WITH_I(GIVEN_TEXT(output), "-o"),
    ALONE_WITH_I(GIVEN_AS(prompt_file, "-"), "-f -"),
    REQUIRES(GIVEN_BELOW(n_new, 0), GIVEN_INT(interactive),
             "-n -1 (each turn until the window is full) goes with -i; give generate a count"),
    CONFLICTS(GIVEN_INT(profile), GIVEN_ABOVE(n_models, 1), "--profile takes one model, got %d (-m)"),
    REL_END,
};
