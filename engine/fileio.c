// fileio.c — open, check and read or map regular files.
#define _POSIX_C_SOURCE 200809L
#include "fileio.h"
#include "normlab_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *nl_cut(char buf[NL_CUT_BUF], const char *s) {
    size_t n = strlen(s), keep = 76;
    if (n < 160) return s;
    size_t head = keep, tail = n - keep;
    while (head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80) head--;  // whole characters only
    while (tail < n && ((unsigned char)s[tail] & 0xC0) == 0x80) tail++;
    memcpy(buf, s, head);
    memcpy(buf + head, "...", 3);
    memcpy(buf + head + 3, s + tail, n - tail + 1);
    return buf;
}

// Opens name (relative to dirfd) read-only and checks it is a regular file; returns the fd and size.
static int open_regular(int dirfd, const char *name, const char *what, size_t *size, NlError *err) {
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // O_NONBLOCK: a FIFO must not hang us
    if (fd < 0) {
        nl_error(err, NL_ERR_IO, "%s: cannot open: %s", what, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        nl_error(err, NL_ERR_IO, "%s: not a regular file", what);
        close(fd);
        return -1;
    }
    *size = (size_t)st.st_size;
    return fd;
}

int nl_file_read_all(int dirfd, const char *name, const char *what, size_t cap, char **buf, size_t *len, NlError *err) {
    size_t size;
    int fd = open_regular(dirfd, name, what, &size, err);
    if (fd < 0) return -1;
    if (size > cap) {
        nl_error(err, NL_ERR_FORMAT, "%s: file is %zu bytes, more than the limit of %zu", what, size, cap);
        close(fd);
        return -1;
    }
    char *data = malloc(size + 1);
    size_t got = 0;
    while (data && got < size) {
        ssize_t r = read(fd, data + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!data || got != size) {
        nl_error(err, data ? NL_ERR_IO : NL_ERR_NOMEM, "%s: %s", what,
                 data ? "short read (the file changed while read)" : "out of memory");
        free(data);
        return -1;
    }
    data[size] = '\0';
    *buf = data;
    *len = size;
    return 0;
}

int nl_file_map(int dirfd, const char *name, const char *what, const unsigned char **addr, size_t *len, NlError *err) {
    size_t size;
    int fd = open_regular(dirfd, name, what, &size, err);
    if (fd < 0) return -1;
    if (size == 0) {
        nl_error(err, NL_ERR_FORMAT, "%s: file is empty", what);
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        nl_error(err, NL_ERR_IO, "%s: cannot map: %s", what, strerror(errno));
        return -1;
    }
    *addr = p;
    *len = size;
    return 0;
}

void nl_file_unmap(const unsigned char *addr, size_t len) {
    if (addr) munmap((void *)addr, len);
}

int nl_read_file(const char *path, size_t cap, char **buf, size_t *len, NlError *err) {
    return nl_file_read_all(AT_FDCWD, path, path, cap, buf, len, err);
}
