/* Unit tests of the mach parser through the test-log core (golden marker capture). */
#include "testlog_capture.h"
#include "check_run.h"

#include "testlog/event.h"

START_TEST(test_golden)
{
    golden("mach", "mach", TL_FMT_MACH, false, false, false);
}
END_TEST

START_TEST(test_golden_all_formats)
{
    /* the same log with every format enabled gives the same markers */
    golden("mach", "mach", TL_FMT_ALL, false, false, false);
}
END_TEST

START_TEST(test_disabled)
{
    /* with this format off, only the other format's line opens a test */
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_ALL & ~TL_FMT_MACH, false);
    feed(tl, "TEST-START | dom/tbpl.html", 1);
    feed(tl, " 0:00.10 TEST_START: dom/mach.html", 2);
    testlog_finish(tl, MS(3), false);
    ck_assert_uint_eq(cap_count(&c, "M test "), 1);
    ck_assert_int_lt(cap_find(&c, "dom/mach.html"), 0);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

START_TEST(test_end_closes_most_recent)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_MACH, false);
    feed(tl, " 0:00.10 TEST_START: one", 10);
    feed(tl, " 0:00.20 TEST_START: two", 20);
    feed(tl, " 0:00.30 TEST_END: PASS", 30);
    feed(tl, " 0:00.40 TEST_END: TIMEOUT, expected PASS - took too long", 40);
    feed(tl, " 0:00.50 TEST_END: PASS", 50); /* nothing open: dropped, counted */
    ck_assert_int_ge(cap_find(&c, "M test 20.000 30.000 2 {\"type\":\"Test\",\"test\":\"two\""), 0);
    ck_assert_int_ge(cap_find(&c, "M test 10.000 40.000 2 {\"type\":\"Test\",\"test\":\"one\","
                                  "\"name\":\"one\",\"status\":\"TIMEOUT\",\"expected\":\"PASS\","
                                  "\"message\":\"took too long\",\"color\":\"purple\"}"),
                     0);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.tests, 2);
    ck_assert_uint_eq(st.ends_unmatched, 1);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("testlog_mach");
    TCase *tc = tcase_create("mach");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_golden);
    tcase_add_test(tc, test_golden_all_formats);
    tcase_add_test(tc, test_disabled);
    tcase_add_test(tc, test_end_closes_most_recent);
    suite_add_tcase(s, tc);
    return check_run(s);
}
