// io_check.h — a command's streams and outputs checked before any work, and its main output (io_check.c).
#ifndef NL_CLI_IO_CHECK_H
#define NL_CLI_IO_CHECK_H

#include <stddef.h>

#include "cli.h"
#include "output.h"

// Before any work: EXIT_DATA with the message when the command's result is meant for a standard
// output that was closed at start, or its text for a closed standard input ("-f -", "--text -").
int check_std_streams(const Options *o);
// No output may be an input or another output, or lie in the shipped models' folder, and each must
// be writable: 0, or a usage error (2) naming both paths.
int check_outputs(const Options *o, const char *const *outputs, size_t n_out);
// Opens -o (or stdout when absent) as *out for the command's main result.
int open_main_output(const Options *o, OutFile *out);

#endif
