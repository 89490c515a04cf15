/* Unit tests of the growable text buffer: appends, the NUL after the text, growth, formatted text
 * of any length, a failure that sticks until reset. */
#include "base/buf.h"

#include <check.h>
#include "check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_append)
{
    struct buf b = {0};
    ck_assert(buf_end(&b)); /* an empty text is still a C string */
    ck_assert_str_eq(b.p, "");
    buf_add(&b, "ab", 2);
    buf_add(&b, "", 0);
    buf_puts(&b, "cd");
    buf_add(&b, "e\0f", 3); /* bytes, not C strings */
    ck_assert_uint_eq(b.len, 7);
    ck_assert(buf_end(&b));
    ck_assert(memcmp(b.p, "abcde\0f", 8) == 0); /* and the NUL after them */
    buf_printf(&b, "|%d|%s", 42, "x");
    ck_assert(buf_end(&b));
    ck_assert_uint_eq(b.len, 12);
    ck_assert(memcmp(b.p + 7, "|42|x", 6) == 0);
    buf_reset(&b);
    ck_assert_uint_eq(b.len, 0);
    ck_assert(buf_end(&b));
    ck_assert_str_eq(b.p, "");
    buf_release(&b);
    ck_assert_ptr_null(b.p);
    ck_assert_uint_eq(b.cap, 0);
}
END_TEST

START_TEST(test_growth)
{
    struct buf b = {0};
    char piece[1000];
    memset(piece, 'x', sizeof piece);
    for (int i = 0; i < 100; i++)
        buf_add(&b, piece, sizeof piece);
    ck_assert_uint_eq(b.len, 100000);
    ck_assert_uint_gt(b.cap, b.len);
    ck_assert(buf_end(&b));
    ck_assert_int_eq(b.p[b.len], '\0');
    /* formatted text is appended whole, however long */
    char *big = malloc(5001);
    memset(big, 'y', 5000);
    big[5000] = '\0';
    buf_reset(&b);
    buf_printf(&b, "<%s>", big);
    ck_assert(buf_end(&b));
    ck_assert_uint_eq(b.len, 5002);
    ck_assert_uint_eq(strlen(b.p), 5002);
    ck_assert_int_eq(b.p[5001], '>');
    free(big);
    buf_release(&b);
}
END_TEST

START_TEST(test_failure_sticks)
{
    struct buf b = {0};
    buf_puts(&b, "start");
    ck_assert(!buf_grow(&b, SIZE_MAX - 8)); /* no such memory */
    ck_assert(b.failed);
    ck_assert(!buf_grow(&b, 1));
    buf_printf(&b, "%s", "more");
    ck_assert(!buf_end(&b));
    ck_assert_str_eq(b.p, "start"); /* what there is, terminated all the same */
    buf_reset(&b);
    ck_assert(!b.failed);
    buf_puts(&b, "again");
    ck_assert(buf_end(&b));
    ck_assert_str_eq(b.p, "again");
    buf_release(&b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("buf");
    TCase *tc = tcase_create("buf");
    tcase_add_test(tc, test_append);
    tcase_add_test(tc, test_growth);
    tcase_add_test(tc, test_failure_sticks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
