// transformer_info.c — what the transformer family is, for info, reports and the profiler: its
// config fields as info shows them, the components a run has, and the cost rules (cost.h) of each.
#include <stddef.h>

#include "cost.h"
#include "normlab.h"
#include "normlab_internal.h"
#include "transformer.h"

// info's fields: the width and window, then the norm as placed (residual_scale for post only).
size_t nl_transformer_describe(const NlConfig *c, NlConfigField *f) {
    size_t k = 0;
    f[k++] = (NlConfigField){"n_head", NL_FIELD_NUMBER, c->n_head, NULL};
    f[k++] = (NlConfigField){"n_embd", NL_FIELD_NUMBER, c->n_embd, NULL};
    f[k++] = (NlConfigField){"block_size", NL_FIELD_NUMBER, c->block_size, NULL};
    f[k++] = (NlConfigField){"n_inner", NL_FIELD_NUMBER, c->n_inner, NULL};
    f[k++] = (NlConfigField){"norm", NL_FIELD_STRING, 0, nl_name(NL_NAMES_NORM, c->norm)};
    k += nl_recipe_describe(c, 1, f + k);
    f[k++] = (NlConfigField){"norm_eps", NL_FIELD_NUMBER, c->norm_eps, NULL};
    f[k++] = (NlConfigField){"activation", NL_FIELD_STRING, 0, nl_name(NL_NAMES_ACTIVATION, c->activation)};
    f[k++] = (NlConfigField){"bias", NL_FIELD_BOOL, c->bias, NULL};
    f[k++] = (NlConfigField){"tie_embeddings", NL_FIELD_BOOL, c->tie_embeddings, NULL};
    if (c->head_bias) f[k++] = (NlConfigField){"head_bias", NL_FIELD_BOOL, 1, NULL};  // a folded model's only
    return k;
}

// The Llama family's: heads and key/value heads, width, window, MLP width, the norm as placed,
// RoPE's base, QK-norm (and what it spans), and where they differ from Llama's: the head width, the dims
// RoPE turns, the MLP's activation and gating, biases on every linear, the scales and caps, the sliding
// windows; the qkv bias and the head.
size_t nl_llama_describe(const NlConfig *c, NlConfigField *f) {
    size_t k = 0;
    f[k++] = (NlConfigField){"n_head", NL_FIELD_NUMBER, c->n_head, NULL};
    f[k++] = (NlConfigField){"n_kv_head", NL_FIELD_NUMBER, c->n_kv_head, NULL};
    f[k++] = (NlConfigField){"n_embd", NL_FIELD_NUMBER, c->n_embd, NULL};
    f[k++] = (NlConfigField){"block_size", NL_FIELD_NUMBER, c->block_size, NULL};
    f[k++] = (NlConfigField){"n_inner", NL_FIELD_NUMBER, c->n_inner, NULL};
    f[k++] = (NlConfigField){"norm", NL_FIELD_STRING, 0, nl_name(NL_NAMES_NORM, c->norm)};
    k += nl_recipe_describe(c, 0, f + k);
    f[k++] = (NlConfigField){"norm_eps", NL_FIELD_NUMBER, c->norm_eps, NULL};
    f[k++] = (NlConfigField){"rope_theta", NL_FIELD_NUMBER, c->rope_theta, NULL};
    int whole = c->qk_norm == NL_QK_OVER_PROJECTION;  // a string, its number still true for desc_number
    f[k++] =
        (NlConfigField){"qk_norm", whole ? NL_FIELD_STRING : NL_FIELD_BOOL, c->qk_norm, whole ? "projection" : NULL};
    if (c->head_dim) f[k++] = (NlConfigField){"head_dim", NL_FIELD_NUMBER, c->head_dim, NULL};
    if (c->rope_dims) f[k++] = (NlConfigField){"rope_dims", NL_FIELD_NUMBER, c->rope_dims, NULL};
    if (c->activation != NL_ACT_SILU)
        f[k++] = (NlConfigField){"activation", NL_FIELD_STRING, 0, nl_name(NL_NAMES_ACTIVATION, c->activation)};
    if (!c->gated_mlp) f[k++] = (NlConfigField){"gated_mlp", NL_FIELD_BOOL, 0, NULL};
    if (c->bias) f[k++] = (NlConfigField){"bias", NL_FIELD_BOOL, 1, NULL};
    if (c->embed_scale) f[k++] = (NlConfigField){"embed_scale", NL_FIELD_NUMBER, c->embed_scale, NULL};
    if (c->attn_scale) f[k++] = (NlConfigField){"attn_scale", NL_FIELD_NUMBER, c->attn_scale, NULL};
    if (c->attn_softcap) f[k++] = (NlConfigField){"attn_softcap", NL_FIELD_NUMBER, c->attn_softcap, NULL};
    if (c->final_softcap) f[k++] = (NlConfigField){"final_softcap", NL_FIELD_NUMBER, c->final_softcap, NULL};
    if (c->sliding_window) f[k++] = (NlConfigField){"sliding_window", NL_FIELD_NUMBER, c->sliding_window, NULL};
    if (c->sliding_window_pattern)
        f[k++] = (NlConfigField){"sliding_window_pattern", NL_FIELD_NUMBER, c->sliding_window_pattern, NULL};
    if (c->rope_local_theta) f[k++] = (NlConfigField){"rope_local_theta", NL_FIELD_NUMBER, c->rope_local_theta, NULL};
    f[k++] = (NlConfigField){"attn_bias", NL_FIELD_BOOL, c->attn_bias, NULL};
    f[k++] = (NlConfigField){"tie_embeddings", NL_FIELD_BOOL, c->tie_embeddings, NULL};
    if (c->head_bias) f[k++] = (NlConfigField){"head_bias", NL_FIELD_BOOL, 1, NULL};  // a folded model's only
    return k;
}

// The norms the recipe runs (the final norm always listed); none of a recurrent layer's components.
int nl_transformer_has_component(const NlConfig *c, NlComponent comp) {
    if (comp >= NL_COMP_RNN_INPUT && comp <= NL_COMP_RNN_GATES) return 0;
    return comp == NL_COMP_FINAL_NORM || nl_recipe_has_component(&c->recipe, comp);
}

// FLOPs per element of each activation (SiLU: x / (1 + e^-x), the exponential counted 1).
static double act_flops(NlActivation a) {
    return a == NL_ACT_GELU ? 5 : a == NL_ACT_GELU_TANH ? 9 : a == NL_ACT_SILU ? 4 : 1;
}

// The queries' width H Dh (D but where head_dim is set) and the cache's KVH Dh (D unless grouped).
static double query_width(const NlConfig *c) { return (double)nl_query_width(c); }
static double kv_cache_width(const NlConfig *c) {
    return (double)nl_head_width(c) * (c->n_kv_head ? c->n_kv_head : c->n_head);
}

// The sum of min(v, W) over v = a..b: the keys queries a-1..b-1 see through a window of W.
static double window_keys(double a, double b, double W) {
    if (b <= W) return (a + b) * (b - a + 1) / 2;
    if (a > W) return W * (b - a + 1);
    return (a + W) * (W - a + 1) / 2 + W * (b - W);
}

// Attention of one sequence: n queries against ctx keys (a local layer's: each its last W).
static void attention_cost(const NlConfig *c, size_t W, double n, double ctx, double *flops, double *bytes) {
    double A = query_width(c), KV = kv_cache_width(c);
    // The fused kernel computes only the unmasked (query, key) pairs: q k^T and p v, 2 Dh FLOPs
    // each per head, so 4 H Dh per pair in all; softmax (max, subtract + exp, sum, scale) 4 per score.
    double unmasked = W ? window_keys(ctx - n + 1, ctx, (double)W) : n * (ctx - n) + n * (n + 1) / 2;
    double read = W && ctx > n - 1 + (double)W ? n - 1 + (double)W : ctx;  // the keys some query sees
    *flops = 4 * unmasked * A + 4 * unmasked * c->n_head;
    *bytes = 4 * (n * (A + 2 * KV) + 2 * n * KV + 2 * read * KV + n * A);  // qkv in, K/V appended, K/V read, out
}

// cost.h's rules for one call of comp on `batch` sequences of n positions against ctx keys.
void nl_transformer_cost(const NlConfig *c, int layer, NlComponent comp, size_t batch, size_t n_, size_t ctx,
                         double *flops, double *bytes) {
    double D = c->n_embd, F = c->n_inner, V = c->vocab_size, n = (double)batch * (double)n_;  // rows
    *flops = *bytes = 0;
    switch (comp) {
    case NL_COMP_EMBED:
    case NL_COMP_RESIDUAL:
        *flops = n * D;
        *bytes = 4 * 3 * n * D;
        break;
    case NL_COMP_NORM1:
    case NL_COMP_NORM2:
    case NL_COMP_NORM1_POST:
    case NL_COMP_NORM2_POST:
    case NL_COMP_NORM1_SUB:
    case NL_COMP_FINAL_NORM:
        *flops = n * nl_cost_norm_flops(c->norm, D);
        *bytes = 4 * (2 * n * D + 2 * D);
        break;
    case NL_COMP_NORM2_SUB:  // the MLP's hidden, F wide
        *flops = n * nl_cost_norm_flops(c->norm, F);
        *bytes = 4 * (2 * n * F + 2 * F);
        break;
    case NL_COMP_QKV:
        nl_cost_linear(c->bias || c->attn_bias, n, D, query_width(c) + 2 * kv_cache_width(c), flops, bytes);
        break;
    case NL_COMP_ATTN_PROJ: nl_cost_linear(c->bias, n, query_width(c), D, flops, bytes); break;
    case NL_COMP_MLP_UP: nl_cost_linear(c->bias, n, D, c->gated_mlp ? 2 * F : F, flops, bytes); break;
    case NL_COMP_MLP_DOWN: nl_cost_linear(c->bias, n, F, D, flops, bytes); break;
    case NL_COMP_ATTENTION:
        attention_cost(c, layer >= 0 ? nl_layer_window(c, (size_t)layer) : 0, (double)n_, (double)ctx, flops, bytes);
        *flops *= (double)batch;
        *bytes *= (double)batch;
        break;
    case NL_COMP_ACTIVATION:
        *flops = n * F * (act_flops(c->activation) + (c->gated_mlp ? 1 : 0));  // and the gate's product
        *bytes = 4 * (c->gated_mlp ? 3 : 2) * n * F;
        break;
    case NL_COMP_LM_HEAD: nl_cost_linear(c->head_bias, n, D, V, flops, bytes); break;
    case NL_COMP_SAMPLING: *bytes = 4 * (double)batch * V; break;
    default: break;  // another family's
    }
}
