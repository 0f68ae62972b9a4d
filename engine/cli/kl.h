// kl.h — eval's per-position record (kl.c).
#ifndef NL_CLI_KL_H
#define NL_CLI_KL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "normlab_lab.h"

// kl.c: eval's per-position record (the lab's, normlab_lab.h) and its --kl-base file
typedef struct {
    NlKlRecord pos;  // per-token losses, the base's rows, and against them the KL of each position
    uint64_t hash;  // of the text's token ids
    int segments;  // how the text was cut: 0 windows at a stride, 1 a recurrent model's segments
    size_t cut;  // that stride, or that count
} KlRecord;
// A record for n_ids tokens of a V-word model: per_token losses, this run's rows for base_out, or
// base_in's rows read and checked (its vocabulary, its text, finite). An exit status, the message
// printed; free with kl_record_free either way.
int kl_record_init(KlRecord *r, const char *base_out, const char *base_in, int per_token, size_t V, const int *ids,
                   size_t n_ids, int segments, size_t cut);
void kl_record_free(KlRecord *r);
int kl_base_read(KlRecord *r, const char *path);
int kl_base_write(FILE *f, const KlRecord *r);  // 0, or -1 when a write failed

#endif
