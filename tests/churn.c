/* Background load for scripts/bench-cost: what other jobs on a CI worker do to a supervisor that
 * listens to the machine's process events. For SECS seconds it starts short processes (fork, exec
 * of /bin/true, wait) at PROCS per second and creates and joins threads at THREADS per second.
 * Usage: churn SECS PROCS THREADS. Prints "procs=N threads=N" (what it managed) at the end. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *nothing(void *arg) { return arg; }

static uint64_t end_ns;

/* One paced loop: a thread that creates threads, or the main thread that forks. */
static void *threads_loop(void *arg)
{
    double rate = *(double *)arg;
    uint64_t n = 0, t0 = now_ns();
    while (rate > 0 && now_ns() < end_ns) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) == 0) {
            pthread_join(t, NULL);
            n++;
        }
        uint64_t due = t0 + (uint64_t)((double)n / rate * 1e9), now = now_ns();
        if (due > now) {
            struct timespec ts = {(time_t)((due - now) / 1000000000u), (long)((due - now) % 1000000000u)};
            nanosleep(&ts, NULL);
        }
    }
    *(double *)arg = (double)n;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s SECS PROCS THREADS\n", argv[0]);
        return 2;
    }
    double secs = atof(argv[1]), procs = atof(argv[2]), threads = atof(argv[3]);
    end_ns = now_ns() + (uint64_t)(secs * 1e9);
    pthread_t tl;
    pthread_create(&tl, NULL, threads_loop, &threads);
    uint64_t n = 0, t0 = now_ns();
    while (procs > 0 && now_ns() < end_ns) {
        pid_t p = fork();
        if (p == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        if (p > 0) {
            waitpid(p, NULL, 0);
            n++;
        }
        uint64_t due = t0 + (uint64_t)((double)n / procs * 1e9), now = now_ns();
        if (due > now) {
            struct timespec ts = {(time_t)((due - now) / 1000000000u), (long)((due - now) % 1000000000u)};
            nanosleep(&ts, NULL);
        }
    }
    if (procs <= 0)
        while (now_ns() < end_ns)
            sleep(1);
    pthread_join(tl, NULL);
    printf("procs=%llu threads=%.0f\n", (unsigned long long)n, threads);
    return 0;
}
