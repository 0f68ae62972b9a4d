// collect.c — each stream's text collected (collect.h): its tokens through its --stop filter, and
// with --n-probs what the sampler recorded of each.
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "collect.h"

// The sampler's record of the token just drawn, at the text's offset at.
static int record_token(Collect *c, int stream, int token, size_t at) {
    Probs *p = &c->probs[stream];
    size_t w = (size_t)c->width + 1;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        int *ids = realloc(p->ids, cap * w * sizeof *ids);
        if (ids) p->ids = ids;
        double *lps = realloc(p->logprobs, cap * w * sizeof *lps);
        if (lps) p->logprobs = lps;
        size_t *ats = realloc(p->at, cap * sizeof *ats);
        if (ats) p->at = ats;
        if (!ids || !lps || !ats) return -1;
        p->cap = cap;
    }
    const int *top;
    const double *top_lp;
    double lp;
    int k = nl_sampler_probs(c->samplers[stream], &lp, &top, &top_lp);
    p->ids[p->n * w] = token;
    p->logprobs[p->n * w] = lp;
    for (int i = 0; i < c->width; i++) {  // (k = width: the vocabulary holds at least width tokens)
        p->ids[p->n * w + 1 + (size_t)i] = i < k ? top[i] : -1;
        p->logprobs[p->n * w + 1 + (size_t)i] = i < k ? top_lp[i] : 0.0;
    }
    p->at[p->n++] = at;
    return 0;
}

// Appends text[0..n) to a stream's text; -1 when out of memory.
static int append_text(Collect *c, int stream, const char *text, size_t n) {
    size_t need = c->len[stream] + n + 1;
    if (need > c->cap[stream]) {
        size_t cap = need * 2;
        char *bigger = realloc(c->text[stream], cap);
        if (!bigger) return -1;
        c->text[stream] = bigger;
        c->cap[stream] = cap;
    }
    if (n) memcpy(c->text[stream] + c->len[stream], text, n);  // (a filter that holds nothing has no text)
    c->len[stream] += n;
    c->text[stream][c->len[stream]] = '\0';
    return 0;
}

// A stream's token through its --stop filter into its text (what the filter holds back follows at
// the stream's end, collect_end).
int collect_token(int stream, int token, void *ctx) {
    Collect *c = ctx;
    if (end_tokens_has(c->end, token)) {
        c->at_eos[stream] = token == c->end.eos ? END_BY_EOS : END_BY_BOS;
        return NL_EMIT_DONE;
    }
    StopFilter *f = &c->stop[stream];
    size_t n, at = c->len[stream] + stop_filter_held(f);  // where the token's bytes start in the text
    const char *piece = nl_tokenizer_bytes(c->tok, token, &n), *out;
    int which, found = stop_filter_push(f, piece, n, &out, &n, &which);
    if (found < 0 || append_text(c, stream, out, n) != 0 || (c->width && record_token(c, stream, token, at) != 0)) {
        c->failed = 1;
        return NL_EMIT_STOP;
    }
    if (!found) return NL_EMIT_CONTINUE;
    c->stopped_by[stream] = f->stops->items[which];  // the stop text and what follows it go
    for (Probs *p = c->width ? &c->probs[stream] : NULL; p && p->n && p->at[p->n - 1] >= c->len[stream];)
        p->n--;  // the tokens wholly inside it go too (a token it starts within stays)
    return NL_EMIT_DONE;
}

int collect_end(Collect *c, int n) {
    for (int i = 0; i < n; i++) {
        const char *out;
        size_t len;
        stop_filter_flush(&c->stop[i], &out, &len);
        if (append_text(c, i, out, len) != 0) return -1;
    }
    return 0;
}

void collect_free(Collect *c, int n) {
    for (int i = 0; c->text && i < n; i++) free(c->text[i]);
    for (int i = 0; c->probs && i < n; i++) {
        free(c->probs[i].ids);
        free(c->probs[i].logprobs);
        free(c->probs[i].at);
    }
    free(c->text);
    free(c->len);
    free(c->cap);
    free(c->stopped_by);
    free(c->at_eos);
    for (int i = 0; c->stop && i < n; i++) stop_filter_free(&c->stop[i]);
    free(c->stop);
    free(c->probs);
}
