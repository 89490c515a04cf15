/* Unit tests of the JSON scanner: what a strict and a loose reader accept, a text cut inside an
 * object told from an invalid one, arrays, decoding, numbers. */
#include "base/jscan.h"

#include <check.h>
#include "check_run.h"
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"

/* Iterate the object s[0, n) (loose or strict): the members read, the last result in *ret. */
static int members(const char *s, size_t n, bool loose, int *ret, struct js_iter *it)
{
    struct js_member m;
    int k = 0, r;
    if (js_obj_begin(it, s, s + n) < 0) {
        *ret = -1;
        return 0;
    }
    it->loose = loose;
    while ((r = js_obj_next(it, &m)) > 0)
        k++;
    *ret = r;
    return k;
}

/* Whether s is an object and nothing else, read strictly or loosely. */
static bool whole(const char *s, size_t n, bool loose)
{
    struct js_iter it;
    int r;
    members(s, n, loose, &r, &it);
    return r == 0 && js_skip_ws(it.p, it.e) == it.e;
}

#define WHOLE(lit, loose) whole(lit, sizeof lit - 1, loose)

START_TEST(test_members)
{
    const char *s = " {\"a\" : 1, \"k\\u0065y\":\"v\\n\", \"o\":{\"x\":[1,2,{}]},\"t\":true} ";
    struct js_iter it;
    struct js_member m;
    ck_assert_int_eq(js_obj_begin(&it, s, s + strlen(s)), 0);
    ck_assert_int_eq(js_obj_next(&it, &m), 1);
    ck_assert(js_key_is(&m, "a") && m.val_len == 1 && m.val[0] == '1' && !m.val_escaped);
    ck_assert_int_eq(js_obj_next(&it, &m), 1);
    ck_assert(m.key_escaped && !js_key_is(&m, "key")); /* keys are compared as written */
    ck_assert(m.val_escaped && m.val_len == 5);
    ck_assert_int_eq(js_obj_next(&it, &m), 1);
    ck_assert(js_key_is(&m, "o") && m.val_len == 14 && !m.val_escaped);
    ck_assert_int_eq(js_obj_next(&it, &m), 1);
    ck_assert(js_key_is(&m, "t") && m.val_len == 4);
    ck_assert_int_eq(js_obj_next(&it, &m), 0);
    ck_assert_int_eq(js_obj_next(&it, &m), 0);
    ck_assert(js_skip_ws(it.p, it.e) == it.e);
    ck_assert(WHOLE("{}", false));
    ck_assert(!WHOLE("{} x", false));
    ck_assert(!WHOLE("{\"a\":1,}", false));
    ck_assert(!WHOLE("{,\"a\":1}", false));
    ck_assert(!WHOLE("{\"a\" 1}", false));
    ck_assert(!WHOLE("{\"a\":01}", false));
    ck_assert(!WHOLE("{\"a\":1.}", false));
    ck_assert(!WHOLE("{\"a\":tru}", false));
    ck_assert(!WHOLE("{\"a\":[1,]}", false));
}
END_TEST

START_TEST(test_loose_strings)
{
    /* a raw control byte, a NUL, invalid UTF-8: not JSON, but a producer's bytes */
    static const char ctl[] = "{\"m\":\"a\tb\"}", nul[] = "{\"m\":\"a\0b\"}", bad[] = "{\"m\":\"\xff\xfe\"}";
    ck_assert(!WHOLE(ctl, false) && WHOLE(ctl, true));
    ck_assert(!WHOLE(nul, false) && WHOLE(nul, true));
    ck_assert(!WHOLE(bad, false) && WHOLE(bad, true));
    ck_assert(!WHOLE("{\"\xff\":1}", false) && WHOLE("{\"\xff\":1}", true));
    /* escapes and the grammar are still JSON's */
    ck_assert(!WHOLE("{\"m\":\"\\x\"}", true));
    ck_assert(!WHOLE("{\"m\":\"\\u12g4\"}", true));
    ck_assert(!WHOLE("{\"m\":[\"a\" \"b\"]}", true));
    ck_assert(!WHOLE("{\"m\":1e}", true));
    ck_assert(WHOLE("{\"m\":[\"\\u00e9\\ud83d\\ude00\"]}", false));
    /* the public scanners stay strict */
    ck_assert_ptr_null(js_scan_string(bad + 5, bad + sizeof bad - 1, NULL));
    ck_assert_ptr_null(js_scan_value(ctl + 5, ctl + sizeof ctl - 1, 1));
}
END_TEST

/* Every cut of a valid object inside it is a cut, never invalid; every earlier member is read. */
START_TEST(test_cut)
{
    static const char s[] = "{\"a\":\"x\\u00e9y\", \"n\":-12.5e+3,\"t\":true,\"o\":{\"k\":[null,false,\"\\\"\"]},\"z\":0}";
    size_t n = sizeof s - 1;
    ck_assert(whole(s, n, false));
    for (size_t k = 1; k < n; k++) {
        struct js_iter it;
        int r;
        members(s, k, true, &r, &it);
        ck_assert_msg(r < 0 && it.cut, "cut at %zu: %d, cut %d", k, r, it.cut);
    }
    /* invalid before the end: not a cut */
    static const char *const bad[] = {"{\"a\":x", "{\"a\":tx", "{\"a\":\"\\q", "{\"a\":1,,", "{\"a\" x",
                                      "{\"a\":\"\\u00x", "{\"a\":[1 2", "{\"a\":-x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct js_iter it;
        int r;
        members(bad[i], strlen(bad[i]), true, &r, &it);
        ck_assert_msg(r < 0 && !it.cut, "%s", bad[i]);
    }
    /* a member that runs up to the cut is returned, and it.p says it may be cut itself */
    struct js_iter it;
    struct js_member m;
    static const char t[] = "{\"a\":1,\"time\":17672";
    js_obj_begin(&it, t, t + sizeof t - 1);
    ck_assert_int_eq(js_obj_next(&it, &m), 1);
    ck_assert(it.p < it.e);
    ck_assert_int_eq(js_obj_next(&it, &m), 1);
    ck_assert(js_key_is(&m, "time") && it.p == it.e);
    ck_assert_int_eq(js_obj_next(&it, &m), -1);
    ck_assert(it.cut);
}
END_TEST

START_TEST(test_arrays)
{
    static const char s[] = "[\"a\", 1 ,{\"x\":[]}, [true]]";
    struct js_iter it;
    struct js_member m;
    ck_assert_int_eq(js_arr_begin(&it, s, s + sizeof s - 1), 0);
    const char *want[] = {"\"a\"", "1", "{\"x\":[]}", "[true]"};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(js_arr_next(&it, &m), 1);
        ck_assert_ptr_null(m.key);
        ck_assert_uint_eq(m.val_len, strlen(want[i]));
        ck_assert(memcmp(m.val, want[i], m.val_len) == 0);
    }
    ck_assert_int_eq(js_arr_next(&it, &m), 0);
    ck_assert_uint_eq(js_array_count(s, sizeof s - 1), 4);
    static const char empty[] = "[]", obj[] = "{}", trailing[] = "[1,]";
    ck_assert_int_eq(js_arr_begin(&it, empty, empty + 2), 0);
    ck_assert_int_eq(js_arr_next(&it, &m), 0);
    ck_assert_int_eq(js_arr_begin(&it, obj, obj + 2), -1);
    ck_assert_int_eq(js_arr_begin(&it, trailing, trailing + 4), 0);
    ck_assert_int_eq(js_arr_next(&it, &m), 1);
    ck_assert_int_eq(js_arr_next(&it, &m), -1);
}
END_TEST

/* {"a":[[...]]} with k arrays */
static bool nested(int k)
{
    char s[300];
    size_t n = 0;
    memcpy(s, "{\"a\":", 5);
    n = 5;
    for (int i = 0; i < k; i++)
        s[n++] = '[';
    for (int i = 0; i < k; i++)
        s[n++] = ']';
    s[n++] = '}';
    return whole(s, n, false);
}

START_TEST(test_depth)
{
    ck_assert(nested(63)); /* the object and 63 arrays: 64 deep */
    ck_assert(!nested(64));
}
END_TEST

START_TEST(test_decode)
{
    static const char s[] = "a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\ud800x\\udc00\xff";
    char out[sizeof s];
    size_t k = js_decode_string(s, sizeof s - 1, out);
    static const char want[] = "a\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx\xef\xbf\xbd\xff";
    ck_assert_uint_eq(k, sizeof want - 1);
    ck_assert(memcmp(out, want, k) == 0);
    /* the canonical form of two spellings of one text is one */
    struct jsonw a, b;
    jsonw_init(&a);
    jsonw_init(&b);
    js_canonical_string(&a, "caf\\u00e9\\/", 11);
    js_canonical_string(&b, "caf\xc3\xa9/", 6);
    ck_assert_str_eq(a.buf, b.buf);
    jsonw_release(&a);
    jsonw_release(&b);
}
END_TEST

START_TEST(test_numbers)
{
    double d;
    ck_assert(js_number("1767225600000", 13, &d) && d == 1767225600000.0);
    ck_assert(js_number("-2.5", 4, &d) && d == -2.5);
    ck_assert(js_number("13.666", 6, &d) && d == 13.666);
    ck_assert(js_number("1e3", 3, &d) && d == 1000.0);
    ck_assert(js_number("12345678901234567", 17, &d) && d == 12345678901234567.0);
    ck_assert(!js_number("1e999", 5, &d));
    ck_assert(!js_number("", 0, &d));
    ck_assert(!js_number("x", 1, &d));
    uint64_t u;
    ck_assert(js_u64("18446744073709551615", 20, &u) && u == UINT64_MAX);
    ck_assert(!js_u64("18446744073709551616", 20, &u));
    ck_assert(!js_u64("-1", 2, &u));
    const char *p = "-13.25,";
    ck_assert(js_ms(p, p + 7, &d) == p + 6 && d == -13.25);
    static const char zero[] = "01.5";
    ck_assert_ptr_null(js_ms(zero, zero + 4, &d));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("jscan");
    TCase *tc = tcase_create("jscan");
    tcase_add_test(tc, test_members);
    tcase_add_test(tc, test_loose_strings);
    tcase_add_test(tc, test_cut);
    tcase_add_test(tc, test_arrays);
    tcase_add_test(tc, test_depth);
    tcase_add_test(tc, test_decode);
    tcase_add_test(tc, test_numbers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
