/* Unit tests of the JSON writer: escaping, UTF-8 repair, numbers, commas. */
#include "base/jsonw.h"

#include <check.h>
#include "check_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

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
    jsonw_key_plain(&w, "plain", 5);
    jsonw_obj_open(&w);
    jsonw_key_plain(&w, "ab", 1);
    jsonw_int(&w, 2);
    jsonw_key(&w, "q\"");
    jsonw_int(&w, 3);
    jsonw_obj_close(&w);
    jsonw_obj_close(&w);
    W_EQ(&w, "{\"type\":\"Test\",\"n\":18446744073709551615,\"a\":[-1,null,true,{}],\"plain\":{\"a\":2,\"q\\\"\":3}}");
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

/* The stdio-free number paths print exactly what printf prints: random values of every
 * magnitude, halves and near-halves, every decimal count; integers at their extremes. */
START_TEST(test_numbers_match_printf)
{
    struct jsonw w;
    jsonw_init(&w);
    uint64_t x = 88172645463325252ULL;
    static const double special[] = {0.5, 1.5, 2.5, 0.0005, 1.0005, 2.0005, 0.125, 1e-9, 123456.0004999,
                                     1099511627775.5, 1099511627776.5, 4.35, -0.0, -2.5, 9.9999999999};
    /* (valgrind runs it 50 times slower: a tenth is still 180 000 comparisons) */
    int count = getenv("RESMON_UNDER_VALGRIND") ? 20000 : 200000;
    for (int i = 0; i < count; i++) {
        double v;
        if (i < (int)ARRAY_SIZE(special))
            v = special[i];
        else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            double mant = (double)(x >> 11) / 9007199254740992.0; /* [0,1) */
            int exp = (int)(x % 40) - 12;
            v = mant;
            for (int e = 0; e < exp; e++)
                v *= 10;
            for (int e = 0; e > exp; e--)
                v /= 10;
            if (x & 1)
                v = -v;
            if (i % 5 == 0) /* a decimal with a tie in the last place */
                v = (double)(int64_t)(x % 2000001 - 1000000) / 1000.0 + 0.0005;
        }
        for (int d = 1; d <= 9; d++) {
            char want[400];
            /* jsonw_fixed is printf's "%.*f" itself (negative zero aside) */
            char got[JSONW_FIXED_MAX];
            int gn = jsonw_fixed(v, d, got);
            int wn = snprintf(want, sizeof want, "%.*f", d, v);
            if (v != 0 && (gn != wn || memcmp(got, want, (size_t)wn) != 0))
                ck_abort_msg("%.17g fixed with %d decimals: %.*s, printf %s", v, d, gn, got, want);
            int n = wn;
            while (n > 2 && want[n - 1] == '0' && want[n - 2] != '.')
                n--;
            want[n] = '\0';
            if (strcmp(want, "-0.0") == 0 || strcmp(want, "-0") == 0)
                strcpy(want, "0.0");
            jsonw_reset(&w);
            jsonw_double(&w, v, d);
            /* (ck_assert marks a point through a pipe each time: too slow for a million checks) */
            if (w.len != strlen(want) || memcmp(w.buf, want, w.len) != 0)
                ck_abort_msg("%.17g with %d decimals: %.*s, printf %s", v, d, (int)w.len, w.buf, want);
        }
    }
    jsonw_reset(&w);
    jsonw_arr_open(&w);
    jsonw_int(&w, INT64_MIN);
    jsonw_int(&w, INT64_MAX);
    jsonw_int(&w, 0);
    jsonw_int(&w, -7);
    jsonw_uint(&w, UINT64_MAX);
    jsonw_uint(&w, 0);
    jsonw_arr_close(&w);
    W_EQ(&w, "[-9223372036854775808,9223372036854775807,0,-7,18446744073709551615,0]");
    jsonw_release(&w);
}
END_TEST

/* Every special byte at every position around the 8- and 16-byte blocks the escaper copies
 * whole; the plain prefix stops exactly there. */
START_TEST(test_escape_at_every_position)
{
    static const struct {
        const char *in, *out;
    } sp[] = {{"\"", "\\\""}, {"\\", "\\\\"}, {"\n", "\\n"}, {"\x01", "\\u0001"}, {"\x7f", "\x7f"},
              {"\xc3\xa9", "\xc3\xa9"}, {"\xff", "\xef\xbf\xbd"}, {"\xe2\x82", "\xef\xbf\xbd\xef\xbf\xbd"}};
    struct jsonw w;
    jsonw_init(&w);
    for (size_t k = 0; k < ARRAY_SIZE(sp); k++)
        for (size_t len = 0; len <= 40; len++)
            for (size_t pos = 0; pos <= len; pos++) {
                char in[64], want[128];
                size_t a = strlen(sp[k].in);
                memset(in, 'a', len);
                memcpy(in + pos, sp[k].in, a);
                memset(in + pos + a, 'b', len - pos);
                memset(want, 'a', pos);
                strcpy(want + pos, sp[k].out);
                size_t o = pos + strlen(sp[k].out);
                memset(want + o, 'b', len - pos);
                want[o + len - pos] = '\0';
                jsonw_reset(&w);
                jsonw_escape(&w, in, len + a);
                if (strcmp(w.buf, want) != 0)
                    ck_abort_msg("special %zu at %zu of %zu: got %s", k, pos, len, w.buf);
                size_t plain = json_plain_prefix(in, len + a);
                if (plain != (strcmp(sp[k].in, sp[k].out) == 0 && sp[k].in[0] > 0 ? len + a : pos))
                    ck_abort_msg("special %zu at %zu of %zu: plain prefix %zu", k, pos, len, plain);
            }
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
    /* The timeout guards against a hang, not speed: the printf comparison is 1.8 million values,
     * under a sanitizer on a loaded machine many seconds. */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_object_commas);
    tcase_add_test(tc, test_escape_and_utf8);
    tcase_add_test(tc, test_doubles);
    tcase_add_test(tc, test_numbers_match_printf);
    tcase_add_test(tc, test_escape_at_every_position);
    tcase_add_test(tc, test_utf8_prefix);
    tcase_add_test(tc, test_depth_limit);
    suite_add_tcase(s, tc);
    return check_run(s);
}
