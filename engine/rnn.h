// rnn.h — the recurrent family's weights (internal; rnn.c binds and runs them, the LSTM's and the
// GRU's tables are there too): one struct for both cells.
#ifndef NL_RNN_H
#define NL_RNN_H

#include "linear.h"
#include "normlab.h"
#include "normlab_internal.h"

#pragma GCC visibility push(hidden)

// The most logits one call on a recurrent model returns per sequence (NlModelDesc.call_logits): a
// call of more positions runs them in chunks of this many.
#define NL_RNN_LOGITS 128

// One recurrent layer; in = E for layer 0, else S. A norm is all-NULL in a plain (norm none) model.
typedef struct {
    NlLinear ih;  // w (G*S, in) rows: LSTM f, i, o, g; GRU z, r, candidate; no bias (below)
    NlLinear hh;  // w (G*S, S) the same rows (the GRU's candidate rows are U)
    const float *bias;  // LSTM (4*S); NULL for the GRU
    const float *bias_ih, *bias_hh;  // plain GRU (3*S) each; else NULL
    NlNormWeights ln_ih, ln_hh;  // LSTM (4*S) over all gates; GRU (2*S) over z, r
    NlNormWeights ln_cell;  // LSTM (S) on the cell before its tanh
    NlNormWeights ln_ih_cand, ln_hh_cand;  // GRU (S) on the candidate's two products
} NlRnnLayerWeights;

typedef struct {
    NlWeight wte;  // (V, E), float32 or another NlDType
    NlRnnLayerWeights *layers;  // (L)
    NlLinear lm_head;  // w (V, S), b (V)
} NlRecurrentWeights;

// Borrowed for the model's lifetime; NULL when the model is not an LSTM or a GRU.
// (model.c)
const NlRecurrentWeights *nl_model_recurrent_weights(const NlModel *model);

#pragma GCC visibility pop

#endif
