// cmd_interactive.c — generate -i, as llama-cli's interactive mode: the prompt, then -n tokens (or
// up to a --stop text), then a line read from standard input continues the text, turn after turn,
// on one KV cache; end of input (Ctrl-D) ends it. "> " on stderr asks for each line.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

// The text so far, as the model sees it: a transformer's window of its last T tokens (on the state's
// cache), or a recurrent model's position count (its state carries the rest).
typedef struct {
    NlState *state;
    int *window;  // (T) a transformer's tokens in the cache
    size_t T, len;
    int windowed;
} Context;

// Feeds ids[0..n) after the text so far; the logits after the last (V), or NULL on a failed pass.
// A transformer whose window would overflow keeps the last T/2 tokens and runs them again (a
// context shift, as generate does).
static const float *feed(Context *c, const int *ids, size_t n) {
    if (!c->windowed) {
        const float *l = nl_forward(c->state, ids, n, c->len, 1);
        c->len += n;
        return l;
    }
    if (c->len + n <= c->T) {
        memcpy(c->window + c->len, ids, n * sizeof *ids);
        const float *l = nl_forward(c->state, ids, n, c->len, 1);
        c->len += n;
        return l;
    }
    size_t keep = c->T / 2 > 0 ? c->T / 2 : 1, from_new = n < keep ? n : keep, from_old = keep - from_new;
    memmove(c->window, c->window + c->len - from_old, from_old * sizeof *ids);
    memcpy(c->window + from_old, ids + n - from_new, from_new * sizeof *ids);
    c->len = keep;
    return nl_forward(c->state, c->window, keep, 0, 1);
}

// One turn: up to -n tokens sampled and streamed, each fed back (the next turn continues after it);
// a --stop text ends the turn early. Returns the logits after the turn, or NULL (the error said).
static const float *one_turn(const Options *o, Context *c, NlSampler *smp, EmitCtx *e, const float *logits) {
    for (long i = 0; i < o->n_new; i++) {
        int tok = nl_sampler_sample(smp, logits);
        if (tok < 0) {
            msg_error("the model produced a non-finite logit");
            return NULL;
        }
        int said = emit_token(tok, e);
        if (said == NL_EMIT_STOP) return NULL;
        logits = feed(c, &tok, 1);
        if (said == NL_EMIT_DONE) break;
    }
    return emit_end(e) ? NULL : logits;
}

// Reads one line (its newline kept) into *line; 0 at the end of input.
static ssize_t read_line(char **line, size_t *cap) {
    fputs("\n> ", stderr);
    fflush(stderr);
    return getline(line, cap, stdin);
}

static int run_turns(const Options *o, const NlModel *model, Context *c, NlSampler *smp, const float *logits) {
    EmitCtx e = {.tok = nl_model_tokenizer(model), .out = stdout, .stops = &o->stops};
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int rc = 0;
    while (!rc && (logits = one_turn(o, c, smp, &e, logits)) && (got = read_line(&line, &cap)) > 0) {
        int *ids = NULL;
        size_t n = 0, skipped = 0;
        if (encode(model, "input", line, (size_t)got, encode_flags(o), &ids, &n, &skipped) != 0 || n == 0) {
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
        logits = feed(c, ids, n);
        free(ids);
    }
    if (!logits) rc = EXIT_DATA;
    if (e.write_failed) msg_error("cannot write to stdout: %s", strerror(e.write_failed));
    if (!rc) fputc('\n', stderr);  // the line after the last "> "
    free(line);
    free(e.pending);
    return rc;
}

// The options a session cannot take: it is one stream, printed as it comes, of one model.
static int check_interactive(const Options *o) {
    const char *why = o->samples > 1                                       ? "--samples"
                      : o->json                                            ? "--json"
                      : o->n_models > 1                                    ? "several -m"
                      : o->profile                                         ? "--profile"
                      : o->exact_window                                    ? "--exact-window"
                      : o->output                                          ? "-o"
                      : o->prompt_file && strcmp(o->prompt_file, "-") == 0 ? "-f -"
                                                                           : NULL;
    if (!why) return 0;
    msg_usage(o->cmd, "-i is one stream printed as it comes, read from standard input: %s does not go with it", why);
    return EXIT_USAGE;
}

int generate_interactive(Options *o) {
    int rc = check_interactive(o);
    if (rc) return rc;
    NlModel *model = NULL;
    NlSampler *smp = NULL;
    Context c = {0};
    int *ids = NULL;
    char *text = NULL;
    size_t n = 0, len = 0;
    if (o->n_models == 1) o->model = o->models[0];
    rc = load_model(o, &model);
    if (!rc) rc = prompt_ids(o, model, NULL, &ids, &n, &text, &len, NULL);
    if (!rc) rc = make_state_as(o, model, 1, o->threads, 1, &c.state);
    uint64_t seed = o->has_seed ? o->seed : seed_from_os();
    size_t T = rc ? 0 : model_context(model);
    if (!rc) rc = make_sampler(o, model, seed, ids, n, &smp);
    c.windowed = !rc && model_windowed(model);
    c.T = T;
    if (!rc && c.windowed && !(c.window = malloc(T * sizeof *c.window))) {
        msg_error("out of memory");
        rc = EXIT_DATA;
    }
    if (!rc && !o->has_seed && o->sampling.temperature > 0) msg_error("seed %llu", (unsigned long long)seed);
    size_t first = c.windowed && n > T ? n - T : 0;  // a prompt longer than the window: its last T
    if (!rc && o->echo && (fwrite(text, 1, len, stdout) != len || fflush(stdout) == EOF)) {
        msg_error("cannot write to stdout: %s", strerror(errno));
        rc = EXIT_DATA;
    }
    const float *logits = rc ? NULL : feed(&c, ids + first, n - first);
    if (!rc) rc = run_turns(o, model, &c, smp, logits);
    free(c.window);
    nl_state_free(c.state);
    nl_sampler_free(smp);
    free(ids);
    free(text);
    nl_model_free(model);
    return rc;
}
