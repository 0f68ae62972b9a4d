// blasbench.c — what this machine's OpenBLAS does on a model's exact shapes, and its memory
// bandwidth: the practical limits `make bench` compares normlab against.
//
//   build/blasbench D F V T THREADS L   ->  one JSON object on stdout
//
// For each linear of a block (qkv (3D, D), attn_proj (D, D), mlp_up (F, D), mlp_down (D, F)) and the
// LM head (V, D): sgemv GFLOP/s (one token, decode) and sgemm GFLOP/s with M = T rows (prefill),
// best of several timed repeats. One matrix called again and again stays in cache, which a real
// decode step's L layers do not, so it also times sgemv through L distinct copies of the layer
// matrices and the head in forward order (the model's real working set): the decode limit. Then a
// copy loop over 512 MiB for the bandwidth in GB/s.
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"

// Best GFLOP/s of y (M, out) = x (M, in) W^T over repeats lasting ~0.2 s in all.
static double gflops(int M, int out, int in) {
    float *w = random_floats((size_t)out * in), *x = random_floats((size_t)M * in), *y = random_floats((size_t)M * out);
    double best = 0.0, flops = 2.0 * M * out * in, spent = 0.0;
    for (int r = 0; r < 1000 && spent < 0.2; r++) {
        double t0 = now();
        int inner = 1 + (int)(2e6 / flops);  // at least ~2 MFLOP per timing
        for (int k = 0; k < inner; k++) {
            if (M == 1) cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, w, in, x, 1, 0.0f, y, 1);
            else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
        }
        double dt = now() - t0;
        spent += dt;
        if (flops * inner / dt / 1e9 > best) best = flops * inner / dt / 1e9;
    }
    free(w);
    free(x);
    free(y);
    return best;
}

// Best tokens/s of the decode step's products alone: sgemv through L layers' own matrices and the
// head, over repeats lasting ~0.3 s.
static double sweep_tok_s(int L, const int shapes[5][2]) {
    size_t per_layer = 0, biggest = 0;
    for (int i = 0; i < 4; i++) per_layer += (size_t)shapes[i][0] * shapes[i][1];
    for (int i = 0; i < 5; i++)
        if ((size_t)shapes[i][0] > biggest) biggest = (size_t)shapes[i][0];
    size_t head = (size_t)shapes[4][0] * shapes[4][1];
    float *w = random_floats(per_layer * L + head), *x = random_floats(biggest * 4), *y = random_floats(biggest * 4);
    if (!w || !x || !y) {
        free(w);
        free(x);
        free(y);
        return 0.0;
    }
    double best = 1e30, spent = 0.0;
    for (int r = 0; r < 1000 && spent < 0.3; r++) {
        double t0 = now();
        const float *p = w;
        for (int l = 0; l <= L; l++)
            for (int i = l < L ? 0 : 4; i < (l < L ? 4 : 5); i++) {
                cblas_sgemv(CblasRowMajor, CblasNoTrans, shapes[i][0], shapes[i][1], 1.0f, p, shapes[i][1], x, 1, 0.0f,
                            y, 1);
                p += (size_t)shapes[i][0] * shapes[i][1];
            }
        double dt = now() - t0;
        spent += dt;
        if (dt < best) best = dt;
    }
    free(w);
    free(x);
    free(y);
    return 1.0 / best;
}

// Best GB/s of memcpy over a 512 MiB buffer (read + write counted).
static double bandwidth(void) {
    size_t n = (size_t)512 << 20;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) {
        free(a);
        free(b);
        return 0.0;
    }
    memset(a, 1, n);
    memset(b, 2, n);
    double best = 0.0;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        memcpy(b, a, n);
        double gbs = 2.0 * (double)n / (now() - t0) / 1e9;
        if (gbs > best) best = gbs;
        a[r] = b[r + 1];
    }
    free(a);
    free(b);
    return best;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: blasbench D F V T THREADS L\n");
        return 2;
    }
    int D = atoi(argv[1]), F = atoi(argv[2]), V = atoi(argv[3]), T = atoi(argv[4]), threads = atoi(argv[5]);
    int L = atoi(argv[6]);
    if (D < 1 || F < 1 || V < 1 || T < 1 || threads < 1 || L < 1) {
        fprintf(stderr, "blasbench: bad sizes\n");
        return 2;
    }
    openblas_set_num_threads(threads);
    const char *names[5] = {"qkv", "attn_proj", "mlp_up", "mlp_down", "lm_head"};
    int shapes[5][2] = {{3 * D, D}, {D, D}, {F, D}, {D, F}, {V, D}};
    printf("{\"threads\": %d, \"shapes\": {", threads);
    for (int i = 0; i < 5; i++)
        printf("%s\"%s\": {\"out\": %d, \"in\": %d, \"sgemv_gflops\": %.3f, \"sgemm_gflops\": %.3f}", i ? ", " : "",
               names[i], shapes[i][0], shapes[i][1], gflops(1, shapes[i][0], shapes[i][1]),
               gflops(T, shapes[i][0], shapes[i][1]));
    printf("}, \"sweep_decode_tok_s\": %.3f, \"copy_gb_per_s\": %.3f}\n", sweep_tok_s(L, shapes), bandwidth());
    return 0;
}
