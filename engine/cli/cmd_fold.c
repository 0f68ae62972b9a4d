// cmd_fold.c — fold: a model folder written again with its norms folded into the linears that read
// them (TransformerLens's fold_ln; with --center its center_writing_weights and center_unembed), by
// the lab's nl_model_fold, whole (model_folder.c). docs/lab.md says what each norm and placement allows.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "model_folder.h"
#include "models.h"
#include "normlab_lab.h"
#include "process.h"
#include "option_rows.h"

#define CONFIG_CAP ((size_t)1 << 20)  // the most bytes a config.json may hold here

// input/config.json read whole into a new string (free it), *len its bytes; NULL after a message.
static char *read_config(const char *input, size_t *len) {
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/config.json", input);
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(CONFIG_CAP + 1) : NULL;
    *len = buf ? fread(buf, 1, CONFIG_CAP + 1, f) : 0;
    int bad = !buf || ferror(f) || *len > CONFIG_CAP;
    if (f) fclose(f);
    if (bad) {
        msg_error("%s: cannot read%s", path, buf && *len > CONFIG_CAP ? ": larger than 1 MiB" : "");
        free(buf);
        return NULL;
    }
    buf[*len] = '\0';
    return buf;
}

int fold_model_folder(const OutDir *d, const char *input, const NlModel *model, const NlFoldOptions *opts,
                      NlFoldResult *r) {
    size_t len;
    struct stat st;
    if (stat(input, &st) == 0 && !S_ISDIR(st.st_mode)) {
        msg_error("%s: a model read from one .json or .gguf file cannot be folded: give a model directory", input);
        return EXIT_USAGE;  // a refusal, as every other
    }
    char *config = read_config(input, &len), *config_out = NULL, path[PATH_MAX + 32];
    FILE *f = config && model_folder_copy(d, input) == 0 ? model_folder_open(d, "model.safetensors", path, sizeof path)
                                                         : NULL;
    NlError err;
    int rc = EXIT_DATA;
    if (f) {
        rc = nl_model_fold(model, opts, config, len, f, &config_out, r, &err) == 0 ? 0 : fail(&err);
        if (close_synced(f) != 0 && rc == 0) {
            msg_error("%s: cannot write: %s", path, strerror(errno));
            rc = EXIT_DATA;
        }
    }
    if (rc == 0) {  // config.json: the copy replaced by the folded model's
        snprintf(path, sizeof path, "%s/config.json", d->tmp);
        FILE *c = unlink(path) == 0 || errno == ENOENT ? model_folder_open(d, "config.json", path, sizeof path) : NULL;
        size_t n = strlen(config_out);
        rc = c && fwrite(config_out, 1, n, c) == n && fputc('\n', c) != EOF ? 0 : EXIT_DATA;
        if (c && close_synced(c) != 0) rc = EXIT_DATA;
        if (rc != 0) msg_error("%s: cannot write: %s", path, strerror(errno));
    }
    free(config);
    free(config_out);
    return rc;
}

static void report(const Options *o, const char *input, const NlFoldResult *r) {
    printf("%s -> %s: %zu norm%s folded, %zu kept%s%s%s", input, o->output, r->folded, r->folded == 1 ? "" : "s",
           r->kept, r->kept ? " (" : "", r->kept_reason, r->kept ? ")" : "");
    if (o->center) printf("; %zu matri%s centred", r->centered, r->centered == 1 ? "x" : "ces");
    if (r->untied) printf("; the head untied from wte");
    if (r->head_bias) printf("; the head has a bias");
    printf("; every tensor float32\n");
    if (!r->exact) msg_error("note: not exact: %s", r->inexact_reason);
}

int cmd_fold(Options *o) {
    char buf[4400];
    const char *input = model_path(o, buf, sizeof buf);
    OutDir d = {0};
    NlModel *model;
    int rc = model_folder_start(&d, "fold", o->output, input, o->no_mmap, &model);
    if (rc != 0) return rc;
    NlFoldOptions opts = {o->center, o->force};
    NlFoldResult r;
    rc = model_folder_create(&d) == 0 ? fold_model_folder(&d, input, model, &opts, &r) : EXIT_DATA;
    if (rc == 0 && model_folder_put_in_place(&d) != 0) rc = EXIT_DATA;
    if (rc != 0) model_folder_discard(&d);
    if (rc == 0) report(o, input, &r);
    nl_model_free(model);
    return rc;
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec FOLD_OPTIONS[] = {
    OPT_HELP,
    OPT_MODEL,
    OPT_OUTPUT_FOLDER,
    {.name = "center",
     .type = OT_FLAG,
     .field = OPT_FIELD(center),
     .value = 1,
     .help = "also centre wte, wpe, attn.c_proj and mlp.c_proj (with their biases) over the stream's width, and the "
             "head over the vocabulary; refused where it is not exact (not LayerNorm, or a placement where a branch "
             "reads the raw stream: post, post-sublayer, mix)"},
    {.name = "force",
     .type = OT_FLAG,
     .field = OPT_FIELD(force),
     .value = 1,
     .help = "centre even where it is not exact, to measure what it changes (compare --fold --center does)"},
    OPT_NO_MMAP,
    OPT_END,
};

const OptRelation FOLD_RELATIONS[] = {
    REQUIRES(GIVEN_INT(force), GIVEN_INT(center), "--force centres where it is not exact: give --center too"), REL_END};
