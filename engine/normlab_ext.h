// normlab_ext.h — the core's second public header: what a lab, a command line or a tool asks of a
// model and of a forward pass beyond running them (normlab.h). Implemented in the core
// (libnormlab.a); the lab (normlab_lab.h) and the command line use it like any embedder.
#ifndef NORMLAB_EXT_H
#define NORMLAB_EXT_H

#include <stddef.h>

#include "normlab.h"

// ---- a model's matrices (model.c; the lab's simulated quantization rounds them)

// The classes of a model's matrices: the attention's c_attn and c_proj, the MLP's c_fc and c_proj,
// the head (lm_head), the embeddings (wte, wpe), and a recurrent layer's weight_ih and weight_hh.
// A head tied to wte is one matrix of both classes, embed and head.
enum { NL_MATRIX_ATTN = 1, NL_MATRIX_MLP = 2, NL_MATRIX_HEAD = 4, NL_MATRIX_EMBED = 8, NL_MATRIX_RECURRENT = 16 };

typedef struct {
    const float *data;  // (rows, cols) as the file stores it
    size_t rows, cols;
    unsigned classes;  // NL_MATRIX_* bits
} NlMatrix;

// The model's matrices in its family's fixed order into out (NULL: only their count); returns the count.
size_t nl_model_matrices(const NlModel *model, NlMatrix *out);
// A second model on base's files, tokenizer and tensors (nothing copied but the family's table of
// pointers): its matrices can be replaced without touching base. Free it before base.
int nl_model_copy(NlModel **out, const NlModel *base, NlError *err);
// Points matrix k of model at data[k] ((rows, cols) floats) wherever data[k] is not NULL, and remakes
// the transposed copies the plan uses; before any state is made from the model. data stays the
// caller's, except `owned` (NULL or one allocation holding them), which the model frees.
int nl_model_set_matrices(NlModel *model, const float *const *data, void *owned, NlError *err);

#endif
