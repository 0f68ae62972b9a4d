// qmatvec.h — products of a few rows with a weight stored as F16, BF16, Q8_0 or Q4_0 (dtype.h), the
// weight read once as stored: decode's products of a model whose weights are not float32 (linear.c).
// The activations stay float32: each weight is widened (q d for a block) and multiplied in float,
// so a stored model differs from its float32 twin (the same values widened) only by the order of
// the sums. Three paths, picked from the CPU at run time: AVX-512, AVX2 with FMA and F16C, and a
// scalar one for every other CPU (tests/test_kernels.c holds each to the scalar path, and the scalar
// path to the weights widened and multiplied in double). Every output is one chain of operations in
// a fixed order, whatever range of outputs a call computes: the same bits at any split over threads.
#ifndef NL_QMATVEC_H
#define NL_QMATVEC_H

#include <stddef.h>

#include "normlab.h"

#pragma GCC visibility push(hidden)

typedef enum { NL_QPATH_SCALAR, NL_QPATH_AVX2, NL_QPATH_AVX512, NL_QPATH_COUNT } NlQPath;

enum { NL_QMATVEC_ROWS = 4 };  // the most rows of x one call takes (each weight read once for all)

// The fastest path this CPU runs (cpuid): AVX-512 F with F16C, else AVX2 with FMA and F16C, else scalar.
NlQPath nl_qpath_best(void);
// Whether this CPU runs path (the tests try every path it can).
int nl_qpath_supported(NlQPath path);
const char *nl_qpath_name(NlQPath path);  // "scalar", "avx2", "avx512"

// y[r * ldy + o] = w[o] . x[r * n_in ..] for each of the rows r < nr (1 <= nr <= NL_QMATVEC_ROWS) and
// outputs o in [lo, hi); w (n_out, n_in) stored as type (not F32), n_in whole blocks of the type.
void nl_qmatvec(float *y, size_t ldy, const void *w, NlDType type, const float *x, size_t nr, size_t n_in, size_t lo,
                size_t hi, NlQPath path);

// dst (rows, n_in) = rows row0.. of w (n_in whole blocks of type, not F32) widened to float32, the
// values nl_dtype_to_f32 gives, on path: the tiles prefill and evaluation give to sgemm (linear.c).
void nl_qwiden(float *dst, const void *w, NlDType type, size_t row0, size_t rows, size_t n_in, NlQPath path);

#pragma GCC visibility pop

#endif
