// msg.c — escaping and printing of diagnostics (msg.h).
#include "msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "normlab.h"

static int is_hidden(uint32_t c) {
    return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || c == 0x2028 || c == 0x2029 ||
           (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) || c == 0x200E || c == 0x200F ||
           c == 0x061C;  // the bidi controls: embeddings, overrides, isolates and the marks
}

// Appends the escaped form of s to out (unbounded scratch of at least 6 * strlen(s) + 1 bytes).
static size_t escape_all(char *out, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, left = strlen(s);
    while (*p) {
        uint32_t cp;
        size_t n = nl_utf8_decode((const char *)p, left, &cp);
        if (n == 0) {
            o += (size_t)sprintf(out + o, "\\x%02x", *p);
            p++;
            left--;
            continue;
        }
        left -= n;
        if (!is_hidden(cp)) {
            memcpy(out + o, p, n);
            o += n;
            p += n;
            continue;
        }
        if (cp == '\n') o += (size_t)sprintf(out + o, "\\n");
        else if (cp == '\t') o += (size_t)sprintf(out + o, "\\t");
        else if (cp == '\r') o += (size_t)sprintf(out + o, "\\r");
        else o += (size_t)sprintf(out + o, "\\u%04x", cp);
        p += n;
    }
    out[o] = '\0';
    return o;
}

// Start of the UTF-8 character that contains byte i of s.
static size_t char_start(const char *s, size_t i) {
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    return i;
}

char *msg_escape(char *out, size_t cap, const char *s) {
    char big[6 * 8192 + 16];
    size_t in = strlen(s) < 8192 ? strlen(s) : 8192;
    char clip[8193];
    memcpy(clip, s, in);
    clip[in] = '\0';
    size_t n = escape_all(big, clip);
    if (n < cap) {
        memcpy(out, big, n + 1);
        return out;
    }
    // Keep the start and the end, whole characters, around "…" (3 bytes).
    size_t keep = cap > 8 ? cap - 4 : 0, head = char_start(big, keep / 2),
           tail = char_start(big, n - (keep - keep / 2));
    while (n - tail > keep - head) tail = char_start(big, tail + 1 < n ? tail + 1 : n);
    memcpy(out, big, head);
    memcpy(out + head, "\xe2\x80\xa6", 3);
    memcpy(out + head + 3, big + tail, n - tail + 1);
    return out;
}

static void emit(const char *prefix, const char *fmt, va_list ap, const char *suffix) {
    char raw[8192], line[2048];
    vsnprintf(raw, sizeof raw, fmt, ap);
    msg_escape(line, sizeof line - 256, raw);
    char out[2304];
    int len = snprintf(out, sizeof out, "%s%s%s\n", prefix, line, suffix);
    if (len > 0) (void)!write(STDERR_FILENO, out, (size_t)len < sizeof out ? (size_t)len : sizeof out - 1);
}

void msg_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit("normlab: ", fmt, ap, "");
    va_end(ap);
}

void msg_usage(const char *cmd, const char *fmt, ...) {
    char prefix[64], suffix[96];
    snprintf(prefix, sizeof prefix, "normlab %s: ", cmd);
    snprintf(suffix, sizeof suffix, " (see 'normlab help %s')", cmd);
    va_list ap;
    va_start(ap, fmt);
    emit(prefix, fmt, ap, suffix);
    va_end(ap);
}
