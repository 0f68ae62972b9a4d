// output.c — the output layer (output.h).
#define _GNU_SOURCE
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msg.h"

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
    struct stat st;
    if (!realpath(dirname(copy), dir) || (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode) && (errno = ENOTDIR))) {
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
    // An existing file is replaced only where it could be written, as the shell's > and llama.cpp
    // refuse a read-only one (root may write any, and so may replace it).
    if (access(where, F_OK) == 0 && access(where, W_OK) != 0) {
        msg_usage(cmd, "output '%s': %s", path, strerror(errno));
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

// The temporary file's stream calls write(2) and close(2) itself (see output.h).
static ssize_t sink_write(void *cookie, const char *buf, size_t n) {
    int fd = (int)(intptr_t)cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return (ssize_t)done;
}

static int sink_close(void *cookie) { return close((int)(intptr_t)cookie); }

// Creates o->tmp (".NAME.normlab-XXXXXX" in dir, the X's random) with open(O_EXCL); returns its fd.
static int create_temp(OutFile *o, const char *dir, const char *name) {
    static const char DIGITS[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char r[6];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
            for (size_t i = 0; i < sizeof r; i++) r[i] = (unsigned char)(getpid() * 31 + attempt * 7 + (int)i);
        char suffix[7];
        for (size_t i = 0; i < sizeof r; i++) suffix[i] = DIGITS[r[i] % (sizeof DIGITS - 1)];
        suffix[6] = '\0';
        if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s/.%s.normlab-%s", dir, name, suffix) >= sizeof o->tmp) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

// A regular (or new) destination: a temporary file beside it, with the old file's mode or a new one's.
static int open_temp(OutFile *o, const char *path, int exists, const struct stat *st) {
    char dir[PATH_MAX], name[NAME_MAX + 1], err[PATH_MAX + 128];
    landing(path, o->dest);  // through symlinks, dangling ones too: the link stays, its target is written
    if (split_resolved(o->dest, dir, name, err, sizeof err) != 0) {
        msg_error("%s", err);
        return EXIT_DATA;
    }
    snprintf(o->dest, sizeof o->dest, "%s/%s", dir, name);
    static const cookie_io_functions_t SINK = {NULL, sink_write, NULL, sink_close};
    o->fd = create_temp(o, dir, name);
    if (o->fd < 0 || !(o->f = fopencookie((void *)(intptr_t)o->fd, "w", SINK))) {
        msg_error("%s: cannot write: %s", path, strerror(errno));
        if (o->fd >= 0) {
            close(o->fd);
            unlink(o->tmp);
        }
        o->tmp[0] = '\0';
        o->fd = -1;
        return EXIT_DATA;
    }
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(o->fd, exists ? (st->st_mode & 07777) : (0666 & ~mask));  // as a new file, or as the old one
    return 0;
}

static int open_output(OutFile *o, const char *path, int hold) {
    memset(o, 0, sizeof *o);
    o->path = path;
    o->fd = -1;
    if (is_stdout(path)) {
        o->f = hold ? open_memstream(&o->held, &o->held_len) : stdout;
        o->direct = 1;
        if (!o->f) msg_error("out of memory for standard output");
        return o->f ? 0 : EXIT_DATA;
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
    return open_temp(o, path, exists, &st);
}

int out_open(OutFile *o, const char *path) { return open_output(o, path, 0); }

int out_open_held(OutFile *o, const char *path) { return open_output(o, path, 1); }

int out_adopt(OutFile *o, const char *written, const char *dest) {
    memset(o, 0, sizeof *o);
    o->path = dest;
    o->fd = -1;
    int fd = open(written, O_RDONLY | O_CLOEXEC);
    int synced = fd >= 0 && fsync(fd) == 0;
    int err = errno;
    if (fd >= 0) close(fd);
    snprintf(o->tmp, sizeof o->tmp, "%s", written);
    if (!synced) {
        msg_error("%s: cannot sync to disk: %s", written, strerror(err));
        return EXIT_DATA;
    }
    char dir[PATH_MAX], name[NAME_MAX + 1], why[PATH_MAX + 128];
    if (split_resolved(landing(dest, o->dest), dir, name, why, sizeof why) != 0) {
        msg_error("%s", why);
        return EXIT_DATA;
    }
    snprintf(o->dest, sizeof o->dest, "%s/%s", dir, name);
    return 0;
}

// Flushes and closes one output (a temporary file fsynced first: its bytes on disk before any rename).
static int close_output(OutFile *o, int ok) {
    if (!o->f) return 0;
    const char *failed = NULL;
    int shared = o->f == stdout || o->f == stderr;
    if (ok && (fflush(o->f) == EOF || ferror(o->f))) failed = "write failed";
    if (ok && !failed && o->fd >= 0 && fsync(o->fd) != 0) failed = "cannot sync to disk";
    int err = errno;
    if (!shared && fclose(o->f) != 0 && ok && !failed) {
        failed = "write failed";  // the close of a temporary file reports a delayed write error
        err = errno;
    }
    o->f = NULL;
    o->fd = -1;
    if (!failed) return 0;
    msg_error("%s: %s: %s", is_stdout(o->path) ? "standard output" : o->path, failed, strerror(err));
    return EXIT_DATA;
}

// fsyncs the directory a renamed output lies in, so that the rename itself survives a power cut.
static int sync_dir(const OutFile *o) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", o->dest);
    int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd >= 0 && fsync(fd) == 0 ? 0 : -1;
    int err = errno;
    if (fd >= 0) close(fd);
    if (rc) msg_error("%s: renamed into place, but its directory cannot be synced to disk: %s", o->path, strerror(err));
    return rc;
}

// Undoes the renames of outs[0..k): each replaced file comes back from its hard link; a new one goes.
// One that existed but has no link (no hard links here) stays new, whole, and is named; a link that
// cannot be renamed back is kept, and named, rather than lose the old content.
static void undo_renames(OutFile *const *outs, size_t k) {
    for (size_t j = 0; j < k; j++) {
        OutFile *o = outs[j];
        if (!o->dest[0] || o->tmp[0]) continue;  // not renamed
        if (o->old[0] && rename(o->old, o->dest) != 0)
            msg_error("%s: could not be put back: its old content is in %s (%s)", o->path, o->old, strerror(errno));
        else if (!o->old[0] && o->existed)
            msg_error("%s: keeps its new content: no hard link of the old one could be made here", o->path);
        else if (!o->old[0] && unlink(o->dest) != 0)
            msg_error("%s: could not be removed again: %s", o->path, strerror(errno));
        o->old[0] = '\0';
    }
}

// Renames every temporary file into place, all or none; then syncs the directories.
static int commit_all(OutFile *const *outs, size_t n) {
    size_t renamed_files = 0;
    for (size_t i = 0; i < n; i++) renamed_files += outs[i]->tmp[0] != '\0';
    for (size_t i = 0; i < n; i++) {
        OutFile *o = outs[i];
        if (!o->tmp[0]) continue;
        o->old[0] = '\0';  // keep what a later failure would need back; not needed for a lone output
        struct stat st;
        o->existed = lstat(o->dest, &st) == 0;
        if (renamed_files > 1 && o->existed &&
            ((size_t)snprintf(o->old, sizeof o->old, "%s.old", o->tmp) >= sizeof o->old || link(o->dest, o->old) != 0))
            o->old[0] = '\0';  // no hard links here: see undo_renames and docs/files.md
        if (rename(o->tmp, o->dest) != 0) {
            msg_error("%s: cannot replace: %s", o->path, strerror(errno));
            if (o->old[0]) unlink(o->old);
            o->old[0] = '\0';
            undo_renames(outs, i);
            return EXIT_DATA;
        }
        o->tmp[0] = '\0';
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        OutFile *o = outs[i];
        if (o->old[0]) unlink(o->old);
        o->old[0] = '\0';
        if (o->dest[0] && !o->direct && sync_dir(o) != 0) rc = EXIT_DATA;
    }
    return rc;
}

// Writes what out_open_held kept for standard output.
static int release_held(OutFile *o, int ok) {
    int rc = 0;
    if (ok && o->held && (fwrite(o->held, 1, o->held_len, stdout) != o->held_len || fflush(stdout) == EOF)) {
        msg_error("cannot write to stdout: %s", strerror(errno));
        rc = EXIT_DATA;
    }
    free(o->held);
    o->held = NULL;
    o->held_len = 0;
    return rc;
}

int out_finish_all(OutFile *const *outs, size_t n, int ok) {
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (close_output(outs[i], ok) != 0) rc = EXIT_DATA;
    if (ok && !rc) rc = commit_all(outs, n);
    for (size_t i = 0; i < n; i++) {
        OutFile *o = outs[i];
        if (o->tmp[0]) unlink(o->tmp);  // not renamed: a failure, here or before
        o->tmp[0] = o->dest[0] = '\0';
        if (release_held(o, ok && !rc) != 0) rc = EXIT_DATA;
    }
    return rc;
}

int out_finish(OutFile *o, int ok) { return out_finish_all(&o, 1, ok); }
