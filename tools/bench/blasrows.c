// blasrows.c — does an OpenBLAS product give a row the same bits whatever else is computed with it?
// The facts behind nl_linear's thread policy and the engine's fixed batches (engine/linear.c):
// for each of the model's shapes, whether sgemm's rows at M = 1..24 equal those of one call with
// M = 24, whether one sgemv per row equals sgemm, and whether 2 OpenBLAS threads change sgemv or
// sgemm. '.' same bits, 'x' different.
//
//   cc -O2 tools/bench/blasrows.c $(pkg-config --cflags --libs openblas) -o build/blasrows && build/blasrows
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *random_floats(size_t n, unsigned seed) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; p && i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) % 20001) / 10000.0f - 1.0f;
    }
    return p;
}

static void sgemm(int m, int n, int k, const float *x, const float *w, float *y) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 0.0f, y, n);
}

int main(void) {
    const int shapes[][2] = {{384, 128}, {128, 128}, {512, 128}, {128, 512}, {65, 128}, {2304, 768}, {768, 3072}};
    const int M = 24;
    printf("OpenBLAS %s\n", openblas_get_corename());
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int n = shapes[s][0], k = shapes[s][1];
        float *x = random_floats((size_t)M * k, 1), *w = random_floats((size_t)n * k, 2);
        float *all = malloc((size_t)M * n * sizeof *all), *y = malloc((size_t)M * n * sizeof *y);
        openblas_set_num_threads(1);
        sgemm(M, n, k, x, w, all);
        printf("%4dx%-4d sgemm rows at M=1..24 vs M=24: ", n, k);
        for (int m = 1; m <= M; m++) {
            sgemm(m, n, k, x, w, y);
            putchar(memcmp(y, all, (size_t)m * n * sizeof *y) ? 'x' : '.');
        }
        cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
        printf("  sgemv vs sgemm row: %c", memcmp(y, all, (size_t)n * sizeof *y) ? 'x' : '.');
        float *one = malloc((size_t)M * n * sizeof *one);
        memcpy(one, y, (size_t)n * sizeof *y);
        openblas_set_num_threads(2);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
        printf("  sgemv 2 threads: %c", memcmp(y, one, (size_t)n * sizeof *y) ? 'x' : '.');
        sgemm(M, n, k, x, w, y);
        printf("  sgemm 2 threads: %c\n", memcmp(y, all, (size_t)M * n * sizeof *y) ? 'x' : '.');
        free(x), free(w), free(all), free(y), free(one);
    }
    return 0;
}
