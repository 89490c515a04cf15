/* The floor of a sampling supervisor, for scripts/bench-cost: the unavoidable work of one sample
 * of the machine and a one-process tree, and nothing else. It starts COMMAND, wakes every
 * INTERVAL on an absolute timer, and reads the seven /proc files a sample of that tree needs
 * (the machine's stat, meminfo, diskstats and net/dev; the process's stat, io and status) with
 * one pread each on descriptors kept open, until COMMAND exits. No parsing, no output.
 * Usage: floor INTERVAL_MS COMMAND [ARG]... */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s INTERVAL_MS COMMAND [ARG]...\n", argv[0]);
        return 2;
    }
    long ms = atol(argv[1]);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    pid_t pid = fork();
    if (pid == 0) {
        sigprocmask(SIG_UNBLOCK, &mask, NULL);
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    char path[64];
    const char *machine[] = {"/proc/stat", "/proc/meminfo", "/proc/diskstats", "/proc/net/dev"};
    int fds[7];
    for (int i = 0; i < 4; i++)
        fds[i] = open(machine[i], O_RDONLY | O_CLOEXEC);
    const char *own[] = {"stat", "io", "status"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, own[i]);
        fds[4 + i] = open(path, O_RDONLY | O_CLOEXEC);
    }
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    struct itimerspec its = {.it_interval = {ms / 1000, (ms % 1000) * 1000000}};
    its.it_value = now;
    its.it_value.tv_nsec += (ms % 1000) * 1000000;
    its.it_value.tv_sec += ms / 1000 + its.it_value.tv_nsec / 1000000000;
    its.it_value.tv_nsec %= 1000000000;
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    static char buf[65536];
    for (;;) {
        struct pollfd p[2] = {{.fd = tfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0)
            continue;
        if (p[1].revents) {
            int st;
            if (waitpid(pid, &st, WNOHANG) == pid)
                return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) < 0)
                return 1;
        }
        if (p[0].revents) {
            uint64_t ticks;
            if (read(tfd, &ticks, sizeof ticks) < 0)
                return 1;
            for (int i = 0; i < 7; i++)
                if (fds[i] >= 0 && pread(fds[i], buf, sizeof buf, 0) < 0)
                    return 1;
        }
    }
}
