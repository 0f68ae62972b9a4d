// attention.c — one query's fused attention, a block of queries' as products, and a row's
// probabilities and entropy (kernels.h; attend_lanes.h holds the fused pass).
#include "kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vecmath.h"

// The first key a query of len keys sees through a window (0: every key).
static inline size_t window_start(size_t len, size_t window) { return window && len > window ? len - window : 0; }

#define ATTEND_LANES 8
#include "attend_lanes.h"
#undef ATTEND_LANES
#define ATTEND_LANES 16
#include "attend_lanes.h"
#undef ATTEND_LANES

// One query's attention in 16-float vectors where the CPU has AVX-512 (x86-64-v4), else in 8-float
// ones built for AVX2 and for the baseline (GCC function multi-versioning); the same bits either way
// (attend_lanes.h). 4 heads of 32 over 96 keys took 0.75-1.0 against 1.06-1.30 us in cache, 1.2-1.8
// against 1.5-2.3 out of it (Zen 5, one thread, repeated runs). The 8-float code built for AVX-512
// ran slower than for AVX2, so the wide build has its own pass.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("arch=x86-64-v4"))) static void attend_avx512(float *out, const float *q, const float *K,
                                                                    const float *V, size_t stride, size_t len,
                                                                    size_t window, size_t Dh, float scale,
                                                                    float softcap, float *scores) {
    attend_16(out, q, K, V, stride, len, window, Dh, scale, softcap, scores);
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) static void
attend_avx2(float *out, const float *q, const float *K, const float *V, size_t stride, size_t len, size_t window,
            size_t Dh, float scale, float softcap, float *scores) {
    attend_8(out, q, K, V, stride, len, window, Dh, scale, softcap, scores);
}
#endif

int nl_attend_one_lanes(size_t lanes, float *out, const float *q, const float *K, const float *V, size_t stride,
                        size_t len, size_t window, size_t Dh, float scale, float softcap, float *scores) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (lanes == 16 && !__builtin_cpu_supports("x86-64-v4")) return -1;
    if (lanes == 16) attend_avx512(out, q, K, V, stride, len, window, Dh, scale, softcap, scores);
    else if (lanes == 8) attend_avx2(out, q, K, V, stride, len, window, Dh, scale, softcap, scores);
    else return -1;
#else
    if (lanes != 8) return -1;
    attend_8(out, q, K, V, stride, len, window, Dh, scale, softcap, scores);
#endif
    return 0;
}

void nl_attend_one(float *out, const float *q, const float *K, const float *V, size_t stride, size_t len, size_t window,
                   size_t Dh, float scale, float softcap, float *scores) {
    if (nl_attend_one_lanes(16, out, q, K, V, stride, len, window, Dh, scale, softcap, scores) != 0)
        (void)nl_attend_one_lanes(8, out, q, K, V, stride, len, window, Dh, scale, softcap, scores);
}

// One block of queries r0 .. r1 - 1 (rows of scores), in three steps: scores tile by tile (only the
// rows that see a key of the tile), softmax of each row over its own keys with the rest set to 0,
// and the weighted values tile by tile into out (tile 0 is seen by every row: it starts the sums).
static void attend_block(float *out, size_t out_stride, const float *q, size_t q_stride, size_t r0, size_t r1,
                         size_t first_len, size_t window, const float *K, const float *V, size_t stride, size_t Dh,
                         float scale, float softcap, float *scores, size_t ld) {
    size_t last = first_len + r1 - 1, tiles = nl_tiles(last);  // the longest row's length
    for (size_t t = 0; t < tiles; t++) {
        size_t j0 = t * NL_TILE, rs = j0 + 1 > first_len + r0 ? j0 + 1 - first_len : r0;  // first row that sees j0
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(r1 - rs), NL_TILE, (int)Dh, scale,
                    q + rs * q_stride, (int)q_stride, K + t * stride, NL_TILE, 0.0f, scores + (rs - r0) * ld + j0,
                    (int)ld);
    }
    for (size_t r = r0; r < r1; r++) {
        float *p = scores + (r - r0) * ld;
        size_t len = first_len + r;
        if (softcap > 0.0f) softcap_inline(p, len, softcap);
        for (size_t j = 0, from = window_start(len, window); j < from; j++) p[j] = -INFINITY;  // (then 0)
        softmax_inline(p, len);
        for (size_t j = len; j < tiles * NL_TILE; j++) p[j] = 0.0f;
    }
    for (size_t t = 0; t < tiles; t++) {
        size_t j0 = t * NL_TILE, rs = j0 + 1 > first_len + r0 ? j0 + 1 - first_len : r0;
        size_t keys = last - j0 < NL_TILE ? last - j0 : NL_TILE;  // written positions of the tile
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(r1 - rs), (int)Dh, (int)keys, 1.0f,
                    scores + (rs - r0) * ld + j0, (int)ld, V + t * stride, (int)Dh, t ? 1.0f : 0.0f,
                    out + rs * out_stride, (int)out_stride);
    }
}

// In 8 lanes, so that the compiler keeps the exponentials in vectors (AVX2 where the CPU has it).
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) double
nl_attention_probs(float *restrict p, const float *restrict q, const float *restrict K, size_t stride, size_t len,
                   size_t window, size_t Dh, float scale, float softcap) {
    for (size_t j0 = 0; j0 < len; j0 += NL_TILE) {  // a tile's keys side by side: (Dh, NL_TILE) rows
        size_t keys = len - j0 < NL_TILE ? len - j0 : NL_TILE;
        const float *tile = K + (j0 / NL_TILE) * stride;
        float acc[NL_TILE] = {0};  // in registers: the sums over d of a whole tile (the same order as before)
        if (keys == NL_TILE)
            for (size_t d = 0; d < Dh; d++)
                for (size_t j = 0; j < NL_TILE; j++) acc[j] += q[d] * tile[d * NL_TILE + j];
        else
            for (size_t d = 0; d < Dh; d++)
                for (size_t j = 0; j < keys; j++) acc[j] += q[d] * tile[d * NL_TILE + j];
        memcpy(p + j0, acc, keys * sizeof *acc);
    }
    size_t from = window_start(len, window);  // the keys before it: probability 0, the rest as a row of their own
    for (size_t j = 0; j < from; j++) p[j] = 0.0f;
    p += from;
    len -= from;
    for (size_t j = 0; j < len; j++) p[j] *= scale;
    if (softcap > 0.0f) softcap_inline(p, len, softcap);
    float max = max_lanes(p, len), e_lanes[8] = {0}, ez_lanes[8] = {0};  // sums of e^z and e^z z, z = s - max
    size_t j = 0;
    for (; j + 8 <= len; j += 8)
        for (size_t k = 0; k < 8; k++) {
            float z = p[j + k] - max, e = exp_poly(z);
            p[j + k] = e;
            e_lanes[k] += e;
            ez_lanes[k] += e * z;
        }
    double sum = 0.0, weighted = 0.0;
    for (; j < len; j++) {
        float z = p[j] - max, e = exp_poly(z);
        p[j] = e;
        sum += e;
        weighted += (double)e * z;
    }
    for (size_t k = 0; k < 8; k++) sum += e_lanes[k], weighted += ez_lanes[k];
    float inv = (float)(1.0 / sum);
    for (j = 0; j < len; j++) p[j] *= inv;
    return log(sum) - weighted / sum;  // -sum p ln p, with ln p = z - ln sum
}

void nl_attend_rows(float *out, size_t out_stride, const float *q, size_t q_stride, size_t n, size_t first_len,
                    size_t window, const float *K, const float *V, size_t stride, size_t Dh, float scale, float softcap,
                    float *scores, size_t ld) {
    for (size_t r0 = 0; r0 < n; r0 += NL_ATTEND_BLOCK)
        attend_block(out, out_stride, q, q_stride, r0, r0 + NL_ATTEND_BLOCK < n ? r0 + NL_ATTEND_BLOCK : n, first_len,
                     window, K, V, stride, Dh, scale, softcap, scores, ld);
}

NL_HIDDEN_CLONE(nl_attention_probs);
