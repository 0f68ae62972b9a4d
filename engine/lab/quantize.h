// quantize.h — the lab's rounding kernel behind nl_quantize_model and the input hook (internal to
// the lab; normlab_lab.h has the API): values rounded to a few signed levels of a per-row (q8) or
// per-group (q4) scale and stored back as float32, so that every product stays a float32 OpenBLAS
// call. It measures what the rounding costs in quality, not speed.
#ifndef NL_QUANTIZE_H
#define NL_QUANTIZE_H

#include <stddef.h>

#include "normlab_internal.h"
#include "normlab_lab.h"

#pragma GCC visibility push(hidden)

// The levels and group of a scheme: q8 127 levels a side over a whole row (group 0: the row), q4 7
// over groups of 32 consecutive columns (the last group of a row shorter when cols % 32 != 0).
int nl_quant_levels(NlQuant q);
size_t nl_quant_group(NlQuant q, size_t cols);

// dst (rows, cols) = src rounded under q, group by group of each row: scale = max |x| / levels as
// float32, x / scale rounded half away from zero (roundf) and clamped to [-levels, levels], times
// scale; a group of zeros stays zero. dst may be src. NL_QUANT_NONE copies.
void nl_quantize_rows(float *dst, const float *src, size_t rows, size_t cols, NlQuant q);
// The hook nl_quant_state_create gives its state (fn NULL for NL_QUANT_NONE).
NlLinearInputHook nl_quant_input_hook(NlQuant q);

#pragma GCC visibility pop

#endif
