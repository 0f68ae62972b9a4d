// gguf.h — validating parser of llama.cpp's GGUF container (ggml's docs/gguf.md), from bytes in
// memory, little-endian, versions 2 and 3 (the same layout; version 1's 32-bit counts are refused).
//
// Layout: "GGUF", u32 version, u64 tensor count, u64 key count; the keys (a string, a u32 type, a
// value); the tensor infos (a name, u32 n_dims, n_dims u64 ne, u32 type, u64 offset); padding to
// general.alignment (default 32); the data, each tensor at its offset from the data's start. A string
// is a u64 length and its bytes; an array a u32 element type, a u64 count and the elements.
// Rules enforced (each failure names the key or tensor and what was expected): the magic, the
// version (a big-endian file named as such), every count, length and size within the file and free
// of overflow before anything is allocated, keys and tensor names unique and at most 255 bytes, no
// array of arrays, 1 to 4 dims whose product does not overflow, a known type id (IQ, ternary and
// the other types normlab does not read refused by name), each row whole blocks, each offset a
// multiple of the alignment, every tensor inside the data and none overlapping another.
#ifndef NL_GGUF_H
#define NL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "normlab.h"

#pragma GCC visibility push(hidden)

// A value's type, as GGUF numbers them.
typedef enum {
    GGUF_U8 = 0,
    GGUF_I8 = 1,
    GGUF_U16 = 2,
    GGUF_I16 = 3,
    GGUF_U32 = 4,
    GGUF_I32 = 5,
    GGUF_F32 = 6,
    GGUF_BOOL = 7,
    GGUF_STRING = 8,
    GGUF_ARRAY = 9,
    GGUF_U64 = 10,
    GGUF_I64 = 11,
    GGUF_F64 = 12,
    GGUF_N_TYPES
} GgufType;

typedef struct {
    const char *s;  // borrowed from the buffer: not NUL-terminated
    size_t len;
} GgufString;

typedef struct {
    char *key;  // owned, NUL-terminated
    GgufType type;
    GgufType elem;  // an array's element type
    size_t count;  // an array's elements (1 for a scalar)
    const unsigned char *data;  // the value's (a scalar's, or an array's first element's) bytes in the buffer
    GgufString *strings;  // (count) owned: a string's or an array of strings' elements, else NULL
} GgufKv;

typedef struct {
    char *name;  // owned
    int n_dims;
    uint64_t ne[4];  // ne[0] the fastest-varying (a matrix's columns), then its rows
    unsigned type;  // GGUF's tensor type id (gguf_type_name)
    const unsigned char *data;  // in the buffer
    size_t nbytes;
} GgufTensor;

typedef struct {
    uint32_t version;
    size_t alignment;
    GgufKv *kvs;  // (n_kv) file order
    size_t n_kv;
    GgufTensor *tensors;  // (n_tensors) file order
    size_t n_tensors;
} GgufFile;

// The tensor type ids normlab reads (ggml's numbers).
enum {
    GGUF_T_F32 = 0,
    GGUF_T_F16 = 1,
    GGUF_T_Q4_0 = 2,
    GGUF_T_Q4_1 = 3,
    GGUF_T_Q5_0 = 6,
    GGUF_T_Q5_1 = 7,
    GGUF_T_Q8_0 = 8,
    GGUF_T_Q2_K = 10,
    GGUF_T_Q3_K = 11,
    GGUF_T_Q4_K = 12,
    GGUF_T_Q5_K = 13,
    GGUF_T_Q6_K = 14,
    GGUF_T_BF16 = 30
};

// Parses buf[0..len) (rules above). On success *out owns its keys, names and string tables; values
// and tensor data point into buf, which must outlive *out. `what` names the file in messages.
int nl_gguf_parse(GgufFile *out, const unsigned char *buf, size_t len, const char *what, NlError *err);
void nl_gguf_free(GgufFile *file);  // NULL or zeroed is fine

// The key named key, or NULL.
const GgufKv *nl_gguf_find(const GgufFile *file, const char *key);
// A tensor type id's name ("Q4_K"), or NULL for an id ggml never had.
const char *nl_gguf_type_name(unsigned type);

// Typed reads of a parsed file's keys, for the model's and the tokenizer's readers; errors name `what`
// and the key. A key named by suffix is {arch}.suffix where arch is set, else suffix itself.
typedef struct {
    const GgufFile *f;
    const char *arch, *what;
    NlError *err;
} GgufMeta;

// The key {arch}.suffix (arch 0: suffix), its name written into name[cap], or NULL.
const GgufKv *nl_gguf_key(const GgufMeta *m, const char *suffix, int arch, char *name, size_t cap);
// An integer key (any integer type) in [lo, hi]; a missing one is def, or an error where required.
int nl_gguf_get_int(const GgufMeta *m, const char *suffix, int arch, int required, int64_t lo, int64_t hi, int64_t def,
                    int64_t *out);
// A float key ({arch}.suffix, F32 or F64); a missing one is def, or an error where required.
int nl_gguf_get_float(const GgufMeta *m, const char *suffix, int required, double def, double *out);
int nl_gguf_get_bool(const GgufMeta *m, const char *name, int def, int *out);
// A string key equal to one of choices (NULL-terminated): *index; missing or another: an error ending in said.
int nl_gguf_get_choice(const GgufMeta *m, const char *name, const char *const *choices, const char *said, int *index);
// An array key of n elements (0: any count) of type elem, or *out NULL where it is absent.
int nl_gguf_get_array(const GgufMeta *m, const char *name, GgufType elem, size_t n, const GgufKv **out);

#pragma GCC visibility pop

#endif
