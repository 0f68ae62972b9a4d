// linear.c — the products of linear layers through OpenBLAS (matvec.c's loops for a row of a model
// read from memory), and their plain-loop twin.
#include "linear.h"

#include <cblas.h>

#include "kernels.h"

// ---- the plan: which OpenBLAS call (or matvec.c loop) each shape and row count gets
//
// A pure function of shape, row count, kernel tier and workers. In short: below SGEMM_MIN_ROWS rows
// one sgemv a row (below SGEMM_MIN_ROWS_UNCACHED for a weight read from memory); a weight of at most
// TRANSPOSED_MAX_WEIGHTS has a copy (in, out), on which nl_matmul_t runs from MATMUL_MIN_ROWS rows and
// nl_matvec_t one row, with the same bits at any row count; a larger weight that streams faster
// stored (in, out) is read only there; a model whose matrices exceed CACHED_MATRIX_BYTES streams its
// rows through matvec.c's loops; products are split over the workers only where the bits stay those
// of the whole call. Why each bound is where it is, measured: docs/performance.md, "The linear plan".
enum {
    SGEMM_MIN_ROWS = 6,  // one sgemv a row below this, in the cache: sgemm on the weight as stored from here
    SGEMM_MIN_ROWS_UNCACHED = 3,  // ... and for a weight read from memory at every row
    NN_MIN_ROWS = 4,  // a weight whose copy is its only layout: NN from here (in the cache)
    NN_MAX_ROWS = 64,  // the row counts nl_linear_wants_transposed asks the plan about
    SPLIT_MIN_WEIGHTS = 1 << 15,  // an sgemv this large is split by output rows over the workers
    SPLIT_ALIGN = 16,  // ... its slices start on multiples of this (OpenBLAS's groups of 4 columns stay whole)
    T_SHARES = 2,  // the sgemv calls on a transposed copy: the outputs in halves, at any worker count
    TALL_RATIO_AVX512 = 2,  // out >= this * in: a weight that streams faster stored (in, out), AVX-512
    TALL_RATIO_AVX2 = 16,  // ... and with AVX2: only a head's shape
    SPLIT_GEMM_ALIGN = 64,  // an sgemm's shares start on multiples of this many outputs
    MATMUL_MIN_ROWS = 2,  // nl_matmul_t on the copy from here
    SPLIT_MATMUL_ALIGN = 32,  // ... its shares on multiples of its blocks' outputs (two zmm)
};

#define CACHED_MATRIX_BYTES ((size_t)16 << 20)  // a model's matrices past this stream from memory each step
// 2 MiB a copy: the shipped models whole, a third of nanoGPT's shape, none of GPT-2 small
#define TRANSPOSED_MAX_WEIGHTS ((size_t)1 << 19)
#define SMALL_KERNEL_MAX_MNK 1e6  // OpenBLAS 0.3.21's permit for its AVX-512 small-matrix kernels
#define DIRECT_KERNEL_MAX_MNK (28.0 * 512 * 512)  // ... and for its direct sgemm (NN, alpha 1, beta 0)

// Whether the loader keeps a weight's copy (in, out) for matvec.c's loops (see the rule above).
static int has_copy(size_t n_out, size_t n_in, int tier) { return tier >= 2 && n_out * n_in <= TRANSPOSED_MAX_WEIGHTS; }

// Whether a weight too big for the cache streams faster stored (in, out) (see the rule above).
static int streams_transposed(size_t n_out, size_t n_in, int tier) {
    size_t ratio = tier >= 3 ? TALL_RATIO_AVX512 : TALL_RATIO_AVX2;
    return tier >= 2 && n_out * n_in > TRANSPOSED_MAX_WEIGHTS && n_out >= ratio * n_in;
}

// Outputs in each of `shares` shares of n_out, rounded up to whole blocks of `align`.
static size_t share_outputs(size_t n_out, size_t shares, size_t align) {
    size_t each = (n_out + shares - 1) / shares;
    return (each + align - 1) / align * align;
}

// The workers an sgemm's outputs are split over (1: whole), by the rule above. The last share is
// the smallest.
static int gemm_split(NlCall call, size_t rows, size_t n_out, size_t n_in, int tier, int workers) {
    if (tier < 3 || workers < 2) return 1;
    size_t each = share_outputs(n_out, (size_t)workers, SPLIT_GEMM_ALIGN), before = each * (size_t)(workers - 1);
    if (before >= n_out) return 1;  // a share would be empty
    double mnk = (double)rows * (double)(n_out - before) * (double)n_in;
    int ok = mnk > SMALL_KERNEL_MAX_MNK && (call != NL_CALL_SGEMM_NN || mnk >= DIRECT_KERNEL_MAX_MNK);
    return ok ? workers : 1;
}

NlLinearPlan nl_linear_plan(size_t rows, size_t n_out, size_t n_in, int tier, int workers) {
    size_t weights = n_out * n_in;
    NlLinearPlan p = {NL_CALL_SGEMV_ROWS, 1};
    size_t min_rows = weights * sizeof(float) <= CACHED_MATRIX_BYTES ? SGEMM_MIN_ROWS : SGEMM_MIN_ROWS_UNCACHED;
    if (streams_transposed(n_out, n_in, tier)) {  // the copy is the only layout read: NN for many rows
        size_t nn_rows = weights * sizeof(float) <= CACHED_MATRIX_BYTES ? NN_MIN_ROWS : SGEMM_MIN_ROWS_UNCACHED;
        p.call = rows >= nn_rows ? NL_CALL_SGEMM_NN : NL_CALL_SGEMV_T_ROWS;
        if (p.call == NL_CALL_SGEMV_T_ROWS && workers >= 2) p.split = workers;
        if (p.call == NL_CALL_SGEMM_NN) p.split = gemm_split(p.call, rows, n_out, n_in, tier, workers);
        return p;
    }
    if (has_copy(n_out, n_in, tier)) {  // matvec.c's loops on the copy, one row or blocks of rows, split as a sgemv is
        p.call = rows >= MATMUL_MIN_ROWS ? NL_CALL_MATMUL_T : NL_CALL_MATVEC_T_ROWS;
        if (workers >= 2 && weights >= SPLIT_MIN_WEIGHTS) p.split = workers;
        return p;
    }
    if (rows >= min_rows) {
        p.call = NL_CALL_SGEMM_NT;
        p.split = gemm_split(p.call, rows, n_out, n_in, tier, workers);
        return p;
    }
    if (workers >= 2 && weights >= SPLIT_MIN_WEIGHTS) p.split = workers;
    return p;
}

int nl_linear_streamed(size_t bytes) { return bytes > CACHED_MATRIX_BYTES; }

NlLinearPlan nl_linear_plan_streamed(size_t rows, size_t n_out, size_t n_in, int tier, int workers) {
    if (rows >= SGEMM_MIN_ROWS_UNCACHED) return nl_linear_plan(rows, n_out, n_in, tier, workers);
    int on_copy = streams_transposed(n_out, n_in, tier) || (has_copy(n_out, n_in, tier) && n_out >= n_in);
    NlLinearPlan p = {on_copy ? NL_CALL_MATVEC_T_ROWS : NL_CALL_MATVEC_ROWS, 1};
    if (workers >= 2 && n_out * n_in >= SPLIT_MIN_WEIGHTS) p.split = workers;
    return p;
}

int nl_linear_wants_transposed(size_t n_out, size_t n_in, int tier) {
    for (size_t rows = 1; rows <= NN_MAX_ROWS; rows++) {
        NlCall call = nl_linear_plan(rows, n_out, n_in, tier, 1).call;
        if (call == NL_CALL_SGEMM_NN || call == NL_CALL_SGEMV_T_ROWS || call == NL_CALL_MATMUL_T) return 1;
    }
    return 0;
}

// ---- running it

typedef struct {
    float *y;  // (n, n_out)
    const float *x, *w, *b;  // x (n, n_in); w (n_out, n_in), or wt (n_in, n_out) when transposed; b (n_out) or NULL
    size_t n, n_out, n_in, each;  // outputs in each share (the last takes the rest)
    int transposed, own;  // own: matvec.c's loops, not OpenBLAS's sgemv
} GemvJob;

// Outputs lo .. lo+outs of every row: one sgemm on those rows of w (NT) or those columns of wt (NN).
static void gemm_outputs(const GemvJob *j, size_t lo, size_t outs) {
    if (j->transposed)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)j->n, (int)outs, (int)j->n_in, 1.0f, j->x,
                    (int)j->n_in, j->w + lo, (int)j->n_out, 0.0f, j->y + lo, (int)j->n_out);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->n, (int)outs, (int)j->n_in, 1.0f, j->x,
                    (int)j->n_in, j->w + lo * j->n_in, (int)j->n_in, 0.0f, j->y + lo, (int)j->n_out);
    for (size_t r = 0; j->b && r < j->n; r++) nl_add(j->y + r * j->n_out + lo, j->b + lo, outs);
}

static void gemm_share(void *ctx, int share) {
    const GemvJob *j = ctx;
    size_t lo = (size_t)share * j->each;
    if (lo < j->n_out) gemm_outputs(j, lo, j->n_out - lo < j->each ? j->n_out - lo : j->each);
}

// Outputs lo .. lo+outs of every row of x: one sgemv on those rows of w, or those columns of wt.
static void gemv_outputs(const GemvJob *j, size_t lo, size_t outs) {
    for (size_t r = 0; r < j->n; r++) {
        const float *x = j->x + r * j->n_in;
        float *y = j->y + r * j->n_out + lo;
        if (j->own && j->transposed) nl_matvec_t(j->y + r * j->n_out, j->w, x, j->n_in, j->n_out, lo, lo + outs);
        else if (j->own) nl_matvec(j->y + r * j->n_out, j->w, x, j->n_in, lo, lo + outs);
        else if (j->transposed)
            cblas_sgemv(CblasRowMajor, CblasTrans, (int)j->n_in, (int)outs, 1.0f, j->w + lo, (int)j->n_out, x, 1, 0.0f,
                        y, 1);
        else
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)outs, (int)j->n_in, 1.0f, j->w + lo * j->n_in, (int)j->n_in,
                        x, 1, 0.0f, y, 1);
        if (j->b) nl_add(y, j->b + lo, outs);
    }
}

static void gemv_share(void *ctx, int share) {
    const GemvJob *j = ctx;
    size_t lo = (size_t)share * j->each;
    if (lo < j->n_out) gemv_outputs(j, lo, j->n_out - lo < j->each ? j->n_out - lo : j->each);
}

// Outputs of share `share` of every row: one nl_matmul_t on those columns of wt.
static void matmul_share(void *ctx, int share) {
    const GemvJob *j = ctx;
    size_t lo = (size_t)share * j->each, hi = lo + j->each < j->n_out ? lo + j->each : j->n_out;
    if (lo >= hi) return;
    nl_matmul_t(j->y, j->w, j->x, j->n, j->n_in, j->n_out, lo, hi);
    for (size_t r = 0; j->b && r < j->n; r++) nl_add(j->y + r * j->n_out + lo, j->b + lo, hi - lo);
}

void nl_linear_run(float *y, const float *x, size_t n, const NlLinear *lin, NlPool *pool, NlLinearPlan p) {
    size_t n_out = lin->n_out, n_in = lin->n_in;
    if (p.call == NL_CALL_MATMUL_T && !lin->wt) p.call = NL_CALL_SGEMM_NT;
    if (p.call == NL_CALL_MATMUL_T) {
        int shares = p.split >= 2 ? p.split : 1;
        GemvJob j = {y, x, lin->wt, lin->b, n, n_out, n_in, n_out, 1, 1};
        j.each = share_outputs(n_out, (size_t)shares, SPLIT_MATMUL_ALIGN);
        if (shares >= 2 && nl_pool_workers(pool) >= 2) nl_pool_run(pool, matmul_share, &j);
        else
            for (int k = 0; k < shares; k++) matmul_share(&j, k);
        return;
    }
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    if (p.call == NL_CALL_SGEMM_NN && !lin->wt) p.call = NL_CALL_SGEMM_NT;
    if (p.call == NL_CALL_SGEMV_T_ROWS && !lin->wt) p.call = NL_CALL_SGEMV_ROWS;
    if (p.call == NL_CALL_MATVEC_T_ROWS && !lin->wt) p.call = NL_CALL_MATVEC_ROWS;
    if (p.call == NL_CALL_SGEMM_NN || p.call == NL_CALL_SGEMM_NT) {  // whole, or split where the plan says
        int nn = p.call == NL_CALL_SGEMM_NN;
        GemvJob j = {y, x, nn ? lin->wt : nl_weight_f32(lin->w), lin->b, n, n_out, n_in, n_out, nn, 0};
        if (p.split >= 2 && nl_pool_workers(pool) == p.split) {
            j.each = share_outputs(n_out, (size_t)p.split, SPLIT_GEMM_ALIGN);
            nl_pool_run(pool, gemm_share, &j);
        } else gemm_outputs(&j, 0, n_out);
        return;
    }
    // On wt the shares are always T_SHARES: OpenBLAS's kernel for this layout rounds an output
    // differently with the number of outputs in the call, so the calls must not depend on the workers.
    int own = p.call == NL_CALL_MATVEC_ROWS || p.call == NL_CALL_MATVEC_T_ROWS;
    int transposed = p.call == NL_CALL_SGEMV_T_ROWS || p.call == NL_CALL_MATVEC_T_ROWS;
    int shares = transposed && !own ? T_SHARES : p.split;
    GemvJob j = {y, x, transposed ? lin->wt : nl_weight_f32(lin->w), lin->b, n, n_out, n_in, n_out, transposed, own};
    j.each = share_outputs(n_out, (size_t)shares, SPLIT_ALIGN);
    if (p.split >= 2 && nl_pool_workers(pool) >= 2) nl_pool_run(pool, gemv_share, &j);
    else
        for (int k = 0; k < shares; k++) gemv_share(&j, k);
}

// ---- a weight stored as F16, BF16, Q8_0 or Q4_0
//
// Below QGEMM_MIN_ROWS rows, nl_qmatvec reads the weight as stored once for every NL_QMATVEC_ROWS rows
// of x, its outputs split over the workers as a float32 sgemv's are (SPLIT_MIN_WEIGHTS, SPLIT_ALIGN).
// From there the weight is widened to float32 a tile of QTILE_ROWS rows at a time, into the caller's
// scratch (a share of it for each worker), and each tile is one sgemm (NT) over every row of x: OpenBLAS
// does the arithmetic of prefill and evaluation, as for float32. Tiles start at multiples of
// QTILE_ROWS, so a tile's sgemm has the same shape whichever worker runs it: the same bits at any count.
enum { QGEMM_MIN_ROWS = 8, QTILE_ROWS = 64 };

typedef struct {
    float *y, *scratch;  // y (n, n_out); scratch QTILE_ROWS * n_in floats a share
    const float *x;  // (n, n_in)
    const NlLinear *lin;
    size_t n, each;  // outputs (qmatvec) or tiles (sgemm) in each share
    NlQPath path;  // the CPU's fastest (nl_qpath_best)
} StoredJob;

static void stored_bias(const StoredJob *j, size_t lo, size_t hi) {
    for (size_t r = 0; j->lin->b && r < j->n; r++) nl_add(j->y + r * j->lin->n_out + lo, j->lin->b + lo, hi - lo);
}

static void qmatvec_share(void *ctx, int share) {
    const StoredJob *j = ctx;
    const NlLinear *lin = j->lin;
    size_t lo = (size_t)share * j->each, hi = lo + j->each < lin->n_out ? lo + j->each : lin->n_out;
    if (lo >= hi) return;
    for (size_t r = 0; r < j->n; r += NL_QMATVEC_ROWS) {
        size_t nr = j->n - r < NL_QMATVEC_ROWS ? j->n - r : NL_QMATVEC_ROWS;
        nl_qmatvec(j->y + r * lin->n_out, lin->n_out, lin->w.data, lin->w.type, j->x + r * lin->n_in, nr, lin->n_in, lo,
                   hi, j->path);
    }
    stored_bias(j, lo, hi);
}

static void tiles_share(void *ctx, int share) {
    const StoredJob *j = ctx;
    const NlLinear *lin = j->lin;
    size_t n_out = lin->n_out, n_in = lin->n_in, tiles = (n_out + QTILE_ROWS - 1) / QTILE_ROWS;
    float *tile = j->scratch + (size_t)share * QTILE_ROWS * n_in;
    for (size_t t = (size_t)share * j->each; t < tiles && t < (size_t)(share + 1) * j->each; t++) {
        size_t lo = t * QTILE_ROWS, rows = n_out - lo < QTILE_ROWS ? n_out - lo : QTILE_ROWS;
        nl_qwiden(tile, lin->w.data, lin->w.type, lo, rows, n_in, j->path);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->n, (int)rows, (int)n_in, 1.0f, j->x, (int)n_in,
                    tile, (int)n_in, 0.0f, j->y + lo, (int)n_out);
        stored_bias(j, lo, lo + rows);
    }
}

size_t nl_linear_scratch(const NlLinear *lin, int workers) {
    return lin->w.type == NL_DTYPE_F32 ? 0 : (size_t)(workers > 1 ? workers : 1) * QTILE_ROWS * lin->n_in;
}

static void linear_stored(float *y, const float *x, size_t n, const NlLinear *lin, NlPool *pool, float *scratch) {
    int workers = nl_pool_workers(pool);
    StoredJob j = {y, scratch, x, lin, n, lin->n_out, nl_qpath_best()};
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    if (n >= QGEMM_MIN_ROWS) {
        size_t tiles = (lin->n_out + QTILE_ROWS - 1) / QTILE_ROWS;
        j.each = (tiles + (size_t)workers - 1) / (size_t)workers;
        if (workers >= 2) nl_pool_run(pool, tiles_share, &j);
        else tiles_share(&j, 0);
        return;
    }
    int split = workers >= 2 && lin->n_out * lin->n_in >= SPLIT_MIN_WEIGHTS ? workers : 1;
    j.each = share_outputs(lin->n_out, (size_t)split, SPLIT_ALIGN);
    if (split >= 2) nl_pool_run(pool, qmatvec_share, &j);
    else qmatvec_share(&j, 0);
}

void nl_linear(float *y, const float *x, size_t n, const NlLinear *lin, NlPool *pool, float *scratch) {
    int workers = nl_pool_workers(pool);
    if (lin->w.type != NL_DTYPE_F32) {
        linear_stored(y, x, n, lin, pool, scratch);
        return;
    }
    nl_linear_run(y, x, n, lin, pool,
                  lin->streamed ? nl_linear_plan_streamed(n, lin->n_out, lin->n_in, lin->tier, workers)
                                : nl_linear_plan(n, lin->n_out, lin->n_in, lin->tier, workers));
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
