// transformer_fold.c — normlab fold's rule for the transformer family (GPT-2's row and Llama's):
// a norm whose output one linear alone reads moves into that linear, and is left as the identity:
//   W (g * n + b) + c = (W diag g) n + (W b + c)
// where BatchNorm (with its running statistics) has g / sqrt(var + eps) for g, b - mean g / sqrt(var + eps)
// for b, and DyT g for g and b for b (its alpha stays). Which norms those are, and which linears read
// each, its recipe says (nl_recipe_fold_rule; docs/lab.md, "Folding the norms"):
//   pre   ln_1 -> attn.c_attn, ln_2 -> mlp.c_fc, ln_f -> the head: every one
//   peri  the same; ln_1_post and ln_2_post are added to the residual stream, which later blocks read
//         through their skips as well as their norms: they stay
//   post  each norm's output is the residual stream itself, read by the next sublayer and by its skip:
//         only the last layer's ln_2, which the head alone reads, moves
//   parallel-shared's ln_1 -> c_attn and c_fc both; sub's inner norms -> the output projections
// QK-norm's gains stay: they scale q and k after its normalization, and RoPE then mixes pairs of them.
// center (TransformerLens's center_writing_weights and center_unembed): each matrix writing into the
// residual stream (wte, wpe, attn.c_proj and mlp.c_proj, with their biases) loses its mean over the
// stream's width, and the head its mean over the vocabulary. That is exact where every reader of what
// they write removes the mean (LayerNorm, pre or peri); the head's shift moves each position's logits
// by one constant, which its log-probabilities do not see.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "normlab.h"
#include "normlab_internal.h"
#include "transformer.h"

typedef struct {
    NlTensorSet *set;
    const NlConfig *c;
    size_t D;  // the width of the norm being folded (D, or F inside the MLP)
    NlFoldResult *r;
    NlError *err;
    double *scale, *shift;  // (D) the norm being folded's map
} Fold;

static float *tensor(const Fold *f, const char *prefix, const char *suffix, size_t count) {
    char name[96];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    return nl_tensor_find(f->set, name, count);
}

static void keep(Fold *f, const char *prefix, const char *why) {
    if (!f->r->kept++) snprintf(f->r->kept_reason, sizeof f->r->kept_reason, "%s: %s", prefix, why);
}

// The norm prefix's map into f->scale and f->shift, and the norm left as the identity; returns 1 when
// its shift is not all 0, -1 (an error) when its tensors are missing.
static int take_norm(Fold *f, const char *prefix) {
    size_t D = f->D;
    int bn = f->c->norm == NL_NORM_BATCHNORM, shifted = 0;
    float *g = tensor(f, prefix, "weight", D), *b = tensor(f, prefix, "bias", D);
    float *mean = bn ? tensor(f, prefix, "running_mean", D) : NULL,
          *var = bn ? tensor(f, prefix, "running_var", D) : NULL;
    if (!g || (bn && (!mean || !var)))
        return nl_error(f->err, NL_ERR_FORMAT, "norm \"%s\": its tensors are missing", prefix);
    for (size_t i = 0; i < D; i++) {
        double a = g[i], s = b ? b[i] : 0.0;
        if (bn) {
            a = g[i] / sqrt((double)var[i] + f->c->norm_eps);
            s -= mean[i] * a;
            mean[i] = 0.0f;
            var[i] = (float)(1.0 - f->c->norm_eps);  // 1 / sqrt(var + eps) = 1
        }
        f->scale[i] = a, f->shift[i] = s;
        shifted |= s != 0.0;
        g[i] = 1.0f;
        if (b) b[i] = 0.0f;
    }
    return shifted;
}

// Whether the norm's shift is all 0 (BatchNorm's seldom is): a reader without a bias can take only that.
static int unshifted(const Fold *f, const char *prefix) {
    float *b = tensor(f, prefix, "bias", f->D), *mean = tensor(f, prefix, "running_mean", f->D);
    for (size_t i = 0; i < f->D; i++)
        if ((b && b[i] != 0.0f) || (mean && mean[i] != 0.0f)) return 0;
    return 1;
}

// W (rows, D) = W diag(scale), bias (rows) += W shift (with the W before scaling), in double.
static void fold_into(const Fold *f, float *W, float *bias, size_t rows) {
    for (size_t r = 0; r < rows; r++) {
        double add = 0.0;
        float *w = W + r * f->D;
        for (size_t j = 0; j < f->D; j++) {
            add += (double)w[j] * f->shift[j];
            w[j] = (float)(w[j] * f->scale[j]);
        }
        if (bias) bias[r] = (float)(bias[r] + add);
    }
}

// The head's matrix (V, D): lm_head.weight, made from wte when the head is tied to it.
static float *head_matrix(Fold *f) {
    size_t V = (size_t)f->c->vocab_size, D = f->D;
    float *head = nl_tensor_find(f->set, "lm_head.weight", V * D);
    if (head) return head;
    const float *wte = nl_tensor_find(f->set, "wte.weight", V * D);
    if (!wte || !(head = nl_tensor_add(f->set, "lm_head.weight", 2, V, D))) {
        nl_error(f->err, wte ? NL_ERR_NOMEM : NL_ERR_FORMAT,
                 wte ? "out of memory" : "no wte.weight to untie the head from");
        return NULL;
    }
    memcpy(head, wte, V * D * sizeof *head);
    f->r->untied = 1;
    return head;
}

// The head's bias (V), added (zeros) where it has none.
static float *head_bias(Fold *f) {
    size_t V = (size_t)f->c->vocab_size;
    float *b = nl_tensor_find(f->set, "lm_head.bias", V);
    if (!b && !(b = nl_tensor_add(f->set, "lm_head.bias", 1, 1, V))) nl_error(f->err, NL_ERR_NOMEM, "out of memory");
    return b;
}

// x (rows, cols): each row less its mean (centre = 0: each column less its mean over the rows).
static void center(float *x, size_t rows, size_t cols, int by_row) {
    size_t n = by_row ? rows : cols, len = by_row ? cols : rows, step = by_row ? 1 : cols, at = by_row ? cols : 1;
    for (size_t k = 0; k < n; k++) {
        double sum = 0.0;
        for (size_t i = 0; i < len; i++) sum += x[k * at + i * step];
        float mean = (float)(sum / (double)len);
        for (size_t i = 0; i < len; i++) x[k * at + i * step] -= mean;
    }
}

// The writing weights and biases centred over the stream's width, the head's over the vocabulary.
static int center_all(Fold *f) {
    size_t V = (size_t)f->c->vocab_size, D = f->D, F = (size_t)f->c->n_inner, T = (size_t)f->c->block_size;
    float *head = head_matrix(f), *wpe = nl_tensor_find(f->set, "wpe.weight", T * D);
    if (!head) return -1;
    center(nl_tensor_find(f->set, "wte.weight", V * D), V, D, 1);
    if (wpe) center(wpe, T, D, 1);
    f->r->centered += 1 + (wpe != NULL);
    for (int l = 0; l < f->c->n_layer; l++) {
        static const char *const WRITERS[2] = {"attn.c_proj", "mlp.c_proj"};
        for (int k = 0; k < 2; k++) {
            char p[48];
            snprintf(p, sizeof p, "h.%d.%s", l, WRITERS[k]);
            float *W = tensor(f, p, "weight", D * (k ? F : D)), *b = tensor(f, p, "bias", D);
            if (!W) return nl_error(f->err, NL_ERR_FORMAT, "linear \"%s\": its weight is missing", p);
            center(W, D, k ? F : D, 0);
            if (b) center(b, 1, D, 1);
            f->r->centered++;
        }
    }
    center(head, V, D, 0);
    float *b = nl_tensor_find(f->set, "lm_head.bias", V);
    if (b) center(b, 1, V, 1);
    f->r->centered++;
    return 0;
}

// Norm `prefix` of width `width` folded into every linear its readers' bits name (layer l's), or kept
// where one of them has no bias for its shift. 0, or -1 with an error.
static int fold_into_readers(Fold *f, const char *prefix, size_t width, unsigned readers, int l) {
    const NlConfig *c = f->c;
    size_t D = (size_t)c->n_embd, Dh = nl_head_width(c), qkv = nl_query_width(c) + 2 * (size_t)c->n_kv_head * Dh;
    size_t up = c->gated_mlp ? 2 * (size_t)c->n_inner : (size_t)c->n_inner;
    static const char *const NAMES[4] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
    size_t rows[5] = {qkv, D, up, D, (size_t)c->vocab_size};
    float *W[5] = {0}, *bias[5] = {0};
    f->D = width;
    for (int k = 0; k < 5; k++) {
        if (!(readers >> k & 1u)) continue;
        char name[48];
        snprintf(name, sizeof name, "h.%d.%s", l, k < 4 ? NAMES[k] : "");
        W[k] = k == 4 ? head_matrix(f) : tensor(f, name, "weight", rows[k] * width);
        bias[k] = k == 4 ? nl_tensor_find(f->set, "lm_head.bias", rows[k]) : tensor(f, name, "bias", rows[k]);
        if (!W[k]) return k == 4 ? -1 : nl_error(f->err, NL_ERR_FORMAT, "linear \"%s\": its weight is missing", name);
        if (!bias[k] && !unshifted(f, prefix)) {
            if (k < 4) return keep(f, prefix, "its bias has nowhere to go: the linear reading it has none"), 0;
            if (!(bias[k] = head_bias(f))) return -1;
        }
    }
    if (take_norm(f, prefix) < 0) return -1;
    for (int k = 0; k < 5; k++)
        if (W[k]) fold_into(f, W[k], bias[k], rows[k]);
    f->r->folded++;
    return 0;
}

// Each layer's norms as its recipe places them (the file's header comment), then the final one.
static int fold_layers(Fold *f) {
    const NlConfig *c = f->c;
    const char *placement = nl_name(NL_NAMES_PLACEMENT, c->placement);
    for (int l = 0; l < c->n_layer; l++) {
        char name[48], why[160];
        for (int k = 0; k < NL_NS_COUNT; k++) {
            if (!(nl_recipe_block(&c->recipe, l)->norms >> k & 1u)) continue;
            unsigned readers;
            const char *rule;
            snprintf(name, sizeof name, "h.%d.%s", l, nl_recipe_norm_name(k));
            if (nl_recipe_fold_rule(&c->recipe, c->n_layer, l, k, &readers, &rule) == NL_FOLD_KEEP) {
                snprintf(why, sizeof why, rule, placement);
                keep(f, name, why);
            } else if (fold_into_readers(f, name, (size_t)(k == NL_NS_LN_2_SUB ? c->n_inner : c->n_embd), readers, l) !=
                       0)
                return -1;
        }
        for (int k = 0; c->qk_norm && k < 2; k++) {
            snprintf(name, sizeof name, "h.%d.attn.%s_norm", l, k ? "k" : "q");
            keep(f, name, "QK-norm's gain scales q or k after the normalization, and RoPE mixes its pairs");
        }
    }
    return c->recipe.final_norm ? fold_into_readers(f, "ln_f", (size_t)c->n_embd, NL_READ_HEAD, c->n_layer) : 0;
}

int nl_transformer_fold(NlTensorSet *set, const NlConfig *c, const NlFoldOptions *opts, NlFoldResult *r, NlError *err) {
    size_t D = (size_t)c->n_embd, widest = c->n_inner > c->n_embd ? (size_t)c->n_inner : D;
    Fold f = {set, c, D, r, err, calloc(widest, sizeof(double)), calloc(widest, sizeof(double))};
    int rc = -1;
    r->exact = 1;
    if (opts->center && !(c->norm == NL_NORM_LAYERNORM && nl_recipe_stream_read_by_norms(&c->recipe))) {
        snprintf(r->inexact_reason, sizeof r->inexact_reason,
                 "centering is exact only where every reader of the residual stream removes its mean: LayerNorm "
                 "where norms alone read it (this model: %s, %s)",
                 nl_name(NL_NAMES_NORM, c->norm), nl_name(NL_NAMES_PLACEMENT, c->placement));
        r->exact = 0;
        if (!opts->force) {
            nl_error(err, NL_ERR_ARG, "%s; --force centres anyway, and compare --fold measures what that changes",
                     r->inexact_reason);
            goto done;
        }
    }
    if (!f.scale || !f.shift) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((c->norm == NL_NORM_NONE || fold_layers(&f) == 0) && (f.D = D, !opts->center || center_all(&f) == 0)) rc = 0;
    r->head_bias = nl_tensor_find(set, "lm_head.bias", (size_t)c->vocab_size) != NULL;
done:
    free(f.scale);
    free(f.shift);
    return rc;
}
