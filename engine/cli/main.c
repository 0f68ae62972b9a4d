// main.c — the normlab command line: the command table and the dispatcher. Each command (or
// family) lives in its own file; options, inputs and outputs are shared modules (cli.h).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "distance.h"
#include "help.h"
#include "io_check.h"
#include "options.h"
#include "process.h"

// Whether standard input holds a prompt: a file, or a pipe with text (or its end) within 100 ms.
// A pipe that stays silent (a harness that holds it open) is not waited for: -f - waits.
#define STDIN_WAIT_MS 100
static int stdin_has_prompt(void) {
    struct stat st;
    if (fstat(STDIN_FILENO, &st) != 0) return 0;
    if (S_ISREG(st.st_mode)) return 1;
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    return S_ISFIFO(st.st_mode) && poll(&p, 1, STDIN_WAIT_MS) == 1 && (p.revents & (POLLIN | POLLHUP));
}

const Command *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(COMMANDS[i].name, name) == 0) return &COMMANDS[i];
    return NULL;
}

// "unknown command 'genrate' (did you mean 'generate'?)"
static int unknown_command(const char *name) {
    if (strcmp(name, "perplexity") == 0) {  // llama-perplexity's job
        msg_error("unknown command 'perplexity' (normlab's is 'eval': a text's nats, bits and perplexity)");
        return EXIT_USAGE;
    }
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
    const char *choice = nl_blas_choose_core(b->reported, env, opt && strcmp(opt, "0") == 0);
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

// Help (a command's, or with NULL `normlab --help`) to stdout, unless stdout was closed.
static int print_help(int closed, const Command *c) {
    if (closed & CLOSED_STDOUT) return stdout_closed();
    return check_stdout((c ? help_command(stdout, c) : help_main(stdout)) == 0);
}

// `normlab help WHAT`: a command's help, or the hidden dumps the man page, the completion and
// docs/cli.md are made from (--options-table, --markdown, --man: the man page's commands and options).
static int help(int closed, const char *what) {
    int table = strcmp(what, "--options-table") == 0, md = strcmp(what, "--markdown") == 0,
        man = strcmp(what, "--man") == 0;
    if (table || md || man) {
        if (closed & CLOSED_STDOUT) return stdout_closed();
        return check_stdout((table ? help_options_table(stdout) : md ? help_markdown(stdout) : help_man(stdout)) == 0);
    }
    const Command *h = find_command(what);
    return h ? print_help(closed, h) : unknown_command(what);
}

int main(int argc, char **argv) {
    int closed = open_std_fds();
    BlasChoice blas = {"", "openblas"};
    select_blas_core(argv, &blas, &closed);
    if (argc < 2) {  // as git does: the commands, on stderr (a usage error)
        help_main(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) return print_help(closed, NULL);
    int version = strcmp(name, "--version") == 0 || strcmp(name, "version") == 0;  // as git: both
    if (version && argc > 2) {
        msg_error("%s takes no arguments, got '%s'", name, argv[2]);
        return EXIT_USAGE;
    }
    if (version) return closed & CLOSED_STDOUT ? stdout_closed() : check_stdout(printf("normlab %s\n", NL_VERSION) > 0);
    if (strcmp(name, "help") == 0) {
        if (argc > 3) {
            msg_error("help takes one command, got '%s' after '%s'", argv[3], argv[2]);
            return EXIT_USAGE;
        }
        if (argc < 3 || strcmp(argv[2], "help") == 0) return print_help(closed, NULL);
        return help(closed, argv[2]);
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
    // The numeric defaults come from the option table (options_parse); the prompt is echoed as llama-cli does.
    Options o = {.cmd = name,
                 .blas = blas,
                 .norm = -1,
                 .placement = -1,
                 .target = -1,
                 .foil = -1,
                 .echo = 1,
                 .closed_std = closed};
    int rc = options_parse(&o, cmd, argc - 1, argv + 1);
    if (rc) {
        options_free(&o);
        return rc < 0 ? print_help(closed, cmd) : rc;
    }
    // Every command runs on all available CPUs by default but compare, whose table defaults to one
    // thread: its speed columns are measured one row at a time unless --threads asks otherwise.
    if (o.threads == 0) o.threads = available_cpus();
    // A piped prompt: generate, logits and tokenize read a standard input that holds one, as -f -.
    if ((cmd->bit & (CMD_GENERATE | CMD_LOGITS | CMD_TOKENIZE)) && !o.interactive && !o.prompt && !o.prompt_file &&
        !(closed & CLOSED_STDIN) && stdin_has_prompt())
        o.prompt_file = "-";
    rc = options_check(&o, cmd);  // the relations between its options (its cmd_*.c)
    if (o.start && strncmp(o.start, "FILE:", 5) == 0) o.prompt_file = o.start + 5;  // nanoGPT's start=FILE:path
    else if (o.start) o.prompt = o.start;
    if (!rc) rc = check_std_streams(&o);
    if (!rc) rc = cmd->run(&o);
    options_free(&o);
    return rc;
}
