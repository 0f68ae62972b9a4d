// fileio.h — reading untrusted files: regular files only, sizes from fstat, caps checked first.
// Files are opened relative to a directory descriptor (AT_FDCWD for plain paths), so that the
// files of one model directory all come from the same directory even if it is renamed meanwhile.
// Messages name `what` (the caller's, already short enough), never a path cut by a buffer.
#ifndef NL_FILEIO_H
#define NL_FILEIO_H

#include <stddef.h>

#include "normlab.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

// Reads a whole regular file of at most cap bytes into a new NUL-terminated buffer (*buf, freed
// by the caller with free()).
int nl_file_read_all(int dirfd, const char *name, const char *what, size_t cap, char **buf, size_t *len, NlError *err);

// Memory-maps a whole non-empty regular file read-only. Release with nl_file_unmap(addr, len).
int nl_file_map(int dirfd, const char *name, const char *what, const unsigned char **addr, size_t *len, NlError *err);
void nl_file_unmap(const unsigned char *addr, size_t len);

// s for a message: itself when under 160 bytes, else its first and last 76 bytes (whole UTF-8
// characters) around "...", in buf. Returns buf or s.
enum { NL_CUT_BUF = 168 };
const char *nl_cut(char buf[NL_CUT_BUF], const char *s);

#pragma GCC visibility pop

#endif
