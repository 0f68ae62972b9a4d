// parallel.h — the engine's worker threads (internal). One call runs fn(ctx, worker) for every
// worker in [0, n_workers), each on its own thread (the caller's is worker 0), and returns when all
// are done. A worker whose thread could not be started runs on the caller's thread after worker 0:
// slower, never a different result.
#ifndef NL_PARALLEL_H
#define NL_PARALLEL_H

#include <stdatomic.h>
#include <stddef.h>

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

typedef void (*NlWorkerFn)(void *ctx, int worker);

// *v = min(*v, x), atomically: the first failed group of a run, whichever worker finds it.
void nl_atomic_lower(atomic_size_t *v, size_t x);

// Returns the number of threads that ran workers (>= 1).
int nl_parallel_run(int n_workers, NlWorkerFn fn, void *ctx);

#pragma GCC visibility pop

#endif
