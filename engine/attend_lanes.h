// attend_lanes.h — one query's fused attention (nl_attend_one, kernels.h), written once for vectors
// of ATTEND_LANES floats. attention.c includes it twice: 8 lanes (a ymm register) for its AVX2 and
// baseline builds, 16 (a zmm) for its AVX-512 build. Each key's score and each output element is one
// chain of operations in the same order at either width, so both give the same bits. Defines
// attend_8 or attend_16; needs softmax_inline, window_start and NL_TILE.
#define ATTEND_CAT2(a, b) a##b
#define ATTEND_CAT(a, b) ATTEND_CAT2(a, b)
#define LANES_FN(name) ATTEND_CAT(name, ATTEND_LANES)  // name_8 or name_16
#define VF LANES_FN(vf_)

// A vector as one value. Loads and stores go through memcpy, so no alignment is assumed; they are
// always inlined, so the ABI warning GCC gives for returning a vector wider than the build's
// registers (-Wpsabi) concerns no real call.
typedef float VF __attribute__((vector_size(ATTEND_LANES * sizeof(float))));

static inline __attribute__((always_inline)) VF LANES_FN(load_)(const float *p) {
    VF v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) void LANES_FN(store_)(float *p, VF v) { memcpy(p, &v, sizeof v); }

// scores (NT * NL_TILE) = scale * q . each key of NT tiles (1 or 2, a constant after inlining), the
// first at t, the second stride floats on: each key one chain of multiply-adds over i in order.
static inline __attribute__((always_inline)) void LANES_FN(tile_scores_)(float *scores, const float *q, const float *t,
                                                                         size_t stride, size_t Dh, float scale,
                                                                         size_t NT) {
    const size_t NV = NL_TILE / ATTEND_LANES;  // vectors a tile
    VF a[2][NL_TILE / ATTEND_LANES] = {{{0}}};
    for (size_t i = 0; i < Dh; i++) {
        float qi = scale * q[i];
        for (size_t k = 0; k < NT; k++)
            for (size_t v = 0; v < NV; v++)
                a[k][v] += qi * LANES_FN(load_)(t + k * stride + i * NL_TILE + v * ATTEND_LANES);
    }
    for (size_t k = 0; k < NT; k++)
        for (size_t v = 0; v < NV; v++) LANES_FN(store_)(scores + k * NL_TILE + v * ATTEND_LANES, a[k][v]);
}

// scores[j] = scale * q . key j for j < len, keys tiled (kernels.h), two tiles a pass (64 keys: the
// independent chains hide the multiply-add's latency). The last, partial tile is computed whole (the
// cache holds whole tiles; the scores past len are never read): a shorter chain for it cost 4x a
// whole tile, and every query ends on a partial tile.
static inline __attribute__((always_inline)) void LANES_FN(key_scores_)(float *scores, const float *q, const float *K,
                                                                        size_t stride, size_t len, size_t Dh,
                                                                        float scale) {
    size_t j0 = 0;
    for (; j0 + NL_TILE < len; j0 += 2 * NL_TILE)
        LANES_FN(tile_scores_)(scores + j0, q, K + (j0 / NL_TILE) * stride, stride, Dh, scale, 2);
    if (j0 < len) LANES_FN(tile_scores_)(scores + j0, q, K + (j0 / NL_TILE) * stride, stride, Dh, scale, 1);
}

// out (DH) = sum_j p[j] V[j] with the output in registers; DH a multiple of ATTEND_LANES, at most
// 64, a constant after inlining. Under 64, two register sets take alternate values (more chains).
static inline __attribute__((always_inline)) void
LANES_FN(weighted_values_fixed_)(float *out, const float *p, const float *V, size_t stride, size_t len, size_t DH) {
    const size_t C = DH / ATTEND_LANES, SETS = DH < 64 ? 2 : 1;
    VF acc[2][64 / ATTEND_LANES] = {{{0}}};
    for (size_t j0 = 0; j0 < len; j0 += NL_TILE) {
        const float *tile = V + (j0 / NL_TILE) * stride, *pt = p + j0;  // (NL_TILE, DH)
        size_t m = len - j0 < NL_TILE ? len - j0 : NL_TILE, j = 0;
        for (; j + SETS <= m; j += SETS)
            for (size_t s = 0; s < SETS; s++)
                for (size_t c = 0; c < C; c++)
                    acc[s][c] += pt[j + s] * LANES_FN(load_)(tile + (j + s) * DH + ATTEND_LANES * c);
        for (; j < m; j++)
            for (size_t c = 0; c < C; c++) acc[0][c] += pt[j] * LANES_FN(load_)(tile + j * DH + ATTEND_LANES * c);
    }
    for (size_t c = 0; c < C; c++)
        LANES_FN(store_)(out + ATTEND_LANES * c, SETS == 2 ? acc[0][c] + acc[1][c] : acc[0][c]);
}

// A window starts the keys at the tile holding the first one the query sees; the keys before it in
// that tile are masked (-inf after the cap, so 0 after the softmax). Window 0: every key, as before.
static inline __attribute__((always_inline)) void LANES_FN(attend_)(float *out, const float *q, const float *K,
                                                                    const float *V, size_t stride, size_t len,
                                                                    size_t window, size_t Dh, float scale,
                                                                    float softcap, float *scores) {
    size_t from = window_start(len, window), t0 = from / NL_TILE, masked = from - t0 * NL_TILE;
    K += t0 * stride;
    V += t0 * stride;
    len -= t0 * NL_TILE;
    LANES_FN(key_scores_)(scores, q, K, stride, len, Dh, scale);
    if (softcap > 0.0f) softcap_inline(scores, len, softcap);
    for (size_t j = 0; j < masked; j++) scores[j] = -INFINITY;
    softmax_inline(scores, len);
    switch (Dh) {  // the head sizes of GPT-2-like models get their own unrolled loops
    case 16: LANES_FN(weighted_values_fixed_)(out, scores, V, stride, len, 16); return;
    case 32: LANES_FN(weighted_values_fixed_)(out, scores, V, stride, len, 32); return;
    case 64: LANES_FN(weighted_values_fixed_)(out, scores, V, stride, len, 64); return;
    }
    for (size_t i = 0; i < Dh; i++) out[i] = 0.0f;
    for (size_t j = 0; j < len; j++) {
        const float *v = V + nl_value_offset(j, Dh, stride);
        for (size_t i = 0; i < Dh; i++) out[i] += scores[j] * v[i];
    }
}

#undef VF
#undef LANES_FN
#undef ATTEND_CAT
#undef ATTEND_CAT2
