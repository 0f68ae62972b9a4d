// stream.c — generated text streamed to an output as it comes (cli.h): each token flushed, the
// start of a UTF-8 character a BPE token leaves unfinished held for the next, and with --stop the
// text that may begin a stop text held until it does or cannot.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stops.h"
#include "stream.h"
#include "utf8.h"

// Text to the output, flushed, each byte that is not part of valid UTF-8 written as U+FFFD.
static int emit_repaired(EmitCtx *e, const char *s, size_t n) {
    char fixed[3 * (HELD_MAX + NL_TOKEN_MAX_BYTES) + 1];
    size_t k = utf8_repair(s, n, fixed);
    if (fwrite(fixed, 1, k, e->out) != k || fflush(e->out) == EOF) {
        e->write_failed = errno ? errno : EIO;
        return 1;
    }
    return 0;
}

// Bytes to the output, flushed: generation streams. The bytes of a character they leave unfinished
// wait for the next ones, so the output never holds a broken character.
static int emit_bytes(EmitCtx *e, const char *bytes, size_t len) {
    for (size_t at = 0; at < len;) {
        size_t part = len - at < NL_TOKEN_MAX_BYTES ? len - at : NL_TOKEN_MAX_BYTES, n = e->n_held;
        char joined[HELD_MAX + NL_TOKEN_MAX_BYTES];
        memcpy(joined, e->held, n);
        memcpy(joined + n, bytes + at, part);
        n += part;
        at += part;
        size_t keep = utf8_pending(joined, n);
        if (emit_repaired(e, joined, n - keep) != 0) return 1;
        memcpy(e->held, joined + n - keep, keep);
        e->n_held = keep;
    }
    return 0;
}

// One token to the output, through --stop's filter: the text before a stop text is written and the
// stream ends (NL_EMIT_DONE); an end that may begin one waits.
int emit_token(int token, void *ctx) {
    EmitCtx *e = ctx;
    if (end_tokens_has(e->end, token)) {
        e->eos_ended |= token == e->end.eos ? END_BY_EOS : END_BY_BOS;
        return NL_EMIT_DONE;
    }
    size_t len, n;
    const char *bytes = nl_tokenizer_bytes(e->tok, token, &len), *out;
    int which, found = stop_filter_push(&e->stop, bytes, len, &out, &n, &which);
    if (found < 0) {
        e->write_failed = ENOMEM;
        return NL_EMIT_STOP;
    }
    if (emit_bytes(e, out, n)) return NL_EMIT_STOP;
    return found ? NL_EMIT_DONE : NL_EMIT_CONTINUE;
}

// The end of a stream: text held back for --stop is written, and a character left unfinished as U+FFFD.
int emit_end(EmitCtx *e) {
    const char *out;
    size_t n;
    stop_filter_flush(&e->stop, &out, &n);
    if (n && !e->write_failed && emit_bytes(e, out, n)) return 1;
    n = e->n_held;
    e->n_held = 0;
    return n && !e->write_failed ? emit_repaired(e, e->held, n) : 0;
}
