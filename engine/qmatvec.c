// qmatvec.c — a few rows times a weight stored as F16, BF16, Q8_0 or Q4_0 (qmatvec.h), on the
// scalar path or, picked at run time, AVX2 (with FMA and F16C) or AVX-512. A weight row is taken 32
// weights at a time (a block of Q8_0 or Q4_0, or 32 16-bit floats), widened once to floats and
// multiplied into every row of x; a block's sum is scaled by its d and added to the output's sum,
// blocks alternating between two partial sums (even and odd), which are added at the end.
#include "qmatvec.h"

#include <string.h>

#include "dtype.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NL_QMATVEC_X86 1
#endif

static uint16_t u16_at(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

// ---- the scalar path: the definition the others are held to

// w . x for one row of n_in weights stored as type: per block of 32, sum (q_j x_j) in order, times d;
// the 16-bit types one sum in order.
static float dot_scalar(const unsigned char *w, NlDType type, const float *x, size_t n_in) {
    float sum = 0.0f;
    if (type == NL_DTYPE_F16 || type == NL_DTYPE_BF16) {
        for (size_t i = 0; i < n_in; i++) {
            uint16_t h = u16_at(w + 2 * i);
            sum += (type == NL_DTYPE_F16 ? nl_f16_to_f32(h) : nl_bf16_to_f32(h)) * x[i];
        }
        return sum;
    }
    size_t bytes = nl_dtype_block_bytes(type);
    for (size_t b = 0; b < n_in / NL_QBLOCK; b++, w += bytes, x += NL_QBLOCK) {
        float s = 0.0f;
        if (type == NL_DTYPE_Q8_0)
            for (int j = 0; j < NL_QBLOCK; j++) s += (float)(int8_t)w[2 + j] * x[j];
        else
            for (int j = 0; j < NL_QBLOCK / 2; j++)
                s += (float)((w[2 + j] & 0x0f) - 8) * x[j] + (float)((w[2 + j] >> 4) - 8) * x[j + NL_QBLOCK / 2];
        sum += nl_f16_to_f32(u16_at(w)) * s;
    }
    return sum;
}

static void qmatvec_scalar(float *y, size_t ldy, const unsigned char *w, size_t row_bytes, NlDType type, const float *x,
                           size_t nr, size_t n_in, size_t lo, size_t hi) {
    for (size_t o = lo; o < hi; o++)
        for (size_t r = 0; r < nr; r++) y[r * ldy + o] = dot_scalar(w + o * row_bytes, type, x + r * n_in, n_in);
}

#ifdef NL_QMATVEC_X86

// ---- AVX2 with FMA and F16C: a block as four vectors of 8 floats

#define AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

// The 32 weights of block b of a row (unscaled: q, or the 16-bit floats) into w[0..4); returns d (1
// for the 16-bit types).
AVX2 float widen_avx2(const unsigned char *row, size_t b, NlDType type, __m256 w[4]) {
    if (type == NL_DTYPE_F16) {
        const unsigned char *p = row + b * 64;
        for (int k = 0; k < 4; k++)
            w[k] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k)));
        return 1.0f;
    }
    if (type == NL_DTYPE_BF16) {
        const unsigned char *p = row + b * 64;
        for (int k = 0; k < 4; k++) {
            __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k)));
            w[k] = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
        }
        return 1.0f;
    }
    if (type == NL_DTYPE_Q8_0) {
        const unsigned char *p = row + b * NL_Q8_0_BYTES;
        for (int k = 0; k < 4; k++)
            w[k] = _mm256_cvtepi32_ps(
                _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p + 2 + 8 * k))));
        return _cvtsh_ss(u16_at(p));
    }
    const unsigned char *p = row + b * NL_Q4_0_BYTES;
    __m128i bytes = _mm_loadu_si128((const __m128i *)(const void *)(p + 2)), mask = _mm_set1_epi8(0x0f);
    __m128i eight = _mm_set1_epi8(8);
    __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, mask), eight);
    __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), mask), eight);
    w[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    w[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    w[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    w[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
    return _cvtsh_ss(u16_at(p));
}

AVX2 float hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// One output for NR rows of x (NR a constant at each call: the partial sums stay in registers).
AVX2 void dot_rows_avx2(float *y, size_t ldy, const unsigned char *row, NlDType type, const float *x, size_t n_in,
                        const int NR) {
    __m256 acc[NL_QMATVEC_ROWS][2];
    for (int r = 0; r < NR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    size_t blocks = n_in / 32;
    for (size_t b = 0; b < blocks; b++) {
        __m256 w[4];
        float d = widen_avx2(row, b, type, w);
        for (int r = 0; r < NR; r++) {
            const float *xr = x + (size_t)r * n_in + b * 32;
            __m256 s = _mm256_mul_ps(w[0], _mm256_loadu_ps(xr));
            s = _mm256_fmadd_ps(w[1], _mm256_loadu_ps(xr + 8), s);
            s = _mm256_fmadd_ps(w[2], _mm256_loadu_ps(xr + 16), s);
            s = _mm256_fmadd_ps(w[3], _mm256_loadu_ps(xr + 24), s);
            acc[r][b & 1] = _mm256_fmadd_ps(_mm256_set1_ps(d), s, acc[r][b & 1]);
        }
    }
    for (int r = 0; r < NR; r++) {
        float sum = hsum_avx2(_mm256_add_ps(acc[r][0], acc[r][1]));
        const float *xr = x + (size_t)r * n_in;
        for (size_t i = blocks * 32; i < n_in; i++) {  // a 16-bit row's last weights, past whole blocks of 32
            uint16_t h = u16_at(row + 2 * i);
            sum += (type == NL_DTYPE_F16 ? _cvtsh_ss(h) : nl_bf16_to_f32(h)) * xr[i];
        }
        y[(size_t)r * ldy] = sum;
    }
}

__attribute__((target("avx2,fma,f16c"))) static void qmatvec_avx2(float *y, size_t ldy, const unsigned char *w,
                                                                  size_t row_bytes, NlDType type, const float *x,
                                                                  size_t nr, size_t n_in, size_t lo, size_t hi) {
    for (size_t o = lo; o < hi; o++) {
        const unsigned char *row = w + o * row_bytes;
        switch (nr) {
        case 1: dot_rows_avx2(y + o, ldy, row, type, x, n_in, 1); break;
        case 2: dot_rows_avx2(y + o, ldy, row, type, x, n_in, 2); break;
        case 3: dot_rows_avx2(y + o, ldy, row, type, x, n_in, 3); break;
        default: dot_rows_avx2(y + o, ldy, row, type, x, n_in, 4); break;
        }
    }
}

// ---- AVX-512: a block as two vectors of 16 floats

#define AVX512 __attribute__((target("avx512f,f16c"), always_inline)) static inline

AVX512 float widen_avx512(const unsigned char *row, size_t b, NlDType type, __m512 w[2]) {
    if (type == NL_DTYPE_F16) {
        const unsigned char *p = row + b * 64;
        for (int k = 0; k < 2; k++)
            w[k] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * k)));
        return 1.0f;
    }
    if (type == NL_DTYPE_BF16) {
        const unsigned char *p = row + b * 64;
        for (int k = 0; k < 2; k++) {
            __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * k)));
            w[k] = _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
        }
        return 1.0f;
    }
    if (type == NL_DTYPE_Q8_0) {
        const unsigned char *p = row + b * NL_Q8_0_BYTES;
        for (int k = 0; k < 2; k++)
            w[k] = _mm512_cvtepi32_ps(
                _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p + 2 + 16 * k))));
        return _cvtsh_ss(u16_at(p));
    }
    const unsigned char *p = row + b * NL_Q4_0_BYTES;
    __m128i bytes = _mm_loadu_si128((const __m128i *)(const void *)(p + 2)), mask = _mm_set1_epi8(0x0f);
    __m128i eight = _mm_set1_epi8(8);
    w[0] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_sub_epi8(_mm_and_si128(bytes, mask), eight)));
    w[1] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), mask), eight)));
    return _cvtsh_ss(u16_at(p));
}

AVX512 void dot_rows_avx512(float *y, size_t ldy, const unsigned char *row, NlDType type, const float *x, size_t n_in,
                            const int NR) {
    __m512 acc[NL_QMATVEC_ROWS][2];
    for (int r = 0; r < NR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    size_t blocks = n_in / 32;
    for (size_t b = 0; b < blocks; b++) {
        __m512 w[2];
        float d = widen_avx512(row, b, type, w);
        for (int r = 0; r < NR; r++) {
            const float *xr = x + (size_t)r * n_in + b * 32;
            __m512 s = _mm512_mul_ps(w[0], _mm512_loadu_ps(xr));
            s = _mm512_fmadd_ps(w[1], _mm512_loadu_ps(xr + 16), s);
            acc[r][b & 1] = _mm512_fmadd_ps(_mm512_set1_ps(d), s, acc[r][b & 1]);
        }
    }
    for (int r = 0; r < NR; r++) {
        float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]));
        const float *xr = x + (size_t)r * n_in;
        for (size_t i = blocks * 32; i < n_in; i++) {
            uint16_t h = u16_at(row + 2 * i);
            sum += (type == NL_DTYPE_F16 ? _cvtsh_ss(h) : nl_bf16_to_f32(h)) * xr[i];
        }
        y[(size_t)r * ldy] = sum;
    }
}

__attribute__((target("avx512f,f16c"))) static void qmatvec_avx512(float *y, size_t ldy, const unsigned char *w,
                                                                   size_t row_bytes, NlDType type, const float *x,
                                                                   size_t nr, size_t n_in, size_t lo, size_t hi) {
    for (size_t o = lo; o < hi; o++) {
        const unsigned char *row = w + o * row_bytes;
        switch (nr) {
        case 1: dot_rows_avx512(y + o, ldy, row, type, x, n_in, 1); break;
        case 2: dot_rows_avx512(y + o, ldy, row, type, x, n_in, 2); break;
        case 3: dot_rows_avx512(y + o, ldy, row, type, x, n_in, 3); break;
        default: dot_rows_avx512(y + o, ldy, row, type, x, n_in, 4); break;
        }
    }
}

#endif

// (libgcc's reading of cpuid, made once when the process starts: a few loads a call)
int nl_qpath_supported(NlQPath path) {
#ifdef NL_QMATVEC_X86
    __builtin_cpu_init();
    if (path == NL_QPATH_AVX2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    if (path == NL_QPATH_AVX512) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("f16c");
#endif
    return path == NL_QPATH_SCALAR;
}

NlQPath nl_qpath_best(void) {
    if (nl_qpath_supported(NL_QPATH_AVX512)) return NL_QPATH_AVX512;
    return nl_qpath_supported(NL_QPATH_AVX2) ? NL_QPATH_AVX2 : NL_QPATH_SCALAR;
}

const char *nl_qpath_name(NlQPath path) {
    static const char *const NAMES[] = {"scalar", "avx2", "avx512"};
    return (unsigned)path < NL_QPATH_COUNT ? NAMES[path] : "?";
}

void nl_qmatvec(float *y, size_t ldy, const void *w, NlDType type, const float *x, size_t nr, size_t n_in, size_t lo,
                size_t hi, NlQPath path) {
    size_t row_bytes = nl_dtype_row_bytes(type, n_in);
#ifdef NL_QMATVEC_X86
    if (path == NL_QPATH_AVX512) {
        qmatvec_avx512(y, ldy, w, row_bytes, type, x, nr, n_in, lo, hi);
        return;
    }
    if (path == NL_QPATH_AVX2) {
        qmatvec_avx2(y, ldy, w, row_bytes, type, x, nr, n_in, lo, hi);
        return;
    }
#endif
    (void)path;
    qmatvec_scalar(y, ldy, w, row_bytes, type, x, nr, n_in, lo, hi);
}
