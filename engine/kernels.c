// kernels.c — norms, activations, softmax and attention (the linears: linear.c).
#include "kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

// Sums of x[i] and of (x[i] - c)^2 over D floats in double, in 4 independent lanes so that the
// vectoriser can use them (one running sum is a serial chain it must keep in order).
static inline __attribute__((always_inline)) double sum_d(const float *x, size_t D) {
    double acc[4] = {0};
    size_t i = 0;
    for (; i + 4 <= D; i += 4)
        for (size_t k = 0; k < 4; k++) acc[k] += (double)x[i + k];
    double sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (; i < D; i++) sum += (double)x[i];
    return sum;
}

static inline __attribute__((always_inline)) double sum_sq_d(const float *x, size_t D, double c) {
    double acc[4] = {0};
    size_t i = 0;
    for (; i + 4 <= D; i += 4)
        for (size_t k = 0; k < 4; k++) {
            double d = (double)x[i + k] - c;
            acc[k] += d * d;
        }
    double sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (; i < D; i++) sum += ((double)x[i] - c) * ((double)x[i] - c);
    return sum;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void nl_layernorm(float *out, const float *x, const float *gain, const float *bias, size_t n, size_t D, float eps) {
    for (size_t r = 0; r < n; r++, x += D, out += D) {
        double mean = sum_d(x, D) / (double)D;
        double rstd = 1.0 / sqrt(sum_sq_d(x, D, mean) / (double)D + (double)eps);
        for (size_t i = 0; i < D; i++) {  // centre in double: a float mean of 1e4 is off by 1e-3
            float y = (float)(((double)x[i] - mean) * rstd) * gain[i];
            out[i] = bias ? y + bias[i] : y;
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void nl_rmsnorm(float *out, const float *x, const float *gain, const float *bias, size_t n, size_t D, float eps) {
    for (size_t r = 0; r < n; r++, x += D, out += D) {
        float rrms = (float)(1.0 / sqrt(sum_sq_d(x, D, 0.0) / (double)D + (double)eps));
        for (size_t i = 0; i < D; i++) {
            float y = x[i] * rrms * gain[i];
            out[i] = bias ? y + bias[i] : y;
        }
    }
}

void nl_batchnorm(float *out, const float *x, const float *gain, const float *bias, const float *mean, const float *var,
                  size_t n, size_t D, float eps) {
    for (size_t r = 0; r < n; r++, x += D, out += D)
        for (size_t i = 0; i < D; i++) {
            float y = (x[i] - mean[i]) / sqrtf(var[i] + eps) * gain[i];
            out[i] = bias ? y + bias[i] : y;
        }
}

void nl_batch_stats(float *mean, float *var, const float *x, size_t n, size_t D) {
    for (size_t i = 0; i < D; i++) {
        double sum = 0.0, sq = 0.0;
        for (size_t r = 0; r < n; r++) sum += x[r * D + i];
        double mu = sum / (double)n;
        for (size_t r = 0; r < n; r++) sq += (x[r * D + i] - mu) * (x[r * D + i] - mu);
        mean[i] = (float)mu;
        var[i] = (float)(sq / (double)n);
    }
}

void nl_norm(float *out, const float *x, NlNormWeights w, NlNormType type, size_t n, size_t D, float eps) {
    switch (type) {
    case NL_NORM_RMSNORM: nl_rmsnorm(out, x, w.gain, w.bias, n, D, eps); break;
    case NL_NORM_BATCHNORM: nl_batchnorm(out, x, w.gain, w.bias, w.mean, w.var, n, D, eps); break;
    case NL_NORM_NONE:
        if (out != x) memcpy(out, x, n * D * sizeof(float));
        break;
    default: nl_layernorm(out, x, w.gain, w.bias, n, D, eps); break;
    }
}

// erf(x) as x P(x^2) / Q(x^2) on |x| <= 3.92 (beyond, erf rounds to +-1 in float): a rational
// least-squares fit made for normlab (tools/dev/fit_erf.py; max error 2e-8 in double, 3.5e-7 evaluated in
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

float nl_exp(float x) { return exp_poly(x); }

// GELU's tanh form as v sigmoid(2z), z = sqrt(2/pi) (v + 0.044715 v^3): 0.5 v (1 + tanh z) = v / (1 + e^-2z),
// through exp_poly so that the loop vectorises (libm's tanhf per element ran at 0.33 GFLOP/s, 11.7% of
// GPT-2 small's prefill). Large |v| needs no branch: v^3 may overflow to +-inf, and e^-2z is then 0
// (v > 0: v itself) or e^88 at most (v < 0: v / 1.7e38, a tiny negative, where torch's float 1 + tanh
// rounds to 0). Error against the formula in double: tests/test_kernels.c.
static inline __attribute__((always_inline)) float gelu_tanh_poly(float v) {
    float z = 0.79788456080286536f * (v + 0.044715f * v * v * v);
    return v / (1.0f + exp_poly(-2.0f * z));
}

// Built for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 with FMA) and the baseline, picked at load time
// (GCC function multi-versioning), so the same binary runs everywhere and vectorises where it can.
// Each element is its own chain of operations, so every build gives the same bits. The AVX-512
// build ran GELU 1.9x as fast (16 streams of the shipped model, one thread, Zen 5: 1.25 against 0.66
// us a token); for the norms an AVX-512 build measured no faster (attention has its own wide pass).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void nl_activation(float *x, size_t count, NlActivation act) {
    switch (act) {
    case NL_ACT_GELU:  // 0.5 x (1 + erf(x / sqrt 2)), torch.nn.functional.gelu
        for (size_t i = 0; i < count; i++) x[i] = 0.5f * x[i] * (1.0f + erf_rational(x[i] * 0.70710678118654752f));
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
        for (size_t j = 0; j < F; j++)
            gate[j] = 0.5f * gate[j] * (1.0f + erf_rational(gate[j] * 0.70710678118654752f)) * up[j];
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

void nl_rope(float *x, size_t heads, size_t Dh, const float *cos_sin) {
    for (size_t h = 0; h < heads; h++) {
        float *v = x + h * Dh;
        for (size_t i = 0; i < Dh; i += 2) {
            float c = cos_sin[i], s = cos_sin[i + 1], v0 = v[i], v1 = v[i + 1];
            v[i] = v0 * c - v1 * s;
            v[i + 1] = v0 * s + v1 * c;
        }
    }
}

void nl_rope_table(float *rope, size_t T, size_t Dh, float theta) {
    for (size_t p = 0; p < T; p++)
        for (size_t i = 0; i < Dh; i += 2) {
            float freq = 1.0f / powf(theta, (float)i / (float)Dh), angle = (float)p * freq;
            rope[p * Dh + i] = cosf(angle);
            rope[p * Dh + i + 1] = sinf(angle);
        }
}

void nl_rope_shift(float *K, float *V, size_t stride, size_t Dh, size_t keep, size_t drop, size_t len,
                   const float *cos_sin) {
    float back[NL_ROPE_SHIFT_HEAD_MAX], k[NL_ROPE_SHIFT_HEAD_MAX];
    for (size_t i = 0; i < Dh; i += 2) back[i] = cos_sin[i], back[i + 1] = -cos_sin[i + 1];
    for (size_t p = keep + drop; p < len; p++) {
        for (size_t d = 0; d < Dh; d++) k[d] = K[nl_key_offset(p, d, stride)];
        nl_rope(k, 1, Dh, back);
        for (size_t d = 0; d < Dh; d++) K[nl_key_offset(p - drop, d, stride)] = k[d];
        memcpy(V + nl_value_offset(p - drop, Dh, stride), V + nl_value_offset(p, Dh, stride), Dh * sizeof(float));
    }
}

void nl_add(float *y, const float *x, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] += x[i];
}

void nl_add_scaled(float *y, float alpha, const float *x, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] = alpha * y[i] + x[i];
}

// The recurrent cells' nonlinearities through exp_poly, so that their loops vectorise: sigmoid(x) =
// 1 / (1 + e^-x) and tanh(x) = 2 sigmoid(2x) - 1 (absolute error, not relative, near 0: ~1e-7).
static inline __attribute__((always_inline)) float sigmoid_poly(float x) { return 1.0f / (1.0f + exp_poly(-x)); }
static inline __attribute__((always_inline)) float tanh_poly(float x) { return 2.0f * sigmoid_poly(2.0f * x) - 1.0f; }

float nl_sigmoid(float x) { return sigmoid_poly(x); }
float nl_tanh(float x) { return tanh_poly(x); }

void nl_lstm_cell(float *c, const float *a, size_t S) {
    const float *f = a, *i = a + S, *g = a + 3 * S;
    for (size_t k = 0; k < S; k++) c[k] = sigmoid_poly(f[k]) * c[k] + sigmoid_poly(i[k]) * tanh_poly(g[k]);
}

void nl_lstm_output(float *h, const float *a, const float *cn, size_t S) {
    const float *o = a + 2 * S;
    for (size_t k = 0; k < S; k++) h[k] = sigmoid_poly(o[k]) * tanh_poly(cn[k]);
}

void nl_gru_update(float *h, const float *zr, const float *xc, const float *hc, size_t S) {
    const float *z = zr, *r = zr + S;
    for (size_t k = 0; k < S; k++) {
        float cand = tanh_poly(xc[k] + sigmoid_poly(r[k]) * hc[k]), u = sigmoid_poly(z[k]);
        h[k] = (1.0f - u) * h[k] + u * cand;
    }
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

#define ATTEND_LANES 8
#include "attend_lanes.h"
#undef ATTEND_LANES
#define ATTEND_LANES 16
#include "attend_lanes.h"
#undef ATTEND_LANES

// One query's attention in 16-float vectors where the CPU has AVX-512 (x86-64-v4), else in 8-float
// ones built for AVX2 and for the baseline (GCC function multi-versioning); the same bits either way
// (attend_lanes.h). 4 heads of 32 over 96 keys took 0.75-1.0 against 1.06-1.30 us in cache, 1.2-1.8
// against 1.5-2.3 out of it (Zen 5, one thread, repeated runs). The 8-float code built for AVX-512
// ran slower than for AVX2, so the wide build has its own pass.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("arch=x86-64-v4"))) static void attend_avx512(float *out, const float *q, const float *K,
                                                                    const float *V, size_t stride, size_t len,
                                                                    size_t Dh, float scale, float *scores) {
    attend_16(out, q, K, V, stride, len, Dh, scale, scores);
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
attend_avx2(float *out, const float *q, const float *K, const float *V, size_t stride, size_t len, size_t Dh,
            float scale, float *scores) {
    attend_8(out, q, K, V, stride, len, Dh, scale, scores);
}
#endif

int nl_attend_one_lanes(size_t lanes, float *out, const float *q, const float *K, const float *V, size_t stride,
                        size_t len, size_t Dh, float scale, float *scores) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (lanes == 16 && !__builtin_cpu_supports("x86-64-v4")) return -1;
    if (lanes == 16) attend_avx512(out, q, K, V, stride, len, Dh, scale, scores);
    else if (lanes == 8) attend_avx2(out, q, K, V, stride, len, Dh, scale, scores);
    else return -1;
#else
    if (lanes != 8) return -1;
    attend_8(out, q, K, V, stride, len, Dh, scale, scores);
#endif
    return 0;
}

void nl_attend_one(float *out, const float *q, const float *K, const float *V, size_t stride, size_t len, size_t Dh,
                   float scale, float *scores) {
    if (nl_attend_one_lanes(16, out, q, K, V, stride, len, Dh, scale, scores) != 0)
        (void)nl_attend_one_lanes(8, out, q, K, V, stride, len, Dh, scale, scores);
}

// One block of queries r0 .. r1 - 1 (rows of scores), in three steps: scores tile by tile (only the
// rows that see a key of the tile), softmax of each row over its own keys with the rest set to 0,
// and the weighted values tile by tile into out (tile 0 is seen by every row: it starts the sums).
static void attend_block(float *out, size_t out_stride, const float *q, size_t q_stride, size_t r0, size_t r1,
                         size_t first_len, const float *K, const float *V, size_t stride, size_t Dh, float scale,
                         float *scores, size_t ld) {
    size_t last = first_len + r1 - 1, tiles = nl_tiles(last);  // the longest row's length
    for (size_t t = 0; t < tiles; t++) {
        size_t j0 = t * NL_TILE, rs = j0 + 1 > first_len + r0 ? j0 + 1 - first_len : r0;  // first row that sees j0
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(r1 - rs), NL_TILE, (int)Dh, scale,
                    q + rs * q_stride, (int)q_stride, K + t * stride, NL_TILE, 0.0f, scores + (rs - r0) * ld + j0,
                    (int)ld);
    }
    for (size_t r = r0; r < r1; r++) {
        float *p = scores + (r - r0) * ld;
        size_t len = first_len + r;
        softmax_inline(p, len);
        for (size_t j = len; j < tiles * NL_TILE; j++) p[j] = 0.0f;
    }
    for (size_t t = 0; t < tiles; t++) {
        size_t j0 = t * NL_TILE, rs = j0 + 1 > first_len + r0 ? j0 + 1 - first_len : r0;
        size_t keys = last - j0 < NL_TILE ? last - j0 : NL_TILE;  // written positions of the tile
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(r1 - rs), (int)Dh, (int)keys, 1.0f,
                    scores + (rs - r0) * ld + j0, (int)ld, V + t * stride, (int)Dh, t ? 1.0f : 0.0f,
                    out + rs * out_stride, (int)out_stride);
    }
}

// In 8 lanes, so that the compiler keeps the exponentials in vectors (AVX2 where the CPU has it).
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) double
nl_attention_probs(float *restrict p, const float *restrict q, const float *restrict K, size_t stride, size_t len,
                   size_t Dh, float scale) {
    for (size_t j0 = 0; j0 < len; j0 += NL_TILE) {  // a tile's keys side by side: (Dh, NL_TILE) rows
        size_t keys = len - j0 < NL_TILE ? len - j0 : NL_TILE;
        const float *tile = K + (j0 / NL_TILE) * stride;
        float acc[NL_TILE] = {0};  // in registers: the sums over d of a whole tile (the same order as before)
        if (keys == NL_TILE)
            for (size_t d = 0; d < Dh; d++)
                for (size_t j = 0; j < NL_TILE; j++) acc[j] += q[d] * tile[d * NL_TILE + j];
        else
            for (size_t d = 0; d < Dh; d++)
                for (size_t j = 0; j < keys; j++) acc[j] += q[d] * tile[d * NL_TILE + j];
        memcpy(p + j0, acc, keys * sizeof *acc);
    }
    for (size_t j = 0; j < len; j++) p[j] *= scale;
    float max = max_lanes(p, len), e_lanes[8] = {0}, ez_lanes[8] = {0};  // sums of e^z and e^z z, z = s - max
    size_t j = 0;
    for (; j + 8 <= len; j += 8)
        for (size_t k = 0; k < 8; k++) {
            float z = p[j + k] - max, e = exp_poly(z);
            p[j + k] = e;
            e_lanes[k] += e;
            ez_lanes[k] += e * z;
        }
    double sum = 0.0, weighted = 0.0;
    for (; j < len; j++) {
        float z = p[j] - max, e = exp_poly(z);
        p[j] = e;
        sum += e;
        weighted += (double)e * z;
    }
    for (size_t k = 0; k < 8; k++) sum += e_lanes[k], weighted += ez_lanes[k];
    float inv = (float)(1.0 / sum);
    for (j = 0; j < len; j++) p[j] *= inv;
    return log(sum) - weighted / sum;  // -sum p ln p, with ln p = z - ln sum
}

void nl_attend_rows(float *out, size_t out_stride, const float *q, size_t q_stride, size_t n, size_t first_len,
                    const float *K, const float *V, size_t stride, size_t Dh, float scale, float *scores, size_t ld) {
    for (size_t r0 = 0; r0 < n; r0 += NL_ATTEND_BLOCK)
        attend_block(out, out_stride, q, q_stride, r0, r0 + NL_ATTEND_BLOCK < n ? r0 + NL_ATTEND_BLOCK : n, first_len,
                     K, V, stride, Dh, scale, scores, ld);
}

// e^((x - max) * scale) as exp_poly computes e^y, but with y carried in two floats, y = yh + yl: the
// difference x - max exactly (TwoSum), its product with scale (also in two floats) exactly by fma,
// and yl added to the reduced argument (exp_parts). Then the error is the polynomial's alone (8.4e-8 of e^y
// measured, tests/test_kernels.c), where rounding y to one float adds |y| 6e-8 of e^y. Below -87.3
// it returns 0. (Without FMA, in the baseline build, fmaf is a library call: slower, the same bits.)
static inline __attribute__((always_inline)) float exp_shifted(float x, float neg_max, float sh, float sl) {
    float s = x + neg_max, bb = s - x, err = (x - (s - bb)) + (neg_max - bb);
    float yh = s * sh, yl = fmaf(s, sh, -yh) + (s * sl + err * sh);
    return exp_parts(yh, yl);
}

float nl_exp_scaled(float x, float max, double scale) {
    float sh = (float)scale;
    return exp_shifted(x, -max, sh, (float)(scale - (double)sh));
}

// Over a vocabulary's logits: the max and whether all are finite, then the weights e^((x - max) *
// scale) with their sum. The sum runs in 8 double lanes: a float sum of 50,257 weights would lose
// 1e-4 of its value, a double one 1e-16 against the weights' own 2 ulp. Built for x86-64-v4, v3 and
// the baseline: libm's exp in double was half of eval's time on a 50,257-token vocabulary, and the
// sampler's draw cost more than the model's forward pass.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
float nl_max(const float *x, size_t n) {
    return max_lanes(x, n);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
int nl_max_finite(const float *x, size_t n, float *max_out) {
    typedef float v8f __attribute__((vector_size(32)));
    typedef int v8i __attribute__((vector_size(32)));
    v8f m = {x[0], x[0], x[0], x[0], x[0], x[0], x[0], x[0]};
    v8i bad = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {  // one pass: the max by a blend, and an exponent all ones (Inf or NaN)
        v8f v;
        v8i bits;
        memcpy(&v, x + i, sizeof v);
        memcpy(&bits, x + i, sizeof bits);
        v8i gt = v > m, vi, mi;
        memcpy(&vi, &v, sizeof vi);
        memcpy(&mi, &m, sizeof mi);
        mi = (gt & vi) | (~gt & mi);
        memcpy(&m, &mi, sizeof m);
        bad |= (bits & 0x7f800000) == 0x7f800000;
    }
    float max = x[0];
    int any = 0;
    for (size_t k = 0; k < 8; k++) max = m[k] > max ? m[k] : max, any |= bad[k];
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        any |= (u & 0x7f800000u) == 0x7f800000u;
        max = x[i] > max ? x[i] : max;
    }
    *max_out = max;
    return !any;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
double
nl_exp_weights(float *w, const float *x, size_t n, float max, double scale) {
    float sh = (float)scale, sl = (float)(scale - (double)sh), neg_max = -max;
    double acc[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t k = 0; k < 16; k++) {
            float e = exp_shifted(x[i + k], neg_max, sh, sl);
            if (w) w[i + k] = e;
            acc[k] += (double)e;
        }
    double sum = 0.0;
    for (size_t k = 0; k < 16; k++) sum += acc[k];
    for (; i < n; i++) {
        float e = exp_shifted(x[i], neg_max, sh, sl);
        if (w) w[i] = e;
        sum += (double)e;
    }
    return sum;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void nl_mass_split(const float *x, const float *w, size_t n, const float th[3], double above[3], double below[3],
                   size_t count[3]) {
    // 16 lanes; each sums 16 values in float (within 15 * 2^-24 of their sum), then adds that to its
    // double sum. Counts in float too, exact below 2^24.
    enum { L = 16, BLOCK = 16 * L };
    double up[3] = {0}, down[3] = {0};
    size_t cnt[3] = {0}, i = 0;
    const float t0 = th[0], t1 = th[1], t2 = th[2];
    for (; i + BLOCK <= n; i += BLOCK) {
        float a0[L] = {0}, a1[L] = {0}, a2[L] = {0}, b0[L] = {0}, b1[L] = {0}, b2[L] = {0};
        float c0[L] = {0}, c1[L] = {0}, c2[L] = {0};
        for (size_t j = i; j < i + BLOCK; j += L)
            for (size_t k = 0; k < L; k++) {
                float v = x[j + k], m = w[j + k];
                float m0 = v >= t0 ? m : 0.0f, m1 = v >= t1 ? m : 0.0f, m2 = v >= t2 ? m : 0.0f;
                float n0 = v >= t0 ? 1.0f : 0.0f, n1 = v >= t1 ? 1.0f : 0.0f, n2 = v >= t2 ? 1.0f : 0.0f;
                a0[k] += m0, a1[k] += m1, a2[k] += m2, c0[k] += n0, c1[k] += n1, c2[k] += n2;
                b0[k] += m - m0, b1[k] += m - m1, b2[k] += m - m2;  // (exact: m or 0)
            }
        for (size_t k = 0; k < L; k++) {
            up[0] += a0[k], up[1] += a1[k], up[2] += a2[k], down[0] += b0[k], down[1] += b1[k], down[2] += b2[k];
            cnt[0] += (size_t)c0[k], cnt[1] += (size_t)c1[k], cnt[2] += (size_t)c2[k];
        }
    }
    for (; i < n; i++)
        for (int k = 0; k < 3; k++) {
            int in = x[i] >= th[k];
            up[k] += in ? w[i] : 0.0, down[k] += in ? 0.0 : w[i], cnt[k] += (size_t)in;
        }
    for (int k = 0; k < 3; k++) above[k] = up[k], below[k] = down[k], count[k] = cnt[k];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
size_t
nl_collect_band(int *ids, size_t cap, const float *x, size_t n, float lo, float hi) {
    typedef float v8f __attribute__((vector_size(32)));
    typedef int v8i __attribute__((vector_size(32)));
    size_t m = 0, i = 0;
    for (; i + 8 <= n; i += 8) {  // a block is looked into only if it holds one: few do
        v8f v;
        memcpy(&v, x + i, sizeof v);
        v8i in = (v >= lo) & (v < hi);
        uint64_t any[4];
        memcpy(any, &in, sizeof any);
        if (!(any[0] | any[1] | any[2] | any[3])) continue;
        for (size_t k = i; k < i + 8; k++)
            if (x[k] >= lo && x[k] < hi && m < cap) ids[m++] = (int)k;
    }
    for (; i < n; i++)
        if (x[i] >= lo && x[i] < hi && m < cap) ids[m++] = (int)i;
    return m;
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

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// GCC gives the dispatchers of target_clones default visibility whatever the declaration says
// (visibility attributes and pragmas are ignored for them), so they are hidden here, as the rest of
// kernels.h is.
__asm__(".hidden nl_layernorm\n.hidden nl_layernorm.resolver\n"
        ".hidden nl_rmsnorm\n.hidden nl_rmsnorm.resolver\n"
        ".hidden nl_activation\n.hidden nl_activation.resolver\n"
        ".hidden nl_attention_probs\n.hidden nl_attention_probs.resolver\n"
        ".hidden nl_max\n.hidden nl_max.resolver\n"
        ".hidden nl_max_finite\n.hidden nl_max_finite.resolver\n"
        ".hidden nl_exp_weights\n.hidden nl_exp_weights.resolver\n"
        ".hidden nl_mass_split\n.hidden nl_mass_split.resolver\n"
        ".hidden nl_collect_band\n.hidden nl_collect_band.resolver\n");
#endif
