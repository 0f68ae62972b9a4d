// transformer.h — the transformer family's operations beyond its weights (internal): what
// describes it and what it costs (transformer_info.c), and how its norms fold (transformer_fold.c), for its
// table in transformer.c.
#ifndef NL_TRANSFORMER_H
#define NL_TRANSFORMER_H

#include <stddef.h>

#include "normlab.h"
#include "normlab_internal.h"

#pragma GCC visibility push(hidden)

// family.h's describe, has_component and lab_cost contracts.
size_t nl_transformer_describe(const NlConfig *c, NlConfigField *fields);
size_t nl_llama_describe(const NlConfig *c, NlConfigField *fields);
int nl_transformer_has_component(const NlConfig *c, NlComponent comp);
void nl_transformer_cost(const NlConfig *c, int layer, NlComponent comp, size_t batch, size_t n, size_t ctx,
                         double *flops, double *bytes);
// family.h's fold contract (transformer_fold.c): both rows' norms folded by placement.
int nl_transformer_fold(NlTensorSet *set, const NlConfig *c, const NlFoldOptions *opts, NlFoldResult *r, NlError *err);

#pragma GCC visibility pop

#endif
