// qmatvec_lanes.h — qmatvec.c's vector paths, written once for vectors of QM_LANES floats: qmatvec.c
// includes it twice, 8 lanes (AVX2 with FMA and F16C) and 16 (AVX-512). A weight row is taken 32
// weights at a time (a block of Q8_0 or Q4_0, or 32 16-bit floats), widened once into QM_K vectors
// and multiplied into each of NR rows of x: a block's products summed in a fixed order (s), then, for
// the block types, s times the block's d added into one of two partial sums (even blocks, odd
// blocks), which are added at the end; the 16-bit types add s as it is. Defines qmatvec_8 or
// qmatvec_16; needs QM_ATTR (the target attribute), u16_at and nl_bf16_to_f32.
#define QM_CAT2(a, b) a##b
#define QM_CAT(a, b) QM_CAT2(a, b)
#define QM_FN(name) QM_CAT(name, QM_LANES)  // name_8 or name_16
#define QM_K (32 / QM_LANES)  // vectors a block
#define QM_INLINE QM_ATTR __attribute__((always_inline)) static inline

#if QM_LANES == 8
typedef __m256 QM_FN(qv_);
#define QV qv_8
#define QV_LOAD _mm256_loadu_ps
#define QV_MUL _mm256_mul_ps
#define QV_ADD _mm256_add_ps
#define QV_FMA _mm256_fmadd_ps
#define QV_SET1 _mm256_set1_ps
#define QV_ZERO _mm256_setzero_ps

QM_INLINE float QM_FN(hsum_)(QV v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// 8 bytes (int8) or 8 halves / bfloat16s at p as floats.
QM_INLINE QV QM_FN(from_i8_)(__m128i b) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)); }
QM_INLINE QV QM_FN(from_f16_)(const unsigned char *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}
QM_INLINE QV QM_FN(from_bf16_)(const unsigned char *p) {
    __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}
QM_INLINE void QM_FN(q8_)(const unsigned char *q, QV w[QM_K]) {
    for (int k = 0; k < QM_K; k++) w[k] = QM_FN(from_i8_)(_mm_loadl_epi64((const __m128i *)(const void *)(q + 8 * k)));
}
QM_INLINE void QM_FN(q4_)(__m128i lo, __m128i hi, QV w[QM_K]) {  // nibbles less 8: weights 0-15, 16-31
    w[0] = QM_FN(from_i8_)(lo);
    w[1] = QM_FN(from_i8_)(_mm_srli_si128(lo, 8));
    w[2] = QM_FN(from_i8_)(hi);
    w[3] = QM_FN(from_i8_)(_mm_srli_si128(hi, 8));
}
#else
typedef __m512 QM_FN(qv_);
#define QV qv_16
#define QV_LOAD _mm512_loadu_ps
#define QV_MUL _mm512_mul_ps
#define QV_ADD _mm512_add_ps
#define QV_FMA _mm512_fmadd_ps
#define QV_SET1 _mm512_set1_ps
#define QV_ZERO _mm512_setzero_ps

QM_INLINE float QM_FN(hsum_)(QV v) { return _mm512_reduce_add_ps(v); }

QM_INLINE QV QM_FN(from_i8_)(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)); }
QM_INLINE QV QM_FN(from_f16_)(const unsigned char *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
}
QM_INLINE QV QM_FN(from_bf16_)(const unsigned char *p) {
    __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
}
QM_INLINE void QM_FN(q8_)(const unsigned char *q, QV w[QM_K]) {
    for (int k = 0; k < QM_K; k++) w[k] = QM_FN(from_i8_)(_mm_loadu_si128((const __m128i *)(const void *)(q + 16 * k)));
}
QM_INLINE void QM_FN(q4_)(__m128i lo, __m128i hi, QV w[QM_K]) {
    w[0] = QM_FN(from_i8_)(lo);
    w[1] = QM_FN(from_i8_)(hi);
}
#endif

// Block b of a row stored as TYPE into w (unscaled); returns its d (1 for the 16-bit types).
QM_INLINE float QM_FN(widen_)(const unsigned char *row, size_t b, const NlDType TYPE, QV w[QM_K]) {
    if (TYPE == NL_DTYPE_F16 || TYPE == NL_DTYPE_BF16) {
        const unsigned char *p = row + b * 64;
        for (int k = 0; k < QM_K; k++)
            w[k] =
                TYPE == NL_DTYPE_F16 ? QM_FN(from_f16_)(p + 2 * QM_LANES * k) : QM_FN(from_bf16_)(p + 2 * QM_LANES * k);
        return 1.0f;
    }
    if (TYPE == NL_DTYPE_Q8_0) {
        const unsigned char *p = row + b * NL_Q8_0_BYTES;
        QM_FN(q8_)(p + 2, w);
        return _cvtsh_ss(u16_at(p));
    }
    const unsigned char *p = row + b * NL_Q4_0_BYTES;
    __m128i bytes = _mm_loadu_si128((const __m128i *)(const void *)(p + 2)), mask = _mm_set1_epi8(0x0f);
    __m128i eight = _mm_set1_epi8(8);
    QM_FN(q4_)
    (_mm_sub_epi8(_mm_and_si128(bytes, mask), eight),
     _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), mask), eight), w);
    return _cvtsh_ss(u16_at(p));
}

// Block b into the partial sum acc[r][half] of each row r < NR.
QM_INLINE void QM_FN(block_)(QV acc[][2], const int half, const unsigned char *row, size_t b, const NlDType TYPE,
                             const float *x, size_t n_in, const int NR) {
    QV w[QM_K];
    float d = QM_FN(widen_)(row, b, TYPE, w);
    for (int r = 0; r < NR; r++) {
        const float *xr = x + (size_t)r * n_in + b * 32;
        QV s = QV_MUL(w[0], QV_LOAD(xr));
        for (int k = 1; k < QM_K; k++) s = QV_FMA(w[k], QV_LOAD(xr + QM_LANES * k), s);
        if (TYPE == NL_DTYPE_F16 || TYPE == NL_DTYPE_BF16) acc[r][half] = QV_ADD(s, acc[r][half]);
        else acc[r][half] = QV_FMA(QV_SET1(d), s, acc[r][half]);
    }
}

// One output of NR rows: blocks two at a time, the even one's into acc[r][0], the odd one's into acc[r][1].
QM_INLINE void QM_FN(dot_rows_)(float *y, size_t ldy, const unsigned char *row, const NlDType TYPE, const float *x,
                                size_t n_in, const int NR) {
    QV acc[NL_QMATVEC_ROWS][2];
    for (int r = 0; r < NR; r++) acc[r][0] = acc[r][1] = QV_ZERO();
    size_t blocks = n_in / 32, b = 0;
    for (; b + 2 <= blocks; b += 2) {
        QM_FN(block_)(acc, 0, row, b, TYPE, x, n_in, NR);
        QM_FN(block_)(acc, 1, row, b + 1, TYPE, x, n_in, NR);
    }
    if (b < blocks) QM_FN(block_)(acc, 0, row, b, TYPE, x, n_in, NR);
    for (int r = 0; r < NR; r++) {
        float sum = QM_FN(hsum_)(QV_ADD(acc[r][0], acc[r][1]));
        const float *xr = x + (size_t)r * n_in;
        for (size_t i = blocks * 32; i < n_in; i++) {  // a 16-bit row's last weights, past whole blocks of 32
            uint16_t h = u16_at(row + 2 * i);
            sum += (TYPE == NL_DTYPE_F16 ? _cvtsh_ss(h) : nl_bf16_to_f32(h)) * xr[i];
        }
        y[(size_t)r * ldy] = sum;
    }
}

// Outputs [lo, hi) of nr rows, a type at a time (TYPE and NR constants in each loop).
QM_INLINE void QM_FN(outputs_)(float *y, size_t ldy, const unsigned char *w, size_t row_bytes, const NlDType TYPE,
                               const float *x, size_t nr, size_t n_in, size_t lo, size_t hi) {
    for (size_t o = lo; o < hi; o++) {
        const unsigned char *row = w + o * row_bytes;
        switch (nr) {
        case 1: QM_FN(dot_rows_)(y + o, ldy, row, TYPE, x, n_in, 1); break;
        case 2: QM_FN(dot_rows_)(y + o, ldy, row, TYPE, x, n_in, 2); break;
        case 3: QM_FN(dot_rows_)(y + o, ldy, row, TYPE, x, n_in, 3); break;
        default: QM_FN(dot_rows_)(y + o, ldy, row, TYPE, x, n_in, 4); break;
        }
    }
}

QM_ATTR static void QM_FN(qmatvec_)(float *y, size_t ldy, const unsigned char *w, size_t row_bytes, NlDType type,
                                    const float *x, size_t nr, size_t n_in, size_t lo, size_t hi) {
    switch (type) {
    case NL_DTYPE_F16: QM_FN(outputs_)(y, ldy, w, row_bytes, NL_DTYPE_F16, x, nr, n_in, lo, hi); break;
    case NL_DTYPE_BF16: QM_FN(outputs_)(y, ldy, w, row_bytes, NL_DTYPE_BF16, x, nr, n_in, lo, hi); break;
    case NL_DTYPE_Q8_0: QM_FN(outputs_)(y, ldy, w, row_bytes, NL_DTYPE_Q8_0, x, nr, n_in, lo, hi); break;
    default: QM_FN(outputs_)(y, ldy, w, row_bytes, NL_DTYPE_Q4_0, x, nr, n_in, lo, hi); break;
    }
}

// dst (rows, n_in) = rows of w widened as nl_dtype_to_f32 widens them (q d in float; the 16-bit values).
QM_INLINE void QM_FN(widen_rows_)(float *dst, const unsigned char *w, size_t row_bytes, const NlDType TYPE, size_t rows,
                                  size_t n_in) {
    for (size_t o = 0; o < rows; o++) {
        const unsigned char *row = w + o * row_bytes;
        float *out = dst + o * n_in;
        size_t blocks = n_in / 32;
        for (size_t b = 0; b < blocks; b++) {
            QV v[QM_K];
            float d = QM_FN(widen_)(row, b, TYPE, v);
            for (int k = 0; k < QM_K; k++) {
                QV x = TYPE == NL_DTYPE_F16 || TYPE == NL_DTYPE_BF16 ? v[k] : QV_MUL(v[k], QV_SET1(d));
                memcpy(out + b * 32 + QM_LANES * k, &x, sizeof x);
            }
        }
        for (size_t i = blocks * 32; i < n_in; i++) {
            uint16_t h = u16_at(row + 2 * i);
            out[i] = TYPE == NL_DTYPE_F16 ? _cvtsh_ss(h) : nl_bf16_to_f32(h);
        }
    }
}

QM_ATTR static void QM_FN(qwiden_)(float *dst, const unsigned char *w, size_t row_bytes, NlDType type, size_t rows,
                                   size_t n_in) {
    switch (type) {
    case NL_DTYPE_F16: QM_FN(widen_rows_)(dst, w, row_bytes, NL_DTYPE_F16, rows, n_in); break;
    case NL_DTYPE_BF16: QM_FN(widen_rows_)(dst, w, row_bytes, NL_DTYPE_BF16, rows, n_in); break;
    case NL_DTYPE_Q8_0: QM_FN(widen_rows_)(dst, w, row_bytes, NL_DTYPE_Q8_0, rows, n_in); break;
    default: QM_FN(widen_rows_)(dst, w, row_bytes, NL_DTYPE_Q4_0, rows, n_in); break;
    }
}

#undef QV
#undef QV_LOAD
#undef QV_MUL
#undef QV_ADD
#undef QV_FMA
#undef QV_SET1
#undef QV_ZERO
#undef QM_K
#undef QM_INLINE
