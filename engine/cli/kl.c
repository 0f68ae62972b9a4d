// kl.c — eval's per-position record (the lab's NlKlRecord, kldiv.c) and its file: the log-probabilities
// of a reference run written (--kl-base FILE) and read back to compare a run with (--kl FILE), as
// llama-perplexity's --kl-divergence-base and --kl-divergence judge a quantization.
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
    r->hash = ids_hash(ids, n_ids);
    size_t n = n_ids > 1 ? n_ids - 1 : 0;
    if ((base_out || base_in) && (double)n * (double)V * sizeof(float) > (double)KL_MAX_BYTES) {
        msg_error("%s: %zu positions of %zu log-probabilities are more than 8 GiB: score a shorter text",
                  base_out ? base_out : base_in, n, V);
        return EXIT_DATA;
    }
    int what = (per_token ? NL_KL_LOSSES : 0) | (base_out ? NL_KL_BASE : 0) | (base_in ? NL_KL_COMPARE : 0);
    NlError err;
    if (nl_kl_record_init(&r->pos, V, ids, n_ids, what, &err) != 0) {
        msg_error("%s", err.msg);
        return EXIT_DATA;
    }
    return base_in ? kl_base_read(r, base_in) : 0;
}

void kl_record_free(KlRecord *r) { nl_kl_record_free(&r->pos); }

// Reads path's rows into r->pos.base, after checking that they are of this model's vocabulary and this
// text's tokens, and finite.
int kl_base_read(KlRecord *r, const char *path) {
    char *data = NULL;
    size_t len = 0, rows = r->pos.n * r->pos.V;
    NlError err;
    if (nl_read_file(path, KL_HEADER + (size_t)KL_MAX_BYTES, &data, &len, &err) != 0) return fail(&err);
    const unsigned char *h = (const unsigned char *)data;
    const char *why = NULL;
    char detail[160] = "";
    if (len < KL_HEADER || memcmp(h, KL_MAGIC, 8) != 0) why = "not a --kl-base file (no NLKLBASE header)";
    else if (get_le(h + 8, 4) != KL_VERSION)
        snprintf(detail, sizeof detail, "version %llu, not 1", (unsigned long long)get_le(h + 8, 4));
    else if (get_le(h + 12, 4) != r->pos.V)
        snprintf(detail, sizeof detail, "written for a vocabulary of %llu, this model's has %zu",
                 (unsigned long long)get_le(h + 12, 4), r->pos.V);
    else if (get_le(h + 16, 8) != r->pos.n)
        snprintf(detail, sizeof detail, "holds %llu positions, this text scores %zu",
                 (unsigned long long)get_le(h + 16, 8), r->pos.n);
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
        memcpy(&r->pos.base[i], data + KL_HEADER + i * sizeof(float), sizeof(float));
        if (!isfinite(r->pos.base[i]))
            snprintf(detail, sizeof detail, "position %zu holds a value that is not finite", i / r->pos.V),
                why = detail;
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
    put_le(h + 12, r->pos.V, 4);
    put_le(h + 16, r->pos.n, 8);
    put_le(h + 24, r->hash, 8);
    put_le(h + 32, (uint64_t)r->segments, 4);
    put_le(h + 36, r->cut, 4);
    return fwrite(h, 1, sizeof h, f) == sizeof h &&
                   fwrite(r->pos.base, sizeof(float), r->pos.n * r->pos.V, f) == r->pos.n * r->pos.V
               ? 0
               : -1;
}
