// normlab_error.h — the one error convention of the normlab library (normlab.h includes it): every
// function that can fail returns 0, or -1 with an NlError filled, whose code callers can act on and
// whose one-line message names the file, key or value.
#ifndef NORMLAB_ERROR_H
#define NORMLAB_ERROR_H

// ---- errors (every function that can fail: 0, or -1 with err filled)

typedef enum {
    NL_OK = 0,
    NL_ERR_IO,  // a file cannot be opened, read or mapped
    NL_ERR_FORMAT,  // a file or a text is not what it must be (JSON, tensors, UTF-8, vocabulary)
    NL_ERR_ARG,  // an argument out of range (a stride, a path too long, options that disagree)
    NL_ERR_NOMEM,  // out of memory
    NL_ERR_NUMERIC,  // a NaN or an infinity where a number must be finite (logits, losses, weights)
} NlErrorCode;

typedef struct {
    NlErrorCode code;
    char msg[512];
} NlError;

#endif
