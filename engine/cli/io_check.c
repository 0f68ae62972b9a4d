// io_check.c — before any work: the standard streams a command needs are open, and no output is
// one of its inputs (or another output); the main output opened.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io_check.h"
#include "models.h"
#include "output.h"
#include "process.h"

static int is_stdio(const char *path) { return path && strcmp(path, "-") == 0; }

// coreutils' rule: a stream closed by the caller is an error to use, not an empty one (main.c put
// /dev/null there only so that no file opened later lands on its descriptor).
int check_std_streams(const Options *o) {
    int to_stdout = !o->output || is_stdio(o->output) || is_stdio(o->trace_out) || is_stdio(o->csv_out);
    if ((o->closed_std & CLOSED_STDOUT) && to_stdout) return stdout_closed();
    if ((o->closed_std & CLOSED_STDIN) && (is_stdio(o->prompt_file) || is_stdio(o->text_file))) {
        msg_error("-: cannot read standard input: it is closed");
        return EXIT_DATA;
    }
    return 0;
}

// The files a command reads: every file of every model named (a directory's three files, or the
// .json file) and the text or prompt file. Returns the count; list holds them (freed by free_list).
static size_t input_files(const Options *o, char ***list) {
    size_t n_models = o->n_models > 0 ? (size_t)o->n_models : 1, n = 0;
    char **l = calloc(3 * n_models + 2, sizeof *l), buf[4400];
    static const char *const FILES[3] = {"config.json", "tokenizer.json", "model.safetensors"};
    for (size_t i = 0; l && i < n_models; i++) {
        const char *m =
            o->n_models == 0 ? model_path(o, buf, sizeof buf) : resolve_model(o->models[i], buf, sizeof buf);
        if (!m) m = o->models[i];  // found nowhere: loading will say so
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
int check_outputs(const Options *o, const char *const *outputs, size_t n_out) {
    char **in = NULL, shipped[4400];
    size_t n_in = input_files(o, &in);
    int rc = out_check_all(o->cmd, outputs, n_out, (const char *const *)in, n_in,
                           beside_binary("weights", shipped, sizeof shipped));
    free_list(in, n_in);
    return rc;
}

int open_main_output(const Options *o, OutFile *out) { return out_open(out, o->output ? o->output : "-"); }
