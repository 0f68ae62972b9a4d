// nfc.c — Normalization Form C (nfc.h): each character decomposed in full (the table's canonical
// decompositions, Hangul syllables by arithmetic), each run of combining marks sorted by class
// (stable), then each mark composed with the last starter when nothing between blocks it.
#include "nfc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unicode.h"

#define NOT_UTF8 0x110000u  // + the byte: a byte that is not UTF-8, kept as it is

// Hangul (Unicode's chapter 3.12): L, V, T jamo and the syllables they make.
enum { S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7, L_N = 19, V_N = 21, T_N = 28 };
#define S_N (L_N * V_N * T_N)

static int cmp_u32(uint32_t a, uint32_t b) { return (a > b) - (a < b); }

static int cmp_decomposition(const void *a, const void *b) {
    return cmp_u32(((const NlDecomposition *)a)->cp, ((const NlDecomposition *)b)->cp);
}

static int cmp_composite(const void *a, const void *b) {
    const NlComposite *x = a, *y = b;
    return x->first != y->first ? cmp_u32(x->first, y->first) : cmp_u32(x->second, y->second);
}

static int combining_class(uint32_t cp) {
    size_t n;
    const NlCombiningRange *r = nl_unicode_combining(&n);
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].last < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && r[lo].first <= cp ? r[lo].ccc : 0;
}

// cp's full canonical decomposition into out (room for 4), its length.
static size_t decompose(uint32_t cp, uint32_t *out) {
    if (cp >= S_BASE && cp < S_BASE + S_N) {
        uint32_t s = cp - S_BASE, t = s % T_N;
        out[0] = L_BASE + s / (V_N * T_N);
        out[1] = V_BASE + s % (V_N * T_N) / T_N;
        out[2] = T_BASE + t;
        return t ? 3 : 2;
    }
    size_t n;
    const NlDecomposition key = {cp, {0}}, *d = nl_unicode_decompositions(&n);
    d = bsearch(&key, d, n, sizeof *d, cmp_decomposition);
    size_t k = 0;
    for (; d && k < 4 && d->to[k]; k++) out[k] = d->to[k];
    if (k == 0) out[k++] = cp;
    return k;
}

// The primary composite of first and second, or 0.
static uint32_t compose(uint32_t first, uint32_t second) {
    if (first >= L_BASE && first < L_BASE + L_N && second >= V_BASE && second < V_BASE + V_N)
        return S_BASE + ((first - L_BASE) * V_N + (second - V_BASE)) * T_N;
    if (first >= S_BASE && first < S_BASE + S_N && (first - S_BASE) % T_N == 0 && second > T_BASE &&
        second < T_BASE + T_N)
        return first + (second - T_BASE);
    size_t n;
    const NlComposite key = {first, second, 0}, *c = nl_unicode_composites(&n);
    c = bsearch(&key, c, n, sizeof *c, cmp_composite);
    return c ? c->composite : 0;
}

// Sorts each run of nonzero classes by class, keeping the order of equal ones (insertion sort: the
// runs are short).
static void canonical_order(uint32_t *cps, unsigned char *ccc, size_t n) {
    for (size_t i = 1; i < n; i++) {
        uint32_t cp = cps[i];
        unsigned char k = ccc[i];
        size_t j = i;
        for (; k && j > 0 && ccc[j - 1] > k; j--) {
            cps[j] = cps[j - 1];
            ccc[j] = ccc[j - 1];
        }
        cps[j] = cp;
        ccc[j] = k;
    }
}

// Canonical composition in place: a character joins the last starter when it is next to it, or
// when every character between has a lower, nonzero class. Returns the new length.
static size_t compose_all(uint32_t *cps, const unsigned char *ccc, size_t n) {
    size_t out = 0, starter = SIZE_MAX;
    int last = 0;  // the class of the last character kept after the starter
    for (size_t i = 0; i < n; i++) {
        uint32_t composite = 0;
        if (starter != SIZE_MAX && (out - 1 == starter || (last != 0 && last < ccc[i])))
            composite = compose(cps[starter], cps[i]);
        if (composite) {
            cps[starter] = composite;
            continue;
        }
        if (ccc[i] == 0) starter = out;
        last = ccc[i];
        cps[out++] = cps[i];
    }
    return out;
}

static size_t put_utf8(uint32_t cp, char *out) {
    if (cp >= NOT_UTF8) return out[0] = (char)(cp - NOT_UTF8), 1;
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
               out[2] = (char)(0x80 | (cp & 0x3F)), 3;
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int nl_nfc(const char *text, size_t len, char *out, size_t *out_len, NlError *err) {
    size_t i = 0;
    while (i < len && (unsigned char)text[i] < 0x80) i++;
    if (i == len) {
        memcpy(out, text, len);
        *out_len = len;
        return 0;
    }
    uint32_t *cps = malloc(4 * len * sizeof *cps);  // (a character of k bytes decomposes into at most 4)
    unsigned char *ccc = malloc(4 * len);
    if (!cps || !ccc) {
        free(cps);
        free(ccc);
        return nl_error(err, NL_ERR_NOMEM, "NFC: out of memory for a text of %zu bytes", len);
    }
    size_t n = 0;
    for (size_t at = 0; at < len;) {
        uint32_t cp;
        size_t k = nl_utf8_decode(text + at, len - at, &cp);
        if (k == 0) cps[n++] = NOT_UTF8 + (unsigned char)text[at], k = 1;
        else n += decompose(cp, cps + n);
        at += k;
    }
    for (size_t j = 0; j < n; j++) ccc[j] = cps[j] >= NOT_UTF8 ? 0 : (unsigned char)combining_class(cps[j]);
    canonical_order(cps, ccc, n);
    n = compose_all(cps, ccc, n);
    size_t bytes = 0;
    for (size_t j = 0; j < n; j++) bytes += put_utf8(cps[j], out + bytes);
    *out_len = bytes;
    free(cps);
    free(ccc);
    return 0;
}
