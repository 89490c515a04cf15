/* cpuburn — a workload for the sampled stacks (tests/cpu-profile.sh): three tests in GoogleTest's
 * output, each burning CPU in a function of its own, the second in a forked child. Each burns a
 * given amount of its own CPU time (not of the clock: on a busy machine a test still gets its
 * samples), reading the clock only every few million steps, so that nearly every sample is taken
 * in the loop itself.
 *
 *   cpuburn [MS [pause]]    MS: CPU milliseconds per test (default 300); pause: then wait for a
 *                           signal (a run to be killed once its samples are in)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* each with a constant of its own, so that no compiler folds the three into one */
#define BURN(name, k)                                                                              \
    __attribute__((noinline)) static void name(double ms)                                          \
    {                                                                                              \
        double until = cpu_ms() + ms;                                                              \
        unsigned long x = 1;                                                                       \
        do {                                                                                       \
            for (int i = 0; i < 2000000; i++)                                                      \
                x = x * 6364136223846793005ul + (k);                                               \
            sink = x;                                                                              \
        } while (cpu_ms() < until);                                                                \
    }
BURN(burn_alpha, 1442695040888963407ul)
BURN(burn_beta, 1442695040888963409ul)
BURN(burn_gamma, 1442695040888963411ul)

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 300;
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("[==========] Running 3 tests from 1 test suite.\n");
    printf("[ RUN      ] cpu.alpha\n");
    burn_alpha(ms);
    printf("[       OK ] cpu.alpha (0 ms)\n");
    printf("[ RUN      ] cpu.beta\n");
    pid_t pid = fork();
    if (pid == 0) {
        burn_beta(ms);
        _exit(0);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || st != 0)
        return 1;
    printf("[       OK ] cpu.beta (0 ms)\n");
    printf("[ RUN      ] cpu.gamma\n");
    burn_gamma(ms);
    printf("[       OK ] cpu.gamma (0 ms)\n");
    printf("[==========] 3 tests from 1 test suite ran.\n[  PASSED  ] 3 tests.\n");
    if (argc > 2 && !strcmp(argv[2], "pause"))
        pause();
    return 0;
}
