// distance.c — the edit distance behind every "did you mean": commands, options and model names.
#include <string.h>

#include "distance.h"

size_t edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b), row[64];
    if (m >= 64) return m;
    for (size_t j = 0; j <= m; j++) row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[m];
}
