// kl.h — eval's per-position record (kl.c).
#ifndef NL_CLI_KL_H
#define NL_CLI_KL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// kl.c: eval's per-position record (per-token losses, --kl-base, --kl)
typedef struct {
    size_t n, V;  // the positions scored (the text's tokens but the first), the vocabulary
    uint64_t hash;  // of the text's token ids
    int segments;  // how the text was cut: 0 windows at a stride, 1 a recurrent model's segments
    size_t cut;  // that stride, or that count
    const int *ids;  // (n + 1) the text's
    double *nll;  // (n) each position's loss, or NULL
    float *base;  // (n, V) log-softmax: this run's (--kl-base) or the file's (--kl), or NULL
    int compare;  // --kl: base is the reference the run is compared with
    double *kl, *dnll;  // (n) --kl: KL(base || run), and the loss less the base's
    unsigned char *same;  // (n) --kl: the same most likely token
} KlRecord;
typedef struct {
    double kl, kl_se, median, p99, max;  // nats
    double same_top, same_top_se;  // fractions
    double ln_ratio, ln_ratio_se;  // mean loss less the base's: ln(PPL / PPL(base))
} KlSummary;
// A record for n_ids tokens of a V-word model: per_token losses, this run's rows for base_out, or
// base_in's rows read and checked (its vocabulary, its text, finite). An exit status, the message
// printed; free with kl_record_free either way.
int kl_record_init(KlRecord *r, const char *base_out, const char *base_in, int per_token, size_t V, const int *ids,
                   size_t n_ids, int segments, size_t cut);
void kl_record_free(KlRecord *r);
int kl_base_read(KlRecord *r, const char *path);
int kl_base_write(FILE *f, const KlRecord *r);  // 0, or -1 when a write failed
void kl_scored(void *ctx, size_t input, const float *logits, double nll);  // NlEvalScoredFn on a KlRecord
int kl_summary(const KlRecord *r, KlSummary *s);

#endif
