/* passthru.c — see passthru.h. */
#include "run/passthru.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/util.h"

#define PASS_BUF (128 * 1024)

struct passthru {
    int rfd;          /* our end of the command's pipe (non-blocking); -1 when closed */
    int wfd;          /* where the bytes go: our stdout/stderr, maybe reopened non-blocking */
    bool wfd_owned;   /* wfd was opened by us */
    bool wfd_pipe;    /* wfd is a pipe written non-blocking */
    bool gone;        /* downstream went away */
    bool mid_line;    /* the last byte written downstream was not a newline */
    char *buf;
    size_t off, len;  /* pending bytes buf[off..off+len) not yet written downstream */
};

int passthru_new(int from_fd, int to_fd, struct passthru **ret)
{
    struct passthru *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->buf = malloc(PASS_BUF);
    if (!p->buf) {
        free(p);
        return -ENOMEM;
    }
    p->rfd = from_fd;
    fcntl(from_fd, F_SETFL, fcntl(from_fd, F_GETFL) | O_NONBLOCK);
    p->wfd = to_fd;
    struct stat st;
    if (fstat(to_fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", to_fd);
        int nfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (nfd >= 0) {
            p->wfd = nfd;
            p->wfd_owned = true;
            p->wfd_pipe = true;
        }
    }
    *ret = p;
    return 0;
}

void passthru_close(struct passthru *p)
{
    if (p->rfd >= 0)
        close(p->rfd);
    p->rfd = -1;
}

void passthru_free(struct passthru *p)
{
    if (!p)
        return;
    passthru_close(p);
    if (p->wfd_owned)
        close(p->wfd);
    free(p->buf);
    free(p);
}

static void downstream_gone(struct passthru *p)
{
    p->gone = true;
    p->len = 0;
    passthru_close(p);
}

bool passthru_flush(struct passthru *p)
{
    while (p->len > 0) {
        ssize_t n = write(p->wfd, p->buf + p->off, p->len);
        if (n > 0) {
            p->mid_line = p->buf[p->off + (size_t)n - 1] != '\n';
            p->off += (size_t)n;
            p->len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return false;
        /* EPIPE, or any hard error: nobody will read what the command writes. */
        downstream_gone(p);
        return true;
    }
    p->off = 0;
    return true;
}

enum passthru_read passthru_read(struct passthru *p, const char **ret_buf, size_t *ret_len, uint64_t *ret_ns)
{
    if (p->rfd < 0)
        return PT_EOF;
    if (p->len > 0)
        return PT_EMPTY;
    ssize_t n;
    do
        n = read(p->rfd, p->buf, PASS_BUF);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return PT_EMPTY;
    if (n <= 0) {
        passthru_close(p);
        return PT_EOF;
    }
    p->off = 0;
    p->len = (size_t)n;
    /* Before the bytes go on: whoever reads them downstream may act on them at once (start a
     * process, say), and that must not look earlier than the line that caused it. */
    *ret_ns = now_ns();
    /* Pass the bytes on first: parsing must never delay them. */
    passthru_flush(p);
    *ret_buf = p->buf;
    *ret_len = (size_t)n;
    return PT_DATA;
}

bool passthru_pending(const struct passthru *p) { return p->len > 0; }

bool passthru_mid_line(const struct passthru *p, int fd)
{
    struct stat a, b;
    return p->mid_line && !p->gone && fstat(p->wfd, &a) == 0 && fstat(fd, &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void passthru_line_ended(struct passthru *p) { p->mid_line = false; }
bool passthru_closed(const struct passthru *p) { return p->rfd < 0; }
bool passthru_downstream_gone(const struct passthru *p) { return p->gone; }

int passthru_events(const struct passthru *p, struct pollfd *pfd)
{
    if (p->len > 0 && p->wfd_pipe) {
        pfd[0] = (struct pollfd){.fd = p->wfd, .events = POLLOUT};
        return 1;
    }
    if (p->rfd < 0)
        return 0;
    int n = 0;
    if (p->len == 0)
        pfd[n++] = (struct pollfd){.fd = p->rfd, .events = POLLIN};
    /* A pipe whose reader is gone reports POLLERR even when we ask for nothing. */
    if (p->wfd_pipe && !p->gone)
        pfd[n++] = (struct pollfd){.fd = p->wfd, .events = 0};
    return n;
}

bool passthru_handle(struct passthru *p, const struct pollfd *pfd, int n)
{
    bool readable = false;
    for (int i = 0; i < n; i++) {
        if (!pfd[i].revents)
            continue;
        if (pfd[i].fd == p->wfd) {
            if (pfd[i].revents & POLLERR) {
                downstream_gone(p);
                return false;
            }
            if (pfd[i].revents & POLLOUT)
                passthru_flush(p);
        } else if (pfd[i].fd == p->rfd)
            readable = true;
    }
    return readable && p->rfd >= 0 && p->len == 0;
}
