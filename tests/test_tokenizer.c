// test_tokenizer.c — round trips, unknown characters, multi-byte UTF-8, bad vocabularies.
#define _POSIX_C_SOURCE 200809L  // mkdtemp
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpe.h"
#include "pretokenize.h"
#include "check.h"
#include "model.h"
#include "tokenizer.h"
#include "utf8.h"

static const char *const VOCAB[] = {"\n", " ", "a", "b", "é", "ß", "☃", "€", "你", "😀"};

static NlTokenizer *make(void) {
    NlTokenizer *t = NULL;
    NlError err;
    int rc = nl_tokenizer_create(&t, VOCAB, 10, &err);
    CHECK(rc == 0, "create failed: %s", err.msg);
    return t;
}

static void tokenizer_round_trips_multibyte_text(void) {
    NlTokenizer *t = make();
    const char *text = "ab é€\n你😀ß☃";
    int ids[64];
    size_t n, skipped;
    NlError err;
    char back[128] = "";
    CHECK(nl_tokenizer_encode(t, text, strlen(text), 0, ids, &n, &skipped, &err) == 0, "%s", err.msg);
    CHECK(n == 10, "10 characters, got %zu ids", n);
    for (size_t i = 0; i < n; i++) strcat(back, nl_tokenizer_piece(t, ids[i]));
    CHECK(strcmp(back, text) == 0, "decoded '%s'", back);
    CHECK(ids[0] == 2 && ids[3] == 4 && ids[7] == 9, "ids follow vocabulary order");
    nl_tokenizer_free(t);
}

static void tokenizer_rejects_unknown_char_with_position(void) {
    NlTokenizer *t = make();
    int ids[16];
    size_t n, skipped;
    NlError err = {NL_OK, ""};
    int rc = nl_tokenizer_encode(t, "abéZ", 5, 0, ids, &n, &skipped, &err);
    CHECK(rc != 0, "unknown character accepted");
    CHECK(strstr(err.msg, "'Z' (U+005A) at position 4") != NULL, "message: %s", err.msg);
    CHECK(err.code == NL_ERR_FORMAT && strstr(err.msg, "--") == NULL, "a format error naming no flag: %d %s", err.code,
          err.msg);
    rc = nl_tokenizer_encode(t, "a\tb", 3, 0, ids, &n, &skipped, &err);
    CHECK(rc != 0 && strstr(err.msg, "U+0009 at position 2") != NULL, "tab described by code point: %s", err.msg);
    nl_tokenizer_free(t);
}

static void tokenizer_skips_unknown_when_asked(void) {
    NlTokenizer *t = make();
    int ids[16];
    size_t n, skipped;
    NlError err;
    CHECK(nl_tokenizer_encode(t, "aZbYY", 5, 1, ids, &n, &skipped, &err) == 0, "%s", err.msg);
    CHECK(n == 2 && skipped == 3 && ids[0] == 2 && ids[1] == 3, "n=%zu skipped=%zu", n, skipped);
    nl_tokenizer_free(t);
}

static void tokenizer_rejects_invalid_utf8(void) {
    NlTokenizer *t = make();
    int ids[16];
    size_t n, skipped;
    NlError err;
    const char *bad[] = {"a\xC3", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "a\xE2\x82"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = nl_tokenizer_encode(t, bad[i], strlen(bad[i]), 1, ids, &n, &skipped, &err);
        CHECK(rc != 0 && strstr(err.msg, "invalid UTF-8") != NULL, "case %zu: rc=%d %s", i, rc, err.msg);
    }
    nl_tokenizer_free(t);
}

static void tokenizer_rejects_bad_vocabularies(void) {
    NlTokenizer *t = NULL;
    NlError err;
    const char *dup[] = {"a", "b", "a"};
    CHECK(nl_tokenizer_create(&t, dup, 3, &err) != 0 && strstr(err.msg, "entries 0 and 2") != NULL, "dup: %s", err.msg);
    const char *two[] = {"a", "ab"};
    CHECK(nl_tokenizer_create(&t, two, 2, &err) != 0 && strstr(err.msg, "entry 1") != NULL, "two chars: %s", err.msg);
    const char *empty[] = {""};
    CHECK(nl_tokenizer_create(&t, empty, 1, &err) != 0 && strstr(err.msg, "entry 0") != NULL, "empty: %s", err.msg);
    const char *bad[] = {"\xFF"};
    CHECK(nl_tokenizer_create(&t, bad, 1, &err) != 0, "invalid UTF-8 entry accepted");
    CHECK(nl_tokenizer_create(&t, bad, 0, &err) != 0 && strstr(err.msg, "empty") != NULL, "zero: %s", err.msg);
    CHECK(t == NULL, "no tokenizer on failure");
}

// GPT-2's pre-tokenizer, piece by piece: each case is a text and the byte lengths of its pieces, as
// GPT-2's pattern under Python's regex (and Hugging Face's tokenizers) splits it. The last two tell
// \s from JavaScript's: U+0085 is whitespace and U+FEFF is not.
static void pretokenizer_splits_as_gpt2s_pattern(void) {
    static const struct {
        const char *text;
        size_t pieces[8];  // 0-terminated
    } CASES[] = {
        {"it's", {2, 2}},  // "it", "'s"
        {"'S", {1, 1}},  // no contraction in capitals: "'", "S"
        {"they'll've", {4, 3, 3}},
        {"x  y", {1, 1, 2}},  // "x", " ", " y": the run less its last space
        {"a   ", {1, 3}},  // trailing spaces: one piece
        {"\n\n x", {2, 2}},  // "\n\n", " x"
        {" 123abc", {4, 3}},
        {"!!'s", {3, 1}},  // the run of others takes the apostrophe
        {"\xc3\xa9t\xc3\xa9", {5}},  // "été": letters
        {"\xff\xfe a", {2, 2}},  // invalid bytes: others
        {" \xc2\x85x", {1, 2, 1}},  // U+0085 is whitespace: " ", NEL, "x"
        {" \xef\xbb\xbfx", {4, 1}},  // U+FEFF is not: " BOM", "x"
        {"a\xe3\x80\x80"
         "b",
         {1, 3, 1}},  // U+3000 (ideographic space) alone before a letter
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const char *t = CASES[c].text;
        size_t len = strlen(t), at = 0, k = 0;
        int same = 1;
        for (; at < len && k < 8; k++) {
            size_t end = nl_piece_end(NL_PATTERN_GPT2, t, len, at);
            same &= CASES[c].pieces[k] == end - at;
            at = end;
        }
        CHECK(same && at == len && (k == 8 || CASES[c].pieces[k] == 0), "case %zu: pieces as GPT-2's pattern", c);
    }
}

// A byte-level vocabulary of the 256 bytes (ids 0..255, in byte order) and extra entries after them,
// as vocab.json text, into buf.
static void byte_vocab(char *buf, size_t cap, const char *extra) {
    size_t at = (size_t)snprintf(buf, cap, "{");
    for (int b = 0; b < 256; b++) {
        int keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF), k = 0;
        for (int x = 0; x < b && !keep; x++) k += !((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE));
        unsigned cp = keep ? (unsigned)b : 256u + (unsigned)k;
        char u[8];
        if (cp == '"' || cp == '\\') snprintf(u, sizeof u, "\\%c", (char)cp);
        else if (cp < 0x80) snprintf(u, sizeof u, "%c", (char)cp);
        else snprintf(u, sizeof u, "%c%c", (char)(0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F)));
        at += (size_t)snprintf(buf + at, cap - at, "%s\"%s\": %d", b ? ", " : "", u, b);
    }
    snprintf(buf + at, cap - at, "%s}", extra);
}

// Malformed vocabularies and merges are refused with one line naming the entry; a good one encodes.
static void bpe_refuses_bad_files(void) {
    static char vocab[8192];
    NlBpe *bpe = NULL;
    NlError err;
    byte_vocab(vocab, sizeof vocab, ", \"\u0120t\": 256, \"<|endoftext|>\": 257");
    const char *merges = "#version: 0.2\n\u0120 t\n";
    int ok = nl_bpe_create(&bpe, vocab, strlen(vocab), merges, strlen(merges), "x", &err) == 0;
    CHECK(ok, "a good vocabulary loads: %s", ok ? "" : err.msg);
    if (ok) {
        int ids[4];
        size_t n = 0;
        CHECK(nl_bpe_encode(bpe, " t", 2, 0, ids, &n, &err) == 0 && n == 1 && ids[0] == 256 && nl_bpe_eot(bpe) == 257,
              "\" t\" is its merge, 256");
    }
    nl_bpe_free(bpe);
    static const struct {
        const char *extra, *merges, *word;
    } BAD[] = {
        {", \"\u0120t\": 255", "", "ids are 0 to"},  // a repeated id
        {", \"\u0120t\": 300", "", "ids are 0 to"},  // out of range
        {", \"\u0120t\": \"a\"", "", "not a number"},
        {", \"\u0120t\u4e2d\": 256", "", "not a byte-level token"},
        {", \"\u0120t\": 256", "\u0120t\n", "merges.txt line"},  // one token
        {", \"\u0120t\": 256", "\u0120 q z\n", "merges.txt line"},  // three
        {", \"\u0120t\": 256", "\u0120 x\n", "merges.txt line 1"},  // the join is no token
        {", \"\u0120t\": 256", "#version: 0.2\n\u0120 t\n\u0120 x\n", "merges.txt line 3"},  // lines counted
    };
    for (size_t c = 0; c < sizeof BAD / sizeof BAD[0]; c++) {
        byte_vocab(vocab, sizeof vocab, BAD[c].extra);
        int rc = nl_bpe_create(&bpe, vocab, strlen(vocab), BAD[c].merges, strlen(BAD[c].merges), "x", &err);
        CHECK(rc != 0 && !bpe && strstr(err.msg, BAD[c].word) && !strchr(err.msg, '\n'), "bad case %zu: %s", c,
              rc ? err.msg : "accepted");
    }
    CHECK(nl_bpe_create(&bpe, "[1]", 3, "", 0, "x", &err) != 0 && strstr(err.msg, "JSON object"), "not an object");
    CHECK(nl_bpe_create(&bpe, "{\"a\": 0}", 8, "", 0, "x", &err) != 0 && strstr(err.msg, "no token for the byte"),
          "a byte without its token: %s", err.msg);
}

// A merges file cut short, or a pair listed twice, is refused: a token no merge makes could never
// be encoded, and a pair has one rank.
static void bpe_refuses_missing_and_repeated_merges(void) {
    static char vocab[8192];
    NlBpe *bpe = NULL;
    NlError err;
    byte_vocab(vocab, sizeof vocab, ", \"\u0120t\": 256, \"he\": 257");
    const char *cut = "\u0120 t\n", *twice = "\u0120 t\nh e\n\u0120 t\n";
    CHECK(nl_bpe_create(&bpe, vocab, strlen(vocab), cut, strlen(cut), "x", &err) != 0 && !bpe &&
              strstr(err.msg, "token 257") && strstr(err.msg, "merges are missing"),
          "a cut merges.txt: %s", err.msg);
    CHECK(nl_bpe_create(&bpe, vocab, strlen(vocab), twice, strlen(twice), "x", &err) != 0 && !bpe &&
              strstr(err.msg, "merges.txt line 3") && strstr(err.msg, "rank 0"),
          "a pair twice: %s", err.msg);
}

// ---- the merge order, against a naive twin

enum { TWIN_MAX_TOKENS = 256 + 64 };  // the bytes and up to 64 merges' tokens

// A small byte-level BPE over letters: its merges as tables by token pair, for the naive twin, and
// as the vocab.json and merges.txt that nl_bpe_create reads.
typedef struct {
    int rank[TWIN_MAX_TOKENS][TWIN_MAX_TOKENS], merged[TWIN_MAX_TOKENS][TWIN_MAX_TOKENS];  // -1: no merge
    char text[TWIN_MAX_TOKENS][16];  // the letters of the tokens from 256 on
    int n, n_merges;
    char vocab[16384], merges[4096];
} TwinBpe;

static void twin_begin(TwinBpe *t) {
    memset(t->rank, 0xff, sizeof t->rank);
    memset(t->merged, 0xff, sizeof t->merged);
    t->n = 256;
    t->n_merges = 0;
    t->merges[0] = '\0';
}

// The id of a token of letters: a letter's is its byte; a longer one is added when new.
static int twin_id(TwinBpe *t, const char *letters) {
    if (!letters[1]) return (unsigned char)letters[0];
    int id = 256;
    while (id < t->n && strcmp(t->text[id], letters) != 0) id++;
    if (id == t->n) snprintf(t->text[t->n++], sizeof t->text[0], "%s", letters);
    return id;
}

// The merge "A B" at the next rank.
static void twin_merge(TwinBpe *t, const char *a, const char *b) {
    char both[32];
    snprintf(both, sizeof both, "%s%s", a, b);
    int x = twin_id(t, a), y = twin_id(t, b);
    t->rank[x][y] = t->n_merges++;
    t->merged[x][y] = twin_id(t, both);
    size_t at = strlen(t->merges);
    snprintf(t->merges + at, sizeof t->merges - at, "%s %s\n", a, b);
}

static NlBpe *twin_load(TwinBpe *t) {
    char extra[8192] = "";
    for (int id = 256; id < t->n; id++) {
        size_t at = strlen(extra);
        snprintf(extra + at, sizeof extra - at, ", \"%s\": %d", t->text[id], id);
    }
    byte_vocab(t->vocab, sizeof t->vocab, extra);
    NlBpe *bpe = NULL;
    NlError err;
    int rc = nl_bpe_create(&bpe, t->vocab, strlen(t->vocab), t->merges, strlen(t->merges), "twin", &err);
    CHECK(rc == 0, "the twin's files load: %s", rc ? err.msg : "");
    return bpe;
}

// GPT-2's bpe() as written (encoder.py), the slow way: while some adjacent pair has a merge, every
// occurrence of the lowest-ranked one, left to right; a scan of the piece a round.
static size_t twin_encode(const TwinBpe *t, const char *s, size_t len, int *ids) {
    size_t n = len;
    for (size_t i = 0; i < len; i++) ids[i] = (unsigned char)s[i];
    for (;;) {
        int best = -1, a = -1, b = -1;
        for (size_t i = 0; i + 1 < n; i++) {
            int r = t->rank[ids[i]][ids[i + 1]];
            if (r >= 0 && (best < 0 || r < best)) {
                best = r;
                a = ids[i];
                b = ids[i + 1];
            }
        }
        if (best < 0) return n;
        size_t w = 0;
        for (size_t i = 0; i < n; i++) {
            if (i + 1 < n && ids[i] == a && ids[i + 1] == b) {
                ids[w++] = t->merged[a][b];
                i++;
            } else ids[w++] = ids[i];
        }
        n = w;
    }
}

static uint64_t next_random(uint64_t *state) {  // xorshift64*
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545F4914F6CDD1DULL;
}

static void random_letters(char *text, size_t len, uint64_t *rng) {
    for (size_t i = 0; i < len; i++) text[i] = (char)('a' + next_random(rng) % 4);
}

// n_merges (up to 64) random merges over the letters a to d: each of two tokens so far, joining
// into at most 8 letters. With shuffled, ranked in a random order, so that a merge may use a token
// only a later-ranked merge makes (GPT-2's rule and Hugging Face's part there: the twin's is GPT-2's).
static void twin_random(TwinBpe *t, int n_merges, int shuffled, uint64_t *rng) {
    char tokens[4 + 64][16] = {"a", "b", "c", "d"}, pairs[64][2][16];
    int n_tokens = 4, k = 0;
    for (int tries = 0; k < n_merges && k < 64 && tries < 100000; tries++) {
        const char *a = tokens[next_random(rng) % (uint64_t)n_tokens],
                   *b = tokens[next_random(rng) % (uint64_t)n_tokens];
        char both[32];
        int seen = snprintf(both, sizeof both, "%s%s", a, b) > 8;
        for (int j = 0; j < k && !seen; j++) seen = !strcmp(pairs[j][0], a) && !strcmp(pairs[j][1], b);
        if (seen) continue;
        snprintf(pairs[k][0], sizeof pairs[k][0], "%s", a);
        snprintf(pairs[k++][1], sizeof pairs[0][1], "%s", b);
        int known = 0;
        for (int j = 0; j < n_tokens; j++) known |= !strcmp(tokens[j], both);
        if (!known) snprintf(tokens[n_tokens++], sizeof tokens[0], "%s", both);
    }
    for (int j = k - 1; shuffled && j > 0; j--) {
        char swap[2][16];
        int x = (int)(next_random(rng) % (uint64_t)(j + 1));
        memcpy(swap, pairs[j], sizeof swap);
        memcpy(pairs[j], pairs[x], sizeof swap);
        memcpy(pairs[x], swap, sizeof swap);
    }
    twin_begin(t);
    for (int j = 0; j < k; j++) twin_merge(t, pairs[j][0], pairs[j][1]);
}

// Where both orders of merging meet: the lowest rank first, and within a rank the leftmost first;
// a pair that overlaps one just merged is stale and skipped; a pair a merge makes is queued again.
// Each case's tokens worked by hand from GPT-2's bpe(), and the twin's the same.
static void bpe_merges_lowest_rank_then_leftmost(void) {
    static TwinBpe t;
    static const struct {
        const char *merges[3], *text, *tokens;  // merges: "A B" in rank order
    } CASES[] = {
        {{"a a", "aa aa"}, "aaaaaaa", "aaaa aa a"},  // leftmost first at both ranks
        {{"a a"}, "aaa", "aa a"},  // "a a" at 1 overlaps the merge at 0
        {{"b c", "a bc", "abc d"}, "abcd", "abcd"},  // each merge makes the next pair
        {{"a b", "b c"}, "abc", "ab c"},
        {{"b c", "a b"}, "abc", "a bc"},
        {{"ab a", "a b"}, "abab", "ab ab"},  // "ab a" ranks first but waits for the round of "a b"
        {{"aa a", "a a"}, "aaaa", "aa aa"},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        twin_begin(&t);
        for (int k = 0; k < 3 && CASES[c].merges[k]; k++) {
            char a[16], b[16];
            sscanf(CASES[c].merges[k], "%15s %15s", a, b);
            twin_merge(&t, a, b);
        }
        NlBpe *bpe = twin_load(&t);
        const char *text = CASES[c].text;
        int got[16], want[16];
        size_t n = 0, m = twin_encode(&t, text, strlen(text), want);
        NlError err;
        char tokens[64] = "";
        if (bpe && nl_bpe_encode(bpe, text, strlen(text), 0, got, &n, &err) == 0)
            for (size_t i = 0; i < n; i++) {
                size_t len;
                const unsigned char *bytes = nl_bpe_bytes(bpe, got[i], &len);
                snprintf(tokens + strlen(tokens), sizeof tokens - strlen(tokens), "%s%.*s", i ? " " : "", (int)len,
                         (const char *)bytes);
            }
        CHECK(strcmp(tokens, CASES[c].tokens) == 0, "case %zu: \"%s\" into \"%s\", not \"%s\"", c, text, tokens,
              CASES[c].tokens);
        CHECK(n == m && memcmp(got, want, n * sizeof *got) == 0, "case %zu: the twin agrees", c);
        nl_bpe_free(bpe);
    }
}

// Random merges, in the order they were made and shuffled, on random pieces of up to 60 letters.
static void bpe_merges_as_the_naive_twin_on_random_pieces(void) {
    static TwinBpe t;
    uint64_t rng = 46;
    int bad = 0, cases = 0;
    for (int v = 0; v < 40; v++) {
        twin_random(&t, 8 + v, v % 2, &rng);
        NlBpe *bpe = twin_load(&t);
        for (int c = 0; c < 50 && bpe; c++, cases++) {
            char text[64];
            int got[64], want[64];
            size_t len = 1 + next_random(&rng) % 60, n = 0;
            random_letters(text, len, &rng);
            size_t m = twin_encode(&t, text, len, want);
            NlError err;
            int rc = nl_bpe_encode(bpe, text, len, 0, got, &n, &err);
            if ((rc != 0 || n != m || memcmp(got, want, n * sizeof *got) != 0) && bad++ == 0)
                CHECK(0, "the first to differ: \"%.*s\", vocabulary %d", (int)len, text, v);
        }
        nl_bpe_free(bpe);
    }
    CHECK(bad == 0, "%d of %d random pieces merged otherwise than by the twin", bad, cases);
}

// One piece of 200,000 random letters (no space to cut it), the heap's size: the twin's ids.
static void bpe_merges_as_the_naive_twin_on_a_long_piece(void) {
    enum { LEN = 200000 };
    static TwinBpe t;
    static char text[LEN];
    static int got[LEN], want[LEN];
    uint64_t rng = 7;
    for (int shuffled = 0; shuffled < 2; shuffled++) {
        twin_random(&t, 64, shuffled, &rng);
        NlBpe *bpe = twin_load(&t);
        random_letters(text, LEN, &rng);
        size_t n = 0, m = twin_encode(&t, text, LEN, want), first = 0;
        NlError err;
        int rc = bpe ? nl_bpe_encode(bpe, text, LEN, 0, got, &n, &err) : -1;
        while (rc == 0 && first < n && first < m && got[first] == want[first]) first++;
        CHECK(rc == 0 && n == m && first == n, "shuffled %d: %zu ids against the twin's %zu, the first %zu alike",
              shuffled, n, m, first);
        nl_bpe_free(bpe);
    }
}

// The tokenizer's pending bytes: a character's start that more bytes can complete, not an invalid one.
static void utf8_pending_and_repair(void) {
    static const struct {
        const char *s;
        size_t pending;
    } CASES[] = {{"ab", 0},       {"a\xc3", 1},    {"\xe2\x82", 2}, {"\xf0\x9f\x98", 3}, {"\xe2\x82\xac", 0},
                 {"\xe0\x80", 0}, {"\xed\xa0", 0}, {"\xf4\x90", 0}, {"\x80", 0},         {"\xff", 0}};
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        CHECK(utf8_pending(CASES[i].s, strlen(CASES[i].s)) == CASES[i].pending, "pending case %zu", i);
    char out[64];
    size_t n = utf8_repair("a\xe2\x82\xac\xff\xe2\x82", 7, out);
    CHECK(n == 13 && memcmp(out, "a\xe2\x82\xac\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 13) == 0,
          "repair: each invalid byte as U+FFFD, the valid character kept");
}

// A Hugging Face tokenizer.json: merges as strings or as pairs; other kinds refused by name.
static void bpe_reads_hf_tokenizer_json(void) {
    static char vocab[8192], doc[12000];
    byte_vocab(vocab, sizeof vocab, ", \"\u0120t\": 256, \"<|endoftext|>\": 257");
    static const struct {
        const char *model_type, *merges, *pre, *word;  // word: NULL when it must load
    } CASES[] = {{"BPE", "[\"\u0120 t\"]", "ByteLevel", NULL},
                 {"BPE", "[[\"\u0120\", \"t\"]]", "ByteLevel", NULL},
                 {"WordPiece", "[]", "ByteLevel", "WordPiece"},
                 {"Unigram", "[]", "ByteLevel", "Unigram"},
                 {"BPE", "[\"\u0120 t\"]", "Metaspace", "SentencePiece"},
                 {"BPE", "[]", "ByteLevel", "model.merges is missing"},
                 {"BPE", "[\"\u0120 t\", \"\u0120 t\"]", "ByteLevel", "model.merges entry 2"}};
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        snprintf(doc, sizeof doc,
                 "{\"added_tokens\": [{\"id\": 257, \"content\": \"<|endoftext|>\", \"special\": true}], "
                 "\"normalizer\": null, \"pre_tokenizer\": {\"type\": \"%s\", \"add_prefix_space\": false}, "
                 "\"model\": {\"type\": \"%s\", \"vocab\": %s, \"merges\": %s}}",
                 CASES[c].pre, CASES[c].model_type, vocab, CASES[c].merges);
        NlTokenizer *t = NULL;
        NlError err;
        int rc = nl_tokenizer_parse(&t, doc, strlen(doc), "t.json", &err);
        if (!CASES[c].word) {
            int ids[4];
            size_t n = 0, skipped = 9;
            CHECK(rc == 0 && nl_tokenizer_info(t).kind == NL_TOKENIZER_BPE && nl_tokenizer_size(t) == 258 &&
                      nl_tokenizer_eot(t) == 257 &&
                      nl_tokenizer_encode(t, " t<|endoftext|>", 15, NL_ENCODE_SPECIAL, ids, &n, &skipped, &err) == 0 &&
                      n == 2 && ids[0] == 256 && ids[1] == 257 && skipped == 0,
                  "case %zu loads and encodes \" t\" as its merge: %s", c, rc ? err.msg : "");
        } else {
            CHECK(rc != 0 && !t && strstr(err.msg, CASES[c].word) && !strchr(err.msg, '\n'), "case %zu: %s", c,
                  rc ? err.msg : "accepted");
        }
        nl_tokenizer_free(t);
    }
}

// ids of text by tok, into ids (room for len); the count, or 0 on failure.
static size_t ids_of(const NlTokenizer *tok, const char *text, int *ids) {
    size_t n = 0, skipped = 0;
    NlError err;
    return nl_tokenizer_encode(tok, text, strlen(text), 0, ids, &n, &skipped, &err) == 0 ? n : 0;
}

// A file of text at path; 0 when written.
static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) != EOF;
    return (f && fclose(f) == 0 && ok) ? 0 : -1;
}

// nl_tokenizer_load, an embedder's tokenizer without a model: the shipped models' tokenizer.json
// (a character vocabulary; GPT-2's Hugging Face BPE) give the ids their models' tokenizers give,
// and a vocab.json + merges.txt pair loads as the same BPE as from memory; bad files are refused
// with their name.
static void tokenizer_loads_from_files(void) {
    static const char *const MODELS[] = {"weights/shakespeare-pre-ln", "weights/shakespeare-bpe"};
    const char *text = "ROMEO: caf\xc3\xa9, to be \xe2\x82\xac 42!";
    for (int k = 0; k < 2; k++) {
        char path[256];
        snprintf(path, sizeof path, "%s/tokenizer.json", MODELS[k]);
        NlTokenizer *tok = NULL;
        NlModel *m = NULL;
        NlError err;
        NlLoadOptions lo = {.shapes_only = 1};
        int ok = nl_tokenizer_load(&tok, path, NULL, &err) == 0 && nl_model_load(&m, MODELS[k], &lo, &err) == 0;
        CHECK(ok, "%s loads: %s", path, ok ? "" : err.msg);
        if (ok) {
            int a[64], b[64];
            size_t na = ids_of(tok, k == 0 ? "ROMEO: to be" : text, a);
            size_t nb = ids_of(nl_model_tokenizer(m), k == 0 ? "ROMEO: to be" : text, b);
            CHECK(na > 0 && na == nb && memcmp(a, b, na * sizeof *a) == 0 &&
                      nl_tokenizer_size(tok) == nl_tokenizer_size(nl_model_tokenizer(m)) &&
                      nl_tokenizer_info(tok).kind == (k == 0 ? NL_TOKENIZER_CHAR : NL_TOKENIZER_BPE),
                  "%s: the model's ids (%zu tokens), size and kind", path, na);
        }
        nl_tokenizer_free(tok);
        nl_model_free(m);
    }
    static char vocab[8192];
    byte_vocab(vocab, sizeof vocab, ", \"\u0120t\": 256, \"<|endoftext|>\": 257");
    char dir[] = "/tmp/normlab-tokfiles-XXXXXX", vpath[64], mpath[64], bad[64];
    if (!mkdtemp(dir)) return;
    snprintf(vpath, sizeof vpath, "%s/vocab.json", dir);
    snprintf(mpath, sizeof mpath, "%s/merges.txt", dir);
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    NlTokenizer *tok = NULL;
    NlError err;
    int ok = write_file(vpath, vocab) == 0 && write_file(mpath, "#version: 0.2\n\u0120 t\n") == 0 &&
             write_file(bad, "{\"type\": \"char\", \"vocab\": [\"ab\"]}") == 0 &&
             nl_tokenizer_load(&tok, vpath, mpath, &err) == 0;
    CHECK(ok, "vocab.json + merges.txt load: %s", ok ? "" : err.msg);
    int ids[4];
    CHECK(ok && ids_of(tok, " t", ids) == 1 && ids[0] == 256 && nl_tokenizer_size(tok) == 258,
          "\" t\" is its one merge, 256 (of 258 tokens)");
    nl_tokenizer_free(tok);
    tok = NULL;
    CHECK(nl_tokenizer_load(&tok, mpath, vpath, &err) != 0 && !tok && strstr(err.msg, mpath),
          "the files swapped: refused, naming merges.txt read as a vocabulary: %s", err.msg);
    CHECK(nl_tokenizer_load(&tok, bad, NULL, &err) != 0 && !tok && strstr(err.msg, bad),
          "a two-character piece: refused, naming the file: %s", err.msg);
    CHECK(nl_tokenizer_load(&tok, dir, NULL, &err) != 0 && !tok && err.code == NL_ERR_IO, "a directory: refused: %s",
          err.msg);
    CHECK(nl_tokenizer_load(&tok, NULL, NULL, &err) != 0 && !tok && err.code == NL_ERR_ARG, "no path: refused");
    unlink(vpath);
    unlink(mpath);
    unlink(bad);
    rmdir(dir);
}

int main(void) {
    RUN(bpe_merges_lowest_rank_then_leftmost);
    RUN(bpe_merges_as_the_naive_twin_on_random_pieces);
    RUN(bpe_merges_as_the_naive_twin_on_a_long_piece);
    RUN(bpe_refuses_missing_and_repeated_merges);
    RUN(utf8_pending_and_repair);
    RUN(bpe_reads_hf_tokenizer_json);
    RUN(bpe_refuses_bad_files);
    RUN(pretokenizer_splits_as_gpt2s_pattern);
    RUN(tokenizer_round_trips_multibyte_text);
    RUN(tokenizer_rejects_unknown_char_with_position);
    RUN(tokenizer_skips_unknown_when_asked);
    RUN(tokenizer_rejects_invalid_utf8);
    RUN(tokenizer_rejects_bad_vocabularies);
    RUN(tokenizer_loads_from_files);
    return check_summary("test_tokenizer");
}
