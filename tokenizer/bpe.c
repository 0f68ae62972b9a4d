// bpe.c — GPT-2's byte-level BPE (bpe.h): pieces from the pre-tokenizer (pretokenize.h), merges
// found by rank through a hash table (a pair of ids to its merge) and taken lowest rank first from a
// heap over a linked list of symbols.
#include "bpe.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "pretokenize.h"
#include "tokenizer.h"
#include "unicode.h"

#define EOT_TEXT "<|endoftext|>"
#define ALPHABET (256 + 68)  // GPT-2's byte-to-unicode characters: U+0021 to U+0143

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
        if (b < 0 || *n == NL_TOKEN_MAX_BYTES) return -1;
        out[(*n)++] = (unsigned char)b;
        at += k;
    }
    return *n ? 0 : -1;
}

// vocab: {"token": id, ...}, file naming it in errors ("vocab.json", "model.vocab").
static int read_vocab(NlBpe *b, const cJSON *vocab, const char *file, const char *what, NlError *err) {
    if (!cJSON_IsObject(vocab)) {
        nl_error(err, NL_ERR_FORMAT, "%s: %s must be a JSON object of token: id", what, file);
        return -1;
    }
    b->n = cJSON_GetArraySize(vocab);
    b->bytes = calloc((size_t)b->n + 1, sizeof *b->bytes);
    b->len = calloc((size_t)b->n + 1, sizeof *b->len);
    if (!b->bytes || !b->len) {
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        return -1;
    }
    for (const cJSON *e = vocab->child; e; e = e->next) {
        unsigned char buf[NL_TOKEN_MAX_BYTES];
        size_t n;
        double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
        int id = v >= 0 && v < b->n ? (int)v : -1;  // (a cast of a double out of range is undefined)
        if (v != (double)id || id < 0 || id >= b->n || b->bytes[id]) {
            nl_error(err, NL_ERR_FORMAT, "%s: %s: \"%.60s\" has id %.60s (ids are 0 to %d, each once)", what, file,
                     e->string, cJSON_IsNumber(e) ? "out of range or repeated" : "that is not a number", b->n - 1);
            return -1;
        }
        if (token_bytes(e->string, b->byte_of, buf, &n) != 0) {
            nl_error(err, NL_ERR_FORMAT, "%s: %s: \"%.60s\" is not a byte-level token (GPT-2's alphabet)", what, file,
                     e->string);
            return -1;
        }
        if (!(b->bytes[id] = malloc(n + 1))) {
            nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
            return -1;
        }
        memcpy(b->bytes[id], buf, n);
        b->bytes[id][n] = '\0';  // (nl_tokenizer_piece's terminator)
        b->len[id] = n;
        if (strcmp(e->string, EOT_TEXT) == 0) b->eot = id;
        else if (n == 1) b->byte_token[buf[0]] = id;
    }
    for (int x = 0; x < 256; x++)
        if (b->byte_token[x] < 0) {
            nl_error(err, NL_ERR_FORMAT, "%s: %s has no token for the byte 0x%02X", what, file, x);
            return -1;
        }
    return 0;
}

// The merges being read: the tokens sorted by their bytes (to find a merge's parts), and which
// tokens a merge makes. list names an entry in errors ("merges.txt line", "model.merges entry").
typedef struct {
    Entry *sorted;  // (n)
    unsigned char *made;  // (n)
    const char *list, *what;
} Merges;

static int merges_begin(NlBpe *b, Merges *m, size_t count, const char *list, const char *what, NlError *err) {
    size_t slots = 16;
    while (slots < 2 * count + 2) slots *= 2;
    *m = (Merges){malloc(((size_t)b->n + 1) * sizeof *m->sorted), calloc((size_t)b->n + 1, 1), list, what};
    b->pairs = calloc(slots, sizeof *b->pairs);
    b->pair_mask = slots - 1;
    if (!m->sorted || !m->made || !b->pairs) {
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        return -1;
    }
    for (int i = 0; i < b->n; i++) m->sorted[i] = (Entry){b->bytes[i], b->len[i], i};
    qsort(m->sorted, (size_t)b->n, sizeof *m->sorted, cmp_entries);
    return 0;
}

// One merge "A B" (line[0..n): A and B tokens, their concatenation a third): its pair, at rank.
static int read_merge(NlBpe *b, Merges *m, const char *line, size_t n, int rank, int number, NlError *err) {
    const char *gap = memchr(line, ' ', n);
    char part[2][4 * NL_TOKEN_MAX_BYTES + 1];
    unsigned char bytes[2][NL_TOKEN_MAX_BYTES], both[2 * NL_TOKEN_MAX_BYTES];
    size_t len[2], cut[2] = {gap ? (size_t)(gap - line) : 0, gap ? n - (size_t)(gap - line) - 1 : 0};
    int id[2];
    for (int k = 0; k < 2 && gap; k++) {
        if (cut[k] == 0 || cut[k] > 4 * NL_TOKEN_MAX_BYTES) gap = NULL;
        else {
            memcpy(part[k], k ? gap + 1 : line, cut[k]);
            part[k][cut[k]] = '\0';
            if (strchr(part[k], ' ') || token_bytes(part[k], b->byte_of, bytes[k], &len[k]) != 0 ||
                (id[k] = find_token(m->sorted, (size_t)b->n, bytes[k], len[k])) < 0)
                gap = NULL;
        }
    }
    int merged = -1;
    if (gap) {
        memcpy(both, bytes[0], len[0]);
        memcpy(both + len[0], bytes[1], len[1]);
        merged = find_token(m->sorted, (size_t)b->n, both, len[0] + len[1]);
    }
    if (merged < 0) {
        nl_error(err, NL_ERR_FORMAT, "%s: %s %d (\"%.*s\") is not two tokens whose join is a token", m->what, m->list,
                 number, (int)(n < 60 ? n : 60), line);
        return -1;
    }
    PairSlot *slot = pair_slot(b, id[0], id[1]);
    if (slot->key) {
        nl_error(err, NL_ERR_FORMAT, "%s: %s %d (\"%.*s\") repeats the merge of rank %d: each pair has one rank",
                 m->what, m->list, number, (int)(n < 60 ? n : 60), line, slot->rank);
        return -1;
    }
    *slot = (PairSlot){((uint64_t)(uint32_t)id[0] << 32 | (uint32_t)id[1]) + 1, rank, merged};
    m->made[merged] = 1;
    return 0;
}

// Every token is a byte, a special token or some merge's result: otherwise merges are missing (a
// cut merges file), and the token could never be encoded.
// rc: the reading's so far (on a failure, only the memory is freed).
static int merges_end(NlBpe *b, Merges *m, const int *special, int n_special, int rc, NlError *err) {
    for (int i = 0; i < n_special && rc == 0; i++) m->made[special[i]] = 1;
    for (int i = 0; i < b->n && rc == 0; i++)
        if (b->len[i] > 1 && !m->made[i] && i != b->eot) {
            nl_error(err, NL_ERR_FORMAT,
                     "%s: token %d (%zu bytes) is no byte and no merge makes it: the merges are missing", m->what, i,
                     b->len[i]);
            rc = -1;
        }
    free(m->sorted);
    free(m->made);
    return rc;
}

static int read_merges_text(NlBpe *b, const char *text, size_t len, const char *what, NlError *err) {
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    Merges m;
    int rc = merges_begin(b, &m, lines, "merges.txt line", what, err), rank = 0, line_no = 0;
    for (size_t at = 0, first = 1; at < len && rc == 0; first = 0) {
        line_no++;
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
        if (n && text[at + n - 1] == '\r') n--;
        if (n && !(first && n >= 8 && memcmp(text + at, "#version", 8) == 0))
            rc = read_merge(b, &m, text + at, n, rank++, line_no, err);
        at = end + 1;
    }
    return merges_end(b, &m, NULL, 0, rc, err);
}

static NlBpe *bpe_new(const char *what, NlError *err) {
    NlBpe *b = calloc(1, sizeof *b);
    if (!b) {
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        return NULL;
    }
    b->eot = -1;
    invert_alphabet(b->byte_of);
    for (int x = 0; x < 256; x++) b->byte_token[x] = -1;
    return b;
}

int nl_bpe_create(NlBpe **out, const char *vocab_json, size_t vocab_len, const char *merges, size_t merges_len,
                  const char *what, NlError *err) {
    *out = NULL;
    NlBpe *b = bpe_new(what, err);
    cJSON *vocab = b ? cJSON_ParseWithLength(vocab_json, vocab_len) : NULL;
    int rc = b ? read_vocab(b, vocab, "vocab.json", what, err) : -1;
    if (rc == 0) rc = read_merges_text(b, merges, merges_len, what, err);
    cJSON_Delete(vocab);
    if (rc != 0) {
        nl_bpe_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

// ---- Hugging Face's tokenizer.json

// A string member of o, or "" when it is absent or null; NULL when it is something else.
static const char *member_text(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return !v || cJSON_IsNull(v) ? "" : cJSON_IsString(v) ? v->valuestring : NULL;
}

static int member_true(const cJSON *o, const char *key) {
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

// The parts of a tokenizer.json other than the vocabulary: those GPT-2's byte-level BPE has.
static int check_hf_kind(const cJSON *root, const cJSON *model, const char *what, NlError *err) {
    const char *type = member_text(model, "type"), *pre = NULL;
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (cJSON_IsObject(pt)) pre = member_text(pt, "type");
    if (!type || strcmp(type, "BPE") != 0) {
        nl_error(err, NL_ERR_FORMAT,
                 "%s: a %.40s tokenizer (model.type); normlab reads byte-level BPE (GPT-2's) and its own \"char\"",
                 what, type && *type ? type : "model.type-less");
        return -1;
    }
    if (member_true(model, "byte_fallback") || (pre && strcmp(pre, "Metaspace") == 0)) {
        nl_error(err, NL_ERR_FORMAT,
                 "%s: a SentencePiece-style BPE (byte fallback, Metaspace); normlab reads byte-level BPE (GPT-2's)",
                 what);
        return -1;
    }
    if (!pre || strcmp(pre, "ByteLevel") != 0 || member_true(pt, "add_prefix_space") ||
        cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(pt, "use_regex"))) {
        nl_error(err, NL_ERR_FORMAT, "%s: pre_tokenizer must be GPT-2's ByteLevel (no prefix space, its regex)", what);
        return -1;
    }
    const char *prefix = member_text(model, "continuing_subword_prefix"),
               *suffix = member_text(model, "end_of_word_suffix");
    if ((norm && !cJSON_IsNull(norm)) || !prefix || *prefix || !suffix || *suffix) {
        nl_error(err, NL_ERR_FORMAT, "%s: a normalizer, a subword prefix or a word suffix is not GPT-2's BPE", what);
        return -1;
    }
    return 0;
}

// added_tokens: each in model.vocab under its own id (GPT-2's "<|endoftext|>"); into special.
static int read_added(const cJSON *root, const cJSON *vocab, int *special, int *n_special, const char *what,
                      NlError *err) {
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    *n_special = 0;
    if (!added || cJSON_IsNull(added)) return 0;
    if (!cJSON_IsArray(added)) {
        nl_error(err, NL_ERR_FORMAT, "%s: added_tokens must be an array", what);
        return -1;
    }
    int i = 0;
    for (const cJSON *e = added->child; e; e = e->next, i++) {
        const char *content = member_text(e, "content");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id"),
                    *in = content ? cJSON_GetObjectItemCaseSensitive(vocab, content) : NULL;
        if (!content || !cJSON_IsNumber(id) || !cJSON_IsNumber(in) || in->valuedouble != id->valuedouble ||
            *n_special == 64) {
            nl_error(err, NL_ERR_FORMAT, "%s: added_tokens[%d] is not in model.vocab under its id", what, i);
            return -1;
        }
        special[(*n_special)++] = (int)id->valuedouble;  // (a vocabulary id: read_vocab checked its range)
    }
    return 0;
}

static int read_merges_json(NlBpe *b, const cJSON *merges, const int *special, int n_special, const char *what,
                            NlError *err) {
    if (!cJSON_IsArray(merges) || !merges->child) {
        nl_error(err, NL_ERR_FORMAT, "%s: model.merges is missing or empty: a BPE needs its merges", what);
        return -1;
    }
    Merges m;
    int rc = merges_begin(b, &m, (size_t)cJSON_GetArraySize(merges), "model.merges entry", what, err), rank = 0;
    for (const cJSON *e = merges->child; e && rc == 0; e = e->next, rank++) {
        char line[8 * NL_TOKEN_MAX_BYTES + 2];
        const cJSON *x = cJSON_IsArray(e) ? e->child : NULL, *y = x ? x->next : NULL;
        int n = cJSON_IsString(e) ? snprintf(line, sizeof line, "%s", e->valuestring)
                : cJSON_IsString(x) && cJSON_IsString(y) && !y->next
                    ? snprintf(line, sizeof line, "%s %s", x->valuestring, y->valuestring)
                    : snprintf(line, sizeof line, "?");
        rc = read_merge(b, &m, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), rank, rank + 1, err);
    }
    return merges_end(b, &m, special, n_special, rc, err);
}

int nl_bpe_from_json(NlBpe **out, const cJSON *root, const char *what, NlError *err) {
    *out = NULL;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) {
        nl_error(err, NL_ERR_FORMAT, "%s: a Hugging Face tokenizer.json needs a \"model\" object", what);
        return -1;
    }
    if (check_hf_kind(root, model, what, err) != 0) return -1;
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    int special[64], n_special = 0;
    NlBpe *b = bpe_new(what, err);
    int rc = b ? read_vocab(b, vocab, "model.vocab", what, err) : -1;
    if (rc == 0) rc = read_added(root, vocab, special, &n_special, what, err);
    if (rc == 0)
        rc = read_merges_json(b, cJSON_GetObjectItemCaseSensitive(model, "merges"), special, n_special, what, err);
    if (rc != 0) {
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

#define NO_SYMBOL SIZE_MAX

// One symbol of a piece being merged, named by the position of its first byte: a token, linked to
// its neighbours (a doubly linked list over the piece's bytes).
typedef struct {
    int id;  // the token, or -1 once merged into its left neighbour
    size_t prev, next;  // the neighbours' first bytes, or NO_SYMBOL
} Symbol;

// A pair that has a merge: the symbol at pos and the one after it, as they were when queued.
typedef struct {
    size_t pos;
    int rank, merged;  // its merge's rank and the token that merge makes
} Candidate;

// Room to merge a piece of up to cap bytes. The candidates hold the heap (the lowest rank first,
// then the leftmost) at the front and the pairs made in the current round at the back: a merge
// takes one candidate and makes at most two, so there are never more than 2 * cap.
typedef struct {
    Symbol *symbols;  // (cap)
    Candidate *candidates;  // (2 * cap)
    size_t cap;
} MergeRoom;

static int before(Candidate x, Candidate y) { return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos); }

static void heap_sift_down(Candidate *heap, size_t n, size_t at) {
    Candidate c = heap[at];
    for (size_t child; (child = 2 * at + 1) < n; at = child) {
        if (child + 1 < n && before(heap[child + 1], heap[child])) child++;
        if (!before(heap[child], c)) break;
        heap[at] = heap[child];
    }
    heap[at] = c;
}

static void heap_push(Candidate *heap, size_t *n, Candidate c) {
    size_t at = (*n)++;
    for (; at > 0 && before(c, heap[(at - 1) / 2]); at = (at - 1) / 2) heap[at] = heap[(at - 1) / 2];
    heap[at] = c;
}

// The pair of the symbol at pos and the next one as a candidate, into *c; 0 when there is no such
// pair or it has no merge.
static int pair_at(const NlBpe *b, const Symbol *sym, size_t pos, Candidate *c) {
    if (pos == NO_SYMBOL || sym[pos].next == NO_SYMBOL) return 0;
    const PairSlot *p = pair_slot(b, sym[pos].id, sym[sym[pos].next].id);
    *c = (Candidate){pos, p->rank, p->merged};
    return p->key != 0;
}

// One piece's bytes merged by rank into ids[0..*n), with GPT-2's bpe() as the rule: start from one
// token per byte; while some adjacent pair has a merge, take the lowest-ranked and merge every
// occurrence of it, left to right. Here a round pops that rank's candidates from a heap in position
// order, and the pairs it makes wait at the back until it ends, as GPT-2's sweep does not look at
// them: O(len log len) in all. A candidate whose symbols have merged since it was queued is stale:
// a symbol only grows, so the pair is as queued exactly when the second symbol still ends where
// the merge's token would.
static void merge_piece(const NlBpe *b, MergeRoom *room, const unsigned char *s, size_t len, int *ids, size_t *n) {
    Symbol *sym = room->symbols;
    Candidate *heap = room->candidates;  // the heap: [0, n_heap); the round's new pairs: (last - n_made, last]
    size_t n_heap = 0, n_made = 0, last = 2 * room->cap - 1;
    for (size_t i = 0; i < len; i++) {
        sym[i] = (Symbol){b->byte_token[s[i]], i ? i - 1 : NO_SYMBOL, i + 1 < len ? i + 1 : NO_SYMBOL};
        if (i && pair_at(b, sym, i - 1, &heap[n_heap])) n_heap++;
    }
    for (size_t i = n_heap / 2; i-- > 0;) heap_sift_down(heap, n_heap, i);
    while (n_heap > 0) {
        int rank = heap[0].rank;
        while (n_heap > 0 && heap[0].rank == rank) {
            Candidate c = heap[0];
            heap[0] = heap[--n_heap];
            heap_sift_down(heap, n_heap, 0);
            size_t pos = c.pos, gone = sym[pos].next, after = gone == NO_SYMBOL ? NO_SYMBOL : sym[gone].next;
            if (sym[pos].id < 0 || gone == NO_SYMBOL || (after == NO_SYMBOL ? len : after) - pos != b->len[c.merged])
                continue;  // stale: merged into its left, or either symbol grown
            sym[pos].id = c.merged;
            sym[pos].next = after;
            if (after != NO_SYMBOL) sym[after].prev = pos;
            sym[gone].id = -1;
            if (pair_at(b, sym, sym[pos].prev, &heap[last - n_made])) n_made++;
            if (pair_at(b, sym, pos, &heap[last - n_made])) n_made++;
        }
        while (n_made > 0) heap_push(heap, &n_heap, heap[last - --n_made]);
    }
    *n = 0;
    for (size_t at = 0; at != NO_SYMBOL; at = sym[at].next) ids[(*n)++] = sym[at].id;
}

// Room for a piece of len bytes: grown (doubling) when the piece is longer than any so far.
static int room_fit(MergeRoom *room, size_t len, NlError *err) {
    if (len <= room->cap) return 0;
    size_t cap = len > 2 * room->cap ? len : 2 * room->cap;
    Symbol *sym = cap < SIZE_MAX / (2 * sizeof(Candidate)) ? realloc(room->symbols, cap * sizeof *sym) : NULL;
    if (sym) room->symbols = sym;
    Candidate *c = sym ? realloc(room->candidates, 2 * cap * sizeof *c) : NULL;
    if (!c) return nl_error(err, NL_ERR_NOMEM, "BPE: out of memory to merge a piece of %zu bytes", len);
    room->candidates = c;
    room->cap = cap;
    return 0;
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
    MergeRoom room = {NULL, NULL, 0};
    size_t n = 0;
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        size_t part = special && b->eot >= 0 ? next_eot(text, len, at) : len;
        while (at < part && rc == 0) {
            size_t end = nl_bpe_piece_end(text, part, at), k = 1;
            if (end - at == 1) ids[n] = b->byte_token[(unsigned char)text[at]];
            else if ((rc = room_fit(&room, end - at, err)) == 0)
                merge_piece(b, &room, (const unsigned char *)text + at, end - at, ids + n, &k);
            n += k;
            at = end;
        }
        if (part < len && rc == 0) {
            ids[n++] = b->eot;
            at = part + strlen(EOT_TEXT);
        }
    }
    free(room.symbols);
    free(room.candidates);
    *n_ids = rc == 0 ? n : 0;
    return rc;
}
