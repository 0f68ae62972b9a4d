// safetensors.h — validating parser of the safetensors container, from bytes in memory.
//
// Layout: u64 little-endian N, then N bytes of JSON header {name: {dtype, shape, data_offsets},
// "__metadata__": {string: string}}, then the data section. Rules enforced (each failure names the
// tensor and what was expected): header length within the file and the 100 MB cap, valid JSON
// object with no duplicate keys, only the three known fields per entry, dtype F32, F16, BF16 or U8,
// shape of non-negative integers, offsets inside the data section, byte length = product(shape) *
// the dtype's size (overflow-checked), tensors contiguous and non-overlapping, no bytes after the
// last tensor. A U8 tensor holds blocks of a quantized matrix (docs/format.md): __metadata__'s
// "dtype.NAME" names their type (Q8_0, Q4_0), its shape is (rows, bytes a row), and a row must be
// whole blocks; the tensor is then listed with that type and its weights' shape (rows, cols), and
// the "dtype." entries are not listed among the metadata.
#ifndef NL_SAFETENSORS_H
#define NL_SAFETENSORS_H

#include <stddef.h>
#include <stdio.h>

#include "normlab.h"

// Internal: hidden from the symbols a shared object built from these files would export.
#pragma GCC visibility push(hidden)

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER ((size_t)100 * 1000 * 1000)

typedef struct {
    char *name;  // owned
    int ndim;
    size_t shape[ST_MAX_DIMS];  // of the values stored: a quantized matrix's (rows, cols) of weights
    size_t nbytes;
    const unsigned char *data;  // borrowed from the parsed buffer; may be unaligned
    NlDType type;  // F32, F16, BF16, or the blocks a U8 tensor holds (Q8_0, Q4_0)
} StTensor;

// The key of __metadata__ that names the type of U8 tensor NAME's blocks: "dtype." NAME.
#define ST_DTYPE_KEY "dtype."

typedef struct {
    StTensor *tensors;  // (n) in file order
    size_t n;
    char **meta_keys, **meta_values;  // (n_meta) owned
    size_t n_meta;
} StFile;

// One tensor of a file to write: its name, dtype ("F32", "F16", "BF16", "U8") and shape as stored.
typedef struct {
    const char *name;
    const char *dtype;
    int ndim;
    size_t shape[ST_MAX_DIMS];
    size_t nbytes;
} StEntry;

// Writes the length and header of a safetensors file holding entries[0..n) in this order, their data
// to follow back to back, with n_meta metadata pairs; the header is padded with spaces to a multiple
// of 8 bytes, so that data of any dtype starting on one stays aligned. *header_bytes gets what it wrote.
int nl_st_write_header(FILE *out, const StEntry *entries, size_t n, const char *const *meta_keys,
                       const char *const *meta_values, size_t n_meta, size_t *header_bytes, NlError *err);

// Parses buf[0..len). On success *out owns names and metadata; tensor data points into buf, which
// must outlive *out. `what` names the file in messages.
int nl_st_parse(StFile *out, const unsigned char *buf, size_t len, const char *what, NlError *err);
void nl_st_free(StFile *file);  // releases what nl_st_parse allocated; NULL or zeroed is fine

#pragma GCC visibility pop

#endif
