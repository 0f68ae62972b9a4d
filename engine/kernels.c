// kernels.c — norms, linears (OpenBLAS and naive), activations, softmax.
#include "kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

void nl_layernorm(float *out, const float *x, const float *gain, const float *bias, size_t n, size_t D, float eps) {
    for (size_t r = 0; r < n; r++, x += D, out += D) {
        double sum = 0.0, sq = 0.0;
        for (size_t i = 0; i < D; i++) sum += x[i];
        double mean = sum / (double)D;
        for (size_t i = 0; i < D; i++) {
            double c = (double)x[i] - mean;
            sq += c * c;
        }
        double rstd = 1.0 / sqrt(sq / (double)D + (double)eps);
        for (size_t i = 0; i < D; i++) {  // centre in double: a float mean of 1e4 is off by 1e-3
            float y = (float)(((double)x[i] - mean) * rstd) * gain[i];
            out[i] = bias ? y + bias[i] : y;
        }
    }
}

void nl_rmsnorm(float *out, const float *x, const float *gain, const float *bias, size_t n, size_t D, float eps) {
    for (size_t r = 0; r < n; r++, x += D, out += D) {
        double sq = 0.0;
        for (size_t i = 0; i < D; i++) sq += (double)x[i] * x[i];
        float rrms = (float)(1.0 / sqrt(sq / (double)D + (double)eps));
        for (size_t i = 0; i < D; i++) {
            float y = x[i] * rrms * gain[i];
            out[i] = bias ? y + bias[i] : y;
        }
    }
}

void nl_norm(float *out, const float *x, NlNormWeights w, NlNormType type, size_t n, size_t D, float eps) {
    if (type == NL_NORM_LAYERNORM) nl_layernorm(out, x, w.gain, w.bias, n, D, eps);
    else nl_rmsnorm(out, x, w.gain, w.bias, n, D, eps);
}

void nl_linear(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in) {
    if (n == 1) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n_out, (int)n_in, 1.0f, w, (int)n_in, x, 1, 0.0f, y, 1);
    } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n_out, (int)n_in, 1.0f, x, (int)n_in,
                    w, (int)n_in, 0.0f, y, (int)n_out);
    }
    if (!b) return;
    for (size_t r = 0; r < n; r++) nl_add(y + r * n_out, b, n_out);
}

void nl_linear_naive(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in) {
    for (size_t r = 0; r < n; r++) {
        for (size_t o = 0; o < n_out; o++) {
            float acc = 0.0f;
            for (size_t i = 0; i < n_in; i++) acc += x[r * n_in + i] * w[o * n_in + i];
            y[r * n_out + o] = b ? acc + b[o] : acc;
        }
    }
}

// erf(x) as x P(x^2) / Q(x^2) on |x| <= 3.92 (beyond, erf rounds to +-1 in float): a rational
// least-squares fit made for normlab (tools/fit_erf.py; max error 2e-8 in double, 3.5e-7 evaluated in
// float, against ~1e-7 for libm's erff). Branch-free, so the GELU loop vectorises; libm's erff made
// GELU the costliest component of decoding (27% of decode time, 0.47 GFLOP/s).
static inline float erf_rational(float x) {
    float c = x < -3.92f ? -3.92f : x > 3.92f ? 3.92f : x, t = c * c;
    float p = 2.05700566e-06f;
    p = p * t + 2.85275024e-04f;
    p = p * t + 3.76059192e-03f;
    p = p * t + 5.27281688e-02f;
    p = p * t + 1.90223088e-01f;
    p = p * t + 1.12837908e+00f;
    float q = 3.81863435e-05f;
    q = q * t + 1.16240966e-03f;
    q = q * t + 1.49562018e-02f;
    q = q * t + 1.14037548e-01f;
    q = q * t + 5.01913134e-01f;
    q = q * t + 1.0f;
    return c * p / q;
}

float nl_erf(float x) { return erf_rational(x); }

// Built for AVX2 and for the baseline, picked at load time (GCC function multi-versioning), so
// the same binary runs everywhere and vectorises 8 floats at a time where it can.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void nl_activation(float *x, size_t count, NlActivation act) {
    switch (act) {
    case NL_ACT_GELU:  // 0.5 x (1 + erf(x / sqrt 2)), torch.nn.functional.gelu
        for (size_t i = 0; i < count; i++) x[i] = 0.5f * x[i] * (1.0f + erf_rational(x[i] * 0.70710678118654752f));
        break;
    case NL_ACT_GELU_TANH:  // gelu(x, approximate="tanh")
        for (size_t i = 0; i < count; i++) {
            float v = x[i];
            x[i] = 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
        }
        break;
    case NL_ACT_RELU:
        for (size_t i = 0; i < count; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    }
}

void nl_add(float *y, const float *x, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] += x[i];
}

void nl_softmax(float *x, size_t n) {
    float max = x[0];
    for (size_t i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    float sum = 0.0f;
    for (size_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (size_t i = 0; i < n; i++) x[i] *= inv;
}

// Dot product of n floats in 8 independent partial sums, which the vectoriser maps onto lanes.
static inline __attribute__((always_inline)) float dot(const float *a, const float *b, size_t n) {
    float acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    float sum = 0.0f;
    for (; i < n; i++) sum += a[i] * b[i];
    for (size_t k = 0; k < 8; k++) sum += acc[k];
    return sum;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void nl_attend_one(float *out, const float *q, const float *K, const float *V, size_t len, size_t Dh, float scale,
                   float *scores) {
    for (size_t j = 0; j < len; j++) scores[j] = scale * dot(q, K + j * Dh, Dh);
    nl_softmax(scores, len);
    for (size_t i = 0; i < Dh; i++) out[i] = 0.0f;
    for (size_t j = 0; j < len; j++) {
        const float p = scores[j], *v = V + j * Dh;
        for (size_t i = 0; i < Dh; i++) out[i] += p * v[i];
    }
}

size_t nl_first_nonfinite(const float *x, size_t n) {
    const size_t block = 4096;
    for (size_t start = 0; start < n; start += block) {
        size_t end = start + block < n ? start + block : n;
        unsigned bad = 0;
        for (size_t i = start; i < end; i++) {  // exponent all ones: Inf or NaN; vectorises
            uint32_t u;
            memcpy(&u, &x[i], sizeof u);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
        if (!bad) continue;
        for (size_t i = start; i < end; i++)
            if (!isfinite(x[i])) return i;
    }
    return SIZE_MAX;
}

void nl_set_threads(int n) { openblas_set_num_threads(n); }
int nl_get_threads(void) { return openblas_get_num_threads(); }
