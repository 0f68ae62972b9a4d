// cmd_info.c — info (one model) and list (every model found by name).
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
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
#include "process.h"
#include "option_rows.h"

// Whether s is a number as JSON writes one (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?): such
// metadata values go into info's JSON as numbers, digit for digit; any other ("007", "1e", a hash)
// stays a string.
static int is_json_number(const char *s) {
    if (*s == '-') s++;
    if (*s == '0') s++;
    else if (*s >= '1' && *s <= '9') s += strspn(s, "0123456789");
    else return 0;
    if (*s == '.') {
        if (!isdigit((unsigned char)s[1])) return 0;
        s += 1 + strspn(s + 1, "0123456789");
    }
    if (*s == 'e' || *s == 'E') {
        s += s[1] == '+' || s[1] == '-' ? 2 : 1;
        if (!isdigit((unsigned char)*s)) return 0;
        s += strspn(s, "0123456789");
    }
    return *s == '\0';
}

// "q8_0 17, f32 1": how many of the model's matrices each type stores, the most first, into buf.
static const char *type_counts(const NlModelDesc *d, char *buf, size_t len) {
    size_t count[NL_DTYPE_COUNT] = {0}, at = 0;
    for (size_t i = 0; i < d->n_matrices; i++) count[d->matrices[i].type]++;
    buf[0] = '\0';
    for (size_t shown = 0; shown < d->n_matrices && at < len;) {
        int most = 0;
        for (int t = 1; t < NL_DTYPE_COUNT; t++) most = count[t] > count[most] ? t : most;
        at += (size_t)snprintf(buf + at, len - at, "%s%s %zu", at ? ", " : "", nl_name(NL_NAMES_DTYPE, most),
                               count[most]);
        shown += count[most];
        count[most] = 0;
    }
    return buf;
}

static cJSON *info_json(const NlModel *m, NlQuant q, unsigned classes, const char *path, const BlasChoice *b) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", path);
    NlModelDesc d = model_desc(m);
    const NlFamilyInfo *fam = d.family;
    cJSON_AddStringToObject(j, "arch", fam->name);
    cJSON_AddNumberToObject(j, "vocab_size", d.vocab_size);
    cJSON_AddStringToObject(
        j, "tokenizer",
        nl_name(NL_NAMES_TOKENIZER,
                nl_tokenizer_info(nl_model_tokenizer(m)).kind));  // "char", "bpe" or "sentencepiece"
    cJSON_AddNumberToObject(j, "tokenizer_size", nl_tokenizer_size(nl_model_tokenizer(m)));
    int padding = nl_tokenizer_info(nl_model_tokenizer(m)).padding;  // (Qwen's rows past its tokens)
    if (padding) cJSON_AddNumberToObject(j, "tokenizer_padding", padding);
    cJSON_AddNumberToObject(j, "n_layer", d.n_layer);
    const NlConfigField *f = d.fields;  // the family's own fields
    for (size_t i = 0; i < d.n_fields; i++) {
        if (f[i].type == NL_FIELD_STRING) cJSON_AddStringToObject(j, f[i].key, f[i].string);
        else if (f[i].type == NL_FIELD_BOOL) cJSON_AddBoolToObject(j, f[i].key, f[i].number != 0);
        else cJSON_AddNumberToObject(j, f[i].key, f[i].number);
    }
    cJSON_AddNumberToObject(j, "parameters", (double)d.parameters);
    cJSON_AddNumberToObject(j, "weight_bytes", (double)d.weight_bytes);
    // as stored: 32 for float32, about 16.5 for F16, 8.5 for Q8_0 and 4.5 for Q4_0 (norms, wpe: float32)
    char bits[32], types[128];
    snprintf(bits, sizeof bits, "%.2f", d.parameters ? 8.0 * (double)d.weight_bytes / (double)d.parameters : 0.0);
    cJSON_AddRawToObject(j, "bits_per_weight", bits);
    cJSON_AddStringToObject(j, "weight_types", type_counts(&d, types, sizeof types));
    // copies of small weights, transposed, which few-row products run faster on (linear.h)
    cJSON_AddNumberToObject(j, "transposed_bytes", (double)d.transposed_bytes);
    if (q != NL_QUANT_NONE) {  // --quantize: what the load rounded (simulated, docs/lab.md)
        char list[64];
        cJSON_AddStringToObject(j, "quantize", nl_quant_name(q));
        cJSON_AddStringToObject(j, "quantized", nl_quant_classes_name(classes, list, sizeof list));
    }
    // per sequence: a transformer's KV cache, a recurrent model's state vectors of every layer
    cJSON_AddNumberToObject(j, fam->state_bytes_key, (double)d.state_bytes);
    cJSON_AddStringToObject(j, "blas_core", nl_blas_core());
    cJSON_AddStringToObject(j, "blas_core_source", b->source);
    cJSON_AddStringToObject(j, "blas_core_openblas", b->reported);  // what OpenBLAS picked by itself
    cJSON_AddNumberToObject(j, "cpus", available_cpus());
    const char *const *keys = d.metadata_keys, *const *values = d.metadata_values;
    cJSON *meta = cJSON_AddObjectToObject(j, "metadata");
    for (size_t i = 0; i < d.n_metadata; i++)
        cJSON_AddItemToObject(meta, keys[i],
                              is_json_number(values[i]) ? cJSON_CreateRaw(values[i]) : cJSON_CreateString(values[i]));
    cJSON *mats = cJSON_AddArrayToObject(j, "matrices");  // each as stored: name, type, shape, bytes
    for (size_t i = 0; i < d.n_matrices; i++) {
        const NlMatrixDesc *mat = &d.matrices[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", mat->name);
        cJSON_AddStringToObject(e, "type", nl_name(NL_NAMES_DTYPE, mat->type));
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)mat->rows));
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)mat->cols));
        cJSON_AddNumberToObject(e, "bytes", (double)mat->bytes);
        cJSON_AddItemToArray(mats, e);
    }
    return j;
}

// "matrix NAME TYPE ROWSxCOLS BYTES", a line each.
static int print_matrices(FILE *out, const cJSON *mats) {
    int ok = 1;
    for (const cJSON *e = mats->child; e && ok; e = e->next) {
        const cJSON *shape = cJSON_GetObjectItem(e, "shape");
        char dims[48], name[256];
        snprintf(dims, sizeof dims, "(%.0f, %.0f)", cJSON_GetArrayItem(shape, 0)->valuedouble,
                 cJSON_GetArrayItem(shape, 1)->valuedouble);
        ok = fprintf(out, "matrix %-30s %-5s %-14s %10.0f bytes\n",
                     msg_escape(name, sizeof name, cJSON_GetObjectItem(e, "name")->valuestring),
                     cJSON_GetObjectItem(e, "type")->valuestring, dims,
                     cJSON_GetObjectItem(e, "bytes")->valuedouble) > 0;
    }
    return ok;
}

static int print_info_text(FILE *out, const cJSON *j) {
    int ok = 1;
    for (const cJSON *c = j->child; c; c = c->next) {
        if (cJSON_IsArray(c)) ok &= print_matrices(out, c);
        else if (cJSON_IsObject(c)) {  // the provenance: strings from the model file, escaped
            for (const cJSON *m = c->child; m; m = m->next) {
                char key[256], value[1024];
                msg_escape(key, sizeof key, m->string);
                ok &= fprintf(out, "%s.%-*s %s\n", c->string, (int)(19 - strlen(c->string)), key,
                              msg_escape(value, sizeof value, m->valuestring)) > 0;
            }
        } else if (cJSON_IsString(c)) {
            char value[1024];
            ok &= fprintf(out, "%-20s %s\n", c->string, msg_escape(value, sizeof value, c->valuestring)) > 0;
        } else if (cJSON_IsBool(c)) ok &= fprintf(out, "%-20s %s\n", c->string, cJSON_IsTrue(c) ? "true" : "false") > 0;
        else if (cJSON_IsRaw(c)) ok &= fprintf(out, "%-20s %s\n", c->string, c->valuestring) > 0;
        else ok &= fprintf(out, "%-20s %.10g\n", c->string, c->valuedouble) > 0;
    }
    return ok;
}

// Writes j (consumed) to the main output, as JSON or as text.
static int write_result(const Options *o, cJSON *j, int (*text)(FILE *, const cJSON *)) {
    OutFile out = {0};
    const char *outs[1] = {o->output};
    int rc = o->output ? check_outputs(o, outs, 1) : 0;
    if (!rc) rc = open_main_output(o, &out);
    if (!rc) {
        int ok;
        if (o->json) {
            char *s = nl_jsonx_print(j, 0);
            ok = s && fprintf(out.f, "%s\n", s) > 0;
            free(s);
        } else {
            ok = text(out.f, j);
        }
        if (!ok || fflush(out.f) == EOF) {
            msg_error("cannot write %s: %s", o->output ? o->output : "to stdout", strerror(errno));
            rc = EXIT_DATA;
        }
    }
    if (out_finish(&out, rc == 0) != 0) rc = EXIT_DATA;
    cJSON_Delete(j);
    return rc;
}

int cmd_info(Options *o) {
    NlModel *model = NULL;
    const char *outs[1] = {o->output};
    int rc = o->output ? check_outputs(o, outs, 1) : 0;
    unsigned rounded = 0;
    // no weight read, unless --quantize rounds them (and then they are checked as a run's are)
    if (!rc) rc = load_model_as(o, &model, &rounded, o->quantize == NL_QUANT_NONE && !o->check_weights);
    if (rc) return rc;
    char buf[4400];
    rc = write_result(o, info_json(model, (NlQuant)o->quantize, rounded, model_path(o, buf, sizeof buf), &o->blas),
                      print_info_text);
    nl_model_free(model);
    return rc;
}

// ---- list

// The list's "place" column: a transformer's placement, a recurrent model's arch.
static const char *place_or_arch(const cJSON *m) {
    const cJSON *p = cJSON_GetObjectItem(m, "placement");
    return cJSON_IsString(p) ? p->valuestring : cJSON_GetObjectItem(m, "arch")->valuestring;
}

// The loss column: the validation loss stored with the model, in bits per character (the unit of
// `normlab eval` and the README's table), and whose estimate it is (train.py's or nanoGPT's, on
// sampled batches; `normlab eval` scores a whole text).
static int print_list_text(FILE *out, const cJSON *j) {
    int ok = fprintf(out, "%-24s %-10s %-5s %10s  %-23s  %s\n", "name", "norm", "place", "params",
                     "est. val bits/char (by)", "path") > 0;
    for (const cJSON *m = j->child; m && ok; m = m->next) {
        const cJSON *loss = cJSON_GetObjectItem(m, "val_loss"), *by = cJSON_GetObjectItem(m, "val_loss_by");
        char l[48] = "-";
        const cJSON *folded = cJSON_GetObjectItem(m, "folded");
        if (cJSON_IsNumber(loss))
            snprintf(l, sizeof l, "%.4f (%s%s)", loss->valuedouble / M_LN2, by->valuestring, folded ? ", fold" : "");
        else if (cJSON_IsString(folded) && strstr(folded->valuestring, "forced")) snprintf(l, sizeof l, "- (forced)");
        const cJSON *err = cJSON_GetObjectItem(m, "error");
        char name[256], path[1024];  // file names: escaped like every message
        msg_escape(name, sizeof name, cJSON_GetObjectItem(m, "name")->valuestring);
        msg_escape(path, sizeof path, cJSON_GetObjectItem(m, "path")->valuestring);
        ok = fprintf(out, "%-24s %-10s %-5s %10.0f  %-23s  %s%s%s\n", name,
                     err ? "-" : cJSON_GetObjectItem(m, "norm")->valuestring, err ? "-" : place_or_arch(m),
                     err ? 0.0 : cJSON_GetObjectItem(m, "parameters")->valuedouble, l, path,
                     cJSON_IsTrue(cJSON_GetObjectItem(m, "shadowed")) ? " (shadowed)" : "",
                     err ? " (does not load)" : "") > 0;
    }
    return ok;
}

// The text stored under key in the model's metadata; NULL when there is none.
static const char *metadata_text(const NlModel *model, const char *key) {
    NlModelDesc d;
    nl_model_describe(model, &d);
    for (size_t i = 0; i < d.n_metadata; i++)
        if (strcmp(d.metadata_keys[i], key) == 0) return d.metadata_values[i];
    return NULL;
}

// The number stored under key in the model's metadata; NAN when there is none.
static double metadata_number(const NlModel *model, const char *key) {
    NlModelDesc d;
    nl_model_describe(model, &d);
    const char *const *keys = d.metadata_keys, *const *values = d.metadata_values;
    for (size_t i = 0; i < d.n_metadata; i++) {
        if (strcmp(keys[i], key) != 0) continue;
        char *end;
        double v = strtod(values[i], &end);
        if (end != values[i] && *end == '\0' && isfinite(v)) return v;
    }
    return NAN;
}

// The validation loss stored in the model's metadata, in nats per character: train.py's
// final_val_loss, else nanoGPT's best_val_loss (a model may carry both), each only when it is a
// number, with *by naming whose estimate it is; NAN when neither is. A BPE model's is per token:
// converted by the validation split's tokens per character (train.py stores both counts), else NAN.
static double stored_val_loss(const NlModel *model, const char **by) {
    static const char *const KEYS[2] = {"final_val_loss", "best_val_loss"}, *const BY[2] = {"train.py", "nanoGPT"};
    int bpe = nl_tokenizer_info(nl_model_tokenizer(model)).kind != NL_TOKENIZER_CHAR;
    double per_char = bpe ? metadata_number(model, "val_tokens") / metadata_number(model, "val_chars") : 1.0;
    for (int k = 0; k < 2; k++) {
        double v = metadata_number(model, KEYS[k]) * per_char;
        *by = BY[k];
        if (isfinite(v)) return v;
    }
    return NAN;
}

// One entry of `list`: the model e names.
static cJSON *list_entry(const Options *o, const ModelEntry *e) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", e->name);
    cJSON_AddStringToObject(m, "path", e->path);
    NlModel *model = NULL;
    NlError err;
    NlLoadOptions lo = {.no_mmap = o->no_mmap, .no_repack = o->no_repack, .shapes_only = 1};  // no weight read
    if (nl_model_load(&model, e->path, &lo, &err) != 0) {
        cJSON_AddStringToObject(m, "error", err.msg);
    } else {
        NlModelDesc d = model_desc(model);
        cJSON_AddStringToObject(m, "norm", nl_name(NL_NAMES_NORM, d.norm));
        cJSON_AddStringToObject(m, "arch", nl_name(NL_NAMES_ARCH, d.arch));
        if (d.family->has_placement) cJSON_AddStringToObject(m, "placement", nl_name(NL_NAMES_PLACEMENT, d.placement));
        else cJSON_AddNullToObject(m, "placement");  // a family with none: the text shows its arch
        cJSON_AddNumberToObject(m, "parameters", (double)d.parameters);
        const char *by = NULL, *folded = metadata_text(model, "folded");
        double loss = stored_val_loss(model, &by);
        if (folded) cJSON_AddStringToObject(m, "folded", folded);  // normlab fold's tag
        // A centering forced where it is not exact made another model: the loss its training stored is
        // not this one's (an exact fold computes the same function, and keeps it).
        if (folded && strstr(folded, "forced")) loss = NAN;
        if (!isnan(loss)) {
            cJSON_AddNumberToObject(m, "val_loss", loss);
            cJSON_AddStringToObject(m, "val_loss_by", by);  // whose estimate: "train.py" or "nanoGPT"
        }
        nl_model_free(model);
    }
    cJSON_AddBoolToObject(m, "shadowed", e->shadowed);
    return m;
}

int cmd_list(Options *o) {
    ModelEntry *e = NULL;
    size_t n = 0;
    cJSON *all = cJSON_CreateArray();
    if (model_entries(&e, &n) != 0 || !all) {
        msg_error("out of memory listing the models");
        model_entries_free(e, n);
        cJSON_Delete(all);
        return EXIT_DATA;
    }
    size_t shown = 0;  // with -m NAME: the entries of that name only
    for (size_t i = 0; i < n; i++)
        if (!o->model || strcmp(e[i].name, o->model) == 0) {
            cJSON_AddItemToArray(all, list_entry(o, &e[i]));
            shown++;
        }
    model_entries_free(e, n);
    if (o->model && !shown) {
        msg_error("%s: no model of that name in the search path ('normlab list' shows them)", o->model);
        cJSON_Delete(all);
        return EXIT_DATA;
    }
    return write_result(o, all, print_list_text);
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec INFO_OPTIONS[] = {
    OPT_HELP,
    OPT_MODEL,
    {.name = "json", .type = OT_FLAG, .field = OPT_FIELD(json), .value = 1, .help = "one JSON object"},
    {.name = "check-weights",
     .type = OT_FLAG,
     .field = OPT_FIELD(check_weights),
     .value = 1,
     .help = "also read every weight and refuse a non-finite one, as the commands that run a model do (info "
             "alone reads the files' headers and shapes only; the Python tools check what they write with it)"},
    OPT_OUTPUT,
    OPT_QUANTIZE,
    OPT_QUANTIZE_ONLY,
    OPT_NO_MMAP,
    OPT_NO_REPACK,
    OPT_END,
};

const OptSpec LIST_OPTIONS[] = {
    OPT_HELP,
    {.name = "model",
     .letter = 'm',
     .type = OT_STRING,
     .arg = "NAME",
     .field = OPT_FIELD(model),
     .help = "only the models of that name: the one -m NAME loads and those it shadows"},
    {.name = "json",
     .type = OT_FLAG,
     .field = OPT_FIELD(json),
     .value = 1,
     .help = "a JSON array of {name, path, norm, arch, placement, parameters, val_loss (nats/char), val_loss_by "
             "(\"train.py\" or \"nanoGPT\"), shadowed} (val_loss and val_loss_by only when stored; {name, path, "
             "error, shadowed} for a model that does not load)"},
    OPT_OUTPUT,
    OPT_NO_MMAP,
    OPT_NO_REPACK,
    OPT_END,
};

const OptRelation INFO_RELATIONS[] = {QUANTIZE_ONLY(quantize), REL_END};
