// spm.c — SentencePiece's BPE with byte fallback (spm.h): pieces found by their text through a hash
// table, a Hugging Face file's merges by their pair of ids through a second one; a text merged as
// sentencepiece's BPE model merges it, with a heap of candidate pairs over a linked list of symbols.
#define _POSIX_C_SOURCE 200809L  // strnlen
#include "spm.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jsonx.h"
#include "tokenizer.h"

#define SPACE "\xE2\x96\x81"  // "▁", U+2581: a space, as SentencePiece writes it
#define UNK_SURFACE " \xE2\x81\x87 "  // " ⁇ ": how sentencepiece decodes <unk>

enum { NORMAL, CONTROL, BYTE };  // a piece's kind: merged and matched; special; one byte

typedef struct {
    uint64_t key;  // 0: empty
    int value;
} Slot;

typedef struct {
    Slot *slots;
    size_t mask;  // slots - 1, a power of two
} Table;

struct NlSpm {
    int n;
    char **text;  // (n) each piece as written, NUL-terminated
    unsigned char **bytes;  // (n) what each decodes to, NUL-terminated
    size_t *len;  // (n) bytes' lengths
    unsigned char *kind;  // (n) NORMAL, CONTROL or BYTE
    float *score;  // (n) the sentencepiece form's; NULL: merges by rank
    int *merged;  // (merges) the piece merge r makes (by rank)
    Table by_text, by_pair;  // a piece's text -> id; a merge's (left, right) ids -> its rank
    int byte_piece[256];
    int *controls, n_controls;  // the control pieces, for NL_ENCODE_SPECIAL
    int unk, bos, eos, add_bos, dummy_prefix, split_at_space;
};

// ---- the tables

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h | 1;  // never 0, the empty slot's key
}

static int table_init(Table *t, size_t count) {
    size_t slots = 16;
    while (slots < 2 * count + 2) slots *= 2;
    t->slots = calloc(slots, sizeof *t->slots);
    t->mask = slots - 1;
    return t->slots ? 0 : -1;
}

// The slot of key: where it is, or the empty slot where it goes. same(value) tells a true hit when
// keys may collide (texts); NULL when the key is the whole entry (pairs).
static Slot *table_slot(const Table *t, uint64_t key, int (*same)(const void *, int), const void *arg) {
    uint64_t h = (key ^ key >> 33) * 0xff51afd7ed558ccdULL;  // (mixed: a pair's ids sit in a few bits)
    for (size_t i = (h ^ h >> 33) & t->mask;; i = (i + 1) & t->mask) {
        Slot *s = &t->slots[i];
        if (s->key == 0 || (s->key == key && (!same || same(arg, s->value)))) return s;
    }
}

typedef struct {
    const NlSpm *spm;
    const char *s;
    size_t n;
} TextKey;

static int same_text(const void *arg, int id) {
    const TextKey *k = arg;
    return strnlen(k->spm->text[id], k->n + 1) == k->n && memcmp(k->spm->text[id], k->s, k->n) == 0;
}

// The piece written s[0..n), or -1.
static int find_text(const NlSpm *spm, const char *s, size_t n) {
    TextKey k = {spm, s, n};
    const Slot *slot = table_slot(&spm->by_text, hash_bytes(s, n), same_text, &k);
    return slot->key ? slot->value : -1;
}

static uint64_t pair_key(int a, int b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }

// ---- building

// "<0xXX>" (two upper-case hex digits, as sentencepiece writes them): the byte, else -1.
static int byte_of_piece(const char *s) {
    static const char HEX[] = "0123456789ABCDEF";
    if (strlen(s) != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    const char *hi = memchr(HEX, s[3], 16), *lo = memchr(HEX, s[4], 16);
    return hi && lo && s[3] && s[4] ? (int)((hi - HEX) * 16 + (lo - HEX)) : -1;
}

// Whether s is n > 0 bytes of valid UTF-8 without a NUL.
static int valid_utf8(const char *s, size_t n) {
    uint32_t cp;
    for (size_t at = 0, k; at < n; at += k)
        if ((k = nl_utf8_decode(s + at, n - at, &cp)) == 0 || cp == 0) return 0;
    return n > 0;
}

// Piece id's text, kind and bytes (a normal piece's with each "▁" a space).
static int add_piece(NlSpm *spm, int id, const char *s, int kind, const char *what, NlError *err) {
    size_t n = strlen(s), out = 0;
    int byte = byte_of_piece(s);
    if (!valid_utf8(s, n))
        return nl_error(err, NL_ERR_FORMAT, "%s: piece %d is not valid UTF-8 text (empty, a NUL, or a bad byte)", what,
                        id);
    if (kind == NORMAL && byte >= 0) kind = BYTE;
    spm->kind[id] = (unsigned char)kind;
    spm->text[id] = malloc(n + 1);
    spm->bytes[id] = malloc(n + 1 > sizeof UNK_SURFACE ? n + 1 : sizeof UNK_SURFACE);
    if (!spm->text[id] || !spm->bytes[id]) return nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
    memcpy(spm->text[id], s, n + 1);
    if (kind == BYTE) spm->bytes[id][out++] = (unsigned char)byte;
    else if (id == spm->unk) out = (size_t)snprintf((char *)spm->bytes[id], sizeof UNK_SURFACE, "%s", UNK_SURFACE);
    else if (kind == NORMAL)
        for (size_t at = 0; at < n; out++) {
            int space = strncmp(s + at, SPACE, 3) == 0;
            spm->bytes[id][out] = space ? ' ' : (unsigned char)s[at];
            at += space ? 3 : 1;
        }
    spm->bytes[id][out] = '\0';
    spm->len[id] = out;
    if (out > NL_TOKEN_MAX_BYTES)
        return nl_error(err, NL_ERR_FORMAT, "%s: piece %d is %zu bytes long, more than %d", what, id, out,
                        NL_TOKEN_MAX_BYTES);
    Slot *slot = table_slot(&spm->by_text, hash_bytes(s, n), same_text, &(TextKey){spm, s, n});
    if (slot->key)
        return nl_error(err, NL_ERR_FORMAT, "%s: pieces %d and %d are both \"%.60s\": each piece is written once", what,
                        slot->value, id, s);
    *slot = (Slot){hash_bytes(s, n), id};
    if (kind == BYTE) {
        if (spm->byte_piece[byte] >= 0)
            return nl_error(err, NL_ERR_FORMAT, "%s: pieces %d and %d are both the byte 0x%02X", what,
                            spm->byte_piece[byte], id, byte);
        spm->byte_piece[byte] = id;
    }
    if (kind == CONTROL && n < 2)
        return nl_error(err, NL_ERR_FORMAT, "%s: control piece %d is \"%s\": one is written as a tag such as <s>", what,
                        id, s);
    if (kind == CONTROL) spm->controls[spm->n_controls++] = id;
    return 0;
}

// Merge r of a Hugging Face file: two normal pieces whose join is a third.
static int add_merge(NlSpm *spm, size_t r, const char *const pair[2], const char *what, NlError *err) {
    char both[2 * 4 * NL_TOKEN_MAX_BYTES + 1];
    int a = find_text(spm, pair[0], strlen(pair[0])), b = find_text(spm, pair[1], strlen(pair[1])), m = -1;
    if (a >= 0 && b >= 0 && spm->kind[a] == NORMAL && spm->kind[b] == NORMAL &&
        snprintf(both, sizeof both, "%s%s", pair[0], pair[1]) < (int)sizeof both)
        m = find_text(spm, both, strlen(both));
    if (m < 0 || spm->kind[m] != NORMAL)
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: model.merges entry %zu (\"%.40s\" \"%.40s\") is not two pieces whose "
                        "join is a piece",
                        what, r + 1, pair[0], pair[1]);
    Slot *slot = table_slot(&spm->by_pair, pair_key(a, b), NULL, NULL);
    if (slot->key)
        return nl_error(err, NL_ERR_FORMAT, "%s: model.merges entry %zu repeats entry %d: each pair has one rank", what,
                        r + 1, slot->value + 1);
    *slot = (Slot){pair_key(a, b), (int)r};
    spm->merged[r] = m;
    return 0;
}

// unk, bos and eos: in range (bos and eos may be -1) and three different pieces.
static int check_ids(const NlSpmSpec *sp, const char *what, NlError *err) {
    const int ids[3] = {sp->unk, sp->bos, sp->eos};
    static const char *const NAMES[3] = {"unk", "bos", "eos"};
    for (int i = 0; i < 3; i++) {
        if (ids[i] < (i ? -1 : 0) || ids[i] >= sp->n)
            return nl_error(err, NL_ERR_FORMAT, "%s: the %s id %d is not a piece (0 to %d%s)", what, NAMES[i], ids[i],
                            sp->n - 1, i ? ", or -1 for none" : "");
        for (int j = 0; j < i; j++)
            if (ids[i] >= 0 && ids[i] == ids[j])
                return nl_error(err, NL_ERR_FORMAT, "%s: %s and %s are both piece %d", what, NAMES[j], NAMES[i],
                                ids[i]);
    }
    if (sp->add_bos && sp->bos < 0)
        return nl_error(err, NL_ERR_FORMAT, "%s: add_bos is set, and there is no bos piece", what);
    return 0;
}

static int build(NlSpm *spm, const NlSpmSpec *sp, const char *what, NlError *err) {
    size_t n = (size_t)sp->n;
    spm->text = calloc(n, sizeof *spm->text);
    spm->bytes = calloc(n, sizeof *spm->bytes);
    spm->len = calloc(n, sizeof *spm->len);
    spm->kind = calloc(n, 1);
    spm->controls = calloc(n, sizeof *spm->controls);
    spm->score = sp->scores ? calloc(n, sizeof *spm->score) : NULL;
    spm->merged = calloc(sp->n_merges + 1, sizeof *spm->merged);
    if (!spm->text || !spm->bytes || !spm->len || !spm->kind || !spm->controls || (sp->scores && !spm->score) ||
        !spm->merged || table_init(&spm->by_text, n) != 0 || table_init(&spm->by_pair, sp->n_merges) != 0)
        return nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
    for (int i = 0; i < sp->n; i++) {
        int control = i == sp->unk || i == sp->bos || i == sp->eos || (sp->special && sp->special[i]);
        if (add_piece(spm, i, sp->pieces[i], control ? CONTROL : NORMAL, what, err) != 0) return -1;
        if (sp->scores && !(fabs(sp->scores[i]) <= FLT_MAX))  // (and a float: sentencepiece keeps float scores)
            return nl_error(err, NL_ERR_FORMAT,
                            "%s: piece %d (\"%.60s\") has a score that is not a finite number in a float's range", what,
                            i, sp->pieces[i]);
        if (sp->scores) spm->score[i] = (float)sp->scores[i];
    }
    for (int b = 0; b < 256; b++)
        if (spm->byte_piece[b] < 0)
            return nl_error(err, NL_ERR_FORMAT, "%s: no byte piece <0x%02X>: byte fallback needs all 256", what, b);
    int space = find_text(spm, SPACE, 3);
    if (space < 0 || spm->kind[space] != NORMAL)
        return nl_error(err, NL_ERR_FORMAT, "%s: no piece \"" SPACE "\" (a space): every space is one", what);
    for (size_t r = 0; r < sp->n_merges; r++)
        if (add_merge(spm, r, sp->merges[r], what, err) != 0) return -1;
    return 0;
}

int nl_spm_create(NlSpm **out, const NlSpmSpec *sp, const char *what, NlError *err) {
    *out = NULL;
    if (sp->n <= 0) return nl_error(err, NL_ERR_FORMAT, "%s: there are no pieces", what);
    if (check_ids(sp, what, err) != 0) return -1;
    NlSpm *spm = calloc(1, sizeof *spm);
    if (!spm) return nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
    *spm = (NlSpm){.n = sp->n,
                   .unk = sp->unk,
                   .bos = sp->bos,
                   .eos = sp->eos,
                   .add_bos = sp->add_bos,
                   .dummy_prefix = sp->dummy_prefix,
                   .split_at_space = sp->split_at_space};
    for (int b = 0; b < 256; b++) spm->byte_piece[b] = -1;
    if (build(spm, sp, what, err) != 0) {
        nl_spm_free(spm);
        return -1;
    }
    *out = spm;
    return 0;
}

// ---- normlab's sentencepiece form

int nl_spm_from_json(NlSpm **out, const cJSON *root, const char *what, NlError *err) {
    static const char *const KEYS[] = {"type",    "pieces",           "unk_id",        "bos_id", "eos_id",
                                       "add_bos", "add_dummy_prefix", "byte_fallback", NULL};
    *out = NULL;
    int64_t ids[3];
    int flags[3];
    static const char *const ID_KEYS[3] = {"unk_id", "bos_id", "eos_id"},
                             *FLAG_KEYS[3] = {"add_bos", "add_dummy_prefix", "byte_fallback"};
    if (nl_jsonx_only_keys(root, KEYS, what, err) != 0) return -1;
    for (int i = 0; i < 3; i++)
        if (nl_jsonx_int(root, ID_KEYS[i], 1, -1, 1 << 30, &ids[i], what, err) != 0 ||
            nl_jsonx_bool(root, FLAG_KEYS[i], 1, &flags[i], what, err) != 0)
            return -1;
    if (!flags[2])
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: byte_fallback is false: normlab reads SentencePiece BPE with byte "
                        "fallback only",
                        what);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "pieces");
    if (!cJSON_IsArray(list) || !list->child)
        return nl_error(err, NL_ERR_FORMAT, "%s: \"pieces\" must be a non-empty array of [text, score]", what);
    int n = cJSON_GetArraySize(list), i = 0;
    const char **pieces = calloc((size_t)n, sizeof *pieces);
    double *scores = calloc((size_t)n, sizeof *scores);
    int rc = pieces && scores ? 0 : nl_error(err, NL_ERR_NOMEM, "%s: out of memory", what);
    for (const cJSON *e = list->child; e && rc == 0; e = e->next, i++) {
        const cJSON *t = cJSON_IsArray(e) ? e->child : NULL, *s = t ? t->next : NULL;
        if (!cJSON_IsString(t) || !cJSON_IsNumber(s) || s->next)
            rc = nl_error(err, NL_ERR_FORMAT, "%s: pieces[%d] is not [text, score]", what, i);
        else {
            pieces[i] = t->valuestring;
            scores[i] = s->valuedouble;
        }
    }
    NlSpmSpec spec = {.pieces = pieces,
                      .scores = scores,
                      .n = n,
                      .unk = (int)ids[0],
                      .bos = (int)ids[1],
                      .eos = (int)ids[2],
                      .add_bos = flags[0],
                      .dummy_prefix = flags[1]};
    if (rc == 0) rc = nl_spm_create(out, &spec, what, err);
    free(pieces);
    free(scores);
    return rc;
}

void nl_spm_free(NlSpm *spm) {
    if (!spm) return;
    for (int i = 0; i < spm->n; i++) {
        if (spm->text) free(spm->text[i]);
        if (spm->bytes) free(spm->bytes[i]);
    }
    free(spm->text);
    free(spm->bytes);
    free(spm->len);
    free(spm->kind);
    free(spm->score);
    free(spm->merged);
    free(spm->controls);
    free(spm->by_text.slots);
    free(spm->by_pair.slots);
    free(spm);
}

int nl_spm_size(const NlSpm *spm) { return spm->n; }

void nl_spm_info(const NlSpm *spm, NlTokenizerInfo *info) {
    info->bos = spm->bos;
    info->eos = spm->eos;
    info->add_bos = spm->add_bos;
    info->dummy_prefix = spm->dummy_prefix;
}

const unsigned char *nl_spm_bytes(const NlSpm *spm, int id, size_t *len) {
    *len = spm->len[id];
    return spm->bytes[id];
}

int nl_spm_is_control(const NlSpm *spm, int id) { return spm->kind[id] == CONTROL; }

// ---- encoding

#define NONE SIZE_MAX

// A symbol of the text being merged: a piece over norm[at, at + len), or a character no piece
// holds (id -1), linked to its neighbours. len 0: merged into its left neighbour.
typedef struct {
    size_t at, len, prev, next;
    int id;
} Symbol;

// An adjacent pair whose join is a piece, as it was when queued.
typedef struct {
    float best;  // the joined piece's score, or minus its merge's rank
    int merged;
    size_t left, right, len;  // the symbols, and their bytes together
} Pair;

typedef struct {
    const NlSpm *spm;
    const char *norm;  // the text with "▁" for spaces (and the dummy prefix)
    Symbol *sym;
    Pair *heap;  // the best pair first, the leftmost of equals
    size_t n_heap;
} Merging;

static int better(const Pair *x, const Pair *y) {
    return x->best > y->best || (x->best == y->best && x->left < y->left);
}

static void heap_push(Merging *m, Pair p) {
    size_t at = m->n_heap++;
    for (; at > 0 && better(&p, &m->heap[(at - 1) / 2]); at = (at - 1) / 2) m->heap[at] = m->heap[(at - 1) / 2];
    m->heap[at] = p;
}

static Pair heap_pop(Merging *m) {
    Pair top = m->heap[0], last = m->heap[--m->n_heap];
    size_t at = 0;
    for (size_t child; (child = 2 * at + 1) < m->n_heap; at = child) {
        if (child + 1 < m->n_heap && better(&m->heap[child + 1], &m->heap[child])) child++;
        if (!better(&m->heap[child], &last)) break;
        m->heap[at] = m->heap[child];
    }
    if (m->n_heap) m->heap[at] = last;
    return top;
}

// Queues the pair of symbol left and the next when its join is a piece: by score (sentencepiece's
// bpe_model.cc: the join looked up among the normal pieces) or by the rank of its merge (HF).
static void maybe_queue(Merging *m, size_t left) {
    const NlSpm *spm = m->spm;
    if (left == NONE || m->sym[left].next == NONE) return;
    const Symbol *a = &m->sym[left], *b = &m->sym[a->next];
    if (a->id < 0 || b->id < 0 || (spm->split_at_space && strncmp(m->norm + b->at, SPACE, 3) == 0)) return;
    Pair p = {0, -1, left, a->next, a->len + b->len};
    if (spm->score) {
        p.merged = find_text(spm, m->norm + a->at, p.len);
        if (p.merged < 0 || spm->kind[p.merged] != NORMAL) return;
        p.best = spm->score[p.merged];
    } else {
        const Slot *s = table_slot(&spm->by_pair, pair_key(a->id, b->id), NULL, NULL);
        if (!s->key) return;
        p.merged = spm->merged[s->value];
        p.best = -(float)s->value;
    }
    heap_push(m, p);
}

// norm[0..n) merged into ids: every character a symbol (its piece, or none), then the best pair
// merged until no pair's join is a piece; a pair whose symbols have changed since it was queued
// is stale (a symbol only grows, so their lengths tell). A character no piece holds is its bytes.
static size_t merge_text(Merging *m, size_t n, int *ids) {
    const NlSpm *spm = m->spm;
    size_t count = 0, out = 0;
    for (size_t at = 0, k; at < n; at += k, count++) {
        uint32_t cp;
        k = nl_utf8_decode(m->norm + at, n - at, &cp);
        if (k == 0) k = 1;  // a byte that is not UTF-8: a character of its own
        int id = find_text(spm, m->norm + at, k);
        m->sym[count] = (Symbol){at, k, count ? count - 1 : NONE, at + k < n ? count + 1 : NONE,
                                 id >= 0 && spm->kind[id] == NORMAL && valid_utf8(m->norm + at, k) ? id : -1};
    }
    m->n_heap = 0;
    for (size_t i = 0; i + 1 < count; i++) maybe_queue(m, i);
    while (m->n_heap) {
        Pair p = heap_pop(m);
        Symbol *a = &m->sym[p.left], *b = &m->sym[p.right];
        if (a->len == 0 || b->len == 0 || a->next != p.right || a->len + b->len != p.len) continue;
        a->id = p.merged;
        a->len = p.len;
        a->next = b->next;
        if (b->next != NONE) m->sym[b->next].prev = p.left;
        b->len = 0;
        maybe_queue(m, a->prev);
        maybe_queue(m, p.left);
    }
    for (size_t i = 0; count && i != NONE; i = m->sym[i].next)
        if (m->sym[i].id >= 0) ids[out++] = m->sym[i].id;
        else
            for (size_t j = 0; j < m->sym[i].len; j++)
                ids[out++] = spm->byte_piece[(unsigned char)m->norm[m->sym[i].at + j]];
    return out;
}

// The control piece whose text starts text[0..len), or -1 (the longest, when several do).
static int control_at(const NlSpm *spm, const char *text, size_t len) {
    int best = -1;
    for (int i = 0; i < spm->n_controls; i++) {
        int id = spm->controls[i];
        size_t k = strlen(spm->text[id]);
        if (k <= len && memcmp(text, spm->text[id], k) == 0 && (best < 0 || k > strlen(spm->text[best]))) best = id;
    }
    return best;
}

// One text between control pieces into ids: spaces as "▁", the dummy prefix first (unless the text
// continues one: prefix 0).
static size_t encode_part(Merging *m, char *norm, const char *text, size_t len, int prefix, int *ids) {
    size_t n = 0;
    if (m->spm->dummy_prefix && prefix && len) n = (size_t)(memcpy(norm, SPACE, 3), 3);
    for (size_t i = 0; i < len; i++)
        if (text[i] == ' ') n += (size_t)(memcpy(norm + n, SPACE, 3), 3);
        else norm[n++] = text[i];
    m->norm = norm;
    return merge_text(m, n, ids);
}

int nl_spm_encode(const NlSpm *spm, const char *text, size_t len, int flags, int *ids, size_t *n_ids, NlError *err) {
    size_t n = 0, cap = len + 1;  // characters of the text and its prefix
    *n_ids = 0;
    char *norm = cap < SIZE_MAX / (3 * sizeof(Pair)) ? malloc(3 * cap) : NULL;
    Merging m = {spm, NULL, norm ? malloc(cap * sizeof(Symbol)) : NULL, NULL, 0};
    m.heap = m.sym ? malloc(3 * cap * sizeof(Pair)) : NULL;  // a merge takes one pair and queues two
    if (!m.heap) {
        free(norm);
        free(m.sym);
        return nl_error(err, NL_ERR_NOMEM, "out of memory to encode %zu bytes", len);
    }
    if ((flags & NL_ENCODE_BOS) && spm->add_bos) ids[n++] = spm->bos;
    for (size_t at = 0; at <= len;) {
        size_t end = at;
        int control = -1;
        while (end < len && (!(flags & NL_ENCODE_SPECIAL) || (control = control_at(spm, text + end, len - end)) < 0))
            end++;
        n += encode_part(&m, norm, text + at, end - at, at > 0 || !(flags & NL_ENCODE_CONTINUE), ids + n);
        if (control < 0) break;
        ids[n++] = control;
        at = end + strlen(spm->text[control]);
    }
    free(norm);
    free(m.sym);
    free(m.heap);
    *n_ids = n;
    return 0;
}
