// blaslayout.c — the table behind nl_linear_plan (engine/linear.c), measured on this machine, and
// the bandwidth a matrix-vector product reaches on a matrix in memory.
//
//   build/blaslayout D F V [stream]   (make bench builds it against build/rel/libnormlab.a; stream: that
//   table only). It pins itself to the last CPU it may use; its pools' second worker runs on another.
//
// For each linear of a model of width D, MLP width F and vocabulary V, at row counts from 1 to 64
// (1: decode; 8: a sample group; more: prefill and eval), one thread: the time of one sgemv per row,
// of sgemm on the weight as stored, (out, in) (NT), of sgemm on its transposed copy (NN), and of
// matvec.c's loops on the copy ("matmul": nl_matvec_t for one row, nl_matmul_t for more), best of
// several repeats; the fastest; and the call the plan picks, with its time against the fastest.
// Then, on a 256 MiB matrix (in memory, not cache): sgemv's GB/s and a plain read's (a float sum),
// at 1 and 2 threads (2 threads: nl_linear's split by rows over a pool; the sum over halves).
#define _GNU_SOURCE  // sched_setaffinity
#include <cblas.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "linear.h"
#include "normlab.h"

// Best seconds of one product of `rows` rows by call (0 sgemv rows, 1 NT, 2 NN, 3 matmul), over ~0.1 s.
static double time_call(int call, int rows, int n_out, int n_in, const float *w, const float *wt, const float *x,
                        float *y) {
    double best = 1e30, spent = 0.0;
    int inner = 1 + (int)(1e6 / (2.0 * rows * n_out * n_in));
    for (int r = 0; r < 200 && (spent < 0.1 || r < 3); r++) {
        double t0 = now();
        for (int k = 0; k < inner; k++) {
            if (call == 0)
                for (int i = 0; i < rows; i++)
                    cblas_sgemv(CblasRowMajor, CblasNoTrans, n_out, n_in, 1.0f, w, n_in, x + (size_t)i * n_in, 1, 0.0f,
                                y + (size_t)i * n_out, 1);
            else if (call == 1)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n_out, n_in, 1.0f, x, n_in, w, n_in, 0.0f, y,
                            n_out);
            else if (call == 2)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, n_out, n_in, 1.0f, x, n_in, wt, n_out,
                            0.0f, y, n_out);
            else if (rows == 1) nl_matvec_t(y, wt, x, (size_t)n_in, (size_t)n_out, 0, (size_t)n_out);
            else nl_matmul_t(y, wt, x, (size_t)rows, (size_t)n_in, (size_t)n_out, 0, (size_t)n_out);
        }
        double dt = (now() - t0) / inner;
        spent += dt * inner;
        if (dt < best) best = dt;
    }
    return best;
}

static int plan_call(NlLinearPlan p) {
    return p.call == NL_CALL_SGEMV_ROWS || p.call == NL_CALL_SGEMV_T_ROWS  ? 0
           : p.call == NL_CALL_SGEMM_NT                                    ? 1
           : p.call == NL_CALL_MATMUL_T || p.call == NL_CALL_MATVEC_T_ROWS ? 3
                                                                           : 2;
}

static void layout_table(int D, int F, int V, int tier) {
    const char *names[5] = {"qkv", "attn_proj", "mlp_up", "mlp_down", "lm_head"};
    const int shapes[5][2] = {{3 * D, D}, {D, D}, {F, D}, {D, F}, {V, D}};
    const int rows_list[] = {1, 2, 4, 6, 8, 16, 32, 64};
    const char *call_names[4] = {"sgemv", "NT", "NN", "matmul"};
    printf("%-9s %11s %4s %11s %11s %11s %11s  %-7s %-7s %s\n", "linear", "shape", "rows", "sgemv us", "NT us", "NN us",
           "matmul us", "fastest", "plan", "plan/fastest");
    for (int s = 0; s < 5; s++) {
        int n_out = shapes[s][0], n_in = shapes[s][1];
        size_t weights = (size_t)n_out * n_in;
        if (weights > ((size_t)64 << 20) / sizeof(float)) continue;  // the GPT-2 head: sgemv only, below
        float *w = random_floats(weights), *wt = random_floats(weights), *x = random_floats((size_t)64 * n_in);
        float *y = random_floats((size_t)64 * n_out);
        for (int r = 0; w && wt && x && y && r < (int)(sizeof rows_list / sizeof rows_list[0]); r++) {
            int rows = rows_list[r];
            double t[4];
            int fastest = 0;
            for (int c = 0; c < 4; c++) {
                t[c] = time_call(c, rows, n_out, n_in, w, wt, x, y);
                if (t[c] < t[fastest]) fastest = c;
            }
            int planned = plan_call(nl_linear_plan((size_t)rows, (size_t)n_out, (size_t)n_in, tier, 1));
            printf("%-9s %5dx%-5d %4d %11.2f %11.2f %11.2f %11.2f  %-7s %-7s %.2f\n", names[s], n_out, n_in, rows,
                   t[0] * 1e6, t[1] * 1e6, t[2] * 1e6, t[3] * 1e6, call_names[fastest], call_names[planned],
                   t[planned] / t[fastest]);
        }
        free(w);
        free(wt);
        free(x);
        free(y);
    }
}

// ---- where it runs: the one-thread measurements on the last CPU this process may use, the pools'
// workers on any (make bench runs it unpinned)

static void pin_to_last_cpu(const cpu_set_t *all_cpus) {
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = CPU_SETSIZE - 1; c >= 0; c--)
        if (CPU_ISSET(c, all_cpus)) {
            CPU_SET(c, &one);
            break;
        }
    (void)sched_setaffinity(0, sizeof one, &one);
}

// A pool of two made with every CPU allowed: on two CPUs it binds the caller (worker 0) to the
// first and its thread to the second (engine/parallel.c), so the tables' one-thread runs go on
// the first CPU while it lives. pool_done frees it and pins the caller to the last CPU again.
static NlPool *unpinned_pool(const cpu_set_t *all_cpus) {
    (void)sched_setaffinity(0, sizeof *all_cpus, all_cpus);
    return nl_pool_create(2);
}

static void pool_done(NlPool *pool, const cpu_set_t *all_cpus) {
    nl_pool_free(pool);
    pin_to_last_cpu(all_cpus);
}

// ---- streaming: one row through many distinct matrices, as decode reads a model's weights

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// GB/s of one row's product through each of `count` matrices laid end to end in `mats`, by
// nl_linear_run with plan p (the layout is the plan's: SGEMV_ROWS and MATVEC_ROWS read each as
// (out, in), SGEMV_T_ROWS and MATVEC_T_ROWS as (in, out)).
static double stream_pass(const float *mats, size_t count, size_t n_out, size_t n_in, NlLinearPlan p, NlPool *pool,
                          const float *x, float *y) {
    double t0 = now();
    for (size_t m = 0; m < count; m++) {
        NlLinear lin = {{mats + m * n_out * n_in, NL_DTYPE_F32}, mats + m * n_out * n_in, NULL, n_out, n_in, -1, 0};
        nl_linear_run(y, x, 1, &lin, pool, p);
    }
    return (double)count * (double)(n_out * n_in * sizeof(float)) / (now() - t0) / 1e9;
}

// For each linear: GB/s from memory of OpenBLAS's sgemv and of matvec.c's loops (what a model whose
// matrices exceed the cache runs, NlLinear.streamed) in either layout, at one thread and split over
// two, medians of interleaved rounds; and the layout the plan of a matrix above its copy bound picks.
static void stream_table(int D, int F, int V, int tier, const cpu_set_t *all_cpus) {
    const char *names[5] = {"qkv", "attn_proj", "mlp_up", "mlp_down", "lm_head"};
    const int shapes[5][2] = {{3 * D, D}, {D, D}, {F, D}, {D, F}, {V, D}};
    enum { ROUNDS = 7, RUNS = 8 };
    static const NlCall CALLS[4] = {NL_CALL_SGEMV_ROWS, NL_CALL_SGEMV_T_ROWS, NL_CALL_MATVEC_ROWS,
                                    NL_CALL_MATVEC_T_ROWS};
    NlPool *pool = unpinned_pool(all_cpus);
    int two = nl_pool_workers(pool) > 1;
    printf("streaming from memory, one row through distinct matrices (256 MiB or more a pass), GB/s, medians of %d "
           "interleaved rounds: OpenBLAS's sgemv, then matvec.c's loops; 1t one thread, 2t split over two\n"
           "%-9s %11s %11s %11s %11s %11s %11s %11s %11s %11s  %s\n",
           ROUNDS, "linear", "shape", "sgemv o,i", "sgemv i,o", "ours o,i", "ours i,o", "sgemv o,i", "sgemv i,o",
           "ours o,i", "ours i,o", "plan above the copy bound");
    printf("%-9s %11s %47s %47s\n", "", "", "1t", "2t");
    for (int s = 0; s < 5; s++) {
        size_t n_out = (size_t)shapes[s][0], n_in = (size_t)shapes[s][1], weights = n_out * n_in;
        if (s == 4 && n_out <= n_in) continue;  // (no head)
        size_t count = ((size_t)256 << 20) / (weights * sizeof(float)) + 1;
        if (count < 2) count = 2;
        float *mats = random_floats(count * weights), *x = random_floats(n_out + n_in), *y = random_floats(n_out);
        if (!mats || !x || !y) {
            printf("%-9s (no memory for %zu matrices)\n", names[s], count);
        } else {
            double gb[RUNS][ROUNDS];
            for (int r = 0; r < ROUNDS; r++)
                for (int k = 0; k < RUNS; k++) {
                    NlLinearPlan p = {CALLS[k % 4], k >= 4 ? 2 : 1};
                    gb[k][r] =
                        k >= 4 && !two ? 0.0 : stream_pass(mats, count, n_out, n_in, p, k >= 4 ? pool : NULL, x, y);
                }
            for (int k = 0; k < RUNS; k++) qsort(gb[k], ROUNDS, sizeof(double), cmp_double);
            NlLinearPlan plan = nl_linear_plan(1, n_out, n_in, tier, 1);
            printf("%-9s %5zux%-5zu", names[s], n_out, n_in);
            for (int k = 0; k < RUNS; k++) printf(" %11.1f", gb[k][ROUNDS / 2]);
            printf("  %s\n", weights <= ((size_t)1 << 19)        ? "(cached: the table above)"
                             : plan.call == NL_CALL_SGEMV_T_ROWS ? "(in,out)"
                                                                 : "(out,in)");
        }
        free(mats);
        free(x);
        free(y);
    }
    pool_done(pool, all_cpus);
}

// ---- a matrix in memory

typedef struct {
    const float *p;
    size_t n;
    float sums[2];
} ReadJob;

// A plain streaming read: a float sum over a half, in 8 independent lanes (vector adds).
static float sum_floats(const float *p, size_t n) {
    float acc[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += p[i + k];
    return acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
}

static void read_share(void *ctx, int worker) {
    ReadJob *j = ctx;
    size_t half = j->n / 2;
    j->sums[worker] = sum_floats(j->p + (worker ? half : 0), worker ? j->n - half : half);
}

static void read_all(void *ctx, int worker) {
    ReadJob *j = ctx;
    if (worker == 0) j->sums[0] = sum_floats(j->p, j->n);
}

static void dram_table(const cpu_set_t *all_cpus) {
    const size_t n_out = 16384, n_in = 4096, bytes = n_out * n_in * sizeof(float);  // 256 MiB
    float *w = random_floats(n_out * n_in), *x = random_floats(n_in), *y = random_floats(n_out);
    NlPool *pool = unpinned_pool(all_cpus);
    if (!w || !x || !y) {
        printf("(no memory for the 256 MiB matrix)\n");
        free(w);
        free(x);
        free(y);
        pool_done(pool, all_cpus);
        return;
    }
    NlLinear lin = {{w, NL_DTYPE_F32}, NULL, NULL, n_out, n_in, -1, 0};
    ReadJob rj = {w, n_out * n_in, {0, 0}};
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        nl_linear(y, x, 1, &lin, NULL, NULL);
        double t1 = now();
        nl_linear(y, x, 1, &lin, pool, NULL);
        double t2 = now();
        nl_pool_run(NULL, read_all, &rj);
        double t3 = now();
        nl_pool_run(pool, read_share, &rj);
        double t4 = now();
        double dt[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
        for (int k = 0; k < 4; k++)
            if (dt[k] < best[k]) best[k] = dt[k];
    }
    printf("256 MiB matrix in memory: sgemv %.1f GB/s at 1 thread, %.1f at 2 (split by rows); a plain read %.1f "
           "GB/s at 1 thread, %.1f at 2\n",
           bytes / best[0] / 1e9, nl_pool_workers(pool) > 1 ? bytes / best[1] / 1e9 : 0.0, bytes / best[2] / 1e9,
           nl_pool_workers(pool) > 1 ? bytes / best[3] / 1e9 : 0.0);
    free(w);
    free(x);
    free(y);
    pool_done(pool, all_cpus);
}

int main(int argc, char **argv) {
    int stream_only = argc == 5 && strcmp(argv[4], "stream") == 0;
    if (argc != 4 && !stream_only) {
        fprintf(stderr, "usage: blaslayout D F V [stream]\n");
        return 2;
    }
    int D = atoi(argv[1]), F = atoi(argv[2]), V = atoi(argv[3]);
    if (D < 1 || F < 1 || V < 1 || D > 8192 || F > 32768 || V > 1 << 20) {
        fprintf(stderr, "blaslayout: bad sizes\n");
        return 2;
    }
    openblas_set_num_threads(1);
    cpu_set_t all_cpus;
    if (sched_getaffinity(0, sizeof all_cpus, &all_cpus) != 0) CPU_ZERO(&all_cpus);
    pin_to_last_cpu(&all_cpus);
    int tier = nl_blas_tier(nl_blas_core());
    printf("OpenBLAS %s kernels (tier %d), 1 thread; times are the best of repeats\n", nl_blas_core(), tier);
    if (!stream_only) layout_table(D, F, V, tier);
    stream_table(D, F, V, tier, &all_cpus);
    if (!stream_only) dram_table(&all_cpus);
    return 0;
}
