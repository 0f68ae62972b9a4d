// distance.h — how far apart two names are, for "did you mean" (distance.c).
#ifndef NL_CLI_DISTANCE_H
#define NL_CLI_DISTANCE_H

#include <stddef.h>

// The Levenshtein distance of a and b (b's length when b has 64 characters or more).
size_t edit_distance(const char *a, const char *b);

#endif
