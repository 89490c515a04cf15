/* Unit tests of the command line's pure parsers: the duration grammar, signal names, options. */
#include "cli.h"
#include "base/parse.h"
#include "observe/cpuprof.h"
#include "observe/forensics.h"
#include "profile/profile.h"

#include <check.h>
#include <errno.h>
#include "check_run.h"
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t dur(const char *s)
{
    uint64_t ns = 12345;
    ck_assert_msg(parse_duration(s, &ns) == 0, "'%s' rejected", s);
    return ns;
}

static void bad(const char *s)
{
    uint64_t ns = 777;
    ck_assert_msg(parse_duration(s, &ns) < 0, "'%s' accepted", s);
    ck_assert_uint_eq(ns, 777);
}

START_TEST(test_duration_units)
{
    ck_assert_uint_eq(dur("1"), 1000000000ULL);
    ck_assert_uint_eq(dur("1s"), 1000000000ULL);
    ck_assert_uint_eq(dur("1.5m"), 90000000000ULL);
    ck_assert_uint_eq(dur("2h"), 7200000000000ULL);
    ck_assert_uint_eq(dur("1d"), 86400000000000ULL);
    ck_assert_uint_eq(dur("0"), 0);
    ck_assert_uint_eq(dur("0s"), 0);
    ck_assert_uint_eq(dur("0x10"), 16000000000ULL);
    ck_assert_uint_eq(dur(" 3"), 3000000000ULL);
}
END_TEST

START_TEST(test_duration_rounding)
{
    /* Round up to the nanosecond; any positive amount is at least 1 ns. */
    ck_assert_uint_eq(dur("1e-9"), 1);
    ck_assert_uint_eq(dur("1.5e-9"), 2);
    ck_assert_uint_eq(dur("1e-12"), 1);
    ck_assert_uint_eq(dur("1e-10000"), 1);
    ck_assert_uint_eq(dur("0.1"), 100000000ULL);
}
END_TEST

START_TEST(test_duration_huge)
{
    ck_assert_uint_eq(dur("1e400"), UINT64_MAX);
    ck_assert_uint_eq(dur("2.34e+5d"), UINT64_MAX);
    ck_assert_uint_eq(dur("1.18973149535723176502e+4932"), UINT64_MAX);
    ck_assert_uint_eq(dur("inf"), UINT64_MAX);
    ck_assert_uint_eq(dur("1e10000d"), UINT64_MAX);
}
END_TEST

START_TEST(test_duration_bad)
{
    bad("");
    bad("-0.1");
    bad("-1");
    bad("-1e-10000");
    bad("invalid");
    bad("42D");
    bad("1ss");
    bad("1 s");
    bad("s");
    bad("nan");
    bad(".");
    ck_assert_uint_eq(dur("-0"), 0);
}
END_TEST

START_TEST(test_signals)
{
    int s = -1;
    ck_assert_int_eq(parse_signal("TERM", &s), 0);
    ck_assert_int_eq(s, SIGTERM);
    ck_assert_int_eq(parse_signal("SIGKILL", &s), 0);
    ck_assert_int_eq(s, SIGKILL);
    ck_assert_int_eq(parse_signal("hup", &s), 0);
    ck_assert_int_eq(s, SIGHUP);
    ck_assert_int_eq(parse_signal("9", &s), 0);
    ck_assert_int_eq(s, 9);
    ck_assert_int_eq(parse_signal("0", &s), 0);
    ck_assert_int_eq(s, 0);
    ck_assert_int_eq(parse_signal("RTMIN+2", &s), 0);
    ck_assert_int_eq(s, SIGRTMIN + 2);
    ck_assert_int_eq(parse_signal("RTMAX", &s), 0);
    ck_assert_int_eq(s, SIGRTMAX);
    ck_assert_int_lt(parse_signal("NOPE", &s), 0);
    ck_assert_int_lt(parse_signal("", &s), 0);
    ck_assert_int_lt(parse_signal("-1", &s), 0);
    ck_assert_int_lt(parse_signal("999", &s), 0);
    ck_assert_int_lt(parse_signal("RTMIN+999", &s), 0);
    ck_assert_int_lt(parse_signal("9x", &s), 0);

    char buf[32];
    ck_assert_str_eq(signal_name(SIGTERM, buf, sizeof buf), "TERM");
    ck_assert_str_eq(signal_name(SIGKILL, buf, sizeof buf), "KILL");
    ck_assert_str_eq(signal_name(0, buf, sizeof buf), "0");
    ck_assert_str_eq(signal_name(SIGRTMIN + 1, buf, sizeof buf), "RTMIN+1");
    ck_assert_str_eq(signal_name(SIGRTMAX - 1, buf, sizeof buf), "RTMAX-1");
    /* Every name round-trips. */
    for (int i = 1; i <= SIGRTMAX; i++) {
        if (i > 31 && i < SIGRTMIN)
            continue;
        signal_name(i, buf, sizeof buf);
        ck_assert_int_eq(parse_signal(buf, &s), 0);
        ck_assert_int_eq(s, i);
    }
}
END_TEST

/* getopt wants writable strings. */
static char **mkargv(const char *const *src, int n)
{
    static char store[16][64];
    static char *argv[17];
    for (int i = 0; i < n; i++) {
        strcpy(store[i], src[i]);
        argv[i] = store[i];
    }
    argv[n] = NULL;
    return argv;
}

START_TEST(test_options_run_mode)
{
    const char *const src[] = {"resmon-run", "-t", "5", "-k1m", "--parse=tap,go", "--meta", "a=b=c", "ls", "-l"};
    char **argv = mkargv(src, 9);
    struct options o;
    ck_assert_int_eq(cli_parse(9, argv, &o), 0);
    ck_assert(!o.timeout_mode);
    ck_assert_uint_eq(o.timeout_ns, 5000000000ULL);
    ck_assert_uint_eq(o.kill_after_ns, 60000000000ULL);
    ck_assert_int_eq(o.argc, 2);
    ck_assert_str_eq(o.argv[0], "ls");
    ck_assert_str_eq(o.argv[1], "-l");
    ck_assert_str_eq(o.product, "ls");
    ck_assert_uint_eq(o.n_meta, 1);
    ck_assert_str_eq(o.meta[0].key, "a");
    ck_assert_str_eq(o.meta[0].value, "b=c");
    ck_assert(o.kill_leftovers);
    ck_assert(!o.no_profile);
    ck_assert_uint_eq(o.max_markers, PROFILE_MAX_MARKERS_DEFAULT);
    cli_release(&o);

    const char *const lim[] = {"resmon-run", "--max-markers=0", "--max-markers", "1099511627776", "true"};
    argv = mkargv(lim, 5);
    ck_assert_int_eq(cli_parse(5, argv, &o), 0);
    ck_assert_uint_eq(o.max_markers, PROFILE_MAX_MARKERS_MAX); /* the last one given, at the maximum */
    cli_release(&o);
    const char *const over[] = {"resmon-run", "--max-markers=1099511627777", "true"};
    argv = mkargv(over, 3);
    ck_assert_int_eq(cli_parse(3, argv, &o), EXIT_CANCELED);

    /* sampled stacks: off unless asked, the default rate without a value, the last option wins */
    const char *const none[] = {"resmon-run", "true"};
    argv = mkargv(none, 2);
    ck_assert_int_eq(cli_parse(2, argv, &o), 0);
    ck_assert_uint_eq(o.cpu_profile_hz, 0);
    cli_release(&o);
    const char *const dflt[] = {"resmon-run", "--cpu-profile", "true"};
    argv = mkargv(dflt, 3);
    ck_assert_int_eq(cli_parse(3, argv, &o), 0);
    ck_assert_uint_eq(o.cpu_profile_hz, CPUPROF_DEFAULT_HZ);
    cli_release(&o);
    const char *const rate[] = {"resmon-run", "--no-cpu-profile", "--cpu-profile=999", "true"};
    argv = mkargv(rate, 4);
    ck_assert_int_eq(cli_parse(4, argv, &o), 0);
    ck_assert_uint_eq(o.cpu_profile_hz, 999);
    cli_release(&o);
    const char *const off[] = {"resmon-run", "--cpu-profile=999", "--no-cpu-profile", "true"};
    argv = mkargv(off, 4);
    ck_assert_int_eq(cli_parse(4, argv, &o), 0);
    ck_assert_uint_eq(o.cpu_profile_hz, 0);
    cli_release(&o);
}
END_TEST

static uint64_t size_of(const char *s)
{
    uint64_t v = 0;
    ck_assert_msg(parse_size(s, &v) == 0, "'%s' rejected", s);
    return v;
}

START_TEST(test_sizes_and_limits)
{
    ck_assert_uint_eq(size_of("1024"), 1024);
    ck_assert_uint_eq(size_of("1K"), 1024);
    ck_assert_uint_eq(size_of("1k"), 1024);
    ck_assert_uint_eq(size_of("64M"), 64ULL << 20);
    ck_assert_uint_eq(size_of("64MiB"), 64ULL << 20);
    ck_assert_uint_eq(size_of("64MB"), 64ULL << 20);
    ck_assert_uint_eq(size_of("1.5G"), 3ULL << 29);
    ck_assert_uint_eq(size_of("2T"), 2ULL << 40);
    ck_assert_uint_eq(size_of("0.5K"), 512);
    ck_assert_uint_eq(size_of("100B"), 100);
    ck_assert_uint_eq(size_of(".5M"), 512ULL << 10);
    static const char *const bad[] = {"", "K", "-1", "0", "0K", "1X", "1KK", "1MiBB", "nan", "inf", "0x10", "1e3",
                                      "1.2.3", "+5", " 5", "5 ", "0.1"};
    uint64_t v;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(parse_size(bad[i], &v) == -EINVAL, "'%s' accepted", bad[i]);
    ck_assert_int_eq(parse_size("8E", &v), -EINVAL);
    ck_assert_int_eq(parse_size("9000000000T", &v), -ERANGE);

    const char *const src[] = {"resmon-run", "--memory-limit=256M", "--cpu-limit=1.5m", "--tasks-limit", "64", "true"};
    char **argv = mkargv(src, 6);
    struct options o;
    ck_assert_int_eq(cli_parse(6, argv, &o), 0);
    ck_assert_uint_eq(o.memory_limit, 256ULL << 20);
    ck_assert_uint_eq(o.cpu_limit_ns, 90000000000ULL);
    ck_assert_uint_eq(o.tasks_limit, 64);
    cli_release(&o);
    static const char *const wrong[][2] = {{"--memory-limit=lots", "true"}, {"--tasks-limit=0", "true"},
                                           {"--tasks-limit=-3", "true"}, {"--tasks-limit=5x", "true"},
                                           {"--cpu-limit=soon", "true"}};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        const char *const a[] = {"resmon-run", wrong[i][0], wrong[i][1]};
        argv = mkargv(a, 3);
        ck_assert_msg(cli_parse(3, argv, &o) == EXIT_CANCELED, "%s accepted", wrong[i][0]);
    }
}
END_TEST

START_TEST(test_options_timeout_mode)
{
    const char *const src[] = {"/usr/bin/resmon-timeout", "-s", "INT", "-p", "2.5", "sleep", "-x"};
    char **argv = mkargv(src, 7);
    struct options o;
    ck_assert_int_eq(cli_parse(7, argv, &o), 0);
    ck_assert(o.timeout_mode);
    ck_assert_int_eq(o.signal, SIGINT);
    ck_assert(o.preserve_status);
    ck_assert_uint_eq(o.timeout_ns, 2500000000ULL);
    ck_assert_str_eq(o.argv[0], "sleep");
    ck_assert_str_eq(o.argv[1], "-x");
    ck_assert(o.no_profile);
    ck_assert(!o.kill_leftovers);
    ck_assert(!o.dump); /* GNU timeout's timing: no dump unless asked */
    cli_release(&o);
}
END_TEST

/* A parse that stops inside a cluster of short options ("-Zp": Z is no option) leaves nothing for
 * the next parse in the same process: its "p" is not taken for an option of the next command line. */
START_TEST(test_parse_again)
{
    struct options o;
    /* strings of their own (not mkargv's, which the next call overwrites), alive after the call */
    char b0[] = "resmon-run", b1[] = "-Zp", b2[] = "true", *bad[] = {b0, b1, b2, NULL};
    ck_assert_int_eq(cli_parse(3, bad, &o), EXIT_CANCELED);
    char g0[] = "resmon-run", g1[] = "-q", g2[] = "true", *good[] = {g0, g1, g2, NULL};
    ck_assert_int_eq(cli_parse(3, good, &o), 0);
    ck_assert(o.quiet && !o.preserve_status);
    ck_assert_str_eq(o.argv[0], "true");
    cli_release(&o);
}
END_TEST

START_TEST(test_dump_options)
{
    struct options o;
    const char *const plain[] = {"resmon-run", "true"};
    ck_assert_int_eq(cli_parse(2, mkargv(plain, 2), &o), 0);
    ck_assert(o.dump && !o.dump_budget_set && !o.dump_file && !o.dump_runtimes);
    cli_release(&o);
    const char *const all[] = {"resmon-run", "--dump-budget=1.5", "--dump-file=x.txt", "--dump=python,go", "true"};
    ck_assert_int_eq(cli_parse(5, mkargv(all, 5), &o), 0);
    ck_assert(o.dump && o.dump_budget_set);
    ck_assert_uint_eq(o.dump_budget_ns, 1500000000ULL);
    ck_assert_str_eq(o.dump_file, "x.txt");
    ck_assert_uint_eq(o.dump_runtimes, FORENSICS_RT_PYTHON | FORENSICS_RT_GO);
    cli_release(&o);
    const char *const off[] = {"resmon-run", "--dump-budget=1", "--no-dump", "true"};
    ck_assert_int_eq(cli_parse(4, mkargv(off, 4), &o), 0);
    ck_assert(!o.dump); /* --no-dump wins */
    cli_release(&o);
    /* as resmon-timeout: asked for by any dump option */
    const char *const t1[] = {"resmon-timeout", "--dump-file=y", "1", "true"};
    ck_assert_int_eq(cli_parse(4, mkargv(t1, 4), &o), 0);
    ck_assert(o.dump);
    cli_release(&o);
    const char *const t2[] = {"resmon-timeout", "--dump=java", "1", "true"};
    ck_assert_int_eq(cli_parse(4, mkargv(t2, 4), &o), 0);
    ck_assert(o.dump && o.dump_runtimes == FORENSICS_RT_JAVA);
    cli_release(&o);
    const char *const bad[] = {"resmon-run", "--dump=ruby", "true"};
    ck_assert_int_eq(cli_parse(3, mkargv(bad, 3), &o), EXIT_CANCELED);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_duration_units);
    tcase_add_test(tc, test_sizes_and_limits);
    tcase_add_test(tc, test_duration_rounding);
    tcase_add_test(tc, test_duration_huge);
    tcase_add_test(tc, test_duration_bad);
    tcase_add_test(tc, test_signals);
    tcase_add_test(tc, test_options_run_mode);
    tcase_add_test(tc, test_options_timeout_mode);
    tcase_add_test(tc, test_dump_options);
    tcase_add_test(tc, test_parse_again);
    suite_add_tcase(s, tc);
    return check_run(s);
}
