// prompts.c — texts and prompts: read (a file, standard input, -p), and encoded for a model with
// the options' tokenizer flags, an empty prompt or one with nothing known becoming the bos alone
// (a model that adds one) or a newline.
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process.h"
#include "prompts.h"

// Encodes text (len bytes) into a new id array.
int encode_flags(const Options *o) {
    return (o->skip_unknown ? NL_ENCODE_SKIP_UNKNOWN : 0) | (o->special ? NL_ENCODE_SPECIAL : 0) |
           (o->no_bos ? 0 : NL_ENCODE_BOS);
}

int encode(const NlModel *model, const char *what, const char *text, size_t len, int flags, int **ids, size_t *n,
           size_t *skipped) {
    int skip_unknown = flags & NL_ENCODE_SKIP_UNKNOWN;
    *ids = malloc(NL_ENCODE_ROOM(len) * sizeof **ids);
    if (!*ids) {
        msg_error("out of memory for %s", what);
        return EXIT_DATA;
    }
    NlError err;
    if (nl_tokenizer_encode(nl_model_tokenizer(model), text, len, flags, *ids, n, skipped, &err) != 0) {
        // The library does not know the flags; the CLI adds the one that helps.
        int unknown = err.code == NL_ERR_FORMAT && !skip_unknown && strstr(err.msg, "vocabulary");
        msg_error("%s: %s%s", what, err.msg,
                  !unknown ? ""
                  : strstr(err.msg, "'\\' (U+005C)") != NULL
                      ? " (-e reads escapes such as \\n; --skip-unknown drops such "
                        "characters)"
                      : " (use --skip-unknown to drop such characters)");
        return exit_code(&err);
    }
    if (*skipped)
        msg_error("warning: %s: dropped %zu character%s outside the vocabulary", what, *skipped, plural(*skipped));
    int bos = nl_tokenizer_info(nl_model_tokenizer(model)).bos;
    if ((flags & NL_ENCODE_BOS) && bos >= 0 && *n >= 2 && (*ids)[0] == bos && (*ids)[1] == bos)
        msg_error("warning: %s: the text starts with a bos of its own after the one the model adds: two in a row "
                  "(as llama.cpp warns)",
                  what);
    return 0;
}

// Reads all of standard input (for "-f -" and "--text -").
static int read_stdin(char **buf, size_t *len) {
    size_t cap = 4096, n = 0;
    char *data = malloc(cap + 1);
    while (data) {
        size_t got = fread(data + n, 1, cap - n, stdin);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            char *bigger = cap < TEXT_CAP ? realloc(data, 2 * cap + 1) : NULL;
            if (!bigger) {
                free(data);
                data = NULL;
                break;
            }
            data = bigger;
            cap *= 2;
        }
    }
    if (!data || ferror(stdin)) {
        int why = errno;  // fread's: EISDIR for a directory, EBADF for a descriptor open only for writing
        msg_error("-: cannot read standard input: %s", data ? strerror(why) : "too large or out of memory");
        free(data);
        return EXIT_DATA;
    }
    data[n] = '\0';
    *buf = data;
    *len = n;
    return 0;
}

int read_text(const char *path, char **buf, size_t *len) {
    NlError err;
    if (strcmp(path, "-") == 0) return read_stdin(buf, len);
    if (nl_read_file(path, TEXT_CAP, buf, len, &err) != 0) { return fail(&err); }
    return 0;
}

static int encodable(const NlModel *model, const char *text) {
    size_t len = strlen(text), n, skipped;
    int *ids = malloc(NL_ENCODE_ROOM(len) * sizeof *ids);
    NlError err;
    int ok = ids && nl_tokenizer_encode(nl_model_tokenizer(model), text, len, 0, ids, &n, &skipped, &err) == 0;
    free(ids);
    return ok;
}

void prompt_warn_number(const Options *o) {
    char *end;
    const char *p = o->prompt;
    if (!p || !*p || isspace((unsigned char)*p)) return;
    (void)strtod(p, &end);
    if (*end == '\0')
        msg_error("warning: the prompt is '%s', a number: -p is the prompt here (run.c's -p, top-p, is --top-p)", p);
}

int prompt_read(const Options *o, char **text, size_t *len) {
    if (o->prompt_file) return read_text(o->prompt_file, text, len);
    *text = strdup(o->prompt ? o->prompt : "");
    *len = *text ? strlen(*text) : 0;
    return *text ? 0 : EXIT_DATA;
}

int prompt_encode(const Options *o, const NlModel *model, const char *what, char **text, size_t *len, int **ids,
                  size_t *n) {
    size_t skipped = 0;
    if (*len == 0 && encode(model, what, "", 0, encode_flags(o), ids, n, &skipped) == 0 && *n > 0) return 0;  // bos
    if (*len == 0) {
        free(*ids);
        *ids = NULL;
        free(*text);
        *text = strdup("\n");
        *len = 1;
        if (!*text) return EXIT_DATA;
    }
    int rc = encode(model, what, *text, *len, encode_flags(o), ids, n, &skipped);
    if (rc) return rc;
    if (*n == 0) {  // nothing known was left: start from a newline, as an empty prompt does
        free(*ids);
        *ids = NULL;
        *len = 0;
        return prompt_encode(o, model, "prompt", text, len, ids, n);
    }
    return 0;
}

int prompt_ids(const Options *o, const NlModel *model, const char *default_prompt, int **ids, size_t *n, char **text,
               size_t *len, int *fell_back) {
    int use_default = !o->prompt && !o->prompt_file && default_prompt;
    if (fell_back) *fell_back = use_default && !encodable(model, default_prompt);
    if (use_default && encodable(model, default_prompt)) {
        Options with = *o;
        with.prompt = default_prompt;
        return prompt_ids(&with, model, NULL, ids, n, text, len, NULL);
    }
    int rc = prompt_read(o, text, len);
    if (rc) return rc;
    char what[4200];
    snprintf(what, sizeof what, "%s", o->prompt_file ? o->prompt_file : "prompt");
    return prompt_encode(o, model, what, text, len, ids, n);
}

// A piece's bytes as they stand in the text (*len of them): the dummy prefix's space dropped from the
// first piece with bytes of a text that starts here (*at_start, which that piece clears), as
// sentencepiece's decoder drops it.
const char *text_piece(const NlTokenizer *tok, int id, int *at_start, size_t *len) {
    const char *p = nl_tokenizer_bytes(tok, id, len);
    size_t skip = *at_start && *len && p[0] == ' ';
    *at_start &= *len == 0;
    *len -= skip;
    return p + skip;
}

// The prompt the model saw, for echoing, and its length (*len_out: a BPE prompt may hold a NUL byte).
// whole: the ids start the text (the prompt was not cut to the window), so a sentencepiece prompt's
// first piece carries the dummy prefix.
char *prompt_text(const NlModel *model, const int *ids, size_t n, int whole, size_t *len_out) {
    const NlTokenizer *tok = nl_model_tokenizer(model);
    size_t cap = 1, used = 0, len;
    int at_start = whole && nl_tokenizer_info(tok).dummy_prefix;
    for (size_t i = 0; i < n; i++) cap += (nl_tokenizer_bytes(tok, ids[i], &len), len);
    char *s = malloc(cap);
    for (size_t i = 0; s && i < n; i++) {
        const char *p = text_piece(tok, ids[i], &at_start, &len);
        memcpy(s + used, p, len);
        used += len;
    }
    if (s) s[used] = '\0';
    *len_out = used;
    return s;
}
