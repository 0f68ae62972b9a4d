// model.h — the library's view of a loaded model (internal): its weights, pointed into the mapped
// file; and the loader's entry points on bytes in memory, for the fuzz harnesses and tests.
// nl_model_load (normlab.h) is the API for files; these apply the same checks to a buffer.
#ifndef NL_MODEL_H
#define NL_MODEL_H

#include <stddef.h>

#include "normlab_lab.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

typedef struct {
    const float *gain;  // (D)
    const float *bias;  // (D), or NULL (RMSNorm without bias)
    const float *mean, *var;  // (D) BatchNorm's statistics (running, or of the call), else NULL
} NlNormWeights;

typedef struct {
    NlNormWeights ln_1, ln_2;  // all-NULL for a norm-free model
    NlNormWeights ln_1_post, ln_2_post;  // peri placement only, else all-NULL
    const float *attn_w;  // (3*D, D) rows: q, k, v; torch.nn.Linear layout
    const float *attn_b;  // (3*D) or NULL
    const float *proj_w;  // (D, D)
    const float *proj_b;  // (D) or NULL
    const float *fc_w;  // (F, D)
    const float *fc_b;  // (F) or NULL
    const float *out_w;  // (D, F)
    const float *out_b;  // (D) or NULL
} NlLayerWeights;

typedef struct {
    const float *wte;  // (V, D)
    const float *wpe;  // (T, D)
    NlLayerWeights *layers;  // (L)
    NlNormWeights ln_f;  // gain is NULL when the model has no final norm (post, or no norms)
    const float *lm_head;  // (V, D); equals wte when embeddings are tied
} NlWeights;

// Borrowed for the model's lifetime.
const NlWeights *nl_model_weights(const NlModel *model);

// Called by the forward pass (rows x D).
void nl_stats_residual(NlStats *stats, int layer, const float *x, size_t rows);
// post: an output norm of peri placement (ln_1_post, ln_2_post), kept apart from the input norms.
void nl_stats_norm(NlStats *stats, int layer, int post, const float *in, const float *out, NlNormWeights w,
                   size_t rows);
// A sublayer's output as it enters the residual stream (after an output norm).
void nl_stats_branch(NlStats *stats, int layer, const float *branch, size_t rows);

// A single-file model ({"config", "tokenizer", "tensors"}) from len bytes; `what` names it in errors.
int nl_model_load_inline(NlModel **out, const char *buf, size_t len, const char *what, NlError *err);
// config.json and tokenizer.json contents.
int nl_config_parse(NlConfig *out, const char *buf, size_t len, const char *what, NlError *err);
int nl_tokenizer_parse(NlTokenizer **out, const char *buf, size_t len, const char *what, NlError *err);

#pragma GCC visibility pop

#endif
