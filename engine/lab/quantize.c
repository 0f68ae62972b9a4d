// quantize.c — simulated quantization, the lab's (normlab_lab.h): round-to-nearest with a float32
// scale per row or group, applied to a model's matrices through the core's matrix API
// (normlab_internal.h) and to every linear's input rows through the run's input hook.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "normlab_internal.h"
#include "normlab_lab.h"
#include "quantize.h"

static const char *const QUANT_NAMES[] = {"none", "q8", "q4", "f16", "bf16", "q8_0", "q4_0"};  // by NlQuant
// the NL_MATRIX_* classes by bit, lowest first
static const char *const CLASS_NAMES[] = {"attn", "mlp", "head", "embed", "recurrent"};
#define N_CLASSES (sizeof CLASS_NAMES / sizeof CLASS_NAMES[0])
#define ALL_CLASSES ((1u << N_CLASSES) - 1)

const char *nl_quant_name(NlQuant q) { return (unsigned)q < NL_QUANT_COUNT ? QUANT_NAMES[q] : "?"; }

int nl_quant_parse(const char *name, NlQuant *out) {
    for (int q = 0; q < NL_QUANT_COUNT; q++)
        if (strcasecmp(name, QUANT_NAMES[q]) == 0) {
            *out = (NlQuant)q;
            return 0;
        }
    return -1;
}

const char *nl_quant_classes_name(unsigned classes, char *buf, size_t len) {
    buf[0] = '\0';
    for (size_t i = 0, at = 0; i < N_CLASSES && at < len; i++)
        if (classes & 1u << i) at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "," : "", CLASS_NAMES[i]);
    return buf;
}

int nl_quant_classes_parse(const char *list, unsigned *out) {
    unsigned bits = 0;
    for (const char *at = list;; at++) {
        size_t len = strcspn(at, ","), i = 0;
        while (i < N_CLASSES && !(strlen(CLASS_NAMES[i]) == len && strncasecmp(at, CLASS_NAMES[i], len) == 0)) i++;
        if (i == N_CLASSES) return -1;
        bits |= 1u << i;
        at += len;
        if (!*at) break;
    }
    *out = bits;
    return 0;
}

int nl_quant_levels(NlQuant q) { return q == NL_QUANT_Q8 ? 127 : q == NL_QUANT_Q4 ? 7 : 0; }

size_t nl_quant_group(NlQuant q, size_t cols) { return q == NL_QUANT_Q4 ? 32 : cols; }

// One group of n values in place of dst (src may be dst).
static void quantize_group(float *dst, const float *src, size_t n, int levels) {
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(src[i]));
    if (amax == 0.0f) {
        for (size_t i = 0; i < n; i++) dst[i] = 0.0f;
        return;
    }
    float scale = amax / (float)levels, lim = (float)levels;
    for (size_t i = 0; i < n; i++) {
        float q = roundf(src[i] / scale);
        dst[i] = fminf(fmaxf(q, -lim), lim) * scale;
    }
}

void nl_quantize_rows(float *dst, const float *src, size_t rows, size_t cols, NlQuant q) {
    int levels = nl_quant_levels(q);
    if (!levels) {
        if (dst != src) memmove(dst, src, rows * cols * sizeof *dst);
        return;
    }
    size_t group = nl_quant_group(q, cols);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c += group) {
            size_t n = cols - c < group ? cols - c : group;
            quantize_group(dst + r * cols + c, src + r * cols + c, n, levels);
        }
}

// The rounded matrices, all in one allocation, into data[k] for each matrix k of a picked class (a
// matrix stored otherwise than float32 is widened first, as the engine reads it).
static float *round_matrices(const NlMatrix *mats, size_t n, unsigned pick, NlQuant q, NlWeight *data,
                             unsigned *rounded, size_t floats) {
    float *all = malloc(floats * sizeof(float)), *at = all;
    for (size_t k = 0; all && k < n; k++) {
        if (!(mats[k].classes & pick)) continue;
        nl_weight_rows(at, mats[k].w, 0, mats[k].rows, mats[k].cols);
        nl_quantize_rows(at, at, mats[k].rows, mats[k].cols, q);
        data[k] = (NlWeight){at, NL_DTYPE_F32};
        at += mats[k].rows * mats[k].cols;
        *rounded |= mats[k].classes;  // a matrix rounded counts for each class it serves (a tied wte: two)
    }
    return all;
}

// The NlDType a real scheme stores (NL_DTYPE_COUNT for a simulated one).
static NlDType stored_type(NlQuant q) {
    switch (q) {
    case NL_QUANT_F16: return NL_DTYPE_F16;
    case NL_QUANT_BF16: return NL_DTYPE_BF16;
    case NL_QUANT_Q8_0: return NL_DTYPE_Q8_0;
    case NL_QUANT_Q4_0: return NL_DTYPE_Q4_0;
    default: return NL_DTYPE_COUNT;
    }
}

// Whether matrix m is rounded or stored under q: of a picked class; for a real type, as `normlab
// quantize` does, not a table of positions, and rows of whole blocks.
static int takes(const NlMatrix *m, unsigned pick, NlQuant q) {
    NlDType t = stored_type(q);
    return (m->classes & pick) && (t == NL_DTYPE_COUNT || (!m->positions && nl_weight_bytes(t, m->rows, m->cols)));
}

// The matrices stored as type t, all in one allocation, into data[k] for each matrix k taken; NULL
// when out of memory.
static void *store_matrices(const NlMatrix *mats, size_t n, unsigned pick, NlQuant q, NlWeight *data, unsigned *rounded,
                            size_t bytes) {
    NlDType t = stored_type(q);
    size_t widest = 1;
    for (size_t k = 0; k < n; k++) widest = mats[k].cols > widest ? mats[k].cols : widest;
    unsigned char *all = malloc(bytes), *at = all;
    float *row = malloc(widest * sizeof *row);
    for (size_t k = 0; all && row && k < n; k++) {
        if (!takes(&mats[k], pick, q)) continue;
        size_t row_bytes = nl_weight_bytes(t, 1, mats[k].cols);
        for (size_t r = 0; r < mats[k].rows; r++) {
            nl_weight_rows(row, mats[k].w, r, 1, mats[k].cols);
            nl_weight_store_rows(at + r * row_bytes, row, 1, mats[k].cols, t);
        }
        data[k] = (NlWeight){at, t};
        at += mats[k].rows * row_bytes;
        *rounded |= mats[k].classes;
    }
    free(row);
    if (!row) free(all);
    return row ? all : NULL;
}

int nl_quantize_model(NlModel *model, NlQuant q, unsigned only, unsigned *rounded, NlError *err) {
    unsigned pick = only ? only : ALL_CLASSES;
    *rounded = 0;
    if (q == NL_QUANT_NONE || (unsigned)q >= NL_QUANT_COUNT) {
        nl_error(err, NL_ERR_ARG, "unknown quantization %d", (int)q);
        return -1;
    }
    if (pick & ~ALL_CLASSES) {
        nl_error(err, NL_ERR_ARG, "unknown quantization classes 0x%x", pick & ~ALL_CLASSES);
        return -1;
    }
    size_t n = nl_model_matrices(model, NULL), bytes = 0;
    NlMatrix *mats = calloc(n ? n : 1, sizeof *mats);
    NlWeight *data = calloc(n ? n : 1, sizeof *data);
    NlDType t = stored_type(q);
    int rc = -1;
    if (!mats || !data) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    nl_model_matrices(model, mats);
    for (size_t k = 0; k < n; k++)
        if (takes(&mats[k], pick, q))
            bytes += t == NL_DTYPE_COUNT ? mats[k].rows * mats[k].cols * sizeof(float)
                                         : nl_weight_bytes(t, mats[k].rows, mats[k].cols);
    if (bytes == 0) {
        if (t == NL_DTYPE_COUNT)
            nl_error(err, NL_ERR_ARG, "this %s has no matrix of the classes to quantize",
                     nl_name(NL_NAMES_ARCH, nl_model_config(model)->arch));
        else
            nl_error(err, NL_ERR_ARG,
                     "this %s has no matrix of the classes that can be stored as %s (positions stay float32; q8_0 "
                     "and q4_0 need rows of whole blocks of 32)",
                     nl_name(NL_NAMES_ARCH, nl_model_config(model)->arch), nl_quant_name(q));
        goto cleanup;
    }
    void *owned = t == NL_DTYPE_COUNT ? (void *)round_matrices(mats, n, pick, q, data, rounded, bytes / sizeof(float))
                                      : store_matrices(mats, n, pick, q, data, rounded, bytes);
    if (!owned) {
        nl_error(err, NL_ERR_NOMEM, "out of memory for %zu bytes of quantized weights", bytes);
        goto cleanup;
    }
    rc = nl_model_set_matrices(model, data, owned, err);
cleanup:
    free(mats);
    free(data);
    return rc;
}

static void round_input_q8(void *ctx, float *x, size_t rows, size_t cols) {
    (void)ctx;
    nl_quantize_rows(x, x, rows, cols, NL_QUANT_Q8);
}

static void round_input_q4(void *ctx, float *x, size_t rows, size_t cols) {
    (void)ctx;
    nl_quantize_rows(x, x, rows, cols, NL_QUANT_Q4);
}

NlLinearInputHook nl_quant_input_hook(NlQuant q) {
    return (NlLinearInputHook){q == NL_QUANT_Q8 ? round_input_q8 : q == NL_QUANT_Q4 ? round_input_q4 : NULL, NULL};
}

int nl_quantize_copy(NlModel **out, const NlModel *base, NlQuant q, unsigned only, unsigned *rounded, NlError *err) {
    if (nl_model_copy(out, base, err) != 0) return -1;
    if (nl_quantize_model(*out, q, only, rounded, err) == 0) return 0;
    nl_model_free(*out);
    *out = NULL;
    return -1;
}

int nl_quant_state_create(NlState **out, const NlModel *model, const NlRunOptions *opts, NlQuant act, NlError *err) {
    return nl_state_create_hooked(out, model, opts, nl_quant_input_hook(act), err);
}
