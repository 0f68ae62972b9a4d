// cmd_quantize.c — quantize: a model folder written again with its matrices stored as another type
// (llama-quantize's job; nl_model_quantize writes the weights), whole (model_folder.c).
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "model_folder.h"
#include "models.h"
#include "process.h"

// The model's folder written again into d's new folder: its files copied, model.safetensors stored as asked.
static int write_folder(const OutDir *d, const char *input, const NlModel *model, const NlQuantizeParams *p,
                        NlQuantizeResult *r) {
    char path[PATH_MAX + 32];
    NlError err;
    FILE *f = model_folder_copy(d, input) == 0 ? model_folder_open(d, "model.safetensors", path, sizeof path) : NULL;
    if (!f) return -1;
    int rc = nl_model_quantize(model, p, f, r, &err);
    if (rc != 0) msg_error("%s: %s", path, err.msg);
    if (close_synced(f) != 0 && rc == 0) {
        msg_error("%s: cannot write: %s", path, strerror(errno));
        rc = -1;
    }
    return rc;
}

// --keep's comma-separated names into a new array (free it), *n of them; NULL out of memory.
static const char **keep_names(char *list, size_t *n) {
    size_t cap = 1;
    for (const char *c = list; c && *c; c++) cap += *c == ',';
    const char **names = calloc(cap, sizeof *names);
    *n = 0;
    for (char *save = NULL, *tok = list ? strtok_r(list, ",", &save) : NULL; names && tok;
         tok = strtok_r(NULL, ",", &save))
        names[(*n)++] = tok;
    return names;
}

static void report(const Options *o, const char *input, const NlModelDesc *before, const NlQuantizeResult *r) {
    const char *type = nl_name(NL_NAMES_DTYPE, o->qtype);
    if (r->unblockable)
        msg_error("note: %zu matrix%s stay%s float32: %s rows are not whole blocks of 32 (the first: %s)",
                  r->unblockable, r->unblockable == 1 ? "" : "es", r->unblockable == 1 ? "s" : "", type,
                  r->unblockable_name);
    printf("%s -> %s: %zu matri%s %s, %zu float32 (%zu kept by name, %zu positions, %zu unblockable); %zu bytes of "
           "weights -> a file of %zu bytes (%.2f bits a weight)\n",
           input, o->output, r->stored, r->stored == 1 ? "x" : "ces", type, r->kept + r->positions + r->unblockable,
           r->kept, r->positions, r->unblockable, before->weight_bytes, r->bytes,
           8.0 * (double)r->bytes / (double)before->parameters);
}

int cmd_quantize(Options *o) {
    char buf[4400];
    const char *input = model_path(o, buf, sizeof buf);
    OutDir d = {0};
    NlModel *model;
    int rc = model_folder_start(&d, "quantize", o->output, input, o->no_mmap, &model);
    if (rc != 0) return rc;
    size_t n_keep = 0;
    char *list = o->keep ? strdup(o->keep) : NULL;
    const char **keep = keep_names(list, &n_keep);
    NlQuantizeParams p = {(NlDType)o->qtype, keep, n_keep};
    NlQuantizeResult r;
    NlModelDesc before = model_desc(model);
    rc = EXIT_DATA;
    if (!keep || (o->keep && !list)) msg_error("out of memory");
    else if (model_folder_create(&d) == 0 && write_folder(&d, input, model, &p, &r) == 0 &&
             model_folder_put_in_place(&d) == 0)
        rc = 0;
    if (rc != 0) model_folder_discard(&d);
    if (rc == 0) report(o, input, &before, &r);
    free(keep);
    free(list);
    nl_model_free(model);
    return rc;
}
