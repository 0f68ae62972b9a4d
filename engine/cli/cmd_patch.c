// cmd_patch.c — patch: activation patching of the residual stream (TransformerLens's patching), the
// (layer x position) map of the logit difference recovered, from the lab's nl_patch, as text, JSON
// and a heat map drawn by tools/lab/plot_patch.py.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "commands.h"
#include "escape.h"
#include "io_check.h"
#include "jsonout.h"
#include "models.h"
#include "normlab_lab.h"
#include "output.h"
#include "process.h"
#include "prompts.h"
#include "workers.h"
#include "option_rows.h"

// One of the two texts: its bytes (escapes processed with -e) and its ids.
typedef struct {
    const char *what;  // "--clean" or "--corrupt"
    char *text;
    size_t len, n;
    int *ids;
} PatchText;

static int patch_text(const Options *o, const NlModel *model, const char *arg, PatchText *t) {
    size_t skipped = 0;
    int rc = o->escape ? unescape(t->what, arg, &t->text, &t->len) : 0;
    if (!o->escape) {
        t->text = strdup(arg);
        t->len = strlen(arg);
        rc = t->text ? 0 : EXIT_DATA;
    }
    if (!rc) rc = encode(model, t->what, t->text, t->len, encode_flags(o), &t->ids, &t->n, &skipped);
    if (!rc && t->n == 0) {
        msg_usage(o->cmd, "%s gives no tokens", t->what);
        rc = EXIT_USAGE;
    }
    return rc;
}

// Below this |clean - corrupted| (logits) the recovered shares divide by a difference the texts hardly
// make, and read as noise: pre-rms on "I am thy father" / "I am thy mother" gave 0.039, cells from
// -17 to 26. patch warns.
#define PATCH_MIN_SPAN 1.0

// A token's piece for the table: escaped, at most `width` characters shown.
static const char *piece(const NlModel *model, int id, char *buf, size_t len, int width) {
    size_t n;
    const char *bytes = nl_tokenizer_bytes(nl_model_tokenizer(model), id, &n);
    char raw[64], shown[400];
    snprintf(raw, sizeof raw, "%.*s", (int)(n < sizeof raw ? n : sizeof raw - 1), bytes ? bytes : "");
    msg_escape(shown, sizeof shown, raw);
    snprintf(buf, len, "%.*s", width, shown);
    return buf;
}

// A column header: the piece with each space shown as U+2423 (an open box), right-aligned in 7
// characters (not bytes).
static void put_header(FILE *f, const char *piece_text, int differs) {
    char shown[160];
    size_t k = 0, chars = 0;
    for (const char *c = piece_text; *c && k + 4 < sizeof shown; c++) {
        if (*c == ' ') k += (size_t)snprintf(shown + k, sizeof shown - k, "\xe2\x90\xa3");
        else shown[k++] = *c;
        chars += ((unsigned char)*c & 0xC0) != 0x80;
    }
    if (differs && k + 1 < sizeof shown) shown[k++] = '*', chars++;
    shown[k] = '\0';
    fprintf(f, " %*s%s", chars < 7 ? (int)(7 - chars) : 0, "", shown);
}

static void progress(size_t done, size_t total, double seconds, void *ctx) {
    (void)ctx;
    if (seconds >= 1.0 || done == total)
        fprintf(stderr, "\rpatch: %zu of %zu cells, %.1f s%s", done, total, seconds, done == total ? "\n" : "");
}

static int report_text(FILE *f, const Options *o, const NlModel *model, const PatchText *clean,
                       const PatchText *corrupt, const NlPatchMap *m) {
    char a[64], b[64], path[4400];
    size_t cells = m->layers * m->positions;
    fprintf(f, "patching the residual stream: %s, %zu tokens\n", model_path(o, path, sizeof path), m->positions);
    fprintf(f,
            "target %d '%s', foil %d '%s': logit[target] - logit[foil] at the last position, clean %.6g, "
            "corrupted %.6g\n",
            m->target, piece(model, m->target, a, sizeof a, 24), m->foil, piece(model, m->foil, b, sizeof b, 24),
            m->clean_diff, m->corrupt_diff);
    fprintf(f,
            "recovered = (patched - corrupted) / (clean - corrupted), the clean stream's row put in where it\n"
            "enters layer l (l = %zu: where it leaves the last); %zu cells, %.3g ms a cell\n",
            m->layers - 1, cells, cells ? 1e3 * m->seconds / (double)cells : 0.0);
    fprintf(f, "%-9s", "layer");
    for (size_t t = 0; t < m->positions; t++) {  // each position's clean token, * where the texts differ
        int same = clean->ids[t] == corrupt->ids[t];
        put_header(f, piece(model, clean->ids[t], a, sizeof a, same ? 7 : 6), !same);
    }
    fputc('\n', f);
    for (size_t l = 0; l < m->layers; l++) {
        snprintf(a, sizeof a, "%zu%s", l, l == 0 ? " (emb)" : l + 1 == m->layers ? " (out)" : "");
        fprintf(f, "%-9s", a);
        for (size_t t = 0; t < m->positions; t++) {
            double v = m->recovered[l * m->positions + t];
            fprintf(f, " %7.3f", fabs(v) < 0.0005 ? 0.0 : v);  // 0.000, never -0.000
        }
        fputc('\n', f);
    }
    fprintf(f, "(a column marked * is a position where the two texts differ; \xe2\x90\xa3 a space)\n");
    return ferror(f) ? -1 : 0;
}

static cJSON *number_rows(const double *x, size_t rows, size_t cols) {
    cJSON *a = cJSON_CreateArray();
    for (size_t r = 0; a && r < rows; r++) cJSON_AddItemToArray(a, cJSON_CreateDoubleArray(x + r * cols, (int)cols));
    return a;
}

static cJSON *text_json(const NlModel *model, const PatchText *t) {
    cJSON *o = cJSON_CreateObject(), *pieces = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "text", t->text);
    cJSON_AddItemToObject(o, "ids", cJSON_CreateIntArray(t->ids, (int)t->n));
    for (size_t i = 0; i < t->n; i++) {
        size_t len;
        cJSON_AddItemToArray(pieces,
                             cJSON_CreateString(nl_tokenizer_bytes(nl_model_tokenizer(model), t->ids[i], &len)));
    }
    cJSON_AddItemToObject(o, "pieces", pieces);
    return o;
}

static int report_json(FILE *f, const Options *o, const NlModel *model, const PatchText *clean,
                       const PatchText *corrupt, const NlPatchMap *m) {
    cJSON *j = cJSON_CreateObject();
    size_t len, cells = m->layers * m->positions;
    char path[4400];
    cJSON_AddStringToObject(j, "model", model_path(o, path, sizeof path));
    cJSON_AddItemToObject(j, "clean", text_json(model, clean));
    cJSON_AddItemToObject(j, "corrupt", text_json(model, corrupt));
    cJSON_AddNumberToObject(j, "target", m->target);
    cJSON_AddStringToObject(j, "target_piece", nl_tokenizer_bytes(nl_model_tokenizer(model), m->target, &len));
    cJSON_AddNumberToObject(j, "foil", m->foil);
    cJSON_AddStringToObject(j, "foil_piece", nl_tokenizer_bytes(nl_model_tokenizer(model), m->foil, &len));
    cJSON_AddNumberToObject(j, "clean_diff", m->clean_diff);
    cJSON_AddNumberToObject(j, "corrupt_diff", m->corrupt_diff);
    cJSON_AddNumberToObject(j, "layers", (double)m->layers);
    cJSON_AddNumberToObject(j, "positions", (double)m->positions);
    cJSON_AddItemToObject(j, "recovered", number_rows(m->recovered, m->layers, m->positions));
    cJSON_AddItemToObject(j, "diff", number_rows(m->diff, m->layers, m->positions));
    cJSON_AddNumberToObject(j, "seconds", m->seconds);
    cJSON_AddNumberToObject(j, "seconds_per_cell", cells ? m->seconds / (double)cells : 0.0);
    char *line = nl_jsonx_print(j, 0);
    int ok = line && fprintf(f, "%s\n", line) > 0;
    free(line);
    cJSON_Delete(j);
    return ok ? 0 : -1;
}

// The heat map: the JSON written into a temporary folder in the plot directory, drawn there by
// tools/lab/plot_patch.py, then adopted as the output plot (renamed in with the others or not at all).
typedef struct {
    char tmp[PATH_MAX];
    int made;
    OutFile file;
} PatchPlot;

// --plot-dir: not a file, and the plotting tool runs here.
static int check_plot(const Options *o) {
    struct stat st;
    if (stat(o->plot_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        msg_usage(o->cmd, "--plot-dir '%s' is not a directory", o->plot_dir);
        return EXIT_USAGE;
    }
    return check_plot_tool(o->cmd, "plot_patch.py");
}

static int draw_plot(const Options *o, const NlModel *model, const PatchText *clean, const PatchText *corrupt,
                     const NlPatchMap *m, PatchPlot *p) {
    char script[4400], json[PATH_MAX + 32], png[PATH_MAX + 32], dest[PATH_MAX + 32];
    p->made = mkdir(o->plot_dir, 0777) == 0;
    snprintf(p->tmp, sizeof p->tmp, "%s/.normlab-patch-XXXXXX", o->plot_dir);
    if ((!p->made && errno != EEXIST) || !mkdtemp(p->tmp)) {
        msg_error("%s: cannot write: %s", o->plot_dir, strerror(errno));
        p->tmp[0] = '\0';
        return EXIT_DATA;
    }
    snprintf(json, sizeof json, "%s/patch.json", p->tmp);
    snprintf(png, sizeof png, "%s/patch.png", p->tmp);
    snprintf(dest, sizeof dest, "%s/patch.png", o->plot_dir);
    FILE *f = fopen(json, "w");
    int ok = f && report_json(f, o, model, clean, corrupt, m) == 0;
    if (f && fclose(f) != 0) ok = 0;
    char *argv[] = {"/usr/bin/python3", (char *)lab_script("plot_patch.py", script, sizeof script), json, png, NULL};
    if (ok && spawn_wait(argv) != 0) {
        msg_error("tools/lab/plot_patch.py failed; no plot was written");
        ok = 0;
    }
    return ok && out_adopt(&p->file, png, dest) == 0 ? 0 : EXIT_DATA;
}

static void plot_cleanup(const Options *o, PatchPlot *p, int ok) {
    char path[PATH_MAX + 32];
    if (p->tmp[0]) {
        snprintf(path, sizeof path, "%s/patch.json", p->tmp);
        unlink(path);
        snprintf(path, sizeof path, "%s/patch.png", p->tmp);
        unlink(path);
        rmdir(p->tmp);
    }
    if (!ok && p->made) rmdir(o->plot_dir);
}

// The model, its state and the two texts; 0 or an exit status after a message.
static int patch_inputs(Options *o, NlModel **model, NlState **state, PatchText *clean, PatchText *corrupt) {
    int rc = load_model(o, model);
    if (!rc) rc = patch_text(o, *model, o->clean, clean);
    if (!rc) rc = patch_text(o, *model, o->corrupt, corrupt);
    if (!rc && clean->n != corrupt->n) {
        msg_usage(o->cmd, "the clean text is %zu tokens and the corrupted one %zu: patching needs the same length",
                  clean->n, corrupt->n);
        rc = EXIT_USAGE;
    }
    if (!rc) rc = make_state_as(o, *model, 1, o->threads, 1, state);
    return rc;
}

int cmd_patch(Options *o) {
    if (!o->clean || !o->corrupt) {
        msg_usage(o->cmd, "give both texts: --clean TEXT --corrupt TEXT");
        return EXIT_USAGE;
    }
    const char *outs[2] = {o->output ? o->output : "-", NULL};
    char plot_path[PATH_MAX + 32];
    struct stat st;  // an existing plot directory: its patch.png is checked; else the directory, made at the end
    if (o->plot_dir) snprintf(plot_path, sizeof plot_path, "%s/patch.png", o->plot_dir);
    if (o->plot_dir) outs[1] = stat(o->plot_dir, &st) == 0 ? plot_path : o->plot_dir;
    int rc = check_outputs(o, outs, o->plot_dir ? 2 : 1);
    if (!rc && o->plot_dir) rc = check_plot(o);
    if (rc) return rc;
    NlModel *model = NULL;
    NlState *state = NULL;
    PatchText clean = {.what = "--clean"}, corrupt = {.what = "--corrupt"};
    NlPatchMap map = {0};
    OutFile out = {0};
    PatchPlot plot = {0};
    rc = patch_inputs(o, &model, &state, &clean, &corrupt);
    if (!rc) rc = out_open_held(&out, o->output ? o->output : "-");
    NlPatchOptions popts = {.target = o->target, .foil = o->foil, .progress = isatty(STDERR_FILENO) ? progress : NULL};
    NlError err;
    if (!rc && nl_patch(state, clean.ids, corrupt.ids, clean.n, &popts, &map, &err) != 0) {
        msg_error("%s", err.msg);
        rc = exit_code(&err);
    }
    if (!rc && fabs(map.clean_diff - map.corrupt_diff) < PATCH_MIN_SPAN)
        msg_error("warning: |clean - corrupted| is %.3g logits, below %g: every share divides by it and is mostly "
                  "noise; choose texts, or --target and --foil, that the model tells apart",
                  fabs(map.clean_diff - map.corrupt_diff), PATCH_MIN_SPAN);
    if (!rc && (o->json ? report_json(out.f, o, model, &clean, &corrupt, &map)
                        : report_text(out.f, o, model, &clean, &corrupt, &map)) != 0) {
        msg_error("cannot write %s: %s", o->output ? o->output : "to stdout", strerror(errno));
        rc = EXIT_DATA;
    }
    if (!rc && o->plot_dir) rc = draw_plot(o, model, &clean, &corrupt, &map, &plot);
    OutFile *outputs[2] = {&out, &plot.file};
    if (out_finish_all(outputs, 2, rc == 0) != 0) rc = EXIT_DATA;
    if (o->plot_dir) plot_cleanup(o, &plot, rc == 0);
    if (rc == 0 && o->plot_dir) msg_error("wrote %s", plot_path);
    nl_patch_map_free(&map);
    nl_state_free(state);
    nl_model_free(model);
    free(clean.text), free(clean.ids), free(corrupt.text), free(corrupt.ids);
    return rc;
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec PATCH_OPTIONS[] = {
    OPT_HELP,
    OPT_MODEL,
    {.name = "clean",
     .type = OT_STRING,
     .arg = "TEXT",
     .field = OPT_FIELD(clean),
     .help = "the clean text (required), whose residual stream is patched in"},
    {.name = "corrupt",
     .type = OT_STRING,
     .arg = "TEXT",
     .field = OPT_FIELD(corrupt),
     .help = "the corrupted text (required): the same number of tokens as --clean"},
    {.name = "target",
     .type = OT_INT,
     .arg = "ID",
     .lo = 0,
     .hi = 1 << 20,
     .range = "a token id in [0, 1048576]",
     .def_text = "the clean run's top token at the last position",
     .field = OPT_FIELD(target),
     .help = "the token whose logit counts positively ('normlab tokenize' shows ids)"},
    {.name = "foil",
     .type = OT_INT,
     .arg = "ID",
     .lo = 0,
     .hi = 1 << 20,
     .range = "a token id in [0, 1048576]",
     .def_text = "the corrupted run's top token at the last position",
     .field = OPT_FIELD(foil),
     .help = "the token whose logit counts negatively"},
    OPT_ESCAPE,
    {.name = "json",
     .type = OT_FLAG,
     .field = OPT_FIELD(json),
     .value = 1,
     .help = "one JSON object: both texts' ids and pieces, target, foil, clean_diff, corrupt_diff, recovered and "
             "diff as [layer][position] arrays, seconds and seconds_per_cell"},
    OPT_OUTPUT,
    {.name = "plot-dir",
     .type = OT_STRING,
     .arg = "DIR",
     .field = OPT_FIELD(plot_dir),
     .help = "also draw the map as DIR/patch.png via tools/lab/plot_patch.py (needs python3-matplotlib)"},
    OPT_THREADS("threads each pass splits its matrix products and attention heads over"),
    OPT_SPECIAL,
    OPT_NO_MMAP,
    OPT_END,
};

const OptRelation PATCH_RELATIONS[] = {
    REQUIRES(GIVEN_ABOVE(foil, -1), GIVEN_ABOVE(target, -1), "--foil goes with --target: give both ids"),
    REQUIRES(GIVEN_ABOVE(target, -1), GIVEN_ABOVE(foil, -1), "--target goes with --foil: give both ids"), REL_END};
