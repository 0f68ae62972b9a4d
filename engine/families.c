// families.c — the registry of model families: which table (family.h) runs a model of each arch,
// and the questions about a config that its family answers. A new family: one file, one row here.
#include "family.h"
#include "normlab.h"
#include "normlab_internal.h"

const NlFamily *nl_family_of(NlArch arch) {
    switch (arch) {
    case NL_ARCH_LSTM: return nl_family_lstm();
    case NL_ARCH_GRU: return nl_family_gru();
    case NL_ARCH_LLAMA: return nl_family_llama();
    default: return nl_family_transformer();
    }
}

const NlFamilyInfo *nl_family_info(NlArch arch) { return nl_family_of(arch)->info; }

size_t nl_config_describe(const NlConfig *c, NlConfigField *fields) {
    return nl_family_of(c->arch)->describe(c, fields);
}

int nl_config_has_component(const NlConfig *c, NlComponent comp) {
    return nl_family_of(c->arch)->has_component(c, comp);
}

void nl_profile_cost(const NlConfig *c, int layer, NlComponent comp, size_t batch, size_t n, size_t ctx, double *flops,
                     double *bytes) {
    nl_family_of(c->arch)->lab_cost(c, layer, comp, batch, n, ctx, flops, bytes);
}
