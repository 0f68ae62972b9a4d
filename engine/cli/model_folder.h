// model_folder.h — a model folder written whole, as quantize and fold write theirs (model_folder.c).
#ifndef NL_CLI_MODEL_FOLDER_H
#define NL_CLI_MODEL_FOLDER_H

#include <stdio.h>

#include "normlab.h"

enum { OUTDIR_PATH = 4096 };  // PATH_MAX on Linux

typedef struct {
    char dest[OUTDIR_PATH];  // the folder asked for (symlinks resolved)
    char tmp[OUTDIR_PATH];  // the new folder until renamed over dest
    int dest_exists;
    int made;  // tmp exists
} OutDir;

// The destination `path` checked before any work, as every output is (docs/files.md): not the input
// model folder, not in the shipped models' folder, an existing one a model folder, its parent a
// writable folder. 0, or an exit status after a usage message naming cmd.
int model_folder_check(OutDir *d, const char *cmd, const char *path, const char *input);
// What quantize and fold do first: -o DIR given (output) and checked (model_folder_check), then the
// input model loaded as stored (no transposed copies; no_mmap: read into memory). 0, or an exit
// status after a message naming cmd.
int model_folder_start(OutDir *d, const char *cmd, const char *output, const char *input, int no_mmap, NlModel **model);
// The new folder made (the umask's permissions): 0, or -1 after a message.
int model_folder_create(OutDir *d);
// The input folder's files besides model.safetensors (config.json, tokenizer files) copied into it.
int model_folder_copy(const OutDir *d, const char *input);
// A new file `name` in it (path: its path, len bytes), or NULL after a message.
FILE *model_folder_open(const OutDir *d, const char *name, char *path, size_t len);
// Writes all of f (buffered), flushes and fsyncs it, closes it: 0, or -1 with errno.
int close_synced(FILE *f);
// dir/name = src_dir/name, byte for byte: 0, or -1 after a message.
int copy_file(const char *src_dir, const char *dir, const char *name);
// Whether the folder dir holds the file `name`.
int has_file(const char *dir, const char *name);
// The new folder renamed into place (swapped with an existing one, which is then removed): 0, or -1
// after a message.
int model_folder_put_in_place(const OutDir *d);
// The new folder and its files removed (after a failure).
void model_folder_discard(OutDir *d);
// The new folder's model.safetensors folded from model's and its config.json as it then becomes, the
// input folder's other files copied (cmd_fold.c; compare --fold's rows use it too): 0, or after a
// message an exit status: EXIT_USAGE where the fold refuses the model as asked (--center where it is
// not exact), as every other refusal of a model for an option, else EXIT_DATA.
int fold_model_folder(const OutDir *d, const char *input, const NlModel *model, const NlFoldOptions *opts,
                      NlFoldResult *r);
// Removes the folder dir and the files in it (a folder normlab wrote: files only).
void remove_folder(const char *dir);

#endif
