// shim.c — an LD_PRELOAD library that fails one I/O call of normlab's outputs, for tests/fault_test.sh
// (SQLite's way: a fault at every I/O call, one at a time).
//
//   FAULT_CALL=write|close|rename|fsync|open  FAULT_N=N  FAULT_ERRNO=ENOSPC|EIO  LD_PRELOAD=build/fault_shim.so
//
// The Nth call of FAULT_CALL that touches an output fails with FAULT_ERRNO: write and close on a
// descriptor open for writing (other than 0-2), fsync on any, open and openat for writing or creating,
// and every rename. (close closes the descriptor all the same, as Linux does.) Reads are never failed.
// FAULT_N=0 fails nothing; with FAULT_COUNT=FILE the shim writes each kind's count there at exit, and
// "fsync_dir", the fsyncs of directories. FAULT_NO_LINKS=1 makes every link() fail with EPERM, as on
// a file system without hard links.
// FAULT_SWAP=NAME:DIR:OTHER plays the writer of tools/lib/nlformat.py at the worst moment: at the
// first open for reading of a file called NAME, it swaps the folders DIR and OTHER (renameat2
// RENAME_EXCHANGE) and deletes the files of the one now at OTHER, then lets the open go on; a
// reader holding DIR's old descriptor then finds its files gone (tests/fault_test.sh).
// The counters are process-wide statics: a preloaded shim has no handle to hang them on.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

enum { K_WRITE, K_CLOSE, K_RENAME, K_FSYNC, K_OPEN, K_FSYNC_DIR, N_KINDS };
static const char *const KIND_NAMES[N_KINDS] = {"write", "close", "rename", "fsync", "open", "fsync_dir"};
static long counts[N_KINDS];

// Whether this call is the one to fail (and counts it).
static int should_fail(int kind) {
    long n = __atomic_add_fetch(&counts[kind], 1, __ATOMIC_SEQ_CST);
    const char *call = getenv("FAULT_CALL"), *nth = getenv("FAULT_N");
    if (!call || !nth || strcmp(call, KIND_NAMES[kind]) != 0) return 0;
    return atol(nth) == n;
}

static int fault_errno(void) {
    const char *e = getenv("FAULT_ERRNO");
    return e && strcmp(e, "EIO") == 0 ? EIO : ENOSPC;
}

static int writable(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fd > 2 && fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
}

static void *real(const char *name) { return dlsym(RTLD_NEXT, name); }

ssize_t write(int fd, const void *buf, size_t n) {
    ssize_t (*f)(int, const void *, size_t) = real("write");
    if (writable(fd) && should_fail(K_WRITE)) {
        errno = fault_errno();
        return -1;
    }
    return f(fd, buf, n);
}

int close(int fd) {
    int (*f)(int) = real("close");
    int fail = writable(fd) && should_fail(K_CLOSE);
    int rc = f(fd);
    if (fail) {
        errno = fault_errno();
        return -1;
    }
    return rc;
}

int fsync(int fd) {
    int (*f)(int) = real("fsync");
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) __atomic_add_fetch(&counts[K_FSYNC_DIR], 1, __ATOMIC_SEQ_CST);
    if (should_fail(K_FSYNC)) {
        errno = fault_errno();
        return -1;
    }
    return f(fd);
}

int rename(const char *from, const char *to) {
    int (*f)(const char *, const char *) = real("rename");
    if (should_fail(K_RENAME)) {
        errno = fault_errno();
        return -1;
    }
    return f(from, to);
}

int link(const char *from, const char *to) {
    int (*f)(const char *, const char *) = real("link");
    const char *off = getenv("FAULT_NO_LINKS");
    if (off && strcmp(off, "1") == 0) {
        errno = EPERM;
        return -1;
    }
    return f(from, to);
}

static int opens_for_writing(int flags) { return (flags & (O_WRONLY | O_RDWR | O_CREAT)) != 0; }

int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
    va_end(ap);
    int (*f)(const char *, int, ...) = real("open");
    if (opens_for_writing(flags) && should_fail(K_OPEN)) {
        errno = fault_errno();
        return -1;
    }
    return f(path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

// FAULT_SWAP: swaps the two folders once, at the first read of its file, and empties the old one.
static void swap_before(const char *path) {
    static int done;
    const char *spec = getenv("FAULT_SWAP");
    char name[256], a[4096], b[4096];
    if (done || !spec || sscanf(spec, "%255[^:]:%4095[^:]:%4095s", name, a, b) != 3) return;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (strcmp(base, name) != 0) return;
    done = 1;
    if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0) return;
    DIR *d = opendir(b);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[8300];
        snprintf(p, sizeof p, "%s/%s", b, e->d_name);
        if (e->d_type == DT_REG) unlink(p);
    }
    if (d) closedir(d);
}

int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
    va_end(ap);
    int (*f)(int, const char *, int, ...) = real("openat");
    if (!opens_for_writing(flags)) swap_before(path);
    if (opens_for_writing(flags) && should_fail(K_OPEN)) {
        errno = fault_errno();
        return -1;
    }
    return f(dirfd, path, flags, mode);
}

__attribute__((destructor)) static void report_counts(void) {
    const char *path = getenv("FAULT_COUNT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return;
    for (int k = 0; k < N_KINDS; k++) fprintf(f, "%s %ld\n", KIND_NAMES[k], counts[k]);
    fclose(f);
}
