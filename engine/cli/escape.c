// escape.c — -e's escapes (llama.cpp's, strict): the text of -p and --stop with \n, \t, \r, \\, \',
// \", \xHH (one byte) and \uXXXX (one character, written as UTF-8) replaced; any other escape, a
// lone backslash at the end, a NUL or a surrogate is refused with its position.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>

#include "cli.h"
#include "escape.h"

static int hex_value(const char *s, int digits, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < digits; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return 0;
}

static size_t utf8_put(unsigned cp, char *out) {
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
    out[0] = (char)(0xE0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

// One escape at in (after its backslash) into out: the bytes written, and *used the characters read
// after the backslash; 0 with the reason in why when it is not one.
static size_t one_escape(const char *in, char *out, size_t *used, char *why, size_t cap) {
    static const char simple_from[] = "ntr\\'\"", simple_to[] = "\n\t\r\\'\"";
    const char *at = *in ? strchr(simple_from, *in) : NULL;
    unsigned v;
    *used = 1;
    if (at) return out[0] = simple_to[at - simple_from], 1;
    if (*in == 'x' && hex_value(in + 1, 2, &v) == 0 && v != 0) return *used = 3, out[0] = (char)v, 1;
    if (*in == 'u' && hex_value(in + 1, 4, &v) == 0 && v != 0 && (v < 0xD800 || v > 0xDFFF))
        return *used = 5, utf8_put(v, out);
    if (!*in) snprintf(why, cap, "a lone '\\' at the end");
    else if ((*in == 'x' || *in == 'u') && (hex_value(in + 1, *in == 'x' ? 2 : 4, &v) != 0))
        snprintf(why, cap, "'\\%c' needs %d hex digits", *in, *in == 'x' ? 2 : 4);
    else if (*in == 'x' || *in == 'u')
        snprintf(why, cap, "'\\%.*s' is %s", *in == 'x' ? 3 : 5, in, v ? "a surrogate" : "a NUL");
    else snprintf(why, cap, "unknown escape '\\%c' (known: \\n \\t \\r \\\\ \\' \\\" \\xHH \\uXXXX)", *in);
    return 0;
}

int unescape(const char *what, const char *text, char **out, size_t *len) {
    size_t n = strlen(text), k = 0;
    char *buf = malloc(n + 1), why[96];  // an escape never writes more bytes than it reads
    if (!buf) {
        msg_error("out of memory");
        return EXIT_DATA;
    }
    for (size_t i = 0; i < n;) {
        if (text[i] != '\\') {
            buf[k++] = text[i++];
            continue;
        }
        size_t used, wrote = one_escape(text + i + 1, buf + k, &used, why, sizeof why);
        if (!wrote) {
            msg_error("%s: %s at byte %zu (-e)", what, why, i + 1);  // counted from 1, as the tokenizer's are
            free(buf);
            return EXIT_USAGE;
        }
        k += wrote;
        i += 1 + used;
    }
    buf[k] = '\0';
    *out = buf;
    *len = k;
    return 0;
}
