/* For scripts/bench-cost and bench-cpuprof: run COMMAND and print the CPU time it and everything
 * it waited for used, then its wall time from fork to reap, in microseconds (user + system, from
 * wait4's rusage: finer than GNU time's 10 ms). Usage: cputime COMMAND [ARG]... */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s COMMAND [ARG]...\n", argv[0]);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) != pid)
        return 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long us = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
                   ru.ru_stime.tv_usec;
    long long wall = (long long)(t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
    fprintf(stderr, "%lld %lld\n", us, wall);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
