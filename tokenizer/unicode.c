// unicode.c — the pre-tokenizer's Unicode classes (unicode.h): binary search of the generated
// ranges; whitespace from Unicode's PropList.txt (White_Space), which is short and stable.
#include "unicode.h"

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
