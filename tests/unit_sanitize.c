/* Unit tests of the sanitisers: every control character and invalid byte, in each kind of sink,
 * and cutting without splitting a character or an escape. */
#include "base/sanitize.h"

#include <check.h>
#include "check_run.h"
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"

struct acc {
    char p[4096];
    size_t len;
    int calls;
};

static void acc_put(void *ctx, const char *p, size_t len)
{
    struct acc *a = ctx;
    ck_assert(a->len + len < sizeof a->p);
    memcpy(a->p + a->len, p, len);
    a->len += len;
    a->p[a->len] = '\0';
    a->calls++;
}

static const char *safe(enum sanitize_sink sink, const char *s, size_t n)
{
    static struct acc a;
    memset(&a, 0, sizeof a);
    sanitize(sink, s, n, acc_put, &a);
    return a.p;
}
#define SAFE(sink, lit) safe(sink, lit, sizeof lit - 1)

/* No byte a terminal acts on: no C0 but none at all, no DEL, no C1 (as UTF-8 or raw), and valid
 * UTF-8 throughout. */
static void assert_inert(const char *s)
{
    size_t n = strlen(s);
    ck_assert_msg(utf8_valid_prefix(s, n) == n, "not UTF-8: %s", s);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        ck_assert_msg(c >= 0x20 && c != 0x7f, "control byte 0x%02x at %zu", c, i);
        ck_assert_msg(!(c == 0xC2 && (unsigned char)s[i + 1] <= 0x9F), "C1 control at %zu", i);
    }
}

START_TEST(test_terminal)
{
    ck_assert_str_eq(SAFE(SANITIZE_TERMINAL, "plain test/id.js [1] 100%"), "plain test/id.js [1] 100%");
    ck_assert_str_eq(SAFE(SANITIZE_TERMINAL, "a\x1b[31mred\x07\x1b]0;title\x07"), "a?[31mred??]0;title?");
    ck_assert_str_eq(SAFE(SANITIZE_TERMINAL, "tab\tcr\rlf\ndel\x7f"), "tab?cr?lf?del?");
    /* U+009B (CSI as a C1 control, encoded) and a raw 0x9B byte */
    ck_assert_str_eq(SAFE(SANITIZE_TERMINAL, "x\xc2\x9b" "2Jy\x9b" "2Jz"), "x?2Jy?2Jz");
    /* other text stays: Latin-1 supplement past the C1 range, CJK, an emoji */
    ck_assert_str_eq(SAFE(SANITIZE_TERMINAL, "caf\xc3\xa9 \xc2\xa0 \xe6\xbc\xa2 \xf0\x9f\x98\x80"),
                     "caf\xc3\xa9 \xc2\xa0 \xe6\xbc\xa2 \xf0\x9f\x98\x80");
    /* invalid UTF-8: a lone continuation, a truncated sequence, an overlong, a surrogate */
    ck_assert_str_eq(SAFE(SANITIZE_TERMINAL, "a\x80" "b\xe6\xbc" "c\xc0\xaf" "d\xed\xa0\x80" "e"), "a?b??c??d???e");
    /* NUL within the given length */
    ck_assert_str_eq(safe(SANITIZE_TERMINAL, "a\0b", 3), "a?b");
    ck_assert_str_eq(safe(SANITIZE_TERMINAL, NULL, 0), "");
}
END_TEST

START_TEST(test_github)
{
    ck_assert_str_eq(SAFE(SANITIZE_GHA_DATA, "50% a:b,c\r\nnext"), "50%25 a:b,c%0D%0Anext");
    ck_assert_str_eq(SAFE(SANITIZE_GHA_PROPERTY, "50% a:b,c\r\nnext"), "50%25 a%3Ab%2Cc%0D%0Anext");
    /* a second command cannot be started, nor the terminal reached */
    ck_assert_str_eq(SAFE(SANITIZE_GHA_DATA, "x\n::error title=forged::y"), "x%0A::error title=forged::y");
    ck_assert_str_eq(SAFE(SANITIZE_GHA_PROPERTY, "\x1b[2J\x07\xc2\x9b\x9b::x"), "?[2J???%3A%3Ax");
}
END_TEST

START_TEST(test_markdown)
{
    ck_assert_str_eq(SAFE(SANITIZE_MARKDOWN, "a|b *c* _d_ `e` [f](g) <h> ~i~ &amp; \\"),
                     "a\\|b \\*c\\* \\_d\\_ \\`e\\` \\[f\\](g) \\<h\\> \\~i\\~ \\&amp; \\\\");
    /* a lone CR, LF or CRLF cannot end the row: "## INJECTED" stays in the cell */
    ck_assert_str_eq(SAFE(SANITIZE_MARKDOWN, "t\r## INJECTED"), "t ## INJECTED");
    ck_assert_str_eq(SAFE(SANITIZE_MARKDOWN, "t\n## INJECTED\r\n| x"), "t ## INJECTED  \\| x");
    ck_assert_str_eq(SAFE(SANITIZE_MARKDOWN, "t\tu\x1b[1m\x9b\xc2\x85"), "t u?\\[1m??");
}
END_TEST

/* A text file keeps its lines and columns, and nothing else that moves a terminal's cursor. */
START_TEST(test_text_file)
{
    ck_assert_str_eq(SAFE(SANITIZE_TEXT_FILE, "pid\tcmd\n42\tsh -c 'x\x1b[2J\r\x07'\xc2\x9b\x9b\n"),
                     "pid\tcmd\n42\tsh -c 'x?[2J?" "?'?" "?\n");
    for (int b = 0; b < 256; b++) {
        char in[3] = {(char)b, 'x', 'y'};
        const char *out = safe(SANITIZE_TEXT_FILE, in, 3);
        for (const char *p = out; *p; p++)
            ck_assert_msg((unsigned char)*p >= 0x20 || *p == '\t' || *p == '\n', "byte %02x kept a control", b);
    }
}
END_TEST

/* Every byte value, alone and before an ASCII letter, in every sink: never a control, always
 * UTF-8; and no line ending in Markdown or GitHub output. */
START_TEST(test_every_byte)
{
    for (int sink = SANITIZE_TERMINAL; sink <= SANITIZE_MARKDOWN; sink++)
        for (int b = 0; b < 256; b++) {
            char in[3] = {(char)b, 'x', 'y'};
            const char *out = safe((enum sanitize_sink)sink, in, 3);
            assert_inert(out);
            ck_assert_msg(strchr(out, 'x') && strchr(out, 'y'), "sink %d byte %02x ate what follows", sink, b);
        }
    /* every two-byte sequence: C1 controls caught, the rest of U+0080-U+07FF kept */
    for (int b1 = 0xC2; b1 <= 0xDF; b1++)
        for (int b2 = 0x80; b2 <= 0xBF; b2++) {
            char in[2] = {(char)b1, (char)b2};
            const char *out = safe(SANITIZE_TERMINAL, in, 2);
            assert_inert(out);
            char kept[3] = {(char)b1, (char)b2, 0};
            ck_assert_str_eq(out, b1 == 0xC2 && b2 <= 0x9F ? "?" : kept);
        }
}
END_TEST

START_TEST(test_into_and_cut)
{
    char buf[8];
    /* "é" is two bytes: seven bytes of room hold three of them, not three and a half */
    ck_assert_uint_eq(sanitize_into(SANITIZE_TERMINAL, buf, sizeof buf, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8), 6);
    ck_assert_str_eq(buf, "\xc3\xa9\xc3\xa9\xc3\xa9");
    /* an escape is whole or absent, and nothing after a piece that did not fit */
    ck_assert_uint_eq(sanitize_into(SANITIZE_GHA_PROPERTY, buf, sizeof buf, "abcde:f", 7), 5);
    ck_assert_str_eq(buf, "abcde");
    ck_assert_uint_eq(sanitize_into(SANITIZE_MARKDOWN, buf, sizeof buf, "abcdef|", 7), 6);
    ck_assert_str_eq(buf, "abcdef");
    ck_assert_uint_eq(sanitize_into(SANITIZE_TERMINAL, buf, 1, "abc", 3), 0);
    ck_assert_str_eq(buf, "");
    /* a 128-byte cut through a 3-byte character keeps the characters before it */
    char name[200];
    memset(name, 'a', 127);
    memcpy(name + 127, "\xe6\xbc\xa2", 3);
    ck_assert_uint_eq(sanitize_cut(name, 130, 128), 127);
    ck_assert_uint_eq(sanitize_cut(name, 130, 130), 130);
    ck_assert_uint_eq(sanitize_cut("\x9b\x9b", 2, 1), 1);
    ck_assert_uint_eq(sanitize_cut("ab", 2, 0), 0);
    /* what snprintf leaves of "é", "漢" and "😀" cut after one, two or three bytes */
    ck_assert_uint_eq(sanitize_uncut("ab\xc3", 3), 2);
    ck_assert_uint_eq(sanitize_uncut("ab\xe6\xbc", 4), 2);
    ck_assert_uint_eq(sanitize_uncut("ab\xf0\x9f\x98", 5), 2);
    ck_assert_uint_eq(sanitize_uncut("ab\xf0", 3), 2);
    /* whole characters stay */
    ck_assert_uint_eq(sanitize_uncut("ab\xc3\xa9", 4), 4);
    ck_assert_uint_eq(sanitize_uncut("ab\xe6\xbc\xa2", 5), 5);
    ck_assert_uint_eq(sanitize_uncut("ab\xf0\x9f\x98\x80", 6), 6);
    ck_assert_uint_eq(sanitize_uncut("abc", 3), 3);
    ck_assert_uint_eq(sanitize_uncut("", 0), 0);
    ck_assert_uint_eq(sanitize_uncut("\x80\x80\x80\x80", 4), 4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sanitize");
    TCase *tc = tcase_create("sanitize");
    tcase_add_test(tc, test_terminal);
    tcase_add_test(tc, test_github);
    tcase_add_test(tc, test_markdown);
    tcase_add_test(tc, test_text_file);
    tcase_add_test(tc, test_every_byte);
    tcase_add_test(tc, test_into_and_cut);
    suite_add_tcase(s, tc);
    return check_run(s);
}
