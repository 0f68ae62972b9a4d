// dtype.h — the types a weight matrix is stored in (internal): float32, the 16-bit floats F16 and
// BF16, and ggml's block types Q8_0 and Q4_0, each row of a matrix whole blocks of 32 weights along
// the input (docs/format.md). Conversions both ways, one row at a time: to a type exactly as ggml's
// reference quantizers (ggml-quants.c quantize_row_q8_0_ref, quantize_row_q4_0_ref) and its
// round-to-nearest-even FP32_TO_FP16 write it, so that normlab's files hold the bytes llama.cpp's
// do; back to float32 exactly as ggml's dequantize_row_* read them. A block's bytes: the scale d,
// an F16 (little-endian), then Q8_0's 32 int8 q (x = q d), or Q4_0's 16 bytes whose low nibble is
// weight j and high nibble weight j + 16 (x = (nibble - 8) d).
#ifndef NL_DTYPE_H
#define NL_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "normlab.h"

#pragma GCC visibility push(hidden)

enum { NL_QBLOCK = 32 };  // weights in a Q8_0 or Q4_0 block
enum { NL_Q8_0_BYTES = 34, NL_Q4_0_BYTES = 18 };  // bytes of a block

// Weights a block of type holds (32 for Q8_0 and Q4_0, 1 for the others) and its bytes.
size_t nl_dtype_block(NlDType type);
size_t nl_dtype_block_bytes(NlDType type);
// The bytes of a row of cols weights of type; 0 when cols is not whole blocks.
size_t nl_dtype_row_bytes(NlDType type, size_t cols);

// IEEE binary16 and bfloat16 from and to float32: to them rounded to nearest, ties to even (a NaN
// stays a NaN, quiet), as F16C's vcvtps2ph and PyTorch's bfloat16 do; from them exact.
uint16_t nl_f32_to_f16(float x);
float nl_f16_to_f32(uint16_t h);
uint16_t nl_f32_to_bf16(float x);
float nl_bf16_to_f32(uint16_t h);

// dst = the row src (cols floats) stored as type (nl_dtype_row_bytes(type, cols) bytes; cols whole
// blocks), ggml's reference rules for Q8_0 and Q4_0.
void nl_dtype_from_f32(void *dst, const float *src, size_t cols, NlDType type);
// dst (cols floats) = the row src stored as type, widened: x = q d in float, as ggml's dequantizers.
void nl_dtype_to_f32(float *dst, const void *src, size_t cols, NlDType type);
// The scale d of block `block` (0, 1, ... in the order of the data) of a matrix stored as type Q8_0 or Q4_0.
float nl_dtype_scale(const void *data, NlDType type, size_t block);
// ggml's block types that normlab reads from a GGUF and widens to float32: Q4_1, Q5_0 and Q5_1 (blocks
// of 32 weights) and the K-quants Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (super-blocks of 256), laid out as
// ggml-common.h's block_* structs. dst (n floats, whole blocks) = src as ggml's dequantize_row_*
// computes it, in float, operation for operation.
typedef enum {
    NL_GQ_Q4_1,
    NL_GQ_Q5_0,
    NL_GQ_Q5_1,
    NL_GQ_Q2_K,
    NL_GQ_Q3_K,
    NL_GQ_Q4_K,
    NL_GQ_Q5_K,
    NL_GQ_Q6_K
} NlGgmlBlock;
void nl_ggml_block_to_f32(float *dst, const void *src, size_t n, NlGgmlBlock type);
// The index of the first weight of rows x cols stored as type whose value is not finite (an F16 or
// BF16 weight, or a block's scale: its first weight's index), or SIZE_MAX when all are finite.
size_t nl_dtype_first_nonfinite(const void *data, size_t rows, size_t cols, NlDType type);

#pragma GCC visibility pop

#endif
