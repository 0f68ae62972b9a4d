// test_norms.c — the norms (norms.c): LayerNorm and RMSNorm against a double-precision reference
// on adversarial inputs, and their invariances to scale and shift; DyT's tanh against libm's, and DyT
// against its formula in double.
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "ref_forward.h"

#define D 96

static double uniform(unsigned *state) {  // deterministic, test-local
    *state = *state * 1103515245u + 12345u;
    return ((*state >> 8) & 0xFFFF) / 65536.0 - 0.5;
}

typedef struct {
    const char *name;
    double offset, scale, noise;
} Input;

// Adversarial rows: a large common offset with small noise, a constant row, tiny and huge scales.
static const Input INPUTS[] = {
    {"offset 1e4 + noise 1e-2", 1e4, 1.0, 1e-2}, {"constant row", 3.0, 1.0, 0.0},
    {"tiny scale 1e-6", 0.0, 1e-6, 1.0},         {"huge scale 1e6", 0.5, 1e6, 1.0},
    {"plain N(0,1)-ish", 0.0, 1.0, 2.0},
};

static void fill(float *x, double *xd, const Input *in, unsigned seed) {
    for (int i = 0; i < D; i++) {
        x[i] = (float)((in->offset + in->noise * uniform(&seed)) * in->scale);
        xd[i] = x[i];
    }
}

static void norms_match_double_reference_on_adversarial_inputs(void) {
    float x[D], g[D], b[D], out[D];
    double xd[D], want[D];
    unsigned s = 7;
    for (int i = 0; i < D; i++) {
        g[i] = (float)(1.0 + uniform(&s));
        b[i] = (float)uniform(&s);
    }
    for (size_t k = 0; k < sizeof INPUTS / sizeof INPUTS[0]; k++) {
        fill(x, xd, &INPUTS[k], 11u + (unsigned)k);
        // Reference: ref_forward.c's double LayerNorm on the same float inputs; tolerance 1e-4 abs +
        // 1e-4 rel (float output of a unit-variance quantity). The constant row's output is the bias
        // exactly (x - mean = 0), which a one-pass E[x^2]-E[x]^2 would get wrong at offset 1e4.
        nl_layernorm(out, x, g, b, 1, D, 1e-5f);
        ref_layernorm(want, xd, g, b, D, 1e-5);
        check_close(INPUTS[k].name, out, want, D, 1e-4, 1e-4);
        nl_rmsnorm(out, x, g, NULL, 1, D, 1e-5f);
        ref_rmsnorm(want, xd, g, NULL, D, 1e-5);
        check_close(INPUTS[k].name, out, want, D, 1e-4, 1e-4);
    }
}

// Max |norm(a*x + c) - norm(x)| for one row.
static double change(int rms, const float *x, double a, double c) {
    float y[D], n0[D], n1[D], g[D];
    for (int i = 0; i < D; i++) {
        g[i] = 1.0f;
        y[i] = (float)(a * x[i] + c);
    }
    if (rms) {
        nl_rmsnorm(n0, x, g, NULL, 1, D, 1e-12f);
        nl_rmsnorm(n1, y, g, NULL, 1, D, 1e-12f);
    } else {
        nl_layernorm(n0, x, g, NULL, 1, D, 1e-12f);
        nl_layernorm(n1, y, g, NULL, 1, D, 1e-12f);
    }
    double worst = 0.0;
    for (int i = 0; i < D; i++) worst = fmax(worst, fabs((double)n0[i] - n1[i]));
    return worst;
}

static void layernorm_invariant_to_scale_and_shift_rmsnorm_to_scale_only(void) {
    float x[D];
    unsigned s = 3;
    for (int i = 0; i < D; i++) x[i] = (float)(2.0 * uniform(&s) + 0.3);
    const double scales[] = {0.5, 2.0, 10.0};
    for (int k = 0; k < 3; k++) {
        // Tolerance 1e-5: float rounding of a unit-scale output; eps = 1e-12 so it cannot mask scale.
        CHECK(change(0, x, scales[k], 0.0) < 1e-5, "LN scale %g changed output by %g", scales[k],
              change(0, x, scales[k], 0.0));
        CHECK(change(1, x, scales[k], 0.0) < 1e-5, "RMS scale %g changed output by %g", scales[k],
              change(1, x, scales[k], 0.0));
    }
    CHECK(change(0, x, 1.0, 5.0) < 1e-5, "LN shift changed output by %g", change(0, x, 1.0, 5.0));
    CHECK(change(1, x, 1.0, 5.0) > 0.1, "RMS must not be shift invariant, change %g", change(1, x, 1.0, 5.0));
}

// DyT's tanh (vecmath.h's tanh_odd, run through nl_dyt with unit gain and alpha 1) against libm's tanh
// in double: on [-20, 20] every 2^-14 (the whole curve, to |y| ~ 9 where it reaches 1) and on every
// float of [0.5, 0.75), around 0.625 where it changes formula and its error peaks. Tolerance 1e-7
// absolute, 2e-7 relative: a sweep of every float of [0, 20] measured 7.9e-8 and 1.4e-7, both at
// 0.62831. Odd bit for bit and never above 1 in magnitude; at the special values +-0 keep their sign,
// a tiny y (normal or subnormal) gives y, a huge or infinite one +-1, a NaN a NaN.
static void tanh_error(const float *x, size_t n, double err[2], double at[2]) {
    enum { CHUNK = 4096 };
    float t[CHUNK], ones[CHUNK];
    for (size_t i = 0; i < CHUNK; i++) ones[i] = 1.0f;
    for (size_t c = 0; c < n; c += CHUNK) {
        size_t m = n - c < CHUNK ? n - c : CHUNK;
        nl_dyt(t, x + c, ones, NULL, 1.0f, 1, m);
        for (size_t i = 0; i < m; i++) {
            double want = tanh((double)x[c + i]), e = fabs(t[i] - want);
            if (e > err[0]) err[0] = e, at[0] = x[c + i];
            if (want != 0 && e / fabs(want) > err[1]) err[1] = e / fabs(want), at[1] = x[c + i];
        }
    }
}

static void dyt_tanh_within_1e7_of_libm_odd_and_bounded(void) {
    enum { N = 20 << 14, BAND = 1 << 22 };  // BAND: the floats of [0.5, 0.75), 2^22 of them
    float *x = malloc((2 * N + 1) * sizeof *x), *t = malloc((2 * N + 1) * sizeof *t);
    float *g = malloc((2 * N + 1) * sizeof *g), *band = malloc(BAND * sizeof *band);
    if (!x || !t || !g || !band) {
        CHECK(0, "out of memory");
        free(x), free(t), free(g), free(band);
        return;
    }
    for (int i = 0; i <= 2 * N; i++) x[i] = (float)(i - N) / 16384.0f, g[i] = 1.0f;
    for (int i = 0; i < BAND; i++) band[i] = 0.5f + (float)i * 0x1p-24f;
    double err[2] = {0, 0}, at[2] = {0, 0};
    tanh_error(x, 2 * N + 1, err, at);
    tanh_error(band, BAND, err, at);
    printf("     tanh_odd vs libm tanh (double): max |error| %.3g at %.6f, relative %.3g at %.6f (tolerance 1e-7, "
           "2e-7)\n",
           err[0], at[0], err[1], at[1]);
    CHECK(err[0] <= 1e-7 && err[1] <= 2e-7, "tanh error %.3g at %g, relative %.3g at %g", err[0], at[0], err[1], at[1]);
    nl_dyt(t, x, g, NULL, 1.0f, 1, 2 * N + 1);
    int odd = 1, bounded = 1;
    for (int i = 0; i <= 2 * N; i++) {
        odd &= t[i] == -t[2 * N - i];
        bounded &= fabsf(t[i]) <= 1.0f;
    }
    CHECK(odd && bounded, "odd %d, |tanh| <= 1 %d", odd, bounded);
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, FLT_MIN,  1e-40f,   -1e-40f,   0.625f, -0.625f,
                             9.0f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, NAN};
    enum { S = sizeof special / sizeof special[0] };
    float out[S];
    nl_dyt(out, special, g, NULL, 1.0f, 1, S);
    for (int i = 0; i < S; i++) {
        double want = tanh((double)special[i]);
        int ok = isnan(special[i]) ? isnan(out[i])
                                   : fabs(out[i] - want) <= 1e-7 && !signbit(out[i]) == !signbit(special[i]) &&
                                         (fabsf(special[i]) > 1e-20f || out[i] == special[i]);
        CHECK(ok, "tanh(%g) gave %g, libm %g", special[i], out[i], want);
    }
    CHECK(out[0] == 0.0f && !signbit(out[0]) && signbit(out[1]) && out[12] == 1.0f && out[15] == -1.0f,
          "tanh(+0) %g, tanh(-0) %g, tanh(FLT_MAX) %g, tanh(-inf) %g", out[0], out[1], out[12], out[15]);
    free(x), free(t), free(g), free(band);
}

// DyT over rows of odd widths (the vector loop's tails), alpha 0.5, 2 and -0.3 over inputs that reach
// both halves of the tanh and its saturation, with and without a bias, against g tanh(alpha x) + b in
// double: within 3e-7 (tanh's 1e-7 times gains up to 1.5, alpha x, the product and the sum rounded to
// float; measured 1.5e-7). In place bit for bit as out of place, and nl_norm's NL_NORM_DYT the same bits.
static void dyt_matches_double_formula_in_place_and_through_nl_norm(void) {
    enum { ROWS = 3, MAXW = 97 };
    const size_t widths[] = {1, 7, 8, 9, 15, 16, 17, 33, MAXW};
    const float alphas[] = {0.5f, 2.0f, -0.3f};
    float x[ROWS * MAXW], g[MAXW], b[MAXW], out[ROWS * MAXW], same[ROWS * MAXW];
    double worst = 0;
    unsigned s = 5;
    for (int i = 0; i < MAXW; i++) g[i] = (float)(1.0 + uniform(&s)), b[i] = (float)uniform(&s);
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (int a = 0; a < 3; a++)
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                size_t W = widths[w];
                const float *bias = with_bias ? b : NULL;
                for (size_t i = 0; i < ROWS * W; i++) x[i] = (float)(16.0 * uniform(&s));
                nl_dyt(out, x, g, bias, alphas[a], ROWS, W);
                double e = 0;
                for (size_t r = 0; r < ROWS; r++)
                    for (size_t i = 0; i < W; i++) {
                        double want = (double)g[i] * tanh((double)alphas[a] * x[r * W + i]) + (bias ? b[i] : 0.0);
                        e = fmax(e, fabs(out[r * W + i] - want));
                    }
                worst = fmax(worst, e);
                CHECK(e <= 3e-7, "DyT width %zu alpha %g bias %d: error %.3g", W, alphas[a], with_bias, e);
                nl_norm(same, x, (NlNormWeights){.gain = g, .bias = bias, .alpha = &alphas[a]}, NL_NORM_DYT, ROWS, W,
                        1e-5f);
                CHECK(memcmp(same, out, ROWS * W * sizeof *out) == 0, "width %zu: nl_norm differs from nl_dyt", W);
                nl_dyt(x, x, g, bias, alphas[a], ROWS, W);
                CHECK(memcmp(x, out, ROWS * W * sizeof *out) == 0, "width %zu: in place differs", W);
            }
    printf("     DyT vs g tanh(alpha x) + b in double, widths 1 to 97: max |error| %.3g (tolerance 3e-7)\n", worst);
}

int main(void) {
    RUN(norms_match_double_reference_on_adversarial_inputs);
    RUN(layernorm_invariant_to_scale_and_shift_rmsnorm_to_scale_only);
    RUN(dyt_tanh_within_1e7_of_libm_odd_and_bounded);
    RUN(dyt_matches_double_formula_in_place_and_through_nl_norm);
    return check_summary("test_norms");
}
