/* Unit tests of the test-log core: --parse lists, stripping for matching, the open-test table,
 * per-test cost, finishing, statistics. */
#include "testlog_capture.h"
#include "check_run.h"
#include "testlog/event.h" /* TL_ANCHORS */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "profile/stream.h"

START_TEST(test_parse_formats)
{
    unsigned m = 99;
    ck_assert_int_eq(testlog_parse_formats("auto", &m), 0);
    ck_assert_uint_eq(m, TL_FMT_ALL);
    ck_assert_int_eq(testlog_parse_formats("none", &m), 0);
    ck_assert_uint_eq(m, 0);
    ck_assert_int_eq(testlog_parse_formats("mozlog,tap,check", &m), 0);
    ck_assert_uint_eq(m, TL_FMT_MOZLOG | TL_FMT_TAP | TL_FMT_CHECK);
    ck_assert_int_eq(testlog_parse_formats("tbpl", &m), 0);
    ck_assert_uint_eq(m, TL_FMT_TBPL);
    m = 7;
    ck_assert_int_eq(testlog_parse_formats("mozlog,bogus", &m), -EINVAL);
    ck_assert_int_eq(testlog_parse_formats("mozlog,", &m), -EINVAL);
    ck_assert_int_eq(testlog_parse_formats("", &m), -EINVAL);
    ck_assert_int_eq(testlog_parse_formats(NULL, &m), -EINVAL);
    ck_assert_uint_eq(m, 7); /* untouched on failure */
    ck_assert_uint_eq(testlog_available_formats() & (TL_FMT_MOZLOG | TL_FMT_TBPL | TL_FMT_MACH),
                      TL_FMT_MOZLOG | TL_FMT_TBPL | TL_FMT_MACH);
    ck_assert_int_eq(testlog_status_index("PASS", 4), TL_STATUS_PASS);
    ck_assert_int_eq(testlog_status_index("PAS", 3), TL_STATUS_OTHER);
    ck_assert_str_eq(testlog_status_name(TL_STATUS_INCOMPLETE), "INCOMPLETE");
    ck_assert_ptr_null(testlog_status_name(TL_STATUS_COUNT));
}
END_TEST

START_TEST(test_strip_prefixes)
{
    static const char *const lines[] = {
        "TEST-START | plain",
        "TEST-START | cr\r",
        "[task 2026-01-01T00:00:00.000Z] TEST-START | taskcluster",
        "12:34:56     INFO - TEST-START | mozharness",
        "12:34:56  WARNING - TEST-START | mozharness-warning",
        "42 INFO TEST-START | mochitest",
        "[task 2026-01-01T00:00:00.000Z] 12:34:56     INFO - 7 INFO TEST-START | stacked",
        "\x1b[1;32mTEST-START\x1b[0m | ansi\x1b(B",
    };
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_ALL, false);
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        feed(tl, lines[i], (double)i);
    /* not prefixes: left alone, so these are not TBPL lines */
    feed(tl, "[task 2026-01-01T00:00:00.000] TEST-START | no-z", 20);
    feed(tl, "12:34:56 INFO TEST-START | no-dash", 21);
    feed(tl, "x42 INFO TEST-START | not-number", 22);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.lines, 11);
    ck_assert_uint_eq(st.recognised, 8);
    const char *ids[] = {"plain", "cr", "taskcluster", "mozharness", "mozharness-warning",
                         "mochitest", "stacked", "ansi"};
    for (size_t i = 0; i < 8; i++) {
        char needle[128];
        snprintf(needle, sizeof needle, "\"key\":\"%s\"", ids[i]);
        ck_assert_msg(cap_find(&c, needle) >= 0, "%s", ids[i]);
    }
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

static void collect(void *ctx, const char *id)
{
    struct cap *c = ctx;
    cap_add(c, strdup(id));
}

START_TEST(test_open_table_and_finish)
{
    struct cap c = {0}, open = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TBPL, true);
    feed(tl, "TEST-START | a", 10);
    testlog_tree_sample(tl, 100);
    feed(tl, "TEST-START | b", 20);
    testlog_tree_sample(tl, 300);
    testlog_tree_sample(tl, 200);
    testlog_each_open(tl, collect, &open);
    ck_assert_uint_eq(open.n, 2);
    ck_assert_str_eq(open.lines[0], "a");
    ck_assert_str_eq(open.lines[1], "b");
    testlog_finish(tl, MS(50), true);
    ck_assert_int_ge(cap_find(&c, "M test 10.000 50.000 2 {\"type\":\"Test\",\"test\":\"a\",\"name\":\"a\","
                                  "\"status\":\"TIMEOUT\",\"message\":\"still running when the run "
                                  "timed out\",\"color\":\"purple\",\"cpuTime\":20.0,\"maxRSS\":300}"),
                     0);
    ck_assert_int_ge(cap_find(&c, "M test 20.000 50.000 2 {\"type\":\"Test\",\"test\":\"b\""), 0);
    ck_assert_uint_eq(cap_count(&c, "S {\"type\":\"close\""), 2);
    cap_free(&open);
    testlog_each_open(tl, collect, &open);
    ck_assert_uint_eq(open.n, 0);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.by_status[TL_STATUS_TIMEOUT], 2);
    ck_assert_uint_eq(st.unexpected, 2);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* The marker holding needle exists and carries no cost (unknown, which is not zero). */
static void assert_costless(const struct cap *c, const char *needle)
{
    ssize_t k = cap_find(c, needle);
    ck_assert_msg(k >= 0, "no marker %s", needle);
    ck_assert_msg(!strstr(c->lines[k], "cpuTime") && !strstr(c->lines[k], "maxRSS"), "%s", c->lines[k]);
}

/* The marker holding needle exists and holds text too. */
static void assert_has(const struct cap *c, const char *needle, const char *text)
{
    ssize_t k = cap_find(c, needle);
    ck_assert_msg(k >= 0, "no marker %s", needle);
    ck_assert_msg(strstr(c->lines[k], text) != NULL, "%s has no %s", c->lines[k], text);
}

/* A TAP test point has no opener: it ran from the previous TAP line at its level, and gets the
 * tree's cost since that line (its anchor). The fake probe advances 10 ms a call. */
START_TEST(test_tap_cost_from_anchor)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TAP, true);
    feed(tl, "1..3", 10);          /* anchor: cpu 10 */
    testlog_tree_sample(tl, 500);
    feed(tl, "ok 1 - a", 20);      /* anchor: 20; a ends at the probe: 30 (peak RSS 500) */
    testlog_tree_sample(tl, 700);
    feed(tl, "not ok 2 - b", 30);  /* anchor: 40; b ends at 50; b started at a's anchor (20) */
    ck_assert_int_ge(cap_find(&c, "M test 10.000 20.000 2 {\"type\":\"Test\",\"test\":\"a\",\"name\":\"a\","
                                  "\"status\":\"PASS\",\"color\":\"green\",\"cpuTime\":20.0,\"maxRSS\":500}"),
                     0);
    ck_assert_int_ge(cap_find(&c, "M test 20.000 30.000 2 {\"type\":\"Test\",\"test\":\"b\",\"name\":\"b\","
                                  "\"status\":\"FAIL\",\"expected\":\"PASS\",\"color\":\"orange\","
                                  "\"cpuTime\":30.0,\"maxRSS\":700}"),
                     0);
    /* Subtests without an opener, more than the core keeps anchors of: the parent's start (the
     * last level-0 line, b) is forgotten, so its cost is unknown, never wrong. */
    for (int i = 0; i < TL_ANCHORS + 6; i++) {
        char line[64];
        snprintf(line, sizeof line, "    ok %d - sub%d", i + 1, i);
        feed(tl, line, 40 + i);
    }
    feed(tl, "ok 3 - parent", 200);
    assert_costless(&c, "M test 30.000 200.000 2 {\"type\":\"Test\",\"test\":\"parent\"");
    assert_has(&c, "M test 108.000 109.000 2 {\"type\":\"Test\",\"test\":\"3/sub69\"", "\"cpuTime\":30.0");
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* A result held for its YAML block (Node) ends at its own line's anchor, not when it goes out. */
START_TEST(test_tap_cost_held_result)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TAP, true);
    const char *l[] = {"TAP version 13", "ok 1 - a", "  ---", "  duration_ms: 5", "  ...",
                       "ok 2 - b", "  ---", "  duration_ms: 40", "  ...",
                       "ok 3 - c", "  ---", "  duration_ms: 5", "  ...", "1..3"};
    for (size_t i = 0; i < sizeof l / sizeof *l; i++)
        feed(tl, l[i], 10.0 * (double)(i + 1));
    /* Anchors: the version line at 10 ms of CPU, "ok 1" at 20; a goes out at once (no YAML seen
     * yet) with a probe: 30. Then b is held until its block ends: "ok 2" is an anchor at 40, and
     * a probe when b goes out would say 50. */
    assert_has(&c, "\"test\":\"a\"", "\"cpuTime\":20.0");
    assert_has(&c, "M test 20.000 60.000 2 {\"type\":\"Test\",\"test\":\"b\"", "\"cpuTime\":20.0");
    /* c took 5 ms by its YAML block: it started 35 ms after its anchor ("ok 2"), which would
     * count what ran before it. Its cost is unknown. */
    assert_costless(&c, "M test 95.000 100.000 2 {\"type\":\"Test\",\"test\":\"c\"");
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* A result still held when the output ends goes out at the end, timed by its own line. */
START_TEST(test_tap_held_at_end)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TAP, false);
    feed(tl, "TAP version 13", 10);
    feed(tl, "# Subtest: last", 20);
    feed(tl, "not ok 1 - last", 20);
    ck_assert_int_lt(cap_find(&c, "M test"), 0); /* held: a YAML block may follow */
    testlog_finish(tl, MS(90), false);
    ck_assert_int_ge(cap_find(&c, "M test 20.000 20.000 2 {\"type\":\"Test\",\"test\":\"last\","
                                  "\"name\":\"last\",\"status\":\"FAIL\""),
                     0);
    ck_assert_int_lt(cap_find(&c, "INCOMPLETE"), 0);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* Serial libtest prints "test x ... " when x starts and "ok" when it ends: the supervisor says
 * when the line began, and the test's cost runs from then. A line no parser takes costs no probe. */
START_TEST(test_cost_from_line_start)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_LIBTEST, true);
    testlog_line_begins(tl, "[Parent 12] plain", 17, MS(5));
    ck_assert_uint_eq(fake_cpu_ns, 0);
    testlog_line_begins(tl, "test a::b ... ", 14, MS(10)); /* a probe: 10 ms of CPU */
    ck_assert_uint_eq(fake_cpu_ns, 10000000);
    testlog_tree_sample(tl, 4242);
    testlog_line(tl, 1, "test a::b ... ok", 16, false, MS(10)); /* the end: a probe, 20 */
    assert_has(&c, "\"test\":\"a::b\",\"name\":\"a::b\",\"status\":\"PASS\"", "\"cpuTime\":10.0,\"maxRSS\":4242}");
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* A test's maxRSS is the tree's peak while it ran: at its start, at its end (the probe) and at
 * the samples in between, never a sample taken before it started. */
START_TEST(test_peak_rss_is_the_tests_own)
{
    struct cap c = {0};
    struct testlog_config cfg = {.formats = TL_FMT_MOZLOG, .wall_at_t0_ms = WALL0, .t0_ns = T0};
    struct testlog_probe pr = {fake_cpu, fake_rss, NULL};
    struct testlog *tl;
    ck_assert_int_eq(testlog_new(&cfg, cap_sink(&c), &pr, &tl), 0);
    fake_rss_bytes = 3000000;
    feed(tl, "{\"action\":\"test_start\",\"test\":\"big\"}", 10);
    testlog_tree_sample(tl, 200000000); /* big holds 200 MB at a sample */
    fake_rss_bytes = 150000000;
    feed(tl, "{\"action\":\"test_end\",\"test\":\"big\",\"status\":\"PASS\"}", 20);
    fake_rss_bytes = 3000000; /* freed; no sample since */
    feed(tl, "{\"action\":\"test_start\",\"test\":\"small\"}", 30);
    fake_rss_bytes = 4000000;
    feed(tl, "{\"action\":\"test_end\",\"test\":\"small\",\"status\":\"PASS\"}", 40);
    assert_has(&c, "\"test\":\"big\",\"name\":\"big\",\"status\"", "\"maxRSS\":200000000}");
    assert_has(&c, "\"test\":\"small\",\"name\":\"small\",\"status\"", "\"maxRSS\":4000000}");
    /* Without the probe, only samples inside the test count: none here, so no maxRSS at all. */
    struct cap c2 = {0};
    struct testlog *tl2 = tl_make(&c2, TL_FMT_MOZLOG, true);
    testlog_tree_sample(tl2, 200000000);
    feed(tl2, "{\"action\":\"test_start\",\"test\":\"after\"}", 10);
    feed(tl2, "{\"action\":\"test_end\",\"test\":\"after\",\"status\":\"PASS\"}", 20);
    ssize_t k = cap_find(&c2, "\"test\":\"after\",\"name\":\"after\",\"status\"");
    ck_assert_int_ge(k, 0);
    ck_assert_msg(!strstr(c2.lines[k], "maxRSS"), "%s", c2.lines[k]);
    testlog_free(tl);
    testlog_free(tl2);
    cap_free(&c);
    cap_free(&c2);
}
END_TEST

/* A start line read a little late (a starved supervisor): the producer's duration times the
 * test, its cost runs from the start line. Much later (a buffered start line): no cost. */
START_TEST(test_start_line_read_late)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TBPL, true);
    feed(tl, "TEST-START | a", 100);
    feed(tl, "TEST-PASS | a | took 300ms", 360); /* 40 ms short: read late */
    assert_has(&c, "M test 60.000 360.000 2 {\"type\":\"Test\",\"test\":\"a\"", "\"cpuTime\":10.0");
    feed(tl, "TEST-START | b", 1000);
    feed(tl, "TEST-PASS | b | took 300ms", 1010); /* printed with its result */
    assert_costless(&c, "M test 710.000 1010.000 2 {\"type\":\"Test\",\"test\":\"b\"");
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* go: a parallel test runs from its CONT; a subtest whose result comes with its parent's ends its
 * reported time after its start, costed up to the anchor there (the next subtest's start). The
 * fake probe advances 10 ms a call; one chunk's lines share a probe. */
START_TEST(test_go_resume_and_late_end)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_GO, true);
    feed(tl, "=== RUN   TestP", 10);                /* 10 */
    feed(tl, "=== PAUSE TestP", 11);
    feed(tl, "=== CONT  TestP", 100);               /* 20 */
    /* the stream's open line moves to the CONT: a killed run recovers the test from there */
    ck_assert_uint_ge(c.n, 3);
    ck_assert_str_eq(c.lines[c.n - 2], "S {\"type\":\"close\",\"kind\":\"test\",\"key\":\"TestP\"}");
    ck_assert_str_eq(c.lines[c.n - 1], "S {\"type\":\"open\",\"kind\":\"test\",\"key\":\"TestP\","
                                       "\"name\":\"test\",\"startTime\":100.0,\"category\":2,\"cost\":true,\"data\":{"
                                       "\"type\":\"Test\",\"test\":\"TestP\",\"name\":\"TestP\"}}");
    ck_assert_uint_eq(cap_count(&c, "S {\"type\":\"open\""), 2);
    feed(tl, "--- PASS: TestP (0.05s)", 150);       /* 30 */
    ck_assert_int_ge(cap_find(&c, "M test 100.000 150.000 2 {\"type\":\"Test\",\"test\":\"TestP\",\"name\":\"TestP\","
                                  "\"status\":\"PASS\",\"color\":\"green\",\"cpuTime\":10.0}"),
                     0);
    feed(tl, "=== RUN   TestS", 200);               /* 40 */
    feed(tl, "=== RUN   TestS/a", 200);             /* the same instant: 40 */
    feed(tl, "=== RUN   TestS/b", 300);             /* 50 */
    testlog_tree_sample(tl, 777);
    feed(tl, "--- PASS: TestS (0.20s)", 400);       /* 60 */
    feed(tl, "    --- PASS: TestS/a (0.10s)", 400); /* ends at 300: 50 - 40 */
    feed(tl, "    --- PASS: TestS/b (0.10s)", 400); /* 70 - 50 */
    ck_assert_int_ge(cap_find(&c, "M test 200.000 400.000 2 {\"type\":\"Test\",\"test\":\"TestS\",\"name\":\"TestS\","
                                  "\"status\":\"PASS\",\"color\":\"green\",\"cpuTime\":20.0,\"maxRSS\":777}"),
                     0);
    ck_assert_int_ge(cap_find(&c, "M test 200.000 300.000 2 {\"type\":\"Test\",\"test\":\"TestS/a\",\"name\":\"TestS/a\","
                                  "\"status\":\"PASS\",\"color\":\"green\",\"cpuTime\":10.0}"),
                     0);
    ck_assert_int_ge(cap_find(&c, "M test 300.000 400.000 2 {\"type\":\"Test\",\"test\":\"TestS/b\",\"name\":\"TestS/b\","
                                  "\"status\":\"PASS\",\"color\":\"green\",\"cpuTime\":20.0,\"maxRSS\":777}"),
                     0);
    /* A 1 ms subtest, and no anchor near its end but its own start: its cost is unknown. */
    feed(tl, "=== RUN   TestT", 500);
    feed(tl, "=== RUN   TestT/x", 500);
    feed(tl, "=== RUN   TestT/y", 530);
    feed(tl, "--- PASS: TestT (0.10s)", 600);
    feed(tl, "    --- PASS: TestT/x (0.001s)", 600);
    assert_costless(&c, "M test 500.000 501.000 2 {\"type\":\"Test\",\"test\":\"TestT/x\"");
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* Through a real stream that holds a chunk's lines: a test that starts and ends within one chunk
 * leaves its marker and no open/close pair; one that spans chunks has its open line on disk in
 * between, and its close after; a go test resumed within the chunk it started in moves its open
 * line without a trace. */
START_TEST(test_open_lines_within_a_chunk)
{
    char dir[] = "/tmp/unit_testlog.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/s.jsonl", dir);
    struct stream_meta m = {.product = "p", .t0_ns = T0, .logical_cpus = 1, .physical_cpus = 1};
    struct stream *s;
    ck_assert_int_eq(stream_open(AT_FDCWD, path, &m, 0, &s), 0);
    stream_hold(s, true);
    struct testlog_config cfg = {.formats = TL_FMT_TBPL | TL_FMT_GO, .wall_at_t0_ms = WALL0, .t0_ns = T0};
    struct testlog *tl;
    ck_assert_int_eq(testlog_new(&cfg, stream_sink(s), NULL, &tl), 0);
    feed(tl, "TEST-START | one", 1);
    feed(tl, "TEST-OK | one | took 1ms", 2);
    feed(tl, "TEST-START | two", 3);
    stream_flush(s); /* the chunk ends: two is running */
    size_t len;
    char *text = slurp(path, &len);
    ck_assert_ptr_null(strstr(text, "\"key\":\"one\""));
    ck_assert_ptr_nonnull(strstr(text, "\"test\":\"one\",\"name\":\"one\",\"status\":\"OK\""));
    ck_assert_ptr_nonnull(strstr(text, "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"two\""));
    free(text);
    feed(tl, "TEST-OK | two | took 1ms", 4);
    feed(tl, "=== RUN   TestP", 5);
    feed(tl, "=== PAUSE TestP", 5);
    feed(tl, "=== CONT  TestP", 6);
    stream_flush(s);
    feed(tl, "--- PASS: TestP (0.00s)", 7);
    stream_flush(s);
    text = slurp(path, &len);
    ck_assert_ptr_nonnull(strstr(text, "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"two\"}"));
    /* TestP: one open line (from its CONT, 6 ms), no close line of the open taken back */
    const char *o = strstr(text, "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"TestP\"");
    ck_assert_ptr_nonnull(o);
    ck_assert_ptr_nonnull(strstr(o, "\"startTime\":6.0,"));
    ck_assert_ptr_null(strstr(o + 1, "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"TestP\""));
    const char *cl = strstr(text, "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"TestP\"}");
    ck_assert_ptr_nonnull(cl);
    ck_assert_ptr_null(strstr(cl + 1, "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"TestP\"}"));
    free(text);
    testlog_free(tl);
    stream_close(s);
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(test_many_open_bounded)
{
    /* thousands open at once (a suite's nested subtests): none is ended before its end */
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TBPL, false);
    char line[64];
    for (int i = 0; i < 9000; i++) {
        snprintf(line, sizeof line, "TEST-START | t%d", i);
        feed(tl, line, i);
    }
    struct cap open = {0};
    testlog_each_open(tl, collect, &open);
    ck_assert_uint_eq(open.n, 9000);
    ck_assert_str_eq(open.lines[0], "t0");
    cap_free(&open);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.tests, 0);
    for (int i = 8999; i >= 0; i--) {
        snprintf(line, sizeof line, "TEST-PASS | t%d | took 1ms", i);
        feed(tl, line, 10000 + i);
    }
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.by_status[TL_STATUS_PASS], 9000);
    ck_assert_uint_eq(st.by_status[TL_STATUS_INCOMPLETE], 0);
    ck_assert_uint_eq(st.ends_unmatched, 0);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

START_TEST(test_open_memory_bounded)
{
    /* the open tests' memory is bounded: past TESTLOG_OPEN_BYTES_MAX a start is not tracked,
     * and no open test is ended for it; the untracked test's result is a test of its own */
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TBPL, false);
    size_t idn = TESTLOG_ID_MAX - 16;
    char *line = malloc(idn + 64);
    ck_assert_ptr_nonnull(line);
    size_t fit = (size_t)(TESTLOG_OPEN_BYTES_MAX / idn), n = fit + 10;
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(line, 64, "TEST-START | %08zu", i);
        memset(line + k, 'x', idn - 8);
        line[(size_t)k + idn - 8] = '\0';
        feed(tl, line, (double)i);
    }
    struct cap open = {0};
    testlog_each_open(tl, collect, &open);
    ck_assert_uint_lt(open.n, n);
    ck_assert_uint_gt(open.n, fit / 2);
    ck_assert_uint_eq(strlen(open.lines[0]), idn); /* kept whole */
    size_t kept = open.n;
    cap_free(&open);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.tests, 0); /* none ended for want of room */
    int k = snprintf(line, 64, "TEST-PASS | %08zu", n - 1);
    memset(line + k, 'x', idn - 8);
    memcpy(line + k + idn - 8, " | took 1ms", sizeof " | took 1ms"); /* with its NUL */
    feed(tl, line, (double)n);
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.by_status[TL_STATUS_PASS], 1);
    testlog_each_open(tl, collect, &open);
    ck_assert_uint_eq(open.n, kept);
    cap_free(&open);
    free(line);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

START_TEST(test_counts_and_times)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TBPL, false);
    char line[80];
    for (int i = 0; i < 30; i++) {
        snprintf(line, sizeof line, "TEST-START | t%02d", i);
        feed(tl, line, 1000 * i);
        int dur = (i * 7) % 30; /* a permutation of 0..29 */
        if (i % 5 == 0)
            snprintf(line, sizeof line, "TEST-UNEXPECTED-FAIL | t%02d | bad", i);
        else
            snprintf(line, sizeof line, "TEST-PASS | t%02d | took %dms", i, dur);
        feed(tl, line, 1000 * i + dur);
        if (i % 5 == 0)
            feed(tl, "TEST-INFO expected PASS | took 1ms", 1000 * i + dur + 0.5);
    }
    /* each test's marker spans its time: t17 the longest (17*7 % 30 == 29) */
    assert_has(&c, "M test 17000.000 17029.000 2 {\"type\":\"Test\",\"test\":\"t17\"", "\"status\":\"PASS\"");
    assert_has(&c, "M test 5000.000 5005.000 2 {\"type\":\"Test\",\"test\":\"t05\"",
               "\"status\":\"FAIL\",\"expected\":\"PASS\"");
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.tests, 30);
    ck_assert_uint_eq(st.unexpected, 6);
    ck_assert_uint_eq(st.by_status[TL_STATUS_PASS], 24);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* Every test marker keeps its result's message, bounded. */
START_TEST(test_messages_kept)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_ALL, false);
    feed(tl, "{\"action\":\"test_start\",\"time\":1767225600100,\"test\":\"dom/a.html\"}", 100);
    feed(tl, "{\"action\":\"test_end\",\"time\":1767225600200,\"test\":\"dom/a.html\","
             "\"status\":\"FAIL\",\"expected\":\"PASS\",\"message\":\"boom (line 26)\"}", 200);
    assert_has(&c, "M test 100.000 200.000 2 {\"type\":\"Test\",\"test\":\"dom/a.html\"",
               "\"status\":\"FAIL\",\"expected\":\"PASS\",\"message\":\"boom (line 26)\"");
    static char big[3 * TESTLOG_MESSAGE_MAX + 64];
    int o = snprintf(big, sizeof big, "TEST-UNEXPECTED-FAIL | dom/b.html | ");
    for (size_t i = 0; i < 3 * TESTLOG_MESSAGE_MAX / 2; i++)
        o += snprintf(big + o, sizeof big - (size_t)o, "\xc3\xa9"); /* é: never cut inside */
    feed(tl, "TEST-START | dom/b.html", 300);
    feed(tl, big, 310);
    feed(tl, "TEST-INFO took 10ms", 320);
    ssize_t k = cap_find(&c, "M test 300.000 310.000 2 ");
    ck_assert_int_ge(k, 0);
    const char *m = strstr(c.lines[k], "\"message\":\"");
    ck_assert_ptr_nonnull(m);
    const char *e = strchr(m + 11, '"');
    ck_assert_uint_eq((size_t)(e - m - 11), TESTLOG_MESSAGE_MAX);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* The short name drops only a path-like prefix: a file's directories, never a slash inside a
 * parameter or a typed test's name. */
START_TEST(test_short_names)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_ALL, false);
    feed(tl, "dateutil/test/test_tz.py::test_gettz_badzone[Fake.Region/Abcdefghijklmnop] PASSED [ 5%]", 1);
    feed(tl, "[ RUN      ] ATypedDeathTest/0.ShouldRunFirst", 2);
    feed(tl, "[       OK ] ATypedDeathTest/0.ShouldRunFirst (0 ms)", 3);
    feed(tl, "TEST-START | dom/base/test/test_a.html", 4);
    feed(tl, "TEST-PASS | dom/base/test/test_a.html | took 1ms", 5);
    feed(tl, "--- PASS: TestReadFormLimits/values=0/files=1 (0.00s)", 6);
    ck_assert_int_ge(cap_find(&c, "\"test\":\"dateutil/test/test_tz.py::test_gettz_badzone[Fake.Region/"
                                  "Abcdefghijklmnop]\",\"name\":\"test_tz.py::test_gettz_badzone[Fake."
                                  "Region/Abcdefghijklmnop]\""),
                     0);
    ck_assert_int_ge(cap_find(&c, "\"name\":\"ATypedDeathTest/0.ShouldRunFirst\""), 0);
    ck_assert_int_ge(cap_find(&c, "\"test\":\"dom/base/test/test_a.html\",\"name\":\"test_a.html\""), 0);
    ck_assert_int_ge(cap_find(&c, "\"name\":\"TestReadFormLimits/values=0/files=1\""), 0);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

/* Open tests are listed (timeout marker, summary) by the names their markers get. */
START_TEST(test_open_names_scoped)
{
    struct cap c = {0}, open = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_ALL, false);
    feed(tl, "{\"Action\":\"run\",\"Package\":\"os/exec\",\"Test\":\"TestHang\"}", 1);
    feed(tl, "TEST-START | dom/a.html", 2);
    testlog_each_open(tl, collect, &open);
    ck_assert_uint_eq(open.n, 2);
    ck_assert_str_eq(open.lines[0], "os/exec/TestHang");
    ck_assert_str_eq(open.lines[1], "dom/a.html");
    testlog_finish(tl, MS(3), true);
    ck_assert_int_ge(cap_find(&c, "\"test\":\"os/exec/TestHang\",\"name\":\"TestHang\",\"scope\":\"os/exec\","
                                  "\"status\":\"TIMEOUT\""),
                     0);
    testlog_free(tl);
    cap_free(&c);
    cap_free(&open);
}
END_TEST

/* A TAP harness's child runs a test file (its last argument): prove run by its interpreter or
 * directly, make test's Test::Harness; not a child of anything else, nor a child without one. At
 * a stop it is opened from its process's start, once, and ends as the run did. */
#define CMD(s) s, sizeof s - 1
START_TEST(test_harness_child)
{
    const char *f;
    size_t n;
    ck_assert(testlog_harness_child(CMD("/usr/bin/perl\0/usr/bin/prove\0-v\0t\0"),
                                    CMD("/usr/bin/perl\0-w\0t/x.t\0"), &f, &n));
    ck_assert_int_eq((int)n, 5);
    ck_assert_int_eq(memcmp(f, "t/x.t", 5), 0);
    ck_assert(testlog_harness_child(CMD("prove\0-r\0"), CMD("/usr/bin/perl\0t/y.t\0"), &f, &n));
    ck_assert(testlog_harness_child(CMD("/usr/bin/perl\0-MExtUtils::Command::MM\0-MTest::Harness\0-e\0x\0t/a.t\0"),
                                    CMD("/usr/bin/perl\0-Iblib/lib\0t/a.t\0"), &f, &n));
    ck_assert_int_eq(memcmp(f, "t/a.t", 5), 0);
    ck_assert(!testlog_harness_child(CMD("make\0test\0"), CMD("/usr/bin/perl\0t/x.t\0"), &f, &n));
    ck_assert(!testlog_harness_child(CMD("/usr/bin/perl\0/usr/bin/prove\0"), CMD("/usr/bin/perl\0"), &f, &n));
    ck_assert(!testlog_harness_child(CMD("/usr/bin/perl\0/usr/bin/prove\0"), CMD("sh\0-c\0"), &f, &n));
    ck_assert(!testlog_harness_child(CMD("/usr/bin/perl\0approve\0"), CMD("/usr/bin/perl\0t/x.t\0"), &f, &n));

    struct cap c = {0}, open = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_ALL, false);
    ck_assert_uint_eq(testlog_open_count(tl), 0);
    testlog_open_running(tl, "t/x.t", 5, MS(1));
    testlog_open_running(tl, "t/x.t", 5, MS(2)); /* open already */
    ck_assert_uint_eq(testlog_open_count(tl), 1);
    testlog_each_open(tl, collect, &open);
    ck_assert_uint_eq(open.n, 1);
    ck_assert_str_eq(open.lines[0], "t/x.t");
    testlog_finish(tl, MS(9), true);
    ck_assert_int_ge(cap_find(&c, "\"test\":\"t/x.t\","), 0);
    ck_assert_int_ge(cap_find(&c, "\"status\":\"TIMEOUT\""), 0);
    testlog_free(tl);
    cap_free(&c);
    cap_free(&open);
}
END_TEST

START_TEST(test_no_formats_no_sink)
{
    struct testlog *tl;
    struct testlog_config cfg = {0};
    ck_assert_int_eq(testlog_new(&cfg, NULL, NULL, &tl), 0);
    testlog_line(tl, 1, "TEST-START | x", 14, false, 5);
    testlog_finish(tl, 10, false);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.lines, 1);
    ck_assert_uint_eq(st.recognised, 0);
    testlog_free(tl);
    cfg.formats = TL_FMT_ALL;
    ck_assert_int_eq(testlog_new(&cfg, NULL, NULL, &tl), 0);
    testlog_line(tl, 2, "TEST-START | x", 14, false, 5);
    testlog_finish(tl, 10, false);
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.tests, 1);
    testlog_free(tl);
    testlog_free(NULL);
}
END_TEST

/* The page faults a sanitizer's or valgrind's own bookkeeping takes are not the program's. */
#if defined(__SANITIZE_ADDRESS__)
#define FAULTS_ARE_OURS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAULTS_ARE_OURS 0
#endif
#endif
#ifndef FAULTS_ARE_OURS
#define FAULTS_ARE_OURS 1
#endif

/* Every parser on, as at every run's start: starting touches what it uses, not the 400 KiB the
 * parsers' states may use later (clearing them cost a page fault every 4 KiB). */
START_TEST(test_start_touches_little)
{
    struct testlog_config cfg = {.formats = TL_FMT_ALL};
    struct testlog *tl;
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    ck_assert_int_eq(testlog_new(&cfg, NULL, NULL, &tl), 0);
    getrusage(RUSAGE_SELF, &b);
    long faults = b.ru_minflt - a.ru_minflt;
    if (FAULTS_ARE_OURS && !getenv("RESMON_UNDER_VALGRIND"))
        ck_assert_msg(faults < 48, "testlog_new touched %ld pages", faults);
    testlog_line(tl, 1, "TEST-START | x", 14, false, 5);
    testlog_finish(tl, 10, false);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.tests, 1);
    testlog_free(tl);
}
END_TEST

/* ---- the prefilter changes nothing ---- */

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Run text ('\n'-separated lines) through all formats, with or without the prefilter. Times are
 * far beyond the monotonic clock now, so results do not depend on when the test runs. */
static void prefilter_run(struct cap *c, const char *text, size_t len, unsigned formats,
                          bool no_prefilter)
{
    struct testlog_config cfg = {0};
    cfg.formats = formats;
    cfg.t0_ns = UINT64_C(1) << 60;
    cfg.wall_at_t0_ms = WALL0;
    cfg.log_info = true;
    cfg.process_output = true;
    cfg.no_prefilter = no_prefilter;
    struct testlog_probe pr = {fake_cpu, NULL};
    fake_cpu_ns = 0;
    struct testlog *tl;
    ck_assert_int_eq(testlog_new(&cfg, cap_sink(c), &pr, &tl), 0);
    uint64_t t = cfg.t0_ns + UINT64_C(5000000000);
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        t += 1000000;
        testlog_line(tl, 1, text + i, end - i, false, t);
        i = end + 1;
    }
    testlog_finish(tl, t + 1000000, false);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    char *s;
    ck_assert_int_ge(asprintf(&s, "stats %llu %llu %llu", (unsigned long long)st.lines,
                              (unsigned long long)st.recognised, (unsigned long long)st.tests), 0);
    cap_add(c, s);
    testlog_free(tl);
}

static void prefilter_same_for(const char *what, const char *text, size_t len, unsigned formats)
{
    struct cap a = {0}, b = {0};
    prefilter_run(&a, text, len, formats, false);
    prefilter_run(&b, text, len, formats, true);
    ck_assert_msg(a.n == b.n, "%s: %zu records with the prefilter, %zu without", what, a.n, b.n);
    for (size_t i = 0; i < a.n; i++)
        ck_assert_msg(!strcmp(a.lines[i], b.lines[i]), "%s: record %zu differs:\n  %s\n  %s", what,
                      i, a.lines[i], b.lines[i]);
    cap_free(&a);
    cap_free(&b);
}

/* With all formats, and with each alone (a format alone meets lines no other format claims). */
static void prefilter_same(const char *what, const char *text, size_t len)
{
    prefilter_same_for(what, text, len, TL_FMT_ALL);
    for (unsigned bit = 1; bit < TL_FMT_ALL; bit <<= 1) {
        char w[256];
        snprintf(w, sizeof w, "%s (format bit %#x alone)", what, bit);
        prefilter_same_for(w, text, len, bit);
    }
}

struct text {
    char *p;
    size_t n, cap;
};

static void text_add(struct text *t, const char *s, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        t->cap = (t->n + n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        ck_assert_ptr_nonnull(t->p);
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = '\0';
}

/* The logs of tests/fixtures/testlog (*.txt, *.log), so that a new format's fixture is held to
 * the prefilter too without being listed here. */
static int prefilter_fixture(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 4 && (!strcmp(e->d_name + n - 4, ".txt") || !strcmp(e->d_name + n - 4, ".log"));
}

/* Lines no parser takes alone, some of which a parser waiting for a continuation may. */
static const char *const prefilter_noise[] = {
    "plain output", "- dash", "x.y z", "ok", "FAILED", "PASSED [ 50%]", "  ---", "  ...", "",
    "   duration_ms: 12", "test_x (m.C.test_x)", "docstring ... ok", "ignored", "\x1b[1mbold\x1b[0m",
    "12 INFO plain", "a\x1b[1m.b c", "\r", "[task 2026-01-01T00:00:00.000Z] ", "#", "{", "[ x ]",
    "a\x1b[ q.py::t PASSED",
};

/* Each line as is, after a CI prefix, coloured, and behind prefixes and a colour. */
static const char *const prefilter_wrap[][2] = {
    {"", ""},
    {"[task 2026-01-01T00:00:00.000Z] ", ""},
    {"\x1b[32m", "\x1b[0m"},
    {"12:34:56     INFO - 7 INFO \x1b[1m", "\r"},
};

START_TEST(test_prefilter_changes_nothing)
{
    struct text all[NELEM(prefilter_wrap)] = {{0}};
    struct text mixed = {0};
    size_t noise = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/testlog", fixture_dir());
    struct dirent **fixtures;
    int nfixtures = scandir(dir, &fixtures, prefilter_fixture, alphasort);
    ck_assert_msg(nfixtures >= 10, "%s: %d logs", dir, nfixtures);
    for (int f = 0; f < nfixtures; f++) {
        char path[sizeof dir + sizeof fixtures[f]->d_name + 1];
        snprintf(path, sizeof path, "%s/%s", dir, fixtures[f]->d_name);
        size_t len;
        char *log = slurp(path, &len);
        ck_assert_msg(log != NULL, "fixture %s", path);
        for (size_t w = 0; w < NELEM(prefilter_wrap); w++) {
            struct text t = {0};
            for (size_t i = 0; i < len;) {
                const char *nl = memchr(log + i, '\n', len - i);
                size_t end = nl ? (size_t)(nl - log) : len;
                const char *pre = prefilter_wrap[w][0], *post = prefilter_wrap[w][1];
                struct text *dst[] = {&t, &all[w]};
                for (size_t d = 0; d < 2; d++) {
                    text_add(dst[d], pre, strlen(pre));
                    text_add(dst[d], log + i, end - i);
                    text_add(dst[d], post, strlen(post));
                    text_add(dst[d], "\n", 1);
                }
                if (w == 0) { /* every fixture line, then noise, in one stream */
                    text_add(&mixed, log + i, end - i);
                    text_add(&mixed, "\n", 1);
                    const char *z = prefilter_noise[noise++ % NELEM(prefilter_noise)];
                    text_add(&mixed, z, strlen(z));
                    text_add(&mixed, "\n", 1);
                }
                i = end + 1;
            }
            char what[sizeof fixtures[f]->d_name + 32];
            snprintf(what, sizeof what, "%s wrapped %zu", fixtures[f]->d_name, w);
            prefilter_same(what, t.p, t.n);
            free(t.p);
        }
        free(log);
        free(fixtures[f]);
    }
    free(fixtures);
    /* all formats one after another: parsers left waiting by one fixture meet the next */
    for (size_t w = 0; w < NELEM(prefilter_wrap); w++) {
        prefilter_same("all fixtures", all[w].p, all[w].n);
        free(all[w].p);
    }
    prefilter_same("fixtures with noise", mixed.p, mixed.n);
    free(mixed.p);
}
END_TEST

/* Lines built at random from CI prefixes, escapes, padding and the starts of every format's lines,
 * so that prefixes and escapes fall on both sides of the 64 bytes the prefilter reads. */
START_TEST(test_prefilter_random_lines)
{
    static const char *const pieces[] = {
        "[task 2026-01-01T00:00:00.000Z] ", "[task 2026-01-01T00:00:00.000Z]", "[task x", "12:34:56     INFO - ",
        "12:34:56 ERROR - ", "12:34:56  INFO -", "7 INFO ", "123456789012345678901 INFO ", "\x1b[1m",
        "\x1b[0m", "\x1b(B", "\x1b", "        ", " ", "TEST-START | t", "TEST-PASS | t | took 1ms",
        "TEST-UNEXPECTED-FAIL | t | m", "TEST-INFO expected PASS", "ok 1 - a", "not ok 2 b", "1..3",
        "TAP version 13", "# Subtest: s", "  ---", "  ...", "--- PASS: TestA (0.01s)", "=== RUN   TestA",
        "ok  \tpkg\t0.1s", "[ RUN      ] A.B", "[       OK ] A.B (1 ms)", "[----------] 1 test from A",
        "t.py::test_a PASSED", "t.py::test_b ", "PASSED", "[gw0] PASSED t.py::x", "test_x (m.C) ... ok",
        "test_y (m.C) ... ", "ok", "test a::b ... ok", "test c ... ", "running 2 tests",
        "c.c:1:P:tc:t:0: Passed", "Running suite(s): S", "100%: Checks: 1, Failures: 0, Errors: 0",
        " 0:01.00 TEST_START: d", " 0:01.50 TEST_END: PASS", "{\"action\":\"test_start\",\"test\":\"m\",\"time\":1}",
        "{\"Action\":\"run\",\"Test\":\"T\",\"Package\":\"p\"}", "plain", "x.y", "-", ".", "\r",
    };
    /* Prefixes that end on either side of byte 64, then escapes inside a format's first bytes. */
    static const char *const heads[] = {"", "[task 2026-01-01T00:00:00.000Z] ", "7 INFO "};
    struct text e = {0};
    for (size_t z = 30; z < 64; z++) { /* a Taskcluster prefix after another, ending near byte 64 */
        text_add(&e, "7 INFO [task ", 13);
        for (size_t q = 0; q < z; q++)
            text_add(&e, "0", 1);
        text_add(&e, "Z] TEST-START | z\n", 18);
    }
    static const char *const tails[] = {"", "x", " TEST-START | t", "\x1b[1m", "TEST-START | u",
                                        "--- PASS: TestB (0.01s)", "  ok 3 - c", "- dash"};
    for (size_t h = 0; h < NELEM(heads); h++)
        for (size_t sp = 1; sp < 60; sp++)
            for (size_t tl_ = 0; tl_ < NELEM(tails); tl_++)
                for (int dash = 0; dash < 3; dash++) {
                    text_add(&e, heads[h], strlen(heads[h]));
                    text_add(&e, "12:34:56", 8);
                    for (size_t q = 0; q < sp; q++)
                        text_add(&e, " ", 1);
                    text_add(&e, dash == 0 ? "INFO - " : dash == 1 ? "INFO -" : "INFO", dash == 0 ? 7 : dash == 1 ? 6 : 4);
                    text_add(&e, tails[tl_], strlen(tails[tl_]));
                    text_add(&e, "\n", 1);
                }
    for (size_t i = 0; i < NELEM(pieces); i++) {
        size_t n = strlen(pieces[i]);
        for (size_t cut = 1; cut < n && cut < 4; cut++) {
            text_add(&e, pieces[i], cut);
            text_add(&e, "\x1b[32m", 5);
            text_add(&e, pieces[i] + cut, n - cut);
            text_add(&e, "\n", 1);
        }
    }
    prefilter_same("prefixes at byte 64, escapes in a format's first bytes", e.p, e.n);
    free(e.p);

    uint64_t x = 7;
    for (int round = 0; round < 40; round++) {
        struct text t = {0};
        for (int line = 0; line < 400; line++) {
            x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
            int k = 1 + (int)((x >> 33) % 4);
            for (int j = 0; j < k; j++) {
                x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
                const char *p = pieces[(x >> 33) % NELEM(pieces)];
                text_add(&t, p, strlen(p));
                if ((x >> 20) % 5 == 0) { /* padding moves what follows across the 64-byte mark */
                    size_t pad = (x >> 40) % 70;
                    for (size_t q = 0; q < pad; q++)
                        text_add(&t, (x >> 50) % 2 ? " " : "a", 1);
                }
            }
            text_add(&t, "\n", 1);
        }
        char what[64];
        snprintf(what, sizeof what, "random round %d", round);
        prefilter_same(what, t.p, t.n);
        free(t.p);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("testlog");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_parse_formats);
    tcase_add_test(tc, test_strip_prefixes);
    tcase_add_test(tc, test_open_table_and_finish);
    tcase_add_test(tc, test_tap_cost_from_anchor);
    tcase_add_test(tc, test_tap_cost_held_result);
    tcase_add_test(tc, test_tap_held_at_end);
    tcase_add_test(tc, test_cost_from_line_start);
    tcase_add_test(tc, test_peak_rss_is_the_tests_own);
    tcase_add_test(tc, test_start_line_read_late);
    tcase_add_test(tc, test_go_resume_and_late_end);
    tcase_add_test(tc, test_open_lines_within_a_chunk);
    tcase_add_test(tc, test_many_open_bounded);
    tcase_add_test(tc, test_open_memory_bounded);
    tcase_add_test(tc, test_counts_and_times);
    tcase_add_test(tc, test_no_formats_no_sink);
    tcase_add_test(tc, test_start_touches_little);
    tcase_add_test(tc, test_messages_kept);
    tcase_add_test(tc, test_short_names);
    tcase_add_test(tc, test_open_names_scoped);
    tcase_add_test(tc, test_harness_child);
    tcase_add_test(tc, test_prefilter_changes_nothing);
    tcase_add_test(tc, test_prefilter_random_lines);
    suite_add_tcase(s, tc);
    return check_run(s);
}
