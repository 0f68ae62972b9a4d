// matmul_lanes.h — y (n, n_out) = x (n, n_in) wt for outputs [lo, hi) of every row (nl_matmul_t,
// linear.h), written once for vectors of MM_LANES floats with blocks of MM_ROWS rows. matvec.c
// includes it twice: 8 lanes and 6 rows (12 ymm accumulators) for its AVX2 and baseline builds, 16
// lanes and 8 rows (16 zmm) for its AVX-512 build. The outputs of a block of rows x two vectors of
// wt's columns are summed in registers over i in order, one chain of multiply-adds per NL_MATVEC_SEG
// inputs, the chains added in order: nl_matvec_t's for its row alone, the same bits at any row count,
// block or width.
// Defines matmul_8 or matmul_16.
#define MM_CAT2(a, b) a##b
#define MM_CAT(a, b) MM_CAT2(a, b)
#define MM_FN(name) MM_CAT(name, MM_LANES)  // name_8 or name_16
#define MV MM_FN(mv_)
#define MM_VECS 2  // vectors of outputs a block
#define MM_MAX_ROWS 8  // the accumulators' rows; a block uses MM_ROWS of them, or fewer at the end

typedef float MV __attribute__((vector_size(MM_LANES * sizeof(float))));

// y rows 0 .. R-1, outputs 0 .. C*MM_LANES-1, from x's rows and wt's columns at these pointers; R and
// C are constants after inlining. One chain per NL_MATVEC_SEG inputs, stored, then each later one
// added to y: nl_matvec_t's order.
static inline __attribute__((always_inline)) void MM_FN(mm_block_)(float *y, const float *wt, const float *x,
                                                                   size_t n_in, size_t n_out, size_t R, size_t C) {
    for (size_t i0 = 0; i0 < n_in; i0 += NL_MATVEC_SEG) {
        size_t i1 = n_in - i0 < NL_MATVEC_SEG ? n_in : i0 + NL_MATVEC_SEG;
        MV acc[MM_MAX_ROWS][MM_VECS] = {{{0}}};
        for (size_t i = i0; i < i1; i++) {
            MV w[MM_VECS];
            for (size_t c = 0; c < C; c++) memcpy(&w[c], wt + i * n_out + c * MM_LANES, sizeof(MV));
            for (size_t r = 0; r < R; r++) {
                float xr = x[r * n_in + i];
                for (size_t c = 0; c < C; c++) acc[r][c] += xr * w[c];
            }
        }
        for (size_t r = 0; r < R; r++)
            for (size_t c = 0; c < C; c++) {
                MV sum = acc[r][c];
                if (i0 > 0) {
                    MV before;
                    memcpy(&before, y + r * n_out + c * MM_LANES, sizeof(MV));
                    sum = before + sum;
                }
                memcpy(y + r * n_out + c * MM_LANES, &sum, sizeof(MV));
            }
    }
}

// Rows 0 .. n-1 of one block of C vectors at output o: whole blocks of MM_ROWS, then the rest as one
// block (a constant R in each case of the switch).
static inline __attribute__((always_inline)) void MM_FN(mm_rows_)(float *y, const float *wt, const float *x, size_t n,
                                                                  size_t n_in, size_t n_out, size_t o, size_t C) {
    size_t r = 0;
    for (; r + MM_ROWS <= n; r += MM_ROWS)
        MM_FN(mm_block_)(y + r * n_out + o, wt + o, x + r * n_in, n_in, n_out, MM_ROWS, C);
    float *yr = y + r * n_out + o;
    const float *xr = x + r * n_in;
    switch (n - r) {
    case 7: MM_FN(mm_block_)(yr, wt + o, xr, n_in, n_out, 7, C); break;
    case 6: MM_FN(mm_block_)(yr, wt + o, xr, n_in, n_out, 6, C); break;
    case 5: MM_FN(mm_block_)(yr, wt + o, xr, n_in, n_out, 5, C); break;
    case 4: MM_FN(mm_block_)(yr, wt + o, xr, n_in, n_out, 4, C); break;
    case 3: MM_FN(mm_block_)(yr, wt + o, xr, n_in, n_out, 3, C); break;
    case 2: MM_FN(mm_block_)(yr, wt + o, xr, n_in, n_out, 2, C); break;
    case 1: MM_FN(mm_block_)(yr, wt + o, xr, n_in, n_out, 1, C); break;
    default: break;
    }
}

static inline __attribute__((always_inline)) void MM_FN(matmul_)(float *y, const float *wt, const float *x, size_t n,
                                                                 size_t n_in, size_t n_out, size_t lo, size_t hi) {
    size_t o = lo;
    for (; o + MM_VECS * MM_LANES <= hi; o += MM_VECS * MM_LANES) MM_FN(mm_rows_)(y, wt, x, n, n_in, n_out, o, MM_VECS);
    for (; o + MM_LANES <= hi; o += MM_LANES) MM_FN(mm_rows_)(y, wt, x, n, n_in, n_out, o, 1);
    for (size_t r = 0; o < hi && r < n; r++)  // the outputs past the last whole vector: the same chains
        nl_matvec_t(y + r * n_out, wt, x + r * n_in, n_in, n_out, o, hi);
}

#undef MM_MAX_ROWS
#undef MM_VECS
#undef MV
#undef MM_FN
#undef MM_CAT
#undef MM_CAT2
