// test_dtype.c — the storage types (engine/dtype.c) and their products (engine/qmatvec.c, linear.c):
// F16 against the CPU's own conversion (F16C) and round trips, BF16 against its definition, Q8_0 and
// Q4_0 against the properties of ggml's reference rules (tests/quant_test.py holds the bytes to an
// independent numpy writing of them), the non-finite scan, and every kernel path against a double
// product of the widened weights, against the scalar path, and against itself split and batched.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "check.h"
#include "dtype.h"
#include "linear.h"
#include "qmatvec.h"

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }
static float uniform(uint32_t *s) { return (float)(lcg(s) >> 8) / 16777216.0f - 0.5f; }

static float float_of(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("f16c"))) static uint16_t f16c_of(float x) { return (uint16_t)_cvtss_sh(x, 0); }
#endif

static void f16_matches_the_cpu_and_round_trips(void) {
    // Exact values: the largest half, the first float that rounds to infinity (65520, a tie to even
    // above 65504), the smallest subnormal, ties at the subnormal step (2^-25 to 0, 3 2^-25 to 2^-23).
    CHECK(nl_f32_to_f16(65504.0f) == 0x7bff && nl_f32_to_f16(65519.99f) == 0x7bff, "65504 is the largest half");
    CHECK(nl_f32_to_f16(65520.0f) == 0x7c00 && nl_f32_to_f16(-1e9f) == 0xfc00, "65520 and beyond are infinite");
    CHECK(nl_f32_to_f16(0x1p-24f) == 0x0001 && nl_f32_to_f16(0x1p-25f) == 0x0000 && nl_f32_to_f16(0x3p-25f) == 0x0002,
          "subnormal ties go to even");
    CHECK(nl_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00 && nl_f32_to_f16(1.0f + 0x3p-11f) == 0x3c02, "normal ties to even");
    CHECK((nl_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (nl_f32_to_f16(NAN) & 0x3ff) != 0, "a NaN stays a NaN");
    size_t bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {  // every half that is not a NaN comes back exactly
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
        bad += nl_f32_to_f16(nl_f16_to_f32((uint16_t)h)) != h;
    }
    CHECK(bad == 0, "%zu halves do not round-trip", bad);
    CHECK(nl_f16_to_f32(0x0001) == 0x1p-24f && nl_f16_to_f32(0x8400) == -0x1p-14f &&
              nl_f16_to_f32(0x3555) == 0x1.554p-2f,
          "halves widen exactly");
#if defined(__x86_64__) && defined(__GNUC__)
    if (!__builtin_cpu_supports("f16c")) return;
    size_t differ = 0, tried = 0;
    for (uint64_t u = 0; u < 0x100000000ull; u += 4093) {  // a million floats of every exponent, both signs
        float x = float_of((uint32_t)u);
        if (isnan(x)) continue;
        tried++;
        differ += nl_f32_to_f16(x) != f16c_of(x);
    }
    CHECK(differ == 0, "%zu of %zu floats convert otherwise than F16C's vcvtps2ph", differ, tried);
#endif
}

// The bfloat16 nearest to x, ties to even, by its definition: the candidates around x compared in double.
static uint16_t bf16_by_definition(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    double dl = fabs((double)x - nl_bf16_to_f32(lo)), dh = fabs((double)x - nl_bf16_to_f32(hi));
    if (dl != dh) return dl < dh ? lo : hi;
    return (lo & 1) ? hi : lo;
}

static void bf16_rounds_to_nearest_even(void) {
    uint32_t s = 1;
    size_t differ = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = lcg(&s);
        float x = float_of(u);
        if (!isfinite(x) || fabsf(x) > 3.3e38f) continue;  // (the largest bfloat16's neighbourhood rounds to inf)
        if (i % 3 == 0) u = (u & 0xffff0000u) | 0x8000u, x = float_of(u);  // ties
        differ += nl_f32_to_bf16(x) != bf16_by_definition(x);
    }
    CHECK(differ == 0, "%zu floats round otherwise than the nearest bfloat16 (ties to even)", differ);
    CHECK(nl_bf16_to_f32(nl_f32_to_bf16(1.5f)) == 1.5f && (nl_f32_to_bf16(NAN) & 0x7f) != 0, "exact values; NaN");
}

// A NaN whose high mantissa bits are 0 (only the low 16, which bf16 drops, are set) is still a
// bf16 NaN, never an infinity of its sign, and widens back to a NaN.
static void bf16_keeps_nan_with_low_mantissa(void) {
    static const uint32_t NANS[] = {0x7f800001u, 0xff800001u, 0x7f80ffffu, 0xff808000u};
    for (size_t i = 0; i < sizeof NANS / sizeof NANS[0]; i++) {
        uint16_t h = nl_f32_to_bf16(float_of(NANS[i]));
        CHECK((h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0 && isnan(nl_bf16_to_f32(h)) &&
                  (h & 0x8000u) == ((NANS[i] >> 16) & 0x8000u),
              "float bits 0x%08x: bf16 0x%04x is not a NaN of the same sign", (unsigned)NANS[i], (unsigned)h);
    }
}

// Q8_0: d is amax / 127 stored as F16, each weight within d/2 of q d (d as float), q in [-127, 127].
// Q4_0: d is max / -8 with max the largest in magnitude, which comes back as -8 d, each weight
// within |d|/2 of (nibble - 8) d but where it clamps at 15 (7 d, the top of the range).
static void blocks_keep_ggml_rules(void) {
    uint32_t s = 7;
    float x[NL_QBLOCK * 4], back[NL_QBLOCK * 4];
    unsigned char q8[NL_Q8_0_BYTES * 4], q4[NL_Q4_0_BYTES * 4];
    for (int trial = 0; trial < 200; trial++) {
        float scale = trial % 5 == 0 ? 1e-3f : trial % 5 == 1 ? 30.0f : 1.0f;
        for (int i = 0; i < NL_QBLOCK * 4; i++) x[i] = uniform(&s) * scale;
        if (trial % 7 == 0) memset(x + NL_QBLOCK, 0, NL_QBLOCK * sizeof *x);  // an all-zero block
        nl_dtype_from_f32(q8, x, NL_QBLOCK * 4, NL_DTYPE_Q8_0);
        nl_dtype_to_f32(back, q8, NL_QBLOCK * 4, NL_DTYPE_Q8_0);
        for (int b = 0; b < 4; b++) {
            float amax = 0.0f, d = nl_dtype_scale(q8, NL_DTYPE_Q8_0, (size_t)b);
            for (int j = 0; j < NL_QBLOCK; j++) amax = fmaxf(amax, fabsf(x[b * NL_QBLOCK + j]));
            CHECK(d == nl_f16_to_f32(nl_f32_to_f16(amax / 127.0f)), "q8_0 block %d: d %g for amax %g", b, d, amax);
            for (int j = 0; j < NL_QBLOCK; j++) {
                // q = round(x / d) with d in float; the weight comes back as q times d's F16, off by |q| <= 127
                // times that rounding: err <= d/2 + 127 |F16(d) - d| (and a float rounding of each product)
                float df = amax / 127.0f, err = fabsf(back[b * NL_QBLOCK + j] - x[b * NL_QBLOCK + j]);
                if (!(err <= (0.5f * df + 127.0f * fabsf(d - df)) * 1.001f + 1e-30f)) {
                    CHECK(0, "q8_0 trial %d block %d weight %d: %g from %g", trial, b, j, back[b * NL_QBLOCK + j],
                          x[b * NL_QBLOCK + j]);
                    return;
                }
            }
        }
        nl_dtype_from_f32(q4, x, NL_QBLOCK * 4, NL_DTYPE_Q4_0);
        nl_dtype_to_f32(back, q4, NL_QBLOCK * 4, NL_DTYPE_Q4_0);
        for (int b = 0; b < 4; b++) {
            float amax = 0.0f, max = 0.0f, d = nl_dtype_scale(q4, NL_DTYPE_Q4_0, (size_t)b);
            for (int j = 0; j < NL_QBLOCK; j++)
                if (amax < fabsf(x[b * NL_QBLOCK + j])) amax = fabsf(x[b * NL_QBLOCK + j]), max = x[b * NL_QBLOCK + j];
            CHECK(d == nl_f16_to_f32(nl_f32_to_f16(max / -8.0f)), "q4_0 block %d: d %g for max %g", b, d, max);
            for (int j = 0; j < NL_QBLOCK; j++) {
                // the same with |nibble - 8| <= 8, where the nibble is not clamped at 15 (x / d above 7.5)
                float v = x[b * NL_QBLOCK + j], got = back[b * NL_QBLOCK + j], df = max / -8.0f;
                int clamped = df != 0.0f && v / df > 7.5f;
                float err = fabsf(got - (clamped ? 7.0f * d : v));
                if (!(err <= (0.5f * fabsf(df) + 8.0f * fabsf(d - df)) * 1.001f + 1e-30f)) {
                    CHECK(0, "q4_0 trial %d block %d weight %d: %g from %g (d %g)", trial, b, j, got, v, d);
                    return;
                }
            }
        }
    }
    float zero[NL_QBLOCK] = {0};
    nl_dtype_from_f32(q4, zero, NL_QBLOCK, NL_DTYPE_Q4_0);
    nl_dtype_from_f32(q8, zero, NL_QBLOCK, NL_DTYPE_Q8_0);
    CHECK(q4[0] == 0 && q4[1] == 0x80 && q4[2] == 0x88 && q4[17] == 0x88,
          "a zero block: d -0 (0 / -8), every nibble 8");
    CHECK(q8[0] == 0 && q8[1] == 0 && q8[2] == 0 && q8[33] == 0, "a zero block: d 0, every q 0");
    CHECK(nl_dtype_row_bytes(NL_DTYPE_Q8_0, 64) == 68 && nl_dtype_row_bytes(NL_DTYPE_Q4_0, 64) == 36 &&
              nl_dtype_row_bytes(NL_DTYPE_Q4_0, 48) == 0 && nl_dtype_row_bytes(NL_DTYPE_F16, 33) == 66,
          "row bytes");
}

static void nonfinite_scan_reads_each_type(void) {
    float x[96];
    uint32_t s = 3;
    for (int i = 0; i < 96; i++) x[i] = uniform(&s);
    unsigned char buf[96 * 4];
    for (NlDType t = NL_DTYPE_F32; t < NL_DTYPE_COUNT; t++) {
        nl_dtype_from_f32(buf, x, 96, t);
        CHECK(nl_dtype_first_nonfinite(buf, 3, 32, t) == SIZE_MAX, "%s: all finite", nl_name(NL_NAMES_DTYPE, t));
    }
    nl_dtype_from_f32(buf, x, 96, NL_DTYPE_F16);
    buf[2 * 41] = 0x00, buf[2 * 41 + 1] = 0x7e;  // weight 41: a NaN
    CHECK(nl_dtype_first_nonfinite(buf, 3, 32, NL_DTYPE_F16) == 41, "f16: the NaN at 41");
    nl_dtype_from_f32(buf, x, 96, NL_DTYPE_BF16);
    buf[2 * 70] = 0x80, buf[2 * 70 + 1] = 0xff;  // weight 70: -inf
    CHECK(nl_dtype_first_nonfinite(buf, 3, 32, NL_DTYPE_BF16) == 70, "bf16: the infinity at 70");
    nl_dtype_from_f32(buf, x, 96, NL_DTYPE_Q4_0);
    buf[2 * NL_Q4_0_BYTES] = 0x00, buf[2 * NL_Q4_0_BYTES + 1] = 0x7c;  // block 2's scale: +inf
    CHECK(nl_dtype_first_nonfinite(buf, 3, 32, NL_DTYPE_Q4_0) == 64, "q4_0: block 2's scale (weight 64)");
    nl_dtype_from_f32(buf, x, 96, NL_DTYPE_Q8_0);
    buf[NL_Q8_0_BYTES + 1] = 0xfe;  // block 1's scale: a NaN
    CHECK(nl_dtype_first_nonfinite(buf, 3, 32, NL_DTYPE_Q8_0) == 32, "q8_0: block 1's scale (weight 32)");
}

// A matrix (n_out, n_in) of random weights stored as type, and its widened values.
typedef struct {
    unsigned char *stored;
    float *widened;
} Stored;

static Stored make_stored(NlDType t, size_t n_out, size_t n_in, uint32_t seed) {
    Stored m = {malloc(n_out * n_in * 4 + 64), malloc(n_out * n_in * sizeof(float))};
    float *row = malloc(n_in * sizeof *row);
    size_t rb = nl_dtype_row_bytes(t, n_in);
    for (size_t o = 0; m.stored && m.widened && row && o < n_out; o++) {
        for (size_t i = 0; i < n_in; i++) row[i] = uniform(&seed) * (o % 3 ? 1.0f : 8.0f);
        nl_dtype_from_f32(m.stored + o * rb, row, n_in, t);
    }
    if (m.stored && m.widened) nl_weight_rows(m.widened, (NlWeight){m.stored, t}, 0, n_out, n_in);
    free(row);
    return m;
}

// Within the worst case of float sums of n_in products in any order: |y - exact| <= 1.01 n_in 2^-24 sum |w x|
// (Higham's gamma_n bound for recursive summation; the blocks' scaling adds one rounding each).
static size_t outside_bound(const float *y, size_t ldy, const Stored *m, const float *x, size_t nr, size_t n_out,
                            size_t n_in) {
    size_t bad = 0;
    for (size_t r = 0; r < nr; r++)
        for (size_t o = 0; o < n_out; o++) {
            double exact = 0.0, mag = 0.0;
            for (size_t i = 0; i < n_in; i++) {
                exact += (double)m->widened[o * n_in + i] * x[r * n_in + i];
                mag += fabs((double)m->widened[o * n_in + i] * x[r * n_in + i]);
            }
            double bound = 1.01 * (double)(n_in + 2) * 0x1p-24 * mag + 1e-30;
            bad += fabs((double)y[r * ldy + o] - exact) > bound;
        }
    return bad;
}

static void kernels_match_the_widened_product(void) {
    const size_t shapes[][2] = {{1, 32}, {17, 64}, {40, 96}, {64, 768}, {3, 2048}, {33, 100}, {5, 7}};
    for (NlDType t = NL_DTYPE_F16; t < NL_DTYPE_COUNT; t++)
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            size_t n_out = shapes[k][0], n_in = shapes[k][1];
            if (!nl_dtype_row_bytes(t, n_in)) continue;  // (blocks: whole rows of 32 only)
            Stored m = make_stored(t, n_out, n_in, 11u + (uint32_t)k);
            float *x = malloc(NL_QMATVEC_ROWS * n_in * sizeof *x), *y[NL_QPATH_COUNT],
                  *one = malloc(n_out * sizeof *one);
            uint32_t s = 5;
            for (size_t i = 0; i < NL_QMATVEC_ROWS * n_in; i++) x[i] = uniform(&s);
            for (int p = 0; p < NL_QPATH_COUNT; p++) y[p] = calloc(NL_QMATVEC_ROWS * n_out, sizeof(float));
            for (NlQPath p = NL_QPATH_SCALAR; p < NL_QPATH_COUNT; p++) {
                if (!nl_qpath_supported(p)) continue;
                const char *name = nl_qpath_name(p), *type = nl_name(NL_NAMES_DTYPE, t);
                nl_qmatvec(y[p], n_out, m.stored, t, x, NL_QMATVEC_ROWS, n_in, 0, n_out, p);
                CHECK(outside_bound(y[p], n_out, &m, x, NL_QMATVEC_ROWS, n_out, n_in) == 0,
                      "%s %s %zu x %zu: within the summation bound of the double product", name, type, n_out, n_in);
                // each row alone, and the outputs in two calls split at an odd place: the same bits
                int same = 1;
                for (size_t r = 0; r < NL_QMATVEC_ROWS; r++) {
                    size_t cut = n_out / 2 + (n_out > 2);
                    nl_qmatvec(one, n_out, m.stored, t, x + r * n_in, 1, n_in, 0, cut, p);
                    nl_qmatvec(one, n_out, m.stored, t, x + r * n_in, 1, n_in, cut, n_out, p);
                    same &= memcmp(one, y[p] + r * n_out, n_out * sizeof *one) == 0;
                }
                CHECK(same, "%s %s %zu x %zu: a row alone and split gives the batch's bits", name, type, n_out, n_in);
                if (p == NL_QPATH_SCALAR) continue;
                CHECK(outside_bound(y[NL_QPATH_SCALAR], n_out, &m, x, 1, n_out, n_in) == 0 &&
                          outside_bound(y[p], n_out, &m, x, 1, n_out, n_in) == 0,
                      "%s and scalar %s: both within the bound", name, type);
            }
            float *tile = malloc(n_out * n_in * sizeof *tile);  // the tiles sgemm gets: exactly the widened values
            for (NlQPath p = NL_QPATH_SCALAR; tile && p < NL_QPATH_COUNT; p++) {
                if (!nl_qpath_supported(p)) continue;
                nl_qwiden(tile, m.stored, t, 1, n_out - 1, n_in, p);
                CHECK(memcmp(tile, m.widened + n_in, (n_out - 1) * n_in * sizeof *tile) == 0,
                      "%s %s %zu x %zu: rows 1.. widened as nl_dtype_to_f32 widens them, bit for bit", nl_qpath_name(p),
                      nl_name(NL_NAMES_DTYPE, t), n_out, n_in);
            }
            free(tile);
            for (int p = 0; p < NL_QPATH_COUNT; p++) free(y[p]);
            free(x), free(one), free(m.stored), free(m.widened);
        }
    CHECK(nl_qpath_supported(NL_QPATH_SCALAR) && nl_qpath_supported(nl_qpath_best()), "the best path runs here");
    printf("note: paths on this CPU: scalar%s%s\n", nl_qpath_supported(NL_QPATH_AVX2) ? ", avx2" : "",
           nl_qpath_supported(NL_QPATH_AVX512) ? ", avx512" : "");
}

// nl_linear on a stored weight: few rows through nl_qmatvec, many through tiles and sgemm, with a bias,
// against the double product; the same bits with a pool of 2 workers as with none.
static void stored_linear_matches_and_splits(void) {
    const size_t rows[] = {1, 2, 5, 7, 8, 9, 64, 130};
    NlPool *pool = nl_pool_create(2);
    for (NlDType t = NL_DTYPE_F16; t < NL_DTYPE_COUNT; t++) {
        size_t n_out = 200, n_in = 96;  // 4 tiles of 64 rows, the last short
        Stored m = make_stored(t, n_out, n_in, 21u);
        float *b = malloc(n_out * sizeof *b), *x = malloc(130 * n_in * sizeof *x);
        float *y1 = malloc(130 * n_out * sizeof *y1), *y2 = malloc(130 * n_out * sizeof *y2),
              *yb = malloc(130 * n_out * 4);
        uint32_t s = 9;
        for (size_t i = 0; i < n_out; i++) b[i] = uniform(&s);
        for (size_t i = 0; i < 130 * n_in; i++) x[i] = uniform(&s);
        NlLinear lin = {{m.stored, t}, NULL, b, n_out, n_in, -1, 0};
        float *scratch = malloc(nl_linear_scratch(&lin, 2) * sizeof *scratch);
        for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
            size_t n = rows[k];
            nl_linear(y1, x, n, &lin, NULL, scratch);
            nl_linear(y2, x, n, &lin, pool, scratch);
            for (size_t r = 0; r < n; r++)
                for (size_t o = 0; o < n_out; o++) yb[r * n_out + o] = y1[r * n_out + o] - b[o];
            CHECK(outside_bound(yb, n_out, &m, x, n, n_out, n_in) == 0, "%s, %zu rows: within the bound (bias %s)",
                  nl_name(NL_NAMES_DTYPE, t), n, "taken off");
            CHECK(memcmp(y1, y2, n * n_out * sizeof *y1) == 0, "%s, %zu rows: 2 workers give 1's bits",
                  nl_name(NL_NAMES_DTYPE, t), n);
        }
        CHECK(nl_linear_scratch(&lin, 2) == 2 * 64 * n_in, "scratch: a tile of 64 rows a worker");
        free(scratch), free(b), free(x), free(y1), free(y2), free(yb), free(m.stored), free(m.widened);
    }
    float w = 0.0f;
    NlLinear f32 = {{&w, NL_DTYPE_F32}, NULL, NULL, 1, 1, -1, 0};
    CHECK(nl_linear_scratch(&f32, 2) == 0, "a float32 weight needs no scratch");
    nl_pool_free(pool);
}

int main(void) {
    RUN(f16_matches_the_cpu_and_round_trips);
    RUN(bf16_rounds_to_nearest_even);
    RUN(bf16_keeps_nan_with_low_mantissa);
    RUN(blocks_keep_ggml_rules);
    RUN(nonfinite_scan_reads_each_type);
    RUN(kernels_match_the_widened_product);
    RUN(stored_linear_matches_and_splits);
    return check_summary("test_dtype");
}
