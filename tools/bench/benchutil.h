// benchutil.h — what the C benchmarks in tools/bench share: a monotonic clock and repeatable
// non-random inputs. Header-only (each benchmark is one file, built on its own).
#ifndef NL_BENCHUTIL_H
#define NL_BENCHUTIL_H

#include <stdlib.h>
#include <time.h>

// Seconds on the monotonic clock.
static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// n floats in [-0.5, 0.5), the same on every run; NULL when memory is refused.
static inline float *random_floats(size_t n) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; p && i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    return p;
}

#endif
