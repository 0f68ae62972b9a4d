// parallel.c — the engine's worker threads, in two forms for two grains of work:
//   nl_parallel_run: plain pthreads started per call, for coarse calls (one per eval, per group of
//     sample streams), where ~30 us of thread creation a command is nothing;
//   NlPool: workers a state keeps for its life, for the products of one decode step (1-50 us each on
//     the shipped and nanoGPT models), far too short for threads started per call.
//
// When the workers are exactly as many as the CPUs the process may run on, worker w is bound to the
// w-th of them for the call (the calling thread gets its own mask back afterwards). Left to the
// scheduler, two workers on this project's 2-vCPU machines shared one CPU for part of the run in 5
// of 12 runs of --samples 16 (0.16-0.19 s against 0.12 s); bound, in none of 12. With fewer workers
// than CPUs nothing is bound, so concurrent processes can still spread.
#define _GNU_SOURCE
#include "parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

typedef struct {
    NlWorkerFn fn;
    void *ctx;
    int worker;
    const cpu_set_t *cpus;  // the process's CPUs when workers are bound to them, else NULL
} Job;

// Binds the calling thread to the worker-th CPU of *cpus.
static void bind_to(const cpu_set_t *cpus, int worker) {
    if (!cpus) return;
    for (int c = 0, k = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, cpus) && k++ == worker) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);  // advice only: fine if refused
            return;
        }
}

static void *job_main(void *arg) {
    Job *j = arg;
    bind_to(j->cpus, j->worker);
    j->fn(j->ctx, j->worker);
    return NULL;
}

void nl_atomic_lower(atomic_size_t *v, size_t x) {
    size_t cur = atomic_load(v);
    while (x < cur && !atomic_compare_exchange_weak(v, &cur, x)) {}
}

int nl_parallel_run(int n_workers, NlWorkerFn fn, void *ctx) {
    if (n_workers <= 1) {
        fn(ctx, 0);
        return 1;
    }
    cpu_set_t mask;
    int bind = pthread_getaffinity_np(pthread_self(), sizeof mask, &mask) == 0 && CPU_COUNT(&mask) == n_workers;
    const cpu_set_t *cpus = bind ? &mask : NULL;
    pthread_t *tid = malloc((size_t)n_workers * sizeof *tid);
    Job *jobs = malloc((size_t)n_workers * sizeof *jobs);
    int started = 0, first_unstarted = 1;
    for (int w = 1; tid && jobs && w < n_workers; w++, first_unstarted++) {
        jobs[started] = (Job){fn, ctx, w, cpus};
        if (pthread_create(&tid[started], NULL, job_main, &jobs[started]) != 0) break;
        started++;
    }
    bind_to(cpus, 0);
    fn(ctx, 0);
    for (int w = first_unstarted; w < n_workers; w++) fn(ctx, w);  // no thread for it: its share runs here
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
    if (bind) (void)pthread_setaffinity_np(pthread_self(), sizeof mask, &mask);
    free(tid);
    free(jobs);
    return started + 1;
}

// ---- a pool kept for a state's life
//
// A run publishes (fn, ctx) and bumps `generation`; its n_workers shares are then claimed one by
// one, each exactly once: a share s is free in generation g while claimed[s] is g - 1, and taken by
// the compare-and-swap to g. Every participant tries its own share first (worker w: share w, so
// that a core keeps meeting the same rows of every weight), then any left. The caller does the
// same, so a worker the scheduler has not run yet delays nothing: its share is done by whoever is
// free, with the same arithmetic. The caller returns when `done` counts every share.
// Waiting workers spin first (a decode step's next product comes within microseconds), then sleep
// on the condition variable. A worker counts itself in `sleepers` before its last look at
// `generation`, and a run reads `sleepers` after its bump (both sequentially consistent): either
// the worker sees the bump or the run sees the sleeper and wakes it, under the mutex. A run with no
// sleeper touches neither mutex nor condition variable.
struct NlPool {
    int n_workers;  // the caller (worker 0) and n_workers - 1 threads
    pthread_t *tids;  // (n_workers - 1)
    atomic_uint *claimed;  // (n_workers * CLAIM_STRIDE) the generation that took each share, a cache line each
    pthread_mutex_t mu;
    pthread_cond_t wake;
    atomic_uint generation;
    atomic_int done;  // shares finished in the current generation
    atomic_int sleepers;  // workers asleep on `wake`, or about to be
    atomic_int stop;  // 1: the workers exit at the next generation
    NlWorkerFn fn;
    void *ctx;
    int bound;  // 1: each worker bound to a CPU of its own, the caller to the first (mask: its own before)
    pthread_t caller;
    cpu_set_t mask;  // the process's CPUs, when bound
};

typedef struct {
    NlPool *pool;
    int worker;
} PoolWorker;

// ~1 ms of pause instructions before an idle worker sleeps; a caller waiting on a share taken by a
// worker spins this long between yields, in case that worker was preempted.
enum { SPIN_CHECKS = 20000, WAIT_SPINS = 2000, CLAIM_STRIDE = 64 / sizeof(atomic_uint) };

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static unsigned wait_for_run(NlPool *p, unsigned seen) {
    for (int i = 0; i < SPIN_CHECKS; i++) {
        unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g != seen) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    unsigned g;
    while ((g = atomic_load(&p->generation)) == seen) pthread_cond_wait(&p->wake, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
    return g;
}

static int claim(NlPool *p, int share, unsigned g) {
    unsigned free_mark = g - 1;
    return atomic_compare_exchange_strong(&p->claimed[share * CLAIM_STRIDE], &free_mark, g);
}

// Runs every share of generation g that participant `self` can still claim, its own first.
static void run_shares(NlPool *p, unsigned g, int self) {
    for (int k = 0; k < p->n_workers; k++) {
        int share = (self + k) % p->n_workers;
        if (!claim(p, share, g)) continue;
        p->fn(p->ctx, share);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
    }
}

static void *pool_main(void *arg) {
    PoolWorker *pw = arg;
    NlPool *p = pw->pool;
    int worker = pw->worker;
    free(pw);
    if (p->bound) bind_to(&p->mask, worker);
    for (unsigned seen = 0;;) {
        seen = wait_for_run(p, seen);
        if (atomic_load(&p->stop)) return NULL;
        run_shares(p, seen, worker);
    }
}

// Publishes (fn, ctx), runs shares beside the workers, and returns once every share is done.
static void pool_run_all(NlPool *p, NlWorkerFn fn, void *ctx) {
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    unsigned g = atomic_fetch_add(&p->generation, 1) + 1;
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    run_shares(p, g, 0);
    for (int i = 1; atomic_load_explicit(&p->done, memory_order_acquire) < p->n_workers; i++) {
        cpu_relax();
        if (i % WAIT_SPINS == 0) sched_yield();
    }
}

int nl_cpus_available(void) {
    cpu_set_t cpus;
    return pthread_getaffinity_np(pthread_self(), sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
}

NlPool *nl_pool_create(int n_workers) {
    if (n_workers < 2) return NULL;
    NlPool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->tids = malloc((size_t)(n_workers - 1) * sizeof *p->tids);
    p->claimed = malloc((size_t)n_workers * CLAIM_STRIDE * sizeof *p->claimed);
    if (!p->tids || !p->claimed || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->tids);
        free(p->claimed);
        free(p);
        return NULL;
    }
    pthread_cond_init(&p->wake, NULL);
    atomic_init(&p->generation, 0);
    for (int w = 0; w < n_workers; w++) atomic_init(&p->claimed[w * CLAIM_STRIDE], 0);  // free in generation 1
    atomic_init(&p->done, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->stop, 0);
    // As in nl_parallel_run: with a worker for every CPU the process may use, each gets its own, so
    // that its share of the weights stays in that core's cache, and no two spin on one CPU.
    p->caller = pthread_self();
    p->bound = pthread_getaffinity_np(p->caller, sizeof p->mask, &p->mask) == 0 && CPU_COUNT(&p->mask) == n_workers;
    if (p->bound) bind_to(&p->mask, 0);
    int started = 0;  // threads run workers 1..started: a refused thread ends the list
    for (int w = 1; w < n_workers; w++, started++) {
        PoolWorker *pw = malloc(sizeof *pw);
        if (pw) *pw = (PoolWorker){p, w};
        if (!pw || pthread_create(&p->tids[started], NULL, pool_main, pw) != 0) {
            free(pw);
            break;
        }
    }
    p->n_workers = started + 1;
    if (started == 0) {  // not one thread: the caller alone, without a pool
        nl_pool_free(p);
        return NULL;
    }
    return p;
}

void nl_pool_free(NlPool *p) {
    if (!p) return;
    if (p->n_workers > 1) {  // the workers see `stop` at the bump, and exit
        atomic_store(&p->stop, 1);
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->generation, 1);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    for (int i = 0; i < p->n_workers - 1; i++) pthread_join(p->tids[i], NULL);
    if (p->bound && pthread_equal(p->caller, pthread_self()))
        (void)pthread_setaffinity_np(p->caller, sizeof p->mask, &p->mask);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->tids);
    free(p->claimed);
    free(p);
}

int nl_pool_workers(const NlPool *p) { return p ? p->n_workers : 1; }

void nl_pool_run(NlPool *p, NlWorkerFn fn, void *ctx) {
    if (!p) {
        fn(ctx, 0);
        return;
    }
    pool_run_all(p, fn, ctx);
}
