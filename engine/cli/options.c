// options.c — the command line's options: one table for every command, strict numbers, choices
// without case, and a "did you mean" for near misses.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <getopt.h>

#include <strings.h>

#include "cli.h"

// A usage error of cmd naming the option or value.
#define usage_error(cmd, fmt, arg) msg_usage(cmd, fmt, arg)

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

static int apply_option(Options *o, int c, const char *arg) {
    long v;
    double d;
    switch (c) {
    case 'm': o->model = arg; return 0;
    case 'p': o->prompt = arg; return 0;
    case 'f':  // the text of eval and compare, the prompt elsewhere
        if (strcmp(o->cmd, "eval") == 0 || strcmp(o->cmd, "compare") == 0) o->text_file = arg;
        else o->prompt_file = arg;
        return 0;
    case OPT_TEXT: o->text_file = arg; return 0;
    case OPT_OUTPUT: o->output = arg; return 0;
    case OPT_EXACT: o->exact_window = 1; return 0;
    case OPT_SKIP: o->skip_unknown = 1; return 0;
    case OPT_JSON: o->json = 1; return 0;
    case OPT_ECHO: o->echo = 1; return 0;
    case OPT_NO_ECHO: o->echo = 0; return 0;
    case OPT_PROFILE: o->profile = 1; return 0;
    case OPT_WARMUP: o->warmup = 1; return 0;
    case OPT_NO_MMAP: o->no_mmap = 1; return 0;
    case OPT_COUNTERS: o->counters = 1; return 0;
    case OPT_TRACE: o->trace_out = arg; return 0;
    case OPT_ALSO_SWAP: o->also_swap = 1; return 0;
    case OPT_INVARIANCE: o->invariance = 1; return 0;
    case OPT_CSV: o->csv_out = arg; return 0;
    case OPT_PLOT_DIR: o->plot_dir = arg; return 0;
    case OPT_SAMPLES:
        if (parse_long(arg, 1, 256, &v) != 0) {
            usage_error(o->cmd, "--samples must be an integer in [1, 256], got '%s'", arg);
            return EXIT_USAGE;
        }
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
        if (parse_long(arg, 1, 1000, &v) != 0) {
            usage_error(o->cmd, "--repeats must be an integer in [1, 1000], got '%s'", arg);
            return EXIT_USAGE;
        }
        o->repeats = (int)v;
        return 0;
    case 'n':
        if (parse_long(arg, 0, 1000000000L, &v) != 0) {
            usage_error(o->cmd, "-n must be an integer in [0, 1000000000], got '%s'", arg);
            return EXIT_USAGE;
        }
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
        if (parse_long(arg, 0, LONG_MAX, &v) != 0) {
            usage_error(o->cmd, "--top-k must be an integer >= 0, got '%s'", arg);
            return EXIT_USAGE;
        }
        o->sampling.top_k = v > INT_MAX ? INT_MAX : (int)v;  // above V keeps everything anyway
        return 0;
    case OPT_TOPP:
        if (parse_double(arg, &d) != 0 || !(d > 0 && d <= 1)) {
            usage_error(o->cmd, "--top-p must be in (0, 1], got '%s'", arg);
            return EXIT_USAGE;
        }
        o->sampling.top_p = d;
        return 0;
    case OPT_SEED:
        if (strcmp(arg, "-1") == 0) {
            o->has_seed = 0;
            return 0;
        }  // llama.cpp: -1 means a random seed
        if (parse_u64(arg, &o->seed) != 0) {
            usage_error(o->cmd, "--seed must be -1 (random) or an integer in [0, 2^64-1], got '%s'", arg);
            return EXIT_USAGE;
        }
        o->has_seed = 1;
        return 0;
    case OPT_NORM: {
        NlNormType norm;
        if (nl_config_norm_parse(arg, &norm) != 0) {
            usage_error(o->cmd, "--norm must be layernorm, rmsnorm, batchnorm or none (any case), got '%s'", arg);
            return EXIT_USAGE;
        }
        o->norm = (int)norm;
        return 0;
    }
    case OPT_PLACEMENT: {
        NlPlacement placement;
        if (nl_config_placement_parse(arg, &placement) != 0) {
            usage_error(o->cmd, "--placement must be pre, post or peri (any case), got '%s'", arg);
            return EXIT_USAGE;
        }
        o->placement = (int)placement;
        return 0;
    }
    case OPT_BN_STATS: {
        NlBnStats bn;
        int compare = strcmp(o->cmd, "compare") == 0;
        if (compare && strcasecmp(arg, "both") == 0) {
            o->bn_stats = BN_STATS_BOTH;
            return 0;
        }
        if (nl_config_bn_stats_parse(arg, &bn) != 0) {
            msg_usage(o->cmd, "--bn-stats must be running or batch%s (any case), got '%s'", compare ? " or both" : "",
                      arg);
            return EXIT_USAGE;
        }
        o->bn_stats = (int)bn;
        return 0;
    }
    case OPT_THREADS:
        if (parse_long(arg, 1, 1024, &v) != 0) {
            usage_error(o->cmd, "--threads must be an integer in [1, 1024], got '%s'", arg);
            return EXIT_USAGE;
        }
        o->threads = (int)v;
        return 0;
    case OPT_STRIDE:
        if (parse_long(arg, 1, 1 << 16, &v) != 0) {
            usage_error(o->cmd, "--stride must be a positive integer, got '%s'", arg);
            return EXIT_USAGE;
        }
        o->stride = v;
        return 0;
    case OPT_SEGMENTS:
        if (parse_long(arg, 1, 4096, &v) != 0) {
            usage_error(o->cmd, "--segments must be an integer in [1, 4096], got '%s'", arg);
            return EXIT_USAGE;
        }
        o->segments = v;
        return 0;
    }
    return EXIT_USAGE;
}

static const struct option LONG[] = {{"model", required_argument, 0, 'm'},
                                     {"prompt", required_argument, 0, 'p'},
                                     {"file", required_argument, 0, 'f'},
                                     {"steps", required_argument, 0, 'n'},
                                     {"temperature", required_argument, 0, OPT_TEMP},
                                     {"top-k", required_argument, 0, OPT_TOPK},
                                     {"top-p", required_argument, 0, OPT_TOPP},
                                     {"seed", required_argument, 0, OPT_SEED},
                                     {"norm", required_argument, 0, OPT_NORM},
                                     {"placement", required_argument, 0, OPT_PLACEMENT},
                                     {"bn-stats", required_argument, 0, OPT_BN_STATS},
                                     {"threads", required_argument, 0, OPT_THREADS},
                                     {"exact-window", no_argument, 0, OPT_EXACT},
                                     {"skip-unknown", no_argument, 0, OPT_SKIP},
                                     {"json", no_argument, 0, OPT_JSON},
                                     {"text", required_argument, 0, OPT_TEXT},
                                     {"stride", required_argument, 0, OPT_STRIDE},
                                     {"segments", required_argument, 0, OPT_SEGMENTS},
                                     {"echo", no_argument, 0, OPT_ECHO},
                                     {"no-echo", no_argument, 0, OPT_NO_ECHO},
                                     {"help", no_argument, 0, 'h'},
                                     {"output", required_argument, 0, OPT_OUTPUT},
                                     {"profile", no_argument, 0, OPT_PROFILE},
                                     {"trace", required_argument, 0, OPT_TRACE},
                                     {"counters", no_argument, 0, OPT_COUNTERS},
                                     {"also-swap", no_argument, 0, OPT_ALSO_SWAP},
                                     {"invariance", no_argument, 0, OPT_INVARIANCE},
                                     {"repeats", required_argument, 0, OPT_REPEATS},
                                     {"csv", required_argument, 0, OPT_CSV},
                                     {"plot-dir", required_argument, 0, OPT_PLOT_DIR},
                                     {"samples", required_argument, 0, OPT_SAMPLES},
                                     {"warmup", no_argument, 0, OPT_WARMUP},
                                     {"batch", required_argument, 0, OPT_BATCH},
                                     {"no-mmap", no_argument, 0, OPT_NO_MMAP},
                                     {0, 0, 0, 0}};

// Single letters and the long option each stands for.
static const struct {
    char letter;
    int code;
} SHORT[] = {{'m', 'm'}, {'p', 'p'}, {'f', 'f'}, {'n', 'n'}, {'s', OPT_SEED}, {'t', OPT_THREADS}, {'o', OPT_OUTPUT}};

size_t edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b), row[64];
    if (m >= 64) return m;
    for (size_t j = 0; j <= m; j++) row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[m];
}

static int takes(const Command *cmd, int code) {
    for (const int *a = cmd->options; *a; a++)
        if (*a == code) return 1;
    return 0;
}

// "unknown option '--tempreature'": with " (did you mean '--temperature'?)" when one of the
// command's options is within 2 edits (or a third of the name).
static void unknown_option(const Command *cmd, const char *given) {
    const char *name = given + strspn(given, "-"), *best = NULL;
    char bare[64];
    snprintf(bare, sizeof bare, "%.*s", (int)strcspn(name, "="), name);
    size_t best_d = 3 + strlen(bare) / 3, prefixed = 0;
    char list[256] = "";
    for (const struct option *x = LONG; x->name; x++)  // a prefix of several: getopt's "ambiguous"
        if ((takes(cmd, x->val) || x->val == 'h') && strncmp(x->name, bare, strlen(bare)) == 0 && *bare) {
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s--%s", prefixed++ ? ", " : "", x->name);
        }
    if (prefixed > 1) {
        msg_usage(cmd->name, "ambiguous option '%s' (%s)", given, list);
        return;
    }
    for (const struct option *x = LONG; x->name; x++) {
        if (!takes(cmd, x->val) && x->val != 'h') continue;
        size_t d = edit_distance(bare, x->name);
        if (d < best_d) {
            best_d = d;
            best = x->name;
        }
    }
    if (best) msg_usage(cmd->name, "unknown option '%s' (did you mean '--%s'?)", given, best);
    else msg_usage(cmd->name, "unknown option '%s'", given);
}

int options_parse(Options *o, const Command *cmd, int argc, char **argv) {
    char shorts[32] = ":h";
    for (size_t i = 0; i < sizeof SHORT / sizeof SHORT[0]; i++)
        if (takes(cmd, SHORT[i].code))
            snprintf(shorts + strlen(shorts), sizeof shorts - strlen(shorts), "%c:", SHORT[i].letter);
    opterr = 0;
    optind = 1;
    int c, li = -1;
    // getopt_long_only: a long option may take one dash, as llama.cpp's do (-temp, -no-echo), when it
    // is not one of the command's short options.
    while ((c = getopt_long_only(argc, argv, shorts, LONG, &li)) != -1) {
        if (c == 'h') return -1;
        int letter = c;
        for (size_t i = 0; i < sizeof SHORT / sizeof SHORT[0]; i++)
            if (c == SHORT[i].letter && c < 128) c = SHORT[i].code;
        char opt[64];
        if (c == '?' || c == ':') {
            if (optopt && optopt < 256) snprintf(opt, sizeof opt, "-%c", optopt);
            else snprintf(opt, sizeof opt, "%s", argv[optind - 1]);
            const char *given = argv[optind - 1];
            int known_letter = 0;  // "-n" given to a command without -n (getopt_long_only may not set optopt)
            for (size_t i = 0; i < sizeof SHORT / sizeof SHORT[0]; i++)
                known_letter |=
                    optopt == SHORT[i].letter || (given[0] == '-' && given[1] == SHORT[i].letter && given[2] == '\0');
            if (known_letter && given[0] == '-' && given[1] && given[2] == '\0') snprintf(opt, sizeof opt, "%s", given);
            if (c == ':') usage_error(o->cmd, "option '%s' needs a value", opt);
            else if (known_letter) usage_error(o->cmd, "option '%s' does not apply to this command", opt);
            else unknown_option(cmd, opt);
            return EXIT_USAGE;
        }
        if (li >= 0) snprintf(opt, sizeof opt, "--%s", LONG[li].name);
        else snprintf(opt, sizeof opt, "-%c", letter);
        li = -1;
        if (!takes(cmd, c)) {
            usage_error(o->cmd, "option '%s' does not apply to this command", opt);
            return EXIT_USAGE;
        }
        int rc = apply_option(o, c, optarg);
        if (rc != 0) return rc;
    }
    if (strcmp(o->cmd, "compare") == 0) {
        o->models = argv + optind;
        o->n_models = argc - optind;
        return 0;
    }
    if (optind < argc) {
        usage_error(o->cmd, "unexpected argument '%s'", argv[optind]);
        return EXIT_USAGE;
    }
    return 0;
}
