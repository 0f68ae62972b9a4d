// transformer_weights.c — the transformer's tensors (transformer_weights.h): which ones a config
// needs, under GPT-2's names (wte, wpe, h.{i}.ln_1, h.{i}.attn.c_attn, ..., ln_f, lm_head), and
// the matrices among them.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "transformer_weights.h"

// QK-norm's two gains (qk_norm only), over the head width, or over the projection's (H Dh and KVH Dh).
static int bind_qk_norm(NlBinder *b, const NlConfig *c, int i, NlLayerWeights *lw) {
    char p[48];
    size_t Dh = nl_head_width(c), whole = c->qk_norm == NL_QK_OVER_PROJECTION;
    if (!c->qk_norm) return 0;
    snprintf(p, sizeof p, "h.%d.attn.q_norm", i);
    if (nl_bind_norm(b, c->norm, whole ? (size_t)c->n_head * Dh : Dh, p, &lw->q_norm) != 0) return -1;
    snprintf(p, sizeof p, "h.%d.attn.k_norm", i);
    return nl_bind_norm(b, c->norm, whole ? (size_t)c->n_kv_head * Dh : Dh, p, &lw->k_norm);
}

// Layer i's norm slot k where its recipe names it: (D), or (F) inside the MLP.
static int bind_block_norm(NlBinder *b, const NlConfig *c, int i, int k, NlLayerWeights *lw) {
    char p[48];
    if (!(nl_recipe_block(&c->recipe, i)->norms >> k & 1u)) return 0;
    snprintf(p, sizeof p, "h.%d.%s", i, nl_recipe_norm_name(k));
    return nl_bind_norm(b, c->norm, (size_t)(k == NL_NS_LN_2_SUB ? c->n_inner : c->n_embd), p, &lw->norm[k]);
}

static int bind_layer(NlBinder *b, const NlConfig *c, int i, NlLayerWeights *lw) {
    char p[48];
    size_t D = (size_t)c->n_embd, F = (size_t)c->n_inner, Dh = nl_head_width(c), A = nl_query_width(c);
    size_t qkv = A + 2 * (size_t)c->n_kv_head * Dh;  // 3D with as many KV heads as heads
    if (bind_block_norm(b, c, i, NL_NS_LN_1, lw) != 0) return -1;
    snprintf(p, sizeof p, "h.%d.attn.c_attn", i);
    if (nl_bind_linear(b, c->bias || c->attn_bias, p, qkv, D, &lw->attn) != 0 || bind_qk_norm(b, c, i, lw) != 0)
        return -1;
    snprintf(p, sizeof p, "h.%d.attn.c_proj", i);
    if (nl_bind_linear(b, c->bias, p, D, A, &lw->proj) != 0 || bind_block_norm(b, c, i, NL_NS_LN_2, lw) != 0) return -1;
    snprintf(p, sizeof p, "h.%d.mlp.c_fc", i);
    if (nl_bind_linear(b, c->bias, p, c->gated_mlp ? 2 * F : F, D, &lw->fc) != 0) return -1;
    snprintf(p, sizeof p, "h.%d.mlp.c_proj", i);
    if (nl_bind_linear(b, c->bias, p, D, F, &lw->out) != 0) return -1;
    for (int k = NL_NS_LN_1_POST; k < NL_NS_COUNT; k++)  // the output norms, then the inner ones
        if (bind_block_norm(b, c, i, k, lw) != 0) return -1;
    return 0;
}

// wte, wpe (none with RoPE), its blocks, ln_f (where the recipe has one), lm_head.weight when untied and
// lm_head.bias with head_bias.
int nl_transformer_bind(void **weights, const NlConfig *c, NlBinder *b) {
    size_t V = (size_t)c->vocab_size, D = (size_t)c->n_embd, T = (size_t)c->block_size;
    NlTransformerWeights *w = nl_bind_alloc(b, 1, sizeof *w);
    if (!(*weights = w)) return -1;
    const float *wpe = NULL;
    if (nl_bind_matrix(b, "wte.weight", V, D, &w->wte) != 0 ||
        (!c->rope && nl_bind_tensor(b, "wpe.weight", T, D, 1, &wpe) != 0))
        return -1;
    w->wpe = (NlWeight){wpe, NL_DTYPE_F32};
    if (!(w->layers = nl_bind_alloc(b, (size_t)c->n_layer, sizeof *w->layers))) return -1;
    for (int i = 0; i < c->n_layer; i++)
        if (bind_layer(b, c, i, &w->layers[i]) != 0) return -1;
    if (c->recipe.final_norm && nl_bind_norm(b, c->norm, D, "ln_f", &w->ln_f) != 0) return -1;
    w->lm_head = (NlLinear){.w = w->wte, .n_out = V, .n_in = D, .tier = -1};
    if (!c->tie_embeddings && nl_bind_matrix(b, "lm_head.weight", V, D, &w->lm_head.w) != 0) return -1;
    return c->head_bias ? nl_bind_tensor(b, "lm_head.bias", V, 0, 1, &w->lm_head.b) : 0;
}

void *nl_transformer_copy_weights(const void *weights, const NlConfig *c) {
    const NlTransformerWeights *from = weights;
    void *layers;
    NlTransformerWeights *w =
        nl_bind_copy(from, sizeof *w, from->layers, (size_t)c->n_layer, sizeof *w->layers, &layers);
    if (w) w->layers = layers;
    return w;
}

void nl_transformer_free_weights(void *weights) {
    NlTransformerWeights *w = weights;
    if (w) free(w->layers);
    free(w);
}

// wte (which a tied head shares), wpe (none with RoPE), each layer's c_attn, attn.c_proj, c_fc and
// mlp.c_proj, and an untied head: 4L + 1 to 4L + 3 slots.
size_t nl_transformer_matrices(void *weights, const NlConfig *c, NlMatrixSlot *slots) {
    size_t L = (size_t)c->n_layer, n = 4 * L + 1 + !c->rope + !c->tie_embeddings;
    if (!slots) return n;
    NlTransformerWeights *w = weights;
    static const char *const FOUR[4] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
    size_t V = (size_t)c->vocab_size, D = (size_t)c->n_embd, k = 0;
    int tied = c->tie_embeddings;
    slots[k++] = (NlMatrixSlot){{&w->wte, tied ? &w->lm_head.w : NULL},
                                tied ? &w->lm_head : NULL,
                                V,
                                D,
                                NL_MATRIX_EMBED | (tied ? NL_MATRIX_HEAD : 0u),
                                0,
                                "wte.weight"};
    if (!c->rope)
        slots[k++] = (NlMatrixSlot){{&w->wpe, NULL}, NULL, (size_t)c->block_size, D, NL_MATRIX_EMBED, 1, "wpe.weight"};
    for (size_t l = 0; l < L; l++) {
        NlLayerWeights *lw = &w->layers[l];
        NlLinear *four[4] = {&lw->attn, &lw->proj, &lw->fc, &lw->out};
        for (int j = 0; j < 4; j++) {
            slots[k] = (NlMatrixSlot){{&four[j]->w, NULL},
                                      four[j],
                                      four[j]->n_out,
                                      four[j]->n_in,
                                      j < 2 ? NL_MATRIX_ATTN : NL_MATRIX_MLP,
                                      0,
                                      ""};
            snprintf(slots[k++].name, sizeof slots->name, "h.%zu.%s.weight", l, FOUR[j]);
        }
    }
    if (!tied)
        slots[k++] = (NlMatrixSlot){{&w->lm_head.w, NULL}, &w->lm_head, V, D, NL_MATRIX_HEAD, 0, "lm_head.weight"};
    return k;
}
