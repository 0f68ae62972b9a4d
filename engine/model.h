// model.h — the loader's entry points on bytes in memory, for the fuzz harnesses and tests.
// nl_model_load (normlab.h) is the API for files; these apply the same checks to a buffer.
#ifndef NL_MODEL_H
#define NL_MODEL_H

#include <stddef.h>

#include "normlab.h"

// A single-file model ({"config", "tokenizer", "tensors"}) from len bytes; `what` names it in errors.
int nl_model_load_inline(NlModel **out, const char *buf, size_t len, const char *what, NlError *err);
// config.json and tokenizer.json contents.
int nl_config_parse(NlConfig *out, const char *buf, size_t len, const char *what, NlError *err);
int nl_tokenizer_parse(NlTokenizer **out, const char *buf, size_t len, const char *what, NlError *err);

#endif
