// check.h — the tests' small harness: named checks, tolerance comparisons, one summary line.
//
//   static void tokenizer_rejects_unknown_char(void) { CHECK(rc != 0, "rc = %d", rc); }
//   int main(void) { RUN(tokenizer_rejects_unknown_char); return check_summary("test_tokenizer"); }
//
// A failing CHECK prints the file, line, running test and message; check_summary prints
// "NAME: N passed, M failed" and returns the exit status (non-zero when any check failed).
#ifndef NL_CHECK_H
#define NL_CHECK_H

#include <stddef.h>

#include "normlab.h"

#define CHECK(cond, ...) check_true((cond) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)
#define RUN(fn) check_run(#fn, fn)

void check_true(int ok, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void check_run(const char *name, void (*fn)(void));
// |got - want| <= atol + rtol * |want| elementwise; prints the largest difference and where.
// Returns 1 when all are within tolerance.
int check_close(const char *what, const float *got, const double *want, size_t n, double atol, double rtol);
int check_summary(const char *suite);
// Path of a file in tests/fixtures (tests run from the repository root).
const char *fixture(const char *name);
// The fixture model name, loaded; NULL after a failed check naming the loader's message.
struct NlModel *load_fixture(const char *name);

// The float32 twin of the model folder `model` (its matrices widened by nl_model_quantize, its
// config.json and tokenizer.json copied) in a new temporary folder, into dir (room for 64 bytes);
// NULL after a failed check. remove_twin(dir) deletes it.
const char *float32_twin(const char *model, char *dir);
void remove_twin(const char *dir);

// nl_generate on one state, with emit and ctx put into a copy of opts: n streams sampled by
// samplers[0..n), or one stream by sampler.
int generate_one_state(NlState *s, NlSampler *const *samplers, size_t n, const int *prompt, size_t n_prompt,
                       const NlGenerateOptions *opts, NlEmitFn emit, void *ctx, NlGenerateStats *st, NlError *err);
int generate_one(NlState *s, NlSampler *sampler, const int *prompt, size_t n_prompt, const NlGenerateOptions *opts,
                 NlEmitFn emit, void *ctx, NlGenerateStats *st, NlError *err);

#endif
