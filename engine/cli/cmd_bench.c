// cmd_bench.c — bench, as llama-bench measures: prompt processing (ppN: N tokens in one forward pass)
// and text generation (tgN: N tokens decoded one at a time from an empty context) for every model x
// thread count x length, each test warmed up once and then repeated, as mean +- sd tokens per second,
// written as Markdown, aligned text, CSV or JSON. The tokens are random ids (seeded, so repeatable):
// speed does not depend on which tokens run.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
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
#include "workers.h"
#include "option_rows.h"

#define DEFAULT_PP 512  // llama-bench's -p and -n, at most the model's context
#define DEFAULT_TG 128

typedef struct {
    const char *model;  // as given
    char run[64];  // norm/placement, or family/norm
    const char *type;  // the type most of its matrices are stored as (llama-bench's model column's ftype)
    size_t bytes;  // its weights' bytes as stored (llama-bench's size)
    size_t params;
    int threads;
    int gen;  // 0: ppN (prompt processing), 1: tgN (generation)
    size_t n;
    int reps;
    double *seconds;  // (reps)
    double avg_ts, sd_ts;
} BenchRow;

// One test's runs: a warm-up, then reps timed; each run a fresh pass from position 0.
static int bench_test(NlState *s, const int *tokens, const BenchRow *r, double *seconds) {
    for (int rep = -1; rep < r->reps; rep++) {
        double t0 = nl_clock_seconds();
        if (!r->gen && !nl_forward(s, tokens, r->n, 0, 1)) return -1;
        for (size_t i = 0; r->gen && i < r->n; i++)
            if (!nl_forward(s, tokens + i, 1, i, 1)) return -1;
        if (rep >= 0) seconds[rep] = nl_clock_seconds() - t0;
    }
    return 0;
}

static void row_stats(BenchRow *r) {
    double sum = 0.0, sq = 0.0;
    for (int i = 0; i < r->reps; i++) sum += (double)r->n / r->seconds[i];
    r->avg_ts = sum / r->reps;
    for (int i = 0; i < r->reps; i++) sq += pow((double)r->n / r->seconds[i] - r->avg_ts, 2);
    r->sd_ts = r->reps > 1 ? sqrt(sq / (r->reps - 1)) : 0.0;
}

static const char *test_name(char *buf, size_t cap, const BenchRow *r) {
    snprintf(buf, cap, "%s%zu", r->gen ? "tg" : "pp", r->n);
    return buf;
}

// The type most of a model's matrices are stored as (the first of several as common).
static const char *main_type(const NlModelDesc *d) {
    size_t count[NL_DTYPE_COUNT] = {0};
    int most = 0;
    for (size_t i = 0; i < d->n_matrices; i++) count[d->matrices[i].type]++;
    for (int t = 1; t < NL_DTYPE_COUNT; t++) most = count[t] > count[most] ? t : most;
    return nl_name(NL_NAMES_DTYPE, most);
}

static int print_table(FILE *f, const BenchRow *rows, int n, int md) {
    const char *sep = md ? " | " : "  ", *edge = md ? "| " : "", *end = md ? " |" : "";
    int ok = fprintf(f, "%s%-28s%s%-16s%s%-5s%s%10s%s%10s%s%7s%s%7s%s%20s%s\n", edge, "model", sep, "run", sep, "type",
                     sep, "size", sep, "params", sep, "threads", sep, "test", sep, "t/s", end) > 0;
    if (md)
        ok &= fprintf(f, "| %s | %s | %s | %s: | %s: | %s: | %s: | %s: |\n", "---", "---", "---", "---", "---", "---",
                      "---", "---") > 0;
    for (int i = 0; i < n; i++) {
        char t[32], ts[48], size[32];
        snprintf(ts, sizeof ts, "%.2f ± %.2f", rows[i].avg_ts, rows[i].sd_ts);
        snprintf(size, sizeof size, "%.2f MiB", (double)rows[i].bytes / (1024.0 * 1024.0));
        ok &= fprintf(f, "%s%-28s%s%-16s%s%-5s%s%10s%s%10zu%s%7d%s%7s%s%20s%s\n", edge, rows[i].model, sep, rows[i].run,
                      sep, rows[i].type, sep, size, sep, rows[i].params, sep, rows[i].threads, sep,
                      test_name(t, sizeof t, &rows[i]), sep, ts, end) > 0;
    }
    return ok;
}

static int print_csv(FILE *f, const BenchRow *rows, int n) {
    int ok =
        fprintf(f, "model_filename,run,model_type,model_size,model_n_params,n_threads,test,n_prompt,n_gen,repetitions,"
                   "avg_ts,stddev_ts\n") > 0;
    for (int i = 0; i < n; i++) {
        const BenchRow *r = &rows[i];
        char t[32], quoted[2 * PATH_MAX + 3];
        size_t k = 0;
        quoted[k++] = '"';
        for (const char *c = r->model; *c && k < sizeof quoted - 3; c++) {
            if (*c == '"') quoted[k++] = '"';
            quoted[k++] = *c;
        }
        quoted[k++] = '"';
        quoted[k] = '\0';
        ok &= fprintf(f, "%s,%s,%s,%zu,%zu,%d,%s,%zu,%zu,%d,%.6f,%.6f\n", quoted, r->run, r->type, r->bytes, r->params,
                      r->threads, test_name(t, sizeof t, r), r->gen ? 0 : r->n, r->gen ? r->n : 0, r->reps, r->avg_ts,
                      r->sd_ts) > 0;
    }
    return ok;
}

static int print_json(FILE *f, const BenchRow *rows, int n) {
    cJSON *all = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        const BenchRow *r = &rows[i];
        char t[32];
        cJSON *o = cJSON_CreateObject(), *ns = cJSON_CreateArray(), *ts = cJSON_CreateArray();
        cJSON_AddItemToObject(o, "model_filename", nl_jsonx_bytes(r->model, strlen(r->model)));
        cJSON_AddStringToObject(o, "run", r->run);
        cJSON_AddStringToObject(o, "model_type", r->type);
        cJSON_AddNumberToObject(o, "model_size", (double)r->bytes);
        cJSON_AddNumberToObject(o, "model_n_params", (double)r->params);
        cJSON_AddNumberToObject(o, "n_threads", r->threads);
        cJSON_AddStringToObject(o, "test", test_name(t, sizeof t, r));
        cJSON_AddNumberToObject(o, "n_prompt", r->gen ? 0 : (double)r->n);
        cJSON_AddNumberToObject(o, "n_gen", r->gen ? (double)r->n : 0);
        cJSON_AddNumberToObject(o, "repetitions", r->reps);
        for (int k = 0; k < r->reps; k++) {
            cJSON_AddItemToArray(ns, cJSON_CreateNumber(round(r->seconds[k] * 1e9)));
            cJSON_AddItemToArray(ts, cJSON_CreateNumber((double)r->n / r->seconds[k]));
        }
        cJSON_AddItemToObject(o, "samples_ns", ns);
        cJSON_AddItemToObject(o, "samples_ts", ts);
        cJSON_AddNumberToObject(o, "avg_ts", r->avg_ts);
        cJSON_AddNumberToObject(o, "stddev_ts", r->sd_ts);
        cJSON_AddItemToArray(all, o);
    }
    char *s = nl_jsonx_print(all, 1);
    int ok = s && fprintf(f, "%s\n", s) > 0;
    free(s);
    cJSON_Delete(all);
    return ok;
}

// Every test of one model: its rows appended to rows[*n..]; an exit status.
static int bench_model(const Options *o, const char *name, const long *pp, int n_pp, const long *tg, int n_tg,
                       const long *threads, int n_threads, BenchRow *rows, int *n) {
    Options with = *o;
    with.model = name;
    NlModel *model = NULL;
    int rc = load_model(&with, &model);
    if (rc) return rc;
    NlModelDesc desc = model_desc(model);
    size_t T = desc.window, most = 0;
    long def_pp = (long)(T < DEFAULT_PP ? T : DEFAULT_PP), def_tg = (long)(T < DEFAULT_TG ? T : DEFAULT_TG);
    long pps[INT_LIST_MAX], tgs[INT_LIST_MAX];
    for (int i = 0; i < (n_pp ? n_pp : 1); i++)
        most = (size_t)(pps[i] = n_pp ? pp[i] : def_pp) > most ? (size_t)pps[i] : most;
    for (int i = 0; i < (n_tg ? n_tg : 1); i++)
        most = (size_t)(tgs[i] = n_tg ? tg[i] : def_tg) > most ? (size_t)tgs[i] : most;
    if (most > T) {
        msg_usage(o->cmd, "%s: a test of %zu tokens is longer than the model's context (%zu)", name, most, T);
        nl_model_free(model);
        return EXIT_USAGE;
    }
    int *tokens = malloc((most ? most : 1) * sizeof *tokens);
    uint64_t x = 0x9E3779B97F4A7C15ULL;  // the tokens: xorshift64's, the same every run
    for (size_t i = 0; tokens && i < most; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        tokens[i] = (int)(x % (uint64_t)desc.vocab_size);
    }
    if (!tokens) {
        msg_error("out of memory");
        rc = EXIT_DATA;
    }
    for (int t = 0; !rc && t < n_threads; t++) {
        NlState *s = NULL;
        rc = make_state_as(o, model, 1, (int)threads[t], t == 0, &s);
        for (int k = 0; !rc && k < (n_pp ? n_pp : 1) + (n_tg ? n_tg : 1); k++) {
            int gen = k >= (n_pp ? n_pp : 1);
            long len = gen ? tgs[k - (n_pp ? n_pp : 1)] : pps[k];
            if (len == 0) continue;  // -p 0 or -n 0: no such test
            BenchRow *r = &rows[(*n)++];
            *r = (BenchRow){.model = name,
                            .type = main_type(&desc),
                            .bytes = desc.weight_bytes,
                            .params = desc.parameters,
                            .threads = (int)threads[t],
                            .gen = gen,
                            .n = (size_t)len,
                            .reps = o->repeats};
            run_name(r->run, sizeof r->run, desc.arch, o->norm >= 0 ? (NlNormType)o->norm : desc.norm,
                     o->placement >= 0 ? (NlPlacement)o->placement : desc.placement, run_qk_norm(&desc, o->qk_norm));
            if (!(r->seconds = malloc((size_t)r->reps * sizeof *r->seconds))) {
                msg_error("out of memory");
                rc = EXIT_DATA;
            } else if (bench_test(s, tokens, r, r->seconds) != 0) {
                msg_error("%s: the model produced a non-finite logit", name);
                rc = EXIT_DATA;
            } else {
                row_stats(r);
            }
        }
        nl_state_free(s);
    }
    free(tokens);
    nl_model_free(model);
    return rc;
}

// The model bench runs without -m: $NORMLAB_MODEL, else the default (as load_model finds it).
static const char *default_model(void) {
    const char *env = getenv("NORMLAB_MODEL");
    return env && *env ? env : DEFAULT_MODEL;
}

int cmd_bench(Options *o) {
    static const char *const formats[] = {"md", "text", "csv", "json", "jsonl", "sql"};
    for (size_t i = 0; o->output && i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(o->output, formats[i]) == 0) {  // llama-bench's -o is the format; here it is the file
            msg_usage(o->cmd, "-o names the output file; the format is --format (md, text, csv or json), got '-o %s'",
                      o->output);
            return EXIT_USAGE;
        }
    // -p, -n and -t as parsed (options.c's OT_INT_LIST); -t absent: the engine's threads
    const long *pp = o->bench_prompt.items, *tg = o->bench_gen.items, *threads = o->bench_threads.items;
    long one_count[1] = {o->threads};
    int n_pp = o->bench_prompt.n, n_tg = o->bench_gen.n, n_threads = o->bench_threads.n ? o->bench_threads.n : 1;
    if (!o->bench_threads.n) threads = one_count;
    for (int i = 0; i < n_threads; i++)  // llama-bench runs them too; the rows say it was asked for
        if (threads[i] > available_cpus())
            msg_error("warning: --threads %ld: this process may use %d CPUs, so its threads share them", threads[i],
                      available_cpus());
    int any = 0;
    for (int i = 0; i < (n_pp ? n_pp : 1); i++) any |= !n_pp || pp[i] > 0;
    for (int i = 0; i < (n_tg ? n_tg : 1); i++) any |= !n_tg || tg[i] > 0;
    if (!any) {
        msg_usage(o->cmd, "%s", "nothing to measure: every -p and -n is 0");
        return EXIT_USAGE;
    }
    int n_models = o->n_models ? o->n_models : 1;
    size_t cap = (size_t)n_models * (size_t)n_threads * (size_t)((n_pp ? n_pp : 1) + (n_tg ? n_tg : 1));
    BenchRow *rows = calloc(cap, sizeof *rows);
    OutFile out = {0};
    const char *outs[1] = {o->output ? o->output : "-"};
    int n = 0, rc = rows ? check_outputs(o, outs, 1) : EXIT_DATA;
    if (!rows) msg_error("out of memory");
    for (int m = 0; !rc && m < n_models; m++)
        rc = bench_model(o, o->n_models ? o->models[m] : default_model(), pp, n_pp, tg, n_tg, threads, n_threads, rows,
                         &n);
    if (!rc) rc = open_main_output(o, &out);
    if (!rc) {
        int ok = o->bench_format == BENCH_CSV    ? print_csv(out.f, rows, n)
                 : o->bench_format == BENCH_JSON ? print_json(out.f, rows, n)
                                                 : print_table(out.f, rows, n, o->bench_format == BENCH_MD);
        if (!ok || fflush(out.f) == EOF) {
            msg_error("cannot write %s: %s", o->output ? o->output : "to stdout", strerror(errno));
            rc = EXIT_DATA;
        }
    }
    if (out_finish(&out, rc == 0) != 0) rc = EXIT_DATA;
    for (int i = 0; rows && i < n; i++) free(rows[i].seconds);
    free(rows);
    return rc;
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec BENCH_OPTIONS[] = {
    OPT_HELP,
    {.name = "model",
     .letter = 'm',
     .type = OT_MODELS,
     .arg = "NAME|PATH",
     .def_text = "$NORMLAB_MODEL, else shakespeare-pre-ln",
     .help = "a model to measure (repeatable: each in the order given)"},
    OPT_OUTPUT,
    {.name = "n-prompt",
     .letter = 'p',
     .type = OT_INT_LIST,
     .lo = 0,
     .hi = 1 << 20,
     .arg = "N,...",
     .def_text = "512, or the model's context if shorter",
     .field = OPT_FIELD(bench_prompt),
     .help = "prompt-processing tests: N tokens in one forward pass each (ppN); comma-separated, 0 for none"},
    {.name = "n-gen",
     .letter = 'n',
     .type = OT_INT_LIST,
     .lo = 0,
     .hi = 1 << 20,
     .arg = "N,...",
     .def_text = "128, or the model's context if shorter",
     .field = OPT_FIELD(bench_gen),
     .help = "text-generation tests: N tokens decoded one at a time from an empty context (tgN); comma-separated, "
             "0 for none"},
    {.name = "threads",
     .letter = 't',
     .type = OT_INT_LIST,
     .lo = 1,
     .hi = 1024,
     .arg = "N,...",
     .def_text = "every CPU this process may use",
     .field = OPT_FIELD(bench_threads),
     .help = "the thread counts each test runs at (one stream's products split over N threads); comma-separated"},
    {.name = "repetitions",
     .letter = 'r',
     .type = OT_INT,
     .arg = "N",
     .lo = 1,
     .hi = 1000,
     .range = "an integer in [1, 1000]",
     .def = "5",
     .field = OPT_FIELD(repeats),
     .help = "timed runs of each test, after one untimed warm-up"},
    {.name = "json",
     .type = OT_FLAG,
     .field = OPT_FIELD(bench_format),
     .value = BENCH_JSON,
     .help = "--format json, as every other command's --json"},
    {.name = "format",
     .type = OT_CHOICE,
     .arg = "F",
     .range = "md, text, csv or json (any case)",
     .def = "md",
     .field = OPT_FIELD(bench_format),
     .choose = choose_format,
     .choices = "md text csv json",
     .help = "the rows as a Markdown table (llama-bench's default), aligned text, CSV or a JSON array with each "
             "repetition's time (samples_ns)"},
    OPT_NO_MMAP,
    OPT_NO_REPACK,
    OPT_END,
};
