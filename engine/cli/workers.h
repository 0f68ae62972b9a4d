// workers.h — run states, profilers and worker sets, and a run's sampler, as the options ask (workers.c).
#ifndef NL_CLI_WORKERS_H
#define NL_CLI_WORKERS_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

int make_state_as(const Options *o, const NlModel *model, int batch, int product_threads, int warn, NlState **state);

// One run state per engine worker thread, and with profiling one profiler per state.
typedef struct {
    int n;
    NlState **states;  // (n)
    NlProfiler **profs;  // (n) NULL entries when not profiling
} Workers;
// Creates n states of `batch` sequences, each product's rows split over product_threads threads
// (NlRunOptions.threads; the first warns when the norm or placement are overridden); with profile,
// a profiler per state with room for n_forward forward calls each. Returns 0 or an exit status
// after printing the message; free with workers_free either way.
int workers_create(Workers *w, const Options *o, const NlModel *model, int n, int batch, int product_threads,
                   int profile, size_t n_forward);
// The workers' profiles merged into the first profiler, or NULL when not profiling.
NlProfiler *workers_profile(Workers *w);
void workers_free(Workers *w);

// A sampler of the options' parameters for model (--repeat-last-n -1: the model's context, at most
// 1048576 for a recurrent one), seeded so, its penalties' history starting with the prompt's
// ids[0..n) (llama.cpp's accept of the prompt). An exit status, the message printed.
int make_sampler(const Options *o, const NlModel *model, uint64_t seed, const int *ids, size_t n, NlSampler **out);

#endif
