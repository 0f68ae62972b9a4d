// utf8.c — UTF-8 as the command line writes it (utf8.h), on the library's decoder (nl_utf8_decode).
#include "utf8.h"

#include <stdint.h>
#include <string.h>

#include "normlab.h"

size_t utf8_pending(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t k = 1; k <= 3 && k <= len; k++) {
        unsigned char lead = u[len - k];
        if ((lead & 0xC0) == 0x80) continue;  // a continuation byte: look further back
        size_t need = (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 1;
        if (need <= k) return 0;  // whole (or not a lead byte)
        uint32_t cp;  // the bytes so far, padded with the smallest continuation, must start a valid character
        char probe[4];
        memcpy(probe, s + len - k, k);
        for (size_t i = k; i < need; i++)
            probe[i] = (char)(i == 1 && lead == 0xE0 ? 0xA0 : i == 1 && lead == 0xF0 ? 0x90 : 0x80);
        return nl_utf8_decode(probe, need, &cp) == need ? k : 0;
    }
    return 0;
}

size_t utf8_repair(const char *s, size_t len, char *out) {
    size_t at = 0, n;
    uint32_t cp;
    for (size_t i = 0; i < len; i += n ? n : 1) {
        n = nl_utf8_decode(s + i, len - i, &cp);
        memcpy(out + at, n ? s + i : "\xef\xbf\xbd", n ? n : 3);
        at += n ? n : 3;
    }
    out[at] = '\0';
    return at;
}
