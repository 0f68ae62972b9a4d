// fuzz_inline.c — a whole single-file model on arbitrary bytes: an error, or a model that runs one
// forward pass with finite inputs.
#include <stdint.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    NlModel *m = NULL;
    NlState *s = NULL;
    NlError err;
    if (nl_model_load_inline(&m, (const char *)data, size, "fuzz", &err) != 0) return 0;
    const NlConfig *c = nl_model_config(m);
    // Small models only: a fuzzed config may ask for a huge (valid) context.
    if ((size_t)c->block_size * c->n_embd * c->n_layer < ((size_t)1 << 22) && nl_state_create(&s, m, NULL, &err) == 0) {
        int tokens[2] = {0, c->vocab_size - 1};
        size_t n = c->block_size >= 2 ? 2 : 1;
        nl_forward(s, tokens, n, 0, 1);
    }
    nl_state_free(s);
    nl_model_free(m);
    return 0;
}
