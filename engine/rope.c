// rope.c — RoPE: a position's rotation, the table, and the cache's context shift (kernels.h).
#include "kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

void nl_rope(float *x, size_t heads, size_t Dh, const float *cos_sin) {
    for (size_t h = 0; h < heads; h++) {
        float *v = x + h * Dh;
        for (size_t i = 0; i < Dh; i += 2) {
            float c = cos_sin[i], s = cos_sin[i + 1], v0 = v[i], v1 = v[i + 1];
            v[i] = v0 * c - v1 * s;
            v[i + 1] = v0 * s + v1 * c;
        }
    }
}

void nl_rope_table(float *rope, size_t T, size_t Dh, size_t rot, float theta) {
    for (size_t p = 0; p < T; p++)
        for (size_t i = 0; i < Dh; i += 2) {
            float freq = 1.0f / powf(theta, (float)i / (float)rot), angle = (float)p * freq;
            rope[p * Dh + i] = i < rot ? cosf(angle) : 1.0f;
            rope[p * Dh + i + 1] = i < rot ? sinf(angle) : 0.0f;
        }
}

void nl_rope_shift(float *K, float *V, size_t stride, size_t Dh, size_t keep, size_t drop, size_t len,
                   const float *cos_sin) {
    float back[NL_ROPE_SHIFT_HEAD_MAX], k[NL_ROPE_SHIFT_HEAD_MAX];
    for (size_t i = 0; i < Dh; i += 2) back[i] = cos_sin[i], back[i + 1] = -cos_sin[i + 1];
    for (size_t p = keep + drop; p < len; p++) {
        for (size_t d = 0; d < Dh; d++) k[d] = K[nl_key_offset(p, d, stride)];
        nl_rope(k, 1, Dh, back);
        for (size_t d = 0; d < Dh; d++) K[nl_key_offset(p - drop, d, stride)] = k[d];
        memcpy(V + nl_value_offset(p - drop, Dh, stride), V + nl_value_offset(p, Dh, stride), Dh * sizeof(float));
    }
}
