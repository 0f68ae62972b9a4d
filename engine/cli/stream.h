// stream.h — generated text to an output as it comes (stream.c).
#ifndef NL_CLI_STREAM_H
#define NL_CLI_STREAM_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "stops.h"

// stream.c: generated text to an output as it comes, flushed per token: never a broken UTF-8
// character (its start waits for the rest), never a --stop text (what may begin one waits).
#define HELD_MAX 3  // the start of a UTF-8 character: at most 3 of its 4 bytes
typedef struct {
    const NlTokenizer *tok;
    FILE *out;
    int write_failed;  // an errno once a write failed
    char held[HELD_MAX];  // the start of a UTF-8 character that a later token completes (BPE), not yet written
    size_t n_held;
    StopFilter stop;  // --stop's filter of the text (stop_filter_free it when done)
    EndTokens end;  // the tokens that end the stream, unprinted
    int eos_ended;  // END_BY_EOS or END_BY_BOS once one did
} EmitCtx;
// One token's bytes to e->out: NL_EMIT_CONTINUE, NL_EMIT_DONE when a stop text ended the stream (the
// text before it written), NL_EMIT_STOP when a write failed. An NlEmitFn's body.
int emit_token(int token, void *ctx);
// The end of a stream: the held-back text written, a character left unfinished as U+FFFD; 0 or 1 (failed).
int emit_end(EmitCtx *e);

#endif
