/* Unit tests of the test-log format parsers (testlog/formats.h).
 *
 * A format has fixture logs tests/fixtures/testlog/<fmt>.txt (or <fmt>-<variant>.txt), each with
 * the exact event sequence it must produce in <fmt>[-<variant>].expected beside it (one event per
 * line: input line number, kind, id, scope, status, expected, unexpected, duration, message, timing
 * flags). Line i arrives at i ms. Running with TESTLOG_WRITE_EXPECTED=1 rewrites the .expected
 * files from the parsers (to review with git diff, never to make a failing test pass unread).
 */
#include "testlog/formats.h"

#include <check.h>
#include "check_run.h"
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"

static const char *kind_names[] = {
    [TLE_SUITE_START] = "SUITE_START", [TLE_SUITE_END] = "SUITE_END",
    [TLE_GROUP_START] = "GROUP_START", [TLE_GROUP_END] = "GROUP_END",
    [TLE_TEST_START] = "TEST_START",   [TLE_TEST_END] = "TEST_END",
    [TLE_SUBTEST] = "SUBTEST",         [TLE_LOG] = "LOG",
    [TLE_CRASH] = "CRASH",             [TLE_PROCESS_START] = "PROCESS_START",
    [TLE_PROCESS_EXIT] = "PROCESS_EXIT", [TLE_ASSERT] = "ASSERT",
    [TLE_LEAK] = "LEAK",               [TLE_OUTPUT] = "OUTPUT",
    [TLE_BAIL_OUT] = "BAIL_OUT",       [TLE_ANCHOR] = "ANCHOR",
    [TLE_TEST_RESUME] = "TEST_RESUME", [TLE_TEST_MESSAGE] = "TEST_MESSAGE",
    [TLE_TOTALS] = "TOTALS",
};

struct buf {
    char *p;
    size_t n, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(struct buf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Strings are printed escaped (bytes outside printable ASCII as \xNN), cut at 120 bytes. */
static void buf_str(struct buf *b, const char *key, struct tl_str s)
{
    buf_printf(b, " %s=", key);
    size_t n = s.n > 120 ? 120 : s.n;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (c < 0x20 || c >= 0x7f || c == '\\')
            buf_printf(b, "\\x%02x", c);
        else
            buf_add(b, (const char *)&c, 1);
    }
    if (s.n > n)
        buf_printf(b, "...(%zu)", s.n);
}

static void describe(struct buf *b, size_t lineno, const struct tl_event *e)
{
    buf_printf(b, "%zu %s", lineno, kind_names[e->kind]);
    buf_str(b, "id", e->id);
    if (e->scope.n)
        buf_str(b, "scope", e->scope);
    if (e->status.n)
        buf_str(b, "status", e->status);
    if (e->expected.n)
        buf_str(b, "expected", e->expected);
    if (e->amends.n)
        buf_str(b, "amends", e->amends);
    if (e->expected_known)
        buf_printf(b, " unexpected=%d", e->unexpected);
    if (!isnan(e->t.duration_ms))
        buf_printf(b, " dur=%.3f", e->t.duration_ms);
    if (!isnan(e->t.wall_ms))
        buf_printf(b, " time=%.3f", e->t.wall_ms);
    if (e->t.when == TL_AT_EARLIER_LINE)
        buf_printf(b, " at=%llu", (unsigned long long)e->t.ns);
    if (e->t.since_ns)
        buf_printf(b, " since=%llu", (unsigned long long)e->t.since_ns);
    if (e->t.late)
        buf_printf(b, " late_end");
    if (e->t.when == TL_AT_LINE_END)
        buf_printf(b, " at_line_end");
    if (e->level.n)
        buf_str(b, "level", e->level);
    if (e->process.n)
        buf_str(b, "process", e->process);
    if (e->message.n)
        buf_str(b, "msg", e->message);
    if (e->kind == TLE_TOTALS) {
        buf_str(b, "harness", e->name);
        buf_printf(b, " total=%lld passed=%lld failed=%lld skipped=%lld", (long long)e->counts.total,
                   (long long)e->counts.passed, (long long)e->counts.failed, (long long)e->counts.skipped);
    }
    buf_add(b, "\n", 1);
}

static char *read_all(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct buf b = {0};
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        buf_add(&b, tmp, n);
    fclose(f);
    if (!b.p)
        buf_add(&b, "", 0);
    *ret_len = b.n;
    return b.p;
}

/* Feed data line by line (split on '\n', '\r' stripped, as the core does); describe events. */
static void run_lines(const struct tl_format *fmt, void *state, const char *data, size_t len,
                      struct buf *out)
{
    size_t start = 0, lineno = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && data[i] != '\n')
            continue;
        if (i == len && start == len)
            break;
        size_t n = i - start;
        if (n && data[start + n - 1] == '\r')
            n--;
        lineno++;
        /* An exact-size copy, so overreads show under ASan and valgrind. */
        char *line = malloc(n ? n : 1);
        memcpy(line, data + start, n);
        struct tl_event ev[TL_MAX_EVENTS];
        int k = fmt->parse(state, line, n, (uint64_t)lineno * 1000000, ev);
        ck_assert_int_ge(k, 0);
        ck_assert_int_le(k, TL_MAX_EVENTS);
        for (int j = 0; j < k; j++)
            describe(out, lineno, &ev[j]);
        /* what the line released beyond them, as the core asks for it */
        while (k > 0 && fmt->more && (k = fmt->more(state, ev)) > 0)
            for (int j = 0; j < k; j++)
                describe(out, lineno, &ev[j]);
        free(line);
        start = i + 1;
    }
}

static void check_fixture(const struct tl_format *fmt, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/testlog/%s.txt", SRCDIR, name);
    size_t len, elen;
    char *data = read_all(path, &len);
    ck_assert_msg(data, "cannot read %s", path);
    void *state = calloc(1, fmt->state_size ? fmt->state_size : 1);
    struct buf out = {0};
    buf_add(&out, "", 0);
    run_lines(fmt, state, data, len, &out);
    snprintf(path, sizeof path, "%s/tests/fixtures/testlog/%s.expected", SRCDIR, name);
    if (getenv("TESTLOG_WRITE_EXPECTED")) {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        fwrite(out.p, 1, out.n, f);
        fclose(f);
    }
    char *exp = read_all(path, &elen);
    ck_assert_msg(exp, "cannot read %s", path);
    /* Report the first differing line. */
    const char *a = out.p, *b = exp;
    while (*a && *b) {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
        ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "%s: got\n  %.*s\nexpected\n  %.*s", name,
                      (int)la, a, (int)lb, b);
        a += la + (ea ? 1 : 0);
        b += lb + (eb ? 1 : 0);
    }
    ck_assert_msg(!*a && !*b, "%s: got %s, expected %s", name, *a ? a : "(end)", *b ? b : "(end)");
    free(exp);
    free(out.p);
    if (fmt->release)
        fmt->release(state);
    free(state);
    free(data);
}

/* Every format of the registry: the tests below that hold all parsers to a rule (plain text is
 * none of theirs, huge names, each other's lines) take a new format without being edited. */
static const struct tl_format *const formats[] = {
#define TL_FORMAT(var, NAME, alias) &tl_format_##var,
#include "testlog/registry.h"
#undef TL_FORMAT
};
#define NFORMATS (sizeof formats / sizeof formats[0])

/* A state as the core makes it (zeroed) is idle: the core does not ask (testlog/event.h). */
START_TEST(zeroed_state_idle)
{
    for (size_t i = 0; i < NFORMATS; i++) {
        void *state = calloc(1, formats[i]->state_size ? formats[i]->state_size : 1);
        ck_assert_ptr_nonnull(state);
        ck_assert_msg(!formats[i]->busy || !formats[i]->busy(state), "%s: busy at its start", formats[i]->name);
        ck_assert_msg(!formats[i]->captures || !formats[i]->captures(state), "%s: captures at its start",
                      formats[i]->name);
        free(state);
    }
}
END_TEST

/* A parser's state as the core makes it (zeroed), and its release. */
static void *state_new(const struct tl_format *fmt)
{
    void *state = calloc(1, fmt->state_size ? fmt->state_size : 1);
    ck_assert_ptr_nonnull(state);
    return state;
}

static void state_free(const struct tl_format *fmt, void *state)
{
    if (fmt->release)
        fmt->release(state);
    free(state);
}

/* Every log tests/fixtures/testlog/<format>.txt or <format>-<variant>.txt against its .expected,
 * read by the registry's format of that name: a new fixture needs no line here. */
static int fixture_log(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 4 && !strcmp(e->d_name + n - 4, ".txt");
}

START_TEST(fixtures)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/testlog", SRCDIR);
    struct dirent **logs;
    int n = scandir(dir, &logs, fixture_log, alphasort);
    ck_assert_msg(n >= 10, "%s: %d fixture logs", dir, n);
    for (int i = 0; i < n; i++) {
        char name[sizeof logs[i]->d_name];
        snprintf(name, sizeof name, "%.*s", (int)strlen(logs[i]->d_name) - 4, logs[i]->d_name);
        size_t len = strcspn(name, "-");
        const struct tl_format *fmt = NULL;
        for (size_t f = 0; f < NFORMATS; f++)
            if (strlen(formats[f]->name) == len && memcmp(formats[f]->name, name, len) == 0)
                fmt = formats[f];
        ck_assert_msg(fmt, "%s: the registry has no format '%.*s'", logs[i]->d_name, (int)len, name);
        check_fixture(fmt, name);
        free(logs[i]);
    }
    free(logs);
}
END_TEST

/* Ordinary output must not be taken by any of these formats. */
START_TEST(plain_text_rejected)
{
    static const char *lines[] = {
        "",
        "ok",
        "not ok",
        "okay then",
        "Compiling foo v0.1.0 (/src/foo)",
        "src/main.c:12:5: warning: unused variable 'x' [-Wunused-variable]",
        "std::vector<int> v; // test_x (not a test) ... maybe",
        "[INFO] building",
        "[==========]",
        "FAILED tests/test_a.py::test_x - assert 0",
        "PASSED tests/test_a.py::test_y",
        "test",
        "{\"not\": \"json\"",
        "   ---",
        "1..",
        "# comment",
        "Running the build",
        "100% done",
        "--- a/file.c",
        "=== Summary ===",
        "tests/test_a.py ....   [100%]",
        "Loading... .. done",
    };
    for (size_t f = 0; f < NFORMATS; f++) {
        void *state = state_new(formats[f]);
        for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
            struct tl_event ev[TL_MAX_EVENTS];
            int k = formats[f]->parse(state, lines[i], strlen(lines[i]), 1000000 * (i + 1), ev);
            ck_assert_msg(k == 0, "%s took \"%s\"", formats[f]->name, lines[i]);
        }
        state_free(formats[f], state);
    }
    /* go's package line is not TAP, even after a TAP plan (the plan is: an anchor). */
    void *state = calloc(1, tl_format_tap.state_size);
    const char *l[] = {"1..3", "ok  \tgithub.com/x/y\t0.01s", "ok\tpkg"};
    struct tl_event ev[TL_MAX_EVENTS];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(tl_format_tap.parse(state, l[i], strlen(l[i]), 1, ev), i == 0);
        ck_assert(i > 0 || ev[0].kind == TLE_ANCHOR);
    }
    free(state);
}
END_TEST

/* Names far longer than any buffer: no overflow, ids either point into the line or are cut. */
START_TEST(huge_names)
{
    size_t big = 300000;
    char *name = malloc(big);
    memset(name, 'a', big);
    memcpy(name, "tests/t.py::", 12);
    const char *fmts[] = {
        "ok 1 - %s",      "# Subtest: %s",          "not ok 2 - %s # TODO x",
        "=== RUN   %s",   "--- FAIL: %s (0.50s)",   "[ RUN      ] %s",
        "[       OK ] %s (3 ms)", "%s PASSED [ 50%]", "%s",
        "test_x (%s) ... ok", "test %s ... ok",     "test %s ... ",
        "x.c:1:F:%s:t:0: m", "{\"Action\":\"run\",\"Test\":\"%s\"}",
    };
    size_t cap = big + 100;
    char *line = malloc(cap);
    for (size_t f = 0; f < NFORMATS; f++) {
        void *state = state_new(formats[f]);
        for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
            const char *pct = strstr(fmts[i], "%s");
            size_t pre = (size_t)(pct - fmts[i]);
            char tail[64];
            snprintf(tail, sizeof tail, "%s", pct + 2);
            size_t n = 0;
            memcpy(line, fmts[i], pre);
            n = pre;
            memcpy(line + n, name, big);
            n += big;
            memcpy(line + n, tail, strlen(tail));
            n += strlen(tail);
            struct tl_event ev[TL_MAX_EVENTS];
            int k = formats[f]->parse(state, line, n, 1000000 * (i + 1), ev);
            ck_assert_int_le(k, TL_MAX_EVENTS);
            for (int j = 0; j < k; j++) {
                const char *p = ev[j].id.p;
                bool in_line = p >= line && p + ev[j].id.n <= line + n;
                bool in_state = p >= (char *)state &&
                                p + ev[j].id.n <= (char *)state + formats[f]->state_size;
                ck_assert_msg(ev[j].id.n == 0 || in_line || in_state || ev[j].id.n < 16,
                              "%s: id outside line and state", formats[f]->name);
            }
        }
        state_free(formats[f], state);
    }
    free(line);
    free(name);
}
END_TEST

START_TEST(rfc3339)
{
    double ms;
    ck_assert(tl_parse_rfc3339(TL_LIT("1970-01-01T00:00:00Z"), &ms));
    ck_assert(ms == 0);
    ck_assert(tl_parse_rfc3339(TL_LIT("2024-02-29T12:34:56.789123456+02:00"), &ms));
    ck_assert_double_eq_tol(ms, 1709202896789.123, 0.01);
    ck_assert(tl_parse_rfc3339(TL_LIT("2000-03-01T00:00:00.5-00:30"), &ms));
    ck_assert_double_eq_tol(ms, 951870600500.0, 0.01);
    ck_assert(!tl_parse_rfc3339(TL_LIT("2024-13-01T00:00:00Z"), &ms));
    ck_assert(!tl_parse_rfc3339(TL_LIT("2024-01-01T00:00:00"), &ms));
    ck_assert(!tl_parse_rfc3339(TL_LIT("2024-01-01T00:00:00.Z"), &ms));
    ck_assert(!tl_parse_rfc3339(TL_LIT("2024-01-01T00:00:00Zjunk"), &ms));
}
END_TEST

START_TEST(numbers)
{
    double v;
    ck_assert(tl_parse_number(TL_LIT("0.01"), &v) && fabs(v - 0.01) < 1e-12);
    ck_assert(tl_parse_number(TL_LIT("12"), &v) && v == 12);
    ck_assert(tl_parse_number(TL_LIT("1.5e3"), &v) && v == 1500);
    ck_assert(tl_parse_number(TL_LIT("-2"), &v) && v == -2);
    ck_assert(!tl_parse_number(TL_LIT(""), &v));
    ck_assert(!tl_parse_number(TL_LIT("."), &v));
    ck_assert(!tl_parse_number(TL_LIT("1e"), &v));
    ck_assert(!tl_parse_number(TL_LIT("1x"), &v));
    ck_assert(!tl_parse_number(TL_LIT("1e999"), &v));
}
END_TEST

/* TAP: a result held for its YAML block goes out on the next line with the point's time. */
START_TEST(tap_hold_timing)
{
    void *state = calloc(1, tl_format_tap.state_size);
    struct tl_event ev[TL_MAX_EVENTS];
    const char *l[] = {"TAP version 13", "ok 1 - a", "  ---", "  duration_ms: 5", "  ...",
                       "ok 2 - b", "unrelated output"};
    int k[7];
    for (int i = 0; i < 7; i++) {
        k[i] = tl_format_tap.parse(state, l[i], strlen(l[i]), 1000 + (uint64_t)i * 1000, ev);
        if (i == 6) {
            ck_assert_int_eq(k[i], 1);
            ck_assert(tl_str_eq(ev[0].id, "b"));
            ck_assert_int_eq(ev[0].t.when, TL_AT_EARLIER_LINE);
            ck_assert_uint_eq(ev[0].t.ns, 6000);
            ck_assert_uint_eq(ev[0].t.since_ns, 2000); /* "ok 1", the previous point */
            ck_assert_double_eq_tol(ev[0].t.duration_ms, 0.004, 1e-9);
        }
    }
    ck_assert_int_eq(k[1], 2); /* before any YAML: the anchor and the result right away */
    ck_assert_int_eq(k[5], 1); /* after: the anchor; the result is held */
    free(state);
}
END_TEST

/* A held result flushed by the next point (which is held in its turn) or by a new TAP document
 * keeps its own texts. */
START_TEST(tap_held_texts_survive)
{
    const char *l[] = {"TAP version 13", "ok 1 - a", "  ---", "  ...", "ok 2 - bbbb # SKIP why not",
                       "ok 3 - cc", "TAP version 14", "ok 1 - d"};
    const char *want[] = {NULL, "a", NULL, NULL, NULL, "bbbb", "cc", "d"};
    void *state = calloc(1, tl_format_tap.state_size);
    for (int i = 0; i < 8; i++) {
        struct tl_event ev[TL_MAX_EVENTS];
        int k = tl_format_tap.parse(state, l[i], strlen(l[i]), 1000 + (uint64_t)i * 1000, ev);
        const struct tl_event *end = NULL;
        for (int j = 0; j < k; j++)
            if (ev[j].kind == TLE_TEST_END)
                end = &ev[j];
        if (!want[i]) {
            ck_assert_msg(!end, "line %d: a result", i);
            continue;
        }
        ck_assert_msg(end && tl_str_eq(end->id, want[i]), "line %d: %.*s, want %s", i,
                      end ? (int)end->id.n : 0, end ? end->id.p : "", want[i]);
        if (i == 5)
            ck_assert(tl_str_eq(end->message, "why not"));
    }
    free(state);
}
END_TEST

/* The core's payload helpers write exactly what jsonw would. */
static uint64_t lcg_next(uint64_t *x)
{
    *x = *x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return *x >> 11;
}

static void ms3_same(bool neg, uint64_t ns)
{
    char a[32];
    size_t n = tl_fmt_ms3(a, neg, ns);
    double v = (double)ns / 1e6;
    struct jsonw w;
    jsonw_init(&w);
    jsonw_double(&w, neg ? -v : v, 3);
    ck_assert_msg(n == w.len && memcmp(a, w.buf, n) == 0, "%s%llu ns: %.*s, jsonw %s",
                  neg ? "-" : "", (unsigned long long)ns, (int)n, a, w.buf);
    jsonw_release(&w);
}

START_TEST(payload_helpers)
{
    /* (a tenth under valgrind, which runs these loops some fifty times slower) */
    const int rounds = getenv("RESMON_UNDER_VALGRIND") ? 20000 : 200000;
    for (uint64_t ns = 0; ns < (uint64_t)rounds; ns++) {
        ms3_same(false, ns);
        ms3_same(true, ns);
    }
    uint64_t x = 42;
    for (int i = 0; i < rounds; i++) {
        uint64_t ns = lcg_next(&x) >> (lcg_next(&x) % 53);
        if (i % 4 == 0)
            ns = ns / 1000 * 1000 + 500; /* ties */
        ms3_same(i & 1, ns);
    }
    static const uint64_t edge[] = {UINT64_C(8999999999999999), UINT64_C(9000000000000000),
                                    UINT64_C(9007199254740993), UINT64_MAX, UINT64_MAX / 3};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        ms3_same(false, edge[i]);
        ms3_same(true, edge[i]);
    }

    /* json_plain_prefix covers s exactly when jsonw_escape has nothing to do */
    static const char alphabet[] = "ab \"\\\x1f\x7f\x80\xc3\xa9/";
    for (int i = 0; i < rounds; i++) {
        char s[40];
        size_t n = lcg_next(&x) % sizeof s;
        bool plain = true;
        for (size_t k = 0; k < n; k++) {
            s[k] = lcg_next(&x) % 8 ? 'a' + (char)(k % 26) : alphabet[lcg_next(&x) % (sizeof alphabet - 1)];
            unsigned char c = (unsigned char)s[k];
            if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
                plain = false;
        }
        ck_assert_int_eq(json_plain_prefix(s, n) == n, plain);
        if (plain) {
            struct jsonw w;
            jsonw_init(&w);
            jsonw_escape(&w, s, n);
            ck_assert(w.len == n && (n == 0 || memcmp(w.buf, s, n) == 0));
            jsonw_release(&w);
        }
    }
}
END_TEST

/* The exact line shapes real harnesses write (tests/fixtures/real): lines fed to fmt, one per
 * '\n', must describe as want (describe()'s lines). */
static void shapes(const struct tl_format *fmt, const char *lines, const char *want)
{
    void *state = calloc(1, fmt->state_size ? fmt->state_size : 1);
    struct buf out = {0};
    buf_add(&out, "", 0);
    run_lines(fmt, state, lines, strlen(lines), &out);
    struct tl_event ev[TL_MAX_EVENTS];
    int k = fmt->flush ? fmt->flush(state, ev) : 0;
    for (int j = 0; j < k; j++)
        describe(&out, 0, &ev[j]);
    while (fmt->more && (k = fmt->more(state, ev)) > 0)
        for (int j = 0; j < k; j++)
            describe(&out, 0, &ev[j]);
    ck_assert_msg(strcmp(out.p, want) == 0, "%s:\n%s\ngot:\n%s\nwant:\n%s", fmt->name, lines, out.p,
                  want);
    free(out.p);
    if (fmt->release)
        fmt->release(state);
    free(state);
}

/* mozlog's TBPL formatter closes an unexpected result (which happened at its own line: at=) whose expected status is PASS or OK with
 * "TEST-INFO took <N>ms", other expected statuses with "TEST-INFO expected <X> | took <N>ms";
 * stack lines come in between. On stdout beside pytest, its progress character or announced file
 * name comes first. */
START_TEST(shape_tbpl)
{
    shapes(&tl_format_tbpl,
           "TEST-START | a\n"
           "TEST-UNEXPECTED-FAIL | a | boom\n"
           "TEST-INFO took 5ms\n"
           "TEST-START | b\n"
           "TEST-UNEXPECTED-PASS | b | expected TIMEOUT\n"
           "TEST-INFO expected TIMEOUT | took 7ms\n"
           "tests/test_a.py TEST-START | tests/test_a.py::t\n"
           "FTEST-UNEXPECTED-ERROR | tests/test_a.py::t | OSError (line 3)\n"
           "def t():\n"
           "TEST-INFO\n"
           ".TEST-PASS | tests/test_a.py::u | took 1ms\n"
           "xTEST-FAIL | tests/test_a.py::v | took 17ms\n"
           "TEST-INFO took a while\n",
           "1 TEST_START id=a\n"
           "2 LOG id=\n" /* held: resolved by the next TBPL line */
           "3 TEST_END id=a status=FAIL expected=PASS unexpected=1 dur=5.000 at=2000000 msg=boom\n"
           "4 TEST_START id=b\n"
           "5 LOG id=\n"
           "6 TEST_END id=b status=PASS expected=TIMEOUT unexpected=1 dur=7.000 at=5000000 "
           "msg=expected TIMEOUT\n"
           "7 TEST_START id=tests/test_a.py::t\n"
           "8 LOG id=\n"
           "10 TEST_END id=tests/test_a.py::t status=ERROR expected=PASS unexpected=1 at=8000000 "
           "msg=OSError (line 3)\n"
           "11 TEST_END id=tests/test_a.py::u status=PASS unexpected=0 dur=1.000\n"
           "12 TEST_END id=tests/test_a.py::v status=FAIL unexpected=0 dur=17.000\n");
}
END_TEST

/* pytest-xdist: ids with spaces inside the parameters, the "id " line a worker prints when it
 * starts a test; the warnings summary's bare node ids are not tests. */
START_TEST(shape_pytest)
{
    shapes(&tl_format_pytest,
           "dateutil/test/test_isoparser.py::test_isoparse_sep_none[ -2014-01-01] \n"
           "[gw1] [ 95%] PASSED dateutil/test/test_isoparser.py::test_isoparse_sep_none[ -2014-01-01] \n"
           "[gw1] [ 31%] XFAIL dateutil/test/test_tz.py::test_gettz_zone_wrong_type[no startswith()] \n"
           "[gw0] [  5%] FAILED dateutil/test/test_internals.py::test_p \n"
           "dateutil/test/test_isoparser.py::test_isoparser_invalid_sep[  ] PASSED [ 97%]\n"
           "mozlog/tests/test_logtypes.py::TestDataTypes::test_test_list\n",
           "1 TEST_START id=dateutil/test/test_isoparser.py::test_isoparse_sep_none[ -2014-01-01]\n"
           "2 TEST_END id=dateutil/test/test_isoparser.py::test_isoparse_sep_none[ -2014-01-01] "
           "status=PASS unexpected=0\n"
           "3 TEST_END id=dateutil/test/test_tz.py::test_gettz_zone_wrong_type[no startswith()] "
           "status=FAIL expected=FAIL unexpected=0\n"
           "4 TEST_END id=dateutil/test/test_internals.py::test_p status=FAIL expected=PASS "
           "unexpected=1\n"
           "5 TEST_START id=dateutil/test/test_isoparser.py::test_isoparser_invalid_sep[  ]\n"
           "5 TEST_END id=dateutil/test/test_isoparser.py::test_isoparser_invalid_sep[  ] status=PASS "
           "unexpected=0 at_line_end\n");
}
END_TEST

/* pytest's last rule: its counts (xfailed and errors are tests, warnings and deselected not; a
 * duration after the time), with or without -v; other rules are not counts. unittest's too. */
START_TEST(shape_pytest_totals)
{
    shapes(&tl_format_pytest,
           "tests/test_a.py ..Fx                                       [100%]\n"
           "======= 1 failed, 2 passed, 1 xfailed, 1 error, 3 warnings, 2 deselected in 0.12s (0:00:00) =======\n"
           "==== 5 passed in 1.23s ====\n"
           "==== no tests ran in 0.01s ====\n"
           "==== 2 workers [10 items] ====\n"
           "==== 2 failed in the end ====\n",
           "2 TOTALS id= msg=1 failed, 2 passed, 1 xfailed, 1 error, 3 warnings, 2 deselected in 0.12s (0:00:00) "
           "harness=pytest total=5 passed=2 failed=2 skipped=-1\n"
           "3 TOTALS id= msg=5 passed in 1.23s harness=pytest total=5 passed=5 failed=-1 skipped=-1\n");
    /* unittest's "Ran N tests" and its verdict after a blank line; a verdict that is not one,
     * or one without its "Ran" line, is nothing */
    shapes(&tl_format_unittest,
           "Ran 3 tests in 0.001s\n"
           "\n"
           "OK (skipped=1)\n"
           "Ran 1 test in 0.001s\n"
           "\n"
           "OK\n"
           "Ran 2 tests in 0.001s\n"
           "FAILED (oops)\n"
           "OK\n"
           "Ran 0 tests in 0.0s\n"
           "FAILED (failures=9000000000000000000, skipped=9000000000000000000)\n"
           "test_x (mod.C.test_x)\n"
           "Ran 2 tests in a row ... ok\n",
           "3 TOTALS id= msg=Ran 3 tests: OK (skipped=1) harness=unittest total=3 passed=2 failed=0 skipped=1\n"
           "6 TOTALS id= msg=Ran 1 test: OK harness=unittest total=1 passed=1 failed=0 skipped=0\n"
           "13 TEST_START id=mod.C.test_x\n"
           "13 TEST_END id=mod.C.test_x status=PASS unexpected=0 at_line_end\n");
    /* an error at the teardown of a test that passed: one test, as the results count it */
    shapes(&tl_format_pytest,
           "test_a.py::test_x PASSED\n"
           "test_a.py::test_x ERROR\n"
           "==== 1 passed, 1 error in 0.10s ====\n",
           "1 TEST_START id=test_a.py::test_x\n"
           "1 TEST_END id=test_a.py::test_x status=PASS unexpected=0 at_line_end\n"
           "2 TEST_START id=test_a.py::test_x\n"
           "2 TEST_END id=test_a.py::test_x status=ERROR expected=PASS amends=PASS unexpected=1 at_line_end\n"
           "3 TOTALS id= msg=1 passed, 1 error in 0.10s harness=pytest total=1 passed=0 failed=1 skipped=-1\n");
    /* RSpec's passed are the rest: none when the rest is less than none */
    shapes(&tl_format_rspec,
           "Finished in 0.01 seconds (files took 0.3 seconds to load)\n"
           "1 example, 3 failures, 3 pending\n",
           "2 ANCHOR id=\n"
           "2 TOTALS id= msg=1 example, 3 failures, 3 pending harness=rspec total=1 passed=-1 failed=3 skipped=3\n");
    /* numbers no harness prints: not counts */
    shapes(&tl_format_jest,
           "PASS a.test.js\n"
           "Tests:       9000000000000000000 passed, 9000000000000000000 failed, 9 total\n",
           "1 ANCHOR id=\n");
    shapes(&tl_format_vitest,
           "      Tests  1 passed (1e30)\n"
           "      Tests  1 passed (2.7)\n"
           "      Tests  1 passed (-3)\n"
           "      Tests  1 passed ()\n",
           "");
}
END_TEST

/* unittest's doctests (doctest.DocTestSuite): the description, then "Doctest: <name> ... ok". */
START_TEST(shape_unittest)
{
    shapes(&tl_format_unittest,
           "json ()\n"
           "Doctest: json ... ok\n"
           "encode (json.encoder.JSONEncoder)\n"
           "Doctest: json.encoder.JSONEncoder.encode ... ok\n"
           "test_pyjson (test.test_json.TestPyTest.test_pyjson) ... ok\n",
           "2 TEST_START id=json\n"
           "2 TEST_END id=json status=PASS unexpected=0 at_line_end\n"
           "4 TEST_START id=json.encoder.JSONEncoder.encode\n"
           "4 TEST_END id=json.encoder.JSONEncoder.encode status=PASS unexpected=0 at_line_end\n"
           "5 TEST_START id=test.test_json.TestPyTest.test_pyjson\n"
           "5 TEST_END id=test.test_json.TestPyTest.test_pyjson status=PASS unexpected=0 "
           "at_line_end\n");
}
END_TEST

/* libtest's text with --report-time and --ensure-time; #[should_panic] tests. */
START_TEST(shape_libtest)
{
    shapes(&tl_format_libtest,
           "test a ... ok <0.001s>\n"
           "test b ... FAILED (time limit exceeded) <0.160s>\n"
           "test tests::panics - should panic ... ok <0.000s>\n"
           "test src/lib.rs - add (line 3) ... FAILED <0.132s>\n"
           "{ \"type\": \"test\", \"name\": \"c\", \"event\": \"failed\", \"exec_time\": 0.3, "
           "\"reason\": \"time limit exceeded\" }\n",
           "1 TEST_START id=a\n"
           "1 TEST_END id=a status=PASS unexpected=0 dur=1.000 at_line_end\n"
           "2 TEST_START id=b\n"
           "2 TEST_END id=b status=TIMEOUT expected=PASS unexpected=1 dur=160.000 at_line_end "
           "msg=time limit exceeded\n"
           "3 TEST_START id=tests::panics\n"
           "3 TEST_END id=tests::panics status=PASS unexpected=0 dur=0.000 at_line_end\n"
           "4 TEST_START id=src/lib.rs - add (line 3)\n"
           "4 TEST_END id=src/lib.rs - add (line 3) status=FAIL expected=PASS unexpected=1 "
           "dur=132.000 at_line_end\n"
           "5 TEST_END id=c status=TIMEOUT expected=PASS unexpected=1 dur=300.000 "
           "msg=time limit exceeded\n");
}
END_TEST

/* Check: tcase names with spaces, fixture (S) results. */
START_TEST(shape_check)
{
    shapes(&tl_format_check,
           "/x/a.c:12:P:Simple Tests:test_pass:0: Passed\n"
           "check_check_fixture.c:36:S:Fix Sub:unchecked_setup:0: Test failure in fixture\n"
           "check_check_fixture.c:160:S:Setup Sig:test_sub_fail:0: (after this point) Received signal 8 "
           "(Floating point exception)\n"
           "check_check_fixture.c:150:S:Setup Fail Nofork 2:checked_setup:0: Failed setup\n"
           "a.c:1:F:x:y:z: no iteration\n",
           "1 TEST_END id=Simple Tests:test_pass status=PASS unexpected=0 msg=Passed\n"
           "2 TEST_END id=Fix Sub:unchecked_setup status=FAIL expected=PASS unexpected=1 "
           "msg=Test failure in fixture\n"
           "3 TEST_END id=Setup Sig:test_sub_fail status=CRASH expected=PASS unexpected=1 "
           "msg=(after this point) Received signal 8 (Floating point exception)\n"
           "4 TEST_END id=Setup Fail Nofork 2:checked_setup status=FAIL expected=PASS unexpected=1 "
           "msg=Failed setup\n");
}
END_TEST

/* prove -v: each file's TAP after its announcement, scoped by the file (and a subtest's points by
 * their parent); the bare "ok" verdict is no test; a skip_all file ran none (a SKIP status names
 * it), a file whose plan was not met is a file-level ERROR. */
START_TEST(shape_prove)
{
    shapes(&tl_format_tap,
           "t/basename.t .... \n"
           "ok 1 - foo.txt -> foo\n"
           "ok 2 -    .. -> ..   \n"
           "# Subtest: iterator\n"
           "    ok 1\n"
           "    1..1\n"
           "ok 3 - iterator\n"
           "1..3\n"
           "ok\n"
           "t/zz-atomic.t ... skipped: Test::MockRandom required\n"
           "t/lives_and.t ... \n"
           "1..3\n"
           "not ok 1 - use Test::Exception;\n"
           "ok 2\n"
           "Dubious, test returned 255 (wstat 65280, 0xff00)\n"
           "Failed 2/3 subtests \n"
           "t/throws_ok.t ... \n"
           "1..1\n"
           "not ok 1 - cannot pass undef # SKIP but failed\n"
           "Dubious, test returned 1 (wstat 256, 0x100)\n"
           "Failed 1/1 subtests \n",
           "1 ANCHOR id=\n"
           "2 ANCHOR id=\n"
           "2 TEST_END id=foo.txt -> foo scope=t/basename.t status=PASS unexpected=0 dur=1.000 since=1000000\n"
           "3 ANCHOR id=\n"
           "3 TEST_END id=   .. -> .. scope=t/basename.t status=PASS unexpected=0 dur=1.000 since=2000000\n"
           "4 TEST_START id=iterator scope=t/basename.t\n"
           "4 ANCHOR id=\n"
           "5 ANCHOR id=\n"
           "6 TEST_END id=1 scope=t/basename.t/iterator status=PASS unexpected=0 dur=1.000 at=5000000 since=4000000\n"
           "6 ANCHOR id=\n"
           "7 ANCHOR id=\n"
           "8 TEST_END id=iterator scope=t/basename.t status=PASS unexpected=0 at=7000000 since=3000000\n"
           "8 ANCHOR id=\n"
           "10 ANCHOR id=\n"
           "10 SUBTEST id=t/zz-atomic.t status=SKIP msg=Test::MockRandom required\n"
           "11 ANCHOR id=\n"
           "12 ANCHOR id=\n"
           "13 ANCHOR id=\n"
           "13 TEST_END id=use Test::Exception; scope=t/lives_and.t status=FAIL expected=PASS unexpected=1 dur=1.000 since=12000000\n"
           "14 ANCHOR id=\n"
           "14 TEST_END id=2 scope=t/lives_and.t status=PASS unexpected=0 dur=1.000 since=13000000\n"
           "15 TEST_END id=t/lives_and.t status=ERROR expected=PASS unexpected=1 msg=Dubious, test returned 255 (wstat 65280, 0xff00)\n"
           "17 ANCHOR id=\n"
           "18 ANCHOR id=\n"
           "19 ANCHOR id=\n"
           "19 TEST_END id=cannot pass undef scope=t/throws_ok.t status=FAIL expected=PASS unexpected=1 dur=1.000 since=18000000 msg=but failed\n");
}
END_TEST

/* Test::More's failure blocks: after their point (a late message of that test, ended by the next
 * TAP line, "# Looks like" or the end), before it (stderr, printed before prove prints the TAP:
 * the point of that name, in that file, carries the text), unnamed, a TODO's (no block), and a
 * block no point claims (nothing). */
START_TEST(shape_tap_diagnostics)
{
    shapes(&tl_format_tap,
           "1..4\n"
           "not ok 1 - sums\n"
           "#   Failed test 'sums'\n"
           "#   at t/a.t line 3.\n"
           "#          got: '2'\n"
           "#     expected: '3'\n"
           "not ok 2\n"
           "#   Failed test at t/a.t line 4.\n"
           "# Looks like you failed 2 tests of 4.\n"
           "not ok 3 - later # TODO not yet\n"
           "#   Failed (TODO) test 'later'\n"
           "#   at t/a.t line 5.\n"
           "#   Failed test 'nobody'\n"
           "#   at t/z.t line 1.\n"
           "t/b.t .. \n"
           "1..1\n"
           "not ok 1 - nobody\n",
           "1 ANCHOR id=\n"
           "2 ANCHOR id=\n"
           "2 TEST_END id=sums status=FAIL expected=PASS unexpected=1 dur=1.000 since=1000000\n"
           "7 TEST_MESSAGE id=sums msg=Failed test 'sums'\\x0aat t/a.t line 3.\\x0a       got: '2'\\x0a  expected: '3'\n"
           "7 ANCHOR id=\n"
           "7 TEST_END id=2 status=FAIL expected=PASS unexpected=1 dur=5.000 since=2000000\n"
           "9 TEST_MESSAGE id=2 msg=Failed test at t/a.t line 4.\n"
           "10 ANCHOR id=\n"
           "10 TEST_END id=later status=FAIL expected=FAIL unexpected=0 dur=3.000 since=7000000 msg=not yet\n"
           "15 ANCHOR id=\n"
           "16 ANCHOR id=\n"
           "17 ANCHOR id=\n"
           "17 TEST_END id=nobody scope=t/b.t status=FAIL expected=PASS unexpected=1 dur=1.000 since=16000000\n");
    /* stderr first: the blocks wait for their points */
    shapes(&tl_format_tap,
           "#   Failed test 'sums'\n"
           "#   at t/a.t line 3.\n"
           "#          got: '2'\n"
           "# Looks like you failed 1 test of 2.\n"
           "#   Failed test 'sums'\n"
           "#   at t/b.t line 9.\n"
           "t/b.t .. \n"
           "1..2\n"
           "ok 1 - x\n"
           "not ok 2 - sums\n"
           "t/a.t .. \n"
           "1..2\n"
           "ok 1 - x\n"
           "not ok 2 - sums\n",
           "7 ANCHOR id=\n"
           "8 ANCHOR id=\n"
           "9 ANCHOR id=\n"
           "9 TEST_END id=x scope=t/b.t status=PASS unexpected=0 dur=1.000 since=8000000\n"
           "10 ANCHOR id=\n"
           "10 TEST_END id=sums scope=t/b.t status=FAIL expected=PASS unexpected=1 dur=1.000 since=9000000 "
           "msg=Failed test 'sums'\\x0aat t/b.t line 9.\n"
           "11 ANCHOR id=\n"
           "12 ANCHOR id=\n"
           "13 ANCHOR id=\n"
           "13 TEST_END id=x scope=t/a.t status=PASS unexpected=0 dur=1.000 since=12000000\n"
           "14 ANCHOR id=\n"
           "14 TEST_END id=sums scope=t/a.t status=FAIL expected=PASS unexpected=1 dur=1.000 since=13000000 "
           "msg=Failed test 'sums'\\x0aat t/a.t line 3.\\x0a       got: '2'\n");
    /* the TAP first, the blocks after other lines (stdout read before stderr): each is the late
     * text of the failed point it names, in its file */
    shapes(&tl_format_tap,
           "t/a.t .. \n"
           "1..3\n"
           "ok 1 - x\n"
           "not ok 2 - sums\n"
           "not ok 3\n"
           "Failed 2/3 subtests \n"
           "#   Failed test 'sums'\n"
           "#   at t/a.t line 3.\n"
           "#   Failed test at t/a.t line 4.\n"
           "# Looks like you failed 2 tests of 3.\n",
           "1 ANCHOR id=\n"
           "2 ANCHOR id=\n"
           "3 ANCHOR id=\n"
           "3 TEST_END id=x scope=t/a.t status=PASS unexpected=0 dur=1.000 since=2000000\n"
           "4 ANCHOR id=\n"
           "4 TEST_END id=sums scope=t/a.t status=FAIL expected=PASS unexpected=1 dur=1.000 since=3000000\n"
           "5 ANCHOR id=\n"
           "5 TEST_END id=3 scope=t/a.t status=FAIL expected=PASS unexpected=1 dur=1.000 since=4000000\n"
           "9 TEST_MESSAGE id=sums scope=t/a.t msg=Failed test 'sums'\\x0aat t/a.t line 3.\n"
           "10 TEST_MESSAGE id=3 scope=t/a.t msg=Failed test at t/a.t line 4.\n");
}
END_TEST

/* Node's TAP: a name's escapes (control characters escaped before backslashes), and "not ok"
 * with "# SKIP", which Node counts as a failure. */
START_TEST(shape_tap_node)
{
    shapes(&tl_format_tap,
           "TAP version 13\n"
           "ok 1 - a\n"
           "  ---\n"
           "  duration_ms: 1.5\n"
           "  ...\n"
           "# Subtest: esc \\\\ \\# \\\\n\n"
           "ok 2 - esc \\\\ \\# \\\\n\n"
           "# Subtest: async skip fail\n"
           "not ok 3 - async skip fail # SKIP\n"
           "1..3\n",
           "1 ANCHOR id=\n"
           "2 ANCHOR id=\n"
           "2 TEST_END id=a status=PASS unexpected=0 dur=1.000 since=1000000\n"
           "6 TEST_START id=esc \\x5c # \\x0a\n"
           "6 ANCHOR id=\n"
           "7 ANCHOR id=\n"
           "8 TEST_END id=esc \\x5c # \\x0a status=PASS unexpected=0 at=7000000 since=2000000\n"
           "8 TEST_START id=async skip fail\n"
           "8 ANCHOR id=\n"
           "9 ANCHOR id=\n"
           "10 TEST_END id=async skip fail status=FAIL expected=PASS unexpected=1 at=9000000 since=7000000\n"
           "10 ANCHOR id=\n");
}
END_TEST

/* GoogleTest: a failure's text is its test's message. */
START_TEST(shape_gtest)
{
    shapes(&tl_format_gtest,
           "[ RUN      ] FatalFailureTest.FatalFailureInSubroutine\n"
           "(expecting a failure that x should be 1)\n"
           "test/googletest-output-test_.cc:59: Failure\n"
           "Expected equality of these values:\n"
           "  1\n"
           "  x\n"
           "    Which is: 2\n"
           "[  FAILED  ] FatalFailureTest.FatalFailureInSubroutine (0 ms)\n"
           "[ RUN      ] A.B\n"
           "[       OK ] A.B (0 ms)\n",
           "1 TEST_START id=FatalFailureTest.FatalFailureInSubroutine\n"
           "8 TEST_END id=FatalFailureTest.FatalFailureInSubroutine status=FAIL expected=PASS "
           "unexpected=1 dur=0.000 msg=Expected equality of these values:\\x0a  1\\x0a  x\\x0a    "
           "Which is: 2\n"
           "9 TEST_START id=A.B\n"
           "10 TEST_END id=A.B status=PASS unexpected=0 dur=0.000\n");
}
END_TEST

/* go test -json: a failed test's message is the located lines of its output, locations kept. */
START_TEST(shape_go)
{
    shapes(&tl_format_go,
           "{\"Action\":\"run\",\"Package\":\"os/exec\",\"Test\":\"TestExplicitPWD\"}\n"
           "{\"Action\":\"output\",\"Package\":\"os/exec\",\"Test\":\"TestExplicitPWD\","
           "\"Output\":\"    exec_posix_test.go:197: TempDir: stat /tmp/x: no such file or directory\\n\"}\n"
           "{\"Action\":\"fail\",\"Package\":\"os/exec\",\"Test\":\"TestExplicitPWD\",\"Elapsed\":0}\n",
           "1 TEST_START id=TestExplicitPWD scope=os/exec\n"
           "2 OUTPUT id=TestExplicitPWD scope=os/exec process=os/exec msg=    exec_posix_test.go:197: "
           "TempDir: stat /tmp/x: no such file or directory\n"
           "3 TEST_END id=TestExplicitPWD scope=os/exec status=FAIL expected=PASS unexpected=1 "
           "dur=0.000 late_end msg=exec_posix_test.go:197: TempDir: stat /tmp/x: no such file or directory\n");
}
END_TEST


/* ctest -j2 --output-on-failure: Start lines ahead of their results, a name the result line
 * cuts (taken from the Start line), the output after a failed result as its message, the
 * exception kinds, Not Run, Disabled, a regular-expression failure's reason; -V's "N: " lines
 * and the closing list are no results. */
START_TEST(shape_ctest)
{
    shapes(&tl_format_ctest,
           "Test project /tmp/b\n"
           "      Start  3: fails\n"
           "      Start 12: a_very_long_test_name_that_ctest_cuts_in_its_result_line\n"
           " 1/14 Test  #3: fails ............................***Failed    0.08 sec\n"
           "running fail\n"
           "check failed: expected 3, got 2\n"
           "      Start  6: segfaults\n"
           "6: [  FAILED  ] Not.AResult (3 ms)\n"
           " 2/14 Test #12: a_very_long_test_name_that_ctest_cu   Passed    1.50 sec\n"
           " 3/14 Test  #6: segfaults ........................***Exception: SegFault  0.10 sec\n"
           " 4/14 Test  #7: aborts ...........................Subprocess aborted***Exception:   0.05 sec\n"
           " 5/14 Test  #9: not_built ........................***Not Run   0.00 sec\n"
           "10/14 Test #10: disabled .........................***Not Run (Disabled)   0.00 sec\n"
           "11/14 Test #13: regex_fails ......................***Failed  Error regular expression found in output. Regex=[running]  0.05 sec\n"
           "12/14 Test  #5: hangs ............................***Timeout   0.96 sec\n"
           "running hang\n"
           "13/14 Test  #4: skips ............................***Skipped   0.02 sec\n"
           "14/14 Test  #2: math.add with spaces .............   Passed    0.02 sec\n"
           "50% tests passed, 7 tests failed out of 14\n"
           "The following tests FAILED:\n"
           "\t  3 - fails (Failed)\n",
           "2 TEST_START id=fails\n"
           "3 TEST_START id=a_very_long_test_name_that_ctest_cuts_in_its_result_line\n"
           "4 TEST_END id=fails status=FAIL expected=PASS unexpected=1 dur=80.000\n"
           "7 TEST_MESSAGE id=fails msg=running fail\\x0acheck failed: expected 3, got 2\n"
           "7 TEST_START id=segfaults\n"
           "9 TEST_END id=a_very_long_test_name_that_ctest_cuts_in_its_result_line status=PASS unexpected=0 dur=1500.000\n"
           "10 TEST_END id=segfaults status=CRASH expected=PASS unexpected=1 dur=100.000 msg=SegFault\n"
           "11 TEST_END id=aborts status=CRASH expected=PASS unexpected=1 dur=50.000 msg=Subprocess aborted\n"
           "12 TEST_END id=not_built status=ERROR expected=PASS unexpected=1 dur=0.000 msg=Not Run\n"
           "13 TEST_END id=disabled status=SKIP unexpected=0 dur=0.000 msg=Disabled\n"
           "14 TEST_END id=regex_fails status=FAIL expected=PASS unexpected=1 dur=50.000 msg=Error regular expression found in output. Regex=[running]\n"
           "15 TEST_END id=hangs status=TIMEOUT expected=PASS unexpected=1 dur=960.000\n"
           "17 TEST_MESSAGE id=hangs msg=running hang\n"
           "17 TEST_END id=skips status=SKIP unexpected=0 dur=20.000\n"
           "18 TEST_END id=math.add with spaces status=PASS unexpected=0 dur=20.000\n");
}
END_TEST

/* meson test: -v's RUNNING opens a test; a signal is a CRASH; should_fail results; TAP points as
 * meson shows them and the "Summary of Failures" are no results. */
START_TEST(shape_meson)
{
    shapes(&tl_format_meson,
           " 1/11 meson_quirks / passes               RUNNING       \n"
           ">>> MALLOC_PERTURB_=255 /tmp/b/t pass\n"
           " 1/11 meson_quirks / passes               OK              0.28s\n"
           " 6/11 meson_quirks / segfaults            FAIL            0.11s   killed by signal 11 SIGSEGV\n"
           " 7/11 meson_quirks / expected failure     EXPECTEDFAIL    0.08s   exit status 1\n"
           " 8/11 meson_quirks / unexpected pass      UNEXPECTEDPASS  0.11s\n"
           " 9/11 meson_quirks:extra / slow           OK              0.38s\n"
           "\xe2\x96\xb6 11/11 - second                          FAIL          \n"
           "11/11 meson_quirks / hangs                TIMEOUT         1.33s   killed by signal 15 SIGTERM\n"
           "Summary of Failures:\n"
           " 6/11 meson_quirks / segfaults            FAIL            0.11s   killed by signal 11 SIGSEGV\n"
           "Ok:                 3   \n"
           " 1/1 other / x  SKIP  0.00s   exit status 77\n",
           "1 TEST_START id=meson_quirks / passes\n"
           "3 TEST_END id=meson_quirks / passes status=PASS unexpected=0 dur=280.000\n"
           "4 TEST_END id=meson_quirks / segfaults status=CRASH expected=PASS unexpected=1 dur=110.000 msg=killed by signal 11 SIGSEGV\n"
           "5 TEST_END id=meson_quirks / expected failure status=FAIL expected=FAIL unexpected=0 dur=80.000 msg=exit status 1\n"
           "6 TEST_END id=meson_quirks / unexpected pass status=PASS expected=FAIL unexpected=1 dur=110.000\n"
           "7 TEST_END id=meson_quirks:extra / slow status=PASS unexpected=0 dur=380.000\n"
           "9 TEST_END id=meson_quirks / hangs status=TIMEOUT expected=PASS unexpected=1 dur=1330.000 msg=killed by signal 15 SIGTERM\n"
           "13 TEST_END id=other / x status=SKIP unexpected=0 dur=0.000 msg=exit status 77\n");
}
END_TEST

/* meson's output blocks: after a failed result (several processes), the block is a late message
 * that goes on from the result's reason; live before its result (-v, one process), the result
 * carries it; a passed test's block and an expected failure's are no text; a block cut by the
 * end of the input is still its test's. */
START_TEST(shape_meson_output)
{
    const char *cut = "\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95"
                      "\xe2\x80\x95\xe2\x80\x95 \xe2\x9c\x80  \xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95"
                      "\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\n";
    const char *end = "\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95"
                      "\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\xe2\x80\x95\n";
    char in[4096];
    snprintf(in, sizeof in,
             "1/5 calc_gtest RUNNING       \n"
             "2/5 tap_script RUNNING       \n"
             "1/5 calc_gtest FAIL            0.25s   exit status 1\n"
             "%s[  FAILED  ] Calc.Fails (0 ms)\n 1 FAILED TEST\n%s"
             "2/5 tap_script OK              0.14s\n"
             "%snot ok 2 - writes\n%s"
             "3/5 live_one RUNNING       \n"
             ">>> MALLOC_PERTURB_=32 /b/live_one\n"
             "%sboom\n%s"
             "3/5 live_one FAIL            0.10s   killed by signal 6 SIGABRT\n"
             "4/5 xfails EXPECTEDFAIL    0.10s   exit status 1\n"
             "%sexpected\n%s"
             "5/5 cut_short FAIL            0.10s   exit status 2\n"
             "%sstill running\n",
             cut, end, cut, end, cut, end, cut, end, cut);
    shapes(&tl_format_meson, in,
           "1 TEST_START id=calc_gtest\n"
           "2 TEST_START id=tap_script\n"
           "3 TEST_END id=calc_gtest status=FAIL expected=PASS unexpected=1 dur=250.000 msg=exit status 1\n"
           "7 TEST_MESSAGE id=calc_gtest msg=exit status 1\\x0a[  FAILED  ] Calc.Fails (0 ms)\\x0a 1 FAILED TEST\n"
           "8 TEST_END id=tap_script status=PASS unexpected=0 dur=140.000\n"
           "12 TEST_START id=live_one\n"
           "17 TEST_END id=live_one status=CRASH expected=PASS unexpected=1 dur=100.000 msg=killed by signal 6 SIGABRT\\x0aboom\n"
           "18 TEST_END id=xfails status=FAIL expected=FAIL unexpected=0 dur=100.000 msg=exit status 1\n"
           "22 TEST_END id=cut_short status=FAIL expected=PASS unexpected=1 dur=100.000 msg=exit status 2\n"
           "0 TEST_MESSAGE id=cut_short msg=exit status 2\\x0astill running\n");
}
END_TEST

/* TeamCity: two flows interleaved, each with its suites, each test's failure kept for its own
 * testFinished (the second flow's test of a running full name is not opened: the core would take
 * it for the first's end; one of that name in another suite is); a test scoped by its flow's
 * suites, nested (a '/' in a suite's name is only a character); escapes in names and texts; an
 * ignored test; message and details on lines of their own; a failure outside any test (a hook's,
 * in a flow of its own) is a result at once. */
START_TEST(shape_teamcity)
{
    shapes(&tl_format_teamcity,
           "##teamcity[testSuiteStarted name='suite' flowId='1']\n"
           "##teamcity[testSuiteStarted name='suite' flowId='2']\n"
           "##teamcity[testStarted name='a |'quoted|' |[x|]' flowId='1']\n"
           "##teamcity[testStarted name='a |'quoted|' |[x|]' flowId='2']\n"
           "##teamcity[testFailed name='a |'quoted|' |[x|]' flowId='2' message='line one|nline two' details='at x.c:3 |0x00e9']\n"
           "##teamcity[testFinished name='a |'quoted|' |[x|]' flowId='1' duration='12']\n"
           "##teamcity[testFinished name='a |'quoted|' |[x|]' flowId='2' duration='7']\n"
           "##teamcity[testSuiteStarted name='in/ner' flowId='1']\n"
           "##teamcity[testStarted name='skipped' flowId='1']\n"
           "##teamcity[testIgnored name='skipped' flowId='1' message='not on this OS']\n"
           "##teamcity[testFinished name='skipped' flowId='1']\n"
           "##teamcity[testSuiteFinished name='in/ner' flowId='1']\n"
           "##teamcity[testSuiteFinished name='suite' flowId='2']\n"
           "##teamcity[testSuiteStarted name='other' flowId='2']\n"
           "##teamcity[testStarted name='x' flowId='1']\n"
           "##teamcity[testStarted name='x' flowId='2']\n"
           "##teamcity[testFinished name='x' flowId='2']\n"
           "##teamcity[testFinished name='x' flowId='1']\n"
           "##teamcity[testSuiteFinished name='other' flowId='2']\n"
           "##teamcity[testFailed name='hook' flowId='1_hook' message='before all broke']\n"
           "##teamcity[message text='hello' status='NORMAL']\n"
           "##teamcity[progressMessage 'compiling']\n"
           "##teamcity[testSuiteFinished name='suite' flowId='1']\n"
           "##teamcity[testStarted name='after' flowId='1']\n"
           "##teamcity[testFinished name='after' flowId='1']\n",
           "1 SUITE_START id=suite\n"
           "2 SUITE_START id=suite\n"
           "3 TEST_START id=a 'quoted' [x] scope=suite\n"
           "6 TEST_END id=a 'quoted' [x] scope=suite status=PASS unexpected=0 dur=12.000\n"
           "7 TEST_END id=a 'quoted' [x] scope=suite status=FAIL expected=PASS unexpected=1 dur=7.000 msg=line one\\x0aline two\\x0aat x.c:3 \\xc3\\xa9\n"
           "8 SUITE_START id=in/ner\n"
           "9 TEST_START id=skipped scope=suite/in/ner\n"
           "11 TEST_END id=skipped scope=suite/in/ner status=SKIP unexpected=0 msg=not on this OS\n"
           "12 SUITE_END id=in/ner\n"
           "13 SUITE_END id=suite\n"
           "14 SUITE_START id=other\n"
           "15 TEST_START id=x scope=suite\n"
           "16 TEST_START id=x scope=other\n"
           "17 TEST_END id=x scope=other status=PASS unexpected=0\n"
           "18 TEST_END id=x scope=suite status=PASS unexpected=0\n"
           "19 SUITE_END id=other\n"
           "20 TEST_END id=hook status=FAIL expected=PASS unexpected=1 msg=before all broke\n"
           "23 SUITE_END id=suite\n"
           "24 TEST_START id=after\n"
           "25 TEST_END id=after status=PASS unexpected=0\n");
}
END_TEST

/* TeamCity suites nested past what a scope holds (512 bytes): the suite that does not fit adds
 * nothing to its tests' scope, and the outer suite stays open after its end. */
START_TEST(shape_teamcity_deep_suites)
{
    char a[301], b[301], in[4096], want[4096], ad[160], bd[160];
    memset(a, 'a', 300), a[300] = '\0';
    memset(b, 'b', 300), b[300] = '\0';
    snprintf(ad, sizeof ad, "%.120s...(300)", a); /* as describe() shows them */
    snprintf(bd, sizeof bd, "%.120s...(300)", b);
    snprintf(in, sizeof in,
             "##teamcity[testSuiteStarted name='%s']\n"
             "##teamcity[testSuiteStarted name='%s']\n"
             "##teamcity[testStarted name='t']\n"
             "##teamcity[testFinished name='t']\n"
             "##teamcity[testSuiteFinished name='%s']\n"
             "##teamcity[testStarted name='u']\n"
             "##teamcity[testFinished name='u']\n"
             "##teamcity[testSuiteFinished name='%s']\n"
             "##teamcity[testStarted name='v']\n"
             "##teamcity[testFinished name='v']\n",
             a, b, b, a);
    snprintf(want, sizeof want,
             "1 SUITE_START id=%s\n2 SUITE_START id=%s\n3 TEST_START id=t scope=%s\n"
             "4 TEST_END id=t scope=%s status=PASS unexpected=0\n5 SUITE_END id=%s\n"
             "6 TEST_START id=u scope=%s\n7 TEST_END id=u scope=%s status=PASS unexpected=0\n"
             "8 SUITE_END id=%s\n9 TEST_START id=v\n10 TEST_END id=v status=PASS unexpected=0\n",
             ad, bd, ad, ad, bd, ad, ad, ad);
    shapes(&tl_format_teamcity, in, want);
}
END_TEST

/* cmocka: a bracketed line the test prints that names another test is its output; the failure
 * text from the ERROR/LINE lines and the lines between; a caught signal; a failed setup; the
 * summary lists are no results; GoogleTest's parser takes none of it. */
START_TEST(shape_cmocka)
{
    static const char log[] =
        "[==========] Running 4 test(s).\n"
        "[ RUN      ] prints\n"
        "[  FAILED  ] printed by the test\n"
        "[       OK ] prints\n"
        "[ RUN      ] fails_msg\n"
        "ERROR: explicit failure 42\n"
        "[  ERROR   ] --- [   LINE   ] --- t.c:14: error: Failure!\n"
        "[  FAILED  ] fails_msg\n"
        "[ RUN      ] segfaults\n"
        "[  ERROR   ] --- Test failed with exception: Segmentation fault(11)\n"
        "[  FAILED  ] segfaults\n"
        "[ RUN      ] after_setup\n"
        "Could not run test: Test setup failed\n"
        "[  ERROR   ] after_setup\n"
        "[==========] 4 test(s) run.\n"
        "[  PASSED  ] 1 test(s).\n"
        "[  FAILED  ] 2 test(s), listed below:\n"
        "[  FAILED  ] fails_msg\n"
        "[  FAILED  ] segfaults\n";
    shapes(&tl_format_cmocka, log,
           "2 TEST_START id=prints\n"
           "4 TEST_END id=prints status=PASS unexpected=0\n"
           "5 TEST_START id=fails_msg\n"
           "8 TEST_END id=fails_msg status=FAIL expected=PASS unexpected=1 msg=ERROR: explicit failure 42\\x0at.c:14: error: Failure!\n"
           "9 TEST_START id=segfaults\n"
           "11 TEST_END id=segfaults status=CRASH expected=PASS unexpected=1 msg=Test failed with exception: Segmentation fault(11)\n"
           "12 TEST_START id=after_setup\n"
           "14 TEST_END id=after_setup status=ERROR expected=PASS unexpected=1 msg=Could not run test: Test setup failed\n");
    shapes(&tl_format_gtest, log, "");
}
END_TEST


/* Catch2 -s: a test case's sections are one test; its failed assertions are its text; a line of
 * dashes that is no header is nothing; the totals end the last test case. */
START_TEST(shape_catch2)
{
    shapes(&tl_format_catch2,
           "-------------------------------------------------------------------------------\n"
           "sections\n"
           "  first\n"
           "-------------------------------------------------------------------------------\n"
           "t.cpp:12\n"
           "...............................................................................\n"
           "t.cpp:12: PASSED:\n"
           "  REQUIRE( true )\n"
           "-------------------------------------------------------------------------------\n"
           "sections\n"
           "  second\n"
           "-------------------------------------------------------------------------------\n"
           "t.cpp:12\n"
           "...............................................................................\n"
           "t.cpp:13: FAILED:\n"
           "  REQUIRE( false )\n"
           "-------------------------------------------------------------------------------\n"
           "not a header\n"
           "-------------------------------------------------------------------------------\n"
           "-------------------------------------------------------------------------------\n"
           "slow\n"
           "-------------------------------------------------------------------------------\n"
           "t.cpp:16\n"
           "...............................................................................\n"
           "t.cpp:16: PASSED:\n"
           "===============================================================================\n"
           "test cases: 2 | 1 passed | 1 failed\n",
           "6 TEST_START id=sections at=1000000\n"
           "24 TEST_END id=sections status=FAIL expected=PASS unexpected=1 at=16000000 "
           "msg=t.cpp:13: FAILED:\\x0a  REQUIRE( false )\n"
           "24 TEST_START id=slow at=20000000\n"
           "26 TEST_END id=slow status=PASS unexpected=0 at=25000000\n");
}
END_TEST


/* doctest -d: the duration line ends a test case, the verdict after it (should_fail) decides its
 * status; a TEST SUITE line in the header; the totals end the last one. */
START_TEST(shape_doctest)
{
    shapes(&tl_format_doctest,
           "===============================================================================\n"
           "t.cpp:16:\n"
           "TEST CASE:  should fail\n"
           "t.cpp:16: ERROR: CHECK( false ) is NOT correct!\n"
           "  values: CHECK( false )\n"
           "0.000036 s: should fail\n"
           "Failed as expected so marking it as not failed\n"
           "===============================================================================\n"
           "t.cpp:18:\n"
           "TEST SUITE: suite a\n"
           "TEST CASE:  in a suite\n"
           "t.cpp:19: FATAL ERROR: REQUIRE( 2 == 3 ) is NOT correct!\n"
           "===============================================================================\n"
           "[doctest] test cases:  2 | 1 passed | 1 failed\n",
           "3 TEST_START id=should fail at=1000000\n"
           "11 TEST_END id=should fail status=FAIL expected=FAIL unexpected=0 dur=0.036 at=6000000 "
           "msg=t.cpp:16: ERROR: CHECK( false ) is NOT correct!\\x0a  values: CHECK( false )\n"
           "11 TEST_START id=in a suite at=8000000\n"
           "14 TEST_END id=in a suite status=FAIL expected=PASS unexpected=1 at=12000000 "
           "msg=t.cpp:19: FATAL ERROR: REQUIRE( 2 == 3 ) is NOT correct!\n");
}
END_TEST

/* Each new format's lines are its own: no other parser takes them (ctest's and meson's "K/N"
 * lines, cmocka's brackets, TeamCity's messages), nor do they take each other's. */
START_TEST(foreign_lines)
{
    static const struct {
        const struct tl_format *owner;
        const char *line;
    } lines[] = {
        {&tl_format_ctest, " 1/14 Test  #1: passes ...........................   Passed    0.03 sec"},
        {&tl_format_ctest, "13/14 Test #13: regex ***Failed  Error regular expression found in output. Regex=[ok 1]  0.02 sec"},
        {&tl_format_ctest, "      Start  1: passes"},
        {&tl_format_meson, " 1/11 meson_quirks / passes               OK              0.27s"},
        {&tl_format_meson, "10/11 meson_quirks / tap                  FAIL            0.14s   1/2 subtests passed"},
        {&tl_format_teamcity, "##teamcity[testStarted name='ok 1 - x' flowId='1']"},
        {&tl_format_teamcity, "##teamcity[testFinished name='[ RUN      ] A.b' flowId='1' duration='3']"},
        {&tl_format_mozlog, "{\"action\": \"test_start\", \"test\": \"x\", \"time\": 1}"},
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        for (size_t f = 0; f < NFORMATS; f++) {
            if (formats[f] == lines[i].owner)
                continue;
            void *state = state_new(formats[f]);
            struct tl_event ev[TL_MAX_EVENTS];
            int k = formats[f]->parse(state, lines[i].line, strlen(lines[i].line), 1000000, ev);
            ck_assert_msg(k == 0, "%s took %s's \"%s\"", formats[f]->name, lines[i].owner->name,
                          lines[i].line);
            state_free(formats[f], state);
        }
}
END_TEST

/* mocha spec: a result counts only at the level below the innermost suite; a title line is a
 * suite only when its first child follows; failures are numbered in order; the summary's count
 * must be the passes seen. Lines a test prints in between are none of these. */
START_TEST(shape_mocha)
{
    shapes(&tl_format_mocha,
           "  \xe2\x9c\x94 root test\n"
           "  Suite A\n"
           "    \xe2\x9c\x94 slow one (120ms)\n"
           "  \xe2\x9c\x94 printed by a test at the wrong level\n"
           "  1 passing (3ms)\n"
           "    2) printed, out of order\n"
           "  - printed bullet\n"
           "    1) fails\n"
           "    inner\n"
           "      \xe2\x9c\x94 deep\n"
           "      - pending one\n"
           "  B\n"
           "    2) \"before all\" hook for \"x\"\n"
           "  3 passing (9ms)\n"
           "  1 pending\n"
           "  2 failing\n"
           "  1) Suite A\n"
           "       fails:\n"
           "     Error: two\n"
           "lines\n"
           "      at Context.<anonymous> (t.js:1:1)\n"
           "  2) B\n"
           "       \"before all\" hook for \"x\":\n"
           "      AssertionError [ERR_ASSERTION]: 1 == 2\n"
           "      + expected - actual\n"
           "      -1\n"
           "  \xe2\x9c\x94 next run\n",
           "1 ANCHOR id=\n"
           "1 TEST_END id=root test status=PASS unexpected=0\n"
           "3 ANCHOR id=\n"
           "3 TEST_END id=Suite A slow one status=PASS unexpected=0 dur=120.000\n"
           "8 ANCHOR id=\n"
           "8 TEST_END id=Suite A fails status=FAIL expected=PASS unexpected=1 dur=5.000 since=3000000\n"
           "10 ANCHOR id=\n"
           "10 TEST_END id=Suite A inner deep status=PASS unexpected=0 dur=2.000 since=8000000\n"
           "11 ANCHOR id=\n"
           "11 TEST_END id=Suite A inner pending one status=SKIP unexpected=0 dur=1.000 since=10000000\n"
           "13 ANCHOR id=\n"
           "13 TEST_END id=B \"before all\" hook for \"x\" status=ERROR expected=PASS unexpected=1 dur=2.000 since=11000000\n"
           "14 ANCHOR id=\n"
           "21 TEST_MESSAGE id=Suite A fails msg=Error: two\\x0alines\n"
           "25 TEST_MESSAGE id=B \"before all\" hook for \"x\" msg=AssertionError [ERR_ASSERTION]: 1 == 2\n"
           "27 ANCHOR id=\n"
           "27 TEST_END id=next run status=PASS unexpected=0\n");
}
END_TEST

/* mocha json-stream: pass and fail events (a hook's failure an ERROR, the stack's head the
 * message), start and end name no test, other arrays are not it. */
START_TEST(shape_mocha_json_stream)
{
    shapes(&tl_format_mocha,
           "[\"start\",{\"total\":3}]\n"
           "[\"pass\",{\"title\":\"t\",\"fullTitle\":\"S t\",\"duration\":12}]\n"
           "[\"fail\",{\"title\":\"\\\"before all\\\" hook for \\\"u\\\"\",\"fullTitle\":\"S h\",\"duration\":1,"
           "\"err\":\"boom\",\"stack\":\"Error: boom\\nsecond\\n    at x (a.js:1:1)\"}]\n"
           "[\"fail\",{\"title\":\"v\",\"fullTitle\":\"S v\",\"err\":\"no stack\"}]\n"
           "[\"other\",{\"fullTitle\":\"S w\"}]\n"
           "[\"pass\",{\"title\":\"x\"}]\n"
           "[\"end\",{\"passes\":1,\"failures\":2}]\n",
           "1 ANCHOR id=\n"
           "2 TEST_END id=S t status=PASS unexpected=0 dur=12.000\n"
           "3 TEST_END id=S h status=ERROR expected=PASS unexpected=1 dur=1.000 msg=Error: boom\\x0asecond\n"
           "4 TEST_END id=S v status=FAIL expected=PASS unexpected=1 msg=no stack\n"
           "7 ANCHOR id=\n");
}
END_TEST

/* RSpec's lists: a pending entry's reason, a failure's lines after "Failure/Error:" up to the
 * backtrace, entries only in order and only inside a list. */
/* RSpec --format documentation: a plain line is a group or a passed example, which the next tree
 * line tells (a passed example ends at its own line, having run since the tree line before it);
 * the tree is trusted from a "(FAILED - 1)" or "(PENDING: ...)" line, or RSpec's totals after
 * "Finished in", and what was held goes out then; a line deeper than the tree allows is not
 * one of it; the last plain line of an interrupted run is no result; the lists then give texts,
 * not second results. */
START_TEST(shape_rspec_documentation)
{
    /* passes held until the first failure, then results as the tree goes */
    shapes(&tl_format_rspec,
           "Randomized with seed 1234\n"
           "Cart\n"
           "  #total\n"
           "    is zero\n"
           "          a line the example printed, deeper than the tree allows\n"
           "    sums\n"
           "    with a discount\n"
           "      takes ten percent (FAILED - 1)\n"
           "      never negative (PENDING: no discounts)\n"
           "  .new\n"
           "    makes one\n"
           "Stock\n"
           "  counts\n"
           "Failures:\n"
           "  1) Cart#total with a discount takes ten percent\n"
           "     Failure/Error: expect(9.0).to eq(9.5)\n"
           "       expected: 9.5\n"
           "     # ./spec/shop_spec.rb:14\n"
           "Finished in 0.04 seconds (files took 0.3 seconds to load)\n"
           "7 examples, 1 failure, 1 pending\n",
           "8 TEST_END id=Cart#total with a discount takes ten percent status=FAIL expected=PASS unexpected=1 dur=1.000 since=7000000\n"
           "8 TEST_END id=Cart#total is zero status=PASS unexpected=0 dur=1.000 at=4000000 since=3000000\n"
           "8 TEST_END id=Cart#total sums status=PASS unexpected=0 dur=2.000 at=6000000 since=4000000\n"
           "9 TEST_END id=Cart#total with a discount never negative status=SKIP unexpected=0 dur=1.000 since=8000000 msg=no discounts\n"
           "10 ANCHOR id=\n"
           "11 ANCHOR id=\n"
           "12 TEST_END id=Cart.new makes one status=PASS unexpected=0 dur=1.000 at=11000000 since=10000000\n"
           "12 ANCHOR id=\n"
           "13 ANCHOR id=\n"
           "14 TEST_END id=Stock counts status=PASS unexpected=0 dur=1.000 at=13000000 since=12000000\n"
           "14 ANCHOR id=\n"
           "15 ANCHOR id=\n"
           "18 TEST_MESSAGE id=Cart#total with a discount takes ten percent msg=expected: 9.5\n"
           "20 ANCHOR id=\n"
           "20 TOTALS id= msg=7 examples, 1 failure, 1 pending harness=rspec total=7 passed=5 failed=1 skipped=1\n");
    /* passes only: held to the totals (a line the prefilter never offers it, between, changes
     * nothing) */
    shapes(&tl_format_rspec,
           "Stock\n"
           "  counts\n"
           "  when restocked\n"
           "    adds\n"
           "Finished in 0.01 seconds (files took 0.3 seconds to load)\n"
           "# not RSpec's\n"
           "2 examples, 0 failures\n",
           "7 ANCHOR id=\n"
           "7 TOTALS id= msg=2 examples, 0 failures harness=rspec total=2 passed=2 failed=0 skipped=-1\n"
           "7 TEST_END id=Stock counts status=PASS unexpected=0 dur=1.000 at=2000000 since=1000000\n"
           "7 TEST_END id=Stock when restocked adds status=PASS unexpected=0 dur=1.000 at=4000000 since=3000000\n");
    /* no evidence: no result (a traceback, an indented listing, mocha's spec reporter) */
    shapes(&tl_format_rspec,
           "Traceback (most recent call last)\n"
           "  File x.py, line 1, in <module>\n"
           "    main()\n"
           "Packages\n"
           "  libfoo\n"
           "  libbar\n"
           "  Calculator\n"
           "    ok adds\n",
           "");
    /* interrupted: the plain line last read (a group whose first example hangs, or a passed
     * example) is no result */
    shapes(&tl_format_rspec,
           "Network\n"
           "  connects\n"
           "  retries (FAILED - 1)\n"
           "  when the server hangs\n",
           "3 TEST_END id=Network retries status=FAIL expected=PASS unexpected=1 dur=1.000 since=2000000\n"
           "3 TEST_END id=Network connects status=PASS unexpected=0 dur=1.000 at=2000000 since=1000000\n"
           "4 ANCHOR id=\n");
}
END_TEST

/* RSpec's held passes are bounded by bytes, not by their number: past the bound the earliest are
 * forgotten, the latest still go out at the evidence, each once. */
START_TEST(rspec_held_bounded)
{
    void *state = state_new(&tl_format_rspec);
    struct tl_event ev[TL_MAX_EVENTS];
    char line[256];
    const char *g = "Suite";
    ck_assert_int_eq(tl_format_rspec.parse(state, g, strlen(g), 1, ev), 0);
    size_t n = 40000; /* ~4.5 MB of names */
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(line, sizeof line, "  passes example number %06zu with a long description to fill the hold", i);
        ck_assert_int_eq(tl_format_rspec.parse(state, line, (size_t)len, 2 + i, ev), 0);
    }
    const char *f = "  fails (FAILED - 1)";
    int k = tl_format_rspec.parse(state, f, strlen(f), 2 + n, ev);
    ck_assert_int_eq(k, 1); /* the failure; the plain line before it, a passed example, is held too */
    ck_assert(ev[k - 1].kind == TLE_TEST_END && tl_str_eq(ev[k - 1].status, "FAIL"));
    size_t passes = 0, last = 0;
    bool first = true;
    while ((k = tl_format_rspec.more(state, ev)) > 0)
        for (int j = 0; j < k; j++) {
            ck_assert(ev[j].kind == TLE_TEST_END && tl_str_eq(ev[j].status, "PASS"));
            size_t num = (size_t)atol(ev[j].id.p + sizeof "Suite passes example number " - 1);
            ck_assert(first || num == last + 1);
            first = false;
            last = num;
            passes++;
        }
    ck_assert_uint_eq(last, n - 1);
    ck_assert(passes > 1000 && passes < n); /* the earliest forgotten, a bounded number kept */
    ck_assert_int_eq(tl_format_rspec.more(state, ev), 0);
    state_free(&tl_format_rspec, state);
}
END_TEST

START_TEST(shape_rspec)
{
    shapes(&tl_format_rspec,
           "  1) before any list\n"
           "Pending: (Failures listed here are expected and do not affect your suite's status)\n"
           "  1) C is skipped\n"
           "     # no time\n"
           "     # ./spec/c_spec.rb:17\n"
           "Failures:\n"
           "  1) C raises\n"
           "     Failure/Error: raise \"x\"\n"
           "     RuntimeError:\n"
           "       first line\n"
           "     # ./spec/c_spec.rb:22:in `block'\n"
           "  3) out of order\n"
           "  2) C add fails\n"
           "     Failure/Error: expect(1 + 1).to eq(3)\n"
           "       expected: 3\n"
           "            got: 2\n"
           "Finished in 0.1 seconds\n"
           "  3) after the lists\n",
           "2 ANCHOR id=\n"
           "3 TEST_END id=C is skipped status=SKIP unexpected=0\n"
           "4 TEST_MESSAGE id=C is skipped msg=no time\n"
           "6 ANCHOR id=\n"
           "7 TEST_END id=C raises status=FAIL expected=PASS unexpected=1\n"
           "11 TEST_MESSAGE id=C raises msg=RuntimeError:\\x0afirst line\n"
           "13 TEST_END id=C add fails status=FAIL expected=PASS unexpected=1\n"
           "17 TEST_MESSAGE id=C add fails msg=expected: 3\\x0a     got: 2\n");
}
END_TEST

/* jest: tree lines under a file's result line, "●" blocks (a test's message with --verbose, the
 * failed test itself without), console blocks taken whole as output, "● Console". */
START_TEST(shape_jest)
{
    shapes(&tl_format_jest,
           "  \xe2\x9c\x93 before any file line\n"
           "  console.log\n"
           "    ok 1 - tap lookalike\n"
           "      \xe2\x9c\x93 not a test\n"
           "      at Object.log (a.test.js:3:13)\n"
           "FAIL src/a.test.js (5.2 s)\n"
           "  \xe2\x9c\x93 root (2 ms)\n"
           "  Outer\n"
           "    \xe2\x9c\x95 fails (1.5 s)\n"
           "    \xe2\x97\x8b skipped skip me\n"
           "    \xe2\x9c\x8e todo later\n"
           "  \xe2\x97\x8f Outer \xe2\x80\xba fails\n"
           "    expect(received).toBe(expected)\n"
           "    Expected: 3\n"
           "    > 7 |     expect(1).toBe(3);\n"
           "      at Object.toBe (a.test.js:7:21)\n"
           "FAIL b.test.js\n"
           "  \xe2\x97\x8f Console\n"
           "    console.error\n"
           "      PASS fake.test.js\n"
           "      at Object.error (b.test.js:2:3)\n"
           "  \xe2\x97\x8f Outer \xe2\x80\xba fails too\n"
           "    thrown: boom\n"
           "Tests:       2 failed, 1 passed, 3 total\n"
           "  \xe2\x9c\x93 after the summary\n",
           "2 OUTPUT id= msg=  console.log\n"
           "3 OUTPUT id= msg=    ok 1 - tap lookalike\n"
           "4 OUTPUT id= msg=      \\xe2\\x9c\\x93 not a test\n"
           "5 OUTPUT id= msg=      at Object.log (a.test.js:3:13)\n"
           "6 ANCHOR id=\n"
           "7 TEST_END id=root scope=src/a.test.js status=PASS unexpected=0 dur=2.000\n"
           "9 TEST_END id=Outer \\xe2\\x80\\xba fails scope=src/a.test.js status=FAIL expected=PASS unexpected=1 dur=1500.000\n"
           "10 TEST_END id=Outer \\xe2\\x80\\xba skip me scope=src/a.test.js status=SKIP unexpected=0\n"
           "11 TEST_END id=Outer \\xe2\\x80\\xba later scope=src/a.test.js status=SKIP unexpected=0\n"
           "15 TEST_MESSAGE id=Outer \\xe2\\x80\\xba fails scope=src/a.test.js msg=expect(received).toBe(expected)\\x0aExpected: 3\n"
           "17 ANCHOR id=\n"
           "18 OUTPUT id= msg=Console\n"
           "19 OUTPUT id= msg=    console.error\n"
           "20 OUTPUT id= msg=      PASS fake.test.js\n"
           "21 OUTPUT id= msg=      at Object.error (b.test.js:2:3)\n"
           "22 TEST_END id=Outer \\xe2\\x80\\xba fails too scope=b.test.js status=FAIL expected=PASS unexpected=1\n"
           "24 TEST_MESSAGE id=Outer \\xe2\\x80\\xba fails too scope=b.test.js msg=thrown: boom\n"
           "24 TOTALS id= msg=2 failed, 1 passed, 3 total harness=jest total=3 passed=1 failed=2 skipped=-1\n");
}
END_TEST

/* vitest: verbose lines (file and titles), the default reporter's failed file and its tests, a
 * passed file (its tests unnamed), "→" messages with unindented continuation lines, "stdout |"
 * blocks taken whole up to the next result. */
START_TEST(shape_vitest)
{
    shapes(&tl_format_vitest,
           " \xe2\x9c\x93 t/a.test.js > Outer > adds 1ms\n"
           " \xc3\x97 t/a.test.js > Outer > fails 1.5s\n"
           "   \xe2\x86\x92 first line\n"
           "second line\n"
           "stdout | t/a.test.js > Outer > prints\n"
           "ok 1 - tap lookalike\n"
           " \xe2\x86\x93 t/a.test.js > Outer > skipped\n"
           " \xe2\x9d\xaf t/b.test.js (2 tests | 1 failed) 30ms\n"
           "   \xe2\x9c\x93 root 0ms\n"
           "   \xc3\x97 In > broken 3ms\n"
           "     \xe2\x86\x92 boom\n"
           " \xe2\x9c\x93 t/c.test.js (2 tests) 4ms\n"
           "   \xe2\x9c\x93 not listed by vitest here 1ms\n"
           " Test Files  1 failed | 2 passed (3)\n"
           "      Tests  2 failed | 3 passed | 1 skipped | 1 todo (7)\n"
           "      Tests  many failed (7)\n",
           "1 TEST_END id=Outer > adds scope=t/a.test.js status=PASS unexpected=0 dur=1.000\n"
           "2 TEST_END id=Outer > fails scope=t/a.test.js status=FAIL expected=PASS unexpected=1 dur=1500.000\n"
           "3 ANCHOR id=\n"
           "4 ANCHOR id=\n"
           "5 TEST_MESSAGE id=Outer > fails scope=t/a.test.js msg=first line\\x0asecond line\n"
           "5 OUTPUT id= msg=stdout | t/a.test.js > Outer > prints\n"
           "6 OUTPUT id= msg=ok 1 - tap lookalike\n"
           "7 TEST_END id=Outer > skipped scope=t/a.test.js status=SKIP unexpected=0\n"
           "8 ANCHOR id=\n"
           "9 TEST_END id=root scope=t/b.test.js status=PASS unexpected=0 dur=0.000\n"
           "10 TEST_END id=In > broken scope=t/b.test.js status=FAIL expected=PASS unexpected=1 dur=3.000\n"
           "11 ANCHOR id=\n"
           "12 TEST_MESSAGE id=In > broken scope=t/b.test.js msg=boom\n"
           "15 TOTALS id= msg=2 failed | 3 passed | 1 skipped | 1 todo (7) harness=vitest total=7 passed=3 "
           "failed=2 skipped=2\n");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("testlog_formats");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"fixtures", fixtures},        {"tap_hold", tap_hold_timing},
        {"tap_held_texts", tap_held_texts_survive},
        {"plain", plain_text_rejected}, {"zeroed_idle", zeroed_state_idle},
        {"huge", huge_names},          {"rfc3339", rfc3339},
        {"numbers", numbers},          {"payload_helpers", payload_helpers},
        {"shape_tbpl", shape_tbpl},    {"shape_pytest", shape_pytest},
        {"shape_unittest", shape_unittest}, {"shape_libtest", shape_libtest},
        {"shape_check", shape_check},  {"shape_prove", shape_prove},
        {"shape_tap_node", shape_tap_node}, {"shape_tap_diagnostics", shape_tap_diagnostics}, {"shape_gtest", shape_gtest},
        {"shape_go", shape_go},
        {"shape_ctest", shape_ctest},  {"shape_meson", shape_meson}, {"shape_meson_output", shape_meson_output},
        {"shape_teamcity", shape_teamcity}, {"shape_teamcity_deep_suites", shape_teamcity_deep_suites},
        {"shape_cmocka", shape_cmocka},
        {"foreign_lines", foreign_lines}, {"shape_catch2", shape_catch2},
        {"shape_doctest", shape_doctest}, {"shape_mocha", shape_mocha},
        {"shape_pytest_totals", shape_pytest_totals}, {"shape_jest", shape_jest},    {"shape_vitest", shape_vitest},
        {"shape_mocha_json_stream", shape_mocha_json_stream}, {"shape_rspec", shape_rspec}, {"shape_rspec_documentation", shape_rspec_documentation}, {"rspec_held_bounded", rspec_held_bounded},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return check_run(suite());
}
