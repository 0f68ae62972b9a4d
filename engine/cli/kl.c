// kl.c — eval's per-position record: each scored token's loss (--json -o), the log-probabilities of
// a reference run (--kl-base FILE) and, against such a file, the KL divergence and top-1 agreement
// (--kl FILE), as llama-perplexity's --kl-divergence-base and --kl-divergence judge a quantization.
//
// The file (docs/files.md): "NLKLBASE", then little-endian u32 version (1), u32 V, u64 positions N,
// u64 the FNV-1a hash of the text's token ids (each a u32), u32 how the text was cut (0: windows
// at a stride; 1: a recurrent model's segments) and u32 that stride or count, then N rows of V
// float32: the natural log-softmax of each scored position, in text order.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kl.h"
#include "process.h"

#define KL_MAGIC "NLKLBASE"
#define KL_VERSION 1u
#define KL_HEADER 40
#define KL_MAX_BYTES ((uint64_t)8 << 30)  // a base file's rows, at most (8 GiB)

static uint64_t ids_hash(const int *ids, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the ids' four bytes each, little-endian
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) h = (h ^ (((uint32_t)ids[i] >> (8 * k)) & 0xFF)) * 0x100000001b3ULL;
    return h;
}

static void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

int kl_record_init(KlRecord *r, const char *base_out, const char *base_in, int per_token, size_t V, const int *ids,
                   size_t n_ids, int segments, size_t cut) {
    memset(r, 0, sizeof *r);
    r->segments = segments;
    r->cut = cut;
    r->n = n_ids > 1 ? n_ids - 1 : 0;
    r->V = V;
    r->hash = ids_hash(ids, n_ids);
    r->ids = ids;
    if ((base_out || base_in) && (double)r->n * (double)V * sizeof(float) > (double)KL_MAX_BYTES) {
        msg_error("%s: %zu positions of %zu log-probabilities are more than 8 GiB: score a shorter text",
                  base_out ? base_out : base_in, r->n, V);
        return EXIT_DATA;
    }
    int fail = 0;
    if (per_token) fail |= !(r->nll = calloc(r->n ? r->n : 1, sizeof *r->nll));
    if (base_out || base_in) fail |= !(r->base = malloc((r->n ? r->n : 1) * V * sizeof *r->base));
    if (base_in) {
        fail |= !(r->kl = calloc(r->n ? r->n : 1, sizeof *r->kl)) ||
                !(r->dnll = calloc(r->n ? r->n : 1, sizeof *r->dnll)) || !(r->same = calloc(r->n ? r->n : 1, 1));
        r->compare = 1;
    }
    if (fail) {
        msg_error("out of memory for the per-position record of %zu positions", r->n);
        return EXIT_DATA;
    }
    return base_in ? kl_base_read(r, base_in) : 0;
}

void kl_record_free(KlRecord *r) {
    free(r->nll);
    free(r->base);
    free(r->kl);
    free(r->dnll);
    free(r->same);
}

// Reads path's rows into r->base, after checking that they are of this model's vocabulary and this
// text's tokens, and finite.
int kl_base_read(KlRecord *r, const char *path) {
    char *data = NULL;
    size_t len = 0, rows = r->n * r->V;
    NlError err;
    if (nl_read_file(path, KL_HEADER + (size_t)KL_MAX_BYTES, &data, &len, &err) != 0) return fail(&err);
    const unsigned char *h = (const unsigned char *)data;
    const char *why = NULL;
    char detail[160] = "";
    if (len < KL_HEADER || memcmp(h, KL_MAGIC, 8) != 0) why = "not a --kl-base file (no NLKLBASE header)";
    else if (get_le(h + 8, 4) != KL_VERSION)
        snprintf(detail, sizeof detail, "version %llu, not 1", (unsigned long long)get_le(h + 8, 4));
    else if (get_le(h + 12, 4) != r->V)
        snprintf(detail, sizeof detail, "written for a vocabulary of %llu, this model's has %zu",
                 (unsigned long long)get_le(h + 12, 4), r->V);
    else if (get_le(h + 16, 8) != r->n)
        snprintf(detail, sizeof detail, "holds %llu positions, this text scores %zu",
                 (unsigned long long)get_le(h + 16, 8), r->n);
    else if (get_le(h + 24, 8) != r->hash) why = "written for another text (its tokens differ)";
    else if (get_le(h + 32, 4) != (uint64_t)r->segments || get_le(h + 36, 4) != r->cut)
        snprintf(detail, sizeof detail, "written with --%s %llu, this run has --%s %zu: other contexts",
                 get_le(h + 32, 4) ? "segments" : "stride", (unsigned long long)get_le(h + 36, 4),
                 r->segments ? "segments" : "stride", r->cut);
    else if (len != KL_HEADER + rows * sizeof(float))
        snprintf(detail, sizeof detail, "%zu bytes, want %zu for its header and rows", len,
                 KL_HEADER + rows * sizeof(float));
    if (!why && *detail) why = detail;
    for (size_t i = 0; !why && i < rows; i++) {
        memcpy(&r->base[i], data + KL_HEADER + i * sizeof(float), sizeof(float));
        if (!isfinite(r->base[i]))
            snprintf(detail, sizeof detail, "position %zu holds a value that is not finite", i / r->V), why = detail;
    }
    free(data);
    if (why) {
        msg_error("%s: %s", path, why);
        return EXIT_DATA;
    }
    return 0;
}

int kl_base_write(FILE *f, const KlRecord *r) {
    unsigned char h[KL_HEADER];
    memcpy(h, KL_MAGIC, 8);
    put_le(h + 8, KL_VERSION, 4);
    put_le(h + 12, r->V, 4);
    put_le(h + 16, r->n, 8);
    put_le(h + 24, r->hash, 8);
    put_le(h + 32, (uint64_t)r->segments, 4);
    put_le(h + 36, r->cut, 4);
    return fwrite(h, 1, sizeof h, f) == sizeof h && fwrite(r->base, sizeof(float), r->n * r->V, f) == r->n * r->V ? 0
                                                                                                                  : -1;
}

// The NlEvalScoredFn: position `input`'s loss, and its log-softmax stored, or compared with the base's.
void kl_scored(void *ctx, size_t input, const float *logits, double nll) {
    KlRecord *r = ctx;
    if (r->nll) r->nll[input] = nll;
    if (!r->base) return;
    float *row = r->base + input * r->V;
    if (!r->compare) {
        nl_log_softmax(logits, r->V, row);
        return;
    }
    int same;
    r->kl[input] = nl_kl_from_logits(row, logits, r->V, &same);
    r->same[input] = (unsigned char)same;
    r->dnll[input] = nll + (double)row[r->ids[input + 1]];  // -ln q - (-ln p) of the target
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int kl_summary(const KlRecord *r, KlSummary *s) {
    double *sorted = malloc((r->n ? r->n : 1) * sizeof *sorted);
    if (!sorted) {
        msg_error("out of memory");
        return EXIT_DATA;
    }
    memset(s, 0, sizeof *s);
    nl_mean_stderr(r->kl, r->n, &s->kl, &s->kl_se);
    nl_mean_stderr(r->dnll, r->n, &s->ln_ratio, &s->ln_ratio_se);
    memcpy(sorted, r->kl, r->n * sizeof *sorted);
    qsort(sorted, r->n, sizeof *sorted, by_value);
    size_t same = 0;
    for (size_t i = 0; i < r->n; i++) same += r->same[i];
    if (r->n) {
        s->median = r->n % 2 ? sorted[r->n / 2] : 0.5 * (sorted[r->n / 2 - 1] + sorted[r->n / 2]);
        s->p99 = sorted[(size_t)ceil(0.99 * (double)r->n) - 1];  // the nearest rank
        s->max = sorted[r->n - 1];
        s->same_top = (double)same / (double)r->n;
        s->same_top_se = sqrt(s->same_top * (1 - s->same_top) / (double)r->n);
    }
    free(sorted);
    return 0;
}
