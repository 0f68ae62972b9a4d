// models.h — finding and loading models, and the model search path (models.c).
#ifndef NL_CLI_MODELS_H
#define NL_CLI_MODELS_H

#include <stddef.h>

#include "cli.h"
#include "stops.h"

#define DEFAULT_MODEL "shakespeare-pre-ln"

// The model the options name, resolved (docs/usage.md), into buf; the name itself when
// it is found nowhere (loading will say so). A buffer of 4400 bytes holds every path that loads.
const char *model_path(const Options *o, char *buf, size_t len);
// The path -m NAME loads, into buf; NULL when it is found nowhere or its path does not fit buf.
const char *resolve_model(const char *name, char *buf, size_t len);
// The folders searched for models by name, in order, ':'-separated: $NORMLAB_MODELS, weights/
// beside the binary, the installed share/normlab/models. A new string, or NULL out of memory.
char *model_search_path(void);
// A model found by name: what `list` shows, and what -m NAME loads unless shadowed.
typedef struct {
    char *name;  // as -m takes it: the folder's or the file's name, without ".json"
    char *path;  // the search folder's path and the entry's name
    int shadowed;  // an earlier entry has the same name: -m NAME loads that one
} ModelEntry;
// Every model in the search path, folder by folder in search order, each folder's in byte order of
// their names, as many as there are. Returns 0, or -1 out of memory; free *e with
// model_entries_free either way.
int model_entries(ModelEntry **e, size_t *n);
void model_entries_free(ModelEntry *e, size_t n);
int load_model(const Options *o, NlModel **model);
// What --quantize and --quantize-act round, in words ("weights q8 (attn,mlp), activations q8") into
// buf; NULL when nothing is rounded.
const char *rounding_text(const Options *o, char *buf, size_t cap);
// The same, with the NL_MATRIX_* classes --quantize rounded into *rounded (may be NULL).
int load_model_rounded(const Options *o, NlModel **model, unsigned *rounded);
// The same, with shapes_only 1 for a command that describes the model and runs nothing (info,
// tokenize, list): no weight is read (NlLoadOptions.shapes_only), so a NaN weight is not seen.
int load_model_as(const Options *o, NlModel **model, unsigned *rounded, int shapes_only);
// The most positions the model sees at once: block_size, or SIZE_MAX for a recurrent model (no window).
size_t model_context(const NlModel *model);
// The model's description (nl_model_describe), by value.
NlModelDesc model_desc(const NlModel *model);
// The number of the family's field named key ("residual_scale"), or absent when it has none.
double desc_number(const NlModelDesc *d, const char *key, double absent);
// Whether the model's family reads a window of positions (a transformer); 0: a state carries any length.
int model_windowed(const NlModel *model);
// What the model's tokens are, for messages: "character" (a char tokenizer) or "token" (BPE).
const char *token_unit(const NlModel *model);
// The tokens that end a generated stream unprinted: a sentencepiece model's end of sequence (</s>)
// and its begin of sequence (<s>) when sampled, as run.c stops, unless --ignore-eos; -1 for none
// (the other kinds: GPT-2's "<|endoftext|>" never ended one).
EndTokens model_end_tokens(const Options *o, const NlModel *model);
// The tokens at the start of ids[0..n) that a RoPE shift keeps (NlContextOptions.keep): 1 when the
// text starts with the tokenizer's bos, as llama.cpp's n_keep; else 0.
size_t model_keep(const NlModel *model, const int *ids, size_t n);
// Whether QK-norm runs (1) or not (0) in a model whose family has the slot, as configured or as
// qk_option (NlQkNorm, --qk-norm) says; -1 where the family has none.
int run_qk_norm(const NlModelDesc *d, int qk_option);
// "layernorm/pre" (norm/placement) for a transformer run, "lstm/none" for a recurrent one, into buf;
// "rmsnorm/pre+qk" or "rmsnorm/pre-qk" where qk (run_qk_norm) is 1 or 0, as compare's rows say.
const char *run_name(char *buf, size_t size, NlArch arch, NlNormType norm, NlPlacement placement, int qk);

#endif
