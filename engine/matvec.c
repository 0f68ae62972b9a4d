// matvec.c — one row's product with a weight read from memory: the decode step of a model whose
// matrices do not fit the cache (linear.c's plan, NL_CALL_MATVEC_ROWS and _T_ROWS). A decode step
// reads each weight once, so it runs at the speed the weight streams in; OpenBLAS 0.3.21's sgemv
// streams at 9-19 GB/s on a Zen 4 EPYC (Cooperlake kernels) where these loops, and a plain read,
// run at 22-29 (docs/performance.md). Each output is one chain of operations in a fixed order,
// however the outputs are split: the same bits at any worker count. The AVX2 and AVX-512 builds
// fuse each multiply-add and give the same bits at either vector width; the baseline build (no FMA)
// rounds each product first, so its last bits differ.
#include "linear.h"

#include <string.h>

// y[o] for o in [lo, hi) = w[o] . x, w (n_out, n_in): 16 partial sums, lane k over the inputs i with
// i % 16 == k (the loop the vectoriser turns into 16-float chains), then added in order.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void
nl_matvec(float *y, const float *w, const float *x, size_t n_in, size_t lo, size_t hi) {
    size_t whole = n_in / 16 * 16;
    for (size_t o = lo; o < hi; o++) {
        const float *row = w + o * n_in;
        float acc[16] = {0};
        for (size_t i = 0; i < whole; i += 16)
            for (size_t k = 0; k < 16; k++) acc[k] += row[i + k] * x[i + k];
        for (size_t i = whole; i < n_in; i++) acc[i - whole] += row[i] * x[i];
        float sum = 0.0f;
        for (size_t k = 0; k < 16; k++) sum += acc[k];
        y[o] = sum;
    }
}

// out[o - lo] for o in [lo, hi) = sum over i in [i0, i1) of x[i] wt[i][o], wt (n_in, n_out): eight rows
// of wt a pass over the outputs, each output's terms added in the order of i (out stays in the cache;
// the rows stream). Eight rows streamed 1.05-1.2x faster than four (2304 x 768: 21.6 against 19.4 GB/s).
static inline __attribute__((always_inline)) void
matvec_t_chain(float *out, const float *wt, const float *x, size_t n_out, size_t i0, size_t i1, size_t lo, size_t hi) {
    for (size_t o = lo; o < hi; o++) out[o - lo] = 0.0f;
    size_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        const float *r[8];
        float xs[8];
        for (size_t k = 0; k < 8; k++) r[k] = wt + (i + k) * n_out, xs[k] = x[i + k];
        for (size_t o = lo; o < hi; o++) {
            float s = out[o - lo];
            s += xs[0] * r[0][o];
            s += xs[1] * r[1][o];
            s += xs[2] * r[2][o];
            s += xs[3] * r[3][o];
            s += xs[4] * r[4][o];
            s += xs[5] * r[5][o];
            s += xs[6] * r[6][o];
            s += xs[7] * r[7][o];
            out[o - lo] = s;
        }
    }
    for (; i < i1; i++)
        for (size_t o = lo; o < hi; o++) out[o - lo] += x[i] * wt[i * n_out + o];
}

// y[o] for o in [lo, hi): one chain per NL_MATVEC_SEG inputs, the chains then added in order
// (linear.h), outputs in tiles of MATVEC_T_TILE so that the later chains have room on the stack.
#define MATVEC_T_TILE 2048

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void
nl_matvec_t(float *y, const float *wt, const float *x, size_t n_in, size_t n_out, size_t lo, size_t hi) {
    float part[MATVEC_T_TILE];
    for (size_t t0 = lo; t0 < hi; t0 += MATVEC_T_TILE) {
        size_t t1 = hi - t0 < MATVEC_T_TILE ? hi : t0 + MATVEC_T_TILE;
        matvec_t_chain(y + t0, wt, x, n_out, 0, n_in < NL_MATVEC_SEG ? n_in : NL_MATVEC_SEG, t0, t1);
        for (size_t i0 = NL_MATVEC_SEG; i0 < n_in; i0 += NL_MATVEC_SEG) {
            matvec_t_chain(part, wt, x, n_out, i0, n_in - i0 < NL_MATVEC_SEG ? n_in : i0 + NL_MATVEC_SEG, t0, t1);
            for (size_t o = t0; o < t1; o++) y[o] += part[o - t0];
        }
    }
}

// ---- several rows at once: y (n, n_out) = x (n, n_in) wt, outputs [lo, hi) of every row
//
// matmul_lanes.h, built for 16-float vectors (AVX-512) and for 8 (AVX2, and the baseline): each output
// the one chain nl_matvec_t computes for its row alone, the same bits at either width.
#define MM_LANES 8
#define MM_ROWS 6
#include "matmul_lanes.h"
#undef MM_ROWS
#undef MM_LANES
#define MM_LANES 16
#define MM_ROWS 8
#include "matmul_lanes.h"
#undef MM_ROWS
#undef MM_LANES

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("arch=x86-64-v4"))) static void matmul_avx512(float *y, const float *wt, const float *x, size_t n,
                                                                    size_t n_in, size_t n_out, size_t lo, size_t hi) {
    matmul_16(y, wt, x, n, n_in, n_out, lo, hi);
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
matmul_avx2(float *y, const float *wt, const float *x, size_t n, size_t n_in, size_t n_out, size_t lo, size_t hi) {
    matmul_8(y, wt, x, n, n_in, n_out, lo, hi);
}
#endif

int nl_matmul_t_lanes(size_t lanes, float *y, const float *wt, const float *x, size_t n, size_t n_in, size_t n_out,
                      size_t lo, size_t hi) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (lanes == 16 && !__builtin_cpu_supports("x86-64-v4")) return -1;
    if (lanes == 16) matmul_avx512(y, wt, x, n, n_in, n_out, lo, hi);
    else if (lanes == 8) matmul_avx2(y, wt, x, n, n_in, n_out, lo, hi);
    else return -1;
#else
    if (lanes != 8) return -1;
    matmul_8(y, wt, x, n, n_in, n_out, lo, hi);
#endif
    return 0;
}

void nl_matmul_t(float *y, const float *wt, const float *x, size_t n, size_t n_in, size_t n_out, size_t lo, size_t hi) {
    if (nl_matmul_t_lanes(16, y, wt, x, n, n_in, n_out, lo, hi) != 0)
        (void)nl_matmul_t_lanes(8, y, wt, x, n, n_in, n_out, lo, hi);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// GCC gives the dispatchers of target_clones default visibility whatever the declaration says, so
// they are hidden here, as the rest of linear.h is (the kernels' files do the same).
__asm__(".hidden nl_matvec\n.hidden nl_matvec.resolver\n.hidden nl_matvec_t\n.hidden nl_matvec_t.resolver\n");
#endif
