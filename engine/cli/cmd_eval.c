// cmd_eval.c — eval: bits per character (or token) of a text.
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

#include <time.h>

#include "cli.h"
#include "commands.h"
#include "io_check.h"
#include "kl.h"
#include "models.h"
#include "normlab_lab.h"
#include "output.h"
#include "process.h"
#include "prompts.h"
#include "report_profile.h"
#include "workers.h"
#include "option_rows.h"

// Progress on a terminal, as llama-perplexity shows it: from one second in, tokens done (characters
// for a character model), rate and time left, redrawn at most 4 times a second.
typedef struct {
    double last;  // seconds into the call when the line was last drawn
    int shown;
    int chars;  // a character model: its tokens are characters
} Progress;

static void eval_progress(size_t done, size_t total, double el, void *ctx) {
    Progress *p = ctx;
    if (el < 1.0 || (el - p->last < 0.25 && done < total)) return;
    double rate = (double)done / el;
    fprintf(stderr, "\reval: %zu / %zu %s (%.0f%%), %.0f %s/s, %.0f s left   ", done, total,
            p->chars ? "characters" : "tokens", 100.0 * (double)done / (double)total, rate, p->chars ? "chars" : "tok",
            rate > 0 ? (double)(total - done) / rate : 0.0);
    p->last = el;
    p->shown = 1;
}

// Windows per eval forward call by default: as many as fill EVAL_ROWS positions (8 windows of 128).
#define EVAL_ROWS 1024

// Mean nats/char and its standard error (sample standard deviation of the per-character losses over
// sqrt(N)); perplexity's error follows by the delta method, exp(m) * se.
static void eval_stats(const NlEvalResult *r, double *mean, double *se) {
    double n = (double)r->count;
    *mean = r->nll_sum / n;
    double var = n > 1 ? (r->nll_sq_sum - n * *mean * *mean) / (n - 1) : 0.0;
    *se = sqrt((var > 0 ? var : 0.0) / n);
}

// The options that apply to one kind of model only: --stride and --batch to a transformer's windows,
// --segments to a recurrent model.
static int check_eval_options(const Options *o, int windowless) {
    const char *wrong = windowless && o->stride      ? "--stride applies to transformers' windows"
                        : windowless && o->batch     ? "--batch applies to transformers' windows"
                        : windowless && o->chunk     ? "--chunk applies to transformers' windows"
                        : !windowless && o->segments ? "--segments applies to recurrent (lstm, gru) models"
                                                     : NULL;
    if (!wrong) return 0;
    msg_usage(o->cmd, "%s; %s", wrong,
              windowless ? "a recurrent model scores the text through one unbroken state (or --segments N)"
                         : "a transformer scores windows of its context");
    return EXIT_USAGE;
}

// The result, as JSON or as text; `how` names the way the text was cut ("stride", or a recurrent
// model's "segments") and `cut` its value. The figures are per token ("char" for a character
// model, "token" for a BPE one; perplexity too), then per byte of the scored text (bytes: the
// tokens' after the first), in which models of either kind compare. The JSON names the unit
// ("unit"), and a character model's adds the per-token keys a BPE model's have (the same values as
// its per-char ones), so that `tokens`, `bits_per_token` and `bits_per_byte` hold for either kind.
// Returns 0 when a write failed.
static int print_eval(FILE *out, int json, const NlEvalResult *r, double nats, double se, size_t skipped,
                      const char *how, size_t cut, const char *unit, size_t bytes) {
    double bits = nats / log(2.0), ppl = exp(nats), per_byte = bytes ? (double)r->count / (double)bytes : 0.0;
    char ppl_s[32] = "null", ppl_se[32] = "null";  // JSON has no infinity: e^nats overflows past 709 nats/char
    const char *units = strcmp(unit, "char") == 0 ? "chars" : "tokens";
    if (isfinite(ppl)) snprintf(ppl_s, sizeof ppl_s, "%.9g", ppl);
    if (isfinite(ppl * se)) snprintf(ppl_se, sizeof ppl_se, "%.9g", ppl * se);
    char per_token[256] = "";  // a character model's: the per-token keys a BPE model's JSON has
    if (strcmp(unit, "token") != 0)
        snprintf(per_token, sizeof per_token,
                 ", \"tokens\": %zu, \"nats_per_token\": %.9g, \"nats_per_token_stderr\": %.9g, "
                 "\"bits_per_token\": %.9g, \"bits_per_token_stderr\": %.9g",
                 r->count, nats, se, bits, se / log(2.0));
    if (json)  // (the new keys before stride or segments, which stays the last of these)
        return fprintf(out,
                       "{\"%s\": %zu, \"nats_per_%s\": %.9g, \"nats_per_%s_stderr\": %.9g, \"bits_per_%s\": "
                       "%.9g, \"bits_per_%s_stderr\": %.9g, \"perplexity\": %s, \"perplexity_stderr\": %s, "
                       "\"bytes\": %zu, \"bits_per_byte\": %.9g, \"bits_per_byte_stderr\": %.9g, \"skipped\": %zu, "
                       "\"unit\": \"%s\"%s, \"%s\": %zu",
                       units, r->count, unit, nats, unit, se, unit, bits, unit, se / log(2.0), ppl_s, ppl_se, bytes,
                       bits * per_byte, se / log(2.0) * per_byte, skipped, unit, per_token, how, cut) > 0;
    return fprintf(out,
                   "%s %zu\nnats/%s %.6f +/- %.6f\nbits/%s %.6f +/- %.6f\nperplexity %.6f +/- %.6f\n%s %zu\n"
                   "bytes %zu\nbits/byte %.6f +/- %.6f\n",
                   units, r->count, unit, nats, se, unit, bits, se / log(2.0), ppl, ppl * se, how, cut, bytes,
                   bits * per_byte, se / log(2.0) * per_byte) > 0;
}

// After print_eval's JSON: --kl's figures, the per-token losses (--json -o FILE), and the closing brace;
// as text, --kl's lines. Returns 0 when a write failed.
static int print_extras(FILE *out, int json, const NlKlRecord *r, const NlKlSummary *k) {
    int ok = 1;
    if (r->compare && json)
        ok &= fprintf(out,
                      ", \"kl_divergence\": %.9g, \"kl_divergence_stderr\": %.9g, \"kl_divergence_median\": %.9g, "
                      "\"kl_divergence_p99\": %.9g, \"kl_divergence_max\": %.9g, \"same_top\": %.9g, "
                      "\"same_top_stderr\": %.9g, \"ln_ppl_ratio\": %.9g, \"ln_ppl_ratio_stderr\": %.9g",
                      k->kl, k->kl_se, k->median, k->p99, k->max, k->same_top, k->same_top_se, k->ln_ratio,
                      k->ln_ratio_se) > 0;
    else if (r->compare)
        ok &= fprintf(out,
                      "kl_divergence %.6f +/- %.6f\nkl_divergence_median %.6f\nkl_divergence_p99 %.6f\n"
                      "kl_divergence_max %.6f\nsame_top %.4f%% +/- %.4f%%\nln(PPL/PPL(base)) %.6f +/- %.6f\n",
                      k->kl, k->kl_se, k->median, k->p99, k->max, 100 * k->same_top, 100 * k->same_top_se, k->ln_ratio,
                      k->ln_ratio_se) > 0;
    if (json && r->nll) {
        ok &= fputs(", \"token_nll\": [", out) != EOF;
        const char *sep = "";  // (--chunk's unscored positions hold NaN: left out)
        for (size_t i = 0; i < r->n && ok; i++)
            if (!isnan(r->nll[i])) ok &= fprintf(out, "%s%.9g", sep, r->nll[i]) > 0, sep = ", ";
        ok &= fputc(']', out) != EOF;
    }
    return ok && (!json || fputs("}\n", out) != EOF);
}

// --lens and --attention (a transformer's): the lab's figures read from the eval's own pass, on its
// one state, as compare reads them (docs/lab.md).
typedef struct {
    NlStats *stats;  // with --attention
    NlLens *lens;  // with --lens
    int L, H;
    double *bits;  // (L + 1) the lens's bits per token read after each layer
    NlLensLayer *layers;  // (L + 1)
    const char *reading;  // how the lens read a layer (docs/lab.md): "recompute", "final", "last affine", "head"
    int sink_bos;  // nl_attention_sink_bos of the text
} EvalLab;

static void eval_lab_free(EvalLab *lab) {
    nl_stats_free(lab->stats);
    nl_lens_free(lab->lens);
    free(lab->bits);
    free(lab->layers);
}

// The statistics and the lens, attached to the one state; 0 or an exit status after a message.
static int eval_lab_create(const Options *o, const NlModel *model, NlState *state, const int *ids, size_t n,
                           size_t stride, EvalLab *lab) {
    const NlConfig *c = nl_state_config(state);
    NlModelDesc d = model_desc(model);
    lab->L = d.n_layer;
    for (size_t i = 0; i < d.n_fields; i++)
        if (strcmp(d.fields[i].key, "n_head") == 0) lab->H = (int)d.fields[i].number;
    NlError err;
    int rc = 0;
    if (o->attention && nl_stats_create(&lab->stats, c, d.window, NL_STATS_ATTENTION | NL_STATS_NO_STREAM, &err) != 0)
        rc = -1;
    if (!rc && o->lens) {
        lab->bits = malloc((size_t)(lab->L + 1) * sizeof *lab->bits);
        lab->layers = malloc((size_t)(lab->L + 1) * sizeof *lab->layers);
        if (!lab->bits || !lab->layers) {
            msg_error("out of memory for the lens");
            return EXIT_DATA;
        }
        if (nl_lens_create(&lab->lens, c, 1, ids, n, stride, &err) != 0) rc = -1;
        if (!rc) (void)nl_lens_set_scale(lab->lens, c, (NlLensScale)o->lens_scale);
        if (!rc) lab->reading = nl_lens_reading(lab->lens);
    }
    if (rc) return fail(&err);
    if (lab->stats) nl_state_set_stats(state, lab->stats);
    lab->sink_bos = nl_attention_sink_bos(model, ids, n, stride);
    return 0;
}

// The lens's layers and the attention statistics after the result: text lines, or JSON members.
static int print_lab(FILE *out, int json, const EvalLab *lab) {
    int ok = !lab->lens ||
             (json ? fprintf(out, ", \"lens_reading\": \"%s\"", lab->reading)
                   : fprintf(out, "lens reading %s (docs/lab.md#the-logit-lens-compare---lens)\n", lab->reading)) > 0;
    for (int l = 0; lab->lens && l <= lab->L && ok; l++) {
        const NlLensLayer *y = &lab->layers[l];
        ok = json ? fprintf(out,
                            "%s{\"layer\": %d, \"bits_per_token\": %.9g, \"kl_bits\": %.9g, \"kl_bits_stderr\": "
                            "%.9g, \"entropy_bits\": %.9g, \"top1_agreement\": %.9g}%s",
                            l ? ", " : ", \"lens\": [", l, lab->bits[l], y->kl_bits, y->kl_bits_stderr, y->entropy_bits,
                            y->top1_agree, l == lab->L ? "]" : "") > 0
                  : fprintf(out, "lens %d bits %.6f kl_bits %.6f +/- %.6f entropy_bits %.6f top1 %.4f\n", l,
                            lab->bits[l], y->kl_bits, y->kl_bits_stderr, y->entropy_bits, y->top1_agree) > 0;
    }
    static const char *const SINK[] = {"text", "bos_first_window", "bos"};
    if (lab->stats && ok)  // (a bos model's later windows begin anywhere in the text: docs/lab.md)
        ok = (json ? fprintf(out, ", \"sink_token\": \"%s\"", SINK[lab->sink_bos])
                   : fprintf(out, "attention sink token %s\n", SINK[lab->sink_bos])) > 0;
    for (int l = 0; lab->stats && l < lab->L && ok; l++)
        for (int h = 0; h < lab->H && ok; h++) {
            NlAttentionStats a;
            (void)nl_stats_attention(lab->stats, l, h, &a);
            const char *open = h ? "" : l ? "[" : ", \"attention\": [[";
            const char *close = h + 1 < lab->H ? ", " : l + 1 < lab->L ? "], " : "]]";
            ok = json ? fprintf(out,
                                "%s{\"entropy_bits\": %.9g, \"sink\": %.9g, \"self\": %.9g, \"uniform\": %.9g, "
                                "\"distance\": %.9g, \"queries\": %llu, \"queries_past_first\": %llu}%s",
                                open, a.entropy_bits, a.sink, a.self, a.uniform, a.distance,
                                (unsigned long long)a.queries, (unsigned long long)a.queries_past_first, close) > 0
                      : fprintf(out,
                                "attention %d.%d entropy_bits %.6f sink %.6f self %.6f uniform %.6f distance %.4f\n", l,
                                h, a.entropy_bits, a.sink, a.self, a.uniform, a.distance) > 0;
        }
    return ok;
}

// How eval cuts the text: windows of a transformer's context at a stride, in batches of windows
// a forward call; or a windowless model's segments, run together through one state.
typedef struct {
    int windowless;
    size_t stride, segments, chunk;  // chunk: llama-perplexity's chunks (0: windows at the stride)
    int batch, workers;  // sequences a forward call; engine threads (one state each)
    int product_threads;  // threads each state splits its products over (NlRunOptions.threads)
    size_t calls;  // forward calls a worker makes, at most (profile --trace budget)
} EvalPlan;

// The plan for n ids through model, or a usage error for options that do not fit it.
static int plan_eval(const Options *o, const NlModel *model, size_t n, EvalPlan *p) {
    p->windowless = !model_windowed(model);  // no window: the text goes through one state
    int rc = check_eval_options(o, p->windowless);
    if (rc) return rc;
    size_t T = model_context(model);
    p->segments = o->segments ? (size_t)o->segments : 1;
    if (!p->windowless && (size_t)o->stride > T) {
        msg_usage(o->cmd, "--stride %ld is larger than the model's context (block_size %zu)", o->stride, T);
        return EXIT_USAGE;
    }
    p->stride = o->stride ? (size_t)o->stride : (T / 2 ? T / 2 : 1);
    p->chunk = p->windowless ? 0 : (size_t)o->chunk;
    if (p->chunk > T) {
        msg_usage(o->cmd, "--chunk %zu is larger than the model's context (block_size %zu)", p->chunk, T);
        return EXIT_USAGE;
    }
    // One state per worker thread, each running whole windows with one OpenBLAS thread per product.
    // A recurrent model: one state, its segments (one unless asked) run together.
    p->batch = p->windowless ? (int)p->segments : o->batch ? o->batch : (int)(EVAL_ROWS / T > 0 ? EVAL_ROWS / T : 1);
    if (o->lens || o->attention) p->batch = 1;  // the lab's figures come from one state, a window a call
    size_t windows = p->windowless ? 1 : p->chunk ? n / p->chunk : nl_profile_eval_windows(n, T, p->stride);
    size_t groups = (windows + (size_t)p->batch - 1) / (size_t)p->batch;  // a forward call a group
    p->calls = groups;
    if (groups < 1) groups = 1;  // a text too short to score: eval says so, from one state
    p->workers = o->counters || o->lens || o->attention ? 1 : o->threads;  // counters: one thread (see generate)
    if ((size_t)p->workers > groups) p->workers = (int)groups;  // no state for a worker without a window
    // Threads left over (fewer groups than threads: a text shorter than a few windows) split each
    // state's products, as one stream's are (llama-perplexity's -t); the bits do not change.
    p->product_threads = o->counters ? 1 : o->threads / p->workers;
    if (p->windowless) p->product_threads = o->threads;  // (one state; its large sgemv may split)
    if (p->windowless && (o->lens || o->attention)) {
        msg_usage(o->cmd, "%s reads a residual stream and attention: a recurrent model has neither",
                  o->lens ? "--lens" : "--attention");
        return EXIT_USAGE;
    }
    if (p->windowless && p->segments > (n > 1 ? n - 1 : 1)) {
        msg_usage(o->cmd, "--segments %zu: the text has %zu %ss to score", p->segments, n > 1 ? n - 1 : 0,
                  token_unit(model));
        return EXIT_USAGE;
    }
    if (p->windowless) p->calls = n / p->segments + 2;  // the positions of each segment
    return 0;
}

// Scores ids[0..n) as planned (with a progress line on a terminal) into *r; the seconds it took.
static int score(const Options *o, const NlModel *model, const Workers *wk, const EvalPlan *p, const int *ids, size_t n,
                 NlKlRecord *rec, EvalLab *lab, NlEvalResult *r, double *seconds) {
    NlError err;
    Progress prog = {0.0, 0, nl_tokenizer_info(nl_model_tokenizer(model)).kind == NL_TOKENIZER_CHAR};
    NlProgressFn show = isatty(STDERR_FILENO) ? eval_progress : NULL;
    int record = rec->nll || rec->base;
    NlEvalOptions eo = {.stride = p->stride,
                        .segments = p->segments,
                        .progress = show,
                        .progress_ctx = &prog,
                        .scored = record ? nl_kl_scored : NULL,
                        .scored_ctx = rec,
                        .chunk = p->chunk,
                        .chunk_bos = nl_tokenizer_info(nl_model_tokenizer(model)).add_bos};
    int failed = lab->lens ? nl_lens_eval(lab->lens, wk->states[0], &eo, r, &err)
                           : nl_eval(wk->states, (size_t)p->workers, ids, n, &eo, r, &err);
    if (!failed && lab->lens)
        failed = nl_lens_bits(lab->lens, lab->bits, &err) != 0 || nl_lens_layers(lab->lens, lab->layers, &err) != 0;
    if (failed) {
        if (prog.shown) fprintf(stderr, "\n");
        msg_error("%s: %s", o->text_file, err.msg);
        return exit_code(&err);
    }
    *seconds = r->seconds;
    if (prog.shown) fprintf(stderr, "\r%80s\r", "");
    return 0;
}

int cmd_eval(Options *o) {
    if (!o->text_file) {
        msg_usage(o->cmd, "%s", "give the text with -f FILE (or --text FILE)");
        return EXIT_USAGE;
    }
    if (o->kl_from_base && !o->kl_base) {
        msg_usage(o->cmd, "%s",
                  "--kl with no FILE reads the --kl-base FILE (llama-perplexity's '--kl-divergence-base "
                  "FILE --kl-divergence'): give that FILE, or --kl FILE");
        return EXIT_USAGE;
    }
    if (o->kl_from_base && !o->kl) o->kl = o->kl_base, o->kl_base = NULL;  // read the reference, not write it
    if (o->kl && o->kl_base) {
        msg_usage(o->cmd, "%s", "give --kl-base (write the reference) or --kl (compare with it), not both");
        return EXIT_USAGE;
    }
    NlModel *model = NULL;
    Workers wk = {0};
    OutFile out = {0}, base_out = {0};
    KlRecord rec = {0};
    EvalLab lab = {0};
    int *ids = NULL;
    char *text = NULL;
    size_t n = 0, len = 0, skipped = 0;
    EvalPlan p;
    const char *outs[2] = {o->output ? o->output : "-", o->kl_base};
    int rc = o->output || o->kl_base ? check_outputs(o, outs, o->kl_base ? 2 : 1) : 0;
    if (!rc) rc = load_model(o, &model);
    if (!rc) rc = read_text(o->text_file, &text, &len);  // (eval)
    if (!rc) rc = encode(model, o->text_file, text, len, encode_flags(o), &ids, &n, &skipped);
    if (!rc) rc = plan_eval(o, model, n, &p);
    if (!rc && n < 2) {  // (the engine's own message counts characters: a BPE model's text counts tokens)
        msg_error("%s: the text needs at least 2 %ss to score one", o->text_file, token_unit(model));
        rc = EXIT_DATA;
    }
    // the per-token losses go to a JSON file (-o FILE, not stdout)
    int per_token = o->json && o->output && strcmp(o->output, "-") != 0;
    if (!rc && n >= 2)
        rc = kl_record_init(&rec, o->kl_base, o->kl, per_token, (size_t)model_desc(model).vocab_size, ids, n,
                            p.windowless, p.windowless ? p.segments : p.stride);
    for (size_t i = 0; !rc && p.chunk && rec.pos.nll && i < rec.pos.n; i++) rec.pos.nll[i] = NAN;  // (the unscored)
    if (!rc && o->kl_base) rc = out_open(&base_out, o->kl_base);
    if (!rc) rc = workers_create(&wk, o, model, p.workers, p.batch, p.product_threads, o->profile, p.calls);
    if (!rc && (o->lens || o->attention)) rc = eval_lab_create(o, model, wk.states[0], ids, n, p.stride, &lab);
    if (!rc) rc = open_main_output(o, &out);
    NlEvalResult r;
    double seconds = 0.0, nats, se;
    if (!rc) rc = score(o, model, &wk, &p, ids, n, &rec.pos, &lab, &r, &seconds);
    NlKlSummary kls = {0};
    NlError err;
    if (!rc && rec.pos.compare && nl_kl_summary(&rec.pos, &kls, &err) != 0) {
        msg_error("%s", err.msg);
        rc = EXIT_DATA;
    }
    if (!rc && o->kl_base && kl_base_write(base_out.f, &rec) != 0) {
        msg_error("cannot write %s: %s", o->kl_base, strerror(errno));
        rc = EXIT_DATA;
    }
    if (rc) goto cleanup;
    eval_stats(&r, &nats, &se);
    int chars = nl_tokenizer_info(nl_model_tokenizer(model)).kind == NL_TOKENIZER_CHAR;
    int threads = p.windowless ? p.workers : p.workers * p.product_threads;  // (windows' and products')
    fprintf(stderr, "normlab: scored %zu %ss in %.2f s (%.0f %s/s) on %d thread%s\n", r.count, token_unit(model),
            seconds, (double)r.count / (seconds > 0 ? seconds : 1e-9), chars ? "chars" : "tok", threads,
            plural((size_t)threads));
    int ok = print_eval(out.f, o->json, &r, nats, se, skipped,
                        p.windowless ? "segments"
                        : p.chunk    ? "chunk"
                                     : "stride",
                        p.windowless ? p.segments
                        : p.chunk    ? p.chunk
                                     : p.stride,
                        chars ? "char" : "token", r.bytes);
    if (ok && p.chunk && !o->json)  // llama-perplexity's last line, to set beside its own
        ok = fprintf(out.f, "Final estimate: PPL = %.4f +/- %.5f\n", exp(nats), exp(nats) * se) > 0;
    ok = ok && print_lab(out.f, o->json, &lab) && print_extras(out.f, o->json, &rec.pos, &kls);
    if (!ok || fflush(out.f) == EOF) {
        msg_error("cannot write %s: %s", o->output ? o->output : "to stdout", strerror(errno));
        rc = EXIT_DATA;
    }
    NlProfiler *prof = rc ? NULL : workers_profile(&wk);
    if (prof) {
        nl_profiler_set_produced(prof, NL_PHASE_PREFILL, r.count);  // per scored token
        char buf[4400], shown[1024], rounded[160];
        ReportInfo info = {.model = msg_escape(shown, sizeof shown, model_path(o, buf, sizeof buf)),
                           .product_threads = p.product_threads,
                           .engine_threads = p.workers,
                           .blas_core = nl_blas_core(),
                           .blas_core_source = o->blas.source,
                           .rounding = rounding_text(o, rounded, sizeof rounded)};
        if (report_profile_text(stderr, prof, &info) != 0) rc = EXIT_DATA;
    }
cleanup:;
    OutFile *const outputs[2] = {&base_out, &out};
    if (out_finish_all(outputs, 2, rc == 0) != 0) rc = EXIT_DATA;
    kl_record_free(&rec);
    workers_free(&wk);  // (before the statistics it holds)
    eval_lab_free(&lab);
    free(ids);
    free(text);
    nl_model_free(model);
    return rc;
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec EVAL_OPTIONS[] = {
    OPT_HELP,
    OPT_MODEL,
    OPT_TEXT_FILE,
    OPT_TEXT,
    {.name = "json",
     .type = OT_FLAG,
     .field = OPT_FIELD(json),
     .value = 1,
     .help = "one JSON object: {chars, nats_per_char, nats_per_char_stderr, bits_per_char, bits_per_char_stderr, "
             "perplexity, perplexity_stderr, bytes, bits_per_byte, bits_per_byte_stderr, skipped, unit (char), tokens, "
             "nats_per_token, nats_per_token_stderr, bits_per_token, bits_per_token_stderr, stride, chunk or "
             "segments}; a BPE "
             "model's has only the per-token keys, with unit token; "
             "with --kl, then {kl_divergence, kl_divergence_stderr, kl_divergence_median, kl_divergence_p99, "
             "kl_divergence_max, same_top, same_top_stderr, ln_ppl_ratio, ln_ppl_ratio_stderr}; into a file (-o "
             "FILE), then token_nll: each scored token's -ln p, in nats"},
    {.name = "kl-base",
     .alias = "kl-divergence-base",
     .type = OT_STRING,
     .arg = "FILE",
     .field = OPT_FIELD(kl_base),
     .help = "write every scored position's log-probabilities to FILE, the reference for --kl (llama-perplexity's "
             "--kl-divergence-base; float32, V per position, whole or not at all)"},
    {.name = "kl",
     .alias = "kl-divergence",
     .type = OT_STRING,
     .arg = "FILE",
     .flags = OPT_VALUE_OPTIONAL,
     .field = OPT_FIELD(kl),
     .bare_field = OPT_FIELD(kl_from_base),
     .help = "compare with a --kl-base FILE of the same text and vocabulary: the mean KL divergence from it with its "
             "error, median, 99th percentile and maximum, the share of positions with the same most likely token, "
             "and ln(PPL / PPL(base)) (llama-perplexity's --kl-divergence). With no FILE (llama-perplexity's "
             "two-flag form, '--kl-divergence-base FILE --kl-divergence'), it reads the --kl-base FILE"},
    OPT_OUTPUT,
    OPT_LENS,
    OPT_LENS_SCALE,
    OPT_ATTENTION,
    {.name = "batch",
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 256,
     .range = "an integer in [1, 256]",
     .def_text = "1024 / block_size, at least 1",
     .field = OPT_FIELD(batch),
     .help = "windows per forward call; changes the order of float sums, so the last digits may differ (with "
             "--bn-stats batch the statistics are those of the call's windows)"},
    OPT_THREADS("engine threads, each scoring its share of the windows (a recurrent model: its products split "
                "by rows); the result is the same at any N"),
    OPT_NORM,
    OPT_PLACEMENT,
    OPT_QK_NORM,
    OPT_BN_STATS,
    OPT_SKIP_UNKNOWN,
    OPT_SPECIAL,
    OPT_PROFILE,
    OPT_COUNTERS,
    {.name = "stride",
     .type = OT_LONG,
     .arg = "N",
     .lo = 1,
     .hi = 65536,
     .range = "an integer in [1, 65536]",
     .def_text = "block_size/2",
     .field = OPT_FIELD(stride),
     .help = "window step for texts longer than the context, at most block_size: each character is scored "
             "once, with at least block_size - N characters of context; the last window ends at the text's end"},
    {.name = "chunk",
     .type = OT_LONG,
     .arg = "N",
     .lo = 3,
     .hi = 65536,
     .range = "an integer in [3, 65536]",
     .def_text = "none: windows at --stride",
     .field = OPT_FIELD(chunk),
     .help = "score as llama-perplexity -c N does: the text (a bos first, where the model adds one) in chunks of "
             "N tokens, each from its own start with the bos in its first place, only each chunk's second half "
             "scored (its last N - 1 - N/2 targets), the text past the last whole chunk not at all; at most "
             "block_size, and the text at least 2N tokens. A text result ends with llama-perplexity's 'Final "
             "estimate' line"},
    {.name = "segments",
     .type = OT_LONG,
     .arg = "N",
     .lo = 1,
     .hi = 4096,
     .range = "an integer in [1, 4096]",
     .def_text = "1",
     .field = OPT_FIELD(segments),
     .help = "recurrent models (lstm, gru), which score the text through one unbroken state: cut it into N "
             "parts, each from the zero state, run together (faster; every cut loses its context, so the loss "
             "rises)"},
    OPT_QUANTIZE,
    OPT_QUANTIZE_ONLY,
    OPT_QUANTIZE_ACT,
    OPT_NO_MMAP,
    OPT_NO_REPACK,
    OPT_END,
};

// --chunk scores half of each chunk: not with the options whose windows score every position.
#define NOT_WITH_CHUNK(b, name)                                                          \
    {                                                                                    \
        REL_CONFLICTS, GIVEN_LONG(chunk), b,                                             \
            "--chunk scores each chunk's second half from its own start: not with " name \
            ", whose windows score every position"                                       \
    }
const OptRelation EVAL_RELATIONS[] = {
    QUANTIZE_ONLY(quantize),
    NOT_WITH_CHUNK(GIVEN_LONG(stride), "--stride"),
    NOT_WITH_CHUNK(GIVEN_INT(lens), "--lens"),
    NOT_WITH_CHUNK(GIVEN_INT(attention), "--attention"),
    NOT_WITH_CHUNK(GIVEN_TEXT(kl), "--kl"),
    NOT_WITH_CHUNK(GIVEN_TEXT(kl_base), "--kl-base"),
    COUNTERS_NEED_PROFILE,
    REQUIRES(GIVEN_INT(lens_scale), GIVEN_INT(lens), "--lens-scale is how --lens reads a layer: give --lens too"),
    CONFLICTS(GIVEN_INT(lens), GIVEN_INT(batch), "--lens runs one window a call, on one thread's state: not --batch"),
    CONFLICTS(GIVEN_INT(attention), GIVEN_INT(batch),
              "--attention runs one window a call, on one thread's state: not --batch"),
    REL_END};
