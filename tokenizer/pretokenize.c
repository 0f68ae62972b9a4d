// pretokenize.c — the pre-tokenizer of a byte-level BPE (pretokenize.h): GPT-2's pattern written
// out as its six alternatives, tried in order at each piece's start.
#include "pretokenize.h"

#include <stdint.h>
#include <string.h>

#include "normlab_internal.h"
#include "unicode.h"

enum { OTHER, LETTER, NUMBER, SPACE };

// The character at text[at]: its length (an invalid byte is one character) and class.
static size_t char_at(const char *text, size_t len, size_t at, int *cls) {
    uint32_t cp;
    size_t n = nl_utf8_decode(text + at, len - at, &cp);
    if (n == 0) {
        *cls = OTHER;
        return 1;
    }
    *cls = nl_unicode_is_letter(cp)   ? LETTER
           : nl_unicode_is_number(cp) ? NUMBER
           : nl_unicode_is_space(cp)  ? SPACE
                                      : OTHER;
    return n;
}

// The end of a run of characters of class cls (others: any but letters, numbers and spaces) from at.
static size_t run_end(const char *text, size_t len, size_t at, int cls) {
    while (at < len) {
        int c;
        size_t n = char_at(text, len, at, &c);
        if (c != cls) break;
        at += n;
    }
    return at;
}

static size_t contraction(const char *text, size_t len, size_t at) {
    static const char *const ENDS[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    if (text[at] != '\'') return 0;
    for (size_t k = 0; k < sizeof ENDS / sizeof ENDS[0]; k++) {
        size_t n = strlen(ENDS[k]);
        if (at + 1 + n <= len && memcmp(text + at + 1, ENDS[k], n) == 0) return 1 + n;
    }
    return 0;
}

size_t nl_bpe_piece_end(const char *text, size_t len, size_t at) {
    size_t n = contraction(text, len, at);
    if (n) return at + n;
    int cls, next = -1;
    size_t first = char_at(text, len, at, &cls), from = at;
    if (text[at] == ' ' && at + 1 < len) char_at(text, len, at + 1, &next);
    if (text[at] == ' ' && next >= 0 && next != SPACE) {  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
        cls = next;
        from = at + 1;
    }
    if (cls != SPACE) return run_end(text, len, from, cls);
    // `\s+(?!\S)`: the whitespace run, less its last character when a non-space follows; else `\s+`.
    size_t end = run_end(text, len, at, SPACE);
    if (end == len) return end;
    size_t last = at;  // the start of the run's last character
    for (size_t p = at; p < end; p += char_at(text, len, p, &cls)) last = p;
    return last > at ? last : at + first;
}
