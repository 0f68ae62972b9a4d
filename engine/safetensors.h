// safetensors.h — validating parser of the safetensors container, from bytes in memory.
//
// Layout: u64 little-endian N, then N bytes of JSON header {name: {dtype, shape, data_offsets},
// "__metadata__": {string: string}}, then the data section. Rules enforced (each failure names the
// tensor and what was expected): header length within the file and the 100 MB cap, valid JSON
// object with no duplicate keys, only the three known fields per entry, dtype F32, shape of
// non-negative integers, offsets inside the data section, byte length = product(shape) * 4
// (overflow-checked), tensors contiguous and non-overlapping, no bytes after the last tensor.
#ifndef NL_SAFETENSORS_H
#define NL_SAFETENSORS_H

#include <stddef.h>

#include "normlab.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER ((size_t)100 * 1000 * 1000)

typedef struct {
    char *name;  // owned
    int ndim;
    size_t shape[ST_MAX_DIMS];
    size_t nbytes;
    const unsigned char *data;  // borrowed from the parsed buffer; may be unaligned
} StTensor;

typedef struct {
    StTensor *tensors;  // (n) in file order
    size_t n;
    char **meta_keys, **meta_values;  // (n_meta) owned
    size_t n_meta;
} StFile;

// Parses buf[0..len). On success *out owns names and metadata; tensor data points into buf, which
// must outlive *out. `what` names the file in messages.
int nl_st_parse(StFile *out, const unsigned char *buf, size_t len, const char *what, NlError *err);
void nl_st_free(StFile *file);  // releases what nl_st_parse allocated; NULL or zeroed is fine

#pragma GCC visibility pop

#endif
