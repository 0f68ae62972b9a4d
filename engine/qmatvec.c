// qmatvec.c — a few rows times a weight stored as F16, BF16, Q8_0 or Q4_0 (qmatvec.h), on the
// scalar path or, picked at run time, AVX2 (with FMA and F16C) or AVX-512 (qmatvec_lanes.h, written
// once for both widths).
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
// ---- the vector paths (qmatvec_lanes.h): qmatvec_8 (AVX2, FMA, F16C) and qmatvec_16 (AVX-512)
#define QM_LANES 8
#define QM_ATTR __attribute__((target("avx2,fma,f16c")))
#include "qmatvec_lanes.h"
#undef QM_ATTR
#undef QM_LANES
#define QM_LANES 16
#define QM_ATTR __attribute__((target("avx512f,f16c")))
#include "qmatvec_lanes.h"
#undef QM_ATTR
#undef QM_LANES
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
        qmatvec_16(y, ldy, w, row_bytes, type, x, nr, n_in, lo, hi);
        return;
    }
    if (path == NL_QPATH_AVX2) {
        qmatvec_8(y, ldy, w, row_bytes, type, x, nr, n_in, lo, hi);
        return;
    }
#endif
    (void)path;
    qmatvec_scalar(y, ldy, w, row_bytes, type, x, nr, n_in, lo, hi);
}

void nl_qwiden(float *dst, const void *w, NlDType type, size_t row0, size_t rows, size_t n_in, NlQPath path) {
    size_t row_bytes = nl_dtype_row_bytes(type, n_in);
    const unsigned char *from = (const unsigned char *)w + row0 * row_bytes;
#ifdef NL_QMATVEC_X86
    if (path == NL_QPATH_AVX512) {
        qwiden_16(dst, from, row_bytes, type, rows, n_in);
        return;
    }
    if (path == NL_QPATH_AVX2) {
        qwiden_8(dst, from, row_bytes, type, rows, n_in);
        return;
    }
#endif
    (void)path;
    for (size_t r = 0; r < rows; r++) nl_dtype_to_f32(dst + r * n_in, from + r * row_bytes, n_in, type);
}
