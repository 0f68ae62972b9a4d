// nl_error.h — the one error convention of the library, tokenizer included: a function that can
// fail returns -1 and fills an NlError with a code callers can act on and a one-line message naming
// the file, key or value (never a command-line flag: the library does not know how it is called).
#ifndef NL_ERROR_H
#define NL_ERROR_H

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

// Sets err (when not NULL) to code and the formatted message; returns -1 for `return nl_error(...)`.
int nl_error(NlError *err, NlErrorCode code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
