// blaspolicy.c — the measurements behind nl_linear's choices (engine/linear.c): OpenBLAS time per
// call at 1 and 2 threads for the shipped models' and GPT-2-small's linear shapes, from 1 to 128 rows
// (1 row = sgemv, more = sgemm), best of 6.
//
//   cc -O2 tools/bench/blaspolicy.c $(pkg-config --cflags --libs openblas) -o build/blaspolicy && build/blaspolicy
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(void) {
    int shapes[][2] = {{384, 128}, {512, 128}, {128, 512}, {2304, 768}, {3072, 768}, {768, 3072}};
    int Ms[] = {1, 2, 4, 6, 8, 12, 16, 64, 128};
    float *w = calloc(3072 * 3072, 4), *x = calloc(128 * 3072, 4), *y = calloc(128 * 3072, 4);
    for (int s = 0; s < 6; s++)
        for (int m = 0; m < 9; m++) {
            int M = Ms[m], o = shapes[s][0], in = shapes[s][1];
            double best[3] = {1e9, 1e9, 1e9};
            for (int rep = 0; rep < 6; rep++)
                for (int t = 1; t <= 2; t++) {
                    openblas_set_num_threads(t);
                    int inner = 1 + (int)(2e7 / (2.0 * M * o * in));
                    double t0 = now();
                    for (int k = 0; k < inner; k++) {
                        if (M == 1) cblas_sgemv(CblasRowMajor, CblasNoTrans, o, in, 1, w, in, x, 1, 0, y, 1);
                        else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, o, in, 1, x, in, w, in, 0, y, o);
                    }
                    double dt = (now() - t0) / inner;
                    if (dt < best[t]) best[t] = dt;
                }
            printf("M=%3d %4dx%4d: 1t %8.2f us  2t %8.2f us  ratio %.2f\n", M, o, in, best[1] * 1e6, best[2] * 1e6,
                   best[1] / best[2]);
        }
}
