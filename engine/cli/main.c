// main.c — the normlab command line: the command table and the dispatcher. Each command (or
// family) lives in its own file; options, inputs and outputs are shared modules (cli.h).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

// Options every command takes.
#define COMMON 'm', OPT_NO_MMAP, OPT_OUTPUT, OPT_JSON
#define SAMPLING OPT_TEMP, OPT_TOPK, OPT_TOPP, OPT_SEED, OPT_EXACT
#define RUN_AS OPT_NORM, OPT_PLACEMENT, OPT_BN_STATS, OPT_THREADS, OPT_SKIP

static const int GENERATE_OPTS[] = {
    COMMON,      SAMPLING,    RUN_AS,       'p',         'f',        'n',       OPT_ECHO,
    OPT_NO_ECHO, OPT_PROFILE, OPT_COUNTERS, OPT_SAMPLES, OPT_WARMUP, OPT_BATCH, 0};
static const int PROFILE_OPTS[] = {COMMON,    SAMPLING,     RUN_AS,      'p',       'f', 'n',
                                   OPT_TRACE, OPT_COUNTERS, OPT_SAMPLES, OPT_BATCH, 0};
static const int EVAL_OPTS[] = {COMMON,       RUN_AS,      'f',          OPT_TEXT,  OPT_STRIDE,
                                OPT_SEGMENTS, OPT_PROFILE, OPT_COUNTERS, OPT_BATCH, 0};
static const int LOGITS_OPTS[] = {COMMON, RUN_AS, 'p', 'f', 0};
static const int COMPARE_OPTS[] = {
    OPT_NO_MMAP,   OPT_OUTPUT,     OPT_JSON,    'f',         OPT_TEXT, OPT_CSV,      OPT_PLOT_DIR,
    OPT_ALSO_SWAP, OPT_INVARIANCE, OPT_REPEATS, OPT_THREADS, OPT_SKIP, OPT_BN_STATS, 0};
static const int INFO_OPTS[] = {COMMON, 0};
static const int LIST_OPTS[] = {OPT_OUTPUT, OPT_JSON, OPT_NO_MMAP, 0};

static const Command COMMANDS[] = {
    {"generate", "sample text from a model, streamed to stdout", NULL, GENERATE_OPTS, cmd_generate},
    {"eval", "bits per character of a model on a text file", NULL, EVAL_OPTS, cmd_eval},
    {"info", "a model's configuration, parameters and memory", NULL, INFO_OPTS, cmd_info},
    {"list", "every model found by name, with its norm, size and validation loss", NULL, LIST_OPTS, cmd_list},
    {"logits", "the logits of every position of a text, as JSON lines", NULL, LOGITS_OPTS, cmd_logits},
    {"profile", "where the time and FLOPs of a forward pass go, layer by layer", NULL, PROFILE_OPTS, cmd_generate},
    {"compare", "models that differ in normalization, side by side on one text", NULL, COMPARE_OPTS, cmd_compare},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static const char *help_text(const Command *c) {
    const char *const texts[] = {HELP_GENERATE, HELP_EVAL,    HELP_INFO,   HELP_LIST,
                                 HELP_LOGITS,   HELP_PROFILE, HELP_COMPARE};
    return texts[c - COMMANDS];
}

static const Command *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(COMMANDS[i].name, name) == 0) return &COMMANDS[i];
    return NULL;
}

// `normlab --help`: the commands from the table.
static int print_main_help(void) {
    int ok = printf("usage: normlab COMMAND [options]\n\ncommands:\n") > 0;
    for (size_t i = 0; i < N_COMMANDS; i++) ok &= printf("  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary) > 0;
    ok &= printf("  %-10s %s\n\n", "help CMD", "the options of one command") > 0;
    ok &= printf("Models are named by path or by name (-m shakespeare-post-rms), looked up in $NORMLAB_MODELS,\n"
                 "weights/ beside the binary, and the installed share/normlab/models ('normlab list'). A name\n"
                 "with a '/' is a path; a bare name found in none of those folders is one in the working folder.\n"
                 "normlab --version prints the version. Exit status: 0 ok, 1 runtime or data error, 2 usage error.\n") >
          0;
    return check_stdout(ok);
}

// "unknown command 'genrate' (did you mean 'generate'?)"
static int unknown_command(const char *name) {
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        size_t d =
            strncmp(COMMANDS[i].name, name, strlen(name)) == 0 && *name ? 0 : edit_distance(name, COMMANDS[i].name);
        if (d < best_d) {
            best_d = d;
            best = COMMANDS[i].name;
        }  // a prefix ("gen") or a typo
    }
    if (best) msg_error("unknown command '%s' (did you mean '%s'?)", name, best);
    else msg_error("unknown command '%s' (see 'normlab --help')", name);
    return EXIT_USAGE;
}

// Across the re-execution below: the family OpenBLAS had picked before normlab asked for another,
// and the standard descriptors the first process found closed (it reopened them on /dev/null).
#define CORE_FROM_ENV "NORMLAB_BLAS_CORE_FROM"
#define CLOSED_FROM_ENV "NORMLAB_STD_CLOSED"

// When OpenBLAS fell back to kernels narrower than the CPU offers, re-executes the program once with
// OPENBLAS_CORETYPE set to the family the CPU supports (OpenBLAS reads it only when it loads). Never
// when the variable is set already, or with NORMLAB_BLAS_AUTO=0. NORMLAB_BLAS_PRETEND=FAMILY acts as
// if OpenBLAS had picked FAMILY (for tests on CPUs that OpenBLAS knows). The re-executed process
// removes the variables again, so that programs it starts see the environment the user gave.
static void select_blas_core(char **argv, BlasChoice *b, int *closed) {
    const char *env = getenv("OPENBLAS_CORETYPE"), *from = getenv(CORE_FROM_ENV), *fds = getenv(CLOSED_FROM_ENV);
    if (from && env) {  // re-executed: normlab set the variable
        snprintf(b->reported, sizeof b->reported, "%s", from);
        b->source = "normlab";
        if (fds) *closed |= atoi(fds) & (CLOSED_STDIN | CLOSED_STDOUT | CLOSED_STDERR);
        unsetenv(CORE_FROM_ENV);
        unsetenv(CLOSED_FROM_ENV);
        unsetenv("OPENBLAS_CORETYPE");
        return;
    }
    if (from) unsetenv(CORE_FROM_ENV);
    if (fds) unsetenv(CLOSED_FROM_ENV);
    const char *pretend = getenv("NORMLAB_BLAS_PRETEND"), *opt = getenv("NORMLAB_BLAS_AUTO");
    snprintf(b->reported, sizeof b->reported, "%s", pretend && *pretend ? pretend : nl_blas_core());
    b->source = env && *env ? "environment" : "openblas";
    const char *choice = nl_blas_choose_core(b->reported, nl_cpu_features(), env, opt && strcmp(opt, "0") == 0);
    if (!choice) return;
    char mask[8];
    snprintf(mask, sizeof mask, "%d", *closed);
    if (setenv("OPENBLAS_CORETYPE", choice, 1) == 0 && setenv(CORE_FROM_ENV, b->reported, 1) == 0 &&
        setenv(CLOSED_FROM_ENV, mask, 1) == 0) {
        execv("/proc/self/exe", argv);
        msg_error("warning: could not restart with OPENBLAS_CORETYPE=%s (%s); running on OpenBLAS's %s kernels", choice,
                  strerror(errno), b->reported);
    }
    unsetenv(CORE_FROM_ENV);
    unsetenv(CLOSED_FROM_ENV);
    unsetenv("OPENBLAS_CORETYPE");
}

// Any of descriptors 0-2 that is closed is opened on /dev/null, so that no file the command opens
// lands on it and receives its output or its diagnostics. Returns the CLOSED_* bits of those that were.
static int open_std_fds(void) {
    int closed = 0;
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            closed |= 1 << fd;  // CLOSED_STDIN, CLOSED_STDOUT, CLOSED_STDERR
            int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
            if (got >= 0 && got != fd) close(got);  // cannot happen: open returns the lowest free fd
        }
    return closed;
}

// Help (text, or NULL for `normlab --help`) to stdout, unless stdout was closed.
static int print_help(int closed, const char *text) {
    if (closed & CLOSED_STDOUT) return stdout_closed();
    return text ? print_text(text) : print_main_help();
}

int main(int argc, char **argv) {
    int closed = open_std_fds();
    BlasChoice blas = {"", "openblas"};
    select_blas_core(argv, &blas, &closed);
    if (argc < 2) {
        msg_error("usage: normlab COMMAND [options] (see 'normlab --help')");
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) return print_help(closed, NULL);
    if (strcmp(name, "--version") == 0 && argc > 2) {
        msg_error("--version takes no arguments, got '%s'", argv[2]);
        return EXIT_USAGE;
    }
    if (strcmp(name, "--version") == 0)
        return closed & CLOSED_STDOUT ? stdout_closed() : check_stdout(printf("normlab %s\n", NL_VERSION) > 0);
    if (strcmp(name, "help") == 0) {
        if (argc < 3 || strcmp(argv[2], "help") == 0) return print_help(closed, NULL);
        const Command *h = find_command(argv[2]);
        return h ? print_help(closed, help_text(h)) : unknown_command(argv[2]);
    }
    const Command *cmd = find_command(name);
    if (!cmd && (strcmp(name, "-v") == 0 || strcmp(name, "-V") == 0)) {
        msg_error("unknown option '%s' (did you mean '--version'?)", name);
        return EXIT_USAGE;
    }
    if (!cmd && name[0] == '-') {
        msg_error("unknown option '%s': the command comes first, its options after it (see 'normlab --help')", name);
        return EXIT_USAGE;
    }
    if (!cmd) return unknown_command(name);
    // nanoGPT's sampling defaults (temperature 0.8, no top-k or top-p); the prompt echoed as llama-cli does.
    Options o = {.cmd = name,
                 .blas = blas,
                 .n_new = 256,
                 .sampling = {0.8, 0, 1.0},
                 .norm = -1,
                 .placement = -1,
                 .threads = 0,
                 .repeats = 5,
                 .samples = 1,
                 .echo = 1,
                 .closed_std = closed};
    int rc = options_parse(&o, cmd, argc - 1, argv + 1);
    if (rc < 0) return print_help(closed, help_text(cmd));
    if (rc) return rc;
    // Every command runs on all available CPUs by default but compare, whose speed columns are
    // measured one row at a time unless --threads asks for rows side by side.
    if (o.threads == 0) o.threads = strcmp(name, "compare") == 0 ? 1 : available_cpus();
    if (o.prompt && o.prompt_file) {
        msg_usage(name, "%s", "give -p or -f, not both");
        return EXIT_USAGE;
    }
    if (o.counters && !o.profile && strcmp(name, "profile") != 0) {
        msg_usage(name, "%s", "--counters needs --profile");
        return EXIT_USAGE;
    }
    rc = check_std_streams(&o);
    return rc ? rc : cmd->run(&o);
}
