/* util.c — see util.h. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

ssize_t read_retry(int fd, void *buf, size_t len)
{
    for (;;) {
        ssize_t n = read(fd, buf, len);
        if (n >= 0 || errno != EINTR)
            return n < 0 ? -errno : n;
    }
}

ssize_t read_file_at(int dirfd, const char *path, char *buf, size_t max)
{
    if (max == 0)
        return -EINVAL;
    _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got < max - 1) {
        ssize_t n = read_retry(fd, buf + got, max - 1 - got);
        if (n < 0)
            return n;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    return (ssize_t)got;
}

int parse_name_list(const char *list, const struct name_bit *names, size_t n, unsigned *ret_mask)
{
    unsigned mask = 0;
    for (const char *p = list;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!len)
            return -EINVAL; /* an empty name (and the "" of a table's missing alias) never matches */
        size_t i = 0;
        while (i < n && !(strlen(names[i].name) == len && memcmp(names[i].name, p, len) == 0))
            i++;
        if (i == n)
            return -EINVAL;
        mask |= names[i].bit;
        if (!end)
            break;
        p = end + 1;
    }
    *ret_mask = mask;
    return 0;
}

/* Shared by every output that is finalized before a kill (the profile, the JUnit report, ...). */
int write_file_atomically(int dirfd, const char *path, int (*fill)(void *ctx, int fd), void *ctx, int *keep_fd)
{
    if (!path || !*path)
        return -EINVAL;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base)
        return -EISDIR;
    size_t dirlen = slash ? (size_t)(slash - path) : 0;
    _cleanup_free_ char *dir = strndup(slash ? path : ".", slash ? (dirlen ? dirlen : 1) : 1);
    _cleanup_free_ char *tmp = malloc(dirlen + 1 + 200 + 64);
    if (!dir || !tmp)
        return -ENOMEM;

    static unsigned counter;
    _cleanup_close_ int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        /* Hidden, beside the target (same filesystem, so rename is atomic); the name is cut to
         * stay under NAME_MAX. */
        snprintf(tmp, dirlen + 1 + 200 + 64, "%.*s%s.%.200s.tmp%ld.%u", (int)dirlen, path, slash ? "/" : "",
                 base, (long)getpid(), counter++);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0 && errno != EEXIST)
            return -errno;
    }
    if (fd < 0)
        return -EEXIST;

    int r = fill(ctx, fd);
    if (r >= 0 && fsync(fd) < 0)
        r = -errno;
    /* Locked before it takes the path: the path is never an unlocked file while the run lives. */
    if (r >= 0 && keep_fd && flock(fd, LOCK_EX | LOCK_NB) < 0)
        r = -errno;
    if (r >= 0 && !keep_fd) {
        int fdx = TAKE_FD(fd);
        if (close(fdx) < 0 && errno != EINTR)
            r = -errno;
    }
    if (r >= 0 && renameat(dirfd, tmp, dirfd, path) < 0)
        r = -errno;
    if (r < 0) {
        unlinkat(dirfd, tmp, 0);
        return r;
    }
    if (keep_fd) {
        if (*keep_fd >= 0)
            close(*keep_fd);
        *keep_fd = TAKE_FD(fd);
    }
    /* The rename itself must survive a crash: the directory entry is data too. */
    _cleanup_close_ int dfd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0)
        (void)fsync(dfd);
    return 0;
}

int array_reserve(void *pp, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return -ENOMEM;
        c *= 2;
    }
    if (c > SIZE_MAX / size)
        return -ENOMEM;
    void *p = realloc(*(void **)pp, c * size);
    if (!p)
        return -ENOMEM;
    *(void **)pp = p;
    *cap = c;
    return 0;
}
