// family.h — a model family behind one table of operations (internal; SQLite's io_methods). state.c
// owns the NlState and calls its family only through this table; each family implements it in its
// own file (transformer.c; rnn.c for the LSTM and the GRU). A new family: one file, one row in
// nl_family_of (families.c, the registry).
#ifndef NL_FAMILY_H
#define NL_FAMILY_H

#include <stddef.h>

#include "bind.h"
#include "linear.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "parallel.h"

#pragma GCC visibility push(hidden)

// One matrix of a model's weights as its family lists it: the weight pointers that hold it (two for
// wte when the head is tied to it), the linear whose product the loader plans for it (NULL: the
// plain rule, no copies), its shape as stored and its classes (NL_MATRIX_*). A matrix is replaced
// (nl_model_set_matrices) by pointing every holder at the new values.
typedef struct {
    NlWeight *at[2];  // at[1] NULL unless shared
    NlLinear *lin;
    size_t rows, cols;
    unsigned cls;
    int positions;  // a table of learned positions (NlMatrix.positions)
    char name[64];  // its tensor's name (NlMatrix.name)
} NlMatrixSlot;

typedef struct NlFamily NlFamily;
struct NlFamily {
    const NlFamilyInfo *info;  // nl_family_info's answer
    // The model's weights, taken from the loader's tensors (bind.h) into a new struct of the family's
    // (*weights, freed with free_weights even when bind fails); copy_weights makes a second one that
    // points at the same tensors (NULL: out of memory).
    int (*bind)(void **weights, const NlConfig *cfg, NlBinder *b);
    void *(*copy_weights)(const void *weights, const NlConfig *cfg);
    void (*free_weights)(void *weights);  // NULL-safe
    // The weights' matrices into slots (NULL: only their count), in a fixed order; returns the count.
    size_t (*matrices)(void *weights, const NlConfig *cfg, NlMatrixSlot *slots);
    // A state of `batch` sequences of a model of this family, handed its weights (bind's struct) and
    // its config as loaded (model_cfg), run as cfg (model_cfg with the run's norm and placement; the
    // family refuses what it cannot run, as NL_ERR_ARG). weights, model_cfg, cfg and obs are borrowed
    // for the state's life (the model's and the NlState's): a family never calls back into model.c.
    // hook: nl_state_create_hooked's, on every linear's input rows (fn NULL: none).
    // pool (NULL: one thread) is the NlState's too, for the products of one forward call.
    int (*create)(void **impl, const void *weights, const NlConfig *model_cfg, const NlConfig *cfg,
                  const NlRunOptions *opts, NlLinearInputHook hook, size_t batch, NlPool *pool, const NlObserver *obs,
                  NlError *err);
    void (*destroy)(void *impl);  // NULL-safe
    // nl_forward_batch's contract (normlab.h): the logits (B, n_logits, V) of the last n_logits positions.
    const float *(*forward)(void *impl, const int *tokens, size_t B, size_t n, size_t pos, size_t n_logits);
    // nl_state_copy_cache's contract: sequence `to` continues from sequence `from`'s first n positions.
    void (*copy)(void *impl, size_t from, size_t to, size_t n);
    // nl_state_shift's contract (NULL, or -1: the family cannot shift a cache in place).
    int (*shift)(void *impl, size_t seq, size_t keep, size_t drop, size_t len);
    // nl_model_window's contract: the positions one sequence holds, SIZE_MAX for no limit.
    size_t (*window)(const NlConfig *cfg);
    // NlModelDesc.call_logits's contract: the most positions whose logits one call returns per sequence.
    size_t (*call_logits)(const NlConfig *cfg);
    // nl_model_state_bytes's contract: the bytes one sequence's state takes.
    size_t (*state_bytes)(const NlConfig *cfg);
    // nl_config_describe's and nl_config_has_component's contracts.
    size_t (*describe)(const NlConfig *cfg, NlConfigField *fields);
    int (*has_component)(const NlConfig *cfg, NlComponent comp);
    // The lab's hooks. nl_profile_cost's contract (normlab_internal.h) for the family's components; 0 for
    // any other.
    void (*lab_cost)(const NlConfig *cfg, int layer, NlComponent comp, size_t batch, size_t n, size_t ctx,
                     double *flops, double *bytes);
    // nl_state_readout's contract; NULL for a family without a residual stream.
    const float *(*lab_readout)(void *impl, const float *x, size_t B, size_t n, size_t n_logits, int normed);
    // nl_model_fold_rule's contract (normlab_internal.h) on the model's tensors set, its config cfg;
    // NULL for a family whose norms cannot move (the recurrent cells').
    int (*fold)(NlTensorSet *set, const NlConfig *cfg, const NlFoldOptions *opts, NlFoldResult *r, NlError *err);
};

// Each family's table (functions, not variables: no global symbol but the nl_ functions).
const NlFamily *nl_family_transformer(void);
const NlFamily *nl_family_lstm(void);
const NlFamily *nl_family_gru(void);
const NlFamily *nl_family_llama(void);  // transformer.c: the transformer's operations, its own answers

// The family that runs models of arch (families.c; chosen once, when a model is loaded).
const NlFamily *nl_family_of(NlArch arch);

#pragma GCC visibility pop

#endif
