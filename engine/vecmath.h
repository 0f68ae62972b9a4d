// vecmath.h — the element-wise math the kernels share, inline so that each loop that calls it
// vectorises (erf, e^x, GELU's tanh form, sigmoid and tanh, DyT's odd tanh, and max, sum and softmax
// over 8 lanes). Included by the kernels' files only (activations.c, rnn_cells.c, attention.c,
// sampler_math.c, norms.c), each built with the vectoriser's flags (the Makefile's VEC_FLAGS).
#ifndef NL_VECMATH_H
#define NL_VECMATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// erf(x) as x P(x^2) / Q(x^2) on |x| <= 3.92 (beyond, erf rounds to +-1 in float): a rational
// least-squares fit made for normlab (tools/dev/fit_erf.py), evaluated in double: max error 4.9e-8
// against erf, under 1 ulp of float near 1. Evaluated in float it erred 3.5e-7 (6 ulp near 1), against
// ~1e-7 for libm's erff, and a model whose MLP output nearly cancels before a norm (shakespeare-
// post-sublayer-rms's last layer) magnified that to 1.7e-4 in its logits, 4x torch's float32.
// Branch-free, so the GELU loop vectorises; libm's erff made GELU the costliest component of
// decoding (27% of decode time, 0.47 GFLOP/s).
static inline double erf_rational_d(double x) {
    double c = x < -3.92 ? -3.92 : x > 3.92 ? 3.92 : x, t = c * c;
    double p = 2.05700566e-06;
    p = p * t + 2.85275024e-04;
    p = p * t + 3.76059192e-03;
    p = p * t + 5.27281688e-02;
    p = p * t + 1.90223088e-01;
    p = p * t + 1.12837908e+00;
    double q = 3.81863435e-05;
    q = q * t + 1.16240966e-03;
    q = q * t + 1.49562018e-02;
    q = q * t + 1.14037548e-01;
    q = q * t + 5.01913134e-01;
    q = q * t + 1.0;
    return c * p / q;
}

static inline float erf_rational(float x) { return (float)erf_rational_d(x); }

// GELU, 0.5 x (1 + erf(x / sqrt 2)) as torch.nn.functional.gelu, in double and rounded once.
static inline float gelu_erf(float x) {
    double v = x;
    return (float)(0.5 * v * (1.0 + erf_rational_d(v * 0.70710678118654752)));
}

// e^x for float x, branch-free so that loops over it vectorise: round x / ln 2 to k with the
// 1.5 * 2^23 trick (no float-to-int conversion), reduce r = x - k ln 2 in two parts (Cody-Waite),
// a degree-6 polynomial for e^r on |r| <= ln2 / 2 (the Cephes expf coefficients), then scale by
// 2^k built in the exponent bits. Below -87.3 it returns 0 (libm: tiny normals to -87.34, then
// subnormals), above 88 e^88 (softmax only passes x <= 0); NaN stays NaN. Largest relative error
// against exp measured in tests/test_kernels.c: 8.3e-8, under 1 ulp (the test allows 2).
// libm's expf is a call per element: in the decode step's softmax it took half the attention time.
static inline __attribute__((always_inline)) float exp_parts(float x, float lo) {  // e^(x + lo), |lo| tiny
    const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
    float c = x < -87.3f ? -87.3f : x > 88.0f ? 88.0f : x;  // keeps 2^k a normal float
    float kf = c * 1.44269504088896341f + shifter;
    uint32_t kbits;
    memcpy(&kbits, &kf, sizeof kbits);
    kf -= shifter;
    float r = c - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f + lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t bits = (kbits - 0x4B400000u + 127u) << 23;  // 2^k, k = kbits - bits(shifter)
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x < -87.3f ? 0.0f : p * scale;
}

static inline __attribute__((always_inline)) float exp_poly(float x) { return exp_parts(x, 0.0f); }

// GELU's tanh form as v sigmoid(2z), z = sqrt(2/pi) (v + 0.044715 v^3): 0.5 v (1 + tanh z) = v / (1 + e^-2z),
// through exp_poly so that the loop vectorises (libm's tanhf per element ran at 0.33 GFLOP/s, 11.7% of
// GPT-2 small's prefill). Large |v| needs no branch: v^3 may overflow to +-inf, and e^-2z is then 0
// (v > 0: v itself) or e^88 at most (v < 0: v / 1.7e38, a tiny negative, where torch's float 1 + tanh
// rounds to 0). Error against the formula in double: tests/test_kernels.c.
static inline __attribute__((always_inline)) float gelu_tanh_poly(float v) {
    float z = 0.79788456080286536f * (v + 0.044715f * v * v * v);
    return v / (1.0f + exp_poly(-2.0f * z));
}

// The recurrent cells' nonlinearities through exp_poly, so that their loops vectorise: sigmoid(x) =
// 1 / (1 + e^-x) and tanh(x) = 2 sigmoid(2x) - 1 (absolute error, not relative, near 0: ~1e-7).
static inline __attribute__((always_inline)) float sigmoid_poly(float x) { return 1.0f / (1.0f + exp_poly(-x)); }
static inline __attribute__((always_inline)) float tanh_poly(float x) { return 2.0f * sigmoid_poly(2.0f * x) - 1.0f; }

// tanh for DyT, odd bit for bit (tanh_odd(-y) == -tanh_odd(y)) and never above 1 in magnitude: Cephes's
// tanhf made branch-free, both halves computed and one kept. |y| < 0.625: y + y z P(z), z = y^2, its
// degree-4 fit, relatively accurate near 0 (a tiny y gives y itself), where DyT's inputs mostly sit;
// beyond, 1 - 2 / (e^2|y| + 1) through exp_poly, which clamps at e^88, so an infinite y gives 1. The
// sign goes on last; NaN stays NaN. Against libm's tanh in double over every float of [0, 20] (beyond,
// it is 1): at most 7.9e-8 absolute, 1.4e-7 relative, both at 0.62831 (tests/test_norms.c holds it to
// 1e-7 and 2e-7). tanh_poly above is neither odd bit for bit nor relatively accurate near 0.
static inline __attribute__((always_inline)) float tanh_odd(float y) {
    float a = fabsf(y), z = a * a;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float t = a < 0.625f ? p * z * a + a : 1.0f - 2.0f / (exp_poly(2.0f * a) + 1.0f);
    return copysignf(t, y);
}

// s = cap tanh(s / cap) over n scores: Gemma 2's soft-capping, with tanh_odd (odd, at most 1).
static inline __attribute__((always_inline)) void softcap_inline(float *s, size_t n, float cap) {
    for (size_t i = 0; i < n; i++) s[i] = cap * tanh_odd(s[i] / cap);
}

// Max and sum over n floats in 8 independent lanes, which the vectoriser maps onto registers
// (a single running max or sum is a serial chain it must keep in order).
static inline __attribute__((always_inline)) float max_lanes(const float *x, size_t n) {
    float m[8];
    for (size_t k = 0; k < 8; k++) m[k] = x[0];
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t k = 0; k < 8; k++) m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
    float max = x[0];
    for (; i < n; i++) max = x[i] > max ? x[i] : max;
    for (size_t k = 0; k < 8; k++) max = m[k] > max ? m[k] : max;
    return max;
}

static inline __attribute__((always_inline)) float sum_lanes(const float *x, size_t n) {
    float acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t k = 0; k < 8; k++) acc[k] += x[i + k];
    float sum = 0.0f;
    for (; i < n; i++) sum += x[i];
    for (size_t k = 0; k < 8; k++) sum += acc[k];
    return sum;
}

// Numerically stable softmax of x[0..n) in place: exponentials of x - max by exp_poly.
static inline __attribute__((always_inline)) void softmax_inline(float *x, size_t n) {
    float max = max_lanes(x, n);
    for (size_t i = 0; i < n; i++) x[i] = exp_poly(x[i] - max);
    float inv = 1.0f / sum_lanes(x, n);
    for (size_t i = 0; i < n; i++) x[i] *= inv;
}

#endif
