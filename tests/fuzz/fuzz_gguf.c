// fuzz_gguf.c — the GGUF reader on arbitrary bytes: the container parser must return an error or a
// table whose every tensor lies inside the buffer; the model built from a table that parses (config,
// tokenizer, tensors under normlab's names) must return an error or parts whose tensors lie inside the
// buffer or their own copies; never a crash.
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "gguf_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    GgufFile f;
    NlError err;
    if (nl_gguf_parse(&f, data, size, "fuzz", &err) != 0) {
        assert(memchr(err.msg, '\0', sizeof err.msg) != NULL);
        return 0;
    }
    for (size_t i = 0; i < f.n_tensors; i++) {
        const GgufTensor *t = &f.tensors[i];
        assert(t->data >= data && t->data + t->nbytes <= data + size);
        volatile uint8_t sink = t->nbytes ? t->data[t->nbytes - 1] : 0;  // touch the last byte
        (void)sink;
    }
    nl_gguf_free(&f);
    NlGgufParts parts;
    if (nl_gguf_model(&parts, data, size, "fuzz", &err) != 0) return 0;
    for (size_t i = 0; i < parts.st.n; i++) {
        const StTensor *t = &parts.st.tensors[i];
        volatile uint8_t sink = t->nbytes ? t->data[t->nbytes - 1] : 0;
        (void)sink;
    }
    nl_tokenizer_free(parts.tok);
    nl_st_free(&parts.st);
    free(parts.owned);
    return 0;
}
