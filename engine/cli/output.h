// output.h — every file the CLI writes goes through here (--json FILE, --trace, --csv, --plot-dir).
//
// - A regular destination (or a new one) is written to a temporary file beside it. When the command
//   has succeeded, out_finish_all() flushes, fsyncs and closes every output, and only when all of
//   them are whole renames them into place, then fsyncs their directories. If a rename fails, the
//   ones done before it are undone (the old file, kept as a hard link, is renamed back; a new one is
//   removed). On failure only the temporary files are removed.
// - A temporary file's bytes go through write(2) and close(2) themselves (a stdio cookie), not
//   stdio's internal calls, so a fault-injection test can fail any of them (tests/fault_test.sh).
// - A destination reached through a symlink is replaced where the link points, the link kept.
// - "-" is standard output. Character devices and FIFOs are written directly, never created,
//   renamed or removed; the file stdout or stderr already is is written through that stream.
//   out_open_held() holds what goes to standard output in memory until every file is in place.
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
    char tmp[PATH_MAX];  // the temporary file until renamed, "" when written directly
    char old[PATH_MAX];  // while several outputs are renamed: a hard link to the replaced file, or ""
    int existed;  // while renamed: the destination existed before
    FILE *f;
    int fd;  // the temporary file's descriptor (for fsync), -1 otherwise
    int direct;  // 1: written in place (stdout, a device, a FIFO)
    char *held;  // out_open_held: standard output's bytes, written when every file is in place
    size_t held_len;
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
// As out_open, but "-" is held in memory and reaches standard output only after out_finish_all has
// put every file output in place (a command's table printed after its --trace file).
int out_open_held(OutFile *o, const char *path);
// Takes a file another program has written, `written` (in dest's folder, on the same file system), as
// the temporary file of the output dest: fsynced now, renamed over dest by out_finish_all with the
// command's other outputs, or removed. Returns 0, or 1 with the reason printed.
int out_adopt(OutFile *o, const char *written, const char *dest);
// Finishes the outputs of one command together (see above): with ok, each is flushed, fsynced and
// closed, then all are renamed into place or none is, then held standard output is written; without
// ok, or on any failure, every temporary file is removed. Unopened outputs are skipped. Returns 0, or
// 1 with the reason printed.
int out_finish_all(OutFile *const *outs, size_t n, int ok);
// out_finish_all of one output.
int out_finish(OutFile *o, int ok);

#endif
