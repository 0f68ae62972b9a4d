// rnn.h — the recurrent models' forward pass (internal): the state of B sequences, each layer's h
// (and the LSTM's c), and nl_forward_batch's work for arch lstm and gru. forward.c owns the NlState
// that wraps it; nothing here is public API.
#ifndef NL_RNN_H
#define NL_RNN_H

#include <stddef.h>

#include "model.h"
#include "normlab.h"

#pragma GCC visibility push(hidden)

typedef struct NlRnn NlRnn;

// A state for `batch` sequences of the model run with norm `norm` (NL_NORM_LAYERNORM or
// NL_NORM_NONE; the caller has checked). A norm the model lacks has unit gain and no bias.
int nl_rnn_create(NlRnn **out, const NlModel *model, NlNormType norm, size_t batch, int threads, NlError *err);
void nl_rnn_free(NlRnn *rnn);
// tokens (B, n): pos 0 starts the first B sequences from the zero state; any other pos must be where the
// previous call left them (positions are only counted, never windowed). Returns the logits of the
// last n_logits positions (B, n_logits, V), n_logits <= NL_RNN_LOGITS.
const float *nl_rnn_forward(NlRnn *rnn, const int *tokens, size_t B, size_t n, size_t pos, size_t n_logits,
                            const NlObserver *obs);
// Sequence `to` continues from sequence `from`'s state (h and c of every layer).
void nl_rnn_copy_state(NlRnn *rnn, size_t from, size_t to);

#pragma GCC visibility pop

#endif
