// process.h — the process's own business: exit statuses, standard output, CPUs, the binary's
// folder, a seed from the OS, a child program (process.c).
#ifndef NL_CLI_PROCESS_H
#define NL_CLI_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "normlab.h"

int exit_code(const NlError *err);  // NL_ERR_ARG: 2; every other code: 1
int fail(const NlError *err);  // prints err's message; returns exit_code(err)
const char *plural(size_t n);  // "" for 1, else "s"
int check_stdout(int ok);
// "cannot write to standard output: it is closed"; returns EXIT_DATA.
int stdout_closed(void);
int print_text(const char *text);
int available_cpus(void);
const char *beside_binary(const char *rel, char *buf, size_t len);
// tools/lab/NAME in the source tree, share/normlab/lab/NAME installed (beside share/normlab/lib/, the
// tools' library it imports); NULL where neither is.
const char *lab_script(const char *name, char *buf, size_t len);
// Before any work: the plotting tool runs here (/usr/bin/python3 with matplotlib) and its script
// tools/lab/NAME is found. 0, or EXIT_USAGE after a usage message naming cmd and --plot-dir.
int check_plot_tool(const char *cmd, const char *name);
uint64_t seed_from_os(void);
int spawn_wait(char *const *argv);

#endif
