// attnrows.c — the measurement behind ATTEND_ROWS_MIN (engine/transformer.c): attention of n
// queries of one head, one fused pass per query (nl_attend_one) against products (nl_attend_rows),
// on the head sizes and contexts of the shipped models, nanoGPT's shakespeare_char and GPT-2 small.
//
//   build/attnrows   (make bench builds it against build/rel/libnormlab.a and prints its table)
//
// Two cases a shape: a prompt of n positions from position 0 (prefill), and n queries at the end of
// a full window (eval's second half: each sees T - n + 1 .. T keys). Best of repeats, one thread.
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "benchutil.h"
#include "kernels.h"

// Best seconds of one call of n queries from first (query r sees first + r keys), by products or not.
static double time_attend(int rows, size_t n, size_t first, const float *q, size_t qs, const float *K, const float *V,
                          size_t stride, size_t Dh, float *out, float *scores, size_t ld) {
    double best = 1e30, spent = 0.0;
    float scale = 1.0f / sqrtf((float)Dh);
    for (int r = 0; r < 200 && (spent < 0.05 || r < 3); r++) {
        double t0 = now();
        if (rows) nl_attend_rows(out, Dh, q, qs, n, first, 0, K, V, stride, Dh, scale, 0.0f, scores, ld);
        else
            for (size_t i = 0; i < n; i++)
                nl_attend_one(out + i * Dh, q + i * qs, K, V, stride, first + i, 0, Dh, scale, 0.0f, scores);
        double dt = now() - t0;
        spent += dt;
        if (dt < best) best = dt;
    }
    return best;
}

int main(void) {
    const struct {
        const char *name;
        size_t Dh, T;
    } shapes[] = {{"shipped (D 128, 4 heads)", 32, 128},
                  {"nanoGPT (D 384, 6 heads)", 64, 256},
                  {"GPT-2 small (D 768, 12 heads)", 64, 1024}};
    const size_t ns[] = {2, 4, 8, 12, 16, 24, 32, 64, 128, 256, 512};
    openblas_set_num_threads(1);
    printf("%-30s %-8s %5s %12s %12s %8s\n", "shape", "case", "n", "fused us", "products us", "ratio");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t Dh = shapes[s].Dh, T = shapes[s].T, stride = 4 * Dh * NL_TILE, ld = nl_tiles(T) * NL_TILE;
        float *K = random_floats(nl_tiles(T) * stride), *V = random_floats(nl_tiles(T) * stride);
        float *q = random_floats(T * 3 * Dh), *out = random_floats(T * Dh);
        float *scores = random_floats(NL_ATTEND_BLOCK * ld > ld ? NL_ATTEND_BLOCK * ld : ld);
        for (size_t c = 0; K && V && q && out && scores && c < sizeof ns / sizeof ns[0]; c++) {
            size_t n = ns[c];
            if (n > T / 2) break;
            for (int eval = 0; eval < 2; eval++) {
                size_t first = eval ? T - n + 1 : 1;
                double fused = time_attend(0, n, first, q, 3 * Dh, K, V, stride, Dh, out, scores, ld);
                double rows = time_attend(1, n, first, q, 3 * Dh, K, V, stride, Dh, out, scores, ld);
                printf("%-30s %-8s %5zu %12.2f %12.2f %8.2f\n", shapes[s].name, eval ? "eval" : "prefill", n,
                       fused * 1e6, rows * 1e6, fused / rows);
            }
        }
        free(K), free(V), free(q), free(out), free(scores);
    }
    return 0;
}
