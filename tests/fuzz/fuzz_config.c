// fuzz_config.c — config.json parsing on arbitrary bytes: an error or a config within its bounds.
#include <assert.h>
#include <stdint.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    NlConfig c;
    NlError err;
    if (nl_config_parse(&c, (const char *)data, size, "fuzz", &err) != 0) return 0;
    assert(c.vocab_size >= 1 && c.n_layer >= 1 && c.n_head >= 1 && c.n_embd % c.n_head == 0);
    assert(c.block_size >= 1 && c.n_inner >= 1 && c.norm_eps > 0);
    return 0;
}
