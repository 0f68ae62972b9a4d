// bpe.c — GPT-2's byte-level BPE (bpe.h): pieces from the pre-tokenizer (pretokenize.h), merges
// found by rank through a hash table (a pair of ids to its merge) and taken lowest rank first from a
// heap over a linked list of symbols.
#include "bpe.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nfc.h"
#include "pretokenize.h"
#include "tokenizer.h"
#include "unicode.h"

#define EOT_TEXT "<|endoftext|>"
#define ALPHABET (256 + 68)  // GPT-2's byte-to-unicode characters: U+0021 to U+0143

typedef struct {
    uint64_t key;  // (a << 32 | b) + 1 for a pair; 0: empty
    int rank, merged;
} PairSlot;

// A token's bytes, for the sorted index the merges are resolved through (and ignore_merges' lookup).
typedef struct {
    const unsigned char *bytes;
    size_t len;
    int id;
} Entry;

struct NlBpe {
    int n, n_vocab;  // tokens; those of the vocabulary (ids n_vocab.. are added tokens past it)
    int padding;  // tokens of no bytes after them (nl_bpe_pad), ids n..n+padding-1
    unsigned char **bytes;  // (n) each token's bytes
    size_t *len;  // (n)
    int byte_token[256];  // the token of each single byte
    int eot;  // "<|endoftext|>", or -1
    PairSlot *pairs;  // open addressing, a power of two of slots
    size_t pair_mask;
    Entry *sorted;  // (n_vocab) the vocabulary's tokens by their bytes
    NlBpeKind kind;  // the pre-tokenizer, the normalizer, ignore_merges (added: not used past building)
    NlBpeAdded *added;  // (n_added) the added tokens, matched in the text before the pre-tokenizer
    int n_added;
    unsigned char added_first[256];  // 1 for a byte some added token starts with
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

// The added token of id, or NULL.
static const NlBpeAdded *added_at(const NlBpeKind *kind, int id) {
    for (int i = 0; i < kind->n_added; i++)
        if (kind->added[i].id == id) return &kind->added[i];
    return NULL;
}

// vocab: {"token": id, ...}, file naming it in errors ("vocab.json", "model.vocab"). A token not in
// GPT-2's alphabet is taken as it is written when it is an added token's content.
static int read_vocab(NlBpe *b, const cJSON *vocab, const char *file, const char *what, NlError *err) {
    if (!cJSON_IsObject(vocab)) {
        nl_error(err, NL_ERR_FORMAT, "%s: %s must be a JSON object of token: id", what, file);
        return -1;
    }
    b->n = b->n_vocab = cJSON_GetArraySize(vocab);
    int room = b->n + b->kind.n_added;
    b->bytes = calloc((size_t)room + 1, sizeof *b->bytes);
    b->len = calloc((size_t)room + 1, sizeof *b->len);
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
        int spelled = token_bytes(e->string, b->byte_of, buf, &n) == 0;
        const NlBpeAdded *added = spelled ? NULL : added_at(&b->kind, id);
        if (added && strcmp(added->content, e->string) == 0) memcpy(buf, added->content, n = strlen(added->content));
        else if (!spelled) {
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
        else if (n == 1 && spelled) b->byte_token[buf[0]] = id;
    }
    for (int x = 0; x < 256; x++)
        if (b->byte_token[x] < 0) {
            nl_error(err, NL_ERR_FORMAT, "%s: %s has no token for the byte 0x%02X", what, file, x);
            return -1;
        }
    return 0;
}

// The added tokens (b->kind.added) into the table: one in the vocabulary must be its token there
// (the same bytes under the same id); the others take the ids past it, leaving none out.
static int add_tokens(NlBpe *b, const char *what, NlError *err) {
    for (int i = 0; i < b->kind.n_added; i++) {
        const NlBpeAdded *a = &b->kind.added[i];
        size_t len = strlen(a->content);
        int in_vocab = a->id < b->n_vocab;
        const char *why = a->id >= b->n_vocab + b->kind.n_added ? "leaves a gap after model.vocab"
                          : !in_vocab                           ? (b->bytes[a->id] ? "is another added token's" : NULL)
                          : b->len[a->id] != len || memcmp(b->bytes[a->id], a->content, len) != 0
                              ? "holds another token in model.vocab"
                              : NULL;
        if (why)
            return nl_error(err, NL_ERR_FORMAT, "%s: added_tokens[%d] (\"%.40s\"): id %d %s", what, i, a->content,
                            a->id, why);
        if (!in_vocab && !(b->bytes[a->id] = malloc(len + 1)))
            return nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        memcpy(b->bytes[a->id], a->content, len + 1);  // (in the vocabulary: the same bytes)
        b->len[a->id] = len;
        b->added[b->n_added++] = (NlBpeAdded){NULL, a->id, a->special, a->normalized};
        b->added_first[(unsigned char)a->content[0]] = 1;
        if (a->id >= b->n) b->n = a->id + 1;
        if (strcmp(a->content, EOT_TEXT) == 0) b->eot = a->id;
    }
    for (int id = b->n_vocab; id < b->n; id++)
        if (!b->bytes[id])
            return nl_error(err, NL_ERR_FORMAT, "%s: id %d is neither in model.vocab nor an added token's", what, id);
    return 0;
}

// The merges being read: which tokens a merge makes (the vocabulary sorted by bytes finds a merge's
// parts). list names an entry in errors ("merges.txt line", "model.merges entry").
typedef struct {
    unsigned char *made;  // (n)
    const char *list, *what;
} Merges;

static int merges_begin(NlBpe *b, Merges *m, size_t count, const char *list, const char *what, NlError *err) {
    size_t slots = 16;
    while (slots < 2 * count + 2) slots *= 2;
    *m = (Merges){calloc((size_t)b->n + 1, 1), list, what};
    b->sorted = malloc(((size_t)b->n_vocab + 1) * sizeof *b->sorted);
    b->pairs = calloc(slots, sizeof *b->pairs);
    b->pair_mask = slots - 1;
    if (!b->sorted || !m->made || !b->pairs) {
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        return -1;
    }
    for (int i = 0; i < b->n_vocab; i++) b->sorted[i] = (Entry){b->bytes[i], b->len[i], i};
    qsort(b->sorted, (size_t)b->n_vocab, sizeof *b->sorted, cmp_entries);
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
                (id[k] = find_token(b->sorted, (size_t)b->n_vocab, bytes[k], len[k])) < 0)
                gap = NULL;
        }
    }
    int merged = -1;
    if (gap) {
        memcpy(both, bytes[0], len[0]);
        memcpy(both + len[0], bytes[1], len[1]);
        merged = find_token(b->sorted, (size_t)b->n_vocab, both, len[0] + len[1]);
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

// Every token is a byte, an added token or some merge's result: otherwise merges are missing (a
// cut merges file), and the token could never be encoded.
// rc: the reading's so far (on a failure, only the memory is freed).
static int merges_end(NlBpe *b, Merges *m, int rc, NlError *err) {
    for (int i = 0; i < b->n_added && rc == 0; i++) m->made[b->added[i].id] = 1;
    for (int i = 0; i < b->n && rc == 0; i++)
        if (b->len[i] > 1 && !m->made[i] && i != b->eot) {
            nl_error(err, NL_ERR_FORMAT,
                     "%s: token %d (%zu bytes) is no byte and no merge makes it: the merges are missing", m->what, i,
                     b->len[i]);
            rc = -1;
        }
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
    return merges_end(b, &m, rc, err);
}

static NlBpe *bpe_new(const NlBpeKind *kind, const char *what, NlError *err) {
    NlBpe *b = calloc(1, sizeof *b);
    if (!b || !(b->added = calloc((size_t)kind->n_added + 1, sizeof *b->added))) {
        nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
        free(b);
        return NULL;
    }
    b->kind = *kind;
    b->eot = -1;
    invert_alphabet(b->byte_of);
    for (int x = 0; x < 256; x++) b->byte_token[x] = -1;
    return b;
}

int nl_bpe_create(NlBpe **out, const char *vocab_json, size_t vocab_len, const char *merges, size_t merges_len,
                  const char *what, NlError *err) {
    *out = NULL;
    NlBpeAdded eot = {EOT_TEXT, -1, 1, 0};  // GPT-2's one special token, where the vocabulary has it
    NlBpeKind gpt2 = {NL_PATTERN_GPT2, 0, 0, 0, &eot, 1};
    NlBpe *b = bpe_new(&gpt2, what, err);
    cJSON *vocab = b ? cJSON_ParseWithLength(vocab_json, vocab_len) : NULL;
    int rc = b ? read_vocab(b, vocab, "vocab.json", what, err) : -1;
    if (rc == 0 && (eot.id = b->eot) >= 0) rc = add_tokens(b, what, err);
    if (rc == 0) rc = read_merges_text(b, merges, merges_len, what, err);
    cJSON_Delete(vocab);
    if (rc != 0) {
        nl_bpe_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

// ---- a Hugging Face tokenizer.json's vocabulary (bpe_hf.c reads the rest)

static int read_merges_json(NlBpe *b, const cJSON *merges, const char *what, NlError *err) {
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
    return merges_end(b, &m, rc, err);
}

int nl_bpe_build(NlBpe **out, const cJSON *vocab, const cJSON *merges, const NlBpeKind *kind, const char *what,
                 NlError *err) {
    *out = NULL;
    NlBpe *b = bpe_new(kind, what, err);
    int rc = b ? read_vocab(b, vocab, "model.vocab", what, err) : -1;
    if (rc == 0) rc = add_tokens(b, what, err);
    if (rc == 0) rc = read_merges_json(b, merges, what, err);
    if (rc != 0) {
        nl_bpe_free(b);
        return -1;
    }
    b->kind.added = NULL;  // (the caller's)
    *out = b;
    return 0;
}

void nl_bpe_free(NlBpe *b) {
    if (!b) return;
    for (int i = 0; b->bytes && i < b->n; i++) free(b->bytes[i]);
    free(b->bytes);
    free(b->len);
    free(b->pairs);
    free(b->sorted);
    free(b->added);
    free(b);
}

void nl_bpe_pad(NlBpe *b, int n) { b->padding = n > b->n ? n - b->n : 0; }
int nl_bpe_padding(const NlBpe *b) { return b->padding; }
int nl_bpe_size(const NlBpe *b) { return b->n + b->padding; }
int nl_bpe_eot(const NlBpe *b) { return b->eot; }

const unsigned char *nl_bpe_bytes(const NlBpe *b, int id, size_t *len) {
    *len = id < b->n ? b->len[id] : 0;
    return id < b->n ? b->bytes[id] : (const unsigned char *)"";
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

// ---- the layers of an encoding: added tokens, the normalizer, added tokens again, the digits, pieces

typedef struct {
    const NlBpe *b;
    int special;  // whether special added tokens are matched
    MergeRoom room;
    int *ids;
    size_t n;
} Encoding;

enum { RAW, NORMALIZED };  // the two passes of the added tokens: before the normalizer and after it

// The longest added token of this pass at text[at], its length, or 0; its id into *id.
static size_t added_at_text(const Encoding *e, int pass, const char *text, size_t len, size_t at, int *id) {
    const NlBpe *b = e->b;
    size_t best = 0;
    for (int i = 0; i < b->n_added; i++) {
        const NlBpeAdded *a = &b->added[i];
        size_t k = b->len[a->id];
        if ((a->special && !e->special) || (b->kind.nfc && a->normalized) != (pass == NORMALIZED) || k <= best ||
            k > len - at || memcmp(text + at, b->bytes[a->id], k) != 0)
            continue;
        best = k;
        *id = a->id;
    }
    return best;
}

// One piece's ids: a byte's token, the vocabulary's token for it (ignore_merges), or its merges.
static int encode_piece(Encoding *e, const unsigned char *s, size_t len, NlError *err) {
    const NlBpe *b = e->b;
    int id = len == 1 ? b->byte_token[s[0]] : -1;
    if (id < 0 && b->kind.ignore_merges) id = find_token(b->sorted, (size_t)b->n_vocab, s, len);
    if (id >= 0) {
        e->ids[e->n++] = id;
        return 0;
    }
    size_t k;
    if (room_fit(&e->room, len, err) != 0) return -1;
    merge_piece(b, &e->room, s, len, e->ids + e->n, &k);
    e->n += k;
    return 0;
}

// A text without added tokens: cut at each number when the digits are split, then into pieces.
static int encode_pieces(Encoding *e, const char *text, size_t len, NlError *err) {
    const NlBpe *b = e->b;
    for (size_t at = 0, k; at < len;) {
        size_t part = len;
        if (b->kind.split_digits && (k = nl_number_at(text, len, at)) != 0) {
            if (encode_piece(e, (const unsigned char *)text + at, k, err) != 0) return -1;
            at += k;
            continue;
        }
        if (b->kind.split_digits)
            for (part = at; part < len && !nl_number_at(text, len, part); part++) {}
        for (size_t end; at < part; at = end) {
            end = nl_piece_end(b->kind.pattern, text, part, at);
            if (encode_piece(e, (const unsigned char *)text + at, end - at, err) != 0) return -1;
        }
    }
    return 0;
}

static int encode_added(Encoding *e, int pass, const char *text, size_t len, NlError *err);

// A text between added tokens of the raw pass: normalized, then cut at those of the other pass.
static int encode_normalized(Encoding *e, const char *text, size_t len, NlError *err) {
    if (!e->b->kind.nfc || len == 0) return encode_pieces(e, text, len, err);
    char *nfc = malloc(NL_NFC_GROWTH * len);
    size_t nfc_len;
    int rc = !nfc ? nl_error(err, NL_ERR_NOMEM, "BPE: out of memory to normalize %zu bytes", len)
             : nl_nfc(text, len, nfc, &nfc_len, err) != 0 ? -1
                                                          : encode_added(e, NORMALIZED, nfc, nfc_len, err);
    free(nfc);
    return rc;
}

// The text cut at each added token of the pass (the leftmost, then the longest: Hugging Face's
// rule), each part between them encoded alone.
static int encode_added(Encoding *e, int pass, const char *text, size_t len, NlError *err) {
    size_t from = 0;
    for (size_t at = 0, k; at < len; at++) {
        int id;
        if (!e->b->added_first[(unsigned char)text[at]] || (k = added_at_text(e, pass, text, len, at, &id)) == 0)
            continue;
        int rc = pass == RAW ? encode_normalized(e, text + from, at - from, err)
                             : encode_pieces(e, text + from, at - from, err);
        if (rc != 0) return -1;
        e->ids[e->n++] = id;
        from = at + k;
        at = from - 1;
    }
    return pass == RAW ? encode_normalized(e, text + from, len - from, err)
                       : encode_pieces(e, text + from, len - from, err);
}

int nl_bpe_encode(const NlBpe *b, const char *text, size_t len, int special, int *ids, size_t *n_ids, NlError *err) {
    Encoding e = {b, special, {NULL, NULL, 0}, ids, 0};
    int rc = encode_added(&e, RAW, text, len, err);
    free(e.room.symbols);
    free(e.room.candidates);
    *n_ids = rc == 0 ? e.n : 0;
    return rc;
}
