// pretokenize.c — the pre-tokenizers of a byte-level BPE (pretokenize.h): GPT-2's pattern and
// cl100k's (with Qwen's one-digit form), each written out as its alternatives, tried in order at a
// piece's start, as a backtracking regex engine takes the first alternative that matches.
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

// The contraction at text[at] ('s 't 're 've 'm 'll 'd), its length, or 0. any_case: (?i:...), where
// an 's' is also 'S' and U+017F (long s: Unicode's case folding, which Oniguruma follows).
static size_t contraction(const char *text, size_t len, size_t at, int any_case) {
    static const char *const ENDS[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    if (text[at] != '\'') return 0;
    for (size_t k = 0; k < sizeof ENDS / sizeof ENDS[0]; k++) {
        size_t n = strlen(ENDS[k]), i = 0, p = at + 1;
        for (; i < n && p < len; i++) {
            char c = text[p];
            if (c == ENDS[k][i] || (any_case && c == ENDS[k][i] - 'a' + 'A')) p++;
            else if (any_case && ENDS[k][i] == 's' && p + 1 < len && memcmp(text + p, "\xC5\xBF", 2) == 0) p += 2;
            else break;
        }
        if (i == n) return p - at;
    }
    return 0;
}

// `\s+(?!\S)|\s+` at the whitespace character text[at]: the run, less its last character when a
// non-space follows it and it has more than one.
static size_t space_end(const char *text, size_t len, size_t at) {
    int cls;
    size_t end = run_end(text, len, at, SPACE);
    if (end == len) return end;
    size_t last = at;  // the start of the run's last character
    for (size_t p = at; p < end; p += char_at(text, len, p, &cls)) last = p;
    return last > at ? last : end;
}

static size_t gpt2_end(const char *text, size_t len, size_t at) {
    size_t n = contraction(text, len, at, 0);
    if (n) return at + n;
    int cls, next = -1;
    size_t from = at;
    char_at(text, len, at, &cls);
    if (text[at] == ' ' && at + 1 < len) char_at(text, len, at + 1, &next);
    if (text[at] == ' ' && next >= 0 && next != SPACE) {  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
        cls = next;
        from = at + 1;
    }
    return cls != SPACE ? run_end(text, len, from, cls) : space_end(text, len, at);
}

static int is_crlf(char c) { return c == '\r' || c == '\n'; }

// The class of the character at text[at], or -1 past the end.
static int class_at(const char *text, size_t len, size_t at) {
    int cls = -1;
    if (at < len) char_at(text, len, at, &cls);
    return cls;
}

// cl100k's alternatives (digits: \p{N}{1,digits}).
static size_t cl100k_end(const char *text, size_t len, size_t at, int digits) {
    size_t n = contraction(text, len, at, 1);
    if (n) return at + n;
    int cls;
    size_t first = char_at(text, len, at, &cls);
    if (cls == LETTER) return run_end(text, len, at, LETTER);  // [^\r\n\p{L}\p{N}]?\p{L}+
    if (cls != NUMBER && !is_crlf(text[at]) && class_at(text, len, at + first) == LETTER)
        return run_end(text, len, at + first, LETTER);
    if (cls == NUMBER) {  // \p{N}{1,digits}
        size_t end = at;
        for (int k = 0; k < digits && class_at(text, len, end) == NUMBER; k++) end += char_at(text, len, end, &cls);
        return end;
    }
    size_t from = text[at] == ' ' && class_at(text, len, at + 1) == OTHER ? at + 1 : at;
    if (class_at(text, len, from) == OTHER) {  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
        size_t end = run_end(text, len, from, OTHER);
        while (end < len && is_crlf(text[end])) end++;
        return end;
    }
    size_t end = run_end(text, len, at, SPACE), last_crlf = len;  // `\s*[\r\n]+`: to the run's last CR or LF
    for (size_t p = at; p < end; p++)
        if (is_crlf(text[p])) last_crlf = p;
    if (last_crlf < len) return last_crlf + 1;
    return space_end(text, len, at);
}

static const struct {
    const char *name, *regex;
} PATTERNS[] = {
    [NL_PATTERN_GPT2] = {"GPT-2's",
                         "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
    [NL_PATTERN_CL100K] = {"cl100k's (Llama 3, OLMo 2)",
                           "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                           "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    [NL_PATTERN_QWEN2] = {"Qwen 2's", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                                      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
};

int nl_pattern_of_regex(const char *regex) {
    for (int p = 0; p < (int)(sizeof PATTERNS / sizeof PATTERNS[0]); p++)
        if (strcmp(regex, PATTERNS[p].regex) == 0) return p;
    return -1;
}

const char *nl_pattern_name(NlPattern pattern) { return PATTERNS[pattern].name; }

size_t nl_piece_end(NlPattern pattern, const char *text, size_t len, size_t at) {
    switch (pattern) {
    case NL_PATTERN_CL100K: return cl100k_end(text, len, at, 3);
    case NL_PATTERN_QWEN2: return cl100k_end(text, len, at, 1);
    default: return gpt2_end(text, len, at);
    }
}

size_t nl_number_at(const char *text, size_t len, size_t at) {
    int cls;
    size_t n = char_at(text, len, at, &cls);
    return cls == NUMBER ? n : 0;
}
