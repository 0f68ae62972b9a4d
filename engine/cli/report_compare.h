// report_compare.h — writes `normlab compare`'s rows as a text table, JSON lines or CSV. Each returns
// 0, or -1 when writing to f failed; it writes only to the stream it is given.
#ifndef NL_CLI_REPORT_COMPARE_H
#define NL_CLI_REPORT_COMPARE_H

#include <stdio.h>

#include "normlab_lab.h"

// `normlab compare` rows: labels[i] names the model of rows[i].
typedef struct {
    const char *text;  // the text file scored
    int threads;  // worker threads measuring rows (1: one row at a time)
    int repeats;
    int invariance;  // rows carry the invariance experiment
    int quantize;  // some rows are quantized (--quantize, --quantize-act): the quantization section
    int lens;  // rows carry the logit lens
    int lens_scale;  // NlLensScale the lens was asked to read with
    int outliers;  // rows carry the outlier statistics
    int attention;  // rows carry the attention statistics
    int pattern;  // and one head's pattern (--attention-pattern)
    int fold;  // some rows are folded (--fold): the folding section
    const NlCompareJob *jobs;  // the rows' jobs: the pattern's token pieces in JSON (NULL: none written)
} CompareInfo;

int report_compare_text(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n,
                        const CompareInfo *info);
int report_compare_json(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n,
                        const CompareInfo *info);
int report_compare_csv(FILE *f, const NlCompareRow *rows, const char *const *labels, size_t n, const CompareInfo *info);

#endif
