// output.c — the output layer (output.h).
#define _GNU_SOURCE
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msg.h"

enum { EXIT_DATA = 1, EXIT_USAGE = 2 };

static int is_stdout(const char *path) { return strcmp(path, "-") == 0; }

// A character device (/dev/null, a terminal) may take several outputs.
static int is_char_device(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

// Written in place: a character device or a FIFO (a regular file is replaced, a block device or a
// socket refused).
static int is_direct(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

// The file an output path lands on: a symlink's target (followed as far as it goes, dangling or
// not), else the path itself; into out (PATH_MAX).
static const char *landing(const char *path, char *out) {
    char link[PATH_MAX], next[PATH_MAX];
    snprintf(out, PATH_MAX, "%s", path);
    for (int hops = 0; hops < 40; hops++) {
        struct stat st;
        if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode)) break;
        ssize_t n = readlink(out, link, sizeof link - 1);
        if (n <= 0) break;
        link[n] = '\0';
        if (link[0] == '/') snprintf(next, sizeof next, "%s", link);
        else {
            char dir[PATH_MAX];
            snprintf(dir, sizeof dir, "%s", out);
            snprintf(next, sizeof next, "%s/%s", dirname(dir), link);
        }
        snprintf(out, PATH_MAX, "%s", next);
    }
    return out;
}

// dir (PATH_MAX) = the resolved directory of path, name = its last component.
static int split_resolved(const char *path, char *dir, char *name, char *err, size_t errlen) {
    char copy[PATH_MAX], copy2[PATH_MAX];
    if (strlen(path) >= PATH_MAX) {
        snprintf(err, errlen, "%s: path too long (%zu bytes; at most %d)", path, strlen(path), PATH_MAX - 1);
        return -1;
    }
    strcpy(copy, path);
    strcpy(copy2, path);
    const char *base = basename(copy2);
    if (strlen(base) > NAME_MAX) {
        snprintf(err, errlen, "%s: path too long (a name of %zu bytes; at most %d)", path, strlen(base), NAME_MAX);
        return -1;
    }
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(base, "/") == 0) {
        snprintf(err, errlen, "%s: not a file name", path);
        return -1;
    }
    if (!realpath(dirname(copy), dir)) {
        snprintf(err, errlen, "%s: its directory cannot be used: %s", path, strerror(errno));
        return -1;
    }
    strcpy(name, base);
    return 0;
}

int out_file_id(FileId *id, const char *path, char *err, size_t errlen) {
    memset(id, 0, sizeof *id);
    id->label = path;
    struct stat st;
    if (strlen(path) >= PATH_MAX) {
        snprintf(err, errlen, "%s: path too long (%zu bytes; at most %d)", path, strlen(path), PATH_MAX - 1);
        return -1;
    }
    if (stat(path, &st) == 0) {
        id->exists = 1;
        id->dev = st.st_dev;
        id->ino = st.st_ino;
        return 0;
    }
    char dir[PATH_MAX];
    if (split_resolved(path, dir, id->name, err, errlen) != 0) return -1;
    if (stat(dir, &st) != 0) {
        snprintf(err, errlen, "%s: its directory cannot be used: %s", path, strerror(errno));
        return -1;
    }
    id->dev = st.st_dev;  // the directory's, with the name
    id->ino = st.st_ino;
    return 0;
}

int out_same_file(const FileId *a, const FileId *b) {
    return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino &&
           (a->exists || strcmp(a->name, b->name) == 0);
}

// Whether path (an output) lies in shipped_dir (resolved), or is that folder.
static int inside(const char *path, const char *shipped_dir) {
    char real[PATH_MAX], dir[PATH_MAX], name[NAME_MAX + 1], err[64], target[PATH_MAX];
    if (!shipped_dir || !realpath(shipped_dir, real)) return 0;
    if (split_resolved(landing(path, target), dir, name, err, sizeof err) != 0) return 0;
    size_t n = strlen(real);
    return strncmp(dir, real, n) == 0 && (dir[n] == '\0' || dir[n] == '/');
}

// An output that can be written: "-"; a system path; an existing FIFO or character device; or a
// regular or new file in a writable directory.
static int check_writable(const char *cmd, const char *path) {
    if (is_stdout(path) || is_direct(path)) return 0;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        msg_usage(cmd, "output '%s' is a directory", path);
        return EXIT_USAGE;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        msg_usage(cmd, "output '%s' is neither a regular file, a FIFO nor a device", path);
        return EXIT_USAGE;
    }
    char dir[PATH_MAX], name[NAME_MAX + 1], err[PATH_MAX + 128];
    char target[PATH_MAX];
    const char *where = landing(path, target);  // a symlink's target is what gets replaced
    if (split_resolved(where, dir, name, err, sizeof err) != 0) {
        msg_usage(cmd, "output %s", err);
        return EXIT_USAGE;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        msg_usage(cmd, "output '%s': cannot write in %s: %s", path, dir, strerror(errno));
        return EXIT_USAGE;
    }
    return 0;
}

int out_check_all(const char *cmd, const char *const *outputs, size_t n_out, const char *const *inputs, size_t n_in,
                  const char *shipped_dir) {
    FileId *out = calloc(n_out + 1, sizeof *out), in;
    char err[PATH_MAX + 128];
    int rc = 0;
    for (size_t i = 0; i < n_out && rc == 0; i++) {
        if (is_stdout(outputs[i])) {
            for (size_t j = 0; j < i && rc == 0; j++)
                if (is_stdout(outputs[j])) {
                    msg_usage(cmd, "%s", "two outputs would both go to standard output ('-'); give one of them a file");
                    rc = EXIT_USAGE;
                }
            out[i].label = NULL;
            continue;
        }
        if ((rc = check_writable(cmd, outputs[i])) != 0) break;
        if (out_file_id(&out[i], outputs[i], err, sizeof err) != 0) {
            msg_usage(cmd, "output %s", err);
            rc = EXIT_USAGE;
            break;
        }
        if (inside(outputs[i], shipped_dir)) {
            msg_usage(cmd, "output '%s' is in the shipped models' folder %s, which normlab never writes", outputs[i],
                      shipped_dir);
            rc = EXIT_USAGE;
        }
        for (size_t j = 0; j < i && rc == 0; j++)
            if (out[j].label && out_same_file(&out[i], &out[j]) && !is_char_device(outputs[i])) {
                msg_usage(cmd, "outputs '%s' and '%s' are the same file", outputs[j], outputs[i]);
                rc = EXIT_USAGE;
            }
        for (size_t k = 0; k < n_in && rc == 0; k++) {
            if (!inputs[k] || is_stdout(inputs[k]) || out_file_id(&in, inputs[k], err, sizeof err) != 0 || !in.exists)
                continue;
            if (out_same_file(&out[i], &in)) {
                msg_usage(cmd, "output '%s' is the input '%s'", outputs[i], inputs[k]);
                rc = EXIT_USAGE;
            }
        }
    }
    free(out);
    return rc;
}

int out_open(OutFile *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->path = path;
    if (is_stdout(path)) {
        o->f = stdout;
        o->direct = 1;
        return 0;
    }
    struct stat st, fd_st;
    int exists = stat(path, &st) == 0;
    for (int fd = 1; exists && fd <= 2; fd++)  // /dev/stdout, /dev/stderr, or the file they are: share the stream
        if (fstat(fd, &fd_st) == 0 && fd_st.st_dev == st.st_dev && fd_st.st_ino == st.st_ino) {
            o->f = fd == 1 ? stdout : stderr;
            o->direct = 1;
            return 0;
        }
    if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        // In place: no O_CREAT, no O_TRUNC (a regular file behind /dev/stdout is the shell's); a FIFO
        // with no reader is an error, not a hang.
        int fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
            msg_error("%s: cannot write: %s", path,
                      errno == ENXIO ? "no process is reading this FIFO" : strerror(errno));
            if (fd >= 0) close(fd);
            return EXIT_DATA;
        }
        o->direct = 1;
        return 0;
    }
    if (exists && !S_ISREG(st.st_mode)) {
        msg_error("%s: cannot write: neither a regular file, a FIFO nor a character device", path);
        return EXIT_DATA;
    }
    char dir[PATH_MAX], name[NAME_MAX + 1], err[PATH_MAX + 128];
    landing(path, o->dest);  // through symlinks, dangling ones too: the link stays, its target is written
    if (split_resolved(o->dest, dir, name, err, sizeof err) != 0) {
        msg_error("%s", err);
        return EXIT_DATA;
    }
    if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s/.%s.normlab-XXXXXX", dir, name) >= sizeof o->tmp) {
        msg_error("%s: path too long for its temporary file", path);
        return EXIT_DATA;
    }
    snprintf(o->dest, sizeof o->dest, "%s/%s", dir, name);
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
        msg_error("%s: cannot write: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
        o->tmp[0] = '\0';
        return EXIT_DATA;
    }
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, exists ? (st.st_mode & 07777) : (0666 & ~mask));  // as an ordinary new file, or as the old one
    return 0;
}

int out_finish(OutFile *o, int ok) {
    if (!o->f) return ok ? 0 : 0;
    int rc = 0;
    if (o->f == stdout || o->f == stderr) {
        if (ok && fflush(o->f) == EOF) {
            msg_error("%s: write failed: %s", o->path, strerror(errno));
            rc = EXIT_DATA;
        }
        o->f = NULL;
        return rc;
    }
    if (ok && (fflush(o->f) == EOF || ferror(o->f))) {
        msg_error("%s: write failed: %s", o->path, strerror(errno));
        ok = 0;
        rc = EXIT_DATA;
    }
    if (fclose(o->f) != 0 && ok) {
        msg_error("%s: write failed: %s", o->path, strerror(errno));
        ok = 0;
        rc = EXIT_DATA;
    }
    o->f = NULL;
    if (o->direct) return rc;
    if (ok && rename(o->tmp, o->dest) != 0) {
        msg_error("%s: cannot replace: %s", o->path, strerror(errno));
        ok = 0;
        rc = EXIT_DATA;
    }
    if (!ok) unlink(o->tmp);
    o->tmp[0] = '\0';
    return rc;
}
