// gguf_model.h — a GGUF file (llama.cpp's) as the parts of a normlab model (internal): its metadata as
// config.json's fields, checked by the same parser (nl_config_from_json); its tokenizer from the
// tokenizer.ggml.* keys; its tensors under normlab's names (docs/format.md), in a table of the
// safetensors reader's kind, so that the loader binds them as it binds a model folder's. llama.cpp's
// names and keys (docs/gguf.md): token_embd, blk.N.attn_q, ..., output; {arch}.block_count,
// {arch}.attention.layer_norm_rms_epsilon, .... q's and k's rows are in Meta's interleaved RoPE pairs
// in a llama file (llama.cpp's converter permutes HF's, as normlab's importer does); the NEOX
// architectures' files (all the others) keep HF's rotate_half order, re-paired here.
#ifndef NL_GGUF_MODEL_H
#define NL_GGUF_MODEL_H

#include <stddef.h>

#include "normlab.h"
#include "normlab_internal.h"
#include "safetensors.h"

#pragma GCC visibility push(hidden)

typedef struct {
    NlConfig config;
    NlTokenizer *tok;  // owned
    StFile st;  // owned: names normlab's; data in the file's bytes, or in `owned`
    void *owned;  // the tensors normlab keeps as one that the file holds as two or three (c_attn, c_fc)
} NlGgufParts;

// Whether the file at path starts with GGUF's magic.
int nl_gguf_is_file(const char *path);
// The parts of the model the GGUF bytes buf[0..len) hold; buf must outlive them. On failure nothing
// is left to free. `what` names the file in messages.
int nl_gguf_model(NlGgufParts *out, const unsigned char *buf, size_t len, const char *what, NlError *err);

#pragma GCC visibility pop

#endif
