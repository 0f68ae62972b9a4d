// parallel.h — the engine's worker threads (internal). One call runs fn(ctx, worker) for every
// worker in [0, n_workers), each on its own thread (the caller's is worker 0), and returns when all
// are done. A worker whose thread could not be started runs on the caller's thread after worker 0:
// slower, never a different result.
#ifndef NL_PARALLEL_H
#define NL_PARALLEL_H

#include <stdatomic.h>
#include <stddef.h>

#include "normlab_internal.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

// *v = min(*v, x), atomically: the first failed group of a run, whichever worker finds it.
void nl_atomic_lower(atomic_size_t *v, size_t x);

// nl_parallel_run (normlab_internal.h) runs one call's workers.

// A pool of threads kept for a state's life, for work too fine for nl_parallel_run: a decode step's
// products, each a few microseconds. nl_pool_run(p, fn, ctx) runs fn(ctx, s) once for every share s
// in [0, n_workers) and returns when all are done. A share is not tied to a thread: each worker
// (the caller is worker 0) runs its own share first and then any left, so fn must depend on s
// only. Idle workers spin for about a millisecond, then sleep until the next run. NULL is a pool of
// one worker (the caller alone).
typedef struct NlPool NlPool;

// NULL when n_workers < 2, or when a thread or memory is refused (then work runs on the caller).
// Workers beyond the CPUs only spin against each other: callers keep n_workers <= nl_cpus_available().
NlPool *nl_pool_create(int n_workers);
int nl_cpus_available(void);  // the CPUs the calling thread may run on (1 if unknown)
void nl_pool_free(NlPool *p);  // NULL-safe
int nl_pool_workers(const NlPool *p);  // 1 for NULL
void nl_pool_run(NlPool *p, NlWorkerFn fn, void *ctx);

#pragma GCC visibility pop

#endif
