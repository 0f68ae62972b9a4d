// cmd_tokenize.c — tokenize: a text's token ids and their pieces, as llama.cpp's llama-tokenize
// prints them, for every kind of tokenizer.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "commands.h"
#include "io_check.h"
#include "jsonout.h"
#include "models.h"
#include "output.h"
#include "prompts.h"
#include "option_rows.h"

// A token's bytes for a line of text: escaped as messages are (\n, \t, \xHH for a byte that is not
// part of valid UTF-8), a NUL as \x00.
static int print_piece(FILE *out, const char *bytes, size_t len) {
    int ok = 1;
    for (size_t at = 0; at < len && ok;) {
        size_t part = strnlen(bytes + at, len - at);
        char chunk[1024], shown[6 * 1024 + 16];
        snprintf(chunk, sizeof chunk, "%.*s", (int)(part < sizeof chunk ? part : sizeof chunk - 1), bytes + at);
        ok = fputs(msg_escape(shown, sizeof shown, chunk), out) != EOF;
        at += part;
        if (at < len && ok) ok = fputs("\\x00", out) != EOF;
        at += at < len;
    }
    return ok;
}

// The ids as llama-tokenize --ids prints them: "[1, 15043, 3186]".
static int print_ids(FILE *out, const int *ids, size_t n) {
    int ok = fputc('[', out) != EOF;
    for (size_t i = 0; i < n && ok; i++) ok = fprintf(out, "%s%d", i ? ", " : "", ids[i]) > 0;
    return ok && fputs("]\n", out) != EOF;
}

// "ID -> 'PIECE'" a line, or one JSON object {tokenizer, ids, pieces}.
static int print_tokens(FILE *out, const NlModel *model, const int *ids, size_t n, int json) {
    const NlTokenizer *tok = nl_model_tokenizer(model);
    if (!json) {
        NlTokenizerInfo info = nl_tokenizer_info(tok);  // (a sentencepiece model's bos and eos have no bytes: named)
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++) {
            size_t len;
            const char *bytes = nl_tokenizer_bytes(tok, ids[i], &len);
            const char *named = ids[i] == info.bos ? " (bos)" : ids[i] == info.eos ? " (eos)" : "";
            ok = fprintf(out, "%6d -> '", ids[i]) > 0 && print_piece(out, bytes, len) &&
                 fprintf(out, "'%s\n", named) > 0;
        }
        return ok;
    }
    cJSON *j = cJSON_CreateObject(), *id_list = cJSON_CreateArray(), *pieces = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "tokenizer", nl_name(NL_NAMES_TOKENIZER, nl_tokenizer_info(tok).kind));
    cJSON_AddItemToObject(j, "ids", id_list);
    cJSON_AddItemToObject(j, "pieces", pieces);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *bytes = nl_tokenizer_bytes(tok, ids[i], &len);
        cJSON_AddItemToArray(id_list, cJSON_CreateNumber(ids[i]));
        cJSON_AddItemToArray(pieces, cJSON_CreateString(bytes));  // (the JSON printer repairs a cut character)
    }
    char *line = nl_jsonx_print(j, 0);
    int ok = line && fprintf(out, "%s\n", line) > 0;
    free(line);
    cJSON_Delete(j);
    return ok;
}

int cmd_tokenize(Options *o) {
    if (!o->prompt && !o->prompt_file) {
        msg_usage(o->cmd, "%s", "give the text with -p TEXT or -f FILE");
        return EXIT_USAGE;
    }
    NlModel *model = NULL;
    OutFile out = {0};
    int *ids = NULL;
    char *text = NULL;
    size_t n = 0, len = 0, skipped = 0;
    const char *outs[1] = {o->output};
    int rc = o->output ? check_outputs(o, outs, 1) : 0;
    if (!rc) rc = load_model_as(o, &model, NULL, 1);  // the tokenizer only: no weight read
    if (!rc) rc = prompt_read(o, &text, &len);
    if (!rc)
        rc = encode(model, o->prompt_file ? o->prompt_file : "prompt", text, len, encode_flags(o), &ids, &n, &skipped);
    if (!rc) rc = open_main_output(o, &out);
    int printed = rc ? 0 : o->ids_only ? print_ids(out.f, ids, n) : print_tokens(out.f, model, ids, n, o->json);
    if (!rc && (!printed || fflush(out.f) == EOF)) {
        msg_error("cannot write %s: %s", o->output ? o->output : "to stdout", strerror(errno));
        rc = EXIT_DATA;
    }
    if (out_finish(&out, rc == 0) != 0) rc = EXIT_DATA;
    free(ids);
    free(text);
    nl_model_free(model);
    return rc;
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec TOKENIZE_OPTIONS[] = {
    OPT_HELP,
    OPT_MODEL,
    OPT_PROMPT,
    OPT_PROMPT_FILE,
    OPT_ESCAPE,
    {.name = "json",
     .type = OT_FLAG,
     .field = OPT_FIELD(json),
     .value = 1,
     .help = "one JSON object: {tokenizer, ids, pieces}, each piece the token's bytes as text (a byte that is not "
             "part of valid UTF-8 as U+FFFD)"},
    {.name = "ids",
     .type = OT_FLAG,
     .field = OPT_FIELD(ids_only),
     .value = 1,
     .help = "the ids alone, as llama-tokenize --ids prints them: one line '[1, 15043, 3186]'"},
    {.name = "no-bos",
     .type = OT_FLAG,
     .field = OPT_FIELD(no_bos),
     .value = 1,
     .help = "leave out the bos a sentencepiece model adds at the start (llama-tokenize's --no-bos); the others add "
             "none"},
    OPT_OUTPUT,
    OPT_SPECIAL,
    OPT_NO_MMAP,
    OPT_NO_REPACK,
    OPT_END,
};

const OptRelation TOKENIZE_RELATIONS[] = {
    PROMPT_OR_FILE, CONFLICTS(GIVEN_INT(ids_only), GIVEN_INT(json), "give --ids or --json, not both"), REL_END};
