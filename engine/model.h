// model.h — the library's view of a loaded model (internal): the family that bound its weights and
// those weights (the family's own struct, pointed into the mapped file); and the loader's entry
// points on bytes in memory, for the fuzz harnesses and tests.
// nl_model_load (normlab.h) is the API for files; these apply the same checks to a buffer.
#ifndef NL_MODEL_H
#define NL_MODEL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "normlab.h"
#include "normlab_internal.h"
#include "safetensors.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

typedef struct NlFamily NlFamily;

// The family that binds and runs the model (family.h), and its weights: that family's struct
// (NlTransformerWeights, NlRecurrentWeights), borrowed for the model's lifetime.
const NlFamily *nl_model_family(const NlModel *model);
const void *nl_model_weights(const NlModel *model);
// 1: loaded with NlLoadOptions.shapes_only, so no weight was checked: it must not run.
int nl_model_shapes_only(const NlModel *model);

// Its matrices as stored (NlModelDesc.matrices), borrowed; returns their count. (model.c)
size_t nl_model_matrix_descs(const NlModel *model, const NlMatrixDesc **descs);
// The tensors of its model.safetensors as parsed (names, types, shapes, the file's bytes), borrowed;
// NULL for a single .json file's model.
const StFile *nl_model_file(const NlModel *model);

// A single-file model ({"config", "tokenizer", "tensors"}) from len bytes; `what` names it in errors.
int nl_model_load_inline(NlModel **out, const char *buf, size_t len, const char *what, NlError *err);
// config.json's and tokenizer.json's parsed JSON, checked (config.c).
int nl_config_from_json(NlConfig *out, const cJSON *root, const char *what, NlError *err);
int nl_tokenizer_from_json(NlTokenizer **out, const cJSON *root, const char *what, NlError *err);
// The most bytes a tokenizer file may hold (tokenizer.json, vocab.json, merges.txt): 16 MiB.
#define NL_TOKENIZER_CAP ((size_t)16 << 20)
// A byte-level BPE tokenizer from GPT-2's vocab.json and merges.txt, names[0] and names[1] under
// dirfd (AT_FDCWD: paths), whats[] naming each in errors and `what` the pair (tokenizer_files.c).
int nl_tokenizer_bpe_files(NlTokenizer **out, int dirfd, const char *const names[2], const char *const whats[2],
                           const char *what, NlError *err);
// config.json and tokenizer.json contents.
int nl_config_parse(NlConfig *out, const char *buf, size_t len, const char *what, NlError *err);
int nl_tokenizer_parse(NlTokenizer **out, const char *buf, size_t len, const char *what, NlError *err);

#pragma GCC visibility pop

#endif
