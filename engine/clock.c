// clock.c — the one clock behind every time normlab reports (normlab.h).
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "normlab_internal.h"

double nl_clock_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
