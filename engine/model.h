// model.h — the library's view of a loaded model (internal): its weights, pointed into the mapped
// file; and the loader's entry points on bytes in memory, for the fuzz harnesses and tests.
// nl_model_load (normlab.h) is the API for files; these apply the same checks to a buffer.
#ifndef NL_MODEL_H
#define NL_MODEL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "linear.h"
#include "normlab.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

typedef struct {
    NlNormWeights ln_1, ln_2;  // all-NULL for a norm-free model
    NlNormWeights ln_1_post, ln_2_post;  // peri placement only, else all-NULL
    NlLinear attn;  // w (3*D, D) rows: q, k, v; b (3*D) or NULL
    NlLinear proj;  // (D, D)
    NlLinear fc;  // (F, D)
    NlLinear out;  // (D, F)
} NlLayerWeights;

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

// Each family's weights, pointed into the mapped file; a model has one of them.
typedef struct {
    const float *wte;  // (V, D)
    const float *wpe;  // (T, D)
    NlLayerWeights *layers;  // (L)
    NlNormWeights ln_f;  // gain is NULL when the model has no final norm (post, or no norms)
    NlLinear lm_head;  // w (V, D), no bias; w equals wte when embeddings are tied
} NlTransformerWeights;

typedef struct {
    const float *wte;  // (V, E)
    NlRnnLayerWeights *layers;  // (L)
    NlLinear lm_head;  // w (V, S), b (V)
} NlRecurrentWeights;

// Borrowed for the model's lifetime; NULL when the model is of the other family.
const NlTransformerWeights *nl_model_transformer_weights(const NlModel *model);
const NlRecurrentWeights *nl_model_recurrent_weights(const NlModel *model);

// A single-file model ({"config", "tokenizer", "tensors"}) from len bytes; `what` names it in errors.
int nl_model_load_inline(NlModel **out, const char *buf, size_t len, const char *what, NlError *err);
// config.json's and tokenizer.json's parsed JSON, checked (config.c).
int nl_config_from_json(NlConfig *out, const cJSON *root, const char *what, NlError *err);
int nl_tokenizer_from_json(NlTokenizer **out, const cJSON *root, const char *what, NlError *err);
// config.json and tokenizer.json contents.
int nl_config_parse(NlConfig *out, const char *buf, size_t len, const char *what, NlError *err);
int nl_tokenizer_parse(NlTokenizer **out, const char *buf, size_t len, const char *what, NlError *err);

#pragma GCC visibility pop

#endif
