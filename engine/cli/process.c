// process.c — the process's own business: the exit status of an error, standard output's writes,
// the CPUs it may use, files beside its binary, a seed from the OS and a child program run and waited for.
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "msg.h"
#include "process.h"

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

const char *lab_script(const char *name, char *buf, size_t len) {
    char rel[256];
    snprintf(rel, sizeof rel, "tools/lab/%s", name);
    const char *p = beside_binary(rel, buf, len);
    snprintf(rel, sizeof rel, "share/normlab/lab/%s", name);
    return p ? p : beside_binary(rel, buf, len);
}

int check_plot_tool(const char *cmd, const char *name) {
    char script[4400];
    char *argv[] = {"/usr/bin/python3", "-c", "import matplotlib", NULL};
    const char *found = lab_script(name, script, sizeof script);
    if (!found || access(found, R_OK) != 0 || spawn_wait(argv) != 0) {
        msg_usage(cmd,
                  "--plot-dir needs /usr/bin/python3 with matplotlib and tools/lab/%s "
                  "(tools/install-deps.sh --python)",
                  name);
        return EXIT_USAGE;
    }
    return 0;
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
