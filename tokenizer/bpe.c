// bpe.c — GPT-2's byte-level BPE (bpe.h): the pre-tokenizer written out as the pattern's six
// alternatives, tried in order at each piece's start; merges found by rank through two hash tables
// (a token's text to its id, a pair of ids to its merge).
#include "bpe.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tokenizer.h"
#include "unicode.h"

#define EOT_TEXT "<|endoftext|>"
#define ALPHABET (256 + 68)  // GPT-2's byte-to-unicode characters: U+0021 to U+0143
#define MAX_TOKEN_BYTES 256  // the longest token a vocabulary may hold, in bytes (GPT-2's: 128)

typedef struct {
    uint64_t key;  // (a << 32 | b) + 1 for a pair; 0: empty
    int rank, merged;
} PairSlot;

struct NlBpe {
    int n;  // tokens
    unsigned char **bytes;  // (n) each token's bytes
    size_t *len;  // (n)
    int byte_token[256];  // the token of each single byte
    int eot;  // "<|endoftext|>", or -1
    PairSlot *pairs;  // open addressing, a power of two of slots
    size_t pair_mask;
    short byte_of[ALPHABET];  // the byte each character of GPT-2's alphabet stands for, or -1 (building)
};

// GPT-2's bytes_to_unicode, inverted: the printable Latin-1 bytes stand for themselves; the other
// 68 bytes, in order, for U+0100 on.
static void invert_alphabet(short *byte_of) {
    for (int c = 0; c < ALPHABET; c++) byte_of[c] = -1;
    for (int b = 0, extra = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        byte_of[printable ? b : 256 + extra++] = (short)b;
    }
}

// ---- the pre-tokenizer

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

// ---- the tables

static uint64_t hash64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static PairSlot *pair_slot(const NlBpe *b, int a, int c) {
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)c) + 1;
    for (size_t i = hash64(key) & b->pair_mask;; i = (i + 1) & b->pair_mask)
        if (b->pairs[i].key == key || b->pairs[i].key == 0) return &b->pairs[i];
}

// A token's bytes, for the sorted index the merges are resolved through.
typedef struct {
    const unsigned char *bytes;
    size_t len;
    int id;
} Entry;

static int cmp_entries(const void *x, const void *y) {
    const Entry *a = x, *b = y;
    int c = memcmp(a->bytes, b->bytes, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

// The token whose bytes are s[0..n), by binary search of the sorted entries, or -1.
static int find_token(const Entry *e, size_t count, const unsigned char *s, size_t n) {
    Entry want = {s, n, -1};
    const Entry *hit = bsearch(&want, e, count, sizeof *e, cmp_entries);
    return hit ? hit->id : -1;
}

// ---- building

// A vocabulary entry's bytes: each character of the byte-to-unicode alphabet stands for one byte;
// "<|endoftext|>" is the one special token taken as it is written.
static int token_bytes(const char *s, const short *byte_of, unsigned char *out, size_t *n) {
    size_t len = strlen(s);
    *n = 0;
    if (strcmp(s, EOT_TEXT) == 0) {
        memcpy(out, s, len);
        *n = len;
        return 0;
    }
    for (size_t at = 0; at < len;) {
        uint32_t cp;
        size_t k = nl_utf8_decode(s + at, len - at, &cp);
        int b = k && cp < ALPHABET ? byte_of[cp] : -1;
        if (b < 0 || *n == MAX_TOKEN_BYTES) return -1;
        out[(*n)++] = (unsigned char)b;
        at += k;
    }
    return *n ? 0 : -1;
}

static int read_vocab(NlBpe *b, const char *json, size_t len, const char *what, NlError *err) {
    cJSON *root = cJSON_ParseWithLength(json, len);
    int rc = -1;
    if (!cJSON_IsObject(root)) {
        nl_error(err, NL_ERR_FORMAT, "%s: vocab.json must be a JSON object of token: id", what);
        goto cleanup;
    }
    b->n = cJSON_GetArraySize(root);
    b->bytes = calloc((size_t)b->n + 1, sizeof *b->bytes);
    b->len = calloc((size_t)b->n + 1, sizeof *b->len);
    if (!b->bytes || !b->len) {
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        goto cleanup;
    }
    for (const cJSON *e = root->child; e; e = e->next) {
        unsigned char buf[MAX_TOKEN_BYTES];
        size_t n;
        double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
        int id = (int)v;
        if (v != (double)id || id < 0 || id >= b->n || b->bytes[id]) {
            nl_error(err, NL_ERR_FORMAT, "%s: vocab.json: \"%.60s\" has id %.60s (ids are 0 to %d, each once)", what,
                     e->string, cJSON_IsNumber(e) ? "out of range or repeated" : "that is not a number", b->n - 1);
            goto cleanup;
        }
        if (token_bytes(e->string, b->byte_of, buf, &n) != 0) {
            nl_error(err, NL_ERR_FORMAT, "%s: vocab.json: \"%.60s\" is not a byte-level token (GPT-2's alphabet)", what,
                     e->string);
            goto cleanup;
        }
        if (!(b->bytes[id] = malloc(n))) {
            nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
            goto cleanup;
        }
        memcpy(b->bytes[id], buf, n);
        b->len[id] = n;
        if (strcmp(e->string, EOT_TEXT) == 0) b->eot = id;
        else if (n == 1) b->byte_token[buf[0]] = id;
    }
    for (int x = 0; x < 256; x++)
        if (b->byte_token[x] < 0) {
            nl_error(err, NL_ERR_FORMAT, "%s: vocab.json has no token for the byte 0x%02X", what, x);
            goto cleanup;
        }
    rc = 0;
cleanup:
    cJSON_Delete(root);
    return rc;
}

// One merges.txt line "A B" (A and B tokens, their concatenation a third): its pair, at rank.
static int read_merge(NlBpe *b, const Entry *sorted, const char *line, size_t n, int rank, int line_no,
                      const char *what, NlError *err) {
    const char *gap = memchr(line, ' ', n);
    char part[2][4 * MAX_TOKEN_BYTES + 1];
    unsigned char bytes[2][MAX_TOKEN_BYTES], both[2 * MAX_TOKEN_BYTES];
    size_t len[2], cut[2] = {gap ? (size_t)(gap - line) : 0, gap ? n - (size_t)(gap - line) - 1 : 0};
    int id[2];
    for (int k = 0; k < 2 && gap; k++) {
        if (cut[k] == 0 || cut[k] > 4 * MAX_TOKEN_BYTES) gap = NULL;
        else {
            memcpy(part[k], k ? gap + 1 : line, cut[k]);
            part[k][cut[k]] = '\0';
            if (strchr(part[k], ' ') || token_bytes(part[k], b->byte_of, bytes[k], &len[k]) != 0 ||
                (id[k] = find_token(sorted, (size_t)b->n, bytes[k], len[k])) < 0)
                gap = NULL;
        }
    }
    int merged = -1;
    if (gap) {
        memcpy(both, bytes[0], len[0]);
        memcpy(both + len[0], bytes[1], len[1]);
        merged = find_token(sorted, (size_t)b->n, both, len[0] + len[1]);
    }
    if (merged < 0) {
        nl_error(err, NL_ERR_FORMAT, "%s: merges.txt line %d (\"%.*s\") is not two tokens whose join is a token", what,
                 line_no, (int)(n < 60 ? n : 60), line);
        return -1;
    }
    PairSlot *slot = pair_slot(b, id[0], id[1]);
    if (slot->key == 0) *slot = (PairSlot){((uint64_t)(uint32_t)id[0] << 32 | (uint32_t)id[1]) + 1, rank, merged};
    return 0;  // (a pair listed twice keeps its first, lower rank, as GPT-2's dict of ranks does not)
}

static int read_merges(NlBpe *b, const char *text, size_t len, const char *what, NlError *err) {
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    size_t slots = 16;
    while (slots < 2 * lines) slots *= 2;
    Entry *sorted = malloc(((size_t)b->n + 1) * sizeof *sorted);
    b->pairs = calloc(slots, sizeof *b->pairs);
    b->pair_mask = slots - 1;
    int rc = 0, rank = 0, line_no = 0;
    if (!sorted || !b->pairs) {
        free(sorted);
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        return -1;
    }
    for (int i = 0; i < b->n; i++) sorted[i] = (Entry){b->bytes[i], b->len[i], i};
    qsort(sorted, (size_t)b->n, sizeof *sorted, cmp_entries);
    for (size_t at = 0, first = 1; at < len && rc == 0; first = 0) {
        line_no++;
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
        if (n && text[at + n - 1] == '\r') n--;
        if (n && !(first && n >= 8 && memcmp(text + at, "#version", 8) == 0))
            rc = read_merge(b, sorted, text + at, n, rank++, line_no, what, err);
        at = end + 1;
    }
    free(sorted);
    return rc;
}

int nl_bpe_create(NlBpe **out, const char *vocab_json, size_t vocab_len, const char *merges, size_t merges_len,
                  const char *what, NlError *err) {
    *out = NULL;
    NlBpe *b = calloc(1, sizeof *b);
    if (!b) {
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        return -1;
    }
    b->eot = -1;
    invert_alphabet(b->byte_of);
    for (int x = 0; x < 256; x++) b->byte_token[x] = -1;
    if (read_vocab(b, vocab_json, vocab_len, what, err) != 0 || read_merges(b, merges, merges_len, what, err) != 0) {
        nl_bpe_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

void nl_bpe_free(NlBpe *b) {
    if (!b) return;
    for (int i = 0; b->bytes && i < b->n; i++) free(b->bytes[i]);
    free(b->bytes);
    free(b->len);
    free(b->pairs);
    free(b);
}

int nl_bpe_size(const NlBpe *b) { return b->n; }
int nl_bpe_eot(const NlBpe *b) { return b->eot; }

const unsigned char *nl_bpe_bytes(const NlBpe *b, int id, size_t *len) {
    *len = b->len[id];
    return b->bytes[id];
}

// ---- encoding

// One piece's bytes merged by rank into ids[0..*n): start from one token per byte; while some
// adjacent pair has a merge, take the lowest-ranked and merge every occurrence of it, left to
// right (GPT-2's bpe()).
static void merge_piece(const NlBpe *b, const unsigned char *s, size_t len, int *ids, size_t *n) {
    for (size_t i = 0; i < len; i++) ids[i] = b->byte_token[s[i]];
    *n = len;
    for (;;) {
        int best = -1, first = -1, second = -1, merged = -1;
        for (size_t i = 0; i + 1 < *n; i++) {
            const PairSlot *p = pair_slot(b, ids[i], ids[i + 1]);
            if (p->key && (best < 0 || p->rank < best)) {
                best = p->rank;
                first = ids[i];
                second = ids[i + 1];
                merged = p->merged;
            }
        }
        if (best < 0) return;
        size_t w = 0;
        for (size_t i = 0; i < *n; i++) {
            if (i + 1 < *n && ids[i] == first && ids[i + 1] == second) {
                ids[w++] = merged;
                i++;
            } else ids[w++] = ids[i];
        }
        *n = w;
    }
}

// The start of the next "<|endoftext|>" in text[at..len), or len.
static size_t next_eot(const char *text, size_t len, size_t at) {
    size_t k = strlen(EOT_TEXT);
    for (size_t p = at; p + k <= len; p++)
        if (text[p] == '<' && memcmp(text + p, EOT_TEXT, k) == 0) return p;
    return len;
}

// With special, the text is cut at each "<|endoftext|>" first, and each part pre-tokenized alone
// (as tiktoken does): a piece never looks past the special token.
int nl_bpe_encode(const NlBpe *b, const char *text, size_t len, int special, int *ids, size_t *n_ids, NlError *err) {
    (void)err;  // (every byte string encodes)
    size_t n = 0;
    for (size_t at = 0; at < len;) {
        size_t part = special && b->eot >= 0 ? next_eot(text, len, at) : len;
        while (at < part) {
            size_t end = nl_bpe_piece_end(text, part, at), k;
            merge_piece(b, (const unsigned char *)text + at, end - at, ids + n, &k);
            n += k;
            at = end;
        }
        if (part < len) {
            ids[n++] = b->eot;
            at = part + strlen(EOT_TEXT);
        }
    }
    *n_ids = n;
    return 0;
}
