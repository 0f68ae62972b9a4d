// test_window.c — a sliding window's attention (Mistral, Gemma 2 and 3): the fused pass at either
// width, the products and the watcher's probabilities each against the softmax over the last W keys
// in double, the keys before the window huge (1e30) so that any leak shows; a window at least the
// length gives the bits of no window.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"

static double uniform(unsigned *state) {  // deterministic, test-local
    *state = *state * 1103515245u + 12345u;
    return ((*state >> 8) & 0xFFFF) / 65536.0 - 0.5;
}

// A head's cache of len keys and values tiled as kernels.h lays them out (a gap between tiles), the
// first len - window keys and values 1e30; and the attention of query q over the window in double.
typedef struct {
    size_t len, window, Dh, stride;
    float *K, *V, *q;
    double want[64], p[512];  // the expected output (Dh) and probabilities (len)
} Case;

static void case_make(Case *c, size_t len, size_t window, size_t Dh, float cap, unsigned seed) {
    *c = (Case){len, window, Dh, 3 * Dh * NL_TILE, NULL, NULL, NULL, {0}, {0}};
    size_t size = nl_tiles(len) * c->stride, from = window && len > window ? len - window : 0;
    c->K = malloc(size * sizeof *c->K);
    c->V = malloc(size * sizeof *c->V);
    c->q = malloc(Dh * sizeof *c->q);
    for (size_t i = 0; i < size; i++) c->K[i] = c->V[i] = 1e30f;
    for (size_t i = 0; i < Dh; i++) c->q[i] = (float)(2 * uniform(&seed));
    double max = -INFINITY, sum = 0.0, scale = 1.0 / sqrt((double)Dh);
    for (size_t j = from; j < len; j++) {
        double d = 0.0;
        for (size_t i = 0; i < Dh; i++) {
            float k = (float)(2 * uniform(&seed)), v = (float)uniform(&seed);
            c->K[nl_key_offset(j, i, c->stride)] = k;
            c->V[nl_value_offset(j, Dh, c->stride) + i] = v;
            d += (double)c->q[i] * k;
        }
        c->p[j] = cap > 0.0f ? cap * tanh(d * (float)scale / cap) : d * (float)scale;
        max = fmax(max, c->p[j]);
    }
    for (size_t j = from; j < len; j++) sum += (c->p[j] = exp(c->p[j] - max));
    for (size_t j = from; j < len; j++) {
        c->p[j] /= sum;
        for (size_t i = 0; i < Dh; i++) c->want[i] += c->p[j] * c->V[nl_value_offset(j, Dh, c->stride) + i];
    }
}

static void case_free(Case *c) {
    free(c->K);
    free(c->V);
    free(c->q);
}

static void windowed_attention_matches_double(void) {
    static const size_t CASES[][3] = {{100, 7, 16}, {100, 32, 32}, {97, 64, 64},
                                      {40, 1, 16},  {300, 45, 24}, {64, 63, 32}};
    float sc[512 + NL_TILE], out[64], out8[64], out16[64], probs[512];
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        for (int capped = 0; capped < 2; capped++) {
            size_t len = CASES[k][0], W = CASES[k][1], Dh = CASES[k][2];
            float cap = capped ? 2.0f : 0.0f, scale = 1.0f / sqrtf((float)Dh);
            Case c;
            case_make(&c, len, W, Dh, cap, (unsigned)(k * 2 + capped + 1));
            nl_attend_one(out, c.q, c.K, c.V, c.stride, len, W, Dh, scale, cap, sc);
            CHECK(check_close("fused, windowed", out, c.want, Dh, 1e-6, 1e-5), "case %zu (len %zu, W %zu, cap %d)", k,
                  len, W, capped);
            int wide = nl_attend_one_lanes(16, out16, c.q, c.K, c.V, c.stride, len, W, Dh, scale, cap, sc) == 0;
            nl_attend_one_lanes(8, out8, c.q, c.K, c.V, c.stride, len, W, Dh, scale, cap, sc);
            CHECK(!wide || memcmp(out8, out16, Dh * sizeof *out8) == 0, "case %zu: 8 and 16 lanes, the same bits", k);
            double entropy = nl_attention_probs(probs, c.q, c.K, c.stride, len, W, Dh, scale, cap), h = 0.0;
            int near = 1;
            for (size_t j = 0; j < len; j++) {
                near &= fabs(probs[j] - c.p[j]) <= 1e-6;
                h -= c.p[j] > 0 ? c.p[j] * log(c.p[j]) : 0.0;
            }
            CHECK(near && fabs(entropy - h) <= 1e-5, "case %zu: the watcher's probabilities (0 before the window)", k);
            // the products: the last query as a row of its own, after len - 1 keys
            float *rows = malloc(NL_ATTEND_BLOCK * (len + NL_TILE) * sizeof *rows);
            nl_attend_rows(out, Dh, c.q, Dh, 1, len, W, c.K, c.V, c.stride, Dh, scale, cap, rows,
                           nl_tiles(len) * NL_TILE);
            CHECK(check_close("products, windowed", out, c.want, Dh, 1e-6, 1e-5), "case %zu: products", k);
            free(rows);
            case_free(&c);
        }
    }
}

static void a_window_past_the_length_is_none(void) {
    Case c;
    case_make(&c, 90, 0, 32, 0.0f, 7);
    float sc[128], a[32], b[32];
    nl_attend_one(a, c.q, c.K, c.V, c.stride, 90, 0, 32, 0.125f, 0.0f, sc);
    nl_attend_one(b, c.q, c.K, c.V, c.stride, 90, 90, 32, 0.125f, 0.0f, sc);
    CHECK(memcmp(a, b, sizeof a) == 0, "window 90 over 90 keys: the bits of no window");
    case_free(&c);
}

int main(void) {
    RUN(windowed_attention_matches_double);
    RUN(a_window_past_the_length_is_none);
    return check_summary("test_window");
}
