/* Unit tests of the mozlog parser through the test-log core: golden marker captures of fixture
 * logs (every action and status, producer deviations, malformed input), plus huge lines. */
#include "testlog_capture.h"
#include "check_run.h"

#include <math.h>

#include "base/util.h"
#include "testlog/event.h"

START_TEST(test_golden_all)
{
    golden("mozlog_all", "mozlog_all", TL_FMT_ALL, false, false, false);
}
END_TEST

START_TEST(test_golden_all_verbose)
{
    /* INFO/DEBUG log lines and process_output only when asked; the run timed out */
    golden("mozlog_all", "mozlog_all_verbose", TL_FMT_ALL, true, true, true);
}
END_TEST

START_TEST(test_golden_deviations)
{
    golden("mozlog_deviations", "mozlog_deviations", TL_FMT_MOZLOG, false, false, false);
}
END_TEST

START_TEST(test_exact_test_marker)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_MOZLOG, true);
    feed(tl, "{\"action\":\"test_start\",\"time\":1767225600100,\"test\":\"dom/x/test_a.js\"}", 101);
    testlog_tree_sample(tl, 5000);
    testlog_tree_sample(tl, 3000);
    feed(tl,
         "{\"action\":\"test_end\",\"time\":1767225600300,\"test\":\"dom/x/test_a.js\","
         "\"status\":\"TIMEOUT\",\"expected\":\"PASS\",\"message\":\"timed out\","
         "\"extra\":{\"timeoutfactor\":4}}",
         301);
    ck_assert_uint_eq(c.n, 4);
    ck_assert_str_eq(c.lines[0], "S {\"type\":\"open\",\"kind\":\"test\",\"key\":\"dom/x/test_a.js\","
                                 "\"name\":\"test\",\"startTime\":100.0,\"category\":2,\"cost\":true,\"data\":{"
                                 "\"type\":\"Test\",\"test\":\"dom/x/test_a.js\",\"name\":\"test_a.js\"}}");
    ck_assert_str_eq(c.lines[1],
                     "M test 100.000 300.000 2 {\"type\":\"Test\",\"test\":\"dom/x/test_a.js\","
                     "\"name\":\"test_a.js\",\"status\":\"TIMEOUT\",\"expected\":\"PASS\","
                     "\"message\":\"timed out\",\"timeoutfactor\":4,\"color\":\"purple\","
                     "\"cpuTime\":10.0,\"maxRSS\":5000}");
    /* the unexpected result again, an instant in a row of its own: seen however short the test */
    ck_assert_str_eq(c.lines[2], "M unexpected result 300.000 - 0 {\"type\":\"TestResult\",\"test\":\"dom/x/test_a.js\","
                                 "\"status\":\"TIMEOUT\",\"expected\":\"PASS\",\"message\":\"timed out\","
                                 "\"color\":\"purple\"}");
    ck_assert_str_eq(c.lines[3], "S {\"type\":\"close\",\"kind\":\"test\",\"key\":\"dom/x/test_a.js\"}");
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.tests, 1);
    ck_assert_uint_eq(st.unexpected, 1);
    ck_assert_uint_eq(st.by_status[TL_STATUS_TIMEOUT], 1);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

START_TEST(test_process_exit_unreported)
{
    /* a process_exit without its exitcode: the marker says so rather than lacking an exit (its
     * label reads the command, then the exit) */
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_MOZLOG, true);
    feed(tl, "{\"action\":\"process_start\",\"time\":1767225600100,\"process\":\"77\",\"command\":\"xpcshell\"}", 101);
    feed(tl, "{\"action\":\"process_exit\",\"time\":1767225600200,\"process\":\"77\"}", 201);
    bool found = false;
    for (size_t i = 0; i < c.n; i++)
        if (strstr(c.lines[i], "\"type\":\"LogProcess\"")) {
            ck_assert_msg(strstr(c.lines[i], "\"cmd\":\"xpcshell\",\"pid\":77,\"exit\":\"not reported\",\"color\":\"grey\""),
                          "%s", c.lines[i]);
            found = true;
        }
    ck_assert(found);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

static char *huge_suite_start(bool source_first, size_t tests)
{
    size_t cap = tests * 40 + 1000, n = 0;
    char *b = malloc(cap);
    n += (size_t)sprintf(b + n, "{%s\"time\":1767225600100,\"tests\":{\"default\":[",
                         source_first ? "\"action\":\"suite_start\",\"source\":\"reftest\"," : "");
    for (size_t i = 0; i < tests; i++)
        n += (size_t)sprintf(b + n, "%s\"layout/reftests/t%06zu.html\"", i ? "," : "", i);
    n += (size_t)sprintf(b + n, "]}%s}", source_first ? "" : ",\"action\":\"suite_start\",\"source\":\"late\"");
    return b;
}

START_TEST(test_huge_suite_start)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_ALL, false);
    struct linebuf *lb;
    ck_assert_int_eq(linebuf_new(1 << 20, &lb), 0);
    struct golden_ctx g = {tl, 0};
    /* 3 MB line: cut by the splitter at 1 MiB, parsed as a 64 KiB prefix: still the suite */
    char *line = huge_suite_start(true, 80000);
    size_t len = strlen(line);
    ck_assert_uint_gt(len, 2 << 20);
    for (size_t i = 0; i < len; i += 65536)
        linebuf_feed(lb, line + i, MIN(65536, len - i), MS(100), golden_line, &g);
    linebuf_feed(lb, "\n", 1, MS(100), golden_line, &g);
    free(line);
    /* the action comes after the cut: not recognisable, skipped without harm */
    line = huge_suite_start(false, 80000);
    len = strlen(line);
    linebuf_feed(lb, line, len, MS(200), golden_line, &g);
    linebuf_feed(lb, "\n", 1, MS(200), golden_line, &g);
    free(line);
    /* a huge line that is complete below the prefix limit but malformed is not mozlog */
    feed(tl, "{\"action\":\"suite_end\"", 300);
    testlog_finish(tl, MS(400), false);
    ck_assert_uint_eq(cap_count(&c, "M suite "), 1);
    ck_assert_int_ge(cap_find(&c, "M suite 100.000 400.000 2 {\"type\":\"Text\",\"text\":\"reftest\"}"), 0);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.lines, 3);
    ck_assert_uint_eq(st.recognised, 1);
    linebuf_free(lb);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

START_TEST(test_parser_direct)
{
    struct tl_event ev[TL_MAX_EVENTS];
    void *st = calloc(1, tl_format_mozlog.state_size);
    const char *l = "{\"action\":\"test_end\",\"time\":1767225600.25,\"test\":[\"a\\/b.html\",\"==\","
                    "\"c.html\"],\"status\":\"PASS\",\"expected\":\"FAIL\",\"known_intermittent\":[\"PASS\"]}";
    ck_assert_int_eq(tl_format_mozlog.parse(st, l, strlen(l), 0, ev), 1);
    ck_assert_int_eq(ev[0].kind, TLE_TEST_END);
    ck_assert_double_eq_tol(ev[0].t.wall_ms, 1767225600.25, 1e-6);
    ck_assert_int_eq((int)ev[0].id.n, 18);
    ck_assert(memcmp(ev[0].id.p, "a/b.html == c.html", 18) == 0);
    ck_assert(ev[0].expected_known && !ev[0].unexpected);
    /* whitespace and key order do not matter; pid may be null */
    l = " { \"pid\" : null , \"action\" : \"crash\" , \"signature\" : \"sig\" } ";
    ck_assert_int_eq(tl_format_mozlog.parse(st, l, 0, 0, ev), 0);
    ck_assert_int_eq(tl_format_mozlog.parse(st, l, strlen(l), 0, ev), 1);
    ck_assert_int_eq(ev[0].kind, TLE_CRASH);
    ck_assert(isnan(ev[0].t.wall_ms));
    tl_format_mozlog.release(st);
    free(st);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("testlog_mozlog");
    TCase *tc = tcase_create("mozlog");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_golden_all);
    tcase_add_test(tc, test_golden_all_verbose);
    tcase_add_test(tc, test_golden_deviations);
    tcase_add_test(tc, test_exact_test_marker);
    tcase_add_test(tc, test_process_exit_unreported);
    tcase_add_test(tc, test_huge_suite_start);
    tcase_add_test(tc, test_parser_direct);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
