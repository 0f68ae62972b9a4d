// cmd_quantize.c — quantize: a model folder written again with its matrices stored as another type
// (llama-quantize's job; nl_model_quantize writes the weights), whole (model_folder.c).
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "model_folder.h"
#include "models.h"
#include "process.h"
#include "option_rows.h"

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

// The first matrix stored in a block type (q8_0, q4_0) of desc, or NULL: quantizing such a model
// again rounds a rounding, which llama-quantize refuses without --allow-requantize.
static const NlMatrixDesc *quantized_matrix(const NlModelDesc *desc) {
    for (size_t i = 0; i < desc->n_matrices; i++)
        if (desc->matrices[i].type == NL_DTYPE_Q8_0 || desc->matrices[i].type == NL_DTYPE_Q4_0)
            return &desc->matrices[i];
    return NULL;
}

// 0 when the model may be written as o->qtype; else a usage error's message and EXIT_USAGE.
static int check_requantize(const Options *o, const NlModelDesc *before) {
    const NlMatrixDesc *q = quantized_matrix(before);
    if (!q || o->qtype == NL_DTYPE_F32 || o->allow_requantize) return 0;
    msg_usage(o->cmd,
              "the model is already quantized (%s is %s): --type %s would round its rounding, so its "
              "error would be at least %s's; quantize the float model, or give --allow-requantize",
              q->name, nl_name(NL_NAMES_DTYPE, q->type), nl_name(NL_NAMES_DTYPE, o->qtype),
              nl_name(NL_NAMES_DTYPE, q->type));
    return EXIT_USAGE;
}

// 0 when r stored some matrix as asked; else an error naming why none could be.
static int check_stored(const Options *o, const NlQuantizeResult *r) {
    if (r->stored > 0 || r->unblockable == 0) return 0;
    msg_error("no matrix can be stored as %s: the rows of every one (the first: %s) are not whole blocks of 32; "
              "choose f16 or bf16",
              nl_name(NL_NAMES_DTYPE, o->qtype), r->unblockable_name);
    return -1;
}

// Whether the file at path starts with GGUF's magic (llama.cpp's files, which the engine reads).
static int is_gguf(const char *path) {
    char magic[4] = {0};
    FILE *f = fopen(path, "rb");
    int is = f && fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
    if (f) fclose(f);
    return is;
}

int cmd_quantize(Options *o) {
    char buf[4400];
    const char *input = model_path(o, buf, sizeof buf);
    OutDir d = {0};
    NlModel *model;
    struct stat st;
    if (stat(input, &st) == 0 && !S_ISDIR(st.st_mode) && is_gguf(input)) {
        msg_error("%s: a model read from a .gguf file cannot be quantized into a model folder yet: give a model "
                  "directory",
                  input);
        return EXIT_USAGE;
    }
    int rc = model_folder_start(&d, "quantize", o->output, input, o->no_mmap, &model);
    if (rc != 0) return rc;
    size_t n_keep = 0;
    char *list = o->keep ? strdup(o->keep) : NULL;
    const char **keep = keep_names(list, &n_keep);
    NlQuantizeParams p = {(NlDType)o->qtype, keep, n_keep};
    NlQuantizeResult r;
    NlModelDesc before = model_desc(model);
    rc = check_requantize(o, &before);
    if (rc == 0) {
        rc = EXIT_DATA;
        if (!keep || (o->keep && !list)) msg_error("out of memory");
        else if (model_folder_create(&d) == 0 && write_folder(&d, input, model, &p, &r) == 0 &&
                 check_stored(o, &r) == 0 && model_folder_put_in_place(&d) == 0)
            rc = 0;
    }
    if (rc != 0) model_folder_discard(&d);
    if (rc == 0) report(o, input, &before, &r);
    free(keep);
    free(list);
    nl_model_free(model);
    return rc;
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec QUANTIZE_OPTIONS[] = {
    OPT_HELP,
    OPT_MODEL,
    {.name = "type",
     .type = OT_CHOICE,
     .arg = "TYPE",
     .def = "q8_0",
     .range = "f32, f16, bf16, q8_0 or q4_0 (any case, as llama-quantize's F16 or Q8_0; the K-quants, "
              "Q4_K_M and the rest, not yet)",
     .field = OPT_FIELD(qtype),
     .choose = choose_dtype,
     .choices = "f32 f16 bf16 q8_0 q4_0",
     .help =
         "how every matrix is stored: f32; f16 or bf16 (16-bit floats); q8_0 or q4_0, ggml's blocks of 32 "
         "weights with an F16 scale (8.5 and 4.5 bits a weight; a matrix whose rows are not whole blocks stays "
         "f32, and a note says so; a model with none is refused). Norm gains, biases and wpe stay f32. From a model "
         "stored otherwise, f32 writes its weights widened, as the engine reads them; a model with q8_0 or q4_0 "
         "matrices is quantized again only with --allow-requantize"},
    OPT_OUTPUT_FOLDER,
    {.name = "keep",
     .type = OT_STRING,
     .arg = "NAME,...",
     .field = OPT_FIELD(keep),
     .help = "matrices kept f32, by their tensor's name as 'normlab info' lists them (wte.weight, "
             "h.0.mlp.c_fc.weight, ...), comma-separated"},
    {.name = "allow-requantize",
     .type = OT_FLAG,
     .value = 1,
     .field = OPT_FIELD(allow_requantize),
     .help = "quantize a model whose matrices are already q8_0 or q4_0 (llama-quantize's flag): the new type "
             "rounds the old one's rounding, so its error is at least the old type's"},
    OPT_NO_MMAP,
    OPT_END,
};
