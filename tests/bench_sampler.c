/* Benchmark driver for the sampler: a contained tree of N idle processes, S samples taken back to
 * back, CPU time of resmon-run's side per sample (getrusage RUSAGE_SELF) and peak RSS.
 * Usage: bench_sampler N SAMPLES [subreaper|cgroup|auto]. Prints one line of key=value, with the
 * price of one read of the pressure files (pressure.h; the sampler reads them once a second). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "observe/pressure.h"
#include "observe/sampler.h"
#include "observe/contain.h"

static void sink_marker(void *ctx, const char *name, uint64_t start, uint64_t end, int cat,
                        const char *data, size_t len)
{
    (*(uint64_t *)ctx)++;
}

static uint64_t self_cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_utime.tv_sec * NSEC_PER_SEC + (uint64_t)ru.ru_utime.tv_usec * 1000 +
           (uint64_t)ru.ru_stime.tv_sec * NSEC_PER_SEC + (uint64_t)ru.ru_stime.tv_usec * 1000;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s N SAMPLES [subreaper|cgroup|auto]\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]), samples = atol(argv[2]);
    enum contain_mode mode = CONTAIN_AUTO;
    if (argc > 3 && strcmp(argv[3], "subreaper") == 0)
        mode = CONTAIN_MODE_SUBREAPER;
    else if (argc > 3 && strcmp(argv[3], "cgroup") == 0)
        mode = CONTAIN_MODE_CGROUP;
    struct contain *c;
    const char *why;
    int r = contain_new(mode, &c, &why);
    if (r < 0) {
        fprintf(stderr, "containment: %s\n", strerror(-r));
        return 77;
    }
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        return 1;
    pid_t root = fork();
    if (root == 0) {
        if (contain_child_join(c, false) < 0)
            _exit(99);
        for (long i = 1; i < n; i++)
            if (fork() == 0) {
                close(ready[1]);
                for (;;)
                    pause();
            }
        close(ready[1]); /* EOF for the parent once every idle child closed its copy too */
        for (;;)
            pause();
    }
    close(ready[1]);
    contain_set_root(c, root);
    char b;
    while (read(ready[0], &b, 1) > 0) /* all N processes exist once the pipe reports EOF */
        ;
    uint64_t count = 0;
    struct marker_sink sink = {.marker = sink_marker, .ctx = &count};
    struct sampler_config cfg;
    sampler_config_init(&cfg);
    cfg.interval_ns = 100 * NSEC_PER_MSEC;
    struct sampler *s;
    uint64_t t = now_ns();
    if (sampler_new(&cfg, c, &sink, t, &s) < 0)
        return 1;
    sampler_sample(s, t + 1, 1, false); /* warm-up: opens the kept files */
    uint64_t cpu0 = self_cpu_ns(), wall0 = now_ns();
    for (long i = 0; i < samples; i++)
        sampler_sample(s, now_ns(), 1, false);
    uint64_t cpu = self_cpu_ns() - cpu0, wall = now_ns() - wall0;
    struct sampler_totals tot;
    sampler_get_totals(s, &tot);
    /* One read of every pressure file, forced, as the sampler does at most once a second. */
    unsigned psi_files = 0;
    double psi_us = 0;
    struct pressure *psi = NULL;
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (pressure_new(proc, contain_cgroup_fd(c), &sink, &psi) == 0 && psi) {
        psi_files = pressure_files(psi);
        uint64_t c0 = self_cpu_ns();
        for (int i = 1; i <= 2000; i++)
            pressure_sample(psi, t + (uint64_t)i * NSEC_PER_SEC, true);
        psi_us = (double)(self_cpu_ns() - c0) / 1e3 / 2000;
    }
    pressure_free(psi);
    close(proc);
    for (int pass = 0; pass < 1000 && !contain_empty(c); pass++) {
        contain_kill_pass(c);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    int st;
    struct rusage ru;
    pid_t p;
    while ((p = wait4(-1, &st, 0, &ru)) > 0 || (p < 0 && errno == EINTR))
        if (p > 0)
            sampler_reaped(s, p, st, &ru, now_ns());
    sampler_free(s);
    getrusage(RUSAGE_SELF, &ru);
    printf("tier=%s processes=%ld samples=%ld cpu_us_per_sample=%.1f wall_us_per_sample=%.1f "
           "markers=%llu peak_rss_kib=%ld proc_events=%d pressure_files=%u pressure_us_per_read=%.1f\n",
           contain_tier_name(contain_tier(c)), n, samples, (double)cpu / 1e3 / (double)samples,
           (double)wall / 1e3 / (double)samples, (unsigned long long)count, ru.ru_maxrss,
           tot.proc_events, psi_files, psi_us);
    contain_free(c);
    return 0;
}
