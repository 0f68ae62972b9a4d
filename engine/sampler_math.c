// sampler_math.c — the scans over a row of logits the sampler and eval share: the max, e^((x - max)
// scale) and its sums, the mass above thresholds, a band of indices, the first non-finite value
// (kernels.h).
#include "kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vecmath.h"

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

NL_HIDDEN_CLONE(nl_max);
NL_HIDDEN_CLONE(nl_max_finite);
NL_HIDDEN_CLONE(nl_exp_weights);
NL_HIDDEN_CLONE(nl_mass_split);
NL_HIDDEN_CLONE(nl_collect_band);
