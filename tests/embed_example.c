// embed_example.c — the smallest program on the installed library: load a model named on the
// command line, run a prompt, print the most likely next character. make test compiles it with
// `pkg-config --cflags --libs normlab` against an installed copy.
#include <stdio.h>

#include <normlab.h>

int main(int argc, char **argv) {
    NlError err;
    NlModel *model = NULL;
    NlState *state = NULL;
    if (argc != 2 || nl_model_load(&model, argv[1], NULL, &err) != 0 ||
        nl_state_create(&state, model, NULL, &err) != 0) {
        fprintf(stderr, "embed_example: %s\n", argc != 2 ? "usage: embed_example MODEL" : err.msg);
        return 1;
    }
    int ids[1] = {0};
    size_t n = 0, skipped = 0;
    nl_tokenizer_encode(nl_model_tokenizer(model), "\n", 1, 1, ids, &n, &skipped, &err);
    const float *logits = nl_forward(state, ids, 1, 0, 1);  // (1, V): after a newline, or token 0
    NlModelDesc desc;
    nl_model_describe(model, &desc);
    int best = 0;
    for (int v = 1; v < desc.vocab_size; v++) best = logits[v] > logits[best] ? v : best;
    size_t len = 0;
    nl_tokenizer_bytes(nl_model_tokenizer(model), best, &len);
    printf("next after a newline: token %d of %d (%zu bytes)\n", best, desc.vocab_size, len);
    nl_state_free(state);
    nl_model_free(model);
    return 0;
}
