/* Unit tests of the JSON writer: escaping, UTF-8 repair, numbers, commas. */
#include "jsonw.h"

#include <check.h>
#include "check_run.h"
#include <stdlib.h>
#include <string.h>

#define W_EQ(w, s) ck_assert_str_eq((w)->buf ? (w)->buf : "", s)

START_TEST(test_object_commas)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_obj_open(&w);
    jsonw_kv_str(&w, "type", "Test");
    jsonw_kv_uint(&w, "n", 18446744073709551615ULL);
    jsonw_key(&w, "a");
    jsonw_arr_open(&w);
    jsonw_int(&w, -1);
    jsonw_null(&w);
    jsonw_bool(&w, true);
    jsonw_obj_open(&w);
    jsonw_obj_close(&w);
    jsonw_arr_close(&w);
    jsonw_obj_close(&w);
    W_EQ(&w, "{\"type\":\"Test\",\"n\":18446744073709551615,\"a\":[-1,null,true,{}]}");
    ck_assert(!jsonw_failed(&w));
    jsonw_release(&w);
}
END_TEST

START_TEST(test_escape_and_utf8)
{
    struct jsonw w;
    jsonw_init(&w);
    const char in[] = "a\"\\\n\x01\x7f \xc3\xa9 \xff \xe2\x82 \xed\xa0\x80 \xf0\x9f\x98\x80";
    jsonw_strn(&w, in, sizeof in - 1);
    W_EQ(&w, "\"a\\\"\\\\\\n\\u0001\x7f \xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
             "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80\"");
    jsonw_reset(&w);
    jsonw_strn(&w, "x\0y", 3);
    W_EQ(&w, "\"x\\u0000y\"");
    jsonw_release(&w);
}
END_TEST

START_TEST(test_doubles)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_arr_open(&w);
    jsonw_double(&w, 100.0, 3);
    jsonw_double(&w, 0.0004, 3);
    jsonw_double(&w, 1234.5678, 3);
    jsonw_double(&w, -0.0001, 3);
    jsonw_double(&w, 1e300, 1);
    jsonw_double(&w, 0.0 / 0.0, 3);
    jsonw_arr_close(&w);
    ck_assert(strncmp(w.buf, "[100.0,0.0,1234.568,0.0,1", 25) == 0);
    ck_assert(strstr(w.buf, "e") == NULL);
    ck_assert(strstr(w.buf, ",null]") != NULL);
    jsonw_release(&w);
}
END_TEST

START_TEST(test_utf8_prefix)
{
    ck_assert_uint_eq(utf8_valid_prefix("ab\xc3\xa9", 4), 4);
    ck_assert_uint_eq(utf8_valid_prefix("ab\xc3", 3), 2);
    ck_assert_uint_eq(utf8_valid_prefix("\xe2\x82", 2), 0);
}
END_TEST

START_TEST(test_depth_limit)
{
    struct jsonw w;
    jsonw_init(&w);
    for (int i = 0; i < JSONW_MAX_DEPTH + 1; i++)
        jsonw_arr_open(&w);
    ck_assert(jsonw_failed(&w));
    jsonw_release(&w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jsonw");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_object_commas);
    tcase_add_test(tc, test_escape_and_utf8);
    tcase_add_test(tc, test_doubles);
    tcase_add_test(tc, test_utf8_prefix);
    tcase_add_test(tc, test_depth_limit);
    suite_add_tcase(s, tc);
    return check_run(s);
}
