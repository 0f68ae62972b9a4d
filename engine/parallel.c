// parallel.c — worker threads for the engine: plain pthreads, started per call. Calls are coarse
// (one per eval, per batch of sample streams), so a pool would save ~30 us of thread creation a
// command and cost a lifetime to manage.
#define _POSIX_C_SOURCE 200809L
#include "parallel.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    NlWorkerFn fn;
    void *ctx;
    int worker;
} Job;

static void *job_main(void *arg) {
    Job *j = arg;
    j->fn(j->ctx, j->worker);
    return NULL;
}

int nl_parallel_run(int n_workers, NlWorkerFn fn, void *ctx) {
    if (n_workers <= 1) {
        fn(ctx, 0);
        return 1;
    }
    pthread_t *tid = malloc((size_t)n_workers * sizeof *tid);
    Job *jobs = malloc((size_t)n_workers * sizeof *jobs);
    int started = 0, first_unstarted = 1;
    for (int w = 1; tid && jobs && w < n_workers; w++, first_unstarted++) {
        jobs[started] = (Job){fn, ctx, w};
        if (pthread_create(&tid[started], NULL, job_main, &jobs[started]) != 0) break;
        started++;
    }
    fn(ctx, 0);
    for (int w = first_unstarted; w < n_workers; w++) fn(ctx, w);  // no thread for it: its share runs here
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
    free(tid);
    free(jobs);
    return started + 1;
}
