// test_kernels.c — each BLAS kernel against its naive twin, the element-wise math (erf, e^x, GELU,
// sigmoid, tanh) against libm, the recurrent cells and attention against double references. The
// norms: test_norms.c.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernels.h"
#include "linear.h"

static double uniform(unsigned *state) {  // deterministic, test-local
    *state = *state * 1103515245u + 12345u;
    return ((*state >> 8) & 0xFFFF) / 65536.0 - 0.5;
}

static void linear_blas_matches_naive_on_odd_shapes(void) {
    // Rows below and above the sgemv/sgemm switch (6 rows; 3 for a matrix over 16 MiB, the 4100 x
    // 1025 one, which with AVX2 and AVX-512 streams from its copy: sgemv on wt for 1 and 2 rows, NN
    // for 4). Shapes at odd k run with a pool of 2 workers, the others on the caller alone: the sgemv
    // of 1 x 1024 x 1025 is split by rows, that of 2 x 4100 x 1025 by columns of the copy.
    const size_t shapes[][3] = {{1, 7, 5},       {3, 13, 17},     {9, 1, 33},     {1, 65, 128}, {31, 29, 23},
                                {5, 40, 24},     {6, 40, 24},     {64, 256, 129}, {2, 30, 20},  {1, 1024, 1025},
                                {4, 4100, 1025}, {2, 4100, 1025}, {1, 4100, 1025}};
    unsigned s = 5;
    NlPool *pool = nl_pool_create(2);
    CHECK(nl_pool_workers(pool) == 2, "a pool of 2 has %d workers", nl_pool_workers(pool));
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        size_t n = shapes[k][0], o = shapes[k][1], in = shapes[k][2];
        float *x = malloc(n * in * sizeof *x), *w = malloc(o * in * sizeof *w), *b = malloc(o * sizeof *b);
        float *y = malloc(n * o * sizeof *y), *yn = malloc(n * o * sizeof *yn);
        double *want = malloc(n * o * sizeof *want);
        for (size_t i = 0; i < n * in; i++) x[i] = (float)uniform(&s);
        for (size_t i = 0; i < o * in; i++) w[i] = (float)uniform(&s);
        for (size_t i = 0; i < o; i++) b[i] = (float)uniform(&s);
        float *wt = malloc(o * in * sizeof *wt);
        for (size_t r = 0; r < o; r++)
            for (size_t i = 0; i < in; i++) wt[i * o + r] = w[r * in + i];
        nl_linear_naive(yn, x, w, k % 2 ? b : NULL, n, o, in);
        for (size_t i = 0; i < n * o; i++) want[i] = yn[i];
        // Every tier's plan, so every call (sgemv rows, sgemm NT, sgemm NN on the copy) meets the naive loop.
        // And each as the weight of a model read from memory (NlLinear.streamed): matvec.c's loops for
        // 1 and 2 rows.
        for (int tier = -1; tier <= 3; tier++)
            for (int streamed = 0; streamed < 2; streamed++) {
                NlLinear lin = {{w, NL_DTYPE_F32}, wt, k % 2 ? b : NULL, o, in, tier, streamed};
                nl_linear(y, x, n, &lin, k % 2 ? pool : NULL, NULL);
                // Both sum the same float products (each below 1 in size) in a different order: the worst
                // case grows as n_in^2 * 2^-24; 1e-5 + 2e-6 n_in absolute allows the 1e-5 seen at n_in = 1025.
                check_close(streamed ? "streamed vs naive" : "sgemm/sgemv vs naive", y, want, n * o,
                            1e-5 + 2e-6 * (double)in, 1e-5);
            }
        free(wt);
        free(x);
        free(w);
        free(b);
        free(y);
        free(yn);
        free(want);
    }
    nl_pool_free(pool);
}

// A matrix-vector product split by outputs over a pool's workers (rows of w, or columns of its
// transposed copy) gives each output the bits of one unsplit call in that layout, at every worker
// count: byte identity across --threads (linear.c). The shapes are
// every linear of the shipped models (D 128), nanoGPT's shakespeare_char (D 384) and GPT-2 small
// (D 768; the 50257-row head aside), shakespeare-bpe's head, plus odd row counts that leave a short
// last share.
static void split_linear_is_bitwise_unsplit(void) {
    const size_t shapes[][2] = {{384, 128},  {128, 128},  {512, 128},  {128, 512}, {65, 128},   {1152, 384},
                                {384, 384},  {1536, 384}, {384, 1536}, {65, 384},  {2304, 768}, {768, 768},
                                {3072, 768}, {768, 3072}, {1001, 129}, {4099, 33}, {129, 4097}, {50257, 64}};
    NlPool *pools[3] = {nl_pool_create(2), nl_pool_create(3), nl_pool_create(4)};
    unsigned s = 11;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        size_t o = shapes[k][0], in = shapes[k][1], n = 1 + k % 3;  // 1 to 3 rows: the sgemv path
        float *x = malloc(n * in * sizeof *x), *w = malloc(o * in * sizeof *w), *b = malloc(o * sizeof *b);
        float *wt = malloc(o * in * sizeof *wt);
        float *whole = malloc(n * o * sizeof *whole), *split = malloc(n * o * sizeof *split);
        for (size_t i = 0; i < n * in; i++) x[i] = (float)uniform(&s);
        for (size_t i = 0; i < o * in; i++) w[i] = (float)uniform(&s);
        for (size_t i = 0; i < o; i++) b[i] = (float)uniform(&s);
        for (size_t r = 0; r < o; r++)
            for (size_t i = 0; i < in; i++) wt[i * o + r] = w[r * in + i];
        NlLinear lin = {{w, NL_DTYPE_F32}, wt, b, o, in, 2, 0};
        static const NlCall CALLS[] = {NL_CALL_SGEMV_ROWS, NL_CALL_SGEMV_T_ROWS, NL_CALL_MATVEC_ROWS,
                                       NL_CALL_MATVEC_T_ROWS, NL_CALL_MATMUL_T};
        for (int layout = 0; layout < 5; layout++) {  // w as stored (out, in), then the copy (in, out); OpenBLAS, ours
            NlCall call = CALLS[layout];
            nl_linear_run(whole, x, n, &lin, NULL, (NlLinearPlan){call, 1});
            for (int p = 0; p < 3; p++) {
                CHECK(nl_pool_workers(pools[p]) == p + 2, "pool of %d workers", nl_pool_workers(pools[p]));
                memset(split, 0xff, n * o * sizeof *split);
                nl_linear_run(split, x, n, &lin, pools[p], (NlLinearPlan){call, p + 2});
                CHECK(memcmp(whole, split, n * o * sizeof *split) == 0,
                      "%zu x %zu x %zu %s%s split over %d workers differs", n, o, in,
                      layout % 2 || layout == 4 ? "(in, out)" : "(out, in)",
                      layout == 4   ? " matmul"
                      : layout >= 2 ? " matvec"
                                    : "",
                      p + 2);
            }
        }
        free(x);
        free(w);
        free(wt);
        free(b);
        free(whole);
        free(split);
    }
    for (int p = 0; p < 3; p++) nl_pool_free(pools[p]);
}

// nl_matmul_t gives every output the bits of nl_matvec_t on its row alone, at every row count (1 to
// 20: whole blocks of 6 and 8 rows and every remainder), in 8-float and 16-float vectors alike (where
// the CPU has AVX-512), for outputs that fill two vectors, one, or part of one; and over a range of
// outputs that starts past 0, as a worker's share does. So a row's result never depends on its batch.
static void matmul_is_bitwise_matvec_per_row(void) {
    const size_t shapes[][2] = {{1, 5},    {15, 7},    {16, 128},  {17, 129},  {33, 1},
                                {65, 128}, {256, 128}, {352, 128}, {128, 352}, {1001, 33}};
    unsigned s = 23;
    size_t cases = 0, differing = 0;
    int wide = 0;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        size_t o = shapes[k][0], in = shapes[k][1], most = 20;
        float *x = malloc(most * in * sizeof *x), *wt = malloc(o * in * sizeof *wt);
        float *want = malloc(most * o * sizeof *want), *got = malloc(most * o * sizeof *got);
        for (size_t i = 0; i < most * in; i++) x[i] = (float)uniform(&s);
        for (size_t i = 0; i < o * in; i++) wt[i] = (float)uniform(&s);
        for (size_t r = 0; r < most; r++) nl_matvec_t(want + r * o, wt, x + r * in, in, o, 0, o);
        for (size_t n = 1; n <= most; n++)
            for (size_t lanes = 8; lanes <= 16; lanes += 8) {
                size_t lo = o > 16 ? 16 : 0;  // a share that starts at a later vector
                memset(got, 0xff, most * o * sizeof *got);
                if (nl_matmul_t_lanes(lanes, got, wt, x, n, in, o, 0, lo) != 0) continue;
                (void)nl_matmul_t_lanes(lanes, got, wt, x, n, in, o, lo, o);
                wide |= lanes == 16;
                cases++;
                differing += memcmp(got, want, n * o * sizeof *got) != 0;
            }
        free(x), free(wt), free(want), free(got);
    }
    CHECK(nl_matmul_t_lanes(4, NULL, NULL, NULL, 0, 0, 0, 0, 0) == -1, "4 lanes refused");
    CHECK(differing == 0 && cases >= 200, "%zu of %zu products differ from nl_matvec_t row by row (%s)", differing,
          cases, wide ? "8 and 16 lanes" : "8 lanes: no AVX-512 here");
}

// An sgemm split by outputs over 2 workers, where the plan splits one (AVX-512 kernels only), gives
// the bits of the whole call: every linear of the shipped models, nanoGPT's and GPT-2 small's, at
// eval's and a prompt's row counts (a text shorter than a window: 99 rows; a window of 8: 1024).
// On other kernels the plan must not split an sgemm at all.
static void split_sgemm_is_bitwise_whole(void) {
    const size_t shapes[][2] = {{384, 128},  {128, 128},  {512, 128},  {128, 512},  {65, 128},
                                {1152, 384}, {384, 384},  {1536, 384}, {384, 1536}, {2304, 768},
                                {768, 768},  {3072, 768}, {768, 3072}, {1001, 129}, {50257, 64}};
    const size_t rows[] = {6, 24, 64, 99, 447, 1024};
    int tier = nl_blas_tier(nl_blas_core()), splits = 0;
    NlPool *pool = nl_pool_create(2);
    unsigned s = 5;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        size_t o = shapes[k][0], in = shapes[k][1], most = 1024;
        float *x = malloc(most * in * sizeof *x), *w = malloc(o * in * sizeof *w), *b = malloc(o * sizeof *b);
        float *wt = malloc(o * in * sizeof *wt), *whole = malloc(most * o * 4), *split = malloc(most * o * 4);
        for (size_t i = 0; i < most * in; i++) x[i] = (float)uniform(&s);
        for (size_t i = 0; i < o * in; i++) w[i] = (float)uniform(&s);
        for (size_t i = 0; i < o; i++) b[i] = (float)uniform(&s);
        for (size_t r = 0; r < o; r++)
            for (size_t i = 0; i < in; i++) wt[i * o + r] = w[r * in + i];
        NlLinear lin = {{w, NL_DTYPE_F32}, wt, b, o, in, tier, 0};
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            size_t n = rows[r];
            NlLinearPlan p = nl_linear_plan(n, o, in, tier, 2);
            if (p.call != NL_CALL_SGEMM_NT && p.call != NL_CALL_SGEMM_NN) continue;
            CHECK(tier >= 3 || p.split == 1, "%zu x %zu x %zu split on kernels of tier %d", n, o, in, tier);
            if (p.split < 2) continue;
            splits++;
            nl_linear_run(whole, x, n, &lin, NULL, (NlLinearPlan){p.call, 1});
            memset(split, 0xff, n * o * sizeof *split);
            nl_linear_run(split, x, n, &lin, pool, p);
            CHECK(memcmp(whole, split, n * o * sizeof *split) == 0, "%zu x %zu x %zu sgemm %s split over 2 differs", n,
                  o, in, p.call == NL_CALL_SGEMM_NN ? "NN" : "NT");
        }
        free(x), free(w), free(wt), free(b), free(whole), free(split);
    }
    printf("     %s kernels (tier %d): %d split sgemm calls, each against the whole call\n", nl_blas_core(), tier,
           splits);
    // (38 on Cooperlake kernels: the shapes of up to 512K weights run nl_matmul_t, not sgemm)
    CHECK(tier < 3 || splits >= 36, "AVX-512 kernels: only %d of the calls split", splits);
    nl_pool_free(pool);
}

// The plan's rules (linear.c), row by row: sgemv per row below 6 rows (3 for a matrix over 16 MiB),
// split over the workers from 32K weights; with AVX2 and AVX-512 a weight up to 512K elements gets a
// transposed copy, and matvec.c's loops run on it (nl_matvec_t for 1 row, nl_matmul_t from 2), split
// over the workers from 32K weights; above 512K elements a tall weight (out >= 2 in with AVX-512,
// out >= 16 in with AVX2) only from its copy: sgemv on it, split over the workers, below 4 rows (3 over
// 16 MiB), NN from there; the plain rule for older tiers and unknown kernels.
typedef struct {
    size_t rows, n_out, n_in;
    int tier, workers;
    NlCall call;
    int split;
} PlanCase;

// Each case's plan, by nl_linear_plan or, for a streamed weight, nl_linear_plan_streamed.
static void check_plans(const PlanCase *cases, size_t n, int streamed) {
    for (size_t k = 0; k < n; k++) {
        const PlanCase *c = &cases[k];
        NlLinearPlan p = streamed ? nl_linear_plan_streamed(c->rows, c->n_out, c->n_in, c->tier, c->workers)
                                  : nl_linear_plan(c->rows, c->n_out, c->n_in, c->tier, c->workers);
        CHECK(p.call == c->call && p.split == c->split,
              "%s%zu rows of %zu x %zu, tier %d, %d workers: call %d split %d, want %d %d",
              streamed ? "streamed: " : "", c->rows, c->n_out, c->n_in, c->tier, c->workers, (int)p.call, p.split,
              (int)c->call, c->split);
    }
}

static void plan_follows_its_rules(void) {
    const NlCall R = NL_CALL_SGEMV_ROWS, NT = NL_CALL_SGEMM_NT, NN = NL_CALL_SGEMM_NN, T = NL_CALL_SGEMV_T_ROWS;
    const NlCall MM = NL_CALL_MATMUL_T, MT = NL_CALL_MATVEC_T_ROWS;
    const PlanCase cases[] = {
        {1, 384, 128, 2, 1, MT, 1},   {1, 384, 128, 2, 2, MT, 2},    {3, 384, 128, 2, 2, MM, 2},
        {1, 128, 128, 2, 2, MT, 1},   {1, 128, 256, 2, 2, MT, 2},    {4, 384, 128, 2, 1, MM, 1},
        {8, 384, 128, 2, 2, MM, 2},   {63, 384, 128, 2, 1, MM, 1},   {64, 384, 128, 2, 1, MM, 1},
        {128, 384, 128, 2, 1, MM, 1}, {8, 1536, 384, 2, 1, NT, 1},   {8, 1536, 384, 3, 1, NN, 1},
        {3, 2304, 768, 3, 2, T, 2},   {4, 2304, 768, 3, 2, NN, 1},   {5, 2304, 768, 2, 2, R, 2},
        {8, 1024, 512, 2, 1, MM, 1},  {8, 512, 1025, 2, 1, NT, 1},   {1, 1025, 512, 3, 1, T, 1},
        {1, 1025, 512, 2, 1, R, 1},   {8, 2304, 768, 2, 1, NT, 1},   {128, 2304, 768, 3, 1, NN, 1},
        {2, 50257, 768, 2, 1, T, 1},  {1, 50257, 768, 3, 2, T, 2},   {3, 50257, 768, 2, 1, NN, 1},
        {1, 768, 3072, 2, 2, R, 2},   {5, 768, 3072, 3, 2, R, 2},    {8, 768, 3072, 2, 1, NT, 1},
        {1, 50257, 768, 1, 2, R, 2},  {3, 50257, 768, -1, 1, NT, 1}, {8, 384, 128, 1, 1, NT, 1},
        {5, 384, 128, 1, 1, R, 1},    {8, 384, 128, -1, 1, NT, 1},   {8, 384, 128, 0, 1, NT, 1},
        {1, 384, 128, 3, 2, MT, 2},   {2, 384, 128, 3, 2, MM, 2},    {16, 384, 128, 3, 1, MM, 1},
        {21, 384, 128, 3, 1, MM, 1},  {64, 384, 128, 3, 1, MM, 1},   {2, 1152, 384, 3, 1, MM, 1},
        {3, 1152, 384, 3, 2, MM, 2},  {99, 384, 128, 3, 2, MM, 2},   {99, 384, 128, 2, 2, MM, 2},
        {99, 128, 128, 3, 2, MM, 1},  {99, 512, 128, 3, 3, MM, 3},   {1024, 65, 128, 3, 2, MM, 1},
        {64, 2304, 768, 3, 2, NN, 2}, {8, 2304, 768, 3, 2, NN, 1},   {128, 2304, 768, 2, 2, NT, 1},
    };
    check_plans(cases, sizeof cases / sizeof cases[0], 0);
    // A streamed weight (its model's matrices over 16 MiB): matvec.c's loops below 3 rows, split from
    // 32K weights, on the copy where it is the only layout or where a weight of at most 512K elements has
    // one and is not wider than tall (AVX2, AVX-512); from 3 rows the plan above.
    const NlCall M = NL_CALL_MATVEC_ROWS;
    const PlanCase streamed[] = {
        {1, 864, 288, 3, 1, MT, 1},  {1, 864, 288, 3, 2, MT, 2},   {2, 288, 768, 2, 2, M, 2},
        {1, 128, 128, 3, 2, MT, 1},  {1, 32000, 288, 3, 2, MT, 2}, {2, 50257, 768, 2, 1, MT, 1},
        {1, 32000, 288, 1, 2, M, 2}, {1, 2304, 768, -1, 1, M, 1},  {3, 32000, 288, 3, 1, NN, 1},
        {3, 288, 768, 2, 2, MM, 2},  {1, 768, 768, 2, 1, M, 1},    {1, 288, 288, 2, 2, MT, 2},
        {1, 864, 288, 1, 1, M, 1},
    };
    check_plans(streamed, sizeof streamed / sizeof streamed[0], 1);
    CHECK(nl_linear_streamed((size_t)16 << 20) == 0 && nl_linear_streamed(((size_t)16 << 20) + 1) == 1,
          "a model's matrices stream from memory above 16 MiB");
    CHECK(nl_linear_wants_transposed(384, 128, 2) && nl_linear_wants_transposed(1024, 512, 3),
          "small weights get a copy with AVX2 and AVX-512");
    CHECK(nl_linear_wants_transposed(1536, 384, 3) && nl_linear_wants_transposed(50257, 768, 3) &&
              nl_linear_wants_transposed(50257, 768, 2) && nl_linear_wants_transposed(50257, 64, 2),
          "large tall weights get a copy with AVX-512, a head's shape with AVX2 too");
    CHECK(!nl_linear_wants_transposed(384, 1536, 2) && !nl_linear_wants_transposed(3072, 768, 2) &&
              !nl_linear_wants_transposed(768, 3072, 3) && !nl_linear_wants_transposed(1025, 1024, 3) &&
              !nl_linear_wants_transposed(50257, 768, 1) && !nl_linear_wants_transposed(384, 128, 1) &&
              !nl_linear_wants_transposed(384, 128, -1),
          "no copy of a large wide or square weight, nor for older or unknown kernels");
    CHECK(nl_blas_tier("Zen") == 2 && nl_blas_tier("cooperlake") == 3 && nl_blas_tier("Prescott") == 0 &&
              nl_blas_tier("Neoverse") == -1,
          "kernel tiers");
}

// Every worker of a pool runs once per call, on a thread of its own, call after call.
typedef struct {
    atomic_int runs[4];
} PoolCount;

static void count_run(void *ctx, int worker) { atomic_fetch_add(&((PoolCount *)ctx)->runs[worker], 1); }

static void pool_runs_every_worker_once_per_call(void) {
    NlPool *pool = nl_pool_create(4);
    PoolCount c;
    for (int w = 0; w < 4; w++) atomic_init(&c.runs[w], 0);
    for (int call = 0; call < 2000; call++) {
        if (call % 500 == 0) nanosleep(&(struct timespec){0, 5000000}, NULL);  // 5 ms: the workers go to sleep
        nl_pool_run(pool, count_run, &c);
    }
    for (int w = 0; w < 4; w++)
        CHECK(atomic_load(&c.runs[w]) == 2000, "worker %d ran %d times", w, atomic_load(&c.runs[w]));
    nl_pool_free(pool);
    CHECK(nl_pool_create(1) == NULL && nl_pool_workers(NULL) == 1, "a pool of one is the caller alone");
    atomic_init(&c.runs[0], 0);
    nl_pool_run(NULL, count_run, &c);
    CHECK(atomic_load(&c.runs[0]) == 1, "a NULL pool runs worker 0 on the caller");
}

// Scores of +-1000 overflow a naive softmax: the fused kernel subtracts the maximum first, so the
// two tied best keys share the weight, 1 less gets e^-1 of it, 2000 less none.
static void attention_softmax_is_stable(void) {
    const size_t Dh = 8, len = 4, stride = Dh * NL_TILE;
    float q[8] = {1, 0, 0, 0, 0, 0, 0, 0}, K[8 * NL_TILE] = {0}, V[NL_TILE * 8] = {0}, out[8], sc[NL_TILE];
    const float key0[4] = {1000, 1000, -1000, 999};
    for (size_t j = 0; j < len; j++) {
        K[nl_key_offset(j, 0, stride)] = key0[j] * sqrtf((float)Dh);  // score = key0[j] after scaling
        V[nl_value_offset(j, Dh, stride)] = (float)j;  // first value element = j
    }
    nl_attend_one(out, q, K, V, stride, len, 0, Dh, 1.0f / sqrtf((float)Dh), 0.0f, sc);
    // Reference: p = e^0, e^0, 0, e^-1 over 2 + e^-1; out[0] = sum_j p_j * j.
    double top = 1.0 / (2.0 + exp(-1.0)), third = exp(-1.0) * top, want = top * 1 + third * 3;
    CHECK(sc[2] == 0.0f && sc[0] == sc[1] && fabs(sc[0] - top) < 1e-6 && fabs(sc[3] - third) < 1e-6,
          "softmax %g %g %g %g", sc[0], sc[1], sc[2], sc[3]);
    CHECK(fabs(out[0] - want) < 1e-6, "out %g, want %g (tolerance 1e-6)", out[0], want);
}

static void activations_match_their_formulas(void) {
    float v[5] = {-3.0f, -0.5f, 0.0f, 0.7f, 4.0f}, g[5], t[5], r[5];
    for (int i = 0; i < 5; i++) g[i] = t[i] = r[i] = v[i];
    nl_activation(g, 5, NL_ACT_GELU);
    nl_activation(t, 5, NL_ACT_GELU_TANH);
    nl_activation(r, 5, NL_ACT_RELU);
    double wg[5], wt[5], wr[5];
    for (int i = 0; i < 5; i++) {
        double x = v[i];
        wg[i] = 0.5 * x * (1 + erf(x / sqrt(2.0)));
        wt[i] = 0.5 * x * (1 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
        wr[i] = x > 0 ? x : 0;
    }
    check_close("gelu (erf)", g, wg, 5, 1e-6, 1e-6);
    check_close("gelu_tanh", t, wt, 5, 1e-6, 1e-6);
    check_close("relu", r, wr, 5, 0, 0);
}

// GELU's tanh form (through nl_exp) against torch's formula, 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))),
// in double. Error relative to max(1, |want|): absolute where the value is small (v < 0: it falls to 0),
// relative where it is large. The sweep covers [-12, 12] densely and |v| up to 1e30, where v^3 overflows.
static double gelu_tanh_double(double v) {
    return 0.5 * v * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
}

static void gelu_tanh_within_3e7_of_double_formula(void) {
    enum { N = 2400001 };
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (float)((i - N / 2) * 1e-5);  // [-12, 12] in steps of 1e-5
    nl_activation(x, N, NL_ACT_GELU_TANH);  // the loop as the model runs it, vectorised
    double worst = 0.0, at = 0.0;
    for (int i = 0; i < N; i++) {
        double v = (float)((i - N / 2) * 1e-5), want = gelu_tanh_double(v);
        double e = fabs((double)x[i] - want) / fmax(1.0, fabs(want));
        if (e > worst) worst = e, at = v;
    }
    free(x);
    printf("     gelu_tanh vs formula (double) on [-12, 12]: max error %.3g at v = %.5f (tolerance 3e-7)\n", worst, at);
    CHECK(worst <= 3e-7, "gelu_tanh error %.3g at %g", worst, at);
    float big[] = {20.0f, 1e4f, 1e13f, 1e30f, -20.0f, -1e4f, -1e13f, -1e30f, INFINITY, NAN};
    nl_activation(big, 10, NL_ACT_GELU_TANH);
    CHECK(big[0] == 20.0f && big[1] == 1e4f && big[2] == 1e13f && big[3] == 1e30f, "large v: v itself, %g %g %g %g",
          big[0], big[1], big[2], big[3]);
    for (int i = 4; i < 8; i++) CHECK(big[i] <= 0.0f && big[i] > -1e-7f, "large -v: -0 to a tiny negative, %g", big[i]);
    CHECK(big[8] == INFINITY && isnan(big[9]), "inf stays inf, NaN stays NaN: %g %g", big[8], big[9]);
}

// GELU (erf form) as the model runs it, against torch's formula 0.5 v (1 + erf(v / sqrt 2)) in double, error
// relative to max(1, |want|) over [-12, 12]: 1e-7 (the erf's 4.9e-8 times |v| / 2, one rounding; the float
// evaluation it replaced erred 1.4e-6, at v = -12; a nearly cancelling MLP output before a norm magnified it).
static void gelu_within_1e7_of_double_formula(void) {
    enum { N = 2400001 };
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (float)((i - N / 2) * 1e-5);  // [-12, 12] in steps of 1e-5
    nl_activation(x, N, NL_ACT_GELU);
    double worst = 0.0, at = 0.0;
    for (int i = 0; i < N; i++) {
        double v = (float)((i - N / 2) * 1e-5), want = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
        double e = fabs((double)x[i] - want) / fmax(1.0, fabs(want));
        if (e > worst) worst = e, at = v;
    }
    free(x);
    printf("     gelu vs formula (double) on [-12, 12]: max error %.3g at v = %.5f (tolerance 1e-7)\n", worst, at);
    CHECK(worst <= 1e-7, "gelu error %.3g at %g", worst, at);
    float big[] = {20.0f, 1e30f, -20.0f, -1e30f, NAN};
    nl_activation(big, 5, NL_ACT_GELU);
    CHECK(big[0] == 20.0f && big[1] == 1e30f, "large v: v itself, %g %g", big[0], big[1]);
    CHECK(big[2] <= 0.0f && big[2] > -1e-6f && big[3] <= 0.0f, "large -v: 0 or a tiny negative, %g %g", big[2], big[3]);
    CHECK(isnan(big[4]), "NaN stays NaN");
}

// RoPE's table with partial rotary (rot < Dh): the first rot dims of a head turn as a table of width rot
// would turn them (the same floats), the rest keep their bits; against the angle p theta^(-i/rot) in
// double, 1e-5 (float's powf, cosf and sinf of angles up to T).
static void rope_turns_only_the_first_rot_dims(void) {
    enum { T = 40, DH = 12, ROT = 4 };
    float part[T * DH], whole[T * ROT], x[2 * DH], y[2 * DH];
    nl_rope_table(part, T, DH, ROT, 10000.0f);
    nl_rope_table(whole, T, ROT, ROT, 10000.0f);
    double worst = 0.0;
    int same = 1, still = 1;
    for (size_t p = 0; p < T; p++)
        for (size_t i = 0; i < DH; i += 2) {
            if (i >= ROT) {
                still &= part[p * DH + i] == 1.0f && part[p * DH + i + 1] == 0.0f;
                continue;
            }
            same &= part[p * DH + i] == whole[p * ROT + i] && part[p * DH + i + 1] == whole[p * ROT + i + 1];
            double angle = (double)p * pow(10000.0, -(double)i / ROT);
            worst = fmax(worst, fmax(fabs(part[p * DH + i] - cos(angle)), fabs(part[p * DH + i + 1] - sin(angle))));
        }
    CHECK(same && still && worst <= 1e-5,
          "the first %d dims as a table of width %d (%d), the rest cos 1 sin 0 (%d), "
          "angles within 1e-5 (%.3g)",
          ROT, ROT, same, still, worst);
    for (int i = 0; i < 2 * DH; i++) x[i] = y[i] = 0.37f * (float)(i + 1) - 2.0f;
    nl_rope(y, 2, DH, part + 7 * DH);  // two heads at position 7
    int kept = 1, turned = 1;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < DH; i++) {
            if (i >= ROT) kept &= memcmp(&x[h * DH + i], &y[h * DH + i], sizeof(float)) == 0;
            else turned &= x[h * DH + i] != y[h * DH + i];
        }
    CHECK(kept && turned, "nl_rope leaves dims %d..%d of each head bit for bit and turns the first %d", ROT, DH - 1,
          ROT);
}

// nl_softcap against cap tanh(x / cap) in double (Gemma 2's caps: 50 on scores, 30 on logits): within
// 2e-7 of cap (tanh_odd's 7.9e-8 and the product's rounding, both relative to cap), odd, never past cap.
static void softcap_within_2e7_of_cap_tanh(void) {
    enum { N = 2001 };
    float x[N];
    double worst = 0.0;
    int bounded = 1;
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) * 0.15f;  // [-150, 150]
    nl_softcap(x, N, 30.0f);
    for (int i = 0; i < N; i++) {
        double v = (float)(i - N / 2) * 0.15f, want = 30.0 * tanh(v / 30.0);
        worst = fmax(worst, fabs(x[i] - want) / 30.0);
        bounded &= fabsf(x[i]) <= 30.0f && x[i] == -x[N - 1 - i];
    }
    printf("     softcap 30 vs 30 tanh(x / 30) on [-150, 150]: max error %.3g of the cap (tolerance 2e-7)\n", worst);
    CHECK(worst <= 2e-7 && bounded, "softcap within 2e-7 of the cap (%.3g), odd and bounded (%d)", worst, bounded);
}

// nl_scale against its naive twin: each value times alpha, rounded once (float's product), to the bit.
static void scale_is_each_value_times_alpha(void) {
    enum { N = 37 };  // not a multiple of a vector's lanes
    float x[N], want[N], alpha = (float)sqrt(2048.0);  // Gemma 2B's sqrt(D)
    for (int i = 0; i < N; i++) x[i] = want[i] = 0.731f * (float)(i - 18) + 0.125f, want[i] *= alpha;
    nl_scale(x, alpha, N);
    CHECK(memcmp(x, want, sizeof x) == 0, "nl_scale equals x[i] * alpha for each of %d values", N);
}

static void erf_matches_libm_double_within_1e7(void) {
    double worst = 0.0, at = 0.0;
    for (int i = -600000; i <= 600000; i++) {  // [-6, 6] in steps of 1e-5
        float x = (float)(i * 1e-5);
        double d = fabs((double)nl_erf(x) - erf((double)x));
        if (d > worst) {
            worst = d;
            at = x;
        }
    }
    // 1e-7: evaluated in double the fit errs 4.9e-8, plus the rounding to float; in float it erred 3.5e-7
    printf("     nl_erf vs erf (double) on [-6, 6]: max |error| %.3g at x = %.5f (tolerance 1e-7)\n", worst, at);
    CHECK(worst <= 1e-7, "nl_erf error %.3g at %g", worst, at);
    CHECK(nl_erf(0.0f) == 0.0f && nl_erf(INFINITY) >= 1 - 1e-7 && nl_erf(-INFINITY) <= -1 + 1e-7, "0 and +-inf");
    CHECK(isnan(nl_erf(NAN)), "NaN stays NaN");
}

static void exp_within_2_ulp_of_double_exp(void) {
    double worst = 0.0, at = 0.0;
    for (int i = -873000; i <= 880000; i++) {  // [-87.3, 88] in steps of 1e-4
        float x = (float)(i * 1e-4);
        double want = exp((double)x), rel = fabs((double)nl_exp(x) - want) / want;
        if (rel > worst) {
            worst = rel;
            at = x;
        }
    }
    // One float ulp is 2^-23 = 1.19e-7 relative at most; libm's expf is within 1 ulp.
    printf("     nl_exp vs exp (double) on [-87.3, 88]: max relative error %.3g at x = %.4f (tolerance 2.4e-7)\n",
           worst, at);
    CHECK(worst <= 2.4e-7, "nl_exp relative error %.3g at %g", worst, at);
    CHECK(nl_exp(0.0f) == 1.0f && nl_exp(-100.0f) == 0.0f && nl_exp(-INFINITY) == 0.0f, "exact points");
    CHECK(isnan(nl_exp(NAN)), "NaN stays NaN");
    CHECK(nl_exp(1000.0f) == nl_exp(88.0f) && isfinite(nl_exp(INFINITY)), "saturates at e^88");
}

// The recurrent cells' sigmoid and tanh (through nl_exp) against libm in double, absolute error:
// near 0 tanh = 2 sigmoid(2x) - 1 loses relative precision but keeps ~1e-7 absolute.
static void sigmoid_and_tanh_within_3e7(void) {
    double worst_s = 0.0, worst_t = 0.0;
    for (float x = -40.0f; x <= 40.0f; x += 0.00137f) {
        worst_s = fmax(worst_s, fabs((double)nl_sigmoid(x) - 1.0 / (1.0 + exp(-(double)x))));
        worst_t = fmax(worst_t, fabs((double)nl_tanh(x) - tanh((double)x)));
    }
    printf("     on [-40, 40]: nl_sigmoid max |error| %.3g, nl_tanh %.3g (tolerance 3e-7)\n", worst_s, worst_t);
    CHECK(worst_s <= 3e-7 && worst_t <= 3e-7, "sigmoid %.3g, tanh %.3g", worst_s, worst_t);
    CHECK(nl_sigmoid(-1000.0f) >= 0.0f && nl_sigmoid(-1000.0f) < 1e-37f && nl_sigmoid(1000.0f) == 1.0f &&
              nl_tanh(1000.0f) == 1.0f && nl_tanh(-1000.0f) == -1.0f,
          "saturate (sigmoid(-1000) = 1 / (1 + e^88), the largest exponential nl_exp gives)");
}

// The cell kernels against their formulas in double on odd widths (tails past the vector lanes).
static void cell_kernels_match_their_formulas(void) {
    enum { S = 13 };
    float a[4 * S], c[S], c0[S], h[S], h0[S], cn[S], zr[2 * S], xc[S], hc[S];
    unsigned seed = 3;
    float *all[] = {a, c, h, cn, zr, xc, hc};
    size_t sizes[] = {4 * S, S, S, S, 2 * S, S, S};
    for (int k = 0; k < 7; k++)
        for (size_t i = 0; i < sizes[k]; i++) {
            seed = seed * 1103515245u + 12345u;
            all[k][i] = (float)((int)(seed >> 16) % 2000 - 1000) / 200.0f;  // [-5, 5]
        }
    memcpy(c0, c, sizeof c);
    memcpy(h0, h, sizeof h);
    nl_lstm_cell(c, a, S);
    nl_lstm_output(h, a, cn, S);
    double worst = 0.0;
    for (int k = 0; k < S; k++) {
        double sf = 1 / (1 + exp(-(double)a[k])), si = 1 / (1 + exp(-(double)a[S + k]));
        double so = 1 / (1 + exp(-(double)a[2 * S + k]));
        worst = fmax(worst, fabs(c[k] - (sf * c0[k] + si * tanh((double)a[3 * S + k]))));
        worst = fmax(worst, fabs(h[k] - so * tanh((double)cn[k])));
    }
    memcpy(h, h0, sizeof h);
    nl_gru_update(h, zr, xc, hc, S);
    for (int k = 0; k < S; k++) {
        double z = 1 / (1 + exp(-(double)zr[k])), r = 1 / (1 + exp(-(double)zr[S + k]));
        worst = fmax(worst, fabs(h[k] - ((1 - z) * h0[k] + z * tanh(xc[k] + r * hc[k]))));
    }
    CHECK(worst <= 2e-6, "LSTM and GRU cell kernels differ from their formulas by %.3g (tolerance 2e-6)", worst);
}

static void fused_attention_matches_double_reference(void) {
    // Head sizes with their own unrolled loops (16, 32, 64) and others; key counts on both sides
    // of the 8- and 32-key blocks; every other case with Gemma 2's soft-capping at 1.5 (scores reach
    // 4 or so here, so the cap bends most of them), against cap tanh(s / cap) in double.
    const size_t cases[][2] = {{1, 8}, {7, 13}, {128, 32}, {33, 64}, {40, 16}, {65, 48}, {9, 64}};
    unsigned seed = 9;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t len = cases[c][0], Dh = cases[c][1];
        float *q = malloc(Dh * sizeof *q), *K = malloc(len * Dh * sizeof *K), *V = malloc(len * Dh * sizeof *V);
        float *out = malloc(Dh * sizeof *out), *sc = malloc(nl_tiles(len) * NL_TILE * sizeof *sc);
        double *want = calloc(Dh, sizeof *want), *p = malloc(len * sizeof *p), max = -INFINITY, sum = 0.0;
        for (size_t i = 0; i < Dh; i++) q[i] = (float)(2 * uniform(&seed));
        for (size_t i = 0; i < len * Dh; i++) {
            K[i] = (float)(2 * uniform(&seed));
            V[i] = (float)uniform(&seed);
        }
        float scale = 1.0f / sqrtf((float)Dh), cap = c % 2 ? 1.5f : 0.0f;
        for (size_t j = 0; j < len; j++) {
            double d = 0.0;
            for (size_t i = 0; i < Dh; i++) d += (double)q[i] * K[j * Dh + i];
            p[j] = cap > 0.0f ? cap * tanh(d * scale / cap) : d * scale;
            max = fmax(max, p[j]);
        }
        for (size_t j = 0; j < len; j++) sum += (p[j] = exp(p[j] - max));
        for (size_t j = 0; j < len; j++)
            for (size_t i = 0; i < Dh; i++) want[i] += p[j] / sum * V[j * Dh + i];
        // Tiled as in the cache, with a gap of 3 * Dh * NL_TILE floats between a head's tiles.
        size_t stride = 4 * Dh * NL_TILE, size = nl_tiles(len) * stride;
        float *Kc = malloc(size * sizeof *Kc), *Vc = malloc(size * sizeof *Vc);
        for (size_t i = 0; i < size; i++) Kc[i] = Vc[i] = 1e30f;  // past len: huge, yet no effect
        for (size_t j = 0; j < len; j++)
            for (size_t i = 0; i < Dh; i++) {
                Kc[nl_key_offset(j, i, stride)] = K[j * Dh + i];
                Vc[nl_value_offset(j, Dh, stride) + i] = V[j * Dh + i];
            }
        nl_attend_one(out, q, Kc, Vc, stride, len, 0, Dh, scale, cap, sc);
        free(Kc);
        free(Vc);
        // float accumulation over at most 128 keys of |v| <= 0.5: 1e-6 covers rounding.
        check_close("fused attention vs double", out, want, Dh, 1e-6, 1e-5);
        free(q);
        free(K);
        free(V);
        free(out);
        free(sc);
        free(want);
        free(p);
    }
}

// The fused pass in 16-float vectors (AVX-512) and in 8-float ones give the same bits (attend_lanes.h:
// every lane one chain of operations, in the same order at either width), so a model's outputs do
// not depend on the CPU's vector width. Where the CPU lacks AVX-512 the 16-float pass must say so
// (-1), and nl_attend_one must be the 8-float one.
static void attention_widths_give_the_same_bits(void) {
    const size_t heads[] = {8, 16, 24, 32, 40, 64};
    unsigned seed = 17;
    size_t differing = 0, cases = 0;
    int wide = 1;
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++)
        for (size_t len = 1; len <= 200; len += 1 + len / 8) {
            size_t Dh = heads[h], stride = 3 * Dh * NL_TILE, size = nl_tiles(len) * stride;
            float *K = malloc(size * sizeof *K), *V = malloc(size * sizeof *V), *q = malloc(Dh * sizeof *q);
            float *o8 = malloc(Dh * sizeof *o8), *o16 = malloc(Dh * sizeof *o16), *od = malloc(Dh * sizeof *od);
            float *sc = malloc(nl_tiles(len) * NL_TILE * sizeof *sc);
            for (size_t i = 0; i < size; i++) K[i] = (float)(3 * uniform(&seed)), V[i] = (float)uniform(&seed);
            for (size_t i = 0; i < Dh; i++) q[i] = (float)(2 * uniform(&seed));
            float scale = 1.0f / sqrtf((float)Dh);
            CHECK(nl_attend_one_lanes(8, o8, q, K, V, stride, len, 0, Dh, scale, 0.0f, sc) == 0, "8 lanes always run");
            nl_attend_one(od, q, K, V, stride, len, 0, Dh, scale, 0.0f, sc);
            wide = nl_attend_one_lanes(16, o16, q, K, V, stride, len, 0, Dh, scale, 0.0f, sc) == 0;
            differing += (wide && memcmp(o8, o16, Dh * sizeof *o8) != 0) || memcmp(od, o8, Dh * sizeof *od) != 0;
            cases++;
            free(K), free(V), free(q), free(o8), free(o16), free(od), free(sc);
        }
    CHECK(nl_attend_one_lanes(4, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0.0f, 0.0f, NULL) == -1, "4 lanes refused");
    CHECK(differing == 0, "%zu of %zu queries differ between the widths (%s)", differing, cases,
          wide ? "8 and 16 lanes" : "no AVX-512 here: nl_attend_one against 8 lanes");
}

static void nonfinite_scan_finds_the_first_nan_or_inf(void) {
    size_t n = 10000;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (float)i * 1e-3f - 3.0f;
    x[17] = 1e-45f;  // subnormal: finite
    x[18] = 3.4e38f;
    CHECK(nl_first_nonfinite(x, n) == SIZE_MAX, "all finite");
    const size_t at[] = {0, 4095, 4096, 9999};
    const float bad[] = {NAN, INFINITY, -INFINITY, -NAN};
    for (int k = 0; k < 4; k++) {
        float keep = x[at[k]];
        x[at[k]] = bad[k];
        CHECK(nl_first_nonfinite(x, n) == at[k], "found at %zu: %zu", at[k], nl_first_nonfinite(x, n));
        x[at[k]] = keep;
    }
    x[5000] = NAN;
    x[7000] = INFINITY;
    CHECK(nl_first_nonfinite(x, n) == 5000, "the first of two");
    CHECK(nl_first_nonfinite(x, 0) == SIZE_MAX, "empty");
    free(x);
}

// Many queries as products (nl_attend_rows): query r sees keys 0 .. first_len + r - 1. Each row
// against the double reference (1e-6 + 1e-5 |want|, as the fused kernel), blocks of 64 queries and
// partial tiles on both sides, the cache past the written positions 1e30 as above.
static void rows_attention_matches_double_reference(void) {
    const size_t cases[][3] = {{1, 16, 32}, {1, 128, 32}, {50, 70, 64}, {200, 130, 64}, {5, 33, 16}, {1, 64, 48}};
    unsigned seed = 13;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t first = cases[c][0], n = cases[c][1], Dh = cases[c][2], len = first + n - 1, qs = 3 * Dh;
        size_t stride = 4 * Dh * NL_TILE, size = nl_tiles(len) * stride, ld = nl_tiles(len) * NL_TILE;
        float *q = malloc(n * qs * sizeof *q), *Kc = malloc(size * sizeof *Kc), *Vc = malloc(size * sizeof *Vc);
        float *K = malloc(len * Dh * sizeof *K), *V = malloc(len * Dh * sizeof *V), *out = malloc(n * 2 * Dh * 4);
        float *sc = malloc(NL_ATTEND_BLOCK * ld * sizeof *sc);
        double *want = malloc(n * Dh * sizeof *want), *p = malloc(len * sizeof *p);
        for (size_t i = 0; i < n * qs; i++) q[i] = (float)(2 * uniform(&seed));
        for (size_t i = 0; i < len * Dh; i++) K[i] = (float)(2 * uniform(&seed)), V[i] = (float)uniform(&seed);
        for (size_t i = 0; i < size; i++) Kc[i] = Vc[i] = 1e30f;
        for (size_t j = 0; j < len; j++)
            for (size_t i = 0; i < Dh; i++) {
                Kc[nl_key_offset(j, i, stride)] = K[j * Dh + i];
                Vc[nl_value_offset(j, Dh, stride) + i] = V[j * Dh + i];
            }
        float scale = 1.0f / sqrtf((float)Dh), cap = c % 2 ? 1.5f : 0.0f;  // soft-capped every other case
        for (size_t r = 0; r < n; r++) {
            size_t m = first + r;
            double max = -INFINITY, sum = 0.0;
            for (size_t j = 0; j < m; j++) {
                double d = 0.0;
                for (size_t i = 0; i < Dh; i++) d += (double)q[r * qs + i] * K[j * Dh + i];
                max = fmax(max, p[j] = cap > 0.0f ? cap * tanh(d * scale / cap) : d * scale);
            }
            for (size_t j = 0; j < m; j++) sum += (p[j] = exp(p[j] - max));
            for (size_t i = 0; i < Dh; i++) want[r * Dh + i] = 0.0;
            for (size_t j = 0; j < m; j++)
                for (size_t i = 0; i < Dh; i++) want[r * Dh + i] += p[j] / sum * V[j * Dh + i];
        }
        nl_attend_rows(out, 2 * Dh, q, qs, n, first, 0, Kc, Vc, stride, Dh, scale, cap, sc, ld);
        for (size_t r = 0; r < n; r++) memmove(out + r * Dh, out + r * 2 * Dh, Dh * sizeof *out);  // rows 2 Dh apart
        check_close("attention as products vs double", out, want, n * Dh, 1e-6, 1e-5);
        free(q), free(Kc), free(Vc), free(K), free(V), free(out), free(sc), free(want), free(p);
    }
}

int main(void) {
    RUN(linear_blas_matches_naive_on_odd_shapes);
    RUN(split_linear_is_bitwise_unsplit);
    RUN(split_sgemm_is_bitwise_whole);
    RUN(matmul_is_bitwise_matvec_per_row);
    RUN(plan_follows_its_rules);
    RUN(pool_runs_every_worker_once_per_call);
    RUN(attention_softmax_is_stable);
    RUN(activations_match_their_formulas);
    RUN(gelu_tanh_within_3e7_of_double_formula);
    RUN(erf_matches_libm_double_within_1e7);
    RUN(scale_is_each_value_times_alpha);
    RUN(softcap_within_2e7_of_cap_tanh);
    RUN(rope_turns_only_the_first_rot_dims);
    RUN(gelu_within_1e7_of_double_formula);
    RUN(exp_within_2_ulp_of_double_exp);
    RUN(sigmoid_and_tanh_within_3e7);
    RUN(cell_kernels_match_their_formulas);
    RUN(fused_attention_matches_double_reference);
    RUN(rows_attention_matches_double_reference);
    RUN(attention_widths_give_the_same_bits);
    RUN(nonfinite_scan_finds_the_first_nan_or_inf);
    return check_summary("test_kernels");
}
