// cmd_interactive.c — generate -i, as llama-cli's interactive mode: the prompt, then -n tokens (or
// up to a --stop text), then a line read from standard input continues the text, turn after turn,
// on one KV cache; end of input (Ctrl-D) ends it. "> " on stderr asks for each line. As in llama-cli,
// Ctrl-C during a turn ends the turn (back to the prompt), Ctrl-C at the prompt ends the session
// (exit 130), the session's timings are said at its end, and -n -1 runs each turn until the window
// is full.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_generate.h"
#include "models.h"
#include "process.h"
#include "prompts.h"
#include "stream.h"
#include "workers.h"

// The one state a signal handler can set (a flag, as C allows): a Ctrl-C not yet acted on.
static volatile sig_atomic_t ctrl_c;

static void on_ctrl_c(int sig) {
    (void)sig;
    ctrl_c = 1;
}

// Ctrl-C to on_ctrl_c, with flags SA_RESTART (a write it lands in goes on) or 0 (a read ends).
static void set_ctrl_c(int flags) {
    struct sigaction on_int = {.sa_handler = on_ctrl_c, .sa_flags = flags};
    sigemptyset(&on_int.sa_mask);
    sigaction(SIGINT, &on_int, NULL);
}

// The text so far, as the model sees it: the library's sequence context on the session's state (a
// transformer's window of its last T tokens, shifted when full as generate shifts; or a recurrent
// model's state), and the session's counts.
typedef struct {
    NlState *state;
    NlContext *text;
    NlContextPosition pos;  // where the text is: its window's tokens, its shifts
    size_t T;  // the window (SIZE_MAX: none; -n -1, which fills it, is refused there)
    size_t fed, made, turns;  // the tokens read (prompt and lines), those generated, the turns
    double fed_seconds, made_seconds;  // their forward passes (and, for those generated, their sampling)
} Context;

// Feeds ids[0..n) after the text so far; the logits after the last (V).
static const float *feed(Context *c, const int *ids, size_t n) { return nl_context_feed(c->text, ids, 1, n, &c->pos); }

// One turn: up to -n tokens sampled and streamed, each fed back (the next turn continues after it);
// a --stop text ends the turn early. Returns the logits after the turn, or NULL (the error said).
static const float *one_turn(const Options *o, Context *c, NlSampler *smp, EmitCtx *e, const float *logits) {
    c->turns++;
    for (long i = 0; o->n_new < 0 ? c->pos.len < c->T : i < o->n_new; i++) {  // -1: to a full window
        if (ctrl_c) {  // Ctrl-C: this turn ends here
            ctrl_c = 0;
            break;
        }
        double t0 = nl_clock_seconds();
        int tok = nl_sampler_sample(smp, logits);
        double sampled = nl_clock_seconds() - t0;
        if (tok < 0) {
            msg_error("the model produced a non-finite logit");
            return NULL;
        }
        int said = emit_token(tok, e);
        if (said == NL_EMIT_STOP) return NULL;
        double t1 = nl_clock_seconds();
        logits = feed(c, &tok, 1);
        c->made++, c->made_seconds += sampled + (nl_clock_seconds() - t1);  // (the text's writing aside)
        if (said == NL_EMIT_DONE) break;
    }
    return emit_end(e) ? NULL : logits;
}

// Reads one line (its newline kept) into *line; 0 at the end of input.
static ssize_t read_line(char **line, size_t *cap) {
    fputs("\n> ", stderr);
    fflush(stderr);
    set_ctrl_c(0);  // here a Ctrl-C interrupts the read (the session ends); elsewhere calls go on after it
    ssize_t got = ctrl_c ? -1 : getline(line, cap, stdin);  // (one that came just before the read counts)
    set_ctrl_c(SA_RESTART);
    return got;
}

// The tokens read (the prompt and each line), timed: the logits after them.
static const float *timed_feed(Context *c, const int *ids, size_t n) {
    double t0 = nl_clock_seconds();
    size_t had = c->pos.len;
    const float *logits = feed(c, ids, n);
    size_t read = had == 0 && c->pos.len < n ? c->pos.len : n;  // a prompt over the window: its last T
    c->fed += read, c->fed_seconds += nl_clock_seconds() - t0;
    return logits;
}

// The session's timings, as llama-cli prints its own at the end.
static void say_timings(const Context *c, const NlModel *model) {
    const char *unit = token_unit(model);
    msg_error("%zu turn%s; %zu token%s read in %.2f ms (%.0f tok/s); %zu new %s%s in %.2f ms (%.0f tok/s)", c->turns,
              plural(c->turns), c->fed, plural(c->fed), c->fed_seconds * 1e3,
              c->fed / (c->fed_seconds > 0 ? c->fed_seconds : 1e-9), c->made, unit, plural(c->made),
              c->made_seconds * 1e3, c->made / (c->made_seconds > 0 ? c->made_seconds : 1e-9));
}

static int run_turns(const Options *o, const NlModel *model, Context *c, NlSampler *smp, const float *logits) {
    EmitCtx e = {.tok = nl_model_tokenizer(model),
                 .out = stdout,
                 .stop = {.stops = &o->stops},
                 .end = model_end_tokens(o, model)};
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int rc = 0;
    while (!rc && (logits = one_turn(o, c, smp, &e, logits)) && (got = read_line(&line, &cap)) > 0) {
        int *ids = NULL;
        size_t n = 0, skipped = 0;
        int flags = (encode_flags(o) & ~NL_ENCODE_BOS) | NL_ENCODE_CONTINUE;  // the line goes on the text
        if (encode(model, "input", line, (size_t)got, flags, &ids, &n, &skipped) != 0 || n == 0) {
            free(ids);
            fputs("(the line was not read; type another)", stderr);
            continue;  // a line the vocabulary lacks: the text goes on from where it was
        }
        // a terminal shows what was typed; from a pipe or file the line is written, so stdout holds the whole text
        if (!isatty(STDIN_FILENO) && (fwrite(line, 1, (size_t)got, stdout) != (size_t)got || fflush(stdout) == EOF)) {
            free(ids);
            msg_error("cannot write to stdout: %s", strerror(errno));
            rc = EXIT_DATA;
            break;
        }
        for (size_t i = 0; i < n; i++) nl_sampler_accept(smp, ids[i]);
        logits = timed_feed(c, ids, n);
        free(ids);
    }
    if (!logits) rc = EXIT_DATA;
    if (!rc && ctrl_c) rc = EXIT_INTERRUPTED;  // Ctrl-C at the prompt
    if (e.write_failed) msg_error("cannot write to stdout: %s", strerror(e.write_failed));
    if (!rc || rc == EXIT_INTERRUPTED) fputc('\n', stderr);  // the line after the last "> "
    if (!rc || rc == EXIT_INTERRUPTED) say_timings(c, model);
    free(line);
    stop_filter_free(&e.stop);
    return rc;
}

int generate_interactive(Options *o) {
    NlModel *model = NULL;
    NlSampler *smp = NULL;
    Context c = {0};
    int *ids = NULL;
    char *text = NULL;
    size_t n = 0, len = 0;
    if (o->n_models == 1) o->model = o->models[0];
    int rc = load_model(o, &model);
    if (!rc && o->n_new < 0 && !model_windowed(model)) {
        msg_usage(o->cmd, "-n -1 runs each turn until the window is full; a recurrent model has none (give -n N)");
        rc = EXIT_USAGE;
    }
    if (!rc) rc = prompt_ids(o, model, NULL, &ids, &n, &text, &len, NULL);
    if (!rc) rc = make_state_as(o, model, 1, o->threads, 1, &c.state);
    uint64_t seed = o->has_seed ? o->seed : seed_from_os();
    size_t T = rc ? 0 : model_context(model);
    if (!rc) rc = make_sampler(o, model, seed, ids, n, &smp);
    c.T = T;
    NlError err;
    NlContextOptions copts = {.keep = rc ? 0 : model_keep(model, ids, n)};  // (a bos at the start stays)
    if (!rc && nl_context_create(&c.text, c.state, &copts, &err) != 0) rc = fail(&err);
    if (!rc && !o->has_seed && o->sampling.temperature > 0) msg_error("seed %llu", (unsigned long long)seed);
    if (!rc && o->echo && (fwrite(text, 1, len, stdout) != len || fflush(stdout) == EOF)) {
        msg_error("cannot write to stdout: %s", strerror(errno));
        rc = EXIT_DATA;
    }
    // Ctrl-C ends a turn, or the session at the prompt (read_line)
    struct sigaction before;
    ctrl_c = 0;
    int caught = !rc && sigaction(SIGINT, NULL, &before) == 0;
    if (caught) set_ctrl_c(SA_RESTART);
    const float *logits = rc ? NULL : timed_feed(&c, ids, n);
    if (!rc) rc = run_turns(o, model, &c, smp, logits);
    if (caught) sigaction(SIGINT, &before, NULL);
    nl_context_free(c.text);
    nl_state_free(c.state);
    nl_sampler_free(smp);
    free(ids);
    free(text);
    nl_model_free(model);
    return rc;
}
