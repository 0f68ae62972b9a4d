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
    static const char *const KEYS[] = {"folded", "parameters"};
    const char *const config_keys[] = {"tie_embeddings", "head_bias"};
    NlTensorSet set;
    size_t bytes;
    *config_out = NULL;
    int rc =
        nl_model_tensors(model, &set, err) == 0 && nl_model_fold_rule(model, &set, opts, result, err) == 0 ? 0 : -1;
    if (rc == 0) {
        // "gains,center-forced": a centering --force made where it is not exact, a different model
        const char *tag = !opts->center ? "gains" : result->exact ? "gains,center" : "gains,center-forced";
        // the count train.py stored, made again: the fold adds an untied head and its bias
        const char *const *k, *const *v;
        size_t m = nl_model_metadata(model, &k, &v), count = 0, n_keys = 1;
        for (size_t i = 0; i < set.n; i++) count += set.t[i].rows * set.t[i].cols;
        for (size_t i = 0; i < m; i++) n_keys = strcmp(k[i], KEYS[1]) == 0 ? 2 : n_keys;  // replaced where stored
        char parameters[32];
        snprintf(parameters, sizeof parameters, "%zu", count);
        const char *const values[] = {tag, parameters};
        rc = nl_tensors_write(weights, &set, model, KEYS, values, n_keys, &bytes, err);
    }
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
