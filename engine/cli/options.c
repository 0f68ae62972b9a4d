// options.c — the command line's parser, driven by the option rows (each command's, in its cmd_*.c): strict
// numbers, choices without case, long options by any unambiguous prefix after "--" and by their
// exact name after one dash (-temp, -no-echo, as llama.cpp's), and a "did you mean" for near misses.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "distance.h"
#include "escape.h"
#include "models.h"
#include "options.h"

// Only plain decimal text: no leading space or '+', no hex ("0x..."), which strtol/strtod accept.
static int plain_number(const char *s) {
    if (!(*s == '-' || *s == '.' || (*s >= '0' && *s <= '9'))) return 0;
    return strspn(s, "0123456789.eE+-") == strlen(s);
}

static int parse_long(const char *s, long long min, long long max, long long *out) {
    char *end;
    if (!plain_number(s)) return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < min || v > max) return -1;
    *out = v;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    if (*s < '0' || *s > '9') return -1;  // strtoull would accept "-1" and " 1"
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || errno == ERANGE) return -1;
    *out = (uint64_t)v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    char *end;
    if (!plain_number(s)) return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

// A number in the row's range: OPT_ZERO_OK admits 0 below dlo, OPT_MIN_OPEN excludes dlo.
static int double_in_range(const OptSpec *s, double d) {
    if ((s->flags & OPT_ZERO_OK) && d == 0) return 1;
    return ((s->flags & OPT_MIN_OPEN) ? d > s->dlo : d >= s->dlo) && d <= s->dhi;
}

// arg, integers in the row's range, comma-separated, into l; EXIT_USAGE with a line naming the option and
// the bad item ("'x' (item 2 of '8,x') is not one").
static int parse_int_list(const Options *o, const OptSpec *s, const char *arg, IntList *l) {
    l->n = 0;
    for (const char *at = arg;; at++) {
        size_t len = strcspn(at, ",");
        char item[32];
        long long v;
        snprintf(item, sizeof item, "%.*s", (int)(len < 31 ? len : 31), at);
        int ok = len < 31 && l->n < INT_LIST_MAX && item[0] != '-' && parse_long(item, s->lo, s->hi, &v) == 0;
        if (!ok) {
            msg_usage(o->cmd,
                      "--%s must be a list of at most %d integers in [%lld, %lld], comma-separated: '%.*s' (item %d of "
                      "'%s') %s",
                      s->name, INT_LIST_MAX, s->lo, s->hi, (int)len, at, l->n + 1, arg,
                      l->n < INT_LIST_MAX ? "is not one" : "is one too many");
            return EXIT_USAGE;
        }
        l->items[l->n++] = (long)v;
        at += len;
        if (!*at) return 0;
    }
}

// Stores arg by the row s into o; EXIT_USAGE with "NAME must be RANGE, got 'arg'" when it is not one
// of the row's values (shown is the option as given: "-n" or "--steps").
static int apply_option(Options *o, const OptSpec *s, const char *shown, const char *arg) {
    char *base = (char *)o;
    long long v;
    double d;
    int c, bad = 0;
    switch (s->type) {
    case OT_HELP: return -1;
    case OT_FLAG: *(int *)(base + s->field) = s->value; return 0;
    case OT_STRING: *(const char **)(base + s->field) = arg; return 0;
    case OT_MODELS: o->models[o->n_models++] = arg; return 0;
    case OT_LIST: {
        StrList *l = (StrList *)(base + s->field);
        l->items[l->n++] = arg;
        return 0;
    }
    case OT_INT:
        if (!(bad = parse_long(arg, s->lo, s->hi, &v) != 0)) *(int *)(base + s->field) = v > INT_MAX ? INT_MAX : (int)v;
        break;  // (a top-k above V keeps everything anyway)
    case OT_LONG:
        if (!(bad = parse_long(arg, s->lo, s->hi, &v) != 0)) *(long *)(base + s->field) = (long)v;
        break;
    case OT_DOUBLE:
        if (!(bad = parse_double(arg, &d) != 0 || !double_in_range(s, d))) *(double *)(base + s->field) = d;
        break;
    case OT_SEED:  // llama.cpp: -1 means a random seed
        o->has_seed = strcmp(arg, "-1") != 0;
        bad = o->has_seed && parse_u64(arg, &o->seed) != 0;
        break;
    case OT_CHOICE:
        if (!(bad = s->choose(arg, &c) != 0)) *(int *)(base + s->field) = c;
        break;
    case OT_INT_LIST: return parse_int_list(o, s, arg, (IntList *)(base + s->field));
    }
    char words[256];
    if (bad) msg_usage(o->cmd, "%s must be %s, got '%s'", shown, option_range(s, words, sizeof words), arg);
    return bad ? EXIT_USAGE : 0;
}

const char *option_range(const OptSpec *s, char *buf, size_t cap) {
    if (!s->words) return s->range;
    s->words(buf, cap, 1);
    return buf;
}

const char *option_choices(const OptSpec *s, char *buf, size_t cap) {
    if (!s->words) return s->choices;
    s->words(buf, cap, 0);
    return buf;
}

// Whether s[0..len) is name[0..len), '_' standing for '-' (nanoGPT's --max_new_tokens).
static int same_chars(const char *name, const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (name[i] != s[i] && !(name[i] == '-' && s[i] == '_')) return 0;
    return 1;
}

static int same(const char *name, const char *s, size_t len) {
    return name && strlen(name) == len && same_chars(name, s, len);
}

// Whether s[0..len) is one of the space-separated names of list.
static int among(const char *list, const char *s, size_t len) {
    for (const char *at = list; at && *at; at += strspn(at, " ")) {
        size_t n = strcspn(at, " ");
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)n, at);
        if (same(word, s, len)) return 1;
        at += n;
    }
    return 0;
}

const OptSpec *option_find(const Command *cmd, const char *name, size_t len) {
    for (const OptSpec *s = cmd->options; s->name; s++)
        if (same(s->name, name, len) || among(s->alias, name, len)) return s;
    return NULL;
}

static const OptSpec *find_letter(const Command *cmd, char letter) {
    for (const OptSpec *s = cmd->options; s->name; s++)
        if (s->letter == letter) return s;
    return NULL;
}

// The command's rows whose name starts with name[0..len): the one (1), none (0) or several (their
// count, with "--a, --b" in list).
static int prefixed(const Command *cmd, const char *name, size_t len, const OptSpec **one, char *list, size_t cap) {
    int n = 0;
    list[0] = '\0';
    for (const OptSpec *s = cmd->options; s->name && len; s++) {
        if (strlen(s->name) < len || !same_chars(s->name, name, len)) continue;  // (a name: one row a command)
        snprintf(list + strlen(list), cap - strlen(list), "%s--%s", n ? ", " : "", s->name);
        *one = s;
        n++;
    }
    return n;
}

// "unknown option '--tempreature'": with " (did you mean '--temperature'?)": the command's options
// whose names start with the text, else one within 2 edits (or a third of the name).
static void unknown_option(const Command *cmd, const char *given, const char *bare) {
    const char *best = NULL;
    size_t best_d = 3 + strlen(bare) / 3;
    char list[256];
    const OptSpec *one = NULL;
    for (const OptSpec *s = cmd->options; s->name; s++) {
        size_t d = edit_distance(bare, s->name);
        if (d < best_d) {
            best_d = d;
            best = s->name;
        }
    }
    if (prefixed(cmd, bare, strlen(bare), &one, list, sizeof list) > 0)  // the options it starts, first
        msg_usage(cmd->name, "unknown option '%s' (did you mean %s?)", given, list);
    else if (best) msg_usage(cmd->name, "unknown option '%s' (did you mean '--%s'?)", given, best);
    else msg_usage(cmd->name, "unknown option '%s'", given);
}

static int takes_value(const OptSpec *s) { return s->type != OT_HELP && s->type != OT_FLAG; }

// llama.cpp's options that normlab has no counterpart for, with the reason (a plain "unknown" or a
// near-miss hint would mislead: -c is not --counters, -ngl is not -n).
static const struct {
    const char *names;  // space-separated, without dashes
    const char *why;
} FOREIGN[] = {
    {"c ctx-size", "llama.cpp's context size; the context is the model's block_size, fixed by its training ('normlab "
                   "info' shows it)"},
    {"ngl n-gpu-layers gpu-layers", "llama.cpp's GPU layers; normlab runs on the CPU"},
    {"cnv no-cnv conversation", "llama.cpp's chat mode; there is no chat template, and -i continues a text turn after "
                                "turn"},
    {"pg", "llama-bench's pp+tg test; bench runs ppN and tgN tests apart (-p, -n)"},
    {"fa flash-attn", "llama.cpp's flash attention; normlab's decode already attends in one fused pass per query "
                      "(scores, softmax and values), and prefill in tiles"},
    {"device dtype compile", "nanoGPT's: normlab runs float32 on the CPU"},
    {"out-dir init-from", "nanoGPT's: a model is named with -m (a name from 'normlab list', or a folder)"},
    {"sys system-prompt", "llama.cpp's system prompt; there is no chat template: put the whole text in -p"},
    {"grammar grammar-file json-schema", "llama.cpp's constrained sampling (GBNF); normlab samples from the whole "
                                         "vocabulary (--top-k, --top-p, --min-p narrow it)"},
    {"keep", "it is quantize's (matrices kept float32); llama.cpp's --keep, the tokens kept at a context shift, "
             "has no counterpart: generate keeps the bos where the model adds one (n_keep 1), else none, and "
             "drops the older half of the window (docs/usage.md)"},
    {"z", "run.c's tokenizer file; a model folder holds its tokenizer.json (tools/interop/import_llama2c.py "
          "--tokenizer tokenizer.bin writes it)"},
};

// llama.cpp's names for options normlab spells otherwise: the hint names normlab's.
static const struct {
    const char *names, *ours;
} RENAMED[] = {
    {"no-display-prompt", "--no-echo"},
    {"prompt-file", "-f FILE"},
};

static const char *renamed(const char *s, size_t len) {
    for (size_t i = 0; i < sizeof RENAMED / sizeof RENAMED[0]; i++)
        if (among(RENAMED[i].names, s, len)) return RENAMED[i].ours;
    return NULL;
}

// The reason for a foreign option named s[0..len), or NULL.
static const char *foreign(const char *s, size_t len) {
    for (size_t i = 0; i < sizeof FOREIGN / sizeof FOREIGN[0]; i++)
        if (among(FOREIGN[i].names, s, len)) return FOREIGN[i].why;
    return NULL;
}

// Some command's row for a letter, or for a long name (with two dashes, also a prefix that one row
// of all commands' starts): what "does not apply to this command" names.
// Whether a and b are one row (a macro of option_rows.h) in two commands' arrays.
static int same_row(const OptSpec *a, const OptSpec *b) {
    return strcmp(a->name, b->name) == 0 && strcmp(a->help, b->help) == 0;
}

static const OptSpec *any_letter(char letter) {
    const OptSpec *s = NULL;
    for (size_t c = 0; c < N_COMMANDS && !s; c++) s = find_letter(&COMMANDS[c], letter);
    return s;
}

static const OptSpec *any_option(const char *name, size_t len, int two) {
    const OptSpec *s = NULL, *seen[256];  // (the rows prefixed so far: a shared row counts once)
    size_t n_seen = 0;
    for (size_t c = 0; c < N_COMMANDS && !s; c++) s = option_find(&COMMANDS[c], name, len);
    if (s || !two) return s;
    for (size_t c = 0; c < N_COMMANDS; c++)
        for (const OptSpec *r = COMMANDS[c].options; r->name && len; r++) {
            int known = 0;
            if (strlen(r->name) < len || !same_chars(r->name, name, len)) continue;
            for (size_t i = 0; i < n_seen; i++) known |= same_row(seen[i], r);
            if (!known && n_seen < sizeof seen / sizeof seen[0]) seen[n_seen++] = r;
        }
    return n_seen == 1 ? seen[0] : NULL;
}

// The row one argument starting with '-' names for cmd, with its spelling for messages and its
// value when attached ("--steps=5", "-n5"); NULL after printing why there is none. After one dash:
// a long option's exact name (or alias), else a short letter with the rest as its value.
static const OptSpec *resolve(const Command *cmd, const char *a, char *shown, size_t cap, const char **value) {
    int two = a[1] == '-';
    const char *name = a + 1 + two;
    size_t len = strcspn(name, "=");
    char given[64], list[256];
    snprintf(given, sizeof given, "%.*s", (int)(len + 1 + two), a);
    *value = name[len] == '=' ? name + len + 1 : NULL;
    const OptSpec *s = two || len > 1 ? option_find(cmd, name, len) : NULL, *other = NULL;
    const char *why = s ? NULL : foreign(name, len);
    if (why && (two || len > 1 ? any_option(name, len, two) : any_letter(a[1]))) {
        msg_usage(cmd->name, "option '%s' does not apply to this command: %s", given,
                  why);  // another's, and llama.cpp's
        return NULL;
    }
    if (why) {
        msg_usage(cmd->name, "option '%s' has no counterpart here: %s", given, why);
        return NULL;
    }
    const char *ours = s || !two ? NULL : renamed(name, len);
    if (ours) {
        msg_usage(cmd->name, "unknown option '%s' (normlab's is %s)", given, ours);
        return NULL;
    }
    int letter = !s && !two && (s = find_letter(cmd, a[1])) != NULL;
    if (letter) *value = a[2] ? a + 2 : NULL;  // "-n5", "-mmodel.json" (getopt: "-n=5" is the value "=5")
    if (letter && *value && !takes_value(s)) s = NULL, letter = 0;
    int n = !s && two ? prefixed(cmd, name, len, &s, list, sizeof list) : 0;
    if (n > 1) {
        msg_usage(cmd->name, "ambiguous option '%s' (%s)", given, list);
        return NULL;
    }
    if (s) {  // messages name the option as it was typed: "-n", "-temp", "--temp"
        if (letter) snprintf(shown, cap, "-%c", s->letter);
        else snprintf(shown, cap, "%s", given);
        return s;
    }
    int single = !two && len == 1;
    other = single ? any_letter(a[1]) : any_option(name, len, two);
    if (other && single) msg_usage(cmd->name, "option '-%c' does not apply to this command", a[1]);
    else if (other) msg_usage(cmd->name, "option '%s' does not apply to this command", given);
    else {
        char bare[64];
        snprintf(bare, sizeof bare, "%.*s", (int)len, name);
        unknown_option(cmd, given, bare);
    }
    return NULL;
}

// The table's defaults for cmd: every row with a value as its default.
static void apply_defaults(Options *o, const Command *cmd) {
    for (const OptSpec *s = cmd->options; s->name; s++)
        if (s->def) apply_option(o, s, "", s->def);
}

// What a stray argument may have meant: a model for -m (one -m NAME finds), a file for -f, else a
// prompt for -p; "" when the command takes none of them.
static int names_model(const char *arg) {
    struct stat st;
    size_t len = strlen(arg), n = 0;
    if (stat(arg, &st) == 0 && (S_ISDIR(st.st_mode) || (len > 5 && strcmp(arg + len - 5, ".json") == 0))) return 1;
    ModelEntry *e = NULL;
    int found = 0;
    if (model_entries(&e, &n) == 0)
        for (size_t i = 0; i < n && !found; i++) found = strcmp(e[i].name, arg) == 0;
    model_entries_free(e, n);
    return found;
}

static const char *stray_hint(const Command *cmd, const Options *o, const char *arg, char *buf, size_t cap) {
    int given_prompt = o->prompt || o->prompt_file || o->start;
    struct stat st;
    const OptSpec *f = option_find(cmd, "file", 4);
    if (option_find(cmd, "model", 5) && names_model(arg)) snprintf(buf, cap, " (a model is named with -m: -m %s)", arg);
    else if (f && stat(arg, &st) == 0 && S_ISREG(st.st_mode))
        snprintf(buf, cap, " (a file is read with -f: -f %s)", arg);
    else if (option_find(cmd, "prompt", 6) && !given_prompt && !plain_number(arg))
        snprintf(buf, cap, " (a prompt is given with -p: -p '%s')", arg);
    else buf[0] = '\0';
    return buf;
}

void options_free(Options *o) {
    free(o->models);
    free(o->stops.items);
    for (int i = 0; i < o->n_owned; i++) free(o->owned[i]);
    free(o->owned);
}

// -e: -p's text and each --stop's with their escapes processed (the new texts owned by o).
static int escape_one(Options *o, const char *what, const char **text) {
    size_t len;
    char *out;
    int rc = unescape(what, *text, &out, &len);
    if (!rc) *text = o->owned[o->n_owned++] = out;
    return rc;
}

static int apply_escapes(Options *o) {
    if (!(o->owned = calloc((size_t)o->stops.n + 1, sizeof *o->owned))) {
        msg_error("out of memory");
        return EXIT_DATA;
    }
    int rc = o->prompt ? escape_one(o, "-p", &o->prompt) : 0;
    for (int i = 0; i < o->stops.n && !rc; i++) rc = escape_one(o, "--stop", &o->stops.items[i]);
    return rc;
}

int options_parse(Options *o, const Command *cmd, int argc, char **argv) {
    const char *stray = NULL;
    o->models = calloc((size_t)argc + 1, sizeof *o->models);
    o->stops.items = calloc((size_t)argc + 1, sizeof *o->stops.items);
    if (!o->models || !o->stops.items) {
        msg_error("out of memory");
        return EXIT_DATA;
    }
    apply_defaults(o, cmd);
    for (int i = 1, rest = 0; i < argc; i++) {
        const char *a = argv[i], *value;
        if (!rest && strcmp(a, "--") == 0) {
            rest = 1;  // the rest are arguments
            continue;
        }
        if (rest || a[0] != '-' || a[1] == '\0') {
            if (cmd->positional) o->models[o->n_models++] = a;
            else if (!stray) stray = a;
            continue;
        }
        char shown[80];
        const OptSpec *s = resolve(cmd, a, shown, sizeof shown, &value);
        if (!s) return EXIT_USAGE;
        if (!takes_value(s) && value) {
            msg_usage(o->cmd, "option '%s' takes no value", shown);
            return EXIT_USAGE;
        }
        if (takes_value(s) && !value && (s->flags & OPT_VALUE_OPTIONAL) &&
            (i + 1 >= argc || (argv[i + 1][0] == '-' && argv[i + 1][1]))) {
            *(int *)((char *)o + s->bare_field) = 1;
            continue;
        }
        if (takes_value(s) && !value && i + 1 >= argc) {
            msg_usage(o->cmd, "option '%s' needs a value", shown);
            return EXIT_USAGE;
        }
        if (takes_value(s) && !value) value = argv[++i];
        int rc = apply_option(o, s, shown, value);
        if (rc) return rc;
    }
    if (stray) {
        char hint[160];
        msg_usage(o->cmd, "unexpected argument '%s'%s", stray, stray_hint(cmd, o, stray, hint, sizeof hint));
        return EXIT_USAGE;
    }
    for (int i = 0; i < o->stops.n; i++)
        if (!o->stops.items[i][0]) {
            msg_usage(o->cmd, "--stop needs a text, got an empty one");
            return EXIT_USAGE;
        }
    return o->escape ? apply_escapes(o) : 0;
}

// Whether w holds for o: its field set (and equal to w->text when given), or past its bound.
static int holds(const Options *o, const OptWhen *w) {
    const char *base = (const char *)o, *text;
    switch (w->kind) {
    case WHEN_TEXT:
        text = *(const char *const *)(base + w->field);
        return text && (!w->text || strcmp(text, w->text) == 0);
    case WHEN_ABOVE: return *(const int *)(base + w->field) > w->bound;
    case WHEN_LONG_ABOVE: return *(const long *)(base + w->field) > w->bound;
    case WHEN_BELOW: return *(const long *)(base + w->field) < w->bound;
    }
    return 0;
}

// The relation's message, its "%d" (if any) standing for b's value.
static void broken(const Options *o, const OptRelation *r) {
    const char *count = strstr(r->message, "%d");
    if (!count) {
        msg_usage(o->cmd, "%s", r->message);
        return;
    }
    int value = *(const int *)((const char *)o + r->b.field);
    msg_usage(o->cmd, "%.*s%d%s", (int)(count - r->message), r->message, value, count + 2);
}

int options_check(const Options *o, const Command *cmd) {
    for (const OptRelation *r = cmd->relations; r->message; r++) {
        int a = holds(o, &r->a), b = holds(o, &r->b);
        if (a && (r->kind == REL_CONFLICTS ? b : !b)) {
            broken(o, r);
            return EXIT_USAGE;
        }
    }
    return 0;
}
