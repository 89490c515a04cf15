/* Benchmark of the test-log format parsers: ns per line for output that is not test-log text
 * (every line the command prints goes through all of them), and for lines of their own format.
 * Prints numbers only; run by scripts/bench-testlog-formats. */
#include "testlog/formats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *plain[] = {
    "  CC       src/sampler.o",
    "src/main.c:12:5: warning: unused variable 'x' [-Wunused-variable]",
    "2024-05-01 10:00:00,123 INFO [worker-3] processed 1234 items in 0.52s",
    "Downloading https://example.com/packages/foo-1.2.3.tar.gz (12.3 MB)",
    "    at Object.<anonymous> (/home/user/project/node_modules/lib/index.js:10:15)",
    "",
    "Traceback (most recent call last):",
    "{\"level\":\"info\",\"msg\":\"listening\",\"port\":8080}",
    "[INFO] Building module core 1.0-SNAPSHOT",
    "ok, continuing with the next step",
};

static const char *own[] = {
    "ok 12 - parses a config file",
    "{\"Time\":\"2024-05-01T10:00:00.002Z\",\"Action\":\"run\",\"Package\":\"example.com/a\",\"Test\":\"TestAlpha\"}",
    "[       OK ] MathTest.Adds (0 ms)",
    "tests/test_a.py::test_pass PASSED                                        [ 11%]",
    "test_add (test_math.MathTest.test_add) ... ok",
    "test tests::adds ... ok",
    "check_money.c:17:P:Core:test_money_create:0: Passed",
};

static const struct tl_format *const formats[] = {
    &tl_format_tap,      &tl_format_go,      &tl_format_gtest, &tl_format_pytest,
    &tl_format_unittest, &tl_format_libtest, &tl_format_check,
};
#define NF (sizeof formats / sizeof formats[0])

static double run(const struct tl_format *f, const char *const *lines, size_t nl, size_t iters,
                  const char *big, size_t big_len)
{
    void *state = calloc(1, f->state_size);
    struct tl_event ev[TL_MAX_EVENTS];
    volatile int sink = 0;
    uint64_t t0 = mono_ns();
    for (size_t i = 0; i < iters; i++) {
        if (big)
            sink += f->parse(state, big, big_len, i, ev);
        else
            sink += f->parse(state, lines[i % nl], strlen(lines[i % nl]), i, ev);
    }
    uint64_t dt = mono_ns() - t0;
    free(state);
    (void)sink;
    return (double)dt / (double)iters;
}

int main(int argc, char **argv)
{
    size_t iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;
    size_t nplain = sizeof plain / sizeof plain[0];
    size_t big_len = 1 << 20;
    char *big = malloc(big_len);
    for (size_t i = 0; i < big_len; i++)
        big[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i % 64];
    double total = 0, total_big = 0;
    printf("%-10s %14s %14s %16s\n", "format", "plain ns/line", "own ns/line", "1MiB line ns");
    for (size_t f = 0; f < NF; f++) {
        double p = run(formats[f], plain, nplain, iters, NULL, 0);
        double o = run(formats[f], own + f, 1, iters / 4, NULL, 0);
        double b = run(formats[f], NULL, 0, 200, big, big_len);
        total += p;
        total_big += b;
        printf("%-10s %14.1f %14.1f %16.0f\n", formats[f]->name, p, o, b);
    }
    printf("all seven, plain text: %.1f ns/line; 1 MiB base64 line: %.0f ns (%.2f ns/byte)\n",
           total, total_big, total_big / (double)big_len);
    free(big);
    return 0;
}
