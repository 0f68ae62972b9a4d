// nl_error.c — filling an NlError (normlab.h's type; nl_error is normlab_internal.h's).
#include "normlab_internal.h"

#include <stdarg.h>
#include <stdio.h>

int nl_error(NlError *err, NlErrorCode code, const char *fmt, ...) {
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}
