// unicode.c — the UTF-8 decoder (normlab.h's nl_utf8_decode) and the pre-tokenizer's Unicode classes
// (unicode.h): binary search of the generated ranges; whitespace from Unicode's PropList.txt
// (White_Space), which is short and stable.
#include "unicode.h"

#include <string.h>

#include "tokenizer.h"

size_t nl_utf8_decode(const char *s, size_t len, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    if (len == 0) return 0;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    size_t n;
    uint32_t c, min;
    if ((u[0] & 0xE0) == 0xC0) {
        n = 2;
        c = u[0] & 0x1F;
        min = 0x80;
    } else if ((u[0] & 0xF0) == 0xE0) {
        n = 3;
        c = u[0] & 0x0F;
        min = 0x800;
    } else if ((u[0] & 0xF8) == 0xF0) {
        n = 4;
        c = u[0] & 0x07;
        min = 0x10000;
    } else return 0;
    if (len < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (u[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return n;
}

static int in_ranges(const NlUnicodeRange *r, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].first) hi = mid;
        else if (cp > r[mid].last) lo = mid + 1;
        else return 1;
    }
    return 0;
}

int nl_unicode_is_letter(uint32_t cp) {
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    size_t n;
    const NlUnicodeRange *r = nl_unicode_letters(&n);
    return in_ranges(r, n, cp);
}

int nl_unicode_is_number(uint32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    size_t n;
    const NlUnicodeRange *r = nl_unicode_numbers(&n);
    return in_ranges(r, n, cp);
}

int nl_unicode_is_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}
