// cost.h — the counting rules the families' cost operations share (docs/profiling.md): a
// multiply-add is 2 FLOPs, every other arithmetic operation or transcendental 1; bytes are the
// tensors read and written (weights, activations, KV cache), 4 bytes per float, scratch excluded.
#ifndef NL_COST_H
#define NL_COST_H

#include "normlab.h"
#include "normlab_internal.h"

// FLOPs a row of D features through a norm of type t takes.
// LayerNorm: sum (D), centre + square + accumulate (3D), centre + scale + gain + bias (4D).
// RMSNorm: square + accumulate (2D), scale + gain + bias (3D). Bias assumed present.
// BatchNorm: centre, add eps, square root, divide, gain, bias (6D) per row; the batch statistics'
// passes are not counted. DyT: alpha, tanh (a transcendental, as exp and erf), gain, bias (4D). None:
// no norm runs.
static inline double nl_cost_norm_flops(NlNormType t, double D) {
    switch (t) {
    case NL_NORM_LAYERNORM: return 8 * D;
    case NL_NORM_BATCHNORM: return 6 * D;
    case NL_NORM_DYT: return 4 * D;
    case NL_NORM_NONE: return 0;
    default: return 5 * D;
    }
}

// A linear (n, in) -> (n, out): 2 n in out FLOPs (+ n out for a bias); weights read once.
static inline void nl_cost_linear(int bias, double n, double in, double out, double *flops, double *bytes) {
    *flops = 2 * n * in * out + (bias ? n * out : 0);
    *bytes = 4 * (in * out + (bias ? out : 0) + n * in + n * out);
}

#endif
