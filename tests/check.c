// check.c — see check.h.
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "normlab.h"

static int passed, failed;  // the harness's counters: test binaries only
static const char *current = "?";

void check_true(int ok, const char *file, int line, const char *fmt, ...) {
    if (ok) {
        passed++;
        return;
    }
    failed++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s (%s:%d): ", current, file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

void check_run(const char *name, void (*fn)(void)) {
    current = name;
    int before = failed;
    fn();
    if (failed == before) printf("ok   %s\n", name);
    else printf("FAIL %s\n", name);
}

int check_close(const char *what, const float *got, const double *want, size_t n, double atol, double rtol) {
    double worst = 0.0, worst_excess = -1.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        double excess = d - (atol + rtol * fabs(want[i]));
        if (!(d <= worst) || isnan(d)) { worst = d; }
        if (excess > worst_excess || isnan(d)) {
            worst_excess = isnan(d) ? INFINITY : excess;
            at = i;
        }
    }
    int ok = worst_excess <= 0.0;
    printf("     %s: max |got - want| = %.3g over %zu values (tolerance %.1g + %.1g|want|)\n", what, worst, n, atol,
           rtol);
    check_true(ok, __FILE__, __LINE__, "%s: element %zu got %.9g want %.9g", what, at, n ? got[at] : 0.0,
               n ? want[at] : 0.0);
    return ok;
}

int check_summary(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, passed, failed);
    return failed ? 1 : 0;
}

const char *fixture(const char *name) {
    static char buf[512];
    snprintf(buf, sizeof buf, "tests/fixtures/%s", name);
    return buf;
}

NlModel *load_fixture(const char *name) {
    NlModel *m = NULL;
    NlError err;
    if (nl_model_load(&m, fixture(name), NULL, &err) == 0) return m;
    CHECK(0, "%s: %s", name, err.msg);
    return NULL;
}

int generate_one_state(NlState *s, NlSampler *const *samplers, size_t n, const int *prompt, size_t n_prompt,
                       const NlGenerateOptions *opts, NlEmitFn emit, void *ctx, NlGenerateStats *st, NlError *err) {
    NlGenerateOptions o = *opts;
    o.emit = emit;
    o.emit_ctx = ctx;
    return nl_generate(&s, 1, samplers, n, prompt, n_prompt, &o, st, err);
}

int generate_one(NlState *s, NlSampler *sampler, const int *prompt, size_t n_prompt, const NlGenerateOptions *opts,
                 NlEmitFn emit, void *ctx, NlGenerateStats *st, NlError *err) {
    return generate_one_state(s, &sampler, 1, prompt, n_prompt, opts, emit, ctx, st, err);
}
