// linear.c — the products of linear layers through OpenBLAS, and their plain-loop twin.
#include "linear.h"

#include <cblas.h>

#include "kernels.h"

// ---- the plan: which OpenBLAS call each shape and row count gets
//
// Measured with tools/bench/blaslayout.c, whose table `make bench` prints (one thread, OpenBLAS
// 0.3.21's Zen kernels on a Zen 3 EPYC; docs/bench.txt has the whole table):
// - One sgemv per row beats sgemm on the weight as stored (NoTrans/Trans, "NT") below 6 rows while
//   the matrix stays in cache (384 x 128: 4.0 us a row; NT costs 17.8-27.4 us at 4 to 6 rows). A
//   matrix too big for the cache (the 154 MB GPT-2 head) is read from memory again for every row:
//   sgemm wins from 3 rows on (4 rows: 18.6 against 25.3 ms).
// - With AVX2 (Haswell, Zen kernels), sgemm on a copy of the weight stored (in, out) (NoTrans/
//   NoTrans, "NN") beats NT by 1.05-1.5x from 4 to 63 rows on every linear of the shipped models
//   (8 rows of qkv, 384 x 128: 18.9 against 23.5 us; 4 rows: 12.0, against 17.1 for 4 sgemv), of
//   nanoGPT's (D 384: mlp_up at 8 rows 198 against 252 us) and mostly of GPT-2's; from 64 rows on
//   the two are within noise. A copy costs the weight's memory again and its transposition at load
//   (copying every weight of a 25M-parameter model took its load from 9 to 218 ms and its peak RSS
//   from 120 to 217 MiB), so it is made for weights up to TRANSPOSED_MAX_WEIGHTS only, which gives
//   up NN's 1.2-1.4x on nanoGPT's mlp_up and mlp_down (590K weights each). Where the plan is off
//   the fastest (6 rows of a 128-row weight: sgemv; 4 rows of mlp_down), it costs 1.03-1.23x.
// - With AVX-512 (SkylakeX, Cooperlake kernels) OpenBLAS's small-matrix kernels skip packing when
//   M*N*K <= 100^3, but for a transposed A (what NT is, column-major) only when the output has at
//   most 1200 elements: NN at 8 rows of 384 x 128 ran 6.8 us against 17.2 NT and 23.1 for 8 sgemv
//   (Zen 4, issue 26's table). There NN is used from 2 rows wherever the kernels permit it.
// - Tiers below AVX2, and kernels this table does not know, keep the plain rule (no copy).
// A sgemv of SPLIT_MIN_WEIGHTS or more is split by output rows over the pool's workers, each one
// sgemv on one OpenBLAS thread over its slice of rows; each output is still one sgemv dot product
// over the whole input, so the result is the same bit for bit at any worker count (test_kernels
// checks it on every model shape). Slices start on multiples of SPLIT_ALIGN rows, which keeps
// OpenBLAS's groups of 4 columns where they fall in one call. Split, 128 x 128 (16K weights) ran
// slower than whole (1.4 against 2.0 us); 384 x 128 1.2-1.7x faster. sgemm runs whole on one
// OpenBLAS thread: OpenBLAS's threaded sgemm splits the rows and its kernels then round
// differently (tools/bench/blasrows.c); its parallelism comes from the engine's own threads, over
// windows and sample groups.
enum {
    SGEMM_MIN_ROWS = 6,
    SGEMM_MIN_ROWS_UNCACHED = 3,
    NN_MIN_ROWS = 4,  // AVX2: NN from here, where the copy exists
    NN_MAX_ROWS = 64,  // ... to here
    NN_SMALL_MIN_ROWS = 2,  // AVX-512: NN from here, where the small-matrix kernels run
    SPLIT_MIN_WEIGHTS = 1 << 15,
    SPLIT_ALIGN = 16,
};
#define CACHED_MATRIX_BYTES ((size_t)16 << 20)
// 2 MiB a copy: the shipped models whole, a third of nanoGPT's shape, none of GPT-2 small
#define TRANSPOSED_MAX_WEIGHTS ((size_t)1 << 19)
#define SMALL_KERNEL_MAX_MNK 1e6  // OpenBLAS 0.3.21's permit for its AVX-512 small-matrix kernels

NlLinearPlan nl_linear_plan(size_t rows, size_t n_out, size_t n_in, int tier, int workers) {
    size_t weights = n_out * n_in;
    int copy = tier >= 2 && weights <= TRANSPOSED_MAX_WEIGHTS;
    NlLinearPlan p = {NL_CALL_SGEMV_ROWS, 1};
    if (copy && tier >= 3 && rows >= NN_SMALL_MIN_ROWS && (double)rows * (double)weights <= SMALL_KERNEL_MAX_MNK) {
        p.call = NL_CALL_SGEMM_NN;
        return p;
    }
    if (copy && rows >= NN_MIN_ROWS && rows < NN_MAX_ROWS) {
        p.call = NL_CALL_SGEMM_NN;
        return p;
    }
    size_t min_rows = weights * sizeof(float) <= CACHED_MATRIX_BYTES ? SGEMM_MIN_ROWS : SGEMM_MIN_ROWS_UNCACHED;
    if (rows >= min_rows) {
        p.call = NL_CALL_SGEMM_NT;
        return p;
    }
    if (workers >= 2 && weights >= SPLIT_MIN_WEIGHTS) p.split = workers;
    return p;
}

int nl_linear_wants_transposed(size_t n_out, size_t n_in, int tier) {
    for (size_t rows = 1; rows < NN_MAX_ROWS; rows++)
        if (nl_linear_plan(rows, n_out, n_in, tier, 1).call == NL_CALL_SGEMM_NN) return 1;
    return 0;
}

// ---- running it

typedef struct {
    float *y;  // (n, n_out)
    const float *x, *w, *b;  // x (n, n_in), w (n_out, n_in), b (n_out) or NULL
    size_t n, n_out, n_in, rows_each;  // rows of w in each share (the last takes the rest)
} GemvSplit;

static void gemv_rows(float *y, const float *x, const float *w, const float *b, size_t n, size_t n_out, size_t n_in,
                      size_t y_stride) {
    for (size_t r = 0; r < n; r++) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n_out, (int)n_in, 1.0f, w, (int)n_in, x + r * n_in, 1, 0.0f,
                    y + r * y_stride, 1);
        if (b) nl_add(y + r * y_stride, b, n_out);
    }
}

static void gemv_share(void *ctx, int share) {
    const GemvSplit *j = ctx;
    size_t lo = (size_t)share * j->rows_each;
    if (lo >= j->n_out) return;
    size_t rows = j->n_out - lo < j->rows_each ? j->n_out - lo : j->rows_each;
    gemv_rows(j->y + lo, j->x, j->w + lo * j->n_in, j->b ? j->b + lo : NULL, j->n, rows, j->n_in, j->n_out);
}

void nl_linear(float *y, const float *x, size_t n, const NlLinear *lin, NlPool *pool) {
    size_t n_out = lin->n_out, n_in = lin->n_in;
    NlLinearPlan p = nl_linear_plan(n, n_out, n_in, lin->tier, nl_pool_workers(pool));
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    if (p.call == NL_CALL_SGEMM_NN && !lin->wt) p.call = NL_CALL_SGEMM_NT;
    if (p.call == NL_CALL_SGEMM_NN)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n_out, (int)n_in, 1.0f, x, (int)n_in,
                    lin->wt, (int)n_out, 0.0f, y, (int)n_out);
    else if (p.call == NL_CALL_SGEMM_NT)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n_out, (int)n_in, 1.0f, x, (int)n_in, lin->w,
                    (int)n_in, 0.0f, y, (int)n_out);
    if (p.call != NL_CALL_SGEMV_ROWS) {
        for (size_t r = 0; lin->b && r < n; r++) nl_add(y + r * n_out, lin->b, n_out);
    } else if (p.split < 2) {
        gemv_rows(y, x, lin->w, lin->b, n, n_out, n_in, n_out);
    } else {
        size_t rows_each = (n_out + (size_t)p.split - 1) / (size_t)p.split;
        GemvSplit j = {y, x, lin->w, lin->b, n, n_out, n_in, (rows_each + SPLIT_ALIGN - 1) / SPLIT_ALIGN * SPLIT_ALIGN};
        nl_pool_run(pool, gemv_share, &j);
    }
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
