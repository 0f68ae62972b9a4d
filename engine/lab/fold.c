// fold.c — normlab fold (normlab_lab.h's nl_model_fold): the model's tensors as float32, its family's
// fold rule on them (the core's transformer_fold.c), and the folded model's two files written.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "normlab.h"
#include "normlab_internal.h"
#include "normlab_lab.h"

int nl_model_fold(const NlModel *model, const NlFoldOptions *opts, const char *config, size_t len, FILE *weights,
                  char **config_out, NlFoldResult *result, NlError *err) {
    static const char *const KEYS[] = {"folded"};
    const char *const values[] = {opts->center ? "gains,center" : "gains"};
    const char *const config_keys[] = {"tie_embeddings", "head_bias"};
    NlTensorSet set;
    size_t bytes;
    *config_out = NULL;
    int rc = nl_model_tensors(model, &set, err) == 0 && nl_model_fold_rule(model, &set, opts, result, err) == 0 &&
                     nl_tensors_write(weights, &set, model, KEYS, values, 1, &bytes, err) == 0
                 ? 0
                 : -1;
    nl_tensor_set_free(&set);
    if (rc != 0) return -1;
    // Only the keys that changed are written: an untouched config.json stays as it was, byte for byte.
    int config_values[] = {0, 1};
    size_t first = result->untied ? 0 : 1, n = (size_t)(result->untied + result->head_bias);
    if (n == 0) {
        if ((*config_out = malloc(len + 1))) memcpy(*config_out, config, len), (*config_out)[len] = '\0';
        return *config_out ? 0 : nl_error(err, NL_ERR_NOMEM, "out of memory");
    }
    return nl_config_json_set(config, len, config_keys + first, config_values + first, n, config_out, "config.json",
                              err);
}
