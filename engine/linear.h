// linear.h — the products of linear layers (internal): y = x w^T + b through OpenBLAS, or for one
// row of a model too big for the cache through matvec.c's streaming loops. Which call
// each product gets is a pure rule of its shape, its row count and the OpenBLAS kernels in use
// (nl_linear_plan); where the rule uses it, the model keeps a transposed copy of the weight. A
// matrix-vector product's output rows are split over a pool's workers. nl_linear_naive is the
// plain-loop twin for tests.
#ifndef NL_LINEAR_H
#define NL_LINEAR_H

#include <stddef.h>

#include "normlab_internal.h"
#include "parallel.h"
#include "qmatvec.h"

#pragma GCC visibility push(hidden)

typedef struct {
    NlWeight w;  // (n_out, n_in): torch.nn.Linear's layout, as the file holds it (float32 or another NlDType)
    const float *wt;  // (n_in, n_out): a float32 w transposed, owned by the model where the plan uses it; else NULL
    const float *b;  // (n_out) or NULL
    size_t n_out, n_in;
    int tier;  // the OpenBLAS kernels the plan is for (nl_blas_tier); -1: unknown, the plain rule
    int streamed;  // 1: its model's matrices together exceed the cache (nl_linear_streamed): read from memory
} NlLinear;

typedef enum {
    NL_CALL_SGEMV_ROWS,  // one sgemv per row of x, on w
    NL_CALL_SGEMM_NT,  // one sgemm, x (n, n_in) by w^T
    NL_CALL_SGEMM_NN,  // one sgemm, x by wt (n_in, n_out)
    NL_CALL_SGEMV_T_ROWS,  // one sgemv per row of x, on wt: the layout some shapes stream faster from memory
    NL_CALL_MATVEC_ROWS,  // nl_matvec per row of x, on w: a streamed weight (matvec.c)
    NL_CALL_MATVEC_T_ROWS,  // nl_matvec_t per row of x, on wt: a streamed weight whose copy is its only layout
    NL_CALL_MATMUL_T,  // nl_matmul_t, every row of x at once, on wt: the rows of a weight that stays in the cache
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
// Whether a model whose matrices hold `bytes` in all reads them from memory at every decode step
// (more than the cache holds): its products of few rows then run nl_matvec (NlLinear.streamed).
int nl_linear_streamed(size_t bytes);
// The plan of a streamed weight (NlLinear.streamed): rows under the uncached sgemm bound run
// nl_matvec on w, or nl_matvec_t where the copy wt is the only layout; more rows as nl_linear_plan.
NlLinearPlan nl_linear_plan_streamed(size_t rows, size_t n_out, size_t n_in, int tier, int workers);

// (matvec.c) y[lo..hi) of one row's product, y = w x with w (n_out, n_in), or y = x wt with wt
// (n_in, n_out): each output one chain of operations in a fixed order, the same bits at any split.
// On wt, one chain of multiply-adds per NL_MATVEC_SEG inputs, in their order, and the chains' sums
// added in order: shorter chains round less (a GEMM's blocking of the inputs does the same).
#define NL_MATVEC_SEG 128
void nl_matvec(float *y, const float *w, const float *x, size_t n_in, size_t lo, size_t hi);
void nl_matvec_t(float *y, const float *wt, const float *x, size_t n_in, size_t n_out, size_t lo, size_t hi);
// y (n, n_out) = x (n, n_in) wt, outputs [lo, hi) of every row, each output bit for bit nl_matvec_t's.
// It runs in 16-float vectors where the CPU has AVX-512, else in 8; nl_matmul_t_lanes runs the width
// asked for (16 or 8) and returns 0, or -1 where the CPU lacks it.
void nl_matmul_t(float *y, const float *wt, const float *x, size_t n, size_t n_in, size_t n_out, size_t lo, size_t hi);
int nl_matmul_t_lanes(size_t lanes, float *y, const float *wt, const float *x, size_t n, size_t n_in, size_t n_out,
                      size_t lo, size_t hi);
// The tier of an OpenBLAS kernel family (blascore.c): 0 SSE, 1 AVX, 2 AVX2 + FMA, 3 AVX-512; -1 unknown.
int nl_blas_tier(const char *family);

// y (n, n_out) = x (n, n_in) @ lin->w^T + lin->b, as nl_linear_plan says (a call on wt falls back
// to its twin on w where there is no copy: NN to NT, SGEMV_T_ROWS to SGEMV_ROWS). pool may be NULL
// (the caller alone); the bits do not depend on it. It sets OpenBLAS's thread count, which is
// process-wide, to 1 before each product and leaves it there: a program making its own BLAS calls
// sets its own count again.
// A weight stored otherwise than float32 runs nl_qmatvec for a few rows and, for more, tiles of it
// widened to float32 into scratch (nl_linear_scratch floats; NULL for a float32 weight), each one sgemm.
void nl_linear(float *y, const float *x, size_t n, const NlLinear *lin, NlPool *pool, float *scratch);
// The floats of scratch nl_linear needs for lin on a pool of `workers` (0 for a float32 weight).
size_t nl_linear_scratch(const NlLinear *lin, int workers);
// nl_linear with a plan of the caller's (tools/bench/blaslayout.c measures each one).
void nl_linear_run(float *y, const float *x, size_t n, const NlLinear *lin, NlPool *pool, NlLinearPlan plan);
void nl_linear_naive(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in);

#pragma GCC visibility pop

#endif
