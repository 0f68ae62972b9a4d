// linear.h — the products of linear layers (internal): y = x w^T + b through OpenBLAS, a
// matrix-vector product's output rows split over a pool's workers, and a plain-loop twin for tests.
#ifndef NL_LINEAR_H
#define NL_LINEAR_H

#include <stddef.h>

#include "parallel.h"

#pragma GCC visibility push(hidden)

// y (n, n_out) = x (n, n_in) @ w^T (w is (n_out, n_in)) + b (b may be NULL). Under 6 rows (3 for
// a matrix over 16 MiB) one sgemv per row, its output rows split over the pool's workers (pool may
// be NULL: the caller alone), else one sgemm; the same bits at any worker count. It sets OpenBLAS's
// thread count, which is process-wide, to 1 before each product and leaves it there: a program
// making its own BLAS calls sets its own count again.
void nl_linear(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in,
               NlPool *pool);
void nl_linear_naive(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in);

#pragma GCC visibility pop

#endif
