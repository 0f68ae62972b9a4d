// fileio.h — reading untrusted files: regular files only, sizes from fstat, caps checked first.
#ifndef NL_FILEIO_H
#define NL_FILEIO_H

#include <stddef.h>

#include "normlab.h"

// Reads a whole regular file of at most cap bytes into a new NUL-terminated buffer (*buf, freed
// by the caller with free()).
int file_read_all(const char *path, size_t cap, char **buf, size_t *len, NlError *err);

// Memory-maps a whole non-empty regular file read-only. Release with file_unmap(addr, len).
int file_map(const char *path, const unsigned char **addr, size_t *len, NlError *err);
void file_unmap(const unsigned char *addr, size_t len);

#endif
