// output.h — every file the CLI writes goes through here (--json FILE, --trace, --csv, --plot-dir).
//
// - A regular destination (or a new one) is written to a temporary file beside it and renamed over
//   it only when the whole command has succeeded; on failure only the temporary file is removed. A
//   destination reached through a symlink is replaced where the link points, the link kept.
// - "-" is standard output. Character devices and FIFOs are written directly, never created,
//   renamed or removed; the file stdout or stderr already is is written through that stream.
// - Before any work, out_check_all() refuses an output that is the same file as an input or as
//   another output (device and inode, after symlinks; for a new file its directory and name), or
//   that lies in the shipped models' folder.
#ifndef NL_CLI_OUTPUT_H
#define NL_CLI_OUTPUT_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct {
    const char *path;  // as given; "-" is standard output
    char dest[PATH_MAX];  // where it lands (symlinks resolved), "" for standard output
    char tmp[PATH_MAX];  // the temporary file while open, "" when written directly
    FILE *f;
    int direct;  // 1: written in place (stdout, a device, a FIFO)
} OutFile;

// A file's identity: device and inode when it exists, else its directory's and its name.
typedef struct {
    const char *label;  // the path as the user gave it (for messages)
    int exists;
    dev_t dev;
    ino_t ino;
    char name[NAME_MAX + 1];
} FileId;

// Fills id for path; returns 0, or -1 with a message in err (errlen bytes) when the path is too
// long or its directory does not exist.
int out_file_id(FileId *id, const char *path, char *err, size_t errlen);
int out_same_file(const FileId *a, const FileId *b);

// Checks every output against every input and every other output, and that each output can be
// written (its directory exists and is writable; a FIFO has a reader is checked at open). Prints
// the problem as a usage error of cmd and returns 2, else 0.
int out_check_all(const char *cmd, const char *const *outputs, size_t n_out, const char *const *inputs, size_t n_in,
                  const char *shipped_dir);

// Opens an output (see above). Returns 0, or 1 with the reason printed.
int out_open(OutFile *o, const char *path);
// Finishes an opened output: with ok, flushes it and (regular destinations) renames the temporary
// file over the destination; without, discards it. Returns 0, or 1 with the reason printed.
int out_finish(OutFile *o, int ok);

#endif
