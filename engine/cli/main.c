// main.c — the normlab command line: generate, eval, info, help.
// Only this file prints diagnostics or chooses exit codes: 0 ok, 1 runtime or data error, 2 usage.
#define _GNU_SOURCE
#include <spawn.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fileio.h"
#include "msg.h"
#include "output.h"
#include "kernels.h"
#include "normlab.h"
#include "report.h"

#define EXIT_DATA 1
#define EXIT_USAGE 2
#define TEXT_CAP ((size_t)1 << 30)
#define DEFAULT_MODEL "weights/shakespeare-pre-ln"

// The OpenBLAS kernel family the process runs, and who chose it.
typedef struct {
    char reported[64];   // the family OpenBLAS picked by itself (before normlab asked for another)
    const char *source;  // "openblas", "environment" (OPENBLAS_CORETYPE was set) or "normlab"
} BlasChoice;

typedef struct {
    const char *cmd;
    BlasChoice blas;
    const char *model;
    const char *prompt;
    const char *prompt_file;
    const char *text_file;
    long n_new;
    NlSamplerParams sampling;
    uint64_t seed;
    int has_seed;
    int norm, placement;  // -1: as configured
    int threads;  // engine worker threads; at most that many OpenBLAS threads per product
    int exact_window, skip_unknown, json, echo;
    long stride;  // 0: T/2
    int profile, counters;
    const char *json_out, *trace_out;
    int also_swap, invariance, repeats;
    int samples;  // generate: streams decoded together
    int batch;    // eval: windows per forward call (0: as many as fill EVAL_ROWS positions)
    int no_mmap;  // read the weights into memory instead of mapping them
    int warmup;   // generate: one untimed pass over the prompt first
    const char *csv_out, *plot_dir;
    char **models;  // compare: the positional model arguments
    int n_models;
} Options;

static const char *const HELP_MAIN =
    "usage: normlab COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  generate   sample text from a model, streamed to stdout\n"
    "  eval       bits per character of a model on a text file\n"
    "  info       a model's configuration, parameters and memory\n"
    "  logits     the logits of every position of a text, as JSON lines\n"
    "  profile    where the time and FLOPs of a forward pass go, layer by layer\n"
    "  compare    models that differ in normalization, side by side on one text\n"
    "  help CMD   the options of one command\n"
    "\n"
    "normlab --version prints the version. Exit status: 0 ok, 1 runtime or data error, 2 usage error.\n";

static const char *const HELP_GENERATE =
    "usage: normlab generate [-m MODEL] [-p TEXT | -f FILE] [-n N] [options]\n"
    "\n"
    "Streams N sampled characters to stdout (only them; timing goes to stderr).\n"
    "  -m, --model PATH       model directory or .json file (default: $NORMLAB_MODEL, else\n"
    "                         weights/shakespeare-pre-ln beside the normlab binary)\n"
    "  -p, --prompt TEXT      the prompt; empty or absent starts from a newline\n"
    "  -f, --file FILE        read the prompt from FILE ('-': standard input)\n"
    "  -n, --steps N          characters to generate (default 256; 0 generates nothing)\n"
    "      --temperature T    0 = greedy, else in [1e-4, 1e4] (default 1.0)\n"
    "      --top-k K          keep the K most likely characters (default 0 = off; K > V keeps all)\n"
    "      --top-p P          keep the smallest set with mass >= P, P in (0, 1] (default 1 = off)\n"
    "      --seed S           0 .. 2^64-1; absent: a seed from the OS, printed to stderr\n"
    "      --norm NAME        run the norms as layernorm or rmsnorm (overrides the config)\n"
    "      --placement NAME   run the blocks pre or post (overrides the config)\n"
    "      --exact-window     recompute the last block_size positions for every token (nanoGPT)\n"
    "                         instead of shifting the context by half a window when it is full\n"
    "      --skip-unknown     drop prompt characters outside the vocabulary (with a warning)\n"
    "      --echo             print the prompt before the generated text\n"
    "      --samples N        N independent continuations decoded together (every product shared);\n"
    "                         stream i samples with seed S+i (S = --seed); printed one after another\n"
    "                         under a '--- sample i, seed S+i ---' line, or as JSON lines with --json\n"
    "      --json             with --samples: one {\"sample\", \"seed\", \"text\"} object per line\n"
    "      --warmup           run the prompt once, untimed, before the timed run (benchmarks: the\n"
    "                         timings then leave out the first touch of the memory-mapped weights)\n"
    "      --batch N          with --samples: streams decoded together in one forward call (default\n"
    "                         8); the groups of N streams run on the engine threads\n"
    "  -t, --threads N        engine threads (default: every CPU this process may use): sample groups\n"
    "                         run side by side; OpenBLAS may use N threads for matrix-vector products\n"
    "                         of 1M weights or more. The text is the same at any N\n"
    "      --profile          print the per-layer profile (see 'normlab help profile') to stderr\n"
    "      --counters         with --profile: instructions per cycle, when perf counters are available\n"
    "      --no-mmap          read the weights into memory instead of mapping them (every command takes\n"
    "                         it): a file rewritten in place under a mapping kills the process\n"
    "Long options may be shortened to any unambiguous prefix (--temp for --temperature).\n";

static const char *const HELP_PROFILE =
    "usage: normlab profile [-m MODEL] [-p TEXT | -f FILE] [-n N] [--threads N] [--json OUT] [--trace OUT]\n"
    "\n"
    "Generates N characters (default 256) after the prompt and prints where the time went: prefill\n"
    "(the prompt, one batched pass) and decode (one token at a time) apart, every layer x component,\n"
    "with calls, time, share, FLOPs, GFLOP/s, bytes and GB/s, then per-layer and per-component totals\n"
    "and the part of the wall time no row covers. The generated text is not printed.\n"
    "  -m, --model PATH       model (default as for generate)\n"
    "  -p, --prompt TEXT      prompt (default: a built-in line, or a newline if the vocabulary lacks it)\n"
    "  -f, --file FILE        read the prompt from FILE ('-': standard input)\n"
    "  -n, --steps N          characters to generate (default 256)\n"
    "  -t, --threads N        as for generate; with several threads the times are summed over them\n"
    "      --json OUT         also write the table as JSON to OUT\n"
    "      --trace OUT        write a Chrome trace (Perfetto, chrome://tracing) to OUT\n"
    "      --counters         add instructions per cycle from Linux perf counters, when available\n"
    "      --seed, --temperature, --top-k, --top-p, --norm, --placement, --exact-window,\n"
    "      --skip-unknown     as for generate (the seed defaults to 0 here)\n";

static const char *const HELP_COMPARE =
    "usage: normlab compare MODEL... --text FILE [--json OUT] [--csv OUT] [--plot-dir DIR]\n"
    "                       [--also-swap] [--invariance] [--repeats N] [--threads N]\n"
    "\n"
    "The same text through every model: one row per model with norm type, placement, parameters,\n"
    "bits/char and perplexity, prefill and decode tokens/s (medians), the share of forward time in\n"
    "normalization, per-layer hidden-state statistics, and the largest logit difference between a\n"
    "sequence alone and in a batch of 16, and between prefill and KV-cache decoding.\n"
    "      --text FILE        UTF-8 text to score (every model must know its characters)\n"
    "      --also-swap        add, per model, a row with the other norm type and one with the other placement\n"
    "      --invariance       the LayerNorm/RMSNorm invariance experiment on the text's activations\n"
    "      --repeats N        timing repeats (default 5)\n"
    "  -t, --threads N        rows measured side by side on N threads (default 1: one at a time, so\n"
    "                         that the speed columns are those of an idle machine); the other\n"
    "                         columns are the same at any N\n"
    "      --json OUT, --csv OUT   the rows as JSON (an array of objects) or CSV\n"
    "      --plot-dir DIR     PNG charts via tools/plot_compare.py (needs python3-matplotlib)\n"
    "      --skip-unknown     drop characters a model does not know\n";

static const char *const HELP_EVAL =
    "usage: normlab eval [-m MODEL] --text FILE [--json] [--stride N] [--skip-unknown]\n"
    "\n"
    "Average negative log-likelihood of every character of FILE after the first, given those\n"
    "before it within the context window, as nats/char, bits/char and perplexity.\n"
    "  -m, --model PATH       model (default as for generate)\n"
    "      --text FILE        UTF-8 text to score ('-': standard input)\n"
    "      --stride N         window step for texts longer than the context (default block_size/2):\n"
    "                         each character is scored once, with at least block_size - N characters\n"
    "                         of context\n"
    "      --json             one JSON object on stdout\n"
    "      --skip-unknown     drop characters outside the vocabulary and count them\n"
    "  -t, --threads N        engine threads (default: every CPU this process may use), each scoring\n"
    "                         its share of the windows; the result is the same at any N\n"
    "      --batch N          windows per forward call (default: 1024 / block_size, at least 1);\n"
    "                         changes the order of float sums, so the last digits may differ\n"
    "      --norm, --placement   as for generate\n"
    "      --profile          print the per-layer profile to stderr (--counters: with IPC)\n";

static const char *const HELP_LOGITS =
    "usage: normlab logits [-m MODEL] (-p TEXT | -f FILE) [--norm NAME] [--placement NAME] [--skip-unknown]\n"
    "\n"
    "Prints the logits of every position of the text (at most block_size characters) as one JSON\n"
    "array of V numbers per line, from one batched prefill. For checking the engine against other\n"
    "implementations (tools/parity.py).\n";

static const char *const HELP_INFO =
    "usage: normlab info [-m MODEL] [--json]\n"
    "\n"
    "Prints the model's configuration, parameter count, bytes of weights and of the KV cache,\n"
    "and the provenance stored with the weights.\n";

enum { OPT_TEMP = 256, OPT_TOPK, OPT_TOPP, OPT_SEED, OPT_NORM, OPT_PLACEMENT, OPT_THREADS, OPT_EXACT,
       OPT_SKIP, OPT_JSON, OPT_TEXT, OPT_STRIDE, OPT_ECHO, OPT_PROFILE, OPT_JSON_OUT, OPT_TRACE, OPT_COUNTERS,
       OPT_ALSO_SWAP, OPT_INVARIANCE, OPT_REPEATS, OPT_CSV, OPT_PLOT_DIR, OPT_SAMPLES, OPT_WARMUP, OPT_BATCH, OPT_NO_MMAP };

// A usage error of cmd: one escaped line naming the option or value, then where help is.
#define usage_error(cmd, fmt, arg) msg_usage(cmd, fmt, arg)

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

// Flushes stdout; EXIT_DATA, with the reason on stderr, when anything written to it failed.
static int check_stdout(int ok) {
    if (ok && fflush(stdout) != EOF) return 0;
    msg_error("cannot write to stdout: %s", strerror(errno ? errno : EIO));
    return EXIT_DATA;
}

// ---- strict number parsing (the C locale is never changed, so '.' is the decimal point)

// Only plain decimal text: no leading space or '+', no hex ("0x..."), which strtol/strtod accept.
static int plain_number(const char *s) {
    if (!(*s == '-' || *s == '.' || (*s >= '0' && *s <= '9'))) return 0;
    return strspn(s, "0123456789.eE+-") == strlen(s);
}

static int parse_long(const char *s, long min, long max, long *out) {
    char *end;
    if (!plain_number(s)) return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
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

static int parse_choice(const char *s, const char *a, const char *b) {
    if (strcmp(s, a) == 0) return 0;
    if (strcmp(s, b) == 0) return 1;
    return -1;
}

// Applies one option; returns 0, or EXIT_USAGE after printing why.
static int apply_option(Options *o, int c, const char *arg) {
    long v;
    double d;
    switch (c) {
    case 'm': o->model = arg; return 0;
    case 'p': o->prompt = arg; return 0;
    case 'f': o->prompt_file = arg; return 0;
    case OPT_TEXT: o->text_file = arg; return 0;
    case OPT_EXACT: o->exact_window = 1; return 0;
    case OPT_SKIP: o->skip_unknown = 1; return 0;
    case OPT_JSON: o->json = 1; return 0;
    case OPT_ECHO: o->echo = 1; return 0;
    case OPT_PROFILE: o->profile = 1; return 0;
    case OPT_WARMUP: o->warmup = 1; return 0;
    case OPT_NO_MMAP: o->no_mmap = 1; return 0;
    case OPT_COUNTERS: o->counters = 1; return 0;
    case OPT_JSON_OUT: o->json_out = arg; return 0;
    case OPT_TRACE: o->trace_out = arg; return 0;
    case OPT_ALSO_SWAP: o->also_swap = 1; return 0;
    case OPT_INVARIANCE: o->invariance = 1; return 0;
    case OPT_CSV: o->csv_out = arg; return 0;
    case OPT_PLOT_DIR: o->plot_dir = arg; return 0;
    case OPT_SAMPLES:
        if (parse_long(arg, 1, 256, &v) != 0) { usage_error(o->cmd, "--samples must be an integer in [1, 256], got '%s'", arg); return EXIT_USAGE; }
        o->samples = (int)v;
        return 0;
    case OPT_BATCH:
        if (parse_long(arg, 1, 256, &v) != 0) {
            usage_error(o->cmd, "--batch must be an integer in [1, 256], got '%s'", arg);
            return EXIT_USAGE;
        }
        o->batch = (int)v;
        return 0;
    case OPT_REPEATS:
        if (parse_long(arg, 1, 1000, &v) != 0) { usage_error(o->cmd, "--repeats must be an integer in [1, 1000], got '%s'", arg); return EXIT_USAGE; }
        o->repeats = (int)v;
        return 0;
    case 'n':
        if (parse_long(arg, 0, 1000000000L, &v) != 0) { usage_error(o->cmd, "-n must be an integer in [0, 1000000000], got '%s'", arg); return EXIT_USAGE; }
        o->n_new = v;
        return 0;
    case OPT_TEMP:
        if (parse_double(arg, &d) != 0 || d < 0 || (d != 0 && (d < 1e-4 || d > 1e4))) {
            usage_error(o->cmd, "--temperature must be 0 or a number in [1e-4, 1e4], got '%s'", arg);
            return EXIT_USAGE;
        }
        o->sampling.temperature = d;
        return 0;
    case OPT_TOPK:
        if (parse_long(arg, 0, LONG_MAX, &v) != 0) { usage_error(o->cmd, "--top-k must be an integer >= 0, got '%s'", arg); return EXIT_USAGE; }
        o->sampling.top_k = v > INT_MAX ? INT_MAX : (int)v;  // above V keeps everything anyway
        return 0;
    case OPT_TOPP:
        if (parse_double(arg, &d) != 0 || !(d > 0 && d <= 1)) { usage_error(o->cmd, "--top-p must be in (0, 1], got '%s'", arg); return EXIT_USAGE; }
        o->sampling.top_p = d;
        return 0;
    case OPT_SEED:
        if (parse_u64(arg, &o->seed) != 0) { usage_error(o->cmd, "--seed must be an integer in [0, 2^64-1], got '%s'", arg); return EXIT_USAGE; }
        o->has_seed = 1;
        return 0;
    case OPT_NORM:
        if ((o->norm = parse_choice(arg, "layernorm", "rmsnorm")) < 0) { usage_error(o->cmd, "--norm must be layernorm or rmsnorm, got '%s'", arg); return EXIT_USAGE; }
        return 0;
    case OPT_PLACEMENT:
        if ((o->placement = parse_choice(arg, "pre", "post")) < 0) { usage_error(o->cmd, "--placement must be pre or post, got '%s'", arg); return EXIT_USAGE; }
        return 0;
    case OPT_THREADS:
        if (parse_long(arg, 1, 1024, &v) != 0) { usage_error(o->cmd, "--threads must be an integer in [1, 1024], got '%s'", arg); return EXIT_USAGE; }
        o->threads = (int)v;
        return 0;
    case OPT_STRIDE:
        if (parse_long(arg, 1, 1 << 16, &v) != 0) { usage_error(o->cmd, "--stride must be a positive integer, got '%s'", arg); return EXIT_USAGE; }
        o->stride = v;
        return 0;
    }
    return EXIT_USAGE;
}

// Parses argv for one command; `allowed` lists the option codes that command takes.
static int parse_options(Options *o, int argc, char **argv, const int *allowed) {
    static const struct option LONG[] = {
        {"model", required_argument, 0, 'm'},      {"prompt", required_argument, 0, 'p'},
        {"file", required_argument, 0, 'f'},       {"steps", required_argument, 0, 'n'},
        {"temperature", required_argument, 0, OPT_TEMP}, {"top-k", required_argument, 0, OPT_TOPK},
        {"top-p", required_argument, 0, OPT_TOPP}, {"seed", required_argument, 0, OPT_SEED},
        {"norm", required_argument, 0, OPT_NORM},  {"placement", required_argument, 0, OPT_PLACEMENT},
        {"threads", required_argument, 0, OPT_THREADS}, {"exact-window", no_argument, 0, OPT_EXACT},
        {"skip-unknown", no_argument, 0, OPT_SKIP}, {"json", no_argument, 0, OPT_JSON},
        {"text", required_argument, 0, OPT_TEXT},  {"stride", required_argument, 0, OPT_STRIDE},
        {"echo", no_argument, 0, OPT_ECHO},        {"help", no_argument, 0, 'h'},
        {"profile", no_argument, 0, OPT_PROFILE},  {"trace", required_argument, 0, OPT_TRACE},
        {"counters", no_argument, 0, OPT_COUNTERS}, {"also-swap", no_argument, 0, OPT_ALSO_SWAP},
        {"invariance", no_argument, 0, OPT_INVARIANCE}, {"repeats", required_argument, 0, OPT_REPEATS},
        {"csv", required_argument, 0, OPT_CSV},    {"plot-dir", required_argument, 0, OPT_PLOT_DIR},
        {"samples", required_argument, 0, OPT_SAMPLES}, {"warmup", no_argument, 0, OPT_WARMUP},
        {"batch", required_argument, 0, OPT_BATCH}, {"no-mmap", no_argument, 0, OPT_NO_MMAP}, {0, 0, 0, 0}};
    struct option long_profile[sizeof LONG / sizeof LONG[0]];
    const struct option *table = LONG;
    if (strcmp(o->cmd, "profile") == 0 || strcmp(o->cmd, "compare") == 0) {  // there --json names a file
        memcpy(long_profile, LONG, sizeof LONG);
        for (struct option *x = long_profile; x->name; x++)
            if (strcmp(x->name, "json") == 0) { x->has_arg = required_argument; x->val = OPT_JSON_OUT; }
        table = long_profile;
    }
    opterr = 0;
    optind = 1;
    int c, li = -1;
    while ((c = getopt_long(argc, argv, ":m:p:f:n:t:h", table, &li)) != -1) {
        if (c == 'h') return -1;
        if (c == 't') c = OPT_THREADS;
        char opt[64];
        if (c == '?' || c == ':') {
            if (optopt && optopt < 256) snprintf(opt, sizeof opt, "-%c", optopt);
            else snprintf(opt, sizeof opt, "%s", argv[optind - 1]);
            usage_error(o->cmd, c == ':' ? "option '%s' needs a value" : "unknown or ambiguous option '%s'", opt);
            return EXIT_USAGE;
        }
        if (li >= 0) snprintf(opt, sizeof opt, "--%s", table[li].name);
        else snprintf(opt, sizeof opt, "-%c", c);
        li = -1;
        int ok = 0;
        for (const int *a = allowed; *a; a++) ok |= (*a == c);
        if (!ok) { usage_error(o->cmd, "option '%s' does not apply to this command", opt); return EXIT_USAGE; }
        int rc = apply_option(o, c, optarg);
        if (rc != 0) return rc;
    }
    if (strcmp(o->cmd, "compare") == 0) {
        o->models = argv + optind;
        o->n_models = argc - optind;
        return 0;
    }
    if (optind < argc) { usage_error(o->cmd, "unexpected argument '%s'", argv[optind]); return EXIT_USAGE; }
    return 0;
}

// ---- shared steps

// The CPUs this process may run on (sched_getaffinity), at least 1.
static int available_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}


// Finds `rel` (a path inside the repository) beside the running binary, or one or two folders up
// (the sanitizer build lives in build/san/). Falls back to `rel` relative to the working folder.
static const char *beside_binary(const char *rel, char *buf, size_t len) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return rel;
    exe[n] = '\0';
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash) break;
        *slash = '\0';
        snprintf(buf, len, "%s/%s", exe, rel);
        if (access(buf, F_OK) == 0) return buf;
    }
    return rel;
}

// The default model: $NORMLAB_MODEL, else weights/shakespeare-pre-ln beside the binary.
static const char *default_model(char *buf, size_t len) {
    const char *env = getenv("NORMLAB_MODEL");
    if (env && *env) return env;
    return beside_binary(DEFAULT_MODEL, buf, len);
}

static const char *model_path(const Options *o, char *buf, size_t len) {
    return o->model ? o->model : default_model(buf, len);
}

static int load_model(const Options *o, NlModel **model) {
    char buf[4400];
    const char *path = model_path(o, buf, sizeof buf);
    const char *env = getenv("NORMLAB_MODEL");
    if (!o->model && env && *env && access(path, F_OK) != 0) {
        msg_error("NORMLAB_MODEL=%s: no such model", path);
        return EXIT_DATA;
    }
    if (!o->model && access(path, F_OK) != 0) {
        msg_error("no trained model at %s yet; train one (see README) or pass -m MODEL", path);
        return EXIT_DATA;
    }
    NlError err;
    NlLoadOptions lo = {o->no_mmap};
    if (nl_model_load_with(model, path, &lo, &err) != 0) {
        msg_error("%s", err.msg);
        return EXIT_DATA;
    }
    return 0;
}

// Creates a run state of `batch` sequences and up to blas_threads OpenBLAS threads per product;
// with warn, says so when the norm or placement differ from the model's training.
static int make_state_as(const Options *o, const NlModel *model, int batch, int blas_threads, int warn,
                         NlState **state) {
    const NlConfig *c = nl_model_config(model);
    NlRunOptions run = {o->norm >= 0 ? (NlNormType)o->norm : c->norm,
                        o->placement >= 0 ? (NlPlacement)o->placement : c->placement, batch, blas_threads};
    if (warn && (run.norm != c->norm || run.placement != c->placement))
        msg_error("warning: the model was trained as %s/%s; running it as %s/%s",
                nl_config_norm_name(c->norm), nl_config_placement_name(c->placement),
                nl_config_norm_name(run.norm), nl_config_placement_name(run.placement));
    NlError err;
    if (nl_state_create(state, model, &run, &err) != 0) {
        msg_error("%s", err.msg);
        return EXIT_DATA;
    }
    return 0;
}

static int make_state(const Options *o, const NlModel *model, NlState **state) {
    return make_state_as(o, model, o->samples, o->threads, 1, state);
}

// Encodes text (len bytes) into a new id array.
static int encode(const NlModel *model, const char *what, const char *text, size_t len, int skip_unknown,
                  int **ids, size_t *n, size_t *skipped) {
    *ids = malloc((len + 1) * sizeof **ids);
    if (!*ids) { msg_error("out of memory for %s", what); return EXIT_DATA; }
    char err[400];
    if (nl_tokenizer_encode(nl_model_tokenizer(model), text, len, skip_unknown, *ids, n, skipped, err, sizeof err) != 0) {
        msg_error("%s: %s", what, err);
        return EXIT_DATA;
    }
    if (*skipped) msg_error("warning: %s: dropped %zu character%s outside the vocabulary", what, *skipped, plural(*skipped));
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
            if (!bigger) { free(data); data = NULL; break; }
            data = bigger;
            cap *= 2;
        }
    }
    if (!data || ferror(stdin)) {
        msg_error("-: cannot read standard input%s", data ? "" : " (too large or out of memory)");
        free(data);
        return EXIT_DATA;
    }
    data[n] = '\0';
    *buf = data;
    *len = n;
    return 0;
}

static int read_text(const char *path, char **buf, size_t *len) {
    NlError err;
    if (strcmp(path, "-") == 0) return read_stdin(buf, len);
    if (file_read_all(AT_FDCWD, path, path, TEXT_CAP, buf, len, &err) != 0) {
        msg_error("%s", err.msg);
        return EXIT_DATA;
    }
    return 0;
}

// ---- generate

typedef struct {
    const NlTokenizer *tok;
    int write_failed;
} EmitCtx;

static int emit_token(int token, void *ctx) {
    EmitCtx *e = ctx;
    const char *piece = nl_tokenizer_piece(e->tok, token);
    if (fputs(piece, stdout) == EOF || fflush(stdout) == EOF) {
        e->write_failed = errno ? errno : EIO;
        return 1;
    }
    return 0;
}

// --samples N > 1: each stream's text is collected, then printed whole.
typedef struct {
    const NlTokenizer *tok;
    char **text;   // (N) growing NUL-terminated buffers
    size_t *len, *cap;
    atomic_int failed;  // set from any worker thread
} Collect;

static int collect_token(int stream, int token, void *ctx) {
    Collect *c = ctx;
    const char *piece = nl_tokenizer_piece(c->tok, token);
    size_t n = strlen(piece), need = c->len[stream] + n + 1;
    if (need > c->cap[stream]) {
        size_t cap = need * 2;
        char *bigger = realloc(c->text[stream], cap);
        if (!bigger) { c->failed = 1; return 1; }
        c->text[stream] = bigger;
        c->cap[stream] = cap;
    }
    memcpy(c->text[stream] + c->len[stream], piece, n + 1);
    c->len[stream] += n;
    return 0;
}

static int stream_token(int stream, int token, void *ctx) {
    (void)stream;
    return emit_token(token, ctx);
}

static int stream_nothing(int stream, int token, void *ctx) {
    (void)stream;
    (void)token;
    (void)ctx;
    return 0;
}

// Prints the collected streams one after another, or as JSON lines.
static int print_samples(const Collect *c, int n, uint64_t seed, int json) {
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        unsigned long long s = (unsigned long long)(seed + (uint64_t)i);
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "sample", i);
            cJSON_AddStringToObject(o, "seed", "");
            char num[32];
            snprintf(num, sizeof num, "%llu", s);
            cJSON_ReplaceItemInObject(o, "seed", cJSON_CreateRaw(num));  // exact: seeds exceed 2^53
            cJSON_AddStringToObject(o, "text", c->text[i] ? c->text[i] : "");
            char *line = cJSON_PrintUnformatted(o);
            ok = line && printf("%s\n", line) > 0;
            cJSON_free(line);
            cJSON_Delete(o);
        } else {
            ok = printf("--- sample %d, seed %llu ---\n%s\n", i, s, c->text[i] ? c->text[i] : "") > 0;
        }
    }
    return ok && fflush(stdout) != EOF ? 0 : -1;
}


// Attaches a profiler; with --trace it keeps the events of n_forward forward passes.
static int attach_profiler(const Options *o, const NlModel *model, NlState *state, size_t n_forward, NlProfiler **prof) {
    const NlConfig *c = nl_model_config(model);
    size_t per_forward = o->trace_out ? (size_t)c->n_layer * 12 + 6 : 0;
    NlError err;
    if (nl_profiler_create(prof, nl_state_config(state), n_forward * per_forward, o->counters, &err) != 0) {
        msg_error("%s", err.msg);
        return EXIT_DATA;
    }
    nl_state_set_profiler(state, *prof);
    return 0;
}

// The files a command reads: every file of every model named (a directory's three files, or the
// .json file) and the text or prompt file. Returns the count; list holds them (freed by free_list).
static size_t input_files(const Options *o, char ***list) {
    size_t n_models = strcmp(o->cmd, "compare") == 0 ? (size_t)o->n_models : 1, n = 0;
    char **l = calloc(3 * n_models + 2, sizeof *l), buf[4400];
    static const char *const FILES[3] = {"config.json", "tokenizer.json", "model.safetensors"};
    for (size_t i = 0; l && i < n_models; i++) {
        const char *m = strcmp(o->cmd, "compare") == 0 ? o->models[i] : model_path(o, buf, sizeof buf);
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
static int check_outputs(const Options *o, const char *const *outputs, size_t n_out) {
    char **in = NULL, shipped[4400];
    size_t n_in = input_files(o, &in);
    int rc = out_check_all(o->cmd, outputs, n_out, (const char *const *)in, n_in, beside_binary("weights", shipped, sizeof shipped));
    free_list(in, n_in);
    return rc;
}

// Writes the profile of a run on `workers` engine threads with up to blas_threads OpenBLAS threads.
static int write_profile(const Options *o, const NlProfiler *prof, int workers, int blas_threads, FILE *table,
                         FILE *json_f, FILE *trace_f) {
    size_t n_events, dropped;
    const NlProfileEvent *events;
    n_events = nl_profiler_events(prof, &events, &dropped);
    if (trace_f && dropped) {
        msg_error("the trace holds at most %zu events and this run made %zu; profile fewer tokens (-n)", n_events,
                  n_events + dropped);
        return EXIT_DATA;
    }
    char buf[4400];
    NlReportInfo info = {model_path(o, buf, sizeof buf), blas_threads, workers, nl_blas_core(), o->blas.source};
    // The files first, so that a failed write leaves stdout empty.
    if (json_f && (nl_report_json(json_f, prof, &info) != 0 || fflush(json_f) == EOF)) {
        msg_error("%s: write failed: %s", o->json_out, strerror(errno));
        return EXIT_DATA;
    }
    if (trace_f && (nl_report_trace(trace_f, prof, &info) != 0 || fflush(trace_f) == EOF)) {
        msg_error("%s: write failed: %s", o->trace_out, strerror(errno));
        return EXIT_DATA;
    }
    if (nl_report_text(table, prof, &info) != 0 || fflush(table) == EOF) {
        msg_error("cannot write the profile: %s", strerror(errno));
        return EXIT_DATA;
    }
    return 0;
}

static uint64_t seed_from_os(void) {
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(&seed, sizeof seed, 1, f) != 1) seed = (uint64_t)getpid() * 0x9E3779B97F4A7C15ULL;
        if (f) fclose(f);
    }
    return seed;
}

// Reads the prompt (from -p or -f) into ids; an empty prompt becomes "\n".
// The profile command's default prompt (our own line), used when the vocabulary has its characters.
static const char *const PROFILE_PROMPT = "KING:\nNow speak, good friend, and tell me true:\nWhat news from Milan?\n";

static int encodable(const NlModel *model, const char *text) {
    size_t len = strlen(text), n, skipped;
    int *ids = malloc((len + 1) * sizeof *ids);
    char err[64];
    int ok = ids && nl_tokenizer_encode(nl_model_tokenizer(model), text, len, 0, ids, &n, &skipped, err, sizeof err) == 0;
    free(ids);
    return ok;
}

static int prompt_ids(const Options *o, const NlModel *model, int **ids, size_t *n, char **text, size_t *len) {
    if (!o->prompt && !o->prompt_file && strcmp(o->cmd, "profile") == 0 && encodable(model, PROFILE_PROMPT)) {
        Options with = *o;
        with.prompt = PROFILE_PROMPT;
        return prompt_ids(&with, model, ids, n, text, len);
    }
    if (o->prompt_file) {
        int rc = read_text(o->prompt_file, text, len);
        if (rc) return rc;
    } else {
        *text = strdup(o->prompt ? o->prompt : "");
        *len = *text ? strlen(*text) : 0;
        if (!*text) return EXIT_DATA;
    }
    if (*len == 0) {
        free(*text);
        *text = strdup("\n");
        *len = 1;
        if (!*text) return EXIT_DATA;
    }
    size_t skipped = 0;
    char what[4200];
    snprintf(what, sizeof what, "%s", o->prompt_file ? o->prompt_file : "prompt");
    int rc = encode(model, what, *text, *len, o->skip_unknown, ids, n, &skipped);
    if (rc) return rc;
    if (*n == 0) {  // nothing known was left: start from a newline, as an empty prompt does
        Options with = *o;
        with.prompt = "";
        with.prompt_file = NULL;
        free(*text);
        free(*ids);
        return prompt_ids(&with, model, ids, n, text, len);
    }
    return 0;
}

// Timing on stderr; a newline first when the generated text went to the same terminal.
static void print_timing(const NlGenerateStats *st, int streams) {
    size_t tokens = st->decode_tokens * (size_t)streams;
    char per[64] = "";
    if (streams > 1) snprintf(per, sizeof per, " (%zu steps x %d streams)", st->decode_tokens, streams);
    fprintf(stderr, "%snormlab: prefill %zu token%s in %.2f ms (%.0f tok/s); decode %zu token%s%s in %.2f ms (%.0f tok/s)",
            isatty(STDOUT_FILENO) && isatty(STDERR_FILENO) ? "\n" : "", st->prompt_used, plural(st->prompt_used),
            st->prefill_seconds * 1e3, st->prompt_used / (st->prefill_seconds > 0 ? st->prefill_seconds : 1e-9),
            tokens, plural(tokens), per, st->decode_seconds * 1e3,
            tokens ? (double)tokens / (st->decode_seconds > 0 ? st->decode_seconds : 1e-9) : 0.0);
    if (st->context_shifts) fprintf(stderr, "; %zu context shift%s", st->context_shifts, plural(st->context_shifts));
    fprintf(stderr, "\n");
}

// One sampler per stream; stream i is seeded with seed + i.
static int make_samplers(const Options *o, const NlModel *model, uint64_t seed, NlSampler **samplers) {
    for (int i = 0; i < o->samples; i++) {
        NlError err;
        if (nl_sampler_create(&samplers[i], nl_model_config(model)->vocab_size, o->sampling, seed + (uint64_t)i, &err) != 0) {
            msg_error("%s", err.msg);
            return EXIT_DATA;
        }
    }
    return 0;
}

// Streams decoded together in one forward call by default (--samples): groups of 8 measured within
// 5% of one batch of 16 on one thread, and leave groups for a second thread from 16 streams up.
#define SAMPLE_GROUP 8

// generate, and profile (the same run with the text discarded and the profile on stdout). Several
// samples run in groups of --batch streams, the groups spread over the engine threads.
static int cmd_generate(const Options *o) {
    int profile_cmd = strcmp(o->cmd, "profile") == 0, many = o->samples > 1;
    int group = o->batch ? o->batch : SAMPLE_GROUP;
    if (group > o->samples) group = o->samples;
    int n_groups = (o->samples + group - 1) / group, workers = o->threads < n_groups ? o->threads : n_groups;
    NlModel *model = NULL;
    NlState **states = calloc((size_t)workers, sizeof *states);
    NlProfiler **profs = calloc((size_t)workers, sizeof *profs);
    NlSampler **samplers = calloc((size_t)o->samples, sizeof *samplers);
    OutFile json_o = {0}, trace_o = {0};
    int *ids = NULL;
    char *text = NULL;
    size_t n = 0, len = 0;
    Collect col = {NULL, calloc((size_t)o->samples, sizeof(char *)), calloc((size_t)o->samples, sizeof(size_t)),
                   calloc((size_t)o->samples, sizeof(size_t)), 0};
    NlError err;
    int rc = states && profs && samplers && col.text && col.len && col.cap ? 0 : EXIT_DATA;
    const char *outs[2] = {o->json_out ? o->json_out : o->trace_out, o->json_out ? o->trace_out : NULL};
    if (!rc && outs[0]) rc = check_outputs(o, outs, outs[1] ? 2 : 1);
    if (!rc) rc = load_model(o, &model);
    if (!rc) rc = prompt_ids(o, model, &ids, &n, &text, &len);
    // Workers share OpenBLAS's process-wide thread count: one thread per product when there are several.
    for (int i = 0; !rc && i < workers; i++)
        rc = make_state_as(o, model, group, workers > 1 ? 1 : o->threads, i == 0, &states[i]);
    for (int i = 0; !rc && (o->profile || profile_cmd) && i < workers; i++)
        rc = attach_profiler(o, model, states[i], (size_t)o->n_new + 2, &profs[i]);
    if (!rc && o->json_out) rc = out_open(&json_o, o->json_out);
    if (!rc && o->trace_out) rc = out_open(&trace_o, o->trace_out);
    uint64_t seed = o->has_seed ? o->seed : profile_cmd ? 0 : seed_from_os();
    if (!rc) rc = make_samplers(o, model, seed, samplers);
    if (rc) goto cleanup;
    size_t T = (size_t)nl_model_config(model)->block_size;
    if (!o->has_seed && !profile_cmd) msg_error("seed %llu", (unsigned long long)seed);
    if (n > T) msg_error("warning: the prompt has %zu characters; only the last %zu fit the context", n, T);
    EmitCtx ectx = {nl_model_tokenizer(model), 0};
    for (size_t i = n > T ? n - T : 0; o->echo && !many && i < n && !ectx.write_failed; i++) emit_token(ids[i], &ectx);
    col.tok = nl_model_tokenizer(model);
    if (o->warmup) nl_forward(states[0], ids + (n > T ? n - T : 0), n > T ? T : n, 0, 1);
    NlGenerateOptions gopts = {(size_t)o->n_new, o->exact_window};
    NlGenerateStats st;
    NlBatchEmitFn emit = profile_cmd ? stream_nothing : many ? collect_token : stream_token;
    int g = nl_generate_parallel(states, (size_t)workers, samplers, (size_t)o->samples, ids, n, &gopts, emit,
                                 many ? (void *)&col : (void *)&ectx, &st, &err);
    if (g < 0) { msg_error("%s", err.msg); rc = EXIT_DATA; goto cleanup; }
    if (col.failed) { msg_error("out of memory for the samples"); rc = EXIT_DATA; goto cleanup; }
    if (many && !profile_cmd && print_samples(&col, o->samples, seed, o->json) != 0) ectx.write_failed = errno ? errno : EIO;
    if (ectx.write_failed) {
        msg_error("cannot write to stdout: %s", strerror(ectx.write_failed));
        rc = EXIT_DATA;
        goto cleanup;
    }
    print_timing(&st, o->samples);
    for (int i = 1; profs[0] && i < workers; i++) nl_profiler_merge(profs[0], profs[i]);
    if (profs[0]) rc = write_profile(o, profs[0], workers, workers > 1 ? 1 : o->threads, profile_cmd ? stdout : stderr,
                                     json_o.f, trace_o.f);
cleanup:
    if (out_finish(&trace_o, rc == 0) != 0) rc = EXIT_DATA;
    if (out_finish(&json_o, rc == 0) != 0) rc = EXIT_DATA;
    free(ids);
    free(text);
    for (int i = 0; states && i < workers; i++) nl_state_free(states[i]);
    for (int i = 0; profs && i < workers; i++) nl_profiler_free(profs[i]);
    free(states);
    free(profs);
    for (int i = 0; samplers && i < o->samples; i++) nl_sampler_free(samplers[i]);
    for (int i = 0; col.text && i < o->samples; i++) free(col.text[i]);
    free(samplers);
    free(col.text);
    free(col.len);
    free(col.cap);
    nl_model_free(model);
    return rc;
}

// ---- eval

static void eval_progress(size_t done, size_t total, void *ctx) {
    (void)ctx;
    fprintf(stderr, "\reval: %zu / %zu characters (%.0f%%)", done, total, 100.0 * (double)done / (double)total);
    if (done == total) fprintf(stderr, "\n");
}

// Windows per eval forward call by default: as many as fill EVAL_ROWS positions (8 windows of 128).
#define EVAL_ROWS 1024

static int cmd_eval(const Options *o) {
    if (!o->text_file) { usage_error(o->cmd, "%s", "--text FILE is required"); return EXIT_USAGE; }
    NlModel *model = NULL;
    NlState **states = NULL;
    NlProfiler **profs = NULL;
    int *ids = NULL, workers = o->threads;
    char *text = NULL;
    size_t n = 0, len = 0, skipped = 0;
    NlError err;
    int rc = load_model(o, &model);
    if (!rc) rc = read_text(o->text_file, &text, &len);
    if (!rc) rc = encode(model, o->text_file, text, len, o->skip_unknown, &ids, &n, &skipped);
    if (rc) goto cleanup;
    size_t T = (size_t)nl_model_config(model)->block_size;
    if ((size_t)o->stride > T) {
        msg_usage(o->cmd, "--stride %ld is larger than the model's context (block_size %zu)", o->stride, T);
        rc = EXIT_USAGE;
        goto cleanup;
    }
    size_t stride = o->stride ? (size_t)o->stride : (T / 2 ? T / 2 : 1);
    // One state per worker thread, each running whole windows with one OpenBLAS thread per product.
    int batch = o->batch ? o->batch : (int)(EVAL_ROWS / T > 0 ? EVAL_ROWS / T : 1);
    states = calloc((size_t)workers, sizeof *states);
    profs = calloc((size_t)workers, sizeof *profs);
    if (!states || !profs) { msg_error("out of memory"); rc = EXIT_DATA; goto cleanup; }
    for (int i = 0; i < workers && !rc; i++) {
        rc = make_state_as(o, model, batch, 1, i == 0, &states[i]);
        size_t calls = (n / stride + 2) / (size_t)batch + 2;
        if (!rc && o->profile) rc = attach_profiler(o, model, states[i], calls, &profs[i]);
    }
    if (rc) goto cleanup;
    NlEvalResult r;
    int show = isatty(STDERR_FILENO) && n > 100000;
    if (nl_eval_parallel(states, (size_t)workers, ids, n, stride, &r, show ? eval_progress : NULL, NULL, &err) != 0) {
        msg_error("%s: %s", o->text_file, err.msg);
        rc = EXIT_DATA;
        goto cleanup;
    }
    double nats = r.nll_sum / (double)r.count, bits = nats / log(2.0);
    int ok;
    if (o->json)
        ok = printf("{\"chars\": %zu, \"nats_per_char\": %.9g, \"bits_per_char\": %.9g, \"perplexity\": %.9g, "
                    "\"skipped\": %zu, \"stride\": %zu}\n", r.count, nats, bits, exp(nats), skipped, stride) > 0;
    else
        ok = printf("chars %zu\nnats/char %.6f\nbits/char %.6f\nperplexity %.6f\n", r.count, nats, bits, exp(nats)) > 0;
    rc = check_stdout(ok);
    for (int i = 1; !rc && profs[0] && i < workers; i++) nl_profiler_merge(profs[0], profs[i]);
    if (!rc && profs[0]) rc = write_profile(o, profs[0], workers, 1, stderr, NULL, NULL);
cleanup:
    for (int i = 0; states && i < workers; i++) nl_state_free(states[i]);
    for (int i = 0; profs && i < workers; i++) nl_profiler_free(profs[i]);
    free(states);
    free(profs);
    free(ids);
    free(text);
    nl_model_free(model);
    return rc;
}

// ---- logits

static int cmd_logits(const Options *o) {
    if (!o->prompt && !o->prompt_file) { usage_error(o->cmd, "%s", "give the text with -p or -f"); return EXIT_USAGE; }
    NlModel *model = NULL;
    NlState *state = NULL;
    int *ids = NULL;
    char *text = NULL;
    size_t n = 0, len = 0;
    int rc = load_model(o, &model);
    if (!rc) rc = prompt_ids(o, model, &ids, &n, &text, &len);
    if (!rc) rc = make_state(o, model, &state);
    if (rc) goto cleanup;
    size_t T = (size_t)nl_model_config(model)->block_size, V = (size_t)nl_model_config(model)->vocab_size;
    if (n > T) {
        msg_error("%s: %zu characters, more than the model's context of %zu",
                o->prompt_file ? o->prompt_file : "the text", n, T);
        rc = EXIT_DATA;
        goto cleanup;
    }
    const float *logits = nl_forward(state, ids, n, 0, n);
    for (size_t i = 0; i < n * V; i++)
        if (!isfinite(logits[i])) {  // as generate and eval: a non-finite logit is an error, not a number
            msg_error("the logit of vocabulary index %zu at position %zu is not finite (%g)", i % V, i / V, logits[i]);
            rc = EXIT_DATA;
            goto cleanup;
        }
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        for (size_t v = 0; v < V; v++) ok &= printf("%s%.9g", v ? ", " : "[", logits[i * V + v]) > 0;
        ok &= printf("]\n") > 0;
    }
    rc = check_stdout(ok);
cleanup:
    free(ids);
    free(text);
    nl_state_free(state);
    nl_model_free(model);
    return rc;
}

// ---- compare

// Measures every row of one model: as trained, then (with --also-swap) other norm, other placement.
// Loads one compare model and encodes the text for it; appends its rows (as trained, then with
// --also-swap the other norm and the other placement) to jobs.
static int compare_load(const Options *o, const char *path, const char *text, size_t len, NlModel **model, int **ids,
                        NlCompareJob *jobs, const char **labels, size_t *n_jobs) {
    size_t n = 0, skipped = 0;
    Options with = *o;
    with.model = path;
    int rc = load_model(&with, model);
    if (!rc) {
        char what[4400];
        snprintf(what, sizeof what, "%s (for %s)", o->text_file, path);
        rc = encode(*model, what, text, len, o->skip_unknown, ids, &n, &skipped);
    }
    if (!rc && n < 2) { msg_error("%s: the text needs at least 2 known characters", o->text_file); rc = EXIT_DATA; }
    if (rc) return rc;
    const NlConfig *c = nl_model_config(*model);
    NlNormType other_norm = c->norm == NL_NORM_LAYERNORM ? NL_NORM_RMSNORM : NL_NORM_LAYERNORM;
    NlPlacement other_place = c->placement == NL_PLACE_PRE ? NL_PLACE_POST : NL_PLACE_PRE;
    NlRunOptions runs[3] = {
        {c->norm, c->placement, 1, 1}, {other_norm, c->placement, 1, 1}, {c->norm, other_place, 1, 1}};
    for (int r = 0; r < (o->also_swap ? 3 : 1); r++) {
        labels[*n_jobs] = path;
        jobs[(*n_jobs)++] = (NlCompareJob){*model, runs[r], *ids, n};
    }
    return 0;
}

static const char *const PLOTS[] = {"bits_per_char.png", "residual_rms.png", "time_share.png"};
#define N_PLOTS (sizeof PLOTS / sizeof PLOTS[0])

// Runs argv[0] (a path) with argv, stdout sent to stderr, and waits: no shell. Returns its status.
static int spawn_wait(char *const *argv) {
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

// Before any work: the plotting tool runs here (python3 with matplotlib) and its script is found.
static int check_plot_tool(const char *cmd) {
    char script[4400];
    char *argv[] = {"/usr/bin/python3", "-c", "import matplotlib", NULL};
    if (access(beside_binary("tools/plot_compare.py", script, sizeof script), R_OK) != 0 || spawn_wait(argv) != 0) {
        msg_usage(cmd, "--plot-dir needs /usr/bin/python3 with matplotlib and tools/plot_compare.py "
                       "(tools/install-deps.sh --python)");
        return EXIT_USAGE;
    }
    return 0;
}

// Draws the plots from json (the finished rows) into a temporary folder inside the plot directory
// (made now if missing), then renames each into place. On failure nothing of it stays.
static int run_plots(const Options *o, const char *json) {
    char script[4400], tmp[PATH_MAX], from[PATH_MAX + 32], to[PATH_MAX + 32];
    int made = mkdir(o->plot_dir, 0777) == 0;
    if (!made && errno != EEXIST) { msg_error("%s: cannot create: %s", o->plot_dir, strerror(errno)); return EXIT_DATA; }
    snprintf(tmp, sizeof tmp, "%s/.normlab-plots-XXXXXX", o->plot_dir);
    if (!mkdtemp(tmp)) {
        msg_error("%s: cannot write: %s", o->plot_dir, strerror(errno));
        if (made) rmdir(o->plot_dir);
        return EXIT_DATA;
    }
    char *argv[] = {"/usr/bin/python3", (char *)beside_binary("tools/plot_compare.py", script, sizeof script), (char *)json, tmp, NULL};
    int ok = spawn_wait(argv) == 0;
    if (!ok) msg_error("tools/plot_compare.py failed; no plot was written");
    for (size_t i = 0; ok && i < N_PLOTS; i++) {
        snprintf(from, sizeof from, "%s/%s", tmp, PLOTS[i]);
        snprintf(to, sizeof to, "%s/%s", o->plot_dir, PLOTS[i]);
        if (rename(from, to) != 0) { msg_error("%s: cannot replace: %s", to, strerror(errno)); ok = 0; }
    }
    for (size_t i = 0; i < N_PLOTS; i++) {
        snprintf(from, sizeof from, "%s/%s", tmp, PLOTS[i]);
        unlink(from);
    }
    rmdir(tmp);
    if (!ok && made) rmdir(o->plot_dir);
    return ok ? 0 : EXIT_DATA;
}

static int cmd_compare(Options *o) {
    if (o->n_models == 0) { usage_error(o->cmd, "%s", "give at least one MODEL"); return EXIT_USAGE; }
    if (!o->text_file) { usage_error(o->cmd, "%s", "--text FILE is required"); return EXIT_USAGE; }
    // Outputs: --json, --csv, and with --plot-dir its plots (and its compare.json when --json is not given).
    char json_default[PATH_MAX + 32], plot_paths[N_PLOTS][PATH_MAX + 32];
    const char *outs[2 + N_PLOTS];
    size_t n_outs = 0;
    if (o->plot_dir && !o->json_out) {  // the plots are drawn from the JSON
        if ((size_t)snprintf(json_default, sizeof json_default, "%s/compare.json", o->plot_dir) >= sizeof json_default) {
            msg_usage(o->cmd, "--plot-dir '%s' is too long", o->plot_dir);
            return EXIT_USAGE;
        }
        o->json_out = json_default;
    }
    struct stat pst;
    int plot_dir_exists = o->plot_dir && stat(o->plot_dir, &pst) == 0;
    if (o->json_out && (o->json_out != json_default || plot_dir_exists)) outs[n_outs++] = o->json_out;
    if (o->csv_out) outs[n_outs++] = o->csv_out;
    for (size_t i = 0; plot_dir_exists && i < N_PLOTS; i++) {
        snprintf(plot_paths[i], sizeof plot_paths[i], "%s/%s", o->plot_dir, PLOTS[i]);
        outs[n_outs++] = plot_paths[i];
    }
    if (o->plot_dir && !plot_dir_exists) outs[n_outs++] = o->plot_dir;  // made at the end: its folder must be writable
    if (o->plot_dir && stat(o->plot_dir, &pst) == 0 && !S_ISDIR(pst.st_mode)) {
        msg_usage(o->cmd, "--plot-dir '%s' is not a directory", o->plot_dir);
        return EXIT_USAGE;
    }
    if (o->plot_dir && o->json_out && strcmp(o->json_out, "-") == 0) {
        msg_usage(o->cmd, "%s", "--plot-dir draws from the JSON rows: give --json a file, not '-'");
        return EXIT_USAGE;
    }
    int rc0 = check_outputs(o, outs, n_outs);
    if (!rc0 && o->plot_dir) rc0 = check_plot_tool(o->cmd);
    if (rc0) return rc0;
    OutFile json_o = {0}, csv_o = {0};
    char *text = NULL;
    size_t len = 0, n_rows = 0;
    size_t cap = (size_t)o->n_models * 3;
    const char **labels = calloc(cap, sizeof *labels);
    NlCompareRow *rows = calloc(cap, sizeof *rows);
    NlCompareJob *jobs = calloc(cap, sizeof *jobs);
    NlModel **models = calloc((size_t)o->n_models, sizeof *models);
    int **ids = calloc((size_t)o->n_models, sizeof *ids);
    int rc = labels && rows && jobs && models && ids ? 0 : EXIT_DATA;
    if (!rc) rc = read_text(o->text_file, &text, &len);
    if (!rc && o->plot_dir && !plot_dir_exists && mkdir(o->plot_dir, 0777) != 0) {  // to hold compare.json
        msg_error("%s: cannot create: %s", o->plot_dir, strerror(errno));
        rc = EXIT_DATA;
    }
    if (!rc && o->json_out) rc = out_open(&json_o, o->json_out);
    if (!rc && o->csv_out) rc = out_open(&csv_o, o->csv_out);
    for (int i = 0; !rc && i < o->n_models; i++)
        rc = compare_load(o, o->models[i], text, len, &models[i], &ids[i], jobs, labels, &n_rows);
    if (rc) goto cleanup;
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "compare: %zu rows on %d thread%s ...", n_rows, o->threads, plural((size_t)o->threads));
    NlCompareOptions copts = {o->repeats, o->invariance};
    NlError err;
    size_t failed;
    if (nl_compare_models(jobs, n_rows, o->threads, &copts, rows, &failed, &err) != 0) {
        if (isatty(STDERR_FILENO)) fprintf(stderr, "\n");
        msg_error("%s: %s", failed < n_rows ? labels[failed] : o->text_file, err.msg);
        rc = EXIT_DATA;
        goto cleanup;
    }
    if (isatty(STDERR_FILENO)) fprintf(stderr, "\r%60s\r", "");
    NlCompareInfo info = {o->text_file, o->threads, o->repeats, o->invariance};
    rc = check_stdout(nl_report_compare_text(stdout, rows, labels, n_rows, &info) == 0);
    if (!rc && json_o.f && (nl_report_compare_json(json_o.f, rows, labels, n_rows, &info) != 0 || fflush(json_o.f) != 0)) {
        msg_error("%s: write failed", o->json_out);
        rc = EXIT_DATA;
    }
    if (!rc && csv_o.f && nl_report_compare_csv(csv_o.f, rows, labels, n_rows, &info) != 0) {
        msg_error("%s: write failed", o->csv_out);
        rc = EXIT_DATA;
    }
    // The plots read the rows from the JSON before it is renamed into place; all commit together.
    if (!rc && o->plot_dir) rc = run_plots(o, json_o.tmp[0] ? json_o.tmp : o->json_out);
cleanup:
    if (out_finish(&csv_o, rc == 0) != 0) rc = EXIT_DATA;
    if (out_finish(&json_o, rc == 0) != 0) rc = EXIT_DATA;
    if (rc && o->plot_dir && !plot_dir_exists) rmdir(o->plot_dir);  // made by this run: gone again
    for (int i = 0; models && i < o->n_models; i++) nl_model_free(models[i]);
    for (int i = 0; ids && i < o->n_models; i++) free(ids[i]);
    free(models);
    free(ids);
    free(jobs);
    free(text);
    free(rows);
    free(labels);
    return rc;
}

// ---- info

static cJSON *info_json(const NlModel *m, const BlasChoice *b) {
    const NlConfig *c = nl_model_config(m);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(j, "n_layer", c->n_layer);
    cJSON_AddNumberToObject(j, "n_head", c->n_head);
    cJSON_AddNumberToObject(j, "n_embd", c->n_embd);
    cJSON_AddNumberToObject(j, "block_size", c->block_size);
    cJSON_AddNumberToObject(j, "n_inner", c->n_inner);
    cJSON_AddStringToObject(j, "norm", nl_config_norm_name(c->norm));
    cJSON_AddStringToObject(j, "placement", nl_config_placement_name(c->placement));
    cJSON_AddNumberToObject(j, "norm_eps", c->norm_eps);
    cJSON_AddStringToObject(j, "activation", nl_config_activation_name(c->activation));
    cJSON_AddBoolToObject(j, "bias", c->bias);
    cJSON_AddBoolToObject(j, "tie_embeddings", c->tie_embeddings);
    cJSON_AddNumberToObject(j, "parameters", (double)nl_model_parameters(m));
    cJSON_AddNumberToObject(j, "weight_bytes", (double)nl_model_weight_bytes(m));
    cJSON_AddNumberToObject(j, "kv_cache_bytes", (double)nl_state_kv_bytes(m));
    cJSON_AddStringToObject(j, "blas_core", nl_blas_core());
    cJSON_AddStringToObject(j, "blas_core_source", b->source);
    cJSON_AddStringToObject(j, "blas_core_openblas", b->reported);  // what OpenBLAS picked by itself
    cJSON_AddNumberToObject(j, "cpus", available_cpus());
    const char *const *keys, *const *values;
    size_t n = nl_model_metadata(m, &keys, &values);
    cJSON *meta = cJSON_AddObjectToObject(j, "metadata");
    for (size_t i = 0; i < n; i++) cJSON_AddStringToObject(meta, keys[i], values[i]);
    return j;
}

static int print_info_text(const cJSON *j) {
    int ok = 1;
    for (const cJSON *c = j->child; c; c = c->next) {
        if (cJSON_IsObject(c)) {
            for (const cJSON *m = c->child; m; m = m->next)
                ok &= printf("%s.%-*s %s\n", c->string, (int)(15 - strlen(c->string)), m->string, m->valuestring) > 0;
        } else if (cJSON_IsString(c)) ok &= printf("%-16s %s\n", c->string, c->valuestring) > 0;
        else if (cJSON_IsBool(c)) ok &= printf("%-16s %s\n", c->string, cJSON_IsTrue(c) ? "true" : "false") > 0;
        else ok &= printf("%-16s %.10g\n", c->string, c->valuedouble) > 0;
    }
    return ok;
}

static int cmd_info(const Options *o) {
    NlModel *model = NULL;
    int rc = load_model(o, &model);
    if (rc) return rc;
    cJSON *j = info_json(model, &o->blas);
    int ok;
    if (o->json) {
        char *s = cJSON_PrintUnformatted(j);
        ok = s && printf("%s\n", s) > 0;
        cJSON_free(s);
    } else {
        ok = print_info_text(j);
    }
    rc = check_stdout(ok);
    cJSON_Delete(j);
    nl_model_free(model);
    return rc;
}

// ---- dispatch

static const char *help_for(const char *cmd) {
    if (strcmp(cmd, "generate") == 0) return HELP_GENERATE;
    if (strcmp(cmd, "eval") == 0) return HELP_EVAL;
    if (strcmp(cmd, "info") == 0) return HELP_INFO;
    if (strcmp(cmd, "logits") == 0) return HELP_LOGITS;
    if (strcmp(cmd, "profile") == 0) return HELP_PROFILE;
    if (strcmp(cmd, "compare") == 0) return HELP_COMPARE;
    return NULL;
}

// Across the re-execution below: the family OpenBLAS had picked before normlab asked for another.
#define CORE_FROM_ENV "NORMLAB_BLAS_CORE_FROM"

// When OpenBLAS fell back to kernels narrower than the CPU offers, re-executes the program once with
// OPENBLAS_CORETYPE set to the family the CPU supports (OpenBLAS reads it only when it loads). Never
// when the variable is set already, or with NORMLAB_BLAS_AUTO=0. NORMLAB_BLAS_PRETEND=FAMILY acts as
// if OpenBLAS had picked FAMILY (for tests on CPUs that OpenBLAS knows). The re-executed process
// removes both variables again, so that programs it starts see the environment the user gave.
static void select_blas_core(char **argv, BlasChoice *b) {
    const char *env = getenv("OPENBLAS_CORETYPE"), *from = getenv(CORE_FROM_ENV);
    if (from && env) {  // re-executed: normlab set the variable
        snprintf(b->reported, sizeof b->reported, "%s", from);
        b->source = "normlab";
        unsetenv(CORE_FROM_ENV);
        unsetenv("OPENBLAS_CORETYPE");
        return;
    }
    if (from) unsetenv(CORE_FROM_ENV);
    const char *pretend = getenv("NORMLAB_BLAS_PRETEND"), *opt = getenv("NORMLAB_BLAS_AUTO");
    snprintf(b->reported, sizeof b->reported, "%s", pretend && *pretend ? pretend : nl_blas_core());
    b->source = env && *env ? "environment" : "openblas";
    const char *choice = nl_blas_choose_core(b->reported, nl_cpu_features(), env, opt && strcmp(opt, "0") == 0);
    if (!choice || setenv("OPENBLAS_CORETYPE", choice, 1) != 0 || setenv(CORE_FROM_ENV, b->reported, 1) != 0) return;
    execv("/proc/self/exe", argv);
    msg_error("warning: could not restart with OPENBLAS_CORETYPE=%s (%s); running on OpenBLAS's %s kernels", choice,
              strerror(errno), b->reported);
    unsetenv(CORE_FROM_ENV);
    unsetenv("OPENBLAS_CORETYPE");
}

// Any of descriptors 0-2 that is closed is opened on /dev/null, so that no file the command opens
// lands on it and receives its output or its diagnostics.
static void open_std_fds(void) {
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
            if (got >= 0 && got != fd) close(got);  // cannot happen: open returns the lowest free fd
        }
}

// Prints text to stdout; 0, or 1 with the reason on stderr when the write fails (stdout /dev/full).
static int print_text(const char *text) { return check_stdout(fputs(text, stdout) != EOF); }

int main(int argc, char **argv) {
    open_std_fds();
    BlasChoice blas = {"", "openblas"};
    select_blas_core(argv, &blas);
    static const int GEN[] = {'m', 'p', 'f', 'n', OPT_TEMP, OPT_TOPK, OPT_TOPP, OPT_SEED, OPT_NORM, OPT_PLACEMENT,
                              OPT_THREADS, OPT_EXACT, OPT_SKIP, OPT_ECHO, OPT_PROFILE, OPT_COUNTERS, OPT_SAMPLES,
                              OPT_JSON, OPT_WARMUP, OPT_BATCH, OPT_NO_MMAP, 0};
    static const int PROFILE[] = {'m', 'p', 'f', 'n', OPT_TEMP, OPT_TOPK, OPT_TOPP, OPT_SEED, OPT_NORM, OPT_PLACEMENT,
                                  OPT_THREADS, OPT_EXACT, OPT_SKIP, OPT_JSON_OUT, OPT_TRACE, OPT_COUNTERS, OPT_SAMPLES,
                                  OPT_BATCH, OPT_NO_MMAP, 0};
    static const int EVAL[] = {'m', OPT_TEXT, OPT_JSON, OPT_STRIDE, OPT_SKIP, OPT_NORM, OPT_PLACEMENT, OPT_THREADS,
                               OPT_PROFILE, OPT_COUNTERS, OPT_BATCH, OPT_NO_MMAP, 0};
    static const int INFO[] = {'m', OPT_JSON, OPT_NO_MMAP, 0};
    static const int COMPARE[] = {OPT_TEXT, OPT_JSON_OUT, OPT_CSV, OPT_PLOT_DIR, OPT_ALSO_SWAP, OPT_INVARIANCE, OPT_REPEATS,
                                  OPT_THREADS, OPT_SKIP, OPT_NO_MMAP, 0};
    static const int LOGITS[] = {'m', 'p', 'f', OPT_NORM, OPT_PLACEMENT, OPT_SKIP, OPT_THREADS, OPT_NO_MMAP, 0};
    if (argc < 2) { msg_error("usage: normlab COMMAND [options] (see 'normlab --help')"); return EXIT_USAGE; }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) return print_text(HELP_MAIN);
    if (strcmp(cmd, "--version") == 0) return check_stdout(printf("normlab %s\n", NL_VERSION) > 0);
    if (strcmp(cmd, "help") == 0) {
        if (argc < 3 || strcmp(argv[2], "help") == 0) return print_text(HELP_MAIN);
        const char *h = help_for(argv[2]);
        if (!h) { msg_error("unknown command '%s' (see 'normlab --help')", argv[2]); return EXIT_USAGE; }
        return print_text(h);
    }
    const char *help = help_for(cmd);
    if (!help && cmd[0] == '-') {
        msg_error("unknown option '%s': the command comes first, its options after it (see 'normlab --help')", cmd);
        return EXIT_USAGE;
    }
    if (!help) { msg_error("unknown command '%s' (see 'normlab --help')", cmd); return EXIT_USAGE; }
    Options o = {.cmd = cmd, .blas = blas, .n_new = 256, .sampling = {1.0, 0, 1.0}, .norm = -1, .placement = -1,
                 .threads = 0, .repeats = 5, .samples = 1};
    const int *allowed = strcmp(cmd, "generate") == 0 ? GEN : strcmp(cmd, "eval") == 0 ? EVAL
                       : strcmp(cmd, "logits") == 0 ? LOGITS : strcmp(cmd, "profile") == 0 ? PROFILE
                       : strcmp(cmd, "compare") == 0 ? COMPARE : INFO;
    int rc = parse_options(&o, argc - 1, argv + 1, allowed);
    if (rc < 0) return print_text(help);
    if (rc) return rc;
    // Every command runs on all available CPUs by default but compare, whose speed columns are
    // measured one row at a time unless --threads asks for rows side by side.
    if (o.threads == 0) o.threads = strcmp(cmd, "compare") == 0 ? 1 : available_cpus();
    if (o.prompt && o.prompt_file) { usage_error(cmd, "%s", "give -p or -f, not both"); return EXIT_USAGE; }
    if (o.counters && !o.profile && strcmp(cmd, "profile") != 0) { usage_error(cmd, "%s", "--counters needs --profile"); return EXIT_USAGE; }
    if (strcmp(cmd, "generate") == 0 && o.json && o.samples < 2) { usage_error(cmd, "%s", "--json needs --samples N (N >= 2)"); return EXIT_USAGE; }
    const char *outs[3] = {o.json_out, o.trace_out, o.csv_out};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (outs[i] && outs[j] && strcmp(outs[i], outs[j]) == 0) {
                usage_error(cmd, "two outputs would both be written to '%s'", outs[i]);
                return EXIT_USAGE;
            }
    if (strcmp(cmd, "generate") == 0 || strcmp(cmd, "profile") == 0) return cmd_generate(&o);
    if (strcmp(cmd, "eval") == 0) return cmd_eval(&o);
    if (strcmp(cmd, "logits") == 0) return cmd_logits(&o);
    if (strcmp(cmd, "compare") == 0) return cmd_compare(&o);
    return cmd_info(&o);
}
