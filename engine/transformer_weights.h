// transformer_weights.h — the transformer family's weights, pointed into the model file, and the
// family's operations on them (internal; transformer_weights.c). The family's table is in
// transformer.c; these are its bind, matrices, copy and free.
#ifndef NL_TRANSFORMER_WEIGHTS_H
#define NL_TRANSFORMER_WEIGHTS_H

#include "bind.h"
#include "family.h"
#include "linear.h"
#include "normlab.h"
#include "normlab_internal.h"

#pragma GCC visibility push(hidden)

typedef struct {
    NlNormWeights norm[NL_NS_COUNT];  // the norms the model's recipe names (recipe.h), else all-NULL
    NlNormWeights q_norm, k_norm;  // (Dh) QK-norm's gains (Llama family with qk_norm), else all-NULL
    NlLinear attn;  // w ((H + 2 KVH) Dh, D) rows: q (H heads), k, v (KVH heads each); b or NULL
    NlLinear proj;  // (D, D)
    NlLinear fc;  // (F, D), or gated (2F, D): rows 0..F-1 the gate, F..2F-1 the up projection
    NlLinear out;  // (D, F)
} NlLayerWeights;

typedef struct {
    NlWeight wte;  // (V, D), float32 or another NlDType
    NlWeight wpe;  // (T, D) float32; data NULL with RoPE
    NlLayerWeights *layers;  // (L)
    NlNormWeights ln_f;  // gain is NULL when the model has no final norm (post, or no norms)
    NlLinear lm_head;  // w (V, D), no bias; w equals wte when embeddings are tied
} NlTransformerWeights;

// Borrowed for the model's lifetime; NULL when the model is not a transformer.
// (model.c)
const NlTransformerWeights *nl_model_transformer_weights(const NlModel *model);

// The NlFamily operations of family.h.
int nl_transformer_bind(void **weights, const NlConfig *cfg, NlBinder *b);
void *nl_transformer_copy_weights(const void *weights, const NlConfig *cfg);
void nl_transformer_free_weights(void *weights);
size_t nl_transformer_matrices(void *weights, const NlConfig *cfg, NlMatrixSlot *slots);

#pragma GCC visibility pop

#endif
