/* watchdog.c — see watchdog.h. */
#include "run/watchdog.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "base/clone3.h"
#include "base/util.h"

struct watch_args;

struct watchdog {
    pid_t pid;
    int fd; /* our end of the socket pair; its end is resmon-run's end */
    struct watch_args *args; /* when it shares our memory */
    char id[64];
};

enum { MSG_GROUP = 'g', MSG_CLEAR = 'x', MSG_CLOSE = 'c' };

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

/* sig to every process carrying the mark; returns how many were found. The directory is listed
 * with getdents64, not a DIR: resmon-run may have died inside malloc (watchdog.h). */
static int signal_marked(const char *mark, int sig)
{
    int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (procfd < 0)
        return 0;
    int found = 0;
    size_t mark_len = strlen(mark);
    pid_t self = getpid();
    static char ents[1 << 16] __attribute__((aligned(8)));
    long n;
    while ((n = syscall(SYS_getdents64, procfd, ents, sizeof ents)) > 0) {
        for (long off = 0; off < n;) {
            const struct dirent64 *e = (const struct dirent64 *)(void *)(ents + off);
            off += e->d_reclen;
            if (e->d_name[0] < '1' || e->d_name[0] > '9')
                continue;
            pid_t pid = (pid_t)atoi(e->d_name);
            if (pid == self || !marked(procfd, e->d_name, mark, mark_len))
                continue;
            /* A pidfd, so that a pid reused since the scan is not hit. */
            int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
            if (pfd < 0)
                continue;
            if (marked(procfd, e->d_name, mark, mark_len) && syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) == 0)
                found++;
            close(pfd);
        }
    }
    close(procfd);
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

/* ---- the watchdog's side --------------------------------------------------------------------
 *
 * Until resmon-run dies the watchdog may share its memory (watchdog.h): it then makes its system
 * calls without the C library's wrappers, which would set errno (resmon-run's, in memory and
 * thread pointer they share) when a call fails, and allocates nothing. After resmon-run's death,
 * the library is safe but for malloc (resmon-run may have died holding its lock). */

/* What the watchdog needs, in memory resmon-run never writes: beside its stack. */
struct watch_args {
    int fd; /* its end of the socket pair */
    int cg_dirfd, cg_parentfd;
    int sig;
    bool shared;
    struct sock_fprog filter; /* its seccomp program (sandbox.h); none when .len is 0 */
    int sandboxed;            /* 0 until it is done with the filter: 1 (or no filter), or -errno */
    char leaf[256];
    char mark[96];
};

#if HAVE_CLONE3_CALL /* x86-64 */
static long raw_syscall(long nr, long a, long b, long c, long d)
{
    /* the fifth and sixth arguments zero: prctl checks that those it does not use are */
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = 0;
    register long r9 __asm__("r9") = 0;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#else
/* Elsewhere the watchdog is forked: the wrappers are its own. */
static long raw_syscall(long nr, long a, long b, long c, long d)
{
    long r = syscall(nr, a, b, c, d);
    return r < 0 ? -errno : r;
}
#endif

/* Close every descriptor from 3 up but keep[0..n) (-1 entries ignored): with close_range (Linux
 * 5.9) between the kept ones, else (a forked watchdog only: it lists a directory) one by one as
 * /proc/self/fd lists them. */
static void close_all_but(int *keep, size_t n, bool may_allocate)
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
            ok = raw_syscall(SYS_close_range, lo, i < n ? hi - 1 : hi, 0, 0) == 0;
#else
        ok = false;
#endif
        if (i < n)
            lo = hi + 1;
    }
    if (ok || !may_allocate)
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

static int watch(void *arg)
{
    struct watch_args *a = arg;
    /* A session of its own: a KILL to resmon-run's group must not take it along. Nothing of
     * resmon-run's signal handling applies here (its blocked signals: unblocked), and it holds
     * none of its descriptors (a pipe's write end held here would keep a reader from its end of
     * file). */
    raw_syscall(SYS_setsid, 0, 0, 0, 0);
    sigset_t none;
    sigemptyset(&none);
    raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, _NSIG / 8);
    long null = raw_syscall(SYS_openat, AT_FDCWD, (long)"/dev/null", O_RDWR | O_CLOEXEC, 0);
    for (long i = 0; i < 3 && null >= 0; i++)
        if (null != i)
            raw_syscall(SYS_dup3, null, i, 0, 0);
    int keep[] = {a->fd, a->cg_dirfd, a->cg_parentfd};
    close_all_but(keep, ARRAY_SIZE(keep), !a->shared);
    raw_syscall(SYS_prctl, PR_SET_NAME, (long)"resmon-watchdog", 0, 0);
    /* Its own filter, before the command exists (sandbox.h); then resmon-run may lock down. */
    long sr = 0;
    if (a->filter.len) {
        sr = raw_syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0);
        if (sr == 0)
            sr = raw_syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&a->filter, 0);
        if (sr == -ENOSYS)
            sr = raw_syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (long)&a->filter, 0);
    }
    __atomic_store_n(&a->sandboxed, sr == 0 ? 1 : (int)sr, __ATOMIC_RELEASE);
    if (a->shared)
        raw_syscall(SYS_futex, (long)&a->sandboxed, FUTEX_WAKE_PRIVATE, 1, 0);
    pid_t pgid = 0;
    for (;;) {
        unsigned char msg[1 + sizeof(pid_t)];
        /* room for the one descriptor a message may carry (watchdog_close) */
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int))];
        } ctl;
        struct iovec iov = {msg, 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
        long n = raw_syscall(SYS_recvmsg, a->fd, (long)&mh, 0, 0);
        if (n == -EINTR)
            continue;
        /* a descriptor sent to be closed (watchdog_close): at once */
        struct cmsghdr *c = n == 1 && msg[0] == MSG_CLOSE ? CMSG_FIRSTHDR(&mh) : NULL;
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))) {
            int fd;
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
            raw_syscall(SYS_close, fd, 0, 0, 0);
            continue;
        }
        if (n == 1 && msg[0] == MSG_CLEAR)
            break;
        if (n == 1 && msg[0] == MSG_GROUP) {
            if (raw_syscall(SYS_read, a->fd, (long)(msg + 1), sizeof(pid_t), 0) == (long)sizeof(pid_t))
                memcpy(&pgid, msg + 1, sizeof pgid);
            continue;
        }
        if (n == 1)
            continue; /* not a message of ours */
        /* EOF (or an error): resmon-run died without the all-clear. */
        take_down(a->cg_dirfd, a->cg_parentfd, a->leaf[0] ? a->leaf : NULL, pgid, a->mark, a->sig);
        break;
    }
    raw_syscall(SYS_exit_group, 0, 0, 0, 0);
    return 0;
}

/* ---- resmon-run's side --------------------------------------------------------------------- */

/* The watchdog's stack, and its arguments above it. */
#define WATCH_STACK ((size_t)256 << 10)

int watchdog_new(struct contain *c, int sig, const struct sock_fprog *filter, struct watchdog **ret)
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

    /* Mapped once and never unmapped: a watchdog that shares our memory runs on it until it
     * exits, which may be after we did. */
    char *map = mmap(NULL, WATCH_STACK + sizeof(struct watch_args), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (map == MAP_FAILED) {
        free(w);
        return -errno;
    }
    struct watch_args *a = (struct watch_args *)(void *)(map + WATCH_STACK);
    *a = (struct watch_args){.cg_dirfd = -1, .cg_parentfd = -1, .sig = sig};
    if (filter)
        a->filter = *filter;
    snprintf(a->mark, sizeof a->mark, "%s=%s", WATCHDOG_ENV, w->id);
    const char *path = contain_cgroup_path(c);
    if (path) {
        a->cg_dirfd = contain_cgroup_fd(c);
        const char *slash = strrchr(path, '/');
        if (slash && strlen(slash + 1) < sizeof a->leaf) {
            snprintf(a->leaf, sizeof a->leaf, "%s", slash + 1);
            char *parent = strndup(path, (size_t)(slash - path));
            if (parent) {
                a->cg_parentfd = open(*parent ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                free(parent);
            }
        }
    }
    int p[2];
    /* A socket pair, not a pipe: a message can carry a descriptor (watchdog_close). */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0) {
        int r = -errno;
        closep(&a->cg_parentfd);
        munmap(map, WATCH_STACK + sizeof *a);
        free(w);
        return r;
    }
    a->fd = p[0];
    /* Sharing our memory, it costs no copy of our page tables and no copy-on-write fault in the
     * rest of the run (2 ms of a 15 ms run of `true`): where clone3 can start it on its own stack
     * (x86-64), and it can close its descriptors without listing them (close_range). Forked
     * otherwise, and where clone3 is refused (valgrind, kernels before 5.3). */
    long pid = -ENOSYS;
#if HAVE_CLONE3_CALL && defined(SYS_close_range)
    if (syscall(SYS_close_range, ~0u, ~0u, 0) == 0) {
        a->shared = true;
        struct clone_args ca = {
            .flags = CLONE_VM,
            .exit_signal = SIGCHLD,
            .stack = (uint64_t)(uintptr_t)map,
            .stack_size = WATCH_STACK,
        };
        pid = clone3_call(&ca, watch, a);
    }
#endif
    if (pid < 0) {
        a->shared = false;
        pid = fork();
        if (pid == 0)
            watch(a);
    }
    if (pid < 0) {
        int r = -errno;
        close(p[0]);
        close(p[1]);
        closep(&a->cg_parentfd);
        munmap(map, WATCH_STACK + sizeof *a);
        free(w);
        return r;
    }
    close(p[0]);
    closep(&a->cg_parentfd);
    w->pid = pid;
    w->fd = p[1];
    w->args = a->shared ? a : NULL;
    contain_add_foreign(c, pid);
    *ret = w;
    return 0;
}

const char *watchdog_run_id(const struct watchdog *w) { return w->id; }

int watchdog_wait_sandboxed(struct watchdog *w)
{
    if (!w || !w->args)
        return 0;
    int *flag = &w->args->sandboxed;
    for (;;) {
        int v = __atomic_load_n(flag, __ATOMIC_ACQUIRE);
        if (v)
            return v < 0 ? v : 0;
        /* killed before it got there (it is our child: a zombie until the loop reaps it) */
        siginfo_t si = {0};
        if (waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == w->pid)
            return -ESRCH;
        struct timespec slice = {0, 1000000};
        syscall(SYS_futex, flag, FUTEX_WAIT_PRIVATE, 0, &slice, NULL, 0);
    }
}

void watchdog_set_group(struct watchdog *w, pid_t pgid)
{
    if (!w)
        return;
    unsigned char msg[1 + sizeof(pid_t)] = {MSG_GROUP};
    memcpy(msg + 1, &pgid, sizeof pgid);
    ssize_t n = write(w->fd, msg, sizeof msg);
    (void)n; /* a watchdog that died (someone killed it) cannot be helped */
}

void watchdog_close(struct watchdog *w, int fd)
{
    if (fd < 0)
        return;
    if (w) {
        unsigned char msg = MSG_CLOSE;
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int))];
        } ctl;
        memset(&ctl, 0, sizeof ctl);
        struct iovec iov = {&msg, 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
        (void)sendmsg(w->fd, &mh, MSG_NOSIGNAL); /* if it cannot go, the close below is the last */
    }
    close(fd);
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
