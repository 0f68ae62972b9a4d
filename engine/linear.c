// linear.c — the products of linear layers through OpenBLAS (matvec.c's loops for a row of a model
// read from memory), and their plain-loop twin.
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
// - A weight of up to TRANSPOSED_MAX_WEIGHTS elements gets a copy stored (in, out) with AVX2 and
//   AVX-512 kernels (tier 2 and up), and from MATMUL_MIN_ROWS rows matvec.c's nl_matmul_t runs on it:
//   blocks of 8 rows x 32 outputs summed in zmm registers (6 x 16 in ymm with AVX2), which reach the
//   FMA units' peak where OpenBLAS 0.3.21 repacks the weight at every call. On a Zen 5 EPYC with
//   Haswell kernels (2026-12-06, one thread, blaslayout's shapes and others): 8 rows of 256 x 128
//   2.2 us against 9.9 for NN (233 against 53 GFLOP/s), 16 rows of 704 x 128 11.5 against 36.7, 128
//   rows of 384 x 384 164 against 335; 2 rows of 128 x 128 0.57 against 3.2. Its AVX2 build ran at
//   105-120 GFLOP/s, at or above NN from 2 to 128 rows. Each output is one chain of multiply-adds per
//   NL_MATVEC_SEG inputs, in their order, the chains added in order: nl_matvec_t's for its row alone,
//   the same bits at any row count, split or vector width, so a row's result does not depend on the
//   rows beside it. (One chain over all the inputs failed make parity by a hair: post-BN with a foreign
//   norm 1.06e-4 against 1e-4, and its mean error on the shipped models' prompts rose 11-24% over
//   OpenBLAS's; chains of 128 brought the mean back within 3%, and that case to 7.6e-5.) One row runs
//   nl_matvec_t on the same copy (a lone row in nl_matmul_t's blocks runs two chains), with the same
//   bits: one stream's decode is bit for bit a stream's of --samples, and one sequence's logits its
//   own in a batch. Against one sgemv per row it ran 1.26x on 256 x 128, 1.4x on 512 x 128, 0.92x on
//   128 x 128; shakespeare-pre-ln's and shakespeare-llama's one-stream decode went from 15-16K to
//   17-20K tokens/s at one thread, 13-17K to 15-18.5K at two.
//   Before it (issue 26): with AVX2, NN on the copy beat NT by 1.05-1.5x from 4 to 63 rows; with
//   AVX-512, OpenBLAS's small-matrix kernels skip packing when M*N*K <= 100^3, but for a transposed A
//   only when the output has at most 1200 elements. A copy costs the weight's memory again and its
//   transposition at load (copying every weight of a 25M-parameter model took its load from 9 to 218
//   ms and its peak RSS from 120 to 217 MiB), so it is made for weights up to TRANSPOSED_MAX_WEIGHTS
//   only: nanoGPT's mlp_up and mlp_down (590K weights each) keep sgemm.
// - Above TRANSPOSED_MAX_WEIGHTS a matrix is read from memory once per decode step, and the speed
//   at which sgemv streams it depends on its layout, by shape (blaslayout's streaming table: one
//   row through distinct matrices, 256 MiB or more a pass). On a Zen 4 EPYC with Cooperlake
//   kernels (issue 36), stored (in, out) the tall GPT-2 shapes streamed 1.4-1.6x faster (qkv
//   2304 x 768: 19.1 against 13.3 GB/s; mlp_up 3072 x 768: 22.8 against 14.4) and the wide
//   mlp_down slower (16.2 against 19.4). On a Zen 5 EPYC (2026-12-02, one thread, three rounds)
//   the layouts were within noise of each other with either family but for the 50257 x 768 head
//   (in, out) in two calls (below): Haswell 29.3-30.5 against 26.5-29.6 GB/s; and mlp_up in two
//   calls ran 24.2-26.8 against 28.7-29.2 (Haswell) and 26.6-26.8 against 26.4-29.8 (Cooperlake).
//   So a weight above the bound with out >= TALL_RATIO_AVX512 * in (AVX-512), or >= TALL_RATIO_AVX2
//   * in (AVX2: a head's shape only), is copied (in, out) and read only there: sgemv on the copy
//   below NN_MIN_ROWS rows (3 above CACHED_MATRIX_BYTES), NN from there (NN ran as fast as NT or
//   faster on GPT-2's tall shapes at 4 to 64 rows: qkv at 8 rows 388 against 554 us). Its source
//   pages are handed back as it is copied (model.c), so resident memory stays about the file's
//   size. --no-repack turns every copy off.
// - Tiers below AVX2, and kernels this table does not know, keep the plain rule (no copy).
// - A model whose matrices hold more than CACHED_MATRIX_BYTES in all reads each from memory at every
//   decode step, whatever its own size (NlLinear.streamed, set by the loader). OpenBLAS 0.3.21's sgemv
//   streams a row at 9-19 GB/s there on a Zen 4 EPYC with Cooperlake kernels (2026-12-04, stories15M's
//   shapes: qkv 864 x 288 10.3 (out, in), 15.5 (in, out)), where matvec.c's loops run 19-24 at one
//   thread and a plain read 27 (blaslayout's streaming table). So below SGEMM_MIN_ROWS_UNCACHED rows
//   such a weight runs nl_matvec on w, or nl_matvec_t on the copy where it is the only layout, split by
//   outputs over the workers as sgemv is; from there the rules above. A cached model keeps OpenBLAS.
//   Where a weight of at most TRANSPOSED_MAX_WEIGHTS has the copy anyway (nl_matmul_t's) and is not
//   wider than tall, nl_matvec_t reads the copy: on a Zen 5 EPYC (2026-12-06, blaslayout's streaming
//   table, one thread) stories15M's qkv streamed at 26.3 GB/s (in, out) against 13.7 (out, in), mlp_up
//   25.9 against 13.6, attn_proj 20.8 against 13.7, while the wide mlp_down ran 20.6 against 19.3 and,
//   at two threads, 23.0 against 34.7: it stays on w. A stories15M-shaped model's greedy decode went
//   from 429-474 to 543-660 tokens/s at one thread, 830-868 to 1146-1207 at two, with the same ids.
// A sgemv of SPLIT_MIN_WEIGHTS or more is split by output rows over the pool's workers, each one
// sgemv on one OpenBLAS thread over its slice of rows; each output is still one sgemv dot product
// over the whole input, so the result is the same bit for bit at any worker count (test_kernels
// checks it on every model shape). Slices start on multiples of SPLIT_ALIGN rows, which keeps
// OpenBLAS's groups of 4 columns where they fall in one call. Split, 128 x 128 (16K weights) ran
// slower than whole (1.4 against 2.0 us); 384 x 128 1.2-1.7x faster. sgemm runs whole on one
// OpenBLAS thread: OpenBLAS's threaded sgemm splits the rows and its kernels then round
// differently (tools/bench/blasrows.c); its parallelism comes from the engine's own threads, over
// windows and sample groups. On a copy (in, out) OpenBLAS's kernel rounds an output differently
// with the number of outputs in its call (1001 x 129 split at 512: 14 of 1001 differ), so there the
// calls are always the same T_SHARES halves, run one after the other or on two workers.
// An sgemm is split by outputs (columns of y) too, over the pool's workers, where that keeps the bits
// of the whole call: with AVX-512 kernels (SkylakeX, OpenBLAS 0.3.21, Xeon with AVX-512, 2026-12-03,
// /tmp/colsplit.c in issue 46) two shares starting on a multiple of SPLIT_GEMM_ALIGN columns gave the
// whole call's bits at 6 to 1024 rows of every model shape above, wherever each share stays off
// OpenBLAS's small-matrix kernels (M*N*K over SMALL_KERNEL_MAX_MNK) and, for NN, off its direct
// kernel (M*N*K of DIRECT_KERNEL_MAX_MNK or more), which round differently: 65 x 128 split 64 + 1 and
// 384 x 128 at 6 rows, on those kernels, did not. With the AVX2 (Haswell) kernels a split changed
// bits from 24 rows on almost every shape, by columns or by rows: there sgemm stays whole.
enum {
    SGEMM_MIN_ROWS = 6,
    SGEMM_MIN_ROWS_UNCACHED = 3,
    NN_MIN_ROWS = 4,  // a weight whose copy is its only layout: NN from here (in the cache)
    NN_MAX_ROWS = 64,  // the row counts nl_linear_wants_transposed asks the plan about
    SPLIT_MIN_WEIGHTS = 1 << 15,
    SPLIT_ALIGN = 16,
    T_SHARES = 2,  // the sgemv calls on a transposed copy: the outputs in halves, at any worker count
    TALL_RATIO_AVX512 = 2,  // out >= this * in: a weight that streams faster stored (in, out), AVX-512
    TALL_RATIO_AVX2 = 16,  // ... and with AVX2: only a head's shape
    SPLIT_GEMM_ALIGN = 64,  // an sgemm's shares start on multiples of this many outputs
    MATMUL_MIN_ROWS = 2,  // nl_matmul_t on the copy from here
    SPLIT_MATMUL_ALIGN = 32,  // ... its shares on multiples of its blocks' outputs (two zmm)
};

#define CACHED_MATRIX_BYTES ((size_t)16 << 20)
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
