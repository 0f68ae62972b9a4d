// prompts.h — reading texts and prompts and encoding them for a model (prompts.c).
#ifndef NL_CLI_PROMPTS_H
#define NL_CLI_PROMPTS_H

#include <stddef.h>

#include "cli.h"

#define TEXT_CAP ((size_t)1 << 30)  // the largest text read

// The tokenizer flags the options ask for (--skip-unknown, --special), and bos first (a text starts a
// sequence: a sentencepiece model that adds bos gets it).
int encode_flags(const Options *o);
// text (len bytes) encoded into a new *ids of *n, *skipped characters dropped; messages name it `what`.
int encode(const NlModel *model, const char *what, const char *text, size_t len, int flags, int **ids, size_t *n,
           size_t *skipped);
// A file, or with "-" standard input, read whole into a new *buf of *len bytes.
int read_text(const char *path, char **buf, size_t *len);
// A one-line warning when -p's text is a number ("0.9"): run.c's -p is top-p, normlab's the prompt.
void prompt_warn_number(const Options *o);
// The prompt as given (-p, or -f's file read whole) into a new buffer *text of *len bytes.
int prompt_read(const Options *o, char **text, size_t *len);
// Encodes *text (*len bytes, owned: it may be replaced) for model into a new *ids of *n. An empty
// prompt, or one with nothing known left after --skip-unknown, is the model's bos alone where it
// adds one (as tokenize shows "", llama.cpp and run.c start), else "\n" (nanoGPT's start: a model
// needs a token to predict from). Messages name it `what`.
int prompt_encode(const Options *o, const NlModel *model, const char *what, char **text, size_t *len, int **ids,
                  size_t *n);
// Reads the prompt (from -p or -f, else the command's default prompt when the vocabulary has its
// characters) and encodes it: prompt_read, then prompt_encode.
// With neither -p nor -f, default_prompt (when not NULL) is the prompt where the vocabulary has its
// characters; *fell_back (when not NULL) says when it did not, and the run starts from a newline.
int prompt_ids(const Options *o, const NlModel *model, const char *default_prompt, int **ids, size_t *n, char **text,
               size_t *len, int *fell_back);

// A piece's bytes as they stand in the text (*len of them): the dummy prefix's space dropped from
// the first piece with bytes of a text that starts here (*at_start, which that piece clears).
const char *text_piece(const NlTokenizer *tok, int id, int *at_start, size_t *len);
// The prompt the model saw (ids[0..n)), for echoing, in a new NUL-terminated buffer of *len_out
// bytes (a BPE prompt may hold a NUL); NULL out of memory. whole: the ids start the text (not cut to
// the window), so a sentencepiece prompt's first piece carries the dummy prefix, which is dropped.
char *prompt_text(const NlModel *model, const int *ids, size_t n, int whole, size_t *len_out);

#endif
