// spm.h — SentencePiece's BPE with byte fallback (Kudo & Richardson 2018; sentencepiece's
// bpe_model.cc), Llama 2's tokenizer: spaces written "▁" (U+2581) and a "▁" put before the text
// (the dummy prefix); the text's characters merged, repeatedly, at the adjacent pair that makes the
// best piece; a character no piece holds written as its UTF-8 bytes, the pieces "<0x00>".."<0xFF>".
//
//   NlSpm *spm;
//   if (nl_spm_from_json(&spm, root, "tokenizer.json", &err) != 0) { ... }   // normlab's form
//   nl_spm_encode(spm, "To be", 5, NL_ENCODE_BOS, ids, &n_ids, &err);        // ids: room for 5 + 2
//   const unsigned char *b = nl_spm_bytes(spm, ids[1], &len);                 // " To": "▁" a space
//   nl_spm_free(spm);
//
// "Best" is the piece's score in normlab's sentencepiece form (sentencepiece's and llama2.c's run.c
// rule), and its merge's rank in a Hugging Face tokenizer.json (the rule of HF's tokenizers), the
// leftmost pair on a tie in both. Text is bytes: a byte that is not part of valid UTF-8 is a
// character of its own that no piece holds, so it becomes its byte piece and decodes to itself.
#ifndef NL_SPM_H
#define NL_SPM_H

#include <stddef.h>

#include "normlab_internal.h"

#pragma GCC visibility push(hidden)

typedef struct NlSpm NlSpm;
struct cJSON;

// What a SentencePiece BPE is built from: each piece's text as written ("▁" for a space, "<0xXX>"
// for a byte), its score or its merges, and its special pieces. Borrowed for the call.
typedef struct {
    const char *const *pieces;  // (n) id order
    const double *scores;  // (n) the sentencepiece form: merges by score; NULL: by merges' rank
    const char *const (*merges)[2];  // (n_merges) a Hugging Face file's merges, rank order, as piece texts
    size_t n_merges;
    const unsigned char *special;  // (n) or NULL: pieces besides unk, bos and eos that are control pieces
    int n, unk, bos, eos;  // bos, eos: -1 for none
    int add_bos, dummy_prefix;
    int split_at_space;  // HF's Metaspace with split: no merge across the start of a "▁"
} NlSpmSpec;

// Checks every entry (a piece once, valid UTF-8; all 256 byte pieces and "▁"; unk, bos and eos
// ids in range and distinct; finite scores; each merge two pieces whose join is a piece) and builds
// the tokenizer; errors name `what` and the entry.
int nl_spm_create(NlSpm **out, const NlSpmSpec *spec, const char *what, NlError *err);
// root: normlab's sentencepiece form, {"type": "sentencepiece", "pieces": [[text, score], ...],
// "unk_id", "bos_id", "eos_id", "add_bos", "add_dummy_prefix", "byte_fallback"} (docs/format.md).
int nl_spm_from_json(NlSpm **out, const struct cJSON *root, const char *what, NlError *err);
// root: a Hugging Face tokenizer.json of a SentencePiece-style BPE (spm_hf.c).
int nl_spm_from_hf(NlSpm **out, const struct cJSON *root, const char *what, NlError *err);
// The kind of a Hugging Face tokenizer.json (root has "model"): NL_TOKENIZER_SPM (byte fallback, a
// Metaspace pre-tokenizer or a "▁" normalizer), NL_TOKENIZER_BPE (the rest, for bpe.c to check),
// or -1 with err naming a kind normlab does not read (Unigram, WordPiece, WordLevel, a Split
// pre-tokenizer: Llama 3's and Qwen's patterns) (spm_hf.c).
int nl_spm_hf_kind(const struct cJSON *root, const char *what, NlError *err);
void nl_spm_free(NlSpm *spm);
int nl_spm_size(const NlSpm *spm);
// The ids of bos and eos (-1: none), and whether encoding adds them (add_bos) and the dummy prefix.
void nl_spm_info(const NlSpm *spm, NlTokenizerInfo *info);

// Encodes len bytes into ids: room for len + 2 ids is always enough (a token holds at least one
// byte of the text, but for the dummy prefix and bos). flags: NL_ENCODE_BOS puts bos first when the
// tokenizer adds it; NL_ENCODE_SPECIAL reads a control piece's text ("<s>") as that piece, and each
// text after one gets its own dummy prefix (llama.cpp's parse_special; without it, "<s>" is plain
// text, as in sentencepiece). The one failure is NL_ERR_NOMEM.
int nl_spm_encode(const NlSpm *spm, const char *text, size_t len, int flags, int *ids, size_t *n_ids, NlError *err);
// The bytes of piece id (0 <= id < size): its text with "▁" a space; a byte piece's one byte; a
// control piece none; <unk> sentencepiece's " ⁇ ". NUL-terminated.
const unsigned char *nl_spm_bytes(const NlSpm *spm, int id, size_t *len);
// Whether piece id (0 <= id < size) is a control piece: <unk>, bos, eos, HF's special added tokens.
int nl_spm_is_control(const NlSpm *spm, int id);

#pragma GCC visibility pop

#endif
