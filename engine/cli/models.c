// models.c — finding models: the search path, -m NAME resolved, every model `list` shows, and a
// model loaded (and with --quantize rounded) as the options ask; what a loaded model is, in words.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "distance.h"
#include "models.h"
#include "process.h"

char *model_search_path(void) {
    char weights[PATH_MAX + 64], share[PATH_MAX + 64], *path = NULL;
    const char *env = getenv("NORMLAB_MODELS");
    const char *w = beside_binary("weights", weights, sizeof weights);
    const char *sh = beside_binary("share/normlab/models", share, sizeof share);
    int has_env = env && *env;
    if (asprintf(&path, "%s%s%s%s%s", has_env ? env : "", has_env && w ? ":" : "", w ? w : "",
                 (has_env || w) && sh ? ":" : "", sh ? sh : "") < 0)
        return NULL;
    return path;
}

// Whether `entry` of search folder dir is a model as `list` shows it and -m NAME finds it: a folder
// with a config.json, or a .json file, its name not starting with '.'. 1 with *path (a new string),
// 0 not, -1 out of memory. A path too long for the system to tell counts as a model, so that loading
// it names the problem: skipping it could load another folder's model of that name instead.
static int model_entry(const char *dir, const char *entry, char **path) {
    size_t d = strlen(dir), n = strlen(entry);
    *path = NULL;
    if (n == 0 || entry[0] == '.') return 0;
    char *p = malloc(d + n + sizeof "//config.json");
    if (!p) return -1;
    sprintf(p, "%s/%s/config.json", dir, entry);
    if (n > 5 && strcmp(entry + n - 5, ".json") == 0) p[d + 1 + n] = '\0';  // the .json file itself
    struct stat st;
    int found = stat(p, &st) == 0 || errno == ENAMETOOLONG;
    p[d + 1 + n] = '\0';
    if (!found) free(p);
    else *path = p;
    return found;
}

// The path -m NAME names (docs/usage.md): a name with a '/' is that path; a bare name is
// the search path's first model of that name (NAME, then NAME.json, in each folder), or else, when
// the user gave the name (given), what the working folder has under that name: the default model is
// never looked for there. 0 with *path (a new string), 1 found nowhere, -1 out of memory.
static int find_model(const char *name, int given, char **path) {
    *path = NULL;
    if (strchr(name, '/')) return (*path = strdup(name)) ? 0 : -1;
    char *search = model_search_path(), *json = NULL, *save = NULL;
    int got = search && asprintf(&json, "%s.json", name) >= 0 ? 0 : -1;
    if (got < 0) json = NULL;
    for (char *dir = got ? NULL : strtok_r(search, ":", &save); dir && !got; dir = strtok_r(NULL, ":", &save)) {
        got = model_entry(dir, name, path);
        if (!got) got = model_entry(dir, json, path);
    }
    free(search);
    free(json);
    if (got) return got > 0 ? 0 : -1;
    struct stat st;
    if (!given || (stat(name, &st) != 0 && errno == ENOENT))
        return 1;  // other failures (a name too long) are the loader's
    return (*path = strdup(name)) ? 0 : -1;
}

// find_model's path copied into buf; NULL when it found none or it does not fit.
static const char *resolve(const char *name, int given, char *buf, size_t len) {
    char *path = NULL;
    const char *out = NULL;
    if (find_model(name, given, &path) == 0 && strlen(path) < len) out = memcpy(buf, path, strlen(path) + 1);
    free(path);
    return out;
}

const char *resolve_model(const char *name, char *buf, size_t len) { return resolve(name, 1, buf, len); }

// Whether the user named the model (-m or $NORMLAB_MODEL) rather than left the default.
static int model_given(const Options *o) {
    const char *env = getenv("NORMLAB_MODEL");
    return o->model || (env && *env);
}

// -m, else $NORMLAB_MODEL, else shakespeare-pre-ln by name.
static const char *model_name(const Options *o) {
    return o->model ? o->model : model_given(o) ? getenv("NORMLAB_MODEL") : DEFAULT_MODEL;
}

const char *model_path(const Options *o, char *buf, size_t len) {
    const char *path = resolve(model_name(o), model_given(o), buf, len);
    return path ? path : model_name(o);
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

// Appends the model at path (consumed) to the n entries of *e, with room for *cap.
static int add_entry(ModelEntry **e, size_t *n, size_t *cap, const char *entry, char *path) {
    if (*n == *cap) {
        ModelEntry *bigger = realloc(*e, (*cap ? 2 * *cap : 64) * sizeof **e);
        if (!bigger) {
            free(path);
            return -1;
        }
        *e = bigger;
        *cap = *cap ? 2 * *cap : 64;
    }
    size_t len = strlen(entry);
    ModelEntry *m = &(*e)[*n];
    *m = (ModelEntry){strndup(entry, len > 5 && strcmp(entry + len - 5, ".json") == 0 ? len - 5 : len), path, 0};
    if (!m->name) {
        free(path);
        return -1;
    }
    for (size_t i = 0; i < *n && !m->shadowed; i++) m->shadowed = strcmp((*e)[i].name, m->name) == 0;
    ++*n;
    return 0;
}

// Appends search folder dir's models to the n entries of *e, in name order.
static int folder_entries(const char *dir, ModelEntry **e, size_t *n, size_t *cap) {
    struct dirent **names = NULL;
    int count = scandir(dir, &names, NULL, by_name), rc = 0;  // as many as there are: no cap
    for (int i = 0; i < count; i++) {
        char *path = NULL;
        int got = rc ? 0 : model_entry(dir, names[i]->d_name, &path);
        rc = got < 0 ? -1 : got ? add_entry(e, n, cap, names[i]->d_name, path) : rc;
        free(names[i]);
    }
    free(names);
    return rc;
}

int model_entries(ModelEntry **e, size_t *n) {
    char *search = model_search_path(), *save = NULL;
    size_t cap = 0;
    int rc = search ? 0 : -1;
    *e = NULL;
    *n = 0;
    for (char *dir = rc ? NULL : strtok_r(search, ":", &save); dir && !rc; dir = strtok_r(NULL, ":", &save))
        rc = folder_entries(dir, e, n, &cap);
    free(search);
    return rc;
}

void model_entries_free(ModelEntry *e, size_t n) {
    for (size_t i = 0; e && i < n; i++) {
        free(e[i].name);
        free(e[i].path);
    }
    free(e);
}

// "no such model": a did-you-mean when a name -m takes is within a third of the name's length (or
// starts with it), the count of the others ('normlab list' names them) and the folders searched.
static int no_such_model(const char *from_env, const char *name) {
    ModelEntry *e = NULL;
    size_t n = 0, found = 0, best_d = 2 + strlen(name) / 3;
    const char *best = NULL;
    int rc = model_entries(&e, &n);
    char *search = model_search_path(), hint[300] = "";
    for (size_t i = 0; !rc && i < n; i++) {
        if (e[i].shadowed) continue;
        found++;
        size_t d = *name && strncmp(e[i].name, name, strlen(name)) == 0 ? 1 : edit_distance(name, e[i].name);
        if (d < best_d) best_d = d, best = e[i].name;
    }
    if (best) snprintf(hint, sizeof hint, "did you mean '%s'? ", best);
    msg_error("%s%s: no such model (%s%zu model%s found: 'normlab list' shows them; searched %s)", from_env, name, hint,
              found, plural(found),
              !search   ? "(out of memory)"
              : *search ? search
                        : "no folder: no weights/ beside the binary, no installed models, no $NORMLAB_MODELS");
    model_entries_free(e, n);
    free(search);
    return EXIT_DATA;
}

// With --quantize, rounds the model's matrices in place (the lab's nl_quantize_model); *rounded
// (may be NULL) gets the classes rounded.
static int quantize_loaded(const Options *o, const char *path, NlModel *model, unsigned *rounded) {
    unsigned classes = 0;
    NlError err;
    if (rounded) *rounded = 0;
    if (o->quantize == NL_QUANT_NONE) return 0;
    if (nl_quantize_model(model, (NlQuant)o->quantize, (unsigned)o->quantize_only, &classes, &err) != 0) {
        msg_error("%s: %s", path, err.msg);
        return EXIT_DATA;
    }
    if (rounded) *rounded = classes;
    return 0;
}

int load_model(const Options *o, NlModel **model) { return load_model_as(o, model, NULL, 0); }

int load_model_rounded(const Options *o, NlModel **model, unsigned *rounded) {
    return load_model_as(o, model, rounded, 0);
}

int load_model_as(const Options *o, NlModel **model, unsigned *rounded, int shapes_only) {
    const char *env = getenv("NORMLAB_MODEL"), *name = model_name(o);
    const char *from_env = !o->model && env && *env ? "NORMLAB_MODEL=" : "";
    char *path = NULL;
    int found = find_model(name, model_given(o), &path), rc = 0;
    struct stat st;
    if (found < 0) msg_error("out of memory");
    if (found) return found > 0 ? no_such_model(from_env, name) : EXIT_DATA;
    if (stat(path, &st) != 0 && errno == ENOENT) {
        msg_error("%s%s: no such model (no file or folder at that path)", from_env, path);
        rc = EXIT_DATA;
    } else {
        NlError err;
        NlLoadOptions lo = {.no_mmap = o->no_mmap, .no_repack = o->no_repack, .shapes_only = shapes_only};
        if (nl_model_load(model, path, &lo, &err) != 0) rc = fail(&err);
        else if ((rc = quantize_loaded(o, path, *model, rounded)) != 0) {
            nl_model_free(*model);
            *model = NULL;
        }
    }
    free(path);
    return rc;
}

NlModelDesc model_desc(const NlModel *model) {
    NlModelDesc d;
    nl_model_describe(model, &d);
    return d;
}

double desc_number(const NlModelDesc *d, const char *key, double absent) {
    for (size_t i = 0; i < d->n_fields; i++)
        if (strcmp(d->fields[i].key, key) == 0) return d->fields[i].number;
    return absent;
}

size_t model_context(const NlModel *model) { return model_desc(model).window; }
const char *token_unit(const NlModel *model) {
    return nl_tokenizer_info(nl_model_tokenizer(model)).kind == NL_TOKENIZER_CHAR ? "character" : "token";
}

EndTokens model_end_tokens(const Options *o, const NlModel *model) {
    NlTokenizerInfo info = nl_tokenizer_info(nl_model_tokenizer(model));
    return o->ignore_eos ? (EndTokens){-1, -1} : (EndTokens){info.eos, info.bos};
}

size_t model_keep(const NlModel *model, const int *ids, size_t n) {
    int bos = nl_tokenizer_info(nl_model_tokenizer(model)).bos;
    return n && bos >= 0 && ids[0] == bos;
}

int model_windowed(const NlModel *model) { return model_desc(model).family->windowed; }

int run_qk_norm(const NlModelDesc *d, int qk_option) {
    if (!d->family->qk_norm) return -1;
    return qk_option == NL_QK_NORM_AS_CONFIGURED ? desc_number(d, "qk_norm", 0) != 0 : qk_option == NL_QK_NORM_ON;
}

const char *run_name(char *buf, size_t size, NlArch arch, NlNormType norm, NlPlacement placement, int qk) {
    if (!nl_family_info(arch)->has_placement)
        snprintf(buf, size, "%s/%s", nl_name(NL_NAMES_ARCH, arch), nl_name(NL_NAMES_NORM, norm));
    else
        snprintf(buf, size, "%s/%s%s", nl_name(NL_NAMES_NORM, norm), nl_name(NL_NAMES_PLACEMENT, placement),
                 qk < 0 ? ""
                 : qk   ? "+qk"
                        : "-qk");
    return buf;
}

const char *rounding_text(const Options *o, char *buf, size_t cap) {
    char classes[96] = "", only[104] = "";
    if (!o->quantize && !o->quantize_act) return NULL;
    if (o->quantize && o->quantize_only)
        snprintf(only, sizeof only, " (%s)",
                 nl_quant_classes_name((unsigned)o->quantize_only, classes, sizeof classes));
    snprintf(buf, cap, "%s%s%s%s%s%s", o->quantize ? "weights " : "",
             o->quantize ? nl_quant_name((NlQuant)o->quantize) : "", only, o->quantize && o->quantize_act ? ", " : "",
             o->quantize_act ? "activations " : "", o->quantize_act ? nl_quant_name((NlQuant)o->quantize_act) : "");
    return buf;
}
