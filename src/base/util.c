/* util.c — see util.h. */
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

bool text_cut_of(const char *cut, size_t n, const char *whole, size_t m)
{
    if (n > 3 && !memcmp(cut + n - 3, "...", 3) && n - 3 < m && !memcmp(cut, whole, n - 3))
        return true;
    /* the first line, whole: then a newline, raw or as a JSON text escapes it */
    return n && n < m && !memcmp(cut, whole, n) &&
           (whole[n] == '\n' || (n + 1 < m && whole[n] == '\\' && whole[n + 1] == 'n'));
}
