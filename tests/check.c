// check.c — see check.h.
#define _POSIX_C_SOURCE 200809L
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int copy_into(const char *from_dir, const char *to_dir, const char *name) {
    char from[512], to[512], buf[65536];
    snprintf(from, sizeof from, "%s/%s", from_dir, name);
    snprintf(to, sizeof to, "%s/%s", to_dir, name);
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    int ok = in && out;
    for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok ? 0 : -1;
}

const char *float32_twin(const char *model, char *dir) {
    NlModel *m = NULL;
    NlError err = {NL_OK, ""};
    char path[512];
    snprintf(dir, 64, "/tmp/normlab-twin-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return NULL;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    NlQuantizeParams p = {NL_DTYPE_F32, NULL, 0};
    NlQuantizeResult r;
    int ok = f && nl_model_load(&m, model, NULL, &err) == 0 && nl_model_quantize(m, &p, f, &r, &err) == 0;
    if (f && fclose(f) != 0) ok = 0;
    nl_model_free(m);
    ok = ok && copy_into(model, dir, "config.json") == 0 && copy_into(model, dir, "tokenizer.json") == 0;
    CHECK(ok, "the float32 twin of %s: %s", model, err.msg);
    if (!ok) remove_twin(dir);
    return ok ? dir : NULL;
}

void remove_twin(const char *dir) {
    const char *const files[] = {"model.safetensors", "config.json", "tokenizer.json"};
    char path[512];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}
