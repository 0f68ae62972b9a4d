// test_spm.c — the sentencepiece tokenizer (tokenizer/spm.c, spm_hf.c): merges by score against a
// naive twin (llama2.c's run.c rule, written out below), merges by rank from a Hugging Face file,
// the dummy prefix, bos and special pieces, the bytes of every kind of piece, and every refusal.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "spm.h"
#include "tokenizer.h"

#define SP "\xE2\x96\x81"  // "▁"

// A sentencepiece form: <unk> <s> </s>, the 256 byte pieces, then `extra` ([text, score] entries,
// each ", [...]"), then `tail` (the keys after "pieces"). skip: a byte piece left out (-1: none).
static const char *spm_doc(const char *extra, const char *tail, int skip) {
    static char doc[65536];
    size_t n = (size_t)snprintf(
        doc, sizeof doc, "{\"type\": \"sentencepiece\", \"pieces\": [[\"<unk>\", 0], [\"<s>\", 0], [\"</s>\", 0]");
    for (int b = 0; b < 256; b++)
        if (b != skip) n += (size_t)snprintf(doc + n, sizeof doc - n, ", [\"<0x%02X>\", 0]", b);
    snprintf(doc + n, sizeof doc - n, "%s], %s}", extra, tail);
    return doc;
}

#define TAIL                                                                                       \
    "\"unk_id\": 0, \"bos_id\": 1, \"eos_id\": 2, \"add_bos\": true, \"add_dummy_prefix\": true, " \
    "\"byte_fallback\": true"
// ids 259..: ▁ a b c ab ▁a bc abc (a merge's score: how good its piece is)
#define PIECES                                                                                     \
    ", [\"" SP "\", -9], [\"a\", -9], [\"b\", -9], [\"c\", -9], [\"ab\", -1], [\"" SP "a\", -2], " \
    "[\"bc\", -1], [\"abc\", -3]"

static NlTokenizer *parse(const char *doc, NlError *err) {
    NlTokenizer *t = NULL;
    return nl_tokenizer_parse(&t, doc, strlen(doc), "t.json", err) == 0 ? t : NULL;
}

// The ids of text with flags, into a string "1 2 3" for the checks' messages.
static const char *ids_text(const NlTokenizer *t, const char *text, int flags) {
    static char out[4096];
    int ids[512];
    size_t n = 0, skipped, at = 0;
    NlError err;
    if (nl_tokenizer_encode(t, text, strlen(text), flags, ids, &n, &skipped, &err) != 0) return "(failed)";
    out[0] = '\0';
    for (size_t i = 0; i < n && at < sizeof out - 16; i++)
        at += (size_t)snprintf(out + at, 16, i ? " %d" : "%d", ids[i]);
    return out;
}

static void spm_merges_best_score_then_leftmost(void) {
    NlError err;
    NlTokenizer *t = parse(spm_doc(PIECES, TAIL, -1), &err);
    CHECK(t && nl_tokenizer_info(t).kind == NL_TOKENIZER_SPM && nl_tokenizer_size(t) == 267, "loads: %s",
          t ? "" : err.msg);
    if (!t) return;
    static const struct {
        const char *text, *want;
    } CASES[] = {
        {"abc", "259 266"},  // ▁a (-2) loses to ab and bc (-1), ab the leftmost: ▁ ab c, then abc (-3)
        {"bc", "259 265"},  // ▁ bc
        {"cab", "259 262 263"},  // ▁ c ab
        {"a b", "264 259 261"},  // ▁a ▁ b: spaces are "▁"
        {"", ""},  // no dummy prefix on an empty text
        {"é", "259 198 172"},  // no piece: its UTF-8 bytes' pieces (0xC3 0xA9 at 3 + byte)
        {"<s>", "259 63 118 65"},  // plain text: the bytes of <, s, > (no pieces)
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const char *got = ids_text(t, CASES[c].text, 0);
        CHECK(strcmp(got, CASES[c].want) == 0, "\"%s\" -> %s (want %s)", CASES[c].text, got, CASES[c].want);
    }
    const char *got = ids_text(t, "ab", NL_ENCODE_BOS);
    CHECK(strcmp(got, "1 259 263") == 0, "NL_ENCODE_BOS: bos first: %s", got);
    got = ids_text(t, "", NL_ENCODE_BOS);
    CHECK(strcmp(got, "1") == 0, "an empty text with bos: bos alone: %s", got);
    got = ids_text(t, "a<s>b</s>", NL_ENCODE_SPECIAL);
    CHECK(strcmp(got, "264 1 259 261 2") == 0, "NL_ENCODE_SPECIAL: control pieces, a dummy prefix after each: %s", got);
    got = ids_text(t, "a b", NL_ENCODE_CONTINUE);
    CHECK(strcmp(got, "260 259 261") == 0, "NL_ENCODE_CONTINUE: no dummy prefix (a ▁ b): %s", got);
    got = ids_text(t, "a<s>b", NL_ENCODE_CONTINUE | NL_ENCODE_SPECIAL);
    CHECK(strcmp(got, "260 1 259 261") == 0, "NL_ENCODE_CONTINUE: the prefix again after a control piece: %s", got);
    NlTokenizerInfo info = nl_tokenizer_info(t);
    CHECK(info.bos == 1 && info.eos == 2 && info.add_bos == 1 && info.dummy_prefix == 1, "info: bos %d eos %d",
          info.bos, info.eos);
    nl_tokenizer_free(t);
}

static void spm_bytes_of_each_kind(void) {
    NlError err;
    NlTokenizer *t = parse(spm_doc(PIECES ", [\"x" SP "y\", -20]", TAIL, -1), &err);
    if (!t) {
        CHECK(0, "loads: %s", err.msg);
        return;
    }
    static const struct {
        int id;
        const char *want;
        size_t len;
    } CASES[] = {{0, " \xE2\x81\x87 ", 5}, {1, "", 0},    {2, "", 0},     {3, "\0", 1},
                 {3 + 0xC3, "\xC3", 1},    {259, " ", 1}, {264, " a", 2}, {267, "x y", 3}};
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        size_t len;
        const char *b = nl_tokenizer_bytes(t, CASES[c].id, &len);
        CHECK(len == CASES[c].len && memcmp(b, CASES[c].want, len) == 0 && b[len] == '\0',
              "piece %d: %zu bytes (want %zu)", CASES[c].id, len, CASES[c].len);
    }
    const char text[] = "a\xff\xc3 b\x80";  // invalid UTF-8: each bad byte its own byte piece
    int ids[16];
    size_t n, skipped;
    CHECK(nl_tokenizer_encode(t, text, sizeof text - 1, 0, ids, &n, &skipped, &err) == 0 && n == 6 && ids[0] == 264 &&
              ids[1] == 3 + 0xFF && ids[2] == 3 + 0xC3 && ids[3] == 259 && ids[4] == 261 && ids[5] == 3 + 0x80,
          "invalid UTF-8 bytes are byte pieces (%zu ids)", n);
    nl_tokenizer_free(t);
}

// The text bytes of scored ids (eval's bits per byte): the dummy prefix is not the text's.
static void spm_text_bytes_less_the_dummy_prefix(void) {
    NlError err;
    NlTokenizer *t = parse(spm_doc(PIECES, TAIL, -1), &err);
    if (!t) {
        CHECK(0, "loads: %s", err.msg);
        return;
    }
    static const struct {
        const char *text;
        int flags;
        size_t from, want;
    } CASES[] = {
        {"a b", 0, 0, 3},  // ▁a ▁ b: " a" is the text's "a"
        {"a b", 0, 1, 2},  // after the first: " b"
        {"a b", NL_ENCODE_BOS, 1, 3},  // bos ▁a ▁ b: every byte of the text is scored
        {"bc", NL_ENCODE_BOS, 1, 2},  // bos ▁ bc: the lone "▁" is the prefix alone
        {"a<s>b</s>", NL_ENCODE_SPECIAL, 0, 2},  // ▁a <s> ▁ b </s>: a prefix after each control piece
        {"a<unk>b", NL_ENCODE_SPECIAL, 1, 6},  // ▁a <unk> ▁ b: <unk>'s " ⁇ " (5 bytes), then "b"
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        int ids[64];
        size_t n = 0, skipped;
        int rc = nl_tokenizer_encode(t, CASES[c].text, strlen(CASES[c].text), CASES[c].flags, ids, &n, &skipped, &err);
        size_t got = rc == 0 ? nl_tokenizer_text_bytes(t, ids, n, CASES[c].from) : 0;
        CHECK(rc == 0 && got == CASES[c].want, "\"%s\" (flags %d) from %zu: %zu bytes (want %zu)", CASES[c].text,
              CASES[c].flags, CASES[c].from, got, CASES[c].want);
    }
    nl_tokenizer_free(t);
}

// ---- the naive twin: llama2.c's run.c encode(), on piece texts and scores

typedef struct {
    const char **text;
    const double *score;
    int n;
} Vocab;

static int naive_find(const Vocab *v, const char *s, size_t len) {
    for (int i = 3 + 256; i < v->n; i++)
        if (strlen(v->text[i]) == len && memcmp(v->text[i], s, len) == 0) return i;
    return -1;
}

// Every character its piece or its bytes; then, while some adjacent pair joins into a piece, the
// best score's pair (the first of equals) merged. O(n^2), as run.c.
static size_t naive_encode(const Vocab *v, const char *text, int *ids) {
    char norm[4096];
    size_t n = 0, len = 0;
    if (*text) len = (size_t)(memcpy(norm, SP, 3), 3);
    for (const char *p = text; *p; p++) len += *p == ' ' ? (size_t)(memcpy(norm + len, SP, 3), 3) : (norm[len] = *p, 1);
    for (size_t at = 0, k; at < len; at += k) {
        uint32_t cp;
        k = nl_utf8_decode(norm + at, len - at, &cp);
        int id = naive_find(v, norm + at, k ? k : 1);
        if (k && id >= 0) ids[n++] = id;
        else
            for (size_t j = 0; j < (k ? k : 1); j++) ids[n++] = 3 + (unsigned char)norm[at + j];
        if (!k) k = 1;
    }
    for (;;) {
        double best = -INFINITY;
        size_t at = 0;
        int merged = -1;
        char both[512];
        for (size_t i = 0; i + 1 < n; i++) {
            if (ids[i] < 259 || ids[i + 1] < 259) continue;
            int m =
                naive_find(v, both, (size_t)snprintf(both, sizeof both, "%s%s", v->text[ids[i]], v->text[ids[i + 1]]));
            if (m >= 0 && v->score[m] > best) best = v->score[m], at = i, merged = m;
        }
        if (merged < 0) return n;
        ids[at] = merged;
        memmove(ids + at + 1, ids + at + 2, (n - at - 2) * sizeof *ids);
        n--;
    }
}

// Random vocabularies of joins of "▁", a, b, c, é, with random (often equal) scores, and random texts.
static void spm_merges_as_the_naive_twin(void) {
    static const char *const CHARS[] = {SP, "a", "b", "c", "\xC3\xA9"};
    unsigned seed = 12345;
    int mismatches = 0, texts = 0;
    for (int round = 0; round < 40; round++) {
        static char names[64][64], extra[8192];
        const char *text[3 + 256 + 64];
        double score[3 + 256 + 64];
        int n = 3 + 256, at = 0;
        for (int i = 0; i < 5; i++, n++) text[n] = CHARS[i], score[n] = -100;
        for (int i = 0; i < 40; i++) {
            seed = seed * 1103515245u + 12345u;
            const char *a = text[259 + (int)(seed >> 8) % (n - 259)];
            seed = seed * 1103515245u + 12345u;
            const char *b = text[259 + (int)(seed >> 8) % (n - 259)];
            snprintf(names[i], sizeof names[i], "%s%s", a, b);
            if (strlen(names[i]) > 24 || naive_find(&(Vocab){text, score, n}, names[i], strlen(names[i])) >= 0)
                continue;
            text[n] = names[i];
            score[n++] = -(double)((seed >> 4) % 8);  // few values: many ties
        }
        for (int i = 259; i < n; i++)
            at += snprintf(extra + at, sizeof extra - (size_t)at, ", [\"%s\", %g]", text[i], score[i]);
        NlError err;
        NlTokenizer *t = parse(spm_doc(extra, TAIL, -1), &err);
        CHECK(t != NULL, "round %d loads: %s", round, t ? "" : err.msg);
        for (int k = 0; t && k < 25; k++, texts++) {
            char s[64];
            int len = 0;
            for (seed = seed * 1103515245u + 12345u; len < 40 && (seed >> 3) % 23; seed = seed * 1103515245u + 12345u)
                len += snprintf(s + len, sizeof s - (size_t)len, "%s",
                                (seed >> 9) % 6 == 5   ? " "
                                : (seed >> 9) % 6 == 0 ? SP
                                                       : CHARS[(seed >> 9) % 5]);
            s[len] = '\0';
            int want[256];
            char wtext[2048] = "";
            size_t nw = naive_encode(&(Vocab){text, score, n}, s, want), w = 0;
            for (size_t i = 0; i < nw; i++)
                w += (size_t)snprintf(wtext + w, sizeof wtext - w, i ? " %d" : "%d", want[i]);
            const char *got = ids_text(t, s, 0);
            if (strcmp(got, wtext) != 0 && mismatches++ < 3)
                CHECK(0, "round %d \"%s\": %s, the twin %s", round, s, got, wtext);
        }
        nl_tokenizer_free(t);
    }
    CHECK(mismatches == 0 && texts == 1000, "%d of %d random texts differ from the naive twin", mismatches, texts);
}

// ---- Hugging Face's tokenizer.json: merges by rank

// A Llama-2-style tokenizer.json: the same pieces as PIECES, merges in the order given.
static const char *hf_doc(const char *merges, const char *normalizer, const char *pre, const char *post,
                          const char *model_extra) {
    static char doc[65536];
    size_t n =
        (size_t)snprintf(doc, sizeof doc,
                         "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, {\"id\": 1, "
                         "\"content\": \"<s>\", \"special\": true}, {\"id\": 2, \"content\": \"</s>\", \"special\": "
                         "true}], \"normalizer\": %s, \"pre_tokenizer\": %s, \"post_processor\": %s, \"decoder\": "
                         "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteFallback\"}, {\"type\": "
                         "\"Fuse\"}]}, \"model\": {\"unk_token\": \"<unk>\", %s\"vocab\": "
                         "{\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2",
                         normalizer, pre, post, model_extra);
    for (int b = 0; b < 256; b++) n += (size_t)snprintf(doc + n, sizeof doc - n, ", \"<0x%02X>\": %d", b, 3 + b);
    static const char *const MORE[] = {SP, "a", "b", "c", "ab", SP "a", "bc", "abc"};
    for (int i = 0; i < 8; i++) n += (size_t)snprintf(doc + n, sizeof doc - n, ", \"%s\": %d", MORE[i], 259 + i);
    snprintf(doc + n, sizeof doc - n, "}, \"merges\": [%s]}}", merges);
    return doc;
}

#define LLAMA_NORM                                                                                             \
    "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"" SP "\"}, {\"type\": " \
    "\"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"" SP "\"}]}"
#define LLAMA_POST                                                                                            \
    "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, " \
    "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]}"
#define BYTE_FALLBACK "\"type\": \"BPE\", \"byte_fallback\": true, "

static void spm_hf_merges_by_rank(void) {
    // ranks against the scores of PIECES: bc first, then ▁a, ab, ab+c
    const char *merges = "\"b c\", \"" SP " a\", \"a b\", [\"ab\", \"c\"]";
    NlError err;
    NlTokenizer *t = parse(hf_doc(merges, LLAMA_NORM, "null", LLAMA_POST, BYTE_FALLBACK), &err);
    CHECK(t && nl_tokenizer_info(t).kind == NL_TOKENIZER_SPM, "loads: %s", t ? "" : err.msg);
    if (!t) return;
    static const struct {
        const char *text, *want;
    } CASES[] = {{"abc", "264 265"}, {"ab", "264 261"}, {"a b", "264 259 261"}, {"", ""}};
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const char *got = ids_text(t, CASES[c].text, 0);
        CHECK(strcmp(got, CASES[c].want) == 0, "\"%s\" -> %s (want %s: by rank)", CASES[c].text, got, CASES[c].want);
    }
    NlTokenizerInfo info = nl_tokenizer_info(t);
    CHECK(info.bos == 1 && info.eos == 2 && info.add_bos && info.dummy_prefix, "bos from the template, added");
    nl_tokenizer_free(t);
    // the legacy Metaspace pre-tokenizer, split: no merge across the start of a "▁"; no template: no bos added
    const char *meta = "{\"type\": \"Metaspace\", \"replacement\": \"" SP "\", \"add_prefix_space\": true}";
    t = parse(hf_doc("\"" SP " " SP "\"", "null", meta, "null", BYTE_FALLBACK), &err);
    CHECK(t == NULL && strstr(err.msg, "is not two pieces"), "a merge whose join is no piece: %s", t ? "" : err.msg);
    nl_tokenizer_free(t);
    t = parse(hf_doc("\"" SP " a\", \"a b\"", "null", meta, "null", BYTE_FALLBACK), &err);
    const char *got = t ? ids_text(t, "ab  ab", 0) : err.msg;
    CHECK(t && strcmp(got, "264 261 259 264 261") == 0 && !nl_tokenizer_info(t).add_bos,
          "Metaspace: \"ab  ab\" -> %s (▁a b ▁ ▁a b)", got);
    nl_tokenizer_free(t);
}

// Metaspace's prefix: an older file with neither prepend_scheme nor add_prefix_space prepends, as
// Hugging Face's default does and as add_prefix_space true; false and "never" do not.
static void spm_hf_metaspace_prefix_default(void) {
    static const struct {
        const char *keys;  // Metaspace's keys beside its type and replacement
        const char *ab, *a_b;  // the ids of "ab" and "a b"
    } CASES[] = {
        {"\"add_prefix_space\": true", "264 261", "264 259 261"},
        {"\"split\": true", "264 261", "264 259 261"},  // neither key: HF prepends
        {"\"prepend_scheme\": \"always\"", "264 261", "264 259 261"},
        {"\"add_prefix_space\": false", "263", "260 259 261"},
        {"\"prepend_scheme\": \"never\"", "263", "260 259 261"},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        char meta[256];
        snprintf(meta, sizeof meta, "{\"type\": \"Metaspace\", \"replacement\": \"" SP "\", %s}", CASES[c].keys);
        NlError err;
        NlTokenizer *t = parse(hf_doc("\"" SP " a\", \"a b\"", "null", meta, "null", BYTE_FALLBACK), &err);
        char ab[64];
        snprintf(ab, sizeof ab, "%s", t ? ids_text(t, "ab", 0) : err.msg);
        const char *a_b = t ? ids_text(t, "a b", 0) : "";
        CHECK(t && strcmp(ab, CASES[c].ab) == 0 && strcmp(a_b, CASES[c].a_b) == 0,
              "Metaspace {%s}: \"ab\" -> %s (want %s), \"a b\" -> %s (want %s)", CASES[c].keys, ab, CASES[c].ab, a_b,
              CASES[c].a_b);
        nl_tokenizer_free(t);
    }
}

// --special: where two control pieces start the text ("<|im" and "<|im_start|>"), the longer one
// is the token, whichever of the two is listed first.
static void spm_special_longest_control_wins(void) {
    for (int order = 0; order < 2; order++) {
        const char *pieces[3 + 256 + 4];
        double scores[3 + 256 + 4] = {0};
        unsigned char special[3 + 256 + 4] = {0};
        char bytes[256][8];
        pieces[0] = "<unk>", pieces[1] = "<s>", pieces[2] = "</s>";
        for (int b = 0; b < 256; b++) snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b), pieces[3 + b] = bytes[b];
        pieces[259] = SP, pieces[260] = "x";
        pieces[261] = order ? "<|im_start|>" : "<|im", pieces[262] = order ? "<|im" : "<|im_start|>";
        special[261] = special[262] = 1;
        int longer = order ? 261 : 262;
        NlSpmSpec spec = {.pieces = pieces,
                          .scores = scores,
                          .special = special,
                          .n = 263,
                          .unk = 0,
                          .bos = 1,
                          .eos = 2,
                          .dummy_prefix = 0};
        NlSpm *spm = NULL;
        NlError err;
        int ids[32];
        size_t n = 0;
        int rc = nl_spm_create(&spm, &spec, "t", &err);
        if (rc == 0) rc = nl_spm_encode(spm, "<|im_start|>x", 13, NL_ENCODE_SPECIAL, ids, &n, &err);
        CHECK(rc == 0 && n == 2 && ids[0] == longer && ids[1] == 260,
              "\"<|im_start|>x\" with \"%s\" listed first: %zu ids, the first %d (want %d, then 260): %s", pieces[261],
              n, n ? ids[0] : -1, longer, rc ? err.msg : "");
        nl_spm_free(spm);
    }
}

// ---- refusals: one line, naming the file and the entry

static void spm_refuses_bad_files(void) {
    static char doc[4][65536];
    snprintf(doc[0], sizeof doc[0], "%s", spm_doc(PIECES, TAIL, 0x41));
    snprintf(doc[1], sizeof doc[1], "%s", spm_doc(PIECES ", [\"ab\", -5]", TAIL, -1));
    snprintf(doc[2], sizeof doc[2], "%s", spm_doc(", [\"a\", -1]", TAIL, -1));
    snprintf(doc[3], sizeof doc[3], "%s", spm_doc(PIECES ", [\"x\xff\", -1]", TAIL, -1));
    const char *nl = "\"unk_id\": 0, \"bos_id\": 1, \"eos_id\": 2, \"add_dummy_prefix\": true, \"byte_fallback\": true";
    static char bad[16][65536];
    static const char *const TAILS[][2] = {
        {"\"unk_id\": -1, \"bos_id\": 1, \"eos_id\": 2, \"add_bos\": true, \"add_dummy_prefix\": true, "
         "\"byte_fallback\": true",
         "the unk id -1 is not a piece"},
        {"\"unk_id\": 0, \"bos_id\": 900, \"eos_id\": 2, \"add_bos\": true, \"add_dummy_prefix\": true, "
         "\"byte_fallback\": true",
         "the bos id 900 is not a piece"},
        {"\"unk_id\": 0, \"bos_id\": 1, \"eos_id\": 1, \"add_bos\": true, \"add_dummy_prefix\": true, "
         "\"byte_fallback\": true",
         "bos and eos are both piece 1"},
        {"\"unk_id\": 0, \"bos_id\": -1, \"eos_id\": 2, \"add_bos\": true, \"add_dummy_prefix\": true, "
         "\"byte_fallback\": true",
         "no bos piece"},
        {"\"unk_id\": 0, \"bos_id\": 1, \"eos_id\": 2, \"add_bos\": true, \"add_dummy_prefix\": true, "
         "\"byte_fallback\": false",
         "byte_fallback is false"},
        {"\"unk_id\": 0, \"bos_id\": 1, \"eos_id\": 2, \"add_bos\": 1, \"add_dummy_prefix\": true, "
         "\"byte_fallback\": true",
         "add_bos"},
        {"\"unk_id\": 0, \"bos_id\": 1, \"eos_id\": 2, \"add_bos\": true, \"add_dummy_prefix\": true, "
         "\"byte_fallback\": true, \"vocab\": []",
         "vocab"},
    };
    int k = 0;
    for (size_t i = 0; i < sizeof TAILS / sizeof TAILS[0]; i++)
        snprintf(bad[k++], sizeof bad[0], "%s", spm_doc(PIECES, TAILS[i][0], -1));
    snprintf(bad[k++], sizeof bad[0], "%s", spm_doc(PIECES ", [\"z\", 1e999]", TAIL, -1));
    snprintf(bad[k++], sizeof bad[0], "%s", spm_doc(PIECES ", [\"z\"]", TAIL, -1));
    snprintf(bad[k++], sizeof bad[0], "%s", spm_doc(PIECES, nl, -1));
    const char *const CASES[][2] = {
        {doc[0], "no byte piece <0x41>: byte fallback needs all 256"},
        {doc[1], "pieces 263 and 267 are both \"ab\""},
        {doc[2], "no piece \"" SP "\""},
        {doc[3], "not valid UTF-8"},
        {bad[0], TAILS[0][1]},
        {bad[1], TAILS[1][1]},
        {bad[2], TAILS[2][1]},
        {bad[3], TAILS[3][1]},
        {bad[4], TAILS[4][1]},
        {bad[5], TAILS[5][1]},
        {bad[6], TAILS[6][1]},
        {bad[7], "score that is not a finite number"},
        {bad[8], "pieces[267] is not [text, score]"},
        {bad[9], "add_bos"},
    };
    static const char *const HF[][6] = {
        // merges, normalizer, pre-tokenizer, post-processor, model's keys, word
        {"", LLAMA_NORM, "null", LLAMA_POST, "\"type\": \"BPE\", ", "model.byte_fallback is not true"},
        {"\"a q\"", LLAMA_NORM, "null", LLAMA_POST, BYTE_FALLBACK, "model.merges entry 1"},
        {"\"a b\", \"a b\"", LLAMA_NORM, "null", LLAMA_POST, BYTE_FALLBACK, "entry 2 repeats entry 1"},
        {"\"a b c\"", LLAMA_NORM, "null", LLAMA_POST, BYTE_FALLBACK, "entry 1 is not \"A B\" or [A, B]"},
        {"", "{\"type\": \"NFKC\"}", "null", LLAMA_POST, BYTE_FALLBACK, "a NFKC normalizer"},
        {"", LLAMA_NORM, "{\"type\": \"Split\"}", LLAMA_POST, BYTE_FALLBACK, "Split pre-tokenizer"},
        {"", LLAMA_NORM, "{\"type\": \"ByteLevel\"}", LLAMA_POST, BYTE_FALLBACK, "a ByteLevel pre-tokenizer"},
        {"", LLAMA_NORM, "null", "{\"type\": \"RobertaProcessing\"}", BYTE_FALLBACK, "RobertaProcessing"},
        {"", "null", "null", LLAMA_POST, BYTE_FALLBACK, "writes a space as"},
        {"", LLAMA_NORM, "null", LLAMA_POST, "\"type\": \"Unigram\", \"byte_fallback\": true, ", "Unigram"},
        {"", LLAMA_NORM, "null", LLAMA_POST, "\"type\": \"WordPiece\", ", "WordPiece"},
    };
    size_t n_ours = sizeof CASES / sizeof CASES[0];
    for (size_t c = 0; c < n_ours + sizeof HF / sizeof HF[0]; c++) {
        const char *const *h = c < n_ours ? NULL : HF[c - n_ours], *word = h ? h[5] : CASES[c][1];
        NlError err;
        NlTokenizer *t = parse(h ? hf_doc(h[0], h[1], h[2], h[3], h[4]) : CASES[c][0], &err);
        CHECK(!t && strstr(err.msg, word) && strncmp(err.msg, "t.json", 6) == 0 && !strchr(err.msg, '\n'),
              "case %zu refused with \"%s\": %s", c, word, t ? "accepted" : err.msg);
        nl_tokenizer_free(t);
    }
}

// The shipped shakespeare-llama tokenizer (tools/train/train_spm.py) and its ids by sentencepiece.
static void spm_reads_the_shipped_tokenizer(void) {
    NlTokenizer *t = NULL;
    NlError err;
    int rc = nl_tokenizer_load(&t, "weights/shakespeare-llama/tokenizer.json", NULL, &err);
    CHECK(rc == 0 && nl_tokenizer_size(t) == 512 && nl_tokenizer_info(t).kind == NL_TOKENIZER_SPM, "loads: %s",
          rc ? err.msg : "");
    // python3 -c 'import sentencepiece as s; print(s.SentencePieceProcessor(model_file=M).encode(T))'
    const char *got = t ? ids_text(t, "ROMEO:\nBut soft, what light", NL_ENCODE_BOS) : "";
    // (NL_ENCODE_BOS adds none: the model was trained without a BOS, and its tokenizer says add_bos false)
    CHECK(strcmp(got, "378 479 489 477 479 471 13 490 322 379 465 450 463 265 295 368 362") == 0 &&
              !nl_tokenizer_info(t).add_bos,
          "ids: %s", got);
    nl_tokenizer_free(t);
}

int main(void) {
    RUN(spm_merges_best_score_then_leftmost);
    RUN(spm_bytes_of_each_kind);
    RUN(spm_text_bytes_less_the_dummy_prefix);
    RUN(spm_merges_as_the_naive_twin);
    RUN(spm_hf_merges_by_rank);
    RUN(spm_hf_metaspace_prefix_default);
    RUN(spm_special_longest_control_wins);
    RUN(spm_refuses_bad_files);
    RUN(spm_reads_the_shipped_tokenizer);
    return check_summary("test_spm");
}
