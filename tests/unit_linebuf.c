/* Unit tests of the line splitter. */
#include "base/linebuf.h"

#include <check.h>
#include "check_run.h"
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

struct got {
    char lines[16][64];
    size_t len[16];
    bool trunc[16];
    uint64_t at[16];
    int n;
    size_t total_calls;
};

static void cb(void *ctx, const char *line, size_t len, bool truncated, uint64_t arrival)
{
    struct got *g = ctx;
    g->total_calls++;
    if (g->n == 16)
        return;
    size_t k = len < 63 ? len : 63;
    memcpy(g->lines[g->n], line, k);
    g->lines[g->n][k] = '\0';
    g->len[g->n] = len;
    g->trunc[g->n] = truncated;
    g->at[g->n] = arrival;
    g->n++;
}

START_TEST(test_split)
{
    struct linebuf *lb;
    struct got g = {0};
    ck_assert_int_eq(linebuf_new(100, &lb), 0);
    linebuf_feed(lb, "one\ntw", 6, 10, cb, &g);
    linebuf_feed(lb, "o\r\n\nthree", 9, 20, cb, &g);
    ck_assert_int_eq(g.n, 3);
    ck_assert_str_eq(g.lines[0], "one");
    ck_assert_uint_eq(g.at[0], 10);
    ck_assert_str_eq(g.lines[1], "two\r"); /* '\r' is kept */
    ck_assert_uint_eq(g.at[1], 10);       /* arrival of the first byte */
    ck_assert_str_eq(g.lines[2], "");
    ck_assert_uint_eq(g.at[2], 20);
    linebuf_feed(lb, "", 0, 25, cb, &g);
    ck_assert_int_eq(g.n, 3);
    linebuf_flush(lb, cb, &g);
    ck_assert_int_eq(g.n, 4);
    ck_assert_str_eq(g.lines[3], "three");
    ck_assert(!g.trunc[3]);
    ck_assert_uint_eq(g.at[3], 20);
    linebuf_flush(lb, cb, &g); /* nothing pending: nothing delivered */
    ck_assert_int_eq(g.n, 4);
    linebuf_feed(lb, "x\n", 2, 30, cb, &g);
    ck_assert_str_eq(g.lines[4], "x");
    ck_assert_uint_eq(g.at[4], 30);
    linebuf_free(lb);
    linebuf_free(NULL);
}
END_TEST

/* What a line begun and not complete holds so far, and when it began. */
START_TEST(test_pending)
{
    struct linebuf *lb;
    struct got g = {0};
    size_t n = 0;
    uint64_t at = 0;
    ck_assert_int_eq(linebuf_new(16, &lb), 0);
    ck_assert_ptr_null(linebuf_pending(lb, &n, &at));
    linebuf_feed(lb, "one\ntest a", 10, 10, cb, &g);
    const char *p = linebuf_pending(lb, &n, &at);
    ck_assert(p && n == 6 && memcmp(p, "test a", 6) == 0 && at == 10);
    linebuf_feed(lb, " ..", 3, 20, cb, &g);
    p = linebuf_pending(lb, &n, &at);
    ck_assert(p && n == 9 && memcmp(p, "test a ..", 9) == 0 && at == 10); /* begun at 10 */
    linebuf_feed(lb, ". ok and more", 13, 30, cb, &g); /* over 16 bytes: delivered cut, rest skipped */
    ck_assert_ptr_null(linebuf_pending(lb, &n, &at));
    linebuf_feed(lb, "\n", 1, 40, cb, &g);
    ck_assert_ptr_null(linebuf_pending(lb, &n, &at));
    ck_assert_int_eq(g.n, 2);
    linebuf_free(lb);
}
END_TEST

START_TEST(test_truncate)
{
    struct linebuf *lb;
    struct got g = {0};
    ck_assert_int_eq(linebuf_new(10, &lb), 0);
    /* exactly max_line, split so the splitter cannot know yet: not truncated */
    linebuf_feed(lb, "0123456789", 10, 1, cb, &g);
    ck_assert_int_eq(g.n, 0);
    linebuf_feed(lb, "\n", 1, 2, cb, &g);
    ck_assert_int_eq(g.n, 1);
    ck_assert_str_eq(g.lines[0], "0123456789");
    ck_assert(!g.trunc[0]);
    /* longer in one chunk: first 10 bytes, truncated, rest skipped */
    linebuf_feed(lb, "abcdefghijKLMNOP\nnext\n", 22, 3, cb, &g);
    ck_assert_int_eq(g.n, 3);
    ck_assert_str_eq(g.lines[1], "abcdefghij");
    ck_assert(g.trunc[1]);
    ck_assert_str_eq(g.lines[2], "next");
    /* longer across chunks, the newline much later */
    linebuf_feed(lb, "012345", 6, 4, cb, &g);
    linebuf_feed(lb, "6789X", 5, 5, cb, &g);
    ck_assert_int_eq(g.n, 4);
    ck_assert_str_eq(g.lines[3], "0123456789");
    ck_assert(g.trunc[3]);
    ck_assert_uint_eq(g.at[3], 4);
    linebuf_feed(lb, "more junk", 9, 6, cb, &g);
    linebuf_feed(lb, "junk\nok", 7, 7, cb, &g);
    ck_assert_int_eq(g.n, 4);
    linebuf_flush(lb, cb, &g);
    ck_assert_int_eq(g.n, 5);
    ck_assert_str_eq(g.lines[4], "ok");
    ck_assert_uint_eq(g.at[4], 7);
    /* flush while skipping delivers nothing more */
    linebuf_feed(lb, "0123456789ABC", 13, 8, cb, &g);
    ck_assert_int_eq(g.n, 6);
    linebuf_flush(lb, cb, &g);
    ck_assert_int_eq(g.n, 6);
    ck_assert_int_eq(linebuf_new(0, &lb) < 0, 1);
    linebuf_free(lb);
}
END_TEST

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

START_TEST(test_huge_line_bounded)
{
    struct linebuf *lb;
    struct got g = {0};
    ck_assert_int_eq(linebuf_new(1 << 20, &lb), 0);
    static char chunk[1 << 16];
    memset(chunk, 'a', sizeof chunk);
    long before = maxrss_kb();
    for (int i = 0; i < 1600; i++) /* 100 MiB without a newline */
        linebuf_feed(lb, chunk, sizeof chunk, (uint64_t)i, cb, &g);
    long after = maxrss_kb();
    ck_assert_int_eq(g.n, 1);
    ck_assert_uint_eq(g.len[0], 1 << 20);
    ck_assert(g.trunc[0]);
    ck_assert_uint_eq(g.at[0], 0);
    ck_assert_msg(after - before < 8 * 1024, "grew %ld KiB", after - before);
    linebuf_feed(lb, "\nend\n", 5, 9999, cb, &g);
    ck_assert_int_eq(g.n, 2);
    ck_assert_str_eq(g.lines[1], "end");
    ck_assert_uint_eq(g.at[1], 9999);
    linebuf_free(lb);
}
END_TEST

START_TEST(test_byte_by_byte)
{
    struct linebuf *lb;
    struct got g = {0};
    ck_assert_int_eq(linebuf_new(8, &lb), 0);
    const char *in = "ab\n\ncdefghijklmn\nz";
    for (size_t i = 0; in[i]; i++)
        linebuf_feed(lb, in + i, 1, i, cb, &g);
    linebuf_flush(lb, cb, &g);
    ck_assert_int_eq(g.n, 4);
    ck_assert_str_eq(g.lines[0], "ab");
    ck_assert_str_eq(g.lines[1], "");
    ck_assert_str_eq(g.lines[2], "cdefghij");
    ck_assert(g.trunc[2]);
    ck_assert_uint_eq(g.at[2], 4);
    ck_assert_str_eq(g.lines[3], "z");
    /* NUL bytes are ordinary bytes */
    linebuf_feed(lb, "a\0b\n", 4, 100, cb, &g);
    ck_assert_uint_eq(g.len[4], 3);
    linebuf_free(lb);
}
END_TEST

/* Every chunking of random input gives what a simple model of the contract gives: the whole-line
 * pass over a chunk (64 bytes at a time) and the general path must agree, whatever the line
 * lengths, max_line, and where lines fall against chunk and 64-byte boundaries. */
struct rec_lines {
    char *p;
    size_t n, cap;
    uint64_t last_at;
    bool at_ok;
};

static void rec_cb(void *ctx, const char *line, size_t len, bool truncated, uint64_t arrival)
{
    struct rec_lines *r = ctx;
    if (r->n + len + 3 > r->cap) {
        r->cap = (r->n + len + 3) * 2;
        r->p = realloc(r->p, r->cap);
        ck_assert_ptr_nonnull(r->p);
    }
    r->p[r->n++] = truncated ? 'T' : 'L';
    memcpy(r->p + r->n, line, len);
    r->n += len;
    r->p[r->n++] = '\n';
    if (arrival < r->last_at) /* a line cannot have arrived before the previous one */
        r->at_ok = false;
    r->last_at = arrival;
}

START_TEST(test_chunkings_agree)
{
    uint64_t x = 99;
#define RND() (x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407), x >> 33)
    for (int round = 0; round < 300; round++) {
        size_t size = RND() % 3000, max_line = round % 3 ? 1 + RND() % 100 : 1 << 20;
        char *in = malloc(size + 1);
        for (size_t i = 0; i < size; i++) /* lines of 0 to ~150 bytes */
            in[i] = RND() % (1 + (unsigned)(round % 150)) == 0 ? '\n' : (char)('a' + RND() % 26);
        /* the model */
        struct rec_lines want = {0};
        want.at_ok = true;
        for (size_t i = 0; i < size;) {
            const char *nl = memchr(in + i, '\n', size - i);
            size_t end = nl ? (size_t)(nl - in) : size;
            size_t n = end - i;
            if (n > max_line)
                rec_cb(&want, in + i, max_line, true, 0);
            else if (nl || n)
                rec_cb(&want, in + i, n, false, 0);
            i = end + 1;
        }
        for (int mode = 0; mode < 3; mode++) {
            struct linebuf *lb;
            ck_assert_int_eq(linebuf_new(max_line, &lb), 0);
            struct rec_lines got = {0};
            got.at_ok = true;
            uint64_t t = 0;
            for (size_t i = 0; i < size;) {
                size_t k = mode == 0 ? size - i : mode == 1 ? 1 + RND() % 200 : 1;
                if (k > size - i)
                    k = size - i;
                linebuf_feed(lb, in + i, k, ++t, rec_cb, &got);
                i += k;
            }
            linebuf_flush(lb, rec_cb, &got);
            ck_assert_msg(got.n == want.n && (!got.n || !memcmp(got.p, want.p, got.n)),
                          "round %d mode %d: lines differ from the model", round, mode);
            ck_assert(got.at_ok);
            free(got.p);
            linebuf_free(lb);
        }
        free(want.p);
        free(in);
    }
#undef RND
}
END_TEST

int main(void)
{
    Suite *s = suite_create("linebuf");
    TCase *tc = tcase_create("linebuf");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_split);
    tcase_add_test(tc, test_pending);
    tcase_add_test(tc, test_truncate);
    tcase_add_test(tc, test_huge_line_bounded);
    tcase_add_test(tc, test_byte_by_byte);
    tcase_add_test(tc, test_chunkings_agree);
    suite_add_tcase(s, tc);
    return check_run(s);
}
