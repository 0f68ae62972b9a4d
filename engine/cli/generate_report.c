// generate_report.c — what generate prints besides the streamed text: the collected samples (as
// blocks or JSON lines, with llama-server's stop fields and --n-probs), and the timing line.
#define _GNU_SOURCE
#include "generate_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "jsonout.h"
#include "process.h"
#include "utf8.h"

static void add_u64(cJSON *o, const char *key, uint64_t v) {  // exact: seeds exceed 2^53
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    cJSON_AddItemToObject(o, key, cJSON_CreateRaw(num));
}

// The timings of a run as JSON fields.
static void add_timings(cJSON *o, const NlGenerateStats *st, int streams) {
    double tokens = (double)st->decode_tokens * streams;
    cJSON_AddNumberToObject(o, "prompt_tokens", (double)st->prompt_used);
    cJSON_AddNumberToObject(o, "prefill_seconds", st->prefill_seconds);
    cJSON_AddNumberToObject(o, "decode_tokens", tokens);
    cJSON_AddNumberToObject(o, "decode_seconds", st->decode_seconds);
    cJSON_AddNumberToObject(o, "decode_tok_s", st->decode_seconds > 0 ? tokens / st->decode_seconds : 0.0);
    cJSON_AddNumberToObject(o, "context_shifts", (double)st->context_shifts);
    if (st->context_shifts) cJSON_AddNumberToObject(o, "shift_seconds", st->shift_seconds);
}

// A token as llama-server shows one: {id, token (its bytes as text), bytes, logprob}.
static cJSON *token_json(const NlTokenizer *tok, int id, double logprob) {
    size_t n;
    const char *piece = nl_tokenizer_bytes(tok, id, &n);
    cJSON *t = cJSON_CreateObject(), *bytes = cJSON_CreateArray();
    cJSON_AddNumberToObject(t, "id", id);
    cJSON_AddItemToObject(t, "token", nl_jsonx_bytes(piece, n));
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)piece[i]));
    cJSON_AddItemToObject(t, "bytes", bytes);
    cJSON_AddNumberToObject(t, "logprob", logprob);
    return t;
}

// --n-probs: "completion_probabilities", each generated token with its top_logprobs.
static cJSON *probs_json(const Collect *c, int stream) {
    const Probs *p = &c->probs[stream];
    size_t w = (size_t)c->width + 1;
    cJSON *all = cJSON_CreateArray();
    for (size_t i = 0; i < p->n; i++) {
        cJSON *t = token_json(c->tok, p->ids[i * w], p->logprobs[i * w]), *top = cJSON_CreateArray();
        for (size_t j = 1; j < w && p->ids[i * w + j] >= 0; j++)
            cJSON_AddItemToArray(top, token_json(c->tok, p->ids[i * w + j], p->logprobs[i * w + j]));
        cJSON_AddItemToObject(t, "top_logprobs", top);
        cJSON_AddItemToArray(all, t);
    }
    return all;
}

// With --stop or an eos: why the stream ended, as llama-server says it: "eos", "word" (and which)
// or "limit" (-n).
static void add_stop(cJSON *j, const Collect *c, int stream) {
    const char *by = c->stopped_by[stream];
    cJSON_AddStringToObject(j, "stop_type", c->at_eos[stream] ? "eos" : by ? "word" : "limit");
    cJSON_AddItemToObject(j, "stopping_word", nl_jsonx_bytes(by ? by : "", by ? strlen(by) : 0));
}

static int print_json(FILE *out, cJSON *o) {
    char *line = nl_jsonx_print(o, 0);  // the one JSON printer: bytes that are not UTF-8 become U+FFFD
    int ok = line && fprintf(out, "%s\n", line) > 0;
    free(line);
    cJSON_Delete(o);
    return ok;
}

// The collected texts: JSON lines ({"sample", "seed", "prompt", "text"}, and the timings for one
// stream), or one block per sample under a '--- sample i, seed S ---' line, each echoing the prompt.
// With several models each JSON line starts with "model" (as given) and "run" (its run_name); NULL: one model.
int print_samples(FILE *out, const Collect *c, int n, uint64_t seed, const Options *o, const char *prompt,
                  size_t prompt_len, const NlGenerateStats *st, const char *model, const char *run) {
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        const char *text = c->text[i] ? c->text[i] : "";
        if (o->json) {
            cJSON *j = cJSON_CreateObject();
            if (model) cJSON_AddStringToObject(j, "model", model);
            if (model) cJSON_AddStringToObject(j, "run", run);
            if (n > 1) cJSON_AddNumberToObject(j, "sample", i);
            add_u64(j, "seed", seed + (uint64_t)i);
            cJSON_AddItemToObject(j, "prompt", nl_jsonx_bytes(prompt, prompt_len));  // (it may hold a NUL)
            cJSON_AddItemToObject(j, "text", nl_jsonx_bytes(text, c->len[i]));  // (a BPE text may hold a NUL)
            if (o->stops.n || end_tokens_any(c->end)) add_stop(j, c, i);
            if (c->width) cJSON_AddItemToObject(j, "completion_probabilities", probs_json(c, i));
            if (n == 1) add_timings(j, st, 1);
            ok = print_json(out, j);
        } else {
            char *fixed = malloc(3 * c->len[i] + 1);  // a BPE text may end inside a character: U+FFFD
            size_t k = fixed ? utf8_repair(text, c->len[i], fixed) : 0;
            size_t echoed = o->echo ? prompt_len : 0;
            ok = fixed &&
                 fprintf(out, "--- sample %d, seed %llu ---\n", i, (unsigned long long)(seed + (uint64_t)i)) > 0 &&
                 fwrite(prompt, 1, echoed, out) == echoed && fwrite(fixed, 1, k, out) == k && fputc('\n', out) != EOF;
            free(fixed);
        }
    }
    return ok && fflush(out) != EOF ? 0 : -1;
}

// Whether stdout and stderr end up in one place (a terminal, or one file or pipe): the timing line
// then starts on a line of its own after the text.
static int same_destination(void) {
    struct stat a, b;
    if (isatty(STDOUT_FILENO) && isatty(STDERR_FILENO)) return 1;
    return fstat(STDOUT_FILENO, &a) == 0 && fstat(STDERR_FILENO, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

// What ended streams early, for print_timing, as bits: 1 --stop (alone, or given beside an end token:
// some of each may have), 2 </s>, 4 a sampled <s> (eos_ended's END_BY_* shifted up one).
int stop_kind(const Options *o, int eos_ended) { return (o->stops.n || !eos_ended) | eos_ended << 1; }

// Timing on stderr; a newline first when the generated text went to the same place and did not end
// its line (at a terminal it does). It counts the
// new characters as -n does: the first comes from the prefill's logits, each later one from a decode
// step ("-n 100": 100 new characters, 99 decode steps). With several models, label names the model
// ("normlab: MODEL: prefill ..."), and the text, which then ends in a newline, needs none; NULL: one model.
void print_timing(const NlGenerateStats *st, size_t n_new, int streams, const char *label, const char *unit,
                  int stopped) {  // stopped: stop_kind's bits, 0 none
    // decode's rate leaves out the steps that shifted the context: those are said apart
    size_t plain = st->decode_tokens > st->context_shifts ? st->decode_tokens - st->context_shifts : 0;
    size_t steps = plain * (size_t)streams;
    double decode = st->decode_seconds - st->shift_seconds;
    char per[64] = "", chars[96], esc[1024], named[1040] = "";
    if (label) snprintf(named, sizeof named, "%s: ", msg_escape(esc, sizeof esc, label));
    if (streams > 1) snprintf(per, sizeof per, " (%zu steps x %d streams)", plain, streams);
    snprintf(chars, sizeof chars, "%zu new %s%s%s%s", n_new, unit, plural(n_new), streams > 1 ? " per stream" : "",
             n_new ? " (the first from the prefill's logits)" : "");
    fprintf(
        stderr,
        "%snormlab: %sprefill %zu token%s in %.2f ms (%.0f tok/s); %s; decode %zu token%s%s in %.2f ms (%.0f tok/s)",
        !label && !isatty(STDOUT_FILENO) && same_destination() ? "\n" : "", named, st->prompt_used,
        plural(st->prompt_used), st->prefill_seconds * 1e3,
        st->prompt_used / (st->prefill_seconds > 0 ? st->prefill_seconds : 1e-9), chars, steps, plural(steps), per,
        decode * 1e3, steps ? (double)steps / (decode > 0 ? decode : 1e-9) : 0.0);
    if (st->context_shifts)
        fprintf(stderr, "; %zu context shift%s in %.2f ms", st->context_shifts, plural(st->context_shifts),
                st->shift_seconds * 1e3);
    if (stopped == 1) fprintf(stderr, "; ended by --stop (the stop text counted, not printed)");
    const char *end = (stopped & 6) == 6 ? "the end-of-sequence token or a sampled begin-of-sequence token"
                      : stopped & 4      ? "a sampled begin-of-sequence token (where run.c ends)"
                                         : "the end-of-sequence token";
    if (stopped >= 2) fprintf(stderr, "; ended by %s%s (counted, not printed)", end, stopped & 1 ? " or --stop" : "");
    fprintf(stderr, "\n");
}

// The new tokens of each stream: -n, or fewer when --stop ended every stream sooner.
size_t new_tokens(const Options *o, const NlGenerateStats *st) {
    size_t n = (size_t)o->n_new;
    return n && st->decode_tokens + 1 < n ? st->decode_tokens + 1 : n;
}
