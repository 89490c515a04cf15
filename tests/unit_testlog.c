/* Unit tests of the test-log core: --parse lists, stripping for matching, the open-test table,
 * per-test cost, finishing, statistics. */
#include "testlog_capture.h"
#include "check_run.h"

#include <errno.h>

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
                                  "timed out\",\"color\":\"yellow\",\"cpuTime\":20.0,\"maxRSS\":300}"),
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

START_TEST(test_many_open_bounded)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TBPL, false);
    char line[64];
    for (int i = 0; i < 3000; i++) {
        snprintf(line, sizeof line, "TEST-START | t%d", i);
        feed(tl, line, i);
    }
    struct cap open = {0};
    testlog_each_open(tl, collect, &open);
    ck_assert_uint_eq(open.n, 1024);
    ck_assert_str_eq(open.lines[0], "t1976"); /* the oldest were closed as INCOMPLETE */
    cap_free(&open);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.by_status[TL_STATUS_INCOMPLETE], 3000 - 1024);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

START_TEST(test_slowest_and_unexpected)
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
    const struct testlog_result *r;
    size_t n = testlog_slowest(tl, &r);
    ck_assert_uint_eq(n, TESTLOG_SLOWEST_MAX);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(r[i].duration_ns, (uint64_t)(29 - i) * 1000000);
    ck_assert_str_eq(r[0].test, "t17"); /* 17*7 % 30 == 29 */
    ck_assert_str_eq(r[0].status, "PASS");
    ck_assert_ptr_null(r[0].expected);
    n = testlog_unexpected(tl, &r);
    ck_assert_uint_eq(n, 6);
    ck_assert_str_eq(r[1].test, "t05");
    ck_assert_str_eq(r[1].status, "FAIL");
    ck_assert_str_eq(r[1].expected, "PASS");
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.tests, 30);
    ck_assert_uint_eq(st.unexpected, 6);
    ck_assert_uint_eq(st.by_status[TL_STATUS_PASS], 24);
    testlog_free(tl);
    cap_free(&c);
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

int main(void)
{
    Suite *s = suite_create("testlog");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_parse_formats);
    tcase_add_test(tc, test_strip_prefixes);
    tcase_add_test(tc, test_open_table_and_finish);
    tcase_add_test(tc, test_many_open_bounded);
    tcase_add_test(tc, test_slowest_and_unexpected);
    tcase_add_test(tc, test_no_formats_no_sink);
    suite_add_tcase(s, tc);
    return check_run(s);
}
