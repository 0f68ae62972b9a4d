// ref_logits.c — the naive double-precision reference (ref_forward.c) as a command, for the CLI
// tests: `ref_logits MODEL NORM PLACEMENT TEXT [running|batch]` prints the logits of every position
// of TEXT, one JSON array per line like `normlab logits`, with the norm type and placement
// overridden ("model" keeps the model's) and BatchNorm's statistics chosen (default running). So
// `normlab logits --norm ... --placement ... --bn-stats ...` can be checked without PyTorch.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "normlab.h"
#include "ref_forward.h"

int main(int argc, char **argv) {
    NlModel *m = NULL;
    NlError err;
    int bn = NL_BN_RUNNING, norm, placement;
    if (argc < 5 || argc > 6 || (argc == 6 && nl_name_parse(NL_NAMES_BN_STATS, argv[5], &bn) != 0) ||
        nl_model_load(&m, argv[1], NULL, &err) != 0) {
        fprintf(stderr, "ref_logits: %s\n",
                argc < 5 || argc > 6 ? "usage: ref_logits MODEL NORM PLACEMENT TEXT [running|batch]" : err.msg);
        return 2;
    }
    NlConfig cfg = *nl_model_config(m);
    if (strcmp(argv[2], "model") != 0 && nl_name_parse(NL_NAMES_NORM, argv[2], &norm) != 0) return 2;
    if (strcmp(argv[3], "model") != 0 && nl_name_parse(NL_NAMES_PLACEMENT, argv[3], &placement) != 0) return 2;
    if (strcmp(argv[2], "model") != 0) cfg.norm = (NlNormType)norm;
    if (strcmp(argv[3], "model") != 0) cfg.placement = (NlPlacement)placement;
    size_t len = strlen(argv[4]), n = 0, skipped = 0, V = (size_t)cfg.vocab_size;
    int *ids = malloc((len + 1) * sizeof *ids);
    double *logits = malloc((len + 1) * V * sizeof *logits);
    int rc = !ids || !logits ||
             nl_tokenizer_encode(nl_model_tokenizer(m), argv[4], len, 0, ids, &n, &skipped, &err) != 0 || n == 0 ||
             n > (size_t)cfg.block_size ||
             ref_forward_bn(logits, &cfg, nl_model_transformer_weights(m), ids, n, (NlBnStats)bn) != 0;
    for (size_t i = 0; !rc && i < n; i++) {
        for (size_t v = 0; v < V; v++) printf("%s%.9g", v ? ", " : "[", logits[i * V + v]);
        printf("]\n");
    }
    free(ids);
    free(logits);
    nl_model_free(m);
    return rc ? 1 : 0;
}
