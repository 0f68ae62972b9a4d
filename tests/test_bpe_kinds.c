// test_bpe_kinds.c — the byte-level BPEs of Hugging Face's tokenizer.json beyond GPT-2's: cl100k's
// and Qwen 2's patterns piece by piece, NFC against Python's unicodedata (its outputs written here),
// added tokens (special or not, past the vocabulary), ignore_merges, the Digits split, padding,
// and the files refused, each with one line naming its part.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "nfc.h"
#include "pretokenize.h"
#include "tokenizer.h"

// The pieces' lengths of text by pattern, compared with want (0-terminated).
static int pieces_are(NlPattern p, const char *text, const size_t *want) {
    size_t len = strlen(text), at = 0, k = 0;
    for (; at < len; k++) {
        size_t end = nl_piece_end(p, text, len, at);
        if (want[k] != end - at) return 0;
        at = end;
    }
    return want[k] == 0;
}

static void patterns_split_as_cl100k_and_qwen(void) {
    static const struct {
        const char *text;
        size_t cl100k[8], qwen[8];
    } CASES[] = {
        {"it'S", {2, 2}, {2, 2}},  // (?i:'s): a capital contraction too
        {"x'LL", {1, 3}, {1, 3}},
        {" 12345", {1, 3, 2}, {1, 1, 1, 1, 1, 1}},  // no space before digits; 3 or 1 at a time
        {"(hello", {6}, {6}},  // one non-letter before letters joins them
        {"..hi", {2, 2}, {2, 2}},
        {"a\r\n\r\n b", {1, 4, 2}, {1, 4, 2}},  // \s*[\r\n]+ then " b"
        {"x \n  y", {1, 2, 1, 2}, {1, 2, 1, 2}},  // to the last newline, then the spaces less one
        {"\t\thi", {1, 3}, {1, 3}},  // a tab joins the letters after it
        {"!!\n\nx", {4, 1}, {4, 1}},  // others take the newlines after them
        {"a  ", {1, 2}, {1, 2}},
        {"\xe2\x80\x80x", {4}, {4}},  // U+2000 (a space) before a letter: one piece
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        CHECK(pieces_are(NL_PATTERN_CL100K, CASES[c].text, CASES[c].cl100k), "case %zu: cl100k's pieces", c);
        CHECK(pieces_are(NL_PATTERN_QWEN2, CASES[c].text, CASES[c].qwen), "case %zu: Qwen 2's pieces", c);
    }
    CHECK(nl_pattern_of_regex("\\p{L}+") == -1, "an unknown regex is no pattern");
    CHECK(nl_number_at("\xd9\xa1x", 3, 0) == 2 && nl_number_at("x1", 2, 0) == 0, "Arabic-Indic 1 is a number");
}

// NFC, each expected output from Python 3's unicodedata.normalize("NFC", text).
static void nfc_matches_unicodedata(void) {
    static const char *const CASES[][2] = {
        {"e\xcc\x81", "\xc3\xa9"},  // e + U+0301 -> é
        {"\xe2\x84\xab", "\xc3\x85"},  // U+212B ANGSTROM SIGN -> Å (a singleton)
        {"\xe0\xa5\x98", "\xe0\xa4\x95\xe0\xa4\xbc"},  // U+0958 -> U+0915 U+093C (an exclusion: longer)
        {"\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81"},  // Hangul L V T -> U+AC01
        {"a\xcc\x87\xcc\xa3", "\xe1\xba\xa1\xcc\x87"},  // a + dot above + dot below -> ạ + dot above
        {"\xcd\x84", "\xcc\x88\xcc\x81"},  // U+0344 -> U+0308 U+0301
        {"q\xcc\x87\xcc\xa3", "q\xcc\xa3\xcc\x87"},  // no composite: only reordered
        {"ascii only", "ascii only"},
        {"\xff"
         "e\xcc\x81",
         "\xff\xc3\xa9"},  // a byte that is not UTF-8 stays
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        char out[64];
        size_t n = 0;
        NlError err;
        CHECK(nl_nfc(CASES[c][0], strlen(CASES[c][0]), out, &n, &err) == 0 && n == strlen(CASES[c][1]) &&
                  memcmp(out, CASES[c][1], n) == 0,
              "case %zu: NFC as unicodedata", c);
    }
}

// A tokenizer.json over the 256 bytes (ids in byte order), "Ġt" 256, "Ġ1" 257 (merges Ġ t; Ġ 1), with
// the normalizer, pre-tokenizer, model keys and added tokens given.
static NlTokenizer *hf_vocab(const char *norm, const char *pre, const char *model_keys, const char *added,
                             const char *merges, const char *extra, NlError *err);
static NlTokenizer *hf(const char *norm, const char *pre, const char *model_keys, const char *added, NlError *err) {
    return hf_vocab(norm, pre, model_keys, added, "\"\xc4\xa0 t\", \"\xc4\xa0 1\"", "", err);
}

// The same with other merges and extra vocabulary entries after "Ġ1" (", \"abc\": 260").
static NlTokenizer *hf_vocab(const char *norm, const char *pre, const char *model_keys, const char *added,
                             const char *merges, const char *extra, NlError *err) {
    static char doc[16384];
    size_t at = (size_t)snprintf(doc, sizeof doc,
                                 "{\"normalizer\": %s, \"pre_tokenizer\": %s, \"added_tokens\": [%s], \"model\": "
                                 "{\"type\": \"BPE\", %s \"merges\": [%s], \"vocab\": {",
                                 norm, pre, added, model_keys, merges);
    for (int b = 0; b < 256; b++) {
        int keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF), k = 0;
        for (int x = 0; !keep && x < b; x++) k += !((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE));
        int cp = keep ? b : 256 + k;
        char ch[4] = {(char)(cp < 0x80 ? cp : 0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F)), 0};
        if (cp < 0x80) ch[1] = 0;
        at += (size_t)snprintf(doc + at, sizeof doc - at, "\"%s%s\": %d, ", cp == '"' || cp == '\\' ? "\\" : "", ch, b);
    }
    snprintf(doc + at, sizeof doc - at,
             "\"\xc4\xa0t\": 256, \"\xc4\xa0"
             "1\": 257%s}}}",
             extra);
    NlTokenizer *t = NULL;
    if (nl_tokenizer_parse(&t, doc, strlen(doc), "t.json", err) != 0) return NULL;
    return t;
}

#define SPLIT(regex)                                                                                       \
    "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"" regex \
    "\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"use_regex\": false}]}"
#define QWEN_REGEX                                                                    \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| " \
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|"                                        \
    "\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+"
#define ADDED(id, text, special) "{\"id\": " #id ", \"content\": \"" text "\", \"special\": " #special "}"

static size_t encode(const NlTokenizer *t, const char *text, int flags, int *ids) {
    size_t n = 0, skipped;
    NlError err;
    return nl_tokenizer_encode(t, text, strlen(text), flags, ids, &n, &skipped, &err) == 0 ? n : 0;
}

static void hf_kinds_encode_as_their_files_say(void) {
    NlError err;
    int ids[64];
    const char *added = ADDED(258, "<|im_start|>", true) ", " ADDED(259, "<think>", false);
    NlTokenizer *t = hf("{\"type\": \"NFC\"}", SPLIT(QWEN_REGEX), "", added, &err);
    CHECK(t && nl_tokenizer_size(t) == 260, "Qwen 2's layout loads, added tokens past the vocabulary: %s",
          t ? "" : err.msg);
    if (!t) return;
    CHECK(encode(t, "<think> t", 0, ids) == 2 && ids[0] == 259 && ids[1] == 256, "<think> (not special) is a token");
    CHECK(encode(t, "<|im_start|>", 0, ids) == 12 && encode(t, "<|im_start|>", NL_ENCODE_SPECIAL, ids) == 1 &&
              ids[0] == 258,
          "<|im_start|> is text, and the special token with NL_ENCODE_SPECIAL");
    CHECK(encode(t, " 1", 0, ids) == 2 && ids[0] == ' ' && ids[1] == '1', "Qwen's digits stand alone: no \"Ġ1\"");
    CHECK(encode(t, "e\xcc\x81", 0, ids) == 2 && ids[0] == 0xC3 && ids[1] == 0xA9, "NFC before the pieces: é");
    CHECK(nl_tokenizer_pad(t, 300, &err) == 0 && nl_tokenizer_size(t) == 300 && nl_tokenizer_info(t).padding == 40,
          "padded to 300");
    size_t len = 9;
    CHECK(nl_tokenizer_bytes(t, 299, &len) && len == 0, "a padding token has no bytes");
    nl_tokenizer_free(t);
    const char *digits = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", \"individual_digits\": "
                         "true}, {\"type\": \"ByteLevel\"}]}";
    t = hf("null", "{\"type\": \"ByteLevel\"}", "", "", &err);
    CHECK(t && encode(t, " 1", 0, ids) == 1 && ids[0] == 257, "GPT-2's pattern: \" 1\" one piece, merged");
    nl_tokenizer_free(t);
    t = hf("null", digits, "", "", &err);
    CHECK(t && encode(t, " 1", 0, ids) == 2 && ids[0] == ' ', "Digits(individual) first: the 1 cut out");
    nl_tokenizer_free(t);
    // "abc" made by "ab c", but "b c" ranks first: the merges end at a + bc; ignore_merges takes abc.
    const char *merges = "\"b c\", \"a b\", \"ab c\", \"\xc4\xa0 t\", \"\xc4\xa0 1\"";
    const char *abc = ", \"bc\": 258, \"ab\": 259, \"abc\": 260";
    for (int ignore = 0; ignore < 2; ignore++) {
        t = hf_vocab("null", "{\"type\": \"ByteLevel\"}", ignore ? "\"ignore_merges\": true," : "", "", merges, abc,
                     &err);
        size_t n = t ? encode(t, "abc", 0, ids) : 0;
        CHECK(ignore ? n == 1 && ids[0] == 260 : n == 2 && ids[0] == 'a' && ids[1] == 258,
              "ignore_merges %d: \"abc\" as %s", ignore, ignore ? "the vocabulary's token" : "a + bc, by the merges");
        nl_tokenizer_free(t);
    }
}

static void hf_kinds_refuse_what_they_do_not_run(void) {
    static const struct {
        const char *norm, *pre, *model_keys, *added, *word;
    } CASES[] = {
        {"{\"type\": \"NFKC\"}", "{\"type\": \"ByteLevel\"}", "", "", "NFKC normalizer"},
        {"null", SPLIT("\\\\w+"), "", "", "Split pattern"},
        {"null", "{\"type\": \"ByteLevel\", \"add_prefix_space\": true}", "", "", "ByteLevel pre-tokenizer"},
        {"null", "{\"type\": \"Whitespace\"}", "", "", "Whitespace pre-tokenizer"},
        {"null", "{\"type\": \"ByteLevel\"}", "\"dropout\": 0.1,", "", "dropout"},
        {"null", "{\"type\": \"ByteLevel\"}", "", "{\"id\": 258, \"content\": \"<x>\", \"lstrip\": true}",
         "lstrip is not run"},
        {"null", "{\"type\": \"ByteLevel\"}", "", ADDED(260, "<x>", true), "leaves a gap"},
        {"null", "{\"type\": \"ByteLevel\"}", "", ADDED(256, "<x>", true), "holds another token in model.vocab"},
        {"null", "{\"type\": \"ByteLevel\"}", "", "{\"id\": 258}", "needs an id"},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        NlError err;
        NlTokenizer *t = hf(CASES[c].norm, CASES[c].pre, CASES[c].model_keys, CASES[c].added, &err);
        CHECK(!t && strstr(err.msg, CASES[c].word) && !strchr(err.msg, '\n'), "case %zu: %s", c,
              t ? "accepted" : err.msg);
        nl_tokenizer_free(t);
    }
}

int main(void) {
    RUN(patterns_split_as_cl100k_and_qwen);
    RUN(nfc_matches_unicodedata);
    RUN(hf_kinds_encode_as_their_files_say);
    RUN(hf_kinds_refuse_what_they_do_not_run);
    return check_summary("test_bpe_kinds");
}
