/* Unit tests of the tbpl parser through the test-log core (golden marker capture). */
#include "testlog_capture.h"
#include "check_run.h"

#include "testlog/event.h"

START_TEST(test_golden)
{
    golden("tbpl", "tbpl", TL_FMT_TBPL, false, false, false);
}
END_TEST

START_TEST(test_golden_all_formats)
{
    /* the same log with every format enabled gives the same markers */
    golden("tbpl", "tbpl", TL_FMT_ALL, false, false, false);
}
END_TEST

START_TEST(test_disabled)
{
    /* with this format off, only the other format's line opens a test */
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_ALL & ~TL_FMT_TBPL, false);
    feed(tl, "TEST-START | dom/tbpl.html", 1);
    feed(tl, " 0:00.10 TEST_START: dom/mach.html", 2);
    testlog_finish(tl, MS(3), false);
    ck_assert_uint_eq(cap_count(&c, "M test "), 1);
    ck_assert_int_lt(cap_find(&c, "dom/tbpl.html"), 0);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

START_TEST(test_pending_resolution)
{
    struct cap c = {0};
    struct testlog *tl = tl_make(&c, TL_FMT_TBPL, false);
    feed(tl, "TEST-START | t.html", 10);
    feed(tl, "TEST-UNEXPECTED-FAIL | t.html | boom", 20);
    ck_assert_uint_eq(cap_count(&c, "M "), 0); /* not yet known what it was */
    feed(tl, "TEST-INFO expected PASS | took 12ms", 30);
    /* the end is the unexpected line's arrival, not the TEST-INFO line's */
    ck_assert_int_ge(cap_find(&c, "M test 10.000 20.000 2 {\"type\":\"Test\",\"test\":\"t.html\","
                                  "\"name\":\"t.html\",\"status\":\"FAIL\",\"expected\":\"PASS\",\"message\":\"boom\","
                                  "\"color\":\"orange\"}"),
                     0);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    ck_assert_uint_eq(st.unexpected, 1);
    ck_assert_uint_eq(st.by_status[TL_STATUS_FAIL], 1);
    testlog_free(tl);
    cap_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("testlog_tbpl");
    TCase *tc = tcase_create("tbpl");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_golden);
    tcase_add_test(tc, test_golden_all_formats);
    tcase_add_test(tc, test_disabled);
    tcase_add_test(tc, test_pending_resolution);
    suite_add_tcase(s, tc);
    return check_run(s);
}
