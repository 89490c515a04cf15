/* watchdog.c — see watchdog.h. */
#include "run/watchdog.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "base/util.h"

struct watchdog {
    pid_t pid;
    int fd; /* write end of the pipe; its end is resmon-run's end */
    char id[64];
};

enum { MSG_GROUP = 'g', MSG_CLEAR = 'x' };

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Does /proc/<pid>/environ hold "KEY=id"? */
static bool marked(int procfd, const char *pid, const char *mark, size_t mark_len)
{
    char path[64];
    snprintf(path, sizeof path, "%s/environ", pid);
    int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    /* Environments are small; a mark past 1 MiB is not looked for. */
    static char buf[1 << 20];
    ssize_t n = read_retry(fd, buf, sizeof buf);
    close(fd);
    for (ssize_t i = 0; n > 0 && i + (ssize_t)mark_len <= n;) {
        const char *e = memchr(buf + i, '\0', (size_t)(n - i));
        size_t len = e ? (size_t)(e - (buf + i)) : (size_t)(n - i);
        if (len == mark_len && memcmp(buf + i, mark, mark_len) == 0)
            return true;
        i += (ssize_t)len + 1;
    }
    return false;
}

/* sig to every process carrying the mark; returns how many were found. */
static int signal_marked(const char *mark, int sig)
{
    int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (procfd < 0)
        return 0;
    DIR *d = fdopendir(procfd);
    if (!d) {
        close(procfd);
        return 0;
    }
    int found = 0;
    size_t mark_len = strlen(mark);
    struct dirent *e;
    pid_t self = getpid();
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid == self || !marked(dirfd(d), e->d_name, mark, mark_len))
            continue;
        /* A pidfd, so that a pid reused since the scan is not hit. */
        int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pfd < 0)
            continue;
        if (marked(dirfd(d), e->d_name, mark, mark_len) && syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) == 0)
            found++;
        close(pfd);
    }
    closedir(d);
    return found;
}

static bool cgroup_populated(int dirfd)
{
    char buf[256];
    ssize_t n = read_file_at(dirfd, "cgroup.events", buf, sizeof buf);
    const char *p = n > 0 ? strstr(buf, "populated ") : NULL;
    return !p || p[10] != '0';
}

/* sig to every process of the cgroup; returns how many. */
static int signal_cgroup(int dirfd, int sig)
{
    static char buf[1 << 20];
    ssize_t n = read_file_at(dirfd, "cgroup.procs", buf, sizeof buf);
    int found = 0;
    for (char *p = buf; n > 0 && *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 0 && kill((pid_t)pid, sig) == 0)
            found++;
        p = end;
        while (*p == '\n')
            p++;
    }
    return found;
}

/* resmon-run is gone: signal the tree, then kill it at once (watchdog.h). */
static void take_down(int cg_dirfd, int cg_parentfd, const char *leaf, pid_t pgid, const char *mark, int sig)
{
    if (sig) {
        if (cg_dirfd >= 0)
            signal_cgroup(cg_dirfd, sig);
        else {
            if (pgid > 0)
                kill(-pgid, sig);
            signal_marked(mark, sig);
        }
    }
    if (cg_dirfd >= 0) {
        int kfd = openat(cg_dirfd, "cgroup.kill", O_WRONLY | O_CLOEXEC);
        if (kfd >= 0) {
            ssize_t w = write(kfd, "1", 1);
            (void)w;
            close(kfd);
        }
        for (int i = 0; i < 500 && cgroup_populated(cg_dirfd); i++)
            pause_ms(10);
        if (cg_parentfd >= 0 && leaf)
            unlinkat(cg_parentfd, leaf, AT_REMOVEDIR);
        return;
    }
    /* Passes until none is left: a killed process cannot fork, so each pass takes a generation. */
    for (int pass = 0; pass < 100; pass++) {
        int hit = pgid > 0 && kill(-pgid, SIGKILL) == 0;
        hit += signal_marked(mark, SIGKILL);
        if (!hit)
            break;
        pause_ms(10);
    }
}

static _Noreturn void watch(int fd, int cg_dirfd, int cg_parentfd, const char *leaf, const char *mark, int sig)
{
    prctl(PR_SET_NAME, "resmon-watchdog", 0, 0, 0);
    pid_t pgid = 0;
    for (;;) {
        unsigned char msg[1 + sizeof(pid_t)];
        ssize_t n = read_retry(fd, msg, 1);
        if (n == 1 && msg[0] == MSG_CLEAR)
            _exit(0);
        if (n == 1 && msg[0] == MSG_GROUP && read_retry(fd, msg + 1, sizeof(pid_t)) == (ssize_t)sizeof(pid_t)) {
            memcpy(&pgid, msg + 1, sizeof pgid);
            continue;
        }
        if (n == 1)
            continue; /* not a message of ours */
        /* EOF (or an error): resmon-run died without the all-clear. */
        take_down(cg_dirfd, cg_parentfd, leaf, pgid, mark, sig);
        _exit(0);
    }
}

/* Close every descriptor from 3 up but keep[0..n) (-1 entries ignored): with close_range (Linux
 * 5.9) between the kept ones, else one by one as /proc/self/fd lists them. */
static void close_all_but(int *keep, size_t n)
{
    /* ascending, so the gaps between them are the ranges to close */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && keep[j] < keep[j - 1]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    unsigned lo = 3;
    bool ok = true;
    for (size_t i = 0; i <= n && ok; i++) {
        unsigned hi = i < n ? (unsigned)keep[i] : ~0u;
        if (i < n && keep[i] < (int)lo)
            continue;
#ifdef SYS_close_range
        if (hi > lo)
            ok = syscall(SYS_close_range, lo, i < n ? hi - 1 : hi, 0) == 0;
#else
        ok = false;
#endif
        if (i < n)
            lo = hi + 1;
    }
    if (ok)
        return;
    DIR *fds = opendir("/proc/self/fd");
    struct dirent *e;
    while (fds && (e = readdir(fds))) {
        int fd = atoi(e->d_name);
        bool kept = fd < 3 || fd == dirfd(fds);
        for (size_t i = 0; i < n; i++)
            kept |= fd == keep[i];
        if (!kept && e->d_name[0] >= '0' && e->d_name[0] <= '9')
            close(fd);
    }
    if (fds)
        closedir(fds);
}

int watchdog_new(struct contain *c, int sig, struct watchdog **ret)
{
    struct watchdog *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    /* The mark: resmon-run's pid and its start time, unique for the machine's uptime. */
    char stat[1024];
    unsigned long long start = 0;
    ssize_t sn = read_file_at(AT_FDCWD, "/proc/self/stat", stat, sizeof stat);
    const char *rp = sn > 0 ? strrchr(stat, ')') : NULL;
    if (rp) {
        /* proc(5) field 22 (starttime) is the 20th after the ')' */
        const char *p = rp + 2;
        for (int f = 3; f < 22 && p; f++) {
            p = strchr(p, ' ');
            if (p)
                p++;
        }
        if (p)
            start = strtoull(p, NULL, 10);
    }
    snprintf(w->id, sizeof w->id, "%d.%llu", (int)getpid(), start);
    char mark[96];
    snprintf(mark, sizeof mark, "%s=%s", WATCHDOG_ENV, w->id);

    int cg_dirfd = -1, cg_parentfd = -1;
    const char *leaf = NULL;
    const char *path = contain_cgroup_path(c);
    if (path) {
        cg_dirfd = contain_cgroup_fd(c);
        const char *slash = strrchr(path, '/');
        leaf = slash ? slash + 1 : NULL;
        char *parent = slash ? strndup(path, (size_t)(slash - path)) : NULL;
        if (parent) {
            cg_parentfd = open(*parent ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            free(parent);
        }
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        int r = -errno;
        closep(&cg_parentfd);
        free(w);
        return r;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int r = -errno;
        close(p[0]);
        close(p[1]);
        closep(&cg_parentfd);
        free(w);
        return r;
    }
    if (pid == 0) {
        /* A session of its own: a KILL to resmon-run's group must not take it along. Nothing of
         * resmon-run's signal handling applies here, and it holds none of its descriptors (a
         * pipe's write end held here would keep a reader from its end of file). */
        setsid();
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_UNBLOCK, &all, NULL);
        signal(SIGPIPE, SIG_DFL);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int i = 0; i < 3 && null >= 0; i++)
            dup2(null, i);
        free(w); /* resmon-run's: only its copy here */
        int keep[] = {p[0], cg_dirfd, cg_parentfd};
        close_all_but(keep, ARRAY_SIZE(keep));
        watch(p[0], cg_dirfd, cg_parentfd, leaf, mark, sig);
    }
    close(p[0]);
    closep(&cg_parentfd);
    w->pid = pid;
    w->fd = p[1];
    contain_add_foreign(c, pid);
    *ret = w;
    return 0;
}

const char *watchdog_run_id(const struct watchdog *w) { return w->id; }

void watchdog_set_group(struct watchdog *w, pid_t pgid)
{
    if (!w)
        return;
    unsigned char msg[1 + sizeof(pid_t)] = {MSG_GROUP};
    memcpy(msg + 1, &pgid, sizeof pgid);
    ssize_t n = write(w->fd, msg, sizeof msg);
    (void)n; /* a watchdog that died (someone killed it) cannot be helped */
}

void watchdog_release(struct watchdog *w)
{
    if (!w)
        return;
    unsigned char msg = MSG_CLEAR;
    ssize_t n = write(w->fd, &msg, 1);
    (void)n;
    close(w->fd);
    free(w);
}
