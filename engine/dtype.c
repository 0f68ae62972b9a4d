// dtype.c — the storage types of weight matrices and their conversions (dtype.h). Compiled without
// contraction (the project's -std=c11): x * id + 8.5f must round twice, as ggml's reference does.
#include "dtype.h"

#include <math.h>
#include <string.h>

#include "normlab_internal.h"

size_t nl_dtype_block(NlDType type) { return type == NL_DTYPE_Q8_0 || type == NL_DTYPE_Q4_0 ? NL_QBLOCK : 1; }

size_t nl_dtype_block_bytes(NlDType type) {
    switch (type) {
    case NL_DTYPE_F32: return 4;
    case NL_DTYPE_F16:
    case NL_DTYPE_BF16: return 2;
    case NL_DTYPE_Q8_0: return NL_Q8_0_BYTES;
    case NL_DTYPE_Q4_0: return NL_Q4_0_BYTES;
    default: return 0;
    }
}

size_t nl_dtype_row_bytes(NlDType type, size_t cols) {
    size_t block = nl_dtype_block(type);
    return cols % block ? 0 : cols / block * nl_dtype_block_bytes(type);
}

static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

// Round to nearest even: the magnitude's bits shifted down 13 with the carry of the dropped bits
// (over half, or exactly half with an odd result); below 2^-14 the float adder does the rounding
// (adding 0.5 aligns the value's bits to half's subnormal step, 2^-24).
uint16_t nl_f32_to_f16(float x) {
    uint32_t u = bits_of(x), sign = (u >> 16) & 0x8000u, mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));  // NaN, quiet
    if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // 65520 and above round to infinity
    if (mag < 0x38800000u) {  // below 2^-14: a subnormal half, or zero
        uint32_t sum = bits_of(float_of(mag) + 0.5f);
        return (uint16_t)(sign | (sum - bits_of(0.5f)));
    }
    uint32_t odd = (mag >> 13) & 1u;
    mag += 0xc8000fffu + odd;  // rebias the exponent (-112 << 23, mod 2^32), and round
    return (uint16_t)(sign | (mag >> 13));
}

float nl_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {  // zero or subnormal: mant 2^-24, exact in float
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t nl_f32_to_bf16(float x) {
    uint32_t u = bits_of(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);  // NaN, quiet
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float nl_bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

static uint16_t read_u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void write_u16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8);
}

// ggml's quantize_row_q8_0_ref for one block: d = amax / 127, q = roundf(x / d) as x * (1 / d).
static void q8_0_block(unsigned char *dst, const float *x) {
    float amax = 0.0f;
    for (int j = 0; j < NL_QBLOCK; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    write_u16(dst, nl_f32_to_f16(d));
    for (int j = 0; j < NL_QBLOCK; j++) dst[2 + j] = (unsigned char)(int8_t)roundf(x[j] * id);
}

// ggml's quantize_row_q4_0_ref for one block: d = max / -8 with max the weight of largest magnitude
// (the first such), q = min(15, (int8)(x / d + 8.5)); weight j in the low nibble of byte j, weight
// j + 16 in the high.
static void q4_0_block(unsigned char *dst, const float *x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < NL_QBLOCK; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
    float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    write_u16(dst, nl_f32_to_f16(d));
    for (int j = 0; j < NL_QBLOCK / 2; j++) {
        float lo = x[j] * id + 8.5f, hi = x[j + NL_QBLOCK / 2] * id + 8.5f;
        int q0 = (int8_t)lo, q1 = (int8_t)hi;
        q0 = q0 < 15 ? q0 : 15;
        q1 = q1 < 15 ? q1 : 15;
        dst[2 + j] = (unsigned char)(q0 | q1 << 4);
    }
}

void nl_dtype_from_f32(void *dst, const float *src, size_t cols, NlDType type) {
    unsigned char *out = dst;
    switch (type) {
    case NL_DTYPE_F32: memcpy(dst, src, cols * sizeof(float)); return;
    case NL_DTYPE_F16:
        for (size_t i = 0; i < cols; i++) write_u16(out + 2 * i, nl_f32_to_f16(src[i]));
        return;
    case NL_DTYPE_BF16:
        for (size_t i = 0; i < cols; i++) write_u16(out + 2 * i, nl_f32_to_bf16(src[i]));
        return;
    case NL_DTYPE_Q8_0:
        for (size_t b = 0; b < cols / NL_QBLOCK; b++) q8_0_block(out + b * NL_Q8_0_BYTES, src + b * NL_QBLOCK);
        return;
    case NL_DTYPE_Q4_0:
        for (size_t b = 0; b < cols / NL_QBLOCK; b++) q4_0_block(out + b * NL_Q4_0_BYTES, src + b * NL_QBLOCK);
        return;
    default: return;
    }
}

void nl_dtype_to_f32(float *dst, const void *src, size_t cols, NlDType type) {
    const unsigned char *in = src;
    switch (type) {
    case NL_DTYPE_F32: memcpy(dst, src, cols * sizeof(float)); return;
    case NL_DTYPE_F16:
        for (size_t i = 0; i < cols; i++) dst[i] = nl_f16_to_f32(read_u16(in + 2 * i));
        return;
    case NL_DTYPE_BF16:
        for (size_t i = 0; i < cols; i++) dst[i] = nl_bf16_to_f32(read_u16(in + 2 * i));
        return;
    case NL_DTYPE_Q8_0:
        for (size_t b = 0; b < cols / NL_QBLOCK; b++, in += NL_Q8_0_BYTES, dst += NL_QBLOCK) {
            float d = nl_f16_to_f32(read_u16(in));
            for (int j = 0; j < NL_QBLOCK; j++) dst[j] = (float)(int8_t)in[2 + j] * d;
        }
        return;
    case NL_DTYPE_Q4_0:
        for (size_t b = 0; b < cols / NL_QBLOCK; b++, in += NL_Q4_0_BYTES, dst += NL_QBLOCK) {
            float d = nl_f16_to_f32(read_u16(in));
            for (int j = 0; j < NL_QBLOCK / 2; j++) {
                dst[j] = (float)((in[2 + j] & 0x0f) - 8) * d;
                dst[j + NL_QBLOCK / 2] = (float)((in[2 + j] >> 4) - 8) * d;
            }
        }
        return;
    default: return;
    }
}

float nl_dtype_scale(const void *data, NlDType type, size_t block) {
    return nl_f16_to_f32(read_u16((const unsigned char *)data + block * nl_dtype_block_bytes(type)));
}

static int f16_nonfinite(uint16_t h) { return (h & 0x7c00u) == 0x7c00u; }
static int bf16_nonfinite(uint16_t h) { return (h & 0x7f80u) == 0x7f80u; }

size_t nl_dtype_first_nonfinite(const void *data, size_t rows, size_t cols, NlDType type) {
    const unsigned char *p = data;
    size_t n = rows * cols;
    switch (type) {
    case NL_DTYPE_F32:
        for (size_t i = 0; i < n; i++)
            if ((bits_of(((const float *)data)[i]) & 0x7f800000u) == 0x7f800000u) return i;
        return SIZE_MAX;
    case NL_DTYPE_F16:
    case NL_DTYPE_BF16:
        for (size_t i = 0; i < n; i++)
            if (type == NL_DTYPE_F16 ? f16_nonfinite(read_u16(p + 2 * i)) : bf16_nonfinite(read_u16(p + 2 * i)))
                return i;
        return SIZE_MAX;
    case NL_DTYPE_Q8_0:
    case NL_DTYPE_Q4_0: {
        size_t bytes = nl_dtype_block_bytes(type);
        for (size_t b = 0; b < n / NL_QBLOCK; b++)
            if (f16_nonfinite(read_u16(p + b * bytes))) return b * NL_QBLOCK;
        return SIZE_MAX;
    }
    default: return 0;
    }
}

void nl_weight_rows(float *dst, NlWeight w, size_t row0, size_t rows, size_t cols) {
    size_t row_bytes = nl_dtype_row_bytes(w.type, cols);
    const unsigned char *src = (const unsigned char *)w.data + row0 * row_bytes;
    if (w.type == NL_DTYPE_F32) {
        memcpy(dst, src, rows * cols * sizeof(float));
        return;
    }
    for (size_t r = 0; r < rows; r++) nl_dtype_to_f32(dst + r * cols, src + r * row_bytes, cols, w.type);
}

size_t nl_weight_bytes(NlDType type, size_t rows, size_t cols) { return rows * nl_dtype_row_bytes(type, cols); }

void nl_weight_store_rows(void *dst, const float *src, size_t rows, size_t cols, NlDType type) {
    size_t row_bytes = nl_dtype_row_bytes(type, cols);
    for (size_t r = 0; r < rows; r++)
        nl_dtype_from_f32((unsigned char *)dst + r * row_bytes, src + r * cols, cols, type);
}

// ---- ggml's block types normlab widens (read only)

static float f16_at(const unsigned char *p) { return nl_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

// The fifth bit of a Q5_0 or Q5_1 block's weight i (0..31): bit i of the 4 bytes qh, as 16 or 0.
static int fifth_bit(const unsigned char *qh, int i) { return (qh[i / 8] >> (i % 8) & 1) << 4; }

// Q4_1 (d, m, 16 bytes of nibbles), Q5_0 (d, 4 bytes of fifth bits, nibbles) and Q5_1 (d, m, fifth
// bits, nibbles): weight j (low nibble) and j + 16 (high) of a block of 32, x = q d (+ m), Q5_0's q - 16.
static void q4_1(float *y, const unsigned char *b) {
    float d = f16_at(b), m = f16_at(b + 2);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)(b[4 + j] & 0xF) * d + m;
        y[j + 16] = (float)(b[4 + j] >> 4) * d + m;
    }
}
static void q5_0(float *y, const unsigned char *b) {
    float d = f16_at(b);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)(((b[6 + j] & 0xF) | fifth_bit(b + 2, j)) - 16) * d;
        y[j + 16] = (float)(((b[6 + j] >> 4) | fifth_bit(b + 2, j + 16)) - 16) * d;
    }
}
static void q5_1(float *y, const unsigned char *b) {
    float d = f16_at(b), m = f16_at(b + 2);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)((b[8 + j] & 0xF) | fifth_bit(b + 4, j)) * d + m;
        y[j + 16] = (float)((b[8 + j] >> 4) | fifth_bit(b + 4, j + 16)) * d + m;
    }
}

// Q2_K (16 bytes of 4-bit scale and min pairs, 64 of 2-bit quants, d, dmin): 16 sub-blocks of 16, each
// weight (d sc) q - (dmin m); weight 128 n + 32 j + l is bits 2j of quant byte 32 n + l.
static void q2_k(float *y, const unsigned char *b) {
    float d = f16_at(b + 80), dmin = f16_at(b + 82);
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                unsigned sc = b[8 * n + 2 * j + l / 16];
                float dl = d * (float)(sc & 0xF), ml = dmin * (float)(sc >> 4);
                *y++ = dl * (float)(b[16 + 32 * n + l] >> 2 * j & 3) - ml;
            }
}

// Q3_K's 16 6-bit scales of its 12 packed bytes s: low nibbles from s[0..7], high pairs from s[8..11].
static void q3_k_scales(int scale[16], const unsigned char *s) {
    for (int k = 0; k < 4; k++) {
        scale[k] = (s[k] & 0xF) | (s[8 + k] & 3) << 4;
        scale[4 + k] = (s[4 + k] & 0xF) | (s[8 + k] >> 2 & 3) << 4;
        scale[8 + k] = (s[k] >> 4) | (s[8 + k] >> 4 & 3) << 4;
        scale[12 + k] = (s[4 + k] >> 4) | (s[8 + k] >> 6 & 3) << 4;
    }
}

// Q3_K (32 bytes of high bits, 64 of 2-bit quants, 12 of scales, d): 16 sub-blocks of 16, each weight
// (d (sc - 32)) (q - 4 unless its high bit is set); weight 128 n + 32 j + l: bits 2j of quant byte
// 32 n + l, bit 4 n + j of high byte l.
static void q3_k(float *y, const unsigned char *b) {
    int scale[16];
    q3_k_scales(scale, b + 96);
    float d = f16_at(b + 108);
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                float dl = d * (float)(scale[8 * n + 2 * j + l / 16] - 32);
                int q = (b[32 + 32 * n + l] >> 2 * j & 3) - (b[l] >> (4 * n + j) & 1 ? 0 : 4);
                *y++ = dl * (float)q;
            }
}

// Sub-block j's 6-bit scale and min of the 12 packed bytes q (ggml's get_scale_min_k4).
static void scale_min(int j, const unsigned char *q, unsigned *scale, unsigned *min) {
    if (j < 4) {
        *scale = q[j] & 63u;
        *min = q[j + 4] & 63u;
    } else {
        *scale = (q[j + 4] & 0xFu) | (unsigned)(q[j - 4] >> 6) << 4;
        *min = (unsigned)(q[j + 4] >> 4) | (unsigned)(q[j] >> 6) << 4;
    }
}

// One Q4_K or Q5_K super-block (high: Q5_K's fifth bits, else NULL): 4 pairs of sub-blocks of 32, each
// weight d sc q - dmin m.
static void q45_k(float *y, const unsigned char *b, const unsigned char *qs, const unsigned char *high) {
    float d = f16_at(b), dmin = f16_at(b + 2);
    for (int j = 0; j < 4; j++, qs += 32) {
        unsigned sc[2], m[2];
        scale_min(2 * j, b + 4, &sc[0], &m[0]);
        scale_min(2 * j + 1, b + 4, &sc[1], &m[1]);
        for (int h = 0; h < 2; h++) {
            float dh = d * (float)sc[h], mh = dmin * (float)m[h];
            for (int l = 0; l < 32; l++) {
                unsigned q = (h ? qs[l] >> 4 : qs[l] & 0xFu) + (high && (high[l] >> (2 * j + h) & 1) ? 16u : 0u);
                *y++ = dh * (float)q - mh;
            }
        }
    }
}
static void q4_k(float *y, const unsigned char *b) { q45_k(y, b, b + 16, NULL); }
static void q5_k(float *y, const unsigned char *b) { q45_k(y, b, b + 48, b + 16); }

// One Q6_K super-block: 2 halves of 128, each weight d scale q with q in [-32, 31].
static void q6_k(float *y, const unsigned char *b) {
    const unsigned char *ql = b, *qh = b + 128;
    const signed char *sc = (const signed char *)(b + 192);
    float d = f16_at(b + 208);
    for (int n = 0; n < 2; n++, y += 128, ql += 64, qh += 32, sc += 8)
        for (int l = 0; l < 32; l++) {
            int is = l / 16,
                q[4] = {(ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4, (ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4,
                        (ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4, (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4};
            for (int k = 0; k < 4; k++) y[l + 32 * k] = d * (float)sc[is + 2 * k] * (float)(q[k] - 32);
        }
}

static const struct {
    size_t weights, bytes;
    void (*widen)(float *y, const unsigned char *block);
} GGML_BLOCKS[] = {
    [NL_GQ_Q4_1] = {32, 20, q4_1},   [NL_GQ_Q5_0] = {32, 22, q5_0},   [NL_GQ_Q5_1] = {32, 24, q5_1},
    [NL_GQ_Q2_K] = {256, 84, q2_k},  [NL_GQ_Q3_K] = {256, 110, q3_k}, [NL_GQ_Q4_K] = {256, 144, q4_k},
    [NL_GQ_Q5_K] = {256, 176, q5_k}, [NL_GQ_Q6_K] = {256, 210, q6_k},
};

void nl_ggml_block_to_f32(float *dst, const void *src, size_t n, NlGgmlBlock type) {
    const unsigned char *b = src;
    size_t weights = GGML_BLOCKS[type].weights;
    for (size_t i = 0; i < n / weights; i++, b += GGML_BLOCKS[type].bytes, dst += weights)
        GGML_BLOCKS[type].widen(dst, b);
}
