/* Unit tests of the end-of-run summary: exact text for known facts, the downsampling of series,
 * colour only when asked, the UTF-8 sparkline and its ASCII fallback, bounded lists. */
#include "report/summary.h"

#include <check.h>
#include "check_run.h"
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEC UINT64_C(1000000000)

static char *fmt(const struct summary_facts *f, bool colour, bool utf8)
{
    struct summary_style st = {.colour = colour, .utf8 = utf8};
    char *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(summary_format(f, &st, &text, &len), 0);
    ck_assert_uint_eq(len, strlen(text));
    return text;
}

static char *fmt_md(const struct summary_facts *f)
{
    char *md = NULL;
    size_t len = 0;
    ck_assert_int_eq(summary_format_markdown(f, &md, &len), 0);
    ck_assert_uint_eq(len, strlen(md));
    return md;
}

static void facts_timeout(struct summary_facts *f)
{
    memset(f, 0, sizeof *f);
    f->command = "tests/demo/demo-suite";
    f->end = RUN_TIMEOUT;
    f->signal = SIGTERM;
    f->limit_ns = 20 * SEC;
    f->exit_status = 124;
    f->wall_ns = 20 * SEC + 300000000;
    f->have_cpu = true;
    f->tree_cpu_ns = 4 * SEC + 210000000;
    f->peak_rss = 212 * 1048576 + 419430; /* 212.4 MiB */
    summary_add_test(f, "demo/cpu", 8, "PASS", false, 1050 * 1000000ULL);
    summary_add_test(f, "demo/memory", 11, "PASS", false, 620 * 1000000ULL);
    summary_add_test(f, "demo/files", 10, "PASS", false, 310 * 1000000ULL);
    summary_add_test(f, "demo/fails", 10, "FAIL", true, 8 * 1000000ULL);
    summary_add_test(f, "demo/crashes", 12, "CRASH", true, 40 * 1000000ULL);
    summary_add_open(f, "demo/hangs", 10);
    summary_add_alive(f, 1234, "demo-suite", 10);
    summary_add_alive(f, 1240, "sleep 1000", 10);
    summary_series_init(&f->cpu, SUMMARY_AGG_MEAN);
    summary_series_init(&f->mem, SUMMARY_AGG_MAX);
    double cpu[] = {0, 1, 1, 0.5, 0.25, 0, 0, 0};
    double mem[] = {1, 2, 8, 8, 4, 2, 2, 2};
    for (size_t i = 0; i < 8; i++) {
        summary_series_add(&f->cpu, cpu[i]);
        summary_series_add(&f->mem, mem[i] * ((double)f->peak_rss / 8)); /* the peak: 212.4 MiB */
    }
    f->profile_path = "demo-profile.json";
}

/* A harness's own count of its tests: shown where it says another number than the results
 * (a reporter naming only the failures: with the hint that makes it name them all), and in
 * place of "no test line recognised" when no test was named; not shown where it agrees. */
START_TEST(test_harness_totals)
{
    const char *js[] = {"npx", "jest", NULL};
    struct summary_facts f = {.end = RUN_EXIT, .exit_code = 1, .exit_status = 1, .wall_ns = SEC, .tests_parsed = true,
                              .argv = js};
    summary_add_test(&f, "a.test.js/adds", 14, "FAIL", true, 0);
    summary_add_totals(&f, "jest", "1 failed, 7 passed, 8 total", 8);
    char *text = fmt(&f, false, true);
    ck_assert_msg(strstr(text, "  tests        1: 1 FAIL (1 unexpected)\n"
                               "               jest's own count: 1 failed, 7 passed, 8 total\n"
                               "               (jest names the tests that pass only with --verbose)\n"),
                  "%s", text);
    free(text);
    char *md = fmt_md(&f);
    ck_assert_msg(strstr(md, "| jest's own count | 1 failed, 7 passed, 8 total |\n"), "%s", md);
    free(md);

    /* as many as the results: nothing more said */
    struct summary_facts g = {.end = RUN_EXIT, .wall_ns = SEC, .tests_parsed = true, .argv = js};
    summary_add_test(&g, "a.test.js/adds", 14, "PASS", false, 0);
    summary_add_totals(&g, "jest", "1 passed, 1 total", 1);
    text = fmt(&g, false, true);
    ck_assert_ptr_null(strstr(text, "own count"));
    free(text);

    /* five runs of a harness, each naming its one test: no more said (every count adds, also
     * those the summary no longer keeps) */
    struct summary_facts k = {.end = RUN_EXIT, .wall_ns = SEC, .tests_parsed = true, .argv = js};
    for (int i = 0; i < 5; i++) {
        summary_add_test(&k, "t", 1, "PASS", false, 0);
        summary_add_totals(&k, "unittest", "Ran 1 test: OK", 1);
    }
    text = fmt(&k, false, true);
    ck_assert_ptr_null(strstr(text, "own count"));
    free(text);

    /* no test named: the count instead of "no test line recognised", with the hint; a hostile
     * summary cannot reach the terminal */
    const char *py[] = {"pytest", NULL};
    struct summary_facts h = {.end = RUN_EXIT, .wall_ns = SEC, .tests_parsed = true, .argv = py};
    summary_add_totals(&h, "pytest", "3 passed in 0.01s\033[2J", 3);
    text = fmt(&h, false, true);
    ck_assert_msg(strstr(text, "  tests        pytest's own count: 3 passed in 0.01s"), "%s", text);
    ck_assert_msg(strstr(text, "               no test named in the output: pytest prints a line per test only with -v\n"),
                  "%s", text);
    ck_assert_ptr_null(strstr(text, "recognised"));
    ck_assert_ptr_null(strchr(text, '\033'));
    free(text);
}
END_TEST

/* The tree's CPU counted past the command's end (leftovers ran on until the figure was read) is
 * averaged over the span it was counted in, not over the command's wall time alone: a 2-CPU
 * machine never shows more than 2 cores. */
START_TEST(test_cores_same_span)
{
    struct summary_facts f;
    memset(&f, 0, sizeof f);
    f.command = "make";
    f.exit_status = 0;
    f.wall_ns = 100 * 1000000ULL;
    f.have_cpu = true;
    f.tree_cpu_ns = 219 * 1000000ULL;
    f.cpu_span_ns = 120 * 1000000ULL;
    char *t = fmt(&f, false, true);
    ck_assert_msg(strstr(t, "  wall time    100 ms\n  tree CPU     219 ms (1.82 cores on average)\n"), "%s", t);
    free(t);
    char *md = fmt_md(&f);
    ck_assert_msg(strstr(md, "219 ms (1.82 cores on average)"), "%s", md);
    free(md);
    /* read at the command's end: the wall time is the span */
    f.cpu_span_ns = 0;
    f.tree_cpu_ns = 150 * 1000000ULL;
    t = fmt(&f, false, true);
    ck_assert_msg(strstr(t, "150 ms (1.50 cores on average)"), "%s", t);
    free(t);
}
END_TEST

START_TEST(test_exact_timeout_text)
{
    struct summary_facts f;
    facts_timeout(&f);
    char *text = fmt(&f, false, true);
    const char *want =
        "resmon-run: 'tests/demo/demo-suite' timed out after 20.0 s (sent TERM); exit status 124\n"
        "  wall time    20.3 s\n"
        "  tree CPU     4.21 s (0.21 cores on average)\n"
        "  peak memory  212.4 MiB (the tree's summed RSS)\n"
        "  tests        5: 3 PASS, 1 FAIL, 1 CRASH (2 unexpected)\n"
        "  unexpected   FAIL     demo/fails\n"
        "               CRASH    demo/crashes\n"
        "  slowest        1.05 s  demo/cpu\n"
        "                 620 ms  demo/memory\n"
        "                 310 ms  demo/files\n"
        "                  40 ms  demo/crashes\n"
        "                   8 ms  demo/fails\n"
        "  open tests   demo/hangs\n"
        "  alive then   1234    demo-suite\n"
        "               1240    sleep 1000\n"
        "  CPU          \u2581\u2588\u2588\u2585\u2583\u2581\u2581\u2581  peak 1.00 cores\n"
        "  memory       \u2582\u2583\u2588\u2588\u2585\u2583\u2583\u2583  peak 212.4 MiB\n"
        "  profile      demo-profile.json\n"
        "               open https://profiler.firefox.com/ and \"Load a profile from file\"\n";
    ck_assert_str_eq(text, want);
    free(text);
}
END_TEST

START_TEST(test_no_test_hint)
{
    const char *pq[] = {"python3", "-m", "pytest", "-q", "tests/", NULL};
    const char *pv[] = {"pytest", "-rA", "-v", NULL};
    const char *pcl[] = {"/usr/bin/pytest", "-rAv", NULL};
    const char *gt[] = {"go", "test", "./...", NULL};
    const char *gj[] = {"go", "test", "-json", "./...", NULL};
    const char *pr[] = {"prove", "-r", "t", NULL};
    const char *ut[] = {"python3", "-m", "unittest", "discover", NULL};
    const char *rs[] = {"bundle", "exec", "rspec", NULL};
    const char *rd[] = {"rspec", "--format=documentation", NULL};
    const char *mk[] = {"make", "check", NULL};
    const char *dd[] = {"sh", "-c", "pytest -v", NULL}; /* one word: not the harness's own argv */
    ck_assert_str_eq(summary_harness_hint(pq), "pytest prints a line per test only with -v");
    ck_assert_ptr_null(summary_harness_hint(pv));
    ck_assert_ptr_null(summary_harness_hint(pcl));
    ck_assert_str_eq(summary_harness_hint(gt), "go test prints a line per test only with -v or -json");
    ck_assert_ptr_null(summary_harness_hint(gj));
    ck_assert_str_eq(summary_harness_hint(pr), "prove prints a line per test only with -v");
    ck_assert_str_eq(summary_harness_hint(ut), "unittest prints a line per test only with -v");
    ck_assert_str_eq(summary_harness_hint(rs), "RSpec prints a line per test only with --format documentation");
    ck_assert_ptr_null(summary_harness_hint(rd));
    ck_assert_ptr_null(summary_harness_hint(mk));
    ck_assert_ptr_null(summary_harness_hint(dd));
    const char *js[] = {"npx", "jest", "--ci", NULL};
    const char *jv[] = {"node_modules/.bin/jest", "--verbose", NULL};
    const char *vs[] = {"npx", "vitest", "run", "--reporter=dot", NULL};
    const char *vv[] = {"npx", "vitest", "run", "--reporter", "verbose", NULL};
    ck_assert_str_eq(summary_harness_hint(js), "jest names the tests that pass only with --verbose");
    ck_assert_ptr_null(summary_harness_hint(jv));
    ck_assert_str_eq(summary_harness_hint(vs), "vitest names the tests that pass only with --reporter=verbose");
    ck_assert_ptr_null(summary_harness_hint(vv));
    ck_assert_ptr_null(summary_harness_hint(NULL));

    /* Said once, in the tests row, when the output was parsed and held no test; not at a stop
     * (the test may be still to come), nor with a test open. */
    struct summary_facts f = {.end = RUN_EXIT, .exit_code = 0, .exit_status = 0, .wall_ns = 1000000000,
                              .tests_parsed = true, .argv = pq};
    char *text = fmt(&f, false, true);
    ck_assert_msg(strstr(text, "  tests        no test line recognised in the output: pytest prints a line per test "
                               "only with -v\n"), "%s", text);
    free(text);
    f.argv = mk;
    text = fmt(&f, false, true);
    ck_assert_msg(strstr(text, "  tests        no test line recognised in the output\n"), "%s", text);
    free(text);
    f.at_stop = true;
    text = fmt(&f, false, true);
    ck_assert_ptr_null(strstr(text, "recognised"));
    free(text);
    f.at_stop = false;
    summary_add_open(&f, "t.py::test_hangs", 16);
    text = fmt(&f, false, true);
    ck_assert_ptr_null(strstr(text, "recognised"));
    free(text);
    f = (struct summary_facts){.end = RUN_EXIT, .wall_ns = 1000000000, .argv = pq};
    text = fmt(&f, false, true);
    ck_assert_ptr_null(strstr(text, "recognised")); /* the output was not parsed (--parse=none) */
    free(text);
}
END_TEST

START_TEST(test_dump_and_leaks_text)
{
    struct summary_facts f;
    facts_timeout(&f);
    /* the dump: state and stacks; the hung test's process moved first */
    summary_set_state(&f, 1240, 'S', 1, "demo/hangs");
    summary_add_stack(&f, 1240, "1240 sleep: clock_nanosleep < main", 34);
    summary_set_state(&f, 1234, 'S', 2, NULL);
    for (int i = 0; i < SUMMARY_MAX_STACKS + 2; i++)
        summary_add_stack(&f, 1234, "1234 demo-suite: wait4 < main", 29);
    summary_set_state(&f, 9999, 'R', 1, NULL); /* not noted alive: ignored */
    summary_alive_first(&f, 1240);
    f.dump_cut_processes = 1;
    f.dump_cut_threads = 2;
    f.dump_path = "demo-profile.json.stacks.txt";
    f.leaked = 3;
    f.leaking_tests = 2;
    summary_add_left(&f, 1250, "sleep 600", 9, "demo/leaky");
    summary_add_left(&f, 1251, "daemon", 6, NULL);
    char *text = fmt(&f, false, false);
    const char *want = "  open tests   demo/hangs\n"
                       "  alive then   1240    sleep 1000\n"
                       "                       state S, 1 thread, in demo/hangs\n"
                       "                         1240 sleep: clock_nanosleep < main\n"
                       "               1234    demo-suite\n"
                       "                       state S, 2 threads\n"
                       "                         1234 demo-suite: wait4 < main\n"
                       "                         1234 demo-suite: wait4 < main\n"
                       "                         1234 demo-suite: wait4 < main\n"
                       "                         1234 demo-suite: wait4 < main\n"
                       "  dump         the budget cut off the stacks of 1 process and 2 threads\n"
                       "  stacks       demo-profile.json.stacks.txt\n"
                       "  leaked       3 processes left running by 2 tests (their markers list them)\n"
                       "  left behind  1250    sleep 600 (left by test demo/leaky)\n"
                       "               1251    daemon\n"
                       "  CPU";
    ck_assert_msg(strstr(text, want), "%s", text);
    free(text);
}
END_TEST

START_TEST(test_ascii_fallback)
{
    struct summary_facts f;
    facts_timeout(&f);
    char *text = fmt(&f, false, false);
    ck_assert_ptr_nonnull(strstr(text, "  CPU          _##=-___  peak 1.00 cores\n"));
    ck_assert_ptr_nonnull(strstr(text, "  memory       .-##=---  peak 212.4 MiB\n"));
    free(text);
    /* One peak wherever it is shown: the run's own figure when a sample missed it (it came
     * between two), and no row at all when nothing was measured (a run shorter than one
     * interval), never "peak 0 B". */
    f.peak_rss *= 2;
    text = fmt(&f, false, false);
    ck_assert_ptr_nonnull(strstr(text, "peak memory  424.8 MiB"));
    ck_assert_msg(strstr(text, "  peak 424.8 MiB\n"), "%s", text);
    free(text);
    f.peak_rss = 0;
    summary_series_init(&f.mem, SUMMARY_AGG_MAX);
    summary_series_add(&f.mem, 0);
    text = fmt(&f, false, false);
    ck_assert_ptr_null(strstr(text, "  memory "));
    ck_assert_ptr_null(strstr(text, "peak 0 B"));
    char *md;
    size_t mdlen;
    ck_assert_int_eq(summary_format_markdown(&f, &md, &mdlen), 0);
    ck_assert_ptr_null(strstr(md, "| memory |"));
    free(md);
    for (const char *p = text; *p; p++)
        ck_assert_msg((unsigned char)*p < 0x80, "non-ASCII byte in ASCII mode");
    free(text);
}
END_TEST

START_TEST(test_no_colour_escapes)
{
    struct summary_facts f;
    facts_timeout(&f);
    char *plain = fmt(&f, false, true);
    ck_assert_ptr_null(strchr(plain, '\033'));
    char *coloured = fmt(&f, true, true);
    ck_assert_ptr_nonnull(strstr(coloured, "\033[33mtimed out after 20.0 s (sent TERM)\033[0m"));
    ck_assert_ptr_nonnull(strstr(coloured, "\033[31mFAIL    \033[0m"));
    /* Same text once the escapes are removed: colour never changes content or alignment. */
    char *stripped = strdup(coloured);
    char *w = stripped;
    for (const char *p = coloured; *p;) {
        if (*p == '\033') {
            while (*p && *p != 'm')
                p++;
            if (*p)
                p++;
            continue;
        }
        *w++ = *p++;
    }
    *w = '\0';
    ck_assert_str_eq(stripped, plain);
    free(stripped);
    free(plain);
    free(coloured);
}
END_TEST

START_TEST(test_endings)
{
    struct summary_facts f;
    memset(&f, 0, sizeof f);
    f.command = "make check";
    f.exit_status = 0;
    f.wall_ns = 125 * SEC;
    char *t = fmt(&f, false, true);
    ck_assert_str_eq(t, "resmon-run: 'make check' exited with status 0; exit status 0\n"
                        "  wall time    2m05s\n");
    free(t);

    f.end = RUN_SIGNAL;
    f.signal = SIGSEGV;
    f.exit_status = 139;
    f.wall_ns = 2 * 3600 * SEC + 3 * 60 * SEC;
    t = fmt(&f, false, true);
    ck_assert_str_eq(t, "resmon-run: 'make check' died of signal SEGV; exit status 139\n"
                        "  wall time    2h03m\n");
    free(t);

    f.end = RUN_OUTPUT_TIMEOUT;
    f.signal = SIGTERM;
    f.kill_sent = true;
    f.limit_ns = 300 * SEC;
    f.exit_status = 124;
    f.wall_ns = 500000000;
    t = fmt(&f, false, true);
    ck_assert_str_eq(t, "resmon-run: 'make check' printed nothing for 5m00s: output timeout (sent TERM, "
                        "then KILL); exit status 124\n"
                        "  wall time    500 ms\n");
    free(t);

    f.end = RUN_STOPPED;
    f.signal = SIGINT;
    f.kill_sent = false;
    f.exit_status = -1;
    f.program = "resmon-timeout";
    t = fmt(&f, false, true);
    ck_assert_str_eq(t, "resmon-timeout: 'make check' stopped: resmon-run received INT\n"
                        "  wall time    500 ms\n");
    free(t);

    f.end = RUN_PARENT_DIED;
    f.signal = SIGTERM;
    f.exit_status = 143;
    f.program = NULL;
    f.profile_path = "out/p.json";
    f.profile_is_stream = true;
    t = fmt(&f, false, true);
    ck_assert_str_eq(t, "resmon-run: 'make check' stopped: resmon-run's parent died (sent TERM); exit status 143\n"
                        "  wall time    500 ms\n"
                        "  profile      out/p.json\n"
                        "               a stream only: 'resmon-run --recover out/p.json' makes it a profile\n");
    free(t);

    /* a resource limit: which, and the figure */
    memset(&f, 0, sizeof f);
    f.command = "pytest";
    f.end = RUN_MEMORY;
    f.signal = SIGTERM;
    f.limit_name = "memory";
    f.limit_text = "the tree's RSS reached 300 MiB, past the limit of 256 MiB";
    f.exit_status = 124;
    f.wall_ns = 3 * SEC;
    t = fmt(&f, false, true);
    ck_assert_str_eq(t, "resmon-run: 'pytest' stopped at its memory limit: the tree's RSS reached 300 MiB, past "
                        "the limit of 256 MiB (sent TERM); exit status 124\n"
                        "  wall time    3.00 s\n");
    free(t);
    /* the kernel enforced it and the OOM killer ended the command first: no signal was sent */
    f.signal = 0;
    t = fmt(&f, false, true);
    ck_assert_str_eq(t, "resmon-run: 'pytest' stopped at its memory limit: the tree's RSS reached 300 MiB, past "
                        "the limit of 256 MiB (the command had ended: nothing to signal); exit status 124\n"
                        "  wall time    3.00 s\n");
    free(t);

    /* the OOM killer took the command; the victims, the test each ran under; memory pressure */
    f.end = RUN_OOM_KILL;
    f.exit_status = 137;
    summary_add_oom(&f, 4242, "python -m pytest", 1536 * 1048576ULL, "tests/test_big.py::test_huge");
    summary_add_oom(&f, 4250, "cc1", 0, NULL);
    f.pressure_high = true;
    f.pressure_avg60 = 41.2;
    f.pressure_at_ns = 130 * SEC;
    f.pressure_tree = true;
    t = fmt(&f, false, true);
    ck_assert_str_eq(t, "resmon-run: 'pytest' was killed by the kernel's OOM killer; exit status 137\n"
                        "  wall time    3.00 s\n"
                        "  OOM killed   4242    python -m pytest (1.5 GiB resident) during tests/test_big.py::test_huge\n"
                        "               4250    cc1\n"
                        "  pressure     memory: 41% of the last minute stalled (the tree, 2m10s into the run)\n");
    free(t);
    for (int i = 0; i < 20; i++)
        summary_add_oom(&f, 5000 + i, "x", 0, NULL);
    ck_assert_uint_eq(f.n_oom, SUMMARY_MAX_LIST);
    ck_assert_uint_eq(f.oom_total, 22);
    t = fmt(&f, false, true);
    ck_assert_ptr_nonnull(strstr(t, "... and 14 more\n"));
    free(t);
}
END_TEST

START_TEST(test_downsampling)
{
    struct summary_series s;
    summary_series_init(&s, SUMMARY_AGG_MEAN);
    for (int i = 0; i < SUMMARY_SERIES_POINTS; i++)
        summary_series_add(&s, i);
    ck_assert_uint_eq(s.n, SUMMARY_SERIES_POINTS);
    ck_assert_uint_eq(s.width, 1);
    ck_assert(summary_series_value(&s, 59) == 59);
    /* One more: pairs merge, width doubles, the new sample opens a bucket of its own. */
    summary_series_add(&s, 60);
    ck_assert_uint_eq(s.n, SUMMARY_SERIES_POINTS / 2 + 1);
    ck_assert_uint_eq(s.width, 2);
    ck_assert(summary_series_value(&s, 0) == 0.5);
    ck_assert(summary_series_value(&s, 29) == 58.5);
    ck_assert(summary_series_value(&s, 30) == 60);
    summary_series_add(&s, 62);
    ck_assert_uint_eq(s.n, 31);
    ck_assert(summary_series_value(&s, 30) == 61);

    /* A long run: any number of samples stays within the bound, each bucket the same span. */
    summary_series_init(&s, SUMMARY_AGG_MEAN);
    for (int i = 0; i < 100000; i++)
        summary_series_add(&s, 3.0);
    ck_assert_uint_le(s.n, SUMMARY_SERIES_POINTS);
    ck_assert_uint_ge(s.n, SUMMARY_SERIES_POINTS / 2);
    for (size_t i = 0; i < s.n; i++)
        ck_assert(summary_series_value(&s, i) == 3.0);
    ck_assert_uint_eq((s.n - 1) * s.width + s.fill, 100000);

    /* MAX keeps peaks: one spike in a long flat run survives every merge. */
    summary_series_init(&s, SUMMARY_AGG_MAX);
    for (int i = 0; i < 10000; i++)
        summary_series_add(&s, i == 4321 ? 99.0 : 1.0);
    double peak = 0;
    for (size_t i = 0; i < s.n; i++)
        peak = summary_series_value(&s, i) > peak ? summary_series_value(&s, i) : peak;
    ck_assert(peak == 99.0);

    /* A zeroed series is an empty MEAN series. */
    struct summary_series z;
    memset(&z, 0, sizeof z);
    summary_series_add(&z, 2);
    summary_series_add(&z, 4);
    ck_assert_uint_eq(z.n, 2);
    ck_assert(summary_series_value(&z, 1) == 4);
    ck_assert(summary_series_value(&z, 7) == 0);
}
END_TEST

START_TEST(test_hottest)
{
    struct summary_facts f;
    memset(&f, 0, sizeof f);
    f.command = "x";
    f.exit_status = -1;
    char *t = fmt(&f, false, true);
    ck_assert_ptr_null(strstr(t, "hottest")); /* no samples, no line */
    free(t);
    summary_add_hot(&f, "burn_alpha", 60, 100);
    summary_add_hot(&f, "burn_*beta*", 30, 100);
    summary_add_hot(&f, "main", 9, 100);
    summary_add_hot(&f, "more", 1, 100); /* past SUMMARY_MAX_HOT */
    ck_assert_uint_eq(f.n_hot, SUMMARY_MAX_HOT);
    t = fmt(&f, false, true);
    ck_assert_ptr_nonnull(strstr(t, "\n  hottest      60% burn_alpha, 30% burn_*beta*, 9% main (of 100 CPU samples)\n"));
    free(t);
    char *md;
    size_t len;
    ck_assert_int_eq(summary_format_markdown(&f, &md, &len), 0);
    ck_assert_ptr_nonnull(strstr(md, "| hottest | 60% burn\\_alpha, 30% burn\\_\\*beta\\*, 9% main (of 100 CPU samples) |\n"));
    free(md);
}
END_TEST

START_TEST(test_bounded_lists)
{
    struct summary_facts f;
    memset(&f, 0, sizeof f);
    f.command = "x";
    f.exit_status = -1;
    f.max_slowest = 3;
    char id[32];
    for (int i = 0; i < 20; i++) {
        int n = snprintf(id, sizeof id, "t%d", i);
        summary_add_test(&f, id, (size_t)n, i % 2 ? "FAIL" : "PASS", i % 2, (uint64_t)i * 1000000);
        summary_add_open(&f, id, (size_t)n);
        summary_add_alive(&f, 100 + i, id, (size_t)n);
    }
    ck_assert_uint_eq(f.tests, 20);
    ck_assert_uint_eq(f.n_unexpected, SUMMARY_MAX_LIST);
    ck_assert_uint_eq(f.unexpected_total, 10);
    ck_assert_uint_eq(f.n_slowest, 3);
    ck_assert_str_eq(f.slowest[0].id, "t19");
    ck_assert_str_eq(f.slowest[1].id, "t18");
    ck_assert_str_eq(f.slowest[2].id, "t17");
    char *t = fmt(&f, false, true);
    ck_assert_ptr_nonnull(strstr(t, "  tests        20: 10 PASS, 10 FAIL (10 unexpected)\n"));
    ck_assert_ptr_nonnull(strstr(t, "               ... and 2 more\n"));  /* unexpected */
    ck_assert_ptr_nonnull(strstr(t, "               ... and 12 more\n")); /* open, alive */
    free(t);

    /* Distinct statuses beyond the table are still counted as tests. */
    memset(&f, 0, sizeof f);
    for (int i = 0; i < SUMMARY_MAX_STATUSES + 3; i++) {
        snprintf(id, sizeof id, "S%d", i);
        summary_add_test(&f, "t", 1, id, false, 0);
    }
    ck_assert_uint_eq(f.n_status, SUMMARY_MAX_STATUSES);
    ck_assert_uint_eq(f.tests, SUMMARY_MAX_STATUSES + 3);
}
END_TEST

START_TEST(test_hostile_text)
{
    struct summary_facts f;
    memset(&f, 0, sizeof f);
    f.command = "cmd\033[2J";
    f.exit_status = -1;
    /* Escape sequences and newlines in names are neutralised; long ids cut on a character. */
    summary_add_test(&f, "a\nb\033[31m", strlen("a\nb\033[31m"), "FAIL", true, 0);
    char longid[400];
    memset(longid, 'x', sizeof longid);
    memcpy(longid + SUMMARY_TEXT_MAX - 2, "\xc3\xa9", 2); /* é straddling the cut */
    summary_add_test(&f, longid, sizeof longid, "FAIL", true, 0);
    ck_assert_uint_eq(strlen(f.unexpected[1].id), SUMMARY_TEXT_MAX - 2);
    char *t = fmt(&f, false, true);
    ck_assert_ptr_null(strchr(t, '\033'));
    ck_assert_ptr_nonnull(strstr(t, "'cmd?[2J'"));
    ck_assert_ptr_nonnull(strstr(t, "a?b?[31m\n"));
    free(t);
}
END_TEST

START_TEST(test_unexpected_message)
{
    struct summary_facts f;
    memset(&f, 0, sizeof f);
    f.command = "cmd";
    f.exit_status = 1;
    summary_add_status(&f, "FAIL", 2);
    /* the first line of the message, neutralised, after the id; none: the id alone */
    summary_add_unexpected(&f, "t/a.t/boom", 10, "FAIL", "got 3\033[31m, expected 4\nstack", 0);
    summary_add_unexpected(&f, "t/b.t", 5, "ERROR", NULL, 0);
    char *t = fmt(&f, false, true);
    ck_assert_msg(strstr(t, "unexpected   FAIL     t/a.t/boom \xe2\x80\x94 got 3?[31m, expected 4\n"), "%s", t);
    ck_assert_msg(strstr(t, "ERROR    t/b.t\n"), "%s", t);
    ck_assert_ptr_null(strstr(t, "stack"));
    free(t);
    t = fmt(&f, false, false);
    ck_assert_msg(strstr(t, "t/a.t/boom -- got 3?[31m, expected 4\n"), "%s", t);
    free(t);
}
END_TEST

START_TEST(test_locale_and_colour)
{
    ck_assert(summary_locale_utf8(NULL, NULL, NULL));
    ck_assert(summary_locale_utf8("", "", ""));
    ck_assert(summary_locale_utf8(NULL, NULL, "C.UTF-8"));
    ck_assert(summary_locale_utf8(NULL, NULL, "en_US.utf8"));
    ck_assert(summary_locale_utf8(NULL, "UTF-8", "C"));
    ck_assert(!summary_locale_utf8(NULL, NULL, "C"));
    ck_assert(!summary_locale_utf8(NULL, NULL, "POSIX"));
    ck_assert(!summary_locale_utf8("C", NULL, "en_US.UTF-8")); /* LC_ALL wins */
    ck_assert(!summary_locale_utf8(NULL, NULL, "de_DE.ISO-8859-1"));

    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert(!summary_colour_for(p[1], NULL)); /* not a terminal */
    close(p[0]);
    close(p[1]);
}
END_TEST

START_TEST(test_write_fd)
{
    struct summary_facts f;
    facts_timeout(&f);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    struct summary_style st = {.colour = false, .utf8 = true};
    ck_assert_int_eq(summary_write(p[1], &f, &st), 0);
    close(p[1]);
    char buf[8192];
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    char *want = fmt(&f, false, true);
    ck_assert_str_eq(buf, want);
    free(want);
    close(p[0]);

    ck_assert_int_eq(pipe(p), 0);
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    ck_assert_int_eq(summary_write(p[1], &f, &st), -EPIPE);
    close(p[1]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("summary");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_exact_timeout_text);
    tcase_add_test(tc, test_hottest);
    tcase_add_test(tc, test_ascii_fallback);
    tcase_add_test(tc, test_no_colour_escapes);
    tcase_add_test(tc, test_endings);
    tcase_add_test(tc, test_downsampling);
    tcase_add_test(tc, test_bounded_lists);
    tcase_add_test(tc, test_hostile_text);
    tcase_add_test(tc, test_unexpected_message);
    tcase_add_test(tc, test_locale_and_colour);
    tcase_add_test(tc, test_write_fd);
    tcase_add_test(tc, test_dump_and_leaks_text);
    tcase_add_test(tc, test_no_test_hint);
    tcase_add_test(tc, test_harness_totals);
    tcase_add_test(tc, test_cores_same_span);
    suite_add_tcase(s, tc);
    return check_run(s);
}
