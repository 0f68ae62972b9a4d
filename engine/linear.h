// linear.h — the products of linear layers (internal): y = x w^T + b through OpenBLAS. Which call
// each product gets is a pure rule of its shape, its row count and the OpenBLAS kernels in use
// (nl_linear_plan); where the rule uses it, the model keeps a transposed copy of the weight. A
// matrix-vector product's output rows are split over a pool's workers. nl_linear_naive is the
// plain-loop twin for tests.
#ifndef NL_LINEAR_H
#define NL_LINEAR_H

#include <stddef.h>

#include "parallel.h"

#pragma GCC visibility push(hidden)

typedef struct {
    const float *w;  // (n_out, n_in): torch.nn.Linear's layout, as the file holds it
    const float *wt;  // (n_in, n_out): w transposed, owned by the model where the plan uses it; else NULL
    const float *b;  // (n_out) or NULL
    size_t n_out, n_in;
    int tier;  // the OpenBLAS kernels the plan is for (nl_blas_tier); -1: unknown, the plain rule
} NlLinear;

typedef enum {
    NL_CALL_SGEMV_ROWS,  // one sgemv per row of x, on w
    NL_CALL_SGEMM_NT,  // one sgemm, x (n, n_in) by w^T
    NL_CALL_SGEMM_NN,  // one sgemm, x by wt (n_in, n_out)
    NL_CALL_SGEMV_T_ROWS,  // one sgemv per row of x, on wt: the layout some shapes stream faster from memory
} NlCall;

typedef struct {
    NlCall call;
    int split;  // workers the outputs are split over (1: none)
} NlLinearPlan;

// The call for a product of `rows` rows by a weight (n_out, n_in) with OpenBLAS kernels of `tier`,
// and a pool of `workers` (linear.c gives the measurements behind each rule).
NlLinearPlan nl_linear_plan(size_t rows, size_t n_out, size_t n_in, int tier, int workers);
// Whether some row count's plan uses the transposed weight: the model makes the copy then.
int nl_linear_wants_transposed(size_t n_out, size_t n_in, int tier);
// The tier of an OpenBLAS kernel family (blascore.c): 0 SSE, 1 AVX, 2 AVX2 + FMA, 3 AVX-512; -1 unknown.
int nl_blas_tier(const char *family);

// y (n, n_out) = x (n, n_in) @ lin->w^T + lin->b, as nl_linear_plan says (a call on wt falls back
// to its twin on w where there is no copy: NN to NT, SGEMV_T_ROWS to SGEMV_ROWS). pool may be NULL
// (the caller alone); the bits do not depend on it. It sets OpenBLAS's thread count, which is
// process-wide, to 1 before each product and leaves it there: a program making its own BLAS calls
// sets its own count again.
void nl_linear(float *y, const float *x, size_t n, const NlLinear *lin, NlPool *pool);
// nl_linear with a plan of the caller's (tools/bench/blaslayout.c measures each one).
void nl_linear_run(float *y, const float *x, size_t n, const NlLinear *lin, NlPool *pool, NlLinearPlan plan);
void nl_linear_naive(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in);

#pragma GCC visibility pop

#endif
