// norms.c — LayerNorm, RMSNorm, BatchNorm and DyT over rows, and nl_norm, their dispatch (kernels.h).
#include "kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vecmath.h"

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

// Element-wise through tanh_odd, so the loop vectorises; built for AVX-512 too, as the activations
// (the norms above are not), since it computes rather than streams: 0.42-0.56 ns an element against
// 1.18-1.33 for the AVX2 build and 15 for a libm tanhf loop (rows of 128, Zen 5, one thread).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void nl_dyt(float *out, const float *x, const float *gain, const float *bias, float alpha, size_t n, size_t D) {
    for (size_t r = 0; r < n; r++, x += D, out += D)
        for (size_t i = 0; i < D; i++) {
            float y = tanh_odd(alpha * x[i]) * gain[i];
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
    case NL_NORM_DYT: nl_dyt(out, x, w.gain, w.bias, *w.alpha, n, D); break;
    case NL_NORM_NONE:
        if (out != x) memcpy(out, x, n * D * sizeof(float));
        break;
    default: nl_layernorm(out, x, w.gain, w.bias, n, D, eps); break;
    }
}

NL_HIDDEN_CLONE(nl_layernorm);
NL_HIDDEN_CLONE(nl_rmsnorm);
NL_HIDDEN_CLONE(nl_dyt);
