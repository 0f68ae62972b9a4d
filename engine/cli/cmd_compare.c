// cmd_compare.c — compare: models side by side on one text, with tables, JSON, CSV and plots.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "io_check.h"
#include "model_folder.h"
#include "models.h"
#include "output.h"
#include "process.h"
#include "prompts.h"
#include "report_compare.h"
#include "option_rows.h"

#define MAX_RUNS 16  // rows of one model, at most: 5 runs and 2 BatchNorm ones again with batch statistics; 6
// quantized, a8; 2 folded
#define MAX_QUANT (NL_QUANT_COUNT + 1)  // copies of one model: one per quantization scheme, 2 folded

// The runs of one model (returns their count): as trained; with also_swap, the other norm type
// (LayerNorm and RMSNorm each other's, BatchNorm's and DyT's LayerNorm), the other placement (its
// recipe's swap: pre and post each other's, peri's pre, ...) and no norm at all, of these the ones
// its family runs (an LN-RNN: only without its LNs), and QK-norm switched where the family has it; a
// norm-free model has no swaps. BatchNorm runs with bn_stats, or each twice (running, then batch)
// with BN_STATS_BOTH; a BatchNorm model without a final norm (post) run with one has no running
// statistics for its ln_f, so that row runs with batch statistics only.
static int compare_runs(const NlModelDesc *c, int also_swap, int bn_stats, NlRunOptions *runs) {
    NlBnStats first = bn_stats == BN_STATS_BOTH ? NL_BN_RUNNING : (NlBnStats)bn_stats;
    NlRunOptions as = {.norm = c->norm, .placement = c->placement, .batch = 1, .threads = 1, .bn_stats = first};
    const NlPlacementInfo *place = nl_placement_info(c->placement);
    NlPlacement swap = place ? place->swap : c->placement;  // (a recurrent model has none)
    int n = 0,
        lacks_ln_f = c->norm == NL_NORM_BATCHNORM && place && !place->final_norm && nl_placement_info(swap)->final_norm;
    runs[n++] = as;
    const NlFamilyInfo *fam = c->family;
    if (also_swap && c->norm != NL_NORM_NONE) {  // the swaps the family runs
        NlNormType other = c->norm == NL_NORM_LAYERNORM ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM;
        if (fam->norms & 1u << other) {
            runs[n] = as;
            runs[n++].norm = other;
        }
        // DyT has no unit-gain stand-in (its alpha): the swap only where it needs no norm the model lacks
        int dyt_lacks = c->norm == NL_NORM_DYT && (nl_placement_norms(swap) & ~nl_placement_norms(c->placement));
        if (fam->has_placement && (!lacks_ln_f || bn_stats != NL_BN_RUNNING) && !dyt_lacks) {
            runs[n] = as;
            runs[n].placement = swap;
            if (lacks_ln_f) runs[n].bn_stats = NL_BN_BATCH;
            n++;
        }
        runs[n] = as;
        runs[n++].norm = NL_NORM_NONE;
        if (fam->qk_norm) {  // QK-norm switched: off where the model has it, on (unit gains) where not
            runs[n] = as;
            runs[n++].qk_norm = run_qk_norm(c, NL_QK_NORM_AS_CONFIGURED) ? NL_QK_NORM_OFF : NL_QK_NORM_ON;
        }
    }
    for (int i = 0, m = n; bn_stats == BN_STATS_BOTH && i < m; i++)
        if (runs[i].norm == NL_NORM_BATCHNORM && runs[i].bn_stats == NL_BN_RUNNING) {
            runs[n] = runs[i];
            runs[n++].bn_stats = NL_BN_BATCH;
        }
    return n;
}

// The rows of a model's quantized runs, each measured against the float32 row as trained
// (jobs[reference]): with --quantize, a copy of the loaded model with its weights rounded (into
// quant[], run as trained); with --quantize-act, the float32 model with its linears' inputs rounded.
static int compare_quantized(const Options *o, const char *path, const NlModel *model, const int *ids, size_t n,
                             NlRunOptions as, int reference, NlModel **quant, NlCompareJob *jobs, const char **labels,
                             size_t *n_jobs) {
    for (int q = NL_QUANT_Q8, k = 0; q < NL_QUANT_COUNT; q++) {
        if (!(o->quantize_rows & 1 << q)) continue;
        NlError err;
        unsigned rounded = 0;
        if (nl_quantize_copy(&quant[k], model, (NlQuant)q, (unsigned)o->quantize_only, &rounded, &err) != 0) {
            msg_error("%s: %s", path, err.msg);
            return EXIT_DATA;
        }
        labels[*n_jobs] = path;
        jobs[(*n_jobs)++] = (NlCompareJob){.model = quant[k++],
                                           .run = as,
                                           .ids = ids,
                                           .n = n,
                                           .quant = (NlQuant)q,
                                           .quant_classes = rounded,
                                           .reference = reference};
    }
    if (o->quantize_act) {
        labels[*n_jobs] = path;
        jobs[(*n_jobs)++] = (NlCompareJob){.model = model,
                                           .run = as,
                                           .ids = ids,
                                           .n = n,
                                           .quant_act = (NlQuant)o->quantize_act,
                                           .reference = reference};
    }
    return 0;
}

// A copy of model folded (center: and centred, forced where that is not exact) into *out, through a
// temporary model folder that is removed once the copy is read into memory. 0, or EXIT_DATA.
static int fold_copy(const char *path, const NlModel *model, int center, NlModel **out) {
    const char *tmpdir = getenv("TMPDIR");
    OutDir d = {0};
    NlFoldOptions fo = {center, center};
    NlFoldResult fr;
    NlLoadOptions lo = {.no_mmap = 1};
    NlError err;
    if (snprintf(d.tmp, sizeof d.tmp, "%s/normlab-fold-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp") >=
        (int)sizeof d.tmp) {
        msg_error("TMPDIR: path too long");
        return EXIT_DATA;
    }
    int rc = model_folder_create(&d) == 0 ? fold_model_folder(&d, path, model, &fo, &fr) : EXIT_DATA;
    if (!rc && nl_model_load(out, d.tmp, &lo, &err) != 0) {
        msg_error("%s folded: %s", path, err.msg);
        rc = EXIT_DATA;
    }
    model_folder_discard(&d);
    return rc;
}

// With --fold, the rows of the model folded (and with --center, folded and centred), each measured
// against the row as trained (jobs[reference]); a model whose family cannot fold has none.
static int compare_folded(const Options *o, const char *path, const NlModel *model, const int *ids, size_t n,
                          NlRunOptions as, int reference, NlModel **copies, NlCompareJob *jobs, const char **labels,
                          size_t *n_jobs) {
    NlModelDesc desc = model_desc(model);
    Options with = *o;
    char buf[4400];
    with.model = path;
    if (!o->fold || !desc.family->has_residual_stream) return 0;
    for (int center = 0; center <= o->center; center++) {
        int rc = fold_copy(model_path(&with, buf, sizeof buf), model, center, &copies[center]);
        if (rc) return rc;
        labels[*n_jobs] = path;
        jobs[(*n_jobs)++] = (NlCompareJob){
            .model = copies[center], .run = as, .ids = ids, .n = n, .reference = reference, .folded = 1 + center};
    }
    return 0;
}

// Loads one compare model and encodes the text for it; appends its rows (as trained, then with
// --also-swap the other norm and the other placement, then the quantized and folded ones) to jobs.
static int compare_load(const Options *o, const char *path, const char *text, size_t len, NlModel **model,
                        NlModel **quant, int **ids, NlCompareJob *jobs, const char **labels, size_t *n_jobs) {
    size_t n = 0, skipped = 0;
    Options with = *o;
    with.model = path;
    with.quantize = NL_QUANT_NONE;  // the float32 model: --quantize adds rows of copies
    int rc = load_model(&with, model);
    if (!rc) {
        char what[4400];
        snprintf(what, sizeof what, "%s (for %s)", o->text_file, path);
        rc = encode(*model, what, text, len, encode_flags(o), ids, &n, &skipped);
    }
    if (!rc && n < 2) {
        int chars = nl_tokenizer_info(nl_model_tokenizer(*model)).kind == NL_TOKENIZER_CHAR;
        msg_error("%s: the text needs at least 2 %s", o->text_file, chars ? "known characters" : "tokens");
        rc = EXIT_DATA;
    }
    if (rc) return rc;
    NlRunOptions runs[MAX_RUNS];
    NlModelDesc desc = model_desc(*model);
    int n_runs = compare_runs(&desc, o->also_swap, o->bn_stats, runs), first = (int)*n_jobs;
    for (int r = 0; r < n_runs; r++) {
        labels[*n_jobs] = path;
        jobs[(*n_jobs)++] = (NlCompareJob){.model = *model, .run = runs[r], .ids = *ids, .n = n, .reference = -1};
    }
    rc = compare_quantized(o, path, *model, *ids, n, runs[0], first, quant, jobs, labels, n_jobs);
    return rc ? rc
              : compare_folded(o, path, *model, *ids, n, runs[0], first, quant + NL_QUANT_COUNT - 1, jobs, labels,
                               n_jobs);
}

static const char *const PLOTS[] = {
    "bits_per_char.png", "residual_rms.png", "branch_rms.png",   "time_share.png", "state_norm.png",
    "lens.png",          "outliers.png",     "quantization.png", "attention.png",  "attention_pattern.png"};

#define N_PLOTS (sizeof PLOTS / sizeof PLOTS[0])

// Whether the run may draw PLOTS[i]: the first five (state_norm.png where a recurrent row is, see
// plot_made), the others with their experiment.
static int plot_drawn(const Options *o, size_t i) {
    return i < 5 || (i == 5 && o->lens) || (i == 6 && o->outliers) ||
           (i == 7 && (o->quantize_rows || o->quantize_act)) || (i == 8 && o->attention) ||
           (i == 9 && o->attention && o->attention_pattern);
}

// --attention-pattern LAYER.HEAD into copts; -1 with a message when it is not two whole numbers.
static int pattern_option(const Options *o, NlCompareOptions *copts) {
    if (!o->attention_pattern) return 0;
    const char *s = o->attention_pattern;
    char *end;
    long layer = -1, head = -1;
    if (s[0] >= '0' && s[0] <= '9') layer = strtol(s, &end, 10);
    if (layer >= 0 && *end == '.' && end[1] >= '0' && end[1] <= '9') head = strtol(end + 1, &end, 10);
    if (layer < 0 || head < 0 || *end != '\0' || layer > 255 || head > 4095) {
        char shown[128];
        msg_error("--attention-pattern: '%s' is not LAYER.HEAD (two whole numbers from 0, as 1.3)",
                  msg_escape(shown, sizeof shown, s));
        return -1;
    }
    if (!o->attention) {
        msg_error("--attention-pattern needs --attention");
        return -1;
    }
    copts->pattern = 1;
    copts->pattern_layer = (int)layer;
    copts->pattern_head = (int)head;
    return 0;
}

// The plots of one run: drawn into a temporary folder inside the plot directory, then adopted as
// outputs, renamed in with the run's other files or not at all.
typedef struct {
    char tmp[PATH_MAX];  // the temporary folder, "" when none was made
    int made;  // the plot directory was made by this run (removed again if the run fails)
    int recurrent;  // a recurrent row is among the rows: state_norm.png is drawn
    OutFile files[N_PLOTS];
} Plots;

// Whether the run drew PLOTS[i]: state_norm.png only beside a recurrent model (plot_compare.py).
static int plot_made(const Options *o, const Plots *plots, size_t i) {
    return plot_drawn(o, i) && (strcmp(PLOTS[i], "state_norm.png") != 0 || plots->recurrent);
}

// Draws the plots of the rows into plots->tmp (made now inside the plot directory, which is made if
// missing), from a JSON file of the rows written there, and adopts each as an output.
static int run_plots(const Options *o, const NlCompareRow *rows, const char *const *labels, size_t n,
                     const CompareInfo *info, Plots *plots) {
    char script[4400], json[PATH_MAX + 32], from[PATH_MAX + 32], to[PATH_MAX + 32];
    plots->made = mkdir(o->plot_dir, 0777) == 0;
    if (!plots->made && errno != EEXIST) {
        msg_error("%s: cannot create: %s", o->plot_dir, strerror(errno));
        return EXIT_DATA;
    }
    snprintf(plots->tmp, sizeof plots->tmp, "%s/.normlab-plots-XXXXXX", o->plot_dir);
    if (!mkdtemp(plots->tmp)) {
        msg_error("%s: cannot write: %s", o->plot_dir, strerror(errno));
        plots->tmp[0] = '\0';
        return EXIT_DATA;
    }
    for (size_t i = 0; i < n; i++) plots->recurrent |= !nl_family_info(rows[i].arch)->has_residual_stream;
    snprintf(json, sizeof json, "%s/rows.json", plots->tmp);
    FILE *f = fopen(json, "w");
    int ok = f && report_compare_json(f, rows, labels, n, info) == 0;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) msg_error("%s: cannot write the rows for the plots", o->plot_dir);
    char *argv[] = {"/usr/bin/python3", (char *)lab_script("plot_compare.py", script, sizeof script),
                    "--quiet",          json,
                    plots->tmp,         NULL};
    if (ok && spawn_wait(argv) != 0) {
        msg_error("tools/lab/plot_compare.py failed; no plot was written");
        ok = 0;
    }
    for (size_t i = 0; ok && i < N_PLOTS; i++) {
        if (!plot_made(o, plots, i)) continue;
        snprintf(from, sizeof from, "%s/%s", plots->tmp, PLOTS[i]);
        snprintf(to, sizeof to, "%s/%s", o->plot_dir, PLOTS[i]);
        ok = out_adopt(&plots->files[i], from, to) == 0;
    }
    return ok ? 0 : EXIT_DATA;
}

// After the outputs are finished: the temporary folder goes (the plots in it were renamed out or
// are removed), and a plot directory this run made goes too when the run failed.
static void plots_cleanup(const Options *o, Plots *plots, int ok) {
    char path[PATH_MAX + 32];
    for (size_t i = 0; plots->tmp[0] && i < N_PLOTS; i++) {
        snprintf(path, sizeof path, "%s/%s", plots->tmp, PLOTS[i]);
        unlink(path);
    }
    if (plots->tmp[0]) {
        snprintf(path, sizeof path, "%s/rows.json", plots->tmp);
        unlink(path);
        rmdir(plots->tmp);
    }
    if (!ok && plots->made) rmdir(o->plot_dir);
}

// Before any work: every output can be written (-o: the table, or the JSON rows with --json;
// --csv; --plot-dir's plots), and the plotting tool runs.
static int check_compare_outputs(const Options *o) {
    char plot_paths[N_PLOTS][PATH_MAX + 32];
    const char *outs[2 + N_PLOTS];
    size_t n_outs = 0;
    struct stat pst;
    int plot_dir_exists = o->plot_dir && stat(o->plot_dir, &pst) == 0;
    outs[n_outs++] = o->output ? o->output : "-";  // the table or rows: stdout when not given
    if (o->csv_out) outs[n_outs++] = o->csv_out;
    for (size_t i = 0; plot_dir_exists && i < N_PLOTS; i++) {
        if (!plot_drawn(o, i)) continue;
        snprintf(plot_paths[i], sizeof plot_paths[i], "%s/%s", o->plot_dir, PLOTS[i]);
        outs[n_outs++] = plot_paths[i];
    }
    if (o->plot_dir && !plot_dir_exists) outs[n_outs++] = o->plot_dir;  // made at the end: its folder must be writable
    if (plot_dir_exists && !S_ISDIR(pst.st_mode)) {
        msg_usage(o->cmd, "--plot-dir '%s' is not a directory", o->plot_dir);
        return EXIT_USAGE;
    }
    int rc = check_outputs(o, outs, n_outs);
    return !rc && o->plot_dir ? check_plot_tool(o->cmd, "plot_compare.py") : rc;
}

// The table or JSON rows into out (-o, or held stdout; csv: the CSV of --csv). 0, or EXIT_DATA.
static int write_report(const Options *o, OutFile *out, int csv, const NlCompareRow *rows, const char *const *labels,
                        size_t n, const CompareInfo *info) {
    int bad = csv       ? report_compare_csv(out->f, rows, labels, n, info)
              : o->json ? report_compare_json(out->f, rows, labels, n, info)
                        : report_compare_text(out->f, rows, labels, n, info);
    if (bad == 0 && fflush(out->f) != EOF) return 0;
    if (csv) msg_error("%s: write failed: %s", o->csv_out, strerror(errno));
    else msg_error("cannot write %s: %s", o->output ? o->output : "to stdout", strerror(errno));
    return EXIT_DATA;
}

int cmd_compare(Options *o) {
    if (o->n_models == 0) {
        msg_usage(o->cmd, "%s", "give at least one MODEL");
        return EXIT_USAGE;
    }
    if (!o->text_file) {
        msg_usage(o->cmd, "%s", "give the text with -f FILE (or --text FILE)");
        return EXIT_USAGE;
    }
    NlCompareOptions copts = {.repeats = o->repeats,
                              .invariance = o->invariance,
                              .fault = NL_FAULT_NONE,
                              .lens = o->lens,
                              .lens_scale = (NlLensScale)o->lens_scale,
                              .outliers = o->outliers,
                              .attention = o->attention};
    if (pattern_option(o, &copts) != 0) return EXIT_USAGE;
    int rc0 = check_compare_outputs(o);
    if (rc0) return rc0;
    OutFile out = {0}, csv_o = {0};
    Plots plots = {0};
    char(*shown)[512] = NULL;  // escaped labels for the table
    char *text = NULL;
    size_t len = 0, n_rows = 0;
    size_t cap = (size_t)o->n_models * MAX_RUNS;
    const char **labels = calloc(cap, sizeof *labels);
    NlCompareRow *rows = calloc(cap, sizeof *rows);
    NlCompareJob *jobs = calloc(cap, sizeof *jobs);
    NlModel **models = calloc((size_t)o->n_models, sizeof *models);
    NlModel **quant = calloc((size_t)o->n_models * MAX_QUANT, sizeof *quant);
    int **ids = calloc((size_t)o->n_models, sizeof *ids);
    int rc = labels && rows && jobs && models && quant && ids ? 0 : EXIT_DATA;
    if (!rc) rc = read_text(o->text_file, &text, &len);
    if (!rc) rc = out_open_held(&out, o->output ? o->output : "-");  // stdout once the files are in place
    if (!rc && o->csv_out) rc = out_open(&csv_o, o->csv_out);
    for (int i = 0; !rc && i < o->n_models; i++)
        rc =
            compare_load(o, o->models[i], text, len, &models[i], &quant[i * MAX_QUANT], &ids[i], jobs, labels, &n_rows);
    if (rc) goto cleanup;
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "compare: %zu rows on %d thread%s ...", n_rows, o->threads, plural((size_t)o->threads));
    NlError err;
    size_t failed;
    if (nl_compare_models(jobs, n_rows, o->threads, &copts, rows, &failed, &err) != 0) {
        if (isatty(STDERR_FILENO)) fprintf(stderr, "\n");
        msg_error("%s: %s", failed < n_rows ? labels[failed] : o->text_file, err.msg);
        rc = EXIT_DATA;
        goto cleanup;
    }
    if (isatty(STDERR_FILENO)) fprintf(stderr, "\r%60s\r", "");
    // Paths from the command line shown in the table, escaped like every message.
    char text_shown[512];
    CompareInfo info = {.text = o->json ? o->text_file : msg_escape(text_shown, sizeof text_shown, o->text_file),
                        .threads = o->threads,
                        .repeats = o->repeats,
                        .invariance = o->invariance,
                        .quantize = o->quantize_rows || o->quantize_act,
                        .lens = o->lens,
                        .lens_scale = o->lens_scale,
                        .outliers = o->outliers,
                        .attention = o->attention,
                        .pattern = copts.pattern,
                        .jobs = jobs,
                        .fold = o->fold};
    shown = o->json ? NULL : calloc(n_rows ? n_rows : 1, sizeof *shown);
    for (size_t i = 0; shown && i < n_rows; i++) labels[i] = msg_escape(shown[i], sizeof shown[i], labels[i]);
    // The files, the plots and held stdout are finished together at the end: all in place or none.
    // A device or FIFO is written in place, so it comes last (held stdout waits for the renames).
    if (csv_o.f) rc = write_report(o, &csv_o, 1, rows, labels, n_rows, &info);
    if (!rc && !out.direct) rc = write_report(o, &out, 0, rows, labels, n_rows, &info);
    if (!rc && o->plot_dir) rc = run_plots(o, rows, labels, n_rows, &info, &plots);
    if (!rc && out.direct) rc = write_report(o, &out, 0, rows, labels, n_rows, &info);
cleanup:
    free(shown);
    OutFile *outputs[2 + N_PLOTS] = {&csv_o, &out};
    for (size_t i = 0; i < N_PLOTS; i++) outputs[2 + i] = &plots.files[i];
    if (out_finish_all(outputs, 2 + N_PLOTS, rc == 0) != 0) rc = EXIT_DATA;
    plots_cleanup(o, &plots, rc == 0);
    for (size_t i = 0; rc == 0 && o->plot_dir && i < N_PLOTS; i++)  // named once they are in place
        if (plot_made(o, &plots, i)) msg_error("wrote %s/%s", o->plot_dir, PLOTS[i]);
    for (size_t i = 0; rows && i < n_rows; i++) nl_compare_row_free(&rows[i]);
    for (int i = 0; quant && i < o->n_models * MAX_QUANT; i++) nl_model_free(quant[i]);  // before their bases
    for (int i = 0; models && i < o->n_models; i++) nl_model_free(models[i]);
    free(quant);
    for (int i = 0; ids && i < o->n_models; i++) free(ids[i]);
    free(models);
    free(ids);
    free(jobs);
    free(text);
    free(rows);
    free(labels);
    return rc;
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec COMPARE_OPTIONS[] = {
    OPT_HELP,
    {.name = "model",
     .letter = 'm',
     .type = OT_MODELS,
     .arg = "NAME|PATH",
     .help = "a model to compare (repeatable; the same as a positional MODEL, in the order given)"},
    OPT_TEXT_FILE,
    OPT_TEXT,
    {.name = "json",
     .type = OT_FLAG,
     .field = OPT_FIELD(json),
     .value = 1,
     .help = "the rows as a JSON array instead of the table"},
    OPT_OUTPUT,
    OPT_THREADS_AS(THREADS_RANGE, "1", NULL,
                   "rows measured side by side on N threads (1: one at a time, so that the speed columns are those "
                   "of an idle machine); the other columns are the same at any N"),
    {.name = "bn-stats",
     .type = OT_CHOICE,
     .arg = "S",
     .range = "running or batch or both (any case)",
     .def_text = "running",
     .field = OPT_FIELD(bn_stats),
     .choose = choose_bn_or_both,
     .choices = "running batch both",
     .help = "BatchNorm rows with running or batch statistics, or a row with each"},
    OPT_SKIP_UNKNOWN,
    OPT_SPECIAL,
    {.name = "also-swap",
     .type = OT_FLAG,
     .field = OPT_FIELD(also_swap),
     .value = 1,
     .help = "add, per model, rows with the other norm type (layernorm and rmsnorm each other's, batchnorm's "
             "and dyt's layernorm), the other placement (pre and post each other's, peri's pre: each placement's "
             "swap in docs/comparing.md; a dyt model's only where it needs no norm the model lacks) and no norm "
             "at all; a recurrent model with LayerNorm: a row without it"},
    {.name = "invariance",
     .type = OT_FLAG,
     .field = OPT_FIELD(invariance),
     .value = 1,
     .help = "the LayerNorm/RMSNorm invariance experiment on the text's activations"},
    {.name = "repeats",
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 1000,
     .range = "an integer in [1, 1000]",
     .def = "5",
     .field = OPT_FIELD(repeats),
     .help = "timing repeats"},
    {.name = "csv",
     .type = OT_STRING,
     .arg = "FILE",
     .field = OPT_FIELD(csv_out),
     .help = "also write the rows as CSV to FILE"},
    {.name = "plot-dir",
     .type = OT_STRING,
     .arg = "DIR",
     .field = OPT_FIELD(plot_dir),
     .help = "PNG charts via tools/lab/plot_compare.py (needs python3-matplotlib)"},
    {.name = "quantize",
     .type = OT_CHOICE,
     .arg = "LIST",
     .range = "q8, q4, f16, bf16, q8_0 or q4_0, or several joined by commas (any case)",
     .field = OPT_FIELD(quantize_rows),
     .choose = choose_quant_rows,
     .choices = "q8 q4 q8,q4 f16 bf16 q8_0 q4_0 q8_0,q4_0",
     .help = "add, per model, a row with its weights rounded so (as for eval: q8, q4 simulated; f16, bf16, q8_0, q4_0 "
             "the model 'normlab quantize' writes, run by its kernels, its MB as stored), with the bits/char (a BPE "
             "model's bits/token) and the KL divergence it costs against the float32 row"},
    OPT_QUANTIZE_ONLY,
    {.name = "fold",
     .type = OT_FLAG,
     .field = OPT_FIELD(fold),
     .value = 1,
     .help = "add, per transformer, a row with its norms folded into the linears that read them ('normlab fold'), with "
             "the largest difference of its log-probabilities from the row as trained: 0 but for float32 rounding"},
    {.name = "center",
     .type = OT_FLAG,
     .field = OPT_FIELD(center),
     .value = 1,
     .help = "with --fold, also a row folded and centred ('normlab fold --center --force': exact with LayerNorm placed "
             "pre or peri only, so the row measures what centering changes elsewhere)"},
    {.name = "quantize-act",
     .type = OT_CHOICE,
     .arg = "Q",
     .range = "none or q8 (any case)",
     .def_text = "none",
     .field = OPT_FIELD(quantize_act),
     .choose = choose_act_quant,
     .choices = "none q8",
     .help = "add, per model, a row with every linear's input rows rounded (q8 per row), weights float32"},
    OPT_LENS,
    OPT_LENS_SCALE,
    {.name = "outliers",
     .type = OT_FLAG,
     .field = OPT_FIELD(outliers),
     .value = 1,
     .help = "outlier statistics per layer of the residual stream and of every linear's input: max |x| / RMS, "
             "the share of |x| >= 6 and >= 6 RMS, kurtosis, the top channels and the norm gains' (docs/lab.md)"},
    OPT_ATTENTION,
    {.name = "attention-pattern",
     .type = OT_STRING,
     .arg = "LAYER.HEAD",
     .field = OPT_FIELD(attention_pattern),
     .help = "with --attention, keep one head's full pattern on the text's first window (JSON, --plot-dir); "
             "layers and heads count from 0"},
    OPT_NO_MMAP,
    OPT_NO_REPACK,
    OPT_END,
};

const OptRelation COMPARE_RELATIONS[] = {
    QUANTIZE_ONLY(quantize_rows),
    REQUIRES(GIVEN_INT(center), GIVEN_INT(fold), "--center adds a centred folded row: give --fold too"),
    REQUIRES(GIVEN_INT(lens_scale), GIVEN_INT(lens), "--lens-scale is how --lens reads a layer: give --lens too"),
    REL_END};  // (its --quantize: rows to add)
