// describe.c — what describes a model (normlab.h's NlModelDesc): the loader's counts, and what its
// family's table answers about its config.
#include <stddef.h>

#include "family.h"
#include "model.h"
#include "normlab.h"
#include "normlab_internal.h"

size_t nl_model_window(const NlModel *model) {
    const NlConfig *c = nl_model_config(model);
    return nl_family_of(c->arch)->window(c);
}

size_t nl_model_state_bytes(const NlModel *model) {
    const NlConfig *c = nl_model_config(model);
    return nl_family_of(c->arch)->state_bytes(c);
}

size_t nl_model_call_logits(const NlModel *model) {
    const NlConfig *c = nl_model_config(model);
    return nl_family_of(c->arch)->call_logits(c);
}

void nl_model_describe(const NlModel *model, NlModelDesc *out) {
    const NlConfig *c = nl_model_config(model);
    *out = (NlModelDesc){.family = nl_family_info(c->arch),
                         .arch = c->arch,
                         .vocab_size = c->vocab_size,
                         .n_layer = c->n_layer,
                         .norm = c->norm,
                         .placement = c->placement,
                         .norm_eps = c->norm_eps,
                         .window = nl_model_window(model),
                         .call_logits = nl_model_call_logits(model),
                         .state_bytes = nl_model_state_bytes(model),
                         .parameters = nl_model_parameters(model),
                         .weight_bytes = nl_model_weight_bytes(model),
                         .transposed_bytes = nl_model_transposed_bytes(model)};
    out->n_fields = nl_config_describe(c, out->fields);
    out->n_metadata = nl_model_metadata(model, &out->metadata_keys, &out->metadata_values);
    out->n_matrices = nl_model_matrix_descs(model, &out->matrices);
}
