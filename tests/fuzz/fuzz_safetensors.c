// fuzz_safetensors.c — the safetensors container parser on arbitrary bytes: must return an error
// or a table whose every tensor lies inside the buffer, never crash.
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    StFile f;
    NlError err;
    if (nl_st_parse(&f, data, size, "fuzz", &err) != 0) {
        assert(memchr(err.msg, '\0', sizeof err.msg) != NULL);
        return 0;
    }
    for (size_t i = 0; i < f.n; i++) {
        const StTensor *t = &f.tensors[i];
        assert(t->data >= data && t->data + t->nbytes <= data + size);
        volatile uint8_t sink = t->nbytes ? t->data[t->nbytes - 1] : 0;  // touch the last byte
        (void)sink;
    }
    nl_st_free(&f);
    return 0;
}
