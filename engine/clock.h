// clock.h — the one clock behind every time normlab reports (generate's and eval's seconds, compare's
// speeds, the profiler's fallback): CLOCK_MONOTONIC, in seconds.
#ifndef NL_CLOCK_H
#define NL_CLOCK_H

#include <time.h>

static inline double nl_clock_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
