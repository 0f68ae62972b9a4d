// test_quant.c — simulated quantization (quantize.h): the rounding of q8 and q4 against a float64
// recomputation of its definition, its round-trip bound, the matrices a load rounds for each
// --quantize-only class, and the forward pass of a quantized model against the double reference.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "normlab_lab.h"
#include "quantize.h"
#include "ref_forward.h"

// The definition, in double (quantize.h): per group, scale = max |x| / levels rounded to float32;
// q = round half away from zero of x / scale (the quotient rounded to float32 first, as the
// float32 division is), clamped to [-levels, levels]; the value is q * scale rounded to float32.
// (Rounding an exact quotient or product of float32 values through double to float32 gives the
// correctly rounded float32 result, so this is exact, not approximate.)
static void ref_quantize(float *dst, const float *src, size_t rows, size_t cols, size_t group, int levels) {
    for (size_t r = 0; r < rows; r++)
        for (size_t c0 = 0; c0 < cols; c0 += group) {
            size_t n = cols - c0 < group ? cols - c0 : group;
            const float *x = src + r * cols + c0;
            double amax = 0.0;
            for (size_t i = 0; i < n; i++) amax = fmax(amax, fabs((double)x[i]));
            float scale = (float)(amax / levels);
            for (size_t i = 0; i < n; i++) {
                if (amax == 0.0) {
                    dst[r * cols + c0 + i] = 0.0f;
                    continue;
                }
                double q = round((double)(float)((double)x[i] / (double)scale));
                q = fmin(fmax(q, -levels), levels);
                dst[r * cols + c0 + i] = (float)(q * (double)scale);
            }
        }
}

// A (rows, cols) matrix of values of many magnitudes and both signs, row 1 all zeros, row 2 one
// value, and exact half steps of the scale in row 3 (ties round away from zero).
static void fixture_matrix(float *m, size_t rows, size_t cols) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < rows * cols; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0;  // [0, 1)
        m[i] = (float)((u - 0.5) * pow(10.0, (double)(i % 7) - 3.0));
    }
    memset(m + cols, 0, cols * sizeof *m);
    memset(m + 2 * cols, 0, cols * sizeof *m);
    m[2 * cols + 5] = -3.25f;
    for (size_t i = 0; i < cols; i++) m[3 * cols + i] = (float)((double)(i % 15) - 7.0) * 0.5f;  // k/2 of max 3.5
    m[3 * cols] = 127.0f;  // scale 1 in q8's one group: the halves are ties
}

static void quantizer_matches_float64_definition(void) {
    enum { ROWS = 6, COLS = 70 };  // q4: groups of 32, 32 and 6
    float m[ROWS * COLS], got[ROWS * COLS], want[ROWS * COLS];
    fixture_matrix(m, ROWS, COLS);
    const NlQuant schemes[] = {NL_QUANT_Q8, NL_QUANT_Q4};
    for (int k = 0; k < 2; k++) {
        NlQuant q = schemes[k];
        int levels = q == NL_QUANT_Q8 ? 127 : 7;
        size_t group = q == NL_QUANT_Q8 ? COLS : 32;
        CHECK(nl_quant_levels(q) == levels && nl_quant_group(q, COLS) == group, "%s: levels and group",
              nl_quant_name(q));
        nl_quantize_rows(got, m, ROWS, COLS, q);
        ref_quantize(want, m, ROWS, COLS, group, levels);
        size_t bad = 0;
        for (size_t i = 0; i < ROWS * COLS; i++) bad += memcmp(&got[i], &want[i], sizeof got[i]) != 0;
        CHECK(bad == 0, "%s: %zu of %d values differ from the float64 recomputation", nl_quant_name(q), bad,
              ROWS * COLS);
        for (size_t i = 0; i < COLS; i++) CHECK(got[COLS + i] == 0.0f, "%s: a zero row stays zero", nl_quant_name(q));
        memcpy(got, m, sizeof m);
        nl_quantize_rows(got, got, ROWS, COLS, q);  // in place
        CHECK(memcmp(got, want, sizeof got) == 0, "%s: in place gives the same", nl_quant_name(q));
    }
    // q8 of row 3, scale 1: 0.5 -> 1, -0.5 -> -1, 1.5 -> 2, -2.5 -> -3 (half away from zero, not to even)
    nl_quantize_rows(got, m, ROWS, COLS, NL_QUANT_Q8);
    for (size_t i = 1; i < COLS; i++) {
        double x = m[3 * COLS + i], want_q = x < 0 ? -floor(-x + 0.5) : floor(x + 0.5);
        CHECK(got[3 * COLS + i] == (float)want_q, "tie %g -> %g, got %g", x, want_q, got[3 * COLS + i]);
    }
    nl_quantize_rows(got, m, ROWS, COLS, NL_QUANT_NONE);
    CHECK(memcmp(got, m, sizeof m) == 0, "none copies");
}

// |x - Q(x)| <= scale / 2 per element (plus float32's rounding of the product, one ulp of x), and
// the group's largest |x| is kept to that rounding: the integer levels reach +-levels.
static void round_trip_error_within_half_a_step(void) {
    enum { ROWS = 6, COLS = 70 };
    float m[ROWS * COLS], got[ROWS * COLS];
    fixture_matrix(m, ROWS, COLS);
    const NlQuant schemes[] = {NL_QUANT_Q8, NL_QUANT_Q4};
    for (int k = 0; k < 2; k++) {
        NlQuant q = schemes[k];
        size_t group = nl_quant_group(q, COLS);
        nl_quantize_rows(got, m, ROWS, COLS, q);
        double worst = 0.0;  // of |error| / (scale / 2)
        for (size_t r = 0; r < ROWS; r++)
            for (size_t c0 = 0; c0 < COLS; c0 += group) {
                size_t n = COLS - c0 < group ? COLS - c0 : group;
                float amax = 0.0f;
                for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(m[r * COLS + c0 + i]));
                double scale = amax / (float)nl_quant_levels(q);
                for (size_t i = 0; scale > 0 && i < n; i++) {
                    double x = m[r * COLS + c0 + i], err = fabs(x - got[r * COLS + c0 + i]);
                    double ulp = nextafterf(fabsf((float)x), INFINITY) - fabsf((float)x);
                    CHECK(err <= scale / 2 + ulp, "%s: row %zu col %zu: |error| %g > scale/2 %g", nl_quant_name(q), r,
                          c0 + i, err, scale / 2);
                    worst = fmax(worst, err / (scale / 2));
                    double levels = got[r * COLS + c0 + i] / scale;
                    CHECK(fabs(levels - round(levels)) < 1e-4 && fabs(levels) <= nl_quant_levels(q) + 1e-4,
                          "%s: a value is an integer number of steps within the levels (%g)", nl_quant_name(q), levels);
                }
            }
        CHECK(worst > 0.5 && worst <= 1.0 + 1e-6, "%s: the bound is approached (worst %.3f of scale/2)",
              nl_quant_name(q), worst);
    }
}

// The matrices of a class of one model: pointers into the weights, with their shapes.
typedef struct {
    const float *w;
    size_t rows, cols;
    unsigned cls;
} Matrix;

static size_t transformer_matrices(const NlModel *m, Matrix *out) {
    const NlConfig *c = nl_model_config(m);
    const NlTransformerWeights *w = nl_model_transformer_weights(m);
    size_t V = (size_t)c->vocab_size, D = (size_t)c->n_embd, k = 0;
    out[k++] = (Matrix){nl_weight_f32(w->wte), V, D, NL_MATRIX_EMBED | (c->tie_embeddings ? NL_MATRIX_HEAD : 0u)};
    out[k++] = (Matrix){nl_weight_f32(w->wpe), (size_t)c->block_size, D, NL_MATRIX_EMBED};
    for (int l = 0; l < c->n_layer; l++) {
        const NlLayerWeights *lw = &w->layers[l];
        out[k++] = (Matrix){nl_weight_f32(lw->attn.w), lw->attn.n_out, lw->attn.n_in, NL_MATRIX_ATTN};
        out[k++] = (Matrix){nl_weight_f32(lw->proj.w), lw->proj.n_out, lw->proj.n_in, NL_MATRIX_ATTN};
        out[k++] = (Matrix){nl_weight_f32(lw->fc.w), lw->fc.n_out, lw->fc.n_in, NL_MATRIX_MLP};
        out[k++] = (Matrix){nl_weight_f32(lw->out.w), lw->out.n_out, lw->out.n_in, NL_MATRIX_MLP};
    }
    out[k++] = (Matrix){nl_weight_f32(w->lm_head.w), V, D, NL_MATRIX_HEAD | (c->tie_embeddings ? NL_MATRIX_EMBED : 0u)};
    return k;
}

static size_t recurrent_matrices(const NlModel *m, Matrix *out) {
    const NlConfig *c = nl_model_config(m);
    const NlRecurrentWeights *w = nl_model_recurrent_weights(m);
    size_t k = 0;
    out[k++] = (Matrix){nl_weight_f32(w->wte), (size_t)c->vocab_size, (size_t)c->n_input, NL_MATRIX_EMBED};
    for (int l = 0; l < c->n_layer; l++) {
        out[k++] = (Matrix){nl_weight_f32(w->layers[l].ih.w), w->layers[l].ih.n_out, w->layers[l].ih.n_in,
                            NL_MATRIX_RECURRENT};
        out[k++] = (Matrix){nl_weight_f32(w->layers[l].hh.w), w->layers[l].hh.n_out, w->layers[l].hh.n_in,
                            NL_MATRIX_RECURRENT};
    }
    out[k++] = (Matrix){nl_weight_f32(w->lm_head.w), (size_t)c->vocab_size, (size_t)c->n_hidden, NL_MATRIX_HEAD};
    return k;
}

static size_t matrices(const NlModel *m, Matrix *out) {
    return nl_model_config(m)->arch == NL_ARCH_TRANSFORMER ? transformer_matrices(m, out) : recurrent_matrices(m, out);
}

// A copy of base (nl_model_copy) with the matrices of `only` rounded; *rounded: the classes it reports.
static NlModel *quantized_copy(const NlModel *base, const char *name, NlQuant q, unsigned only, unsigned *rounded) {
    NlModel *m = NULL;
    NlError err;
    if (nl_model_copy(&m, base, &err) != 0 || nl_quantize_model(m, q, only, rounded, &err) != 0) {
        CHECK(0, "%s %s 0x%x: %s", name, nl_quant_name(q), only, err.msg);
        nl_model_free(m);
        return NULL;
    }
    return m;
}

// The fixture loaded and rounded in place, as the command line's --quantize does.
static NlModel *load_quantized(const char *name, NlQuant q, unsigned only) {
    NlModel *m = load_fixture(name);
    NlError err;
    unsigned rounded;
    if (m && nl_quantize_model(m, q, only, &rounded, &err) != 0) {
        CHECK(0, "%s %s 0x%x: %s", name, nl_quant_name(q), only, err.msg);
        nl_model_free(m);
        return NULL;
    }
    return m;
}

// nl_model_matrices lists what the test's own walk of the weights finds: each with its shape, its
// classes and its data (a tied head is wte's entry, of both classes).
static void check_listed(const NlModel *m, const Matrix *mine, size_t n_mine, const char *name) {
    NlMatrix listed[64];
    size_t n = nl_model_matrices(m, NULL);
    CHECK(n <= 64 && nl_model_matrices(m, listed) == n, "%s: %zu matrices listed", name, n);
    size_t tied = nl_model_config(m)->arch == NL_ARCH_TRANSFORMER && nl_model_config(m)->tie_embeddings;
    CHECK(n + tied == n_mine, "%s: %zu listed, %zu walked", name, n, n_mine);
    for (size_t i = 0; i < n && i < n_mine; i++)
        CHECK(nl_weight_f32(listed[i].w) == mine[i].w && listed[i].rows == mine[i].rows &&
                  listed[i].cols == mine[i].cols && listed[i].classes == mine[i].cls,
              "%s: matrix %zu as walked", name, i);
}

// Every matrix of the picked classes is the float64 recomputation of its rounding, every other one
// (and every norm and bias) is the file's; what the model reports matches.
static void check_load(const char *name, NlQuant q, unsigned only) {
    NlModel *fresh = load_fixture(name), *plain = load_fixture(name), *quant = NULL;
    Matrix a[64], b[64], f[64];
    unsigned reported = 0;
    if (!fresh || !plain || !(quant = quantized_copy(plain, name, q, only, &reported))) goto done;
    size_t n = matrices(plain, a), picked = 0;
    CHECK(matrices(quant, b) == n && matrices(fresh, f) == n, "same matrices");
    for (size_t i = 0; i < n; i++)
        CHECK(memcmp(a[i].w, f[i].w, a[i].rows * a[i].cols * sizeof(float)) == 0,
              "%s: matrix %zu of the copied model is untouched", name, i);
    check_listed(plain, a, n, name);
    unsigned pick = only ? only : ~0u, classes = 0;
    for (size_t i = 0; i < n; i++) {
        size_t count = a[i].rows * a[i].cols;
        float *want = malloc(count * sizeof *want);
        if (!want) break;
        int rounded = (a[i].cls & pick) != 0;
        if (rounded) ref_quantize(want, a[i].w, a[i].rows, a[i].cols, nl_quant_group(q, a[i].cols), nl_quant_levels(q));
        else memcpy(want, a[i].w, count * sizeof *want);
        CHECK(memcmp(b[i].w, want, count * sizeof *want) == 0, "%s %s 0x%x: matrix %zu (class 0x%x) %s", name,
              nl_quant_name(q), only, i, a[i].cls, rounded ? "is rounded by the definition" : "is the file's");
        if (rounded) {
            picked++;
            classes |= a[i].cls;
            CHECK(memcmp(b[i].w, a[i].w, count * sizeof *want) != 0, "%s: matrix %zu changed", name, i);
        }
        free(want);
    }
    CHECK(reported == classes, "%s: reports %s 0x%x (0x%x)", name, nl_quant_name(q), reported, classes);
    CHECK(picked > 0, "%s 0x%x: something was rounded", name, only);
    if (nl_model_config(plain)->arch == NL_ARCH_TRANSFORMER) {
        const NlTransformerWeights *wp = nl_model_transformer_weights(plain), *wq = nl_model_transformer_weights(quant);
        size_t D = (size_t)nl_model_config(plain)->n_embd;
        CHECK(memcmp(wp->layers[0].norm[NL_NS_LN_1].gain, wq->layers[0].norm[NL_NS_LN_1].gain, D * sizeof(float)) == 0,
              "gains stay float32");
        if (wp->layers[0].attn.b)
            CHECK(memcmp(wp->layers[0].attn.b, wq->layers[0].attn.b, 3 * D * sizeof(float)) == 0, "biases too");
        if (nl_model_config(plain)->tie_embeddings) CHECK(wq->lm_head.w.data == wq->wte.data, "a tied head stays wte");
    }
done:
    nl_model_free(quant);  // (it borrows plain's tensors)
    nl_model_free(plain);
    nl_model_free(fresh);
}

static void load_rounds_exactly_the_picked_matrices(void) {
    const char *transformers[] = {"ln-pre-untied.json", "ln-pre-bias.json"};
    const unsigned classes[] = {
        0, NL_MATRIX_ATTN, NL_MATRIX_MLP, NL_MATRIX_HEAD, NL_MATRIX_EMBED, NL_MATRIX_ATTN | NL_MATRIX_MLP};
    for (int f = 0; f < 2; f++)
        for (int k = 0; k < 6; k++) {
            check_load(transformers[f], NL_QUANT_Q8, classes[k]);
            check_load(transformers[f], NL_QUANT_Q4, classes[k]);
        }
    const char *recurrent[] = {"lstm-ln.json", "gru-none.json"};
    const unsigned rclasses[] = {0, NL_MATRIX_RECURRENT, NL_MATRIX_HEAD, NL_MATRIX_EMBED};
    for (int f = 0; f < 2; f++)
        for (int k = 0; k < 4; k++) check_load(recurrent[f], NL_QUANT_Q8, rclasses[k]);
}

static void load_refuses_what_it_cannot_round(void) {
    NlModel *m = load_fixture("ln-pre-bias.json");
    NlError err;
    unsigned rounded = 1;
    if (!m) return;
    CHECK(nl_quantize_model(m, NL_QUANT_Q8, NL_MATRIX_RECURRENT, &rounded, &err) != 0 && rounded == 0 &&
              err.code == NL_ERR_ARG && strstr(err.msg, "no matrix of the classes"),
          "a transformer has no recurrent matrices: %s", err.msg);
    CHECK(nl_quantize_model(m, (NlQuant)7, 0, &rounded, &err) != 0 && strstr(err.msg, "unknown quantization"),
          "an unknown scheme: %s", err.msg);
    CHECK(nl_quantize_model(m, NL_QUANT_Q8, 64, &rounded, &err) != 0 && strstr(err.msg, "unknown quantization classes"),
          "an unknown class: %s", err.msg);
    nl_model_free(m);
}

// The quantized model's forward pass is the double reference's on the rounded weights (which the
// load test checked are the definition's): float32 against float64, within 2e-5 (as test_forward).
static void quantized_forward_matches_reference(void) {
    const char *names[] = {"ln-pre-untied.json", "rms-post-bias.json", "ln-peri-bias.json", "lstm-ln.json"};
    const int ids[] = {1, 4, 2, 7, 3, 0, 5, 9, 2};
    for (int i = 0; i < 4; i++) {
        NlModel *m = load_quantized(names[i], NL_QUANT_Q4, 0);
        NlState *s = NULL;
        NlError err;
        if (!m || nl_state_create(&s, m, NULL, &err) != 0) {
            CHECK(0, "%s: state", names[i]);
            nl_model_free(m);
            continue;
        }
        const NlConfig *c = nl_model_config(m);
        size_t n = c->arch == NL_ARCH_TRANSFORMER && (size_t)c->block_size < 9 ? (size_t)c->block_size : 9;
        size_t V = (size_t)c->vocab_size;
        double *want = malloc(n * V * sizeof *want);
        int rc = c->arch == NL_ARCH_TRANSFORMER
                     ? ref_forward(want, c, nl_model_transformer_weights(m), ids, n)
                     : ref_rnn_forward(want, c, nl_model_recurrent_weights(m), ids, n, NULL, NULL);
        CHECK(rc == 0, "reference ran");
        check_close(names[i], nl_forward(s, ids, n, 0, n), want, n * V, 2e-5, 2e-5);
        free(want);
        nl_state_free(s);
        nl_model_free(m);
    }
}

// --quantize-act: rounding the linears' inputs changes the logits (a little), and none changes
// nothing, bit for bit. (Its exact values are checked against the PyTorch reference by make parity.)
static void activation_rounding_moves_logits_a_little(void) {
    const char *names[] = {"ln-pre-bias.json", "lstm-none.json"};
    const int ids[] = {1, 4, 2, 7, 3, 0, 5, 9, 2};
    for (int i = 0; i < 2; i++) {
        NlModel *m = load_fixture(names[i]);
        NlState *plain = NULL, *none = NULL, *q8 = NULL;
        NlError err;
        NlRunOptions o = NL_RUN_DEFAULTS;
        if (!m) continue;
        size_t V = (size_t)nl_model_config(m)->vocab_size, n = 8;
        CHECK(nl_state_create(&plain, m, NULL, &err) == 0 &&
                  nl_quant_state_create(&none, m, &o, NL_QUANT_NONE, &err) == 0,
              "states");
        CHECK(nl_quant_state_create(&q8, m, &o, NL_QUANT_Q8, &err) == 0, "q8 state: %s", err.msg);
        if (plain && none && q8) {
            float *a = malloc(n * V * sizeof *a);
            memcpy(a, nl_forward(plain, ids, n, 0, n), n * V * sizeof *a);
            CHECK(memcmp(a, nl_forward(none, ids, n, 0, n), n * V * sizeof *a) == 0, "%s: none is bit-identical",
                  names[i]);
            const float *b = nl_forward(q8, ids, n, 0, n);
            double worst = 0.0;
            for (size_t k = 0; k < n * V; k++) worst = fmax(worst, fabs((double)a[k] - b[k]));
            CHECK(worst > 1e-6 && worst < 0.1, "%s: q8 activations move the logits by %g", names[i], worst);
            free(a);
        }
        nl_state_free(plain);
        nl_state_free(none);
        nl_state_free(q8);
        nl_model_free(m);
    }
}

static void names_parse_both_ways(void) {
    NlQuant q = NL_QUANT_NONE;
    CHECK(nl_quant_parse("Q8", &q) == 0 && q == NL_QUANT_Q8 && strcmp(nl_quant_name(q), "q8") == 0, "q8");
    CHECK(nl_quant_parse("q4", &q) == 0 && q == NL_QUANT_Q4, "q4");
    CHECK(nl_quant_parse("q2", &q) != 0 && q == NL_QUANT_Q4, "q2 is refused and leaves the value");
    unsigned classes = 0;
    char buf[64];
    CHECK(nl_quant_classes_parse("MLP,head", &classes) == 0 && classes == (NL_MATRIX_MLP | NL_MATRIX_HEAD) &&
              strcmp(nl_quant_classes_name(classes, buf, sizeof buf), "mlp,head") == 0,
          "classes both ways: %s", buf);
    CHECK(nl_quant_classes_parse("attn,", &classes) != 0 && nl_quant_classes_parse("bias", &classes) != 0,
          "an empty or unknown class is refused");
    CHECK(nl_quant_input_hook(NL_QUANT_NONE).fn == NULL && nl_quant_input_hook(NL_QUANT_Q4).fn != NULL,
          "no hook without rounding");
}

int main(void) {
    RUN(quantizer_matches_float64_definition);
    RUN(round_trip_error_within_half_a_step);
    RUN(load_rounds_exactly_the_picked_matrices);
    RUN(load_refuses_what_it_cannot_round);
    RUN(quantized_forward_matches_reference);
    RUN(activation_rounding_moves_logits_a_little);
    RUN(names_parse_both_ways);
    return check_summary("test_quant");
}
