/* hangcheck PID SECONDS: bound an integration test. Started by tests/lib.sh for the test's shell.
 *
 * It detaches at once (the shell's `wait` must not wait for it) and watches PID through a pidfd:
 * when the shell ends, so does hangcheck, at that moment. If the shell is still running after
 * SECONDS, the test hangs: hangcheck prints the shell's process tree to stderr (the test's log)
 * with each process's state, wait channel and, where readable, kernel stack, so that the hang can
 * be diagnosed from a CI log; then it kills the tree, deepest first, and the test fails (the shell
 * dies of SIGKILL) instead of holding the whole run until CI's own limit. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_TREE 4096

static pid_t tree[MAX_TREE];
static int depth[MAX_TREE];
static int ntree;

/* read_small PATH BUF N: the file's first N-1 bytes, NUL-terminated; "" if unreadable. */
static void read_small(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t got = 0;
    if (f) {
        got = fread(buf, 1, n - 1, f);
        fclose(f);
    }
    buf[got] = '\0';
}

/* The children of PID, from every thread's children list (a child belongs to the thread that
 * forked it). */
static void add_children(pid_t pid, int d)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (!dir)
        return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        char cpath[320], list[8192];
        snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", (int)pid, e->d_name);
        read_small(cpath, list, sizeof list);
        for (char *s = list, *end; *s; s = end) {
            long c = strtol(s, &end, 10);
            if (end == s)
                break;
            if (ntree < MAX_TREE) {
                tree[ntree] = (pid_t)c;
                depth[ntree++] = d;
                add_children((pid_t)c, d + 1);
            }
        }
    }
    closedir(dir);
}

static void describe(pid_t pid, int d)
{
    char path[64], stat[512], args[512], wchan[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    read_small(path, stat, sizeof stat);
    const char *rp = strrchr(stat, ')');
    char state = rp && rp[1] == ' ' ? rp[2] : '?';
    snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
    read_small(path, wchan, sizeof wchan);
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(args, 1, sizeof args - 1, f) : 0;
    if (f)
        fclose(f);
    for (size_t i = 0; i + 1 < n; i++)
        if (args[i] == '\0')
            args[i] = ' ';
    args[n] = '\0';
    fprintf(stderr, "hangcheck: %*s%d %c %s  %s\n", 2 * d, "", (int)pid, state, wchan[0] ? wchan : "-", args);
    char stack[4096];
    snprintf(path, sizeof path, "/proc/%d/stack", (int)pid);
    read_small(path, stack, sizeof stack);
    for (char *line = strtok(stack, "\n"); line; line = strtok(NULL, "\n"))
        fprintf(stderr, "hangcheck: %*s    %s\n", 2 * d, "", line);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: hangcheck PID SECONDS\n");
        return 2;
    }
    pid_t pid = (pid_t)atoi(argv[1]);
    long secs = atol(argv[2]);
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) {
        fprintf(stderr, "hangcheck: pidfd_open %d: %s\n", (int)pid, strerror(errno));
        return 2;
    }
    switch (fork()) {
    case -1:
        perror("hangcheck: fork");
        return 2;
    case 0:
        break;
    default:
        return 0;
    }
    setsid(); /* out of the test's process group: a test signalling its group does not reach us */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left_ms = secs * 1000 - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (left_ms <= 0)
            break;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, left_ms > 1000000 ? 1000000 : (int)left_ms);
        if (r > 0)
            return 0; /* the test ended */
        if (r < 0 && errno != EINTR)
            return 2;
    }
    fprintf(stderr, "hangcheck: the test ran over its %ld s; its processes (pid state wchan args, kernel stack):\n", secs);
    tree[0] = pid;
    depth[0] = 0;
    ntree = 1;
    add_children(pid, 1);
    for (int i = 0; i < ntree; i++)
        describe(tree[i], depth[i]);
    fflush(stderr);
    for (int i = ntree - 1; i >= 1; i--)
        kill(tree[i], SIGKILL);
    syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
    return 0;
}
