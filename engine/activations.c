// activations.c — the activations (GELU, its tanh form, ReLU, SiLU, gated), the residual adds, and erf, e^x,
// sigmoid and tanh as functions (kernels.h).
#include "kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vecmath.h"

float nl_erf(float x) { return erf_rational(x); }

float nl_exp(float x) { return exp_poly(x); }

// Built for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 with FMA) and the baseline, picked at load time
// (GCC function multi-versioning), so the same binary runs everywhere and vectorises where it can.
// Each element is its own chain of operations, so every build gives the same bits. The AVX-512
// build ran GELU 1.9x as fast (16 streams of the shipped model, one thread, Zen 5: 1.25 against 0.66
// us a token, with erf in float; in double, vecmath.h, GELU took 0.85 against 0.44 us a token of a
// 127-token prefill); for the norms an AVX-512 build measured no faster (attention has its own wide pass).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void nl_activation(float *x, size_t count, NlActivation act) {
    switch (act) {
    case NL_ACT_GELU:  // 0.5 x (1 + erf(x / sqrt 2)), torch.nn.functional.gelu
        for (size_t i = 0; i < count; i++) x[i] = gelu_erf(x[i]);
        break;
    case NL_ACT_GELU_TANH:  // gelu(x, approximate="tanh"): 0.5 v (1 + tanh(z)) = v / (1 + e^-2z)
        for (size_t i = 0; i < count; i++) x[i] = gelu_tanh_poly(x[i]);
        break;
    case NL_ACT_RELU:
        for (size_t i = 0; i < count; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case NL_ACT_SILU:
        for (size_t i = 0; i < count; i++) x[i] = x[i] / (1.0f + exp_poly(-x[i]));
        break;
    }
}

// One row's gate (F) becomes act(gate) * up, in place; the two halves never overlap, so the loop
// vectorises (an ISA build each, as nl_activation).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void
gate_row(float *restrict gate, const float *restrict up, size_t F, NlActivation act) {
    switch (act) {
    case NL_ACT_SILU:
        for (size_t j = 0; j < F; j++) gate[j] = gate[j] / (1.0f + exp_poly(-gate[j])) * up[j];
        break;
    case NL_ACT_GELU:
        for (size_t j = 0; j < F; j++) gate[j] = gelu_erf(gate[j]) * up[j];
        break;
    case NL_ACT_GELU_TANH:
        for (size_t j = 0; j < F; j++) gate[j] = gelu_tanh_poly(gate[j]) * up[j];
        break;
    case NL_ACT_RELU:
        for (size_t j = 0; j < F; j++) gate[j] = (gate[j] > 0.0f ? gate[j] : 0.0f) * up[j];
        break;
    }
}

void nl_gated_activation(float *h, size_t rows, size_t F, NlActivation act) {
    for (size_t r = 0; r < rows; r++) {
        gate_row(h + r * 2 * F, h + r * 2 * F + F, F, act);
        if (r) memmove(h + r * F, h + r * 2 * F, F * sizeof(float));  // row r's result to its place
    }
}

void nl_add(float *y, const float *x, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] += x[i];
}

void nl_softcap(float *x, size_t count, float cap) { softcap_inline(x, count, cap); }

void nl_scale(float *x, float alpha, size_t count) {
    for (size_t i = 0; i < count; i++) x[i] *= alpha;
}

void nl_add_scaled(float *y, float alpha, const float *x, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] = alpha * y[i] + x[i];
}

float nl_sigmoid(float x) { return sigmoid_poly(x); }
float nl_tanh(float x) { return tanh_poly(x); }

NL_HIDDEN_CLONE(nl_activation);
