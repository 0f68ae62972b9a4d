// linear.c — the products of linear layers through OpenBLAS, and their plain-loop twin.
#include "linear.h"

#include <cblas.h>

#include "kernels.h"

// When a product is worth OpenBLAS's threads, and when sgemm is worth it over one sgemv per row:
// measured with tools/bench/blaspolicy.c (OpenBLAS 0.3.21, Haswell kernels, 2 vCPUs). With 2 threads a
// 384x128 sgemv takes 5.0 us against 2.5 us on one, and sgemm at 2 to 12 rows is slower threaded at
// every shape tried (0.5-0.8x); sgemv at 2304x768 and sgemm from 16 rows up gain 1.3-1.9x. sgemm
// at 4 rows costs 12.3 us against 4 x 2.5 us of sgemv (425 against 4 x 89 us at 2304x768): while
// the matrix stays in cache after the first row, one sgemv per row is faster below 6 rows. A
// matrix too big for the cache (the 154 MB GPT-2 head) is read from memory again for every row:
// there sgemm wins from 3 rows on (4 rows: 18.6 against 25.3 ms).
enum { SGEMM_MIN_ROWS = 6, SGEMM_MIN_ROWS_UNCACHED = 3 };
#define CACHED_MATRIX_BYTES ((size_t)16 << 20)

static size_t sgemm_min_rows(size_t n_out, size_t n_in) {
    return n_out * n_in * sizeof(float) <= CACHED_MATRIX_BYTES ? SGEMM_MIN_ROWS : SGEMM_MIN_ROWS_UNCACHED;
}

// A matrix-vector product of SPLIT_MIN_WEIGHTS or more is split by output rows over the pool's
// workers, each one sgemv on one OpenBLAS thread over its slice of rows; each output is still one
// sgemv dot product over the whole input, so the result is the same bit for bit at any worker count
// (test_kernels checks it on every model shape). Slices start on multiples of SPLIT_ALIGN rows,
// which keeps OpenBLAS's groups of 4 columns where they fall in one call. Matrix-matrix products
// (sgemm) run whole on one OpenBLAS thread: OpenBLAS's threaded sgemm splits the rows and its
// kernels then round differently (tools/bench/blasrows.c); their parallelism comes from the
// engine's own threads, over windows and sample groups.
enum { SPLIT_MIN_WEIGHTS = 1 << 15, SPLIT_ALIGN = 16 };

typedef struct {
    float *y;  // (n, n_out)
    const float *x, *w, *b;  // x (n, n_in), w (n_out, n_in), b (n_out) or NULL
    size_t n, n_out, n_in, share;  // share: rows of w each worker takes (the last takes the rest)
} GemvSplit;

static void gemv_rows(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in,
                      size_t y_stride) {
    for (size_t r = 0; r < n; r++) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n_out, (int)n_in, 1.0f, w, (int)n_in, x + r * n_in, 1, 0.0f,
                    y + r * y_stride, 1);
        if (b) nl_add(y + r * y_stride, b, n_out);
    }
}

static void gemv_share(void *ctx, int worker) {
    const GemvSplit *j = ctx;
    size_t lo = (size_t)worker * j->share;
    if (lo >= j->n_out) return;
    size_t rows = j->n_out - lo < j->share ? j->n_out - lo : j->share;
    gemv_rows(j->y + lo, j->x, j->w + lo * j->n_in, j->b ? j->b + lo : NULL, j->n, rows, j->n_in, j->n_out);
}

void nl_linear(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in,
               NlPool *pool) {
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    if (n >= sgemm_min_rows(n_out, n_in)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n_out, (int)n_in, 1.0f, x, (int)n_in, w,
                    (int)n_in, 0.0f, y, (int)n_out);
        for (size_t r = 0; b && r < n; r++) nl_add(y + r * n_out, b, n_out);
        return;
    }
    size_t workers = (size_t)nl_pool_workers(pool);
    if (workers < 2 || n_out * n_in < SPLIT_MIN_WEIGHTS) {
        gemv_rows(y, x, w, b, n, n_out, n_in, n_out);
        return;
    }
    size_t share = (n_out + workers - 1) / workers;
    GemvSplit j = {y, x, w, b, n, n_out, n_in, (share + SPLIT_ALIGN - 1) / SPLIT_ALIGN * SPLIT_ALIGN};
    nl_pool_run(pool, gemv_share, &j);
}

void nl_linear_naive(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in) {
    for (size_t r = 0; r < n; r++) {
        for (size_t o = 0; o < n_out; o++) {
            float acc = 0.0f;
            for (size_t i = 0; i < n_in; i++) acc += x[r * n_in + i] * w[o * n_in + i];
            y[r * n_out + o] = b ? acc + b[o] : acc;
        }
    }
}
