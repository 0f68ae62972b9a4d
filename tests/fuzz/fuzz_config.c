// fuzz_config.c — config.json parsing on arbitrary bytes: an error or a config within its bounds.
#include <assert.h>
#include <stdint.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    NlConfig c;
    NlError err;
    if (nl_config_parse(&c, (const char *)data, size, "fuzz", &err) != 0) return 0;
    assert(c.vocab_size >= 1 && c.n_layer >= 1 && c.norm_eps > 0);
    if (c.arch == NL_ARCH_LSTM || c.arch == NL_ARCH_GRU) {  // recurrent: its own widths, no window, LayerNorm or none
        assert(c.n_input >= 1 && c.n_hidden >= 1 && c.n_embd == 0 && c.block_size == 0 && c.n_head == 0);
        assert(c.norm == NL_NORM_LAYERNORM || c.norm == NL_NORM_NONE);
        return 0;
    }
    assert(c.n_embd >= 1 && c.n_head >= 1 && c.n_embd % c.n_head == 0 && c.n_hidden == 0 && c.n_input == 0);
    assert(c.block_size >= 1 && c.n_inner >= 1);
    return 0;
}
