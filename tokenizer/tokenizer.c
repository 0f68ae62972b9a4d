// tokenizer.c — the model's tokenizer (tokenizer.h): the character kind here, a sorted code-point
// table, binary-searched, with an ASCII fast path; the BPE kind handed to bpe.c, the sentencepiece
// kind to spm.c.
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "spm.h"
#include "unicode.h"

typedef struct {
    uint32_t cp;
    int id;
} CodeEntry;

struct NlTokenizer {
    NlTokenizerKind kind;
    NlBpe *bpe;  // the BPE kind's
    NlSpm *spm;  // the sentencepiece kind's; the rest is the character kind's
    int bpe_bos;  // the bos the BPE kind puts first (a GGUF's add_bos), or -1
    int n;
    char (*pieces)[5];  // (n) NUL-terminated UTF-8, at most 4 bytes each
    CodeEntry *by_cp;  // (n) sorted by code point
    int ascii[128];  // code point -> id, or -1
};

static int cmp_entry(const void *a, const void *b) {
    uint32_t x = ((const CodeEntry *)a)->cp, y = ((const CodeEntry *)b)->cp;
    return (x > y) - (x < y);
}

int nl_tokenizer_create(NlTokenizer **out, const char *const *pieces, int n, NlError *err) {
    *out = NULL;
    if (n <= 0) {
        nl_error(err, NL_ERR_FORMAT, "vocabulary is empty");
        return -1;
    }
    NlTokenizer *t = calloc(1, sizeof *t);
    if (t) {
        t->pieces = calloc((size_t)n, sizeof *t->pieces);
        t->by_cp = calloc((size_t)n, sizeof *t->by_cp);
    }
    if (!t || !t->pieces || !t->by_cp) {
        nl_error(err, NL_ERR_NOMEM, "out of memory for a vocabulary of %d entries", n);
        nl_tokenizer_free(t);
        return -1;
    }
    t->n = n;
    for (int i = 0; i < 128; i++) t->ascii[i] = -1;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(pieces[i]);
        uint32_t cp = 0;
        size_t used = nl_utf8_decode(pieces[i], len, &cp);
        if (len == 0 || used == 0 || used != len || cp == 0) {
            nl_error(err, NL_ERR_FORMAT, "vocabulary entry %d is not exactly one valid UTF-8 character (non-NUL)", i);
            nl_tokenizer_free(t);
            return -1;
        }
        memcpy(t->pieces[i], pieces[i], len + 1);
        t->by_cp[i] = (CodeEntry){cp, i};
    }
    qsort(t->by_cp, (size_t)n, sizeof *t->by_cp, cmp_entry);
    for (int i = 1; i < n; i++) {
        if (t->by_cp[i].cp == t->by_cp[i - 1].cp) {
            nl_error(err, NL_ERR_FORMAT, "vocabulary entries %d and %d are the same character U+%04X",
                     t->by_cp[i - 1].id, t->by_cp[i].id, (unsigned)t->by_cp[i].cp);
            nl_tokenizer_free(t);
            return -1;
        }
    }
    for (int i = 0; i < n; i++)
        if (t->by_cp[i].cp < 128) t->ascii[t->by_cp[i].cp] = t->by_cp[i].id;
    *out = t;
    return 0;
}

// A tokenizer of a BPE kind: t, which owns its bpe or spm from here on (freed on failure).
static int create_kind(NlTokenizer **out, NlTokenizer t, NlError *err) {
    if (!(*out = malloc(sizeof **out))) {
        nl_bpe_free(t.bpe);
        nl_spm_free(t.spm);
        return nl_error(err, NL_ERR_NOMEM, "out of memory for a tokenizer");
    }
    **out = t;
    return 0;
}

int nl_tokenizer_create_bpe(NlTokenizer **out, NlBpe *bpe, NlError *err) {
    return create_kind(out, (NlTokenizer){.kind = NL_TOKENIZER_BPE, .bpe = bpe, .n = nl_bpe_size(bpe), .bpe_bos = -1},
                       err);
}

int nl_tokenizer_set_bos(NlTokenizer *tok, int bos, NlError *err) {
    if (!tok->bpe) return nl_error(err, NL_ERR_FORMAT, "only a byte-level BPE's bos is set after it is made");
    if (bos < -1 || bos >= tok->n)
        return nl_error(err, NL_ERR_FORMAT, "bos %d is not one of the %d tokens", bos, tok->n);
    tok->bpe_bos = bos;
    return 0;
}

int nl_tokenizer_create_spm(NlTokenizer **out, NlSpm *spm, NlError *err) {
    return create_kind(out, (NlTokenizer){.kind = NL_TOKENIZER_SPM, .spm = spm, .n = nl_spm_size(spm)}, err);
}

void nl_tokenizer_free(NlTokenizer *tok) {
    if (!tok) return;
    nl_bpe_free(tok->bpe);
    nl_spm_free(tok->spm);
    free(tok->pieces);
    free(tok->by_cp);
    free(tok);
}

int nl_tokenizer_size(const NlTokenizer *tok) { return tok->n; }
NlTokenizerInfo nl_tokenizer_info(const NlTokenizer *tok) {
    NlTokenizerInfo info = {.kind = tok->kind, .bos = -1, .eos = -1};
    if (tok->spm) nl_spm_info(tok->spm, &info);
    if (tok->bpe) info.padding = nl_bpe_padding(tok->bpe), info.bos = tok->bpe_bos, info.add_bos = tok->bpe_bos >= 0;
    return info;
}

int nl_tokenizer_pad(NlTokenizer *tok, int n, NlError *err) {
    if (!tok->bpe || n < tok->n)
        return nl_error(err, NL_ERR_FORMAT, "%d tokens cannot be padded to %d (a byte-level BPE's only)", tok->n, n);
    nl_bpe_pad(tok->bpe, n);
    tok->n = n;
    return 0;
}
int nl_tokenizer_eot(const NlTokenizer *tok) { return tok->bpe ? nl_bpe_eot(tok->bpe) : -1; }

const char *nl_tokenizer_bytes(const NlTokenizer *tok, int id, size_t *len) {
    if (tok->bpe && id == tok->bpe_bos) return *len = 0, "";  // (as sentencepiece's bos: no text)
    if (tok->bpe) return (const char *)nl_bpe_bytes(tok->bpe, id, len);
    if (tok->spm) return (const char *)nl_spm_bytes(tok->spm, id, len);
    *len = strlen(tok->pieces[id]);
    return tok->pieces[id];
}

size_t nl_tokenizer_text_bytes(const NlTokenizer *tok, const int *ids, size_t n, size_t from) {
    NlTokenizerInfo info = nl_tokenizer_info(tok);
    size_t bytes = 0, len;
    int starts_text = info.dummy_prefix;  // the next text piece's leading space is the dummy prefix's
    for (size_t i = 0; i < n; i++) {
        const char *piece = nl_tokenizer_bytes(tok, ids[i], &len);
        int control = tok->spm && nl_spm_is_control(tok->spm, ids[i]);  // after one, a text starts again
        if (i >= from) bytes += len - (size_t)(starts_text && !control && len && piece[0] == ' ');
        starts_text = info.dummy_prefix && control;
    }
    return bytes;
}

const char *nl_tokenizer_piece(const NlTokenizer *tok, int id) {
    size_t len;
    return nl_tokenizer_bytes(tok, id, &len);
}

static int lookup(const NlTokenizer *t, uint32_t cp) {
    if (cp < 128) return t->ascii[cp];
    size_t lo = 0, hi = (size_t)t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->by_cp[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    return (lo < (size_t)t->n && t->by_cp[lo].cp == cp) ? t->by_cp[lo].id : -1;
}

// Describes a code point for an error message: the character itself when printable, and U+XXXX.
static void describe(char *buf, size_t buflen, const char *bytes, size_t n, uint32_t cp) {
    if (cp >= 0x20 && cp != 0x7F && cp != '\'') snprintf(buf, buflen, "'%.*s' (U+%04X)", (int)n, bytes, (unsigned)cp);
    else snprintf(buf, buflen, "U+%04X", (unsigned)cp);
}

int nl_tokenizer_encode(const NlTokenizer *tok, const char *text, size_t len, int flags, int *ids, size_t *n_ids,
                        size_t *n_skipped, NlError *err) {
    size_t n = 0, skipped = 0, chars = 0;
    int skip_unknown = flags & NL_ENCODE_SKIP_UNKNOWN;
    *n_skipped = 0;
    if (tok->bpe) {
        int bos = (flags & NL_ENCODE_BOS) && tok->bpe_bos >= 0;
        if (bos) ids[0] = tok->bpe_bos;
        if (nl_bpe_encode(tok->bpe, text, len, flags & NL_ENCODE_SPECIAL, ids + bos, n_ids, err) != 0) return -1;
        *n_ids += (size_t)bos;
        return 0;
    }
    if (tok->spm) return nl_spm_encode(tok->spm, text, len, flags, ids, n_ids, err);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t used = nl_utf8_decode(text + i, len - i, &cp);
        chars++;
        if (used == 0) {
            nl_error(err, NL_ERR_FORMAT, "invalid UTF-8 at byte %zu (character %zu)", i + 1, chars);
            return -1;
        }
        int id = lookup(tok, cp);
        if (id < 0 && !skip_unknown) {
            char what[64];
            describe(what, sizeof what, text + i, used, cp);
            nl_error(err, NL_ERR_FORMAT, "character %s at position %zu is not in the model's vocabulary", what, chars);
            return -1;
        }
        if (id < 0) skipped++;
        else ids[n++] = id;
        i += used;
    }
    *n_ids = n;
    *n_skipped = skipped;
    return 0;
}
