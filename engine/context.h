// context.h — the sequence context's shift policy (context.c), private to the core and its tests:
// how many of a window's tokens a feed that overflows it keeps.
#ifndef NL_CONTEXT_H
#define NL_CONTEXT_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

// The tokens a context shift keeps of a full window of T: the most recent T/2 (at least 1).
size_t nl_context_shift_keep(size_t T);

#pragma GCC visibility pop

#endif
