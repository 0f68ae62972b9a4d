// quantize.c — simulated quantization, the lab's (normlab_lab.h): round-to-nearest with a float32
// scale per row or group, applied to a model's matrices through the core's matrix API
// (normlab_ext.h) and to every linear's input rows through the run's input hook.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "normlab_internal.h"
#include "normlab_lab.h"
#include "quantize.h"

static const char *const QUANT_NAMES[] = {"none", "q8", "q4"};  // by NlQuant
// the NL_MATRIX_* classes by bit, lowest first
static const char *const CLASS_NAMES[] = {"attn", "mlp", "head", "embed", "recurrent"};
#define N_CLASSES (sizeof CLASS_NAMES / sizeof CLASS_NAMES[0])
#define ALL_CLASSES ((1u << N_CLASSES) - 1)

const char *nl_quant_name(NlQuant q) { return (unsigned)q < 3 ? QUANT_NAMES[q] : "?"; }

int nl_quant_parse(const char *name, NlQuant *out) {
    for (int q = 0; q < 3; q++)
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

// The rounded matrices, all in one allocation, into data[k] for each matrix k of a picked class.
static float *round_matrices(const NlMatrix *mats, size_t n, unsigned pick, NlQuant q, const float **data,
                             unsigned *rounded, size_t floats) {
    float *all = malloc(floats * sizeof(float)), *at = all;
    for (size_t k = 0; all && k < n; k++) {
        if (!(mats[k].classes & pick)) continue;
        nl_quantize_rows(at, mats[k].data, mats[k].rows, mats[k].cols, q);
        data[k] = at;
        at += mats[k].rows * mats[k].cols;
        *rounded |= mats[k].classes;  // a matrix rounded counts for each class it serves (a tied wte: two)
    }
    return all;
}

int nl_quantize_model(NlModel *model, NlQuant q, unsigned only, unsigned *rounded, NlError *err) {
    unsigned pick = only ? only : ALL_CLASSES;
    *rounded = 0;
    if (q != NL_QUANT_Q8 && q != NL_QUANT_Q4) {
        nl_error(err, NL_ERR_ARG, "unknown quantization %d", (int)q);
        return -1;
    }
    if (pick & ~ALL_CLASSES) {
        nl_error(err, NL_ERR_ARG, "unknown quantization classes 0x%x", pick & ~ALL_CLASSES);
        return -1;
    }
    size_t n = nl_model_matrices(model, NULL), floats = 0;
    NlMatrix *mats = calloc(n ? n : 1, sizeof *mats);
    const float **data = calloc(n ? n : 1, sizeof *data);
    int rc = -1;
    if (!mats || !data) {
        nl_error(err, NL_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    nl_model_matrices(model, mats);
    for (size_t k = 0; k < n; k++)
        if (mats[k].classes & pick) floats += mats[k].rows * mats[k].cols;
    if (floats == 0) {
        nl_error(err, NL_ERR_ARG, "this %s has no matrix of the classes to quantize",
                 nl_name(NL_NAMES_ARCH, nl_model_config(model)->arch));
        goto cleanup;
    }
    float *owned = round_matrices(mats, n, pick, q, data, rounded, floats);
    if (!owned) {
        nl_error(err, NL_ERR_NOMEM, "out of memory for %zu bytes of quantized weights", floats * sizeof(float));
        goto cleanup;
    }
    rc = nl_model_set_matrices(model, (const float *const *)data, owned, err);
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
