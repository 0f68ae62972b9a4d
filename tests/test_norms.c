// test_norms.c — the norms (norms.c): LayerNorm and RMSNorm against a double-precision reference
// on adversarial inputs, and their invariances to scale and shift.
#include <math.h>
#include <stddef.h>

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

int main(void) {
    RUN(norms_match_double_reference_on_adversarial_inputs);
    RUN(layernorm_invariant_to_scale_and_shift_rmsnorm_to_scale_only);
    return check_summary("test_norms");
}
