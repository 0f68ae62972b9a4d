// quantize.c — round-to-nearest quantization with a float32 scale per row or group (quantize.h).
#include <math.h>
#include <string.h>

#include "quantize.h"

int nl_quant_levels(NlQuant q) { return q == NL_QUANT_Q8 ? 127 : q == NL_QUANT_Q4 ? 7 : 0; }

size_t nl_quant_group(NlQuant q, size_t cols) { return q == NL_QUANT_Q4 ? 32 : cols; }

// One group of n values in place of dst (src may be dst).
static void quantize_group(float *dst, const float *src, size_t n, int levels) {
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(src[i]));
    if (amax == 0.0f) {
        for (size_t i = 0; i < n; i++) dst[i] = 0.0f;
        return;
    }
    float scale = amax / (float)levels, lim = (float)levels;
    for (size_t i = 0; i < n; i++) {
        float q = roundf(src[i] / scale);
        dst[i] = fminf(fmaxf(q, -lim), lim) * scale;
    }
}

void nl_quantize_rows(float *dst, const float *src, size_t rows, size_t cols, NlQuant q) {
    int levels = nl_quant_levels(q);
    if (!levels) {
        if (dst != src) memmove(dst, src, rows * cols * sizeof *dst);
        return;
    }
    size_t group = nl_quant_group(q, cols);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c += group) {
            size_t n = cols - c < group ? cols - c : group;
            quantize_group(dst + r * cols + c, src + r * cols + c, n, levels);
        }
}
