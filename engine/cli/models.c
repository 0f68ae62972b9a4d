// common.c — the steps every command takes: find and load a model, make run states, read and
// encode a text or prompt, check the outputs, and small shared helpers.
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <sched.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/wait.h>

#include "cli.h"

// The one place a library error becomes an exit status: an argument the caller could have checked is
// a usage error (2); files, data, memory and numbers are runtime or data errors (1).
int exit_code(const NlError *err) { return err->code == NL_ERR_ARG ? EXIT_USAGE : EXIT_DATA; }

// Prints a library error as one line and returns its exit status.
int fail(const NlError *err) {
    msg_error("%s", err->msg);
    return exit_code(err);
}

const char *plural(size_t n) { return n == 1 ? "" : "s"; }

// Flushes stdout; EXIT_DATA, with the reason on stderr, when anything written to it failed.
int check_stdout(int ok) {
    if (ok && fflush(stdout) != EOF) return 0;
    msg_error("cannot write to stdout: %s", strerror(errno ? errno : EIO));
    return EXIT_DATA;
}

int stdout_closed(void) {
    msg_error("cannot write to standard output: it is closed");
    return EXIT_DATA;
}

static int is_stdio(const char *path) { return path && strcmp(path, "-") == 0; }

// coreutils' rule: a stream closed by the caller is an error to use, not an empty one (main.c put
// /dev/null there only so that no file opened later lands on its descriptor).
int check_std_streams(const Options *o) {
    int to_stdout = !o->output || is_stdio(o->output) || is_stdio(o->trace_out) || is_stdio(o->csv_out);
    if ((o->closed_std & CLOSED_STDOUT) && to_stdout) return stdout_closed();
    if ((o->closed_std & CLOSED_STDIN) && (is_stdio(o->prompt_file) || is_stdio(o->text_file))) {
        msg_error("-: cannot read standard input: it is closed");
        return EXIT_DATA;
    }
    return 0;
}

// The CPUs this process may run on (sched_getaffinity), at least 1.
int available_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

// Finds `rel` (a path inside the repository) beside the running binary, or one or two folders up
// (the sanitizer build lives in build/san/); NULL where none has it. Never the working folder's: what
// normlab finds must not depend on where it is run from.
// buf holds more than PATH_MAX + strlen(rel) bytes, so that no candidate is ever cut.
const char *beside_binary(const char *rel, char *buf, size_t len) {
    char exe[PATH_MAX];
    assert(len > sizeof exe + strlen(rel));
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || n == (ssize_t)sizeof exe - 1) return NULL;  // (a link that long may have been cut)
    exe[n] = '\0';
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash) break;
        *slash = '\0';
        snprintf(buf, len, "%s/%s", exe, rel);
        if (access(buf, F_OK) == 0) return buf;
    }
    return NULL;
}

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
        if (nl_model_load_with(model, path, &lo, &err) != 0) rc = fail(&err);
        else if ((rc = quantize_loaded(o, path, *model, rounded)) != 0) {
            nl_model_free(*model);
            *model = NULL;
        }
    }
    free(path);
    return rc;
}

// Creates a run state of `batch` sequences, each product's rows split over product_threads threads
// (NlRunOptions.threads); with warn, says so when the norm or placement differ from the model's training.
int make_state_as(const Options *o, const NlModel *model, int batch, int product_threads, int warn, NlState **state) {
    const NlConfig *c = nl_model_config(model);
    NlRunOptions run = {.norm = o->norm >= 0 ? (NlNormType)o->norm : c->norm,
                        .placement = o->placement >= 0 ? (NlPlacement)o->placement : c->placement,
                        .batch = batch,
                        .threads = product_threads,
                        .bn_stats = (NlBnStats)o->bn_stats,
                        .linear_input = nl_quant_input_hook((NlQuant)o->quantize_act)};
    // (o->norm < 0: not given; the state could take NL_NORM_AS_CONFIGURED, but the warning below
    // compares the two, so the model's own values are filled in here.)
    NlError err;
    if (nl_state_create(state, model, &run, &err) != 0) {
        if (err.code != NL_ERR_ARG) return fail(&err);
        // an override this model cannot run (BatchNorm's running statistics it lacks, a recurrent model's norm)
        int bn = (nl_family_info(c->arch)->norms & 1u << NL_NORM_BATCHNORM) != 0;
        msg_usage(o->cmd, "%s%s", err.msg, bn ? " (--bn-stats batch)" : "");
        return EXIT_USAGE;
    }
    char trained[64], as_run[64];
    if (warn && (run.norm != c->norm || run.placement != c->placement))
        msg_error("warning: the model was trained as %s; running it as %s",
                  run_name(trained, sizeof trained, c, c->norm, c->placement),
                  run_name(as_run, sizeof as_run, c, run.norm, run.placement));
    if (warn && run.bn_stats == NL_BN_BATCH && run.norm != NL_NORM_BATCHNORM)
        msg_error("warning: --bn-stats batch has no effect: the model runs as %s", nl_config_norm_name(run.norm));
    return 0;
}

size_t model_context(const NlModel *model) { return nl_model_window(model); }
const char *token_unit(const NlModel *model) {
    return nl_tokenizer_kind(nl_model_tokenizer(model)) == NL_TOKENIZER_CHAR ? "character" : "token";
}

int model_windowed(const NlModel *model) { return nl_family_info(nl_model_config(model)->arch)->windowed; }

const char *run_name(char *buf, size_t size, const NlConfig *model, NlNormType norm, NlPlacement placement) {
    if (!nl_family_info(model->arch)->has_placement)
        snprintf(buf, size, "%s/%s", nl_config_arch_name(model->arch), nl_config_norm_name(norm));
    else snprintf(buf, size, "%s/%s", nl_config_norm_name(norm), nl_config_placement_name(placement));
    return buf;
}

// Encodes text (len bytes) into a new id array.
int encode_flags(const Options *o) {
    return (o->skip_unknown ? NL_ENCODE_SKIP_UNKNOWN : 0) | (o->special ? NL_ENCODE_SPECIAL : 0);
}

int encode(const NlModel *model, const char *what, const char *text, size_t len, int flags, int **ids, size_t *n,
           size_t *skipped) {
    int skip_unknown = flags & NL_ENCODE_SKIP_UNKNOWN;
    *ids = malloc((len + 1) * sizeof **ids);
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

// Attaches a profiler; with --trace it keeps the events of n_forward forward passes (of a recurrent
// model: of n_forward positions, each of which records per layer).
static int attach_profiler(const Options *o, const NlModel *model, NlState *state, size_t n_forward,
                           NlProfiler **prof) {
    const NlConfig *c = nl_model_config(model);
    // each layer as its family says, and 4 model-level components (6: slack)
    size_t per_forward = o->trace_out ? (size_t)c->n_layer * nl_family_info(c->arch)->trace_events_per_layer + 6 : 0;
    NlError err;
    if (nl_profiler_create(prof, nl_state_config(state), n_forward * per_forward, o->counters, &err) != 0) {
        return fail(&err);
    }
    nl_state_set_profiler(state, *prof);
    return 0;
}

int workers_create(Workers *w, const Options *o, const NlModel *model, int n, int batch, int product_threads,
                   int profile, size_t n_forward) {
    w->n = n;
    w->states = calloc((size_t)n, sizeof *w->states);
    w->profs = calloc((size_t)n, sizeof *w->profs);
    if (!w->states || !w->profs) {
        w->n = 0;
        msg_error("out of memory");
        return EXIT_DATA;
    }
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        rc = make_state_as(o, model, batch, product_threads, i == 0, &w->states[i]);
        if (!rc && profile) rc = attach_profiler(o, model, w->states[i], n_forward, &w->profs[i]);
    }
    return rc;
}

NlProfiler *workers_profile(Workers *w) {
    if (w->n < 1 || !w->profs[0]) return NULL;
    for (int i = 1; i < w->n; i++) nl_profiler_merge(w->profs[0], w->profs[i]);
    return w->profs[0];
}

void workers_free(Workers *w) {
    for (int i = 0; i < w->n; i++) {
        nl_state_free(w->states[i]);
        nl_profiler_free(w->profs[i]);
    }
    free(w->states);
    free(w->profs);
    *w = (Workers){0};
}

// The files a command reads: every file of every model named (a directory's three files, or the
// .json file) and the text or prompt file. Returns the count; list holds them (freed by free_list).
static size_t input_files(const Options *o, char ***list) {
    size_t n_models = o->n_models > 0 ? (size_t)o->n_models : 1, n = 0;
    char **l = calloc(3 * n_models + 2, sizeof *l), buf[4400];
    static const char *const FILES[3] = {"config.json", "tokenizer.json", "model.safetensors"};
    for (size_t i = 0; l && i < n_models; i++) {
        const char *m =
            o->n_models == 0 ? model_path(o, buf, sizeof buf) : resolve_model(o->models[i], buf, sizeof buf);
        if (!m) m = o->models[i];  // found nowhere: loading will say so
        struct stat st;
        if (stat(m, &st) == 0 && S_ISDIR(st.st_mode)) {
            for (int f = 0; f < 3; f++)
                if (asprintf(&l[n], "%s/%s", m, FILES[f]) >= 0) n++;
        } else {
            l[n++] = strdup(m);
        }
    }
    if (l && o->text_file) l[n++] = strdup(o->text_file);
    if (l && o->prompt_file) l[n++] = strdup(o->prompt_file);
    *list = l;
    return n;
}

static void free_list(char **l, size_t n) {
    for (size_t i = 0; l && i < n; i++) free(l[i]);
    free(l);
}

// Before any work: no output may be an input or another output, or lie in the shipped models'
// folder, and each must be writable. Usage error (2) naming both paths.
int check_outputs(const Options *o, const char *const *outputs, size_t n_out) {
    char **in = NULL, shipped[4400];
    size_t n_in = input_files(o, &in);
    int rc = out_check_all(o->cmd, outputs, n_out, (const char *const *)in, n_in,
                           beside_binary("weights", shipped, sizeof shipped));
    free_list(in, n_in);
    return rc;
}

uint64_t seed_from_os(void) {
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(&seed, sizeof seed, 1, f) != 1) seed = (uint64_t)getpid() * 0x9E3779B97F4A7C15ULL;
        if (f) fclose(f);
    }
    return seed;
}

static int encodable(const NlModel *model, const char *text) {
    size_t len = strlen(text), n, skipped;
    int *ids = malloc((len + 1) * sizeof *ids);
    NlError err;
    int ok = ids && nl_tokenizer_encode(nl_model_tokenizer(model), text, len, 0, ids, &n, &skipped, &err) == 0;
    free(ids);
    return ok;
}

int prompt_read(const Options *o, char **text, size_t *len) {
    if (o->prompt_file) return read_text(o->prompt_file, text, len);
    *text = strdup(o->prompt ? o->prompt : "");
    *len = *text ? strlen(*text) : 0;
    return *text ? 0 : EXIT_DATA;
}

int prompt_encode(const Options *o, const NlModel *model, const char *what, char **text, size_t *len, int **ids,
                  size_t *n) {
    if (*len == 0) {
        free(*text);
        *text = strdup("\n");
        *len = 1;
        if (!*text) return EXIT_DATA;
    }
    size_t skipped = 0;
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

// Runs argv[0] (a path) with argv, stdout sent to stderr, and waits: no shell. Returns its status.
int spawn_wait(char *const *argv) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
    pid_t pid;
    extern char **environ;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), status = -1;
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Prints text to stdout; 0, or 1 with the reason on stderr when the write fails (stdout /dev/full).
int print_text(const char *text) { return check_stdout(fputs(text, stdout) != EOF); }

int open_main_output(const Options *o, OutFile *out) { return out_open(out, o->output ? o->output : "-"); }

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

#define REPEAT_LAST_N_MAX 1048576  // --repeat-last-n -1 of a model without a window

int make_sampler(const Options *o, const NlModel *model, uint64_t seed, const int *ids, size_t n, NlSampler **out) {
    NlSamplerParams params = o->sampling;
    size_t T = model_context(model);
    NlError err;
    if (params.repeat_last_n < 0) params.repeat_last_n = T < REPEAT_LAST_N_MAX ? (int)T : REPEAT_LAST_N_MAX;
    if (nl_sampler_create(out, nl_model_config(model)->vocab_size, params, seed, &err) != 0) return fail(&err);
    for (size_t i = 0; i < n; i++) nl_sampler_accept(*out, ids[i]);
    return 0;
}
