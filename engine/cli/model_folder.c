// model_folder.c — a model folder written whole (normlab quantize's and normlab fold's output): the
// new folder is written beside its destination (a hidden folder in the same parent), fsynced, then
// renamed into place, so a reader sees the old folder or the new one, never a part (docs/files.md).
// An existing destination must be a model folder: its other files (a training log) are linked into
// the new one, the two are swapped in one step where the file system can (renameat2's
// RENAME_EXCHANGE), and the old one removed.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_folder.h"
#include "msg.h"
#include "process.h"

int has_file(const char *dir, const char *name) {
    char p[PATH_MAX + NAME_MAX + 2];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int same_file(const char *a, const char *b) {
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int model_folder_check(OutDir *d, const char *cmd, const char *path, const char *input) {
    char parent[PATH_MAX], shipped[4400], real[PATH_MAX];
    struct stat st;
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    if (len == 0 || len >= sizeof d->dest) {
        msg_usage(cmd, "output '%s': not a usable folder name", path);
        return EXIT_USAGE;
    }
    snprintf(d->dest, sizeof d->dest, "%.*s", (int)len, path);
    if (realpath(d->dest, real)) snprintf(d->dest, sizeof d->dest, "%s", real);  // a symlink: where it points
    d->dest_exists = stat(d->dest, &st) == 0;
    if (d->dest_exists && (!S_ISDIR(st.st_mode) || !has_file(d->dest, "config.json"))) {
        msg_usage(cmd, "output '%s' exists and is not a model folder: it is not replaced", path);
        return EXIT_USAGE;
    }
    if (d->dest_exists && same_file(d->dest, input)) {
        msg_usage(cmd, "output '%s' is the input model", path);
        return EXIT_USAGE;
    }
    snprintf(parent, sizeof parent, "%s", d->dest);
    char *slash = strrchr(parent, '/');
    if (slash == parent) parent[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(parent, sizeof parent, ".");
    if (!realpath(parent, real) || stat(real, &st) != 0 || !S_ISDIR(st.st_mode) || access(real, W_OK | X_OK) != 0) {
        msg_usage(cmd, "output '%s': its folder %s cannot be written: %s", path, parent, strerror(errno));
        return EXIT_USAGE;
    }
    const char *ship = beside_binary("weights", shipped, sizeof shipped);
    char ship_real[PATH_MAX];
    size_t n = ship && realpath(ship, ship_real) ? strlen(ship_real) : 0;
    if (n && (strncmp(real, ship_real, n) == 0 && (real[n] == '\0' || real[n] == '/'))) {
        msg_usage(cmd, "output '%s' is in the shipped models' folder %s, which normlab never writes", path, ship_real);
        return EXIT_USAGE;
    }
    const char *base = strrchr(d->dest, '/') ? strrchr(d->dest, '/') + 1 : d->dest;
    if (snprintf(d->tmp, sizeof d->tmp, "%s/.%s.XXXXXX", real, base) >= (int)sizeof d->tmp) {
        msg_usage(cmd, "output '%s': path too long", path);
        return EXIT_USAGE;
    }
    return 0;
}

// A new folder as mkdir makes one (mkdtemp's is the owner's only): the umask's permissions.
static int open_up(const char *dir) {
    mode_t mask = umask(0);
    umask(mask);
    if (chmod(dir, 0777 & ~mask) == 0) return 0;
    msg_error("%s: cannot set its permissions: %s", dir, strerror(errno));
    return -1;
}

int close_synced(FILE *f) {
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    int saved = errno;
    if (fclose(f) != 0 && !bad) return -1;
    errno = saved;
    return bad ? -1 : 0;
}

int copy_file(const char *src_dir, const char *dir, const char *name) {
    char from[PATH_MAX + NAME_MAX + 2], to[PATH_MAX + NAME_MAX + 2], buf[65536];
    snprintf(from, sizeof from, "%s/%s", src_dir, name);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wbx") : NULL;
    int ok = in && out;
    for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;) ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in);
    int saved = errno;
    if (in) fclose(in);
    if (out && close_synced(out) != 0) ok = 0;
    if (!ok) msg_error("%s: cannot copy %s: %s", to, from, strerror(ok ? saved : errno));
    return ok ? 0 : -1;
}

void remove_folder(const char *dir) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlinkat(dirfd(d), e->d_name, 0);
    if (d) closedir(d);
    rmdir(dir);
}

// The files of the folder being replaced that the new one lacks (a training log), linked into it.
static int link_others(const OutDir *d) {
    DIR *old = opendir(d->dest);
    int rc = old ? 0 : -1;
    for (struct dirent *e; old && rc == 0 && (e = readdir(old));) {
        if (e->d_name[0] == '.' || has_file(d->tmp, e->d_name)) continue;
        char from[PATH_MAX + NAME_MAX + 2], to[PATH_MAX + NAME_MAX + 2];
        snprintf(from, sizeof from, "%s/%s", d->dest, e->d_name);
        snprintf(to, sizeof to, "%s/%s", d->tmp, e->d_name);
        rc = link(from, to);
    }
    if (old) closedir(old);
    if (rc != 0) msg_error("%s: cannot keep the files of the folder it replaces: %s", d->dest, strerror(errno));
    return rc;
}

static int sync_folder(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = fd >= 0 && fsync(fd) == 0 ? 0 : -1;
    if (fd >= 0) close(fd);
    return rc;
}

int model_folder_put_in_place(const OutDir *d) {
    if (sync_folder(d->tmp) != 0) {
        msg_error("%s: cannot sync: %s", d->tmp, strerror(errno));
        return -1;
    }
    if (!d->dest_exists) {
        if (rename(d->tmp, d->dest) == 0) return 0;
        msg_error("%s: cannot rename the new model folder into place: %s", d->dest, strerror(errno));
        return -1;
    }
    if (link_others(d) != 0) return -1;
    if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->dest, RENAME_EXCHANGE) != 0) {
        msg_error("%s: cannot swap the new model folder into place: %s", d->dest, strerror(errno));
        return -1;
    }
    remove_folder(d->tmp);  // (the old folder, now at tmp)
    return 0;
}

int model_folder_start(OutDir *d, const char *cmd, const char *output, const char *input, int no_mmap,
                       NlModel **model) {
    *model = NULL;
    if (!output) {
        msg_usage(cmd, "needs -o DIR, the folder to write");
        return EXIT_USAGE;
    }
    int rc = model_folder_check(d, cmd, output, input);
    if (rc != 0) return rc;
    NlLoadOptions lo = {.no_mmap = no_mmap, .no_repack = 1};
    NlError err;
    if (nl_model_load(model, input, &lo, &err) != 0) {
        msg_error("%s", err.msg);
        return EXIT_DATA;
    }
    return 0;
}

int model_folder_create(OutDir *d) {
    if (!mkdtemp(d->tmp)) {
        msg_error("%s: cannot create a folder: %s", d->tmp, strerror(errno));
        return -1;
    }
    d->made = 1;
    return open_up(d->tmp);
}

int model_folder_copy(const OutDir *d, const char *input) {
    static const char *const COPIED[] = {"config.json", "tokenizer.json", "vocab.json", "merges.txt"};
    for (size_t i = 0; i < sizeof COPIED / sizeof COPIED[0]; i++)
        if (has_file(input, COPIED[i]) && copy_file(input, d->tmp, COPIED[i]) != 0) return -1;
    return 0;
}

FILE *model_folder_open(const OutDir *d, const char *name, char *path, size_t len) {
    snprintf(path, len, "%s/%s", d->tmp, name);
    FILE *f = fopen(path, "wbx");
    if (!f) msg_error("%s: cannot create: %s", path, strerror(errno));
    return f;
}

void model_folder_discard(OutDir *d) {
    if (d->made) remove_folder(d->tmp);
    d->made = 0;
}
