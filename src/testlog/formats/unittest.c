/* Python unittest -v (testlog/formats.h has the result mapping). unittest writes to stderr.
 *
 *   test_x (mod.Class.test_x) ... ok        Python >= 3.11: id = mod.Class.test_x
 *   test_x (mod.Class) ... ok               older: id = mod.Class.test_x
 *   json ()                                 a module's doctest (doctest.DocTestSuite), then
 *   Doctest: json ... ok                    its description line: id = json
 *   encode (json.encoder.JSONEncoder)       a function's or method's doctest, then
 *   Doctest: json.encoder.JSONEncoder.encode ... ok     id = json.encoder.JSONEncoder.encode
 * Results: "ok" → PASS, "FAIL" → FAIL, "ERROR" → ERROR, "skipped 'why'" → SKIP (message why),
 * "expected failure" → known FAIL, "unexpected success" → unexpected PASS; a " (0.012s)" suffix
 * (--durations) gives duration_ms.
 *
 * unittest prints the description when the test starts and the result when it ends, so a complete
 * line is TLE_TEST_START (first byte) + TLE_TEST_END at TL_AT_LINE_END. When the test wrote to the
 * same stream, the line ends with "... " or with that output: TLE_TEST_START, and the test stays
 * pending until a line that is only a result. A test with a docstring prints "test_x (mod.C.test_x)"
 * alone, then "First docstring line ... ok": the first line is remembered (no event) and the next
 * line, if it holds " ... ", is that test's.
 *
 * Failure texts come after all results, one block per failure:
 *   ======================================================================
 *   FAIL: test_x (mod.Class.test_x)            (or ERROR:, UNEXPECTED SUCCESS:; a docstring line
 *   ----------------------------------------------------------------------   may follow)
 *   Traceback (most recent call last):
 *     File "/path/mod.py", line 12, in test_x   (the frames: indented)
 *       self.assertEqual(1, 2)
 *   AssertionError: 1 != 2                      the exception: the test's message, to the next
 *                                               block's "====" or the closing "----" rule
 * A chained exception ("During handling of the above exception ...") prints a traceback per
 * exception: the last one's exception is the message, as it is the error's. The block's end is
 * a TLE_TEST_MESSAGE for the test its header names.
 *
 * The run's counts close it, with or without -v: "Ran 7 tests in 0.003s", a blank line, then
 * "OK", "OK (skipped=1)" or "FAILED (failures=2, errors=1, skipped=1, expected failures=1,
 * unexpected successes=1)": TLE_TOTALS (failed: failures, errors and unexpected successes).
 */
#include "testlog/formats.h"

#include <stdio.h>

#include "testlog/testlog.h"

enum unittest_block {
    UT_NONE,
    UT_HEADER, /* after a "====" rule: the "FAIL: ..." line */
    UT_DOC,    /* after it: its docstring, to the "----" rule */
    UT_TRACE,  /* the traceback and the exception */
};

struct unittest_state {
    bool pending;   /* started, result to come on a line of its own */
    bool candidate; /* "test_x (mod.C)" seen on the previous line */
    char id[TESTLOG_ID_MAX];
    size_t id_len;
    unsigned output; /* lines of the pending test's output so far */
    enum unittest_block block;
    bool exc; /* the exception's lines have begun */
    char bid[TESTLOG_ID_MAX]; /* the block's test */
    size_t bid_len;
    char msg[TESTLOG_MESSAGE_MAX];
    size_t msg_n;
    bool after_ran;  /* "Ran N tests in ..." came: its OK or FAILED line is to come */
    int64_t ran;     /* its N */
    char words[192]; /* the counts' words, for TLE_TOTALS */
};

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A whole result "ok", "skipped 'x'", ... (with an optional " (0.001s)"). */
static bool parse_result(struct tl_str s, enum tl_outcome *ret_oc, struct tl_str *ret_msg,
                         double *ret_ms)
{
    s = tl_trim(s);
    *ret_ms = __builtin_nan("");
    *ret_msg = tl_str_make(NULL, 0);
    if (s.n > 4 && s.p[s.n - 1] == ')' && s.p[s.n - 2] == 's') {
        size_t i = s.n - 2;
        while (i > 0 && s.p[i - 1] != '(')
            i--;
        double v;
        if (i >= 2 && s.p[i - 2] == ' ' && tl_parse_number(tl_str_make(s.p + i, s.n - 2 - i), &v) &&
            v >= 0) {
            *ret_ms = v * 1000.0;
            s.n = i - 2;
        }
    }
    if (tl_str_eq(s, "ok"))
        *ret_oc = TL_PASSED;
    else if (tl_str_eq(s, "FAIL"))
        *ret_oc = TL_FAILED;
    else if (tl_str_eq(s, "ERROR"))
        *ret_oc = TL_ERRORED;
    else if (tl_str_eq(s, "expected failure"))
        *ret_oc = TL_KNOWN_FAIL;
    else if (tl_str_eq(s, "unexpected success"))
        *ret_oc = TL_UNEXPECTED_PASS;
    else if (TL_PREFIX(s.p, s.n, "skipped")) {
        struct tl_str r = tl_trim(tl_str_make(s.p + 7, s.n - 7));
        if (r.n >= 2 && (r.p[0] == '\'' || r.p[0] == '"') && r.p[r.n - 1] == r.p[0])
            r = tl_str_make(r.p + 1, r.n - 2);
        *ret_oc = TL_SKIPPED;
        *ret_msg = r;
    } else
        return false;
    return true;
}

/* "name (dotted)" at the start of the line: where it ends. */
struct desc {
    struct tl_str name, dotted;
    size_t end;
};

/* A method name that is no identifier ("test_X_(Advanced)", "test_pair_(1, 2)": generated
 * tests): only the form that repeats it, "name (mod.Class.name)", tells where it ends. first: the
 * length of the name's identifier prefix; the dotted name's run of identifier characters and dots
 * then stops at the same character, so the '.' before the repeated name is first + 1 before that
 * stop. A few " (" are tried: a description has its own at once. */
static bool parse_desc_any(const char *line, size_t len, size_t first, struct desc *ret)
{
    size_t lim = len < TESTLOG_ID_MAX ? len : TESTLOG_ID_MAX;
    const char *q = line;
    for (int tries = 0; tries < 8 && (q = memmem(q + 1, (size_t)(line + lim - q - 1), " (", 2)); tries++) {
        size_t i = (size_t)(q - line), j = i + 2, k = j;
        while (k < len && (ident_char(line[k]) || line[k] == '.'))
            k++;
        if (k < j + first + 1)
            continue;
        size_t p = k - first - 1;
        if (line[p] == '.' && len - p - 1 > i && line[p + 1 + i] == ')' &&
            !memcmp(line + p + 1, line, i)) {
            ret->name = tl_str_make(line, i);
            ret->dotted = tl_str_make(line + j, p + 1 + i - j);
            ret->end = p + 2 + i;
            return true;
        }
    }
    return false;
}

static bool parse_desc(const char *line, size_t len, struct desc *ret)
{
    size_t i = 0;
    if (!len || (line[0] >= '0' && line[0] <= '9'))
        return false;
    while (i < len && ident_char(line[i]))
        i++;
    if (i > 0 && i + 3 <= len && memchr("()[],-", line[i], 6))
        return parse_desc_any(line, len, i, ret); /* rare: plain text costs no search */
    if (i == 0 || i + 3 > len || line[i] != ' ' || line[i + 1] != '(')
        return false;
    size_t d = i + 2, j = d;
    while (j < len && (ident_char(line[j]) || line[j] == '.'))
        j++;
    if (j >= len || line[j] != ')')
        return false; /* "()": a module's doctest */
    ret->name = tl_str_make(line, i);
    ret->dotted = tl_str_make(line + d, j - d);
    ret->end = j + 1;
    return true;
}

/* The test's id in buf (cap bytes): the dotted name, with the method appended in the old form.
 * Returns its length. */
static size_t desc_id(char *buf, size_t cap, const struct desc *d)
{
    size_t nl = d->name.n;
    bool new_form = d->dotted.n > nl + 1 && d->dotted.p[d->dotted.n - nl - 1] == '.' &&
                    memcmp(d->dotted.p + d->dotted.n - nl, d->name.p, nl) == 0;
    size_t n = tl_copy(buf, cap, d->dotted).n;
    if (!new_form && n + 1 + nl <= cap) {
        if (n)
            buf[n++] = '.';
        memcpy(buf + n, d->name.p, nl);
        n += nl;
    }
    return n;
}

static void keep_id(struct unittest_state *st, const struct desc *d)
{
    st->id_len = desc_id(st->id, sizeof st->id, d);
}

/* The block read so far is complete: its exception is its test's message. */
static int end_block(struct unittest_state *st, struct tl_event *ev)
{
    bool full = st->block == UT_TRACE && st->exc;
    st->block = UT_NONE;
    while (st->msg_n && (st->msg[st->msg_n - 1] == '\n' || st->msg[st->msg_n - 1] == ' '))
        st->msg_n--;
    if (!full || !st->msg_n || !st->bid_len)
        return 0;
    tl_event_init(ev, TLE_TEST_MESSAGE);
    ev->id = tl_str_make(st->bid, st->bid_len);
    ev->message = tl_str_make(st->msg, st->msg_n);
    return 1;
}

/* A line of the failures' blocks (or the rule that begins one): the events it ends. */
static int block_line(struct unittest_state *st, const char *line, size_t len, struct tl_event *ev)
{
    if (tl_rule(line, len, '=')) {
        int n = end_block(st, ev);
        st->block = UT_HEADER;
        return n;
    }
    switch (st->block) {
    case UT_NONE:
        return 0;
    case UT_HEADER: {
        static const char *const kinds[] = {"FAIL: ", "ERROR: ", "UNEXPECTED SUCCESS: "};
        struct desc d;
        st->block = UT_NONE;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            size_t k = strlen(kinds[i]);
            if (len > k && !memcmp(line, kinds[i], k) && parse_desc(line + k, len - k, &d)) {
                st->bid_len = desc_id(st->bid, sizeof st->bid, &d);
                st->block = UT_DOC;
            }
        }
        return 0;
    }
    case UT_DOC:
        if (tl_rule(line, len, '-')) {
            st->block = UT_TRACE;
            st->exc = false;
            st->msg_n = 0;
        }
        return 0;
    case UT_TRACE:
        if (tl_rule(line, len, '-')) /* before "Ran N tests" */
            return end_block(st, ev);
        if (TL_PREFIX(line, len, "Traceback (most recent call last):")) {
            st->exc = false; /* a chained exception: the last one is the error's */
            st->msg_n = 0;
        } else if (st->exc || (len && line[0] != ' ')) {
            st->exc = true;
            tl_append_line(st->msg, sizeof st->msg, &st->msg_n, tl_str_make(line, len));
        }
        return 0;
    }
    return 0;
}

/* What follows the description: " ... result", " ... output", or " ..." at the end. */
static int after_desc(struct unittest_state *st, const char *p, size_t n, struct tl_event *ev)
{
    struct tl_str id = tl_str_make(st->id, st->id_len);
    tl_event_init(&ev[0], TLE_TEST_START);
    ev[0].id = id;
    enum tl_outcome oc;
    struct tl_str msg;
    double ms;
    if (parse_result(tl_str_make(p, n), &oc, &msg, &ms)) {
        tl_set_result(&ev[1], id, tl_str_make(NULL, 0), oc);
        ev[1].message = msg;
        ev[1].t.duration_ms = ms;
        ev[1].t.when = TL_AT_LINE_END;
        st->pending = false;
        return 2;
    }
    st->pending = true;
    st->output = 0;
    return 1;
}

/* "Ran 7 tests in 0.003s": 7 (-1: not that line). */
static int64_t ran_line(const char *line, size_t len)
{
    if (!TL_PREFIX(line, len, "Ran "))
        return -1;
    int64_t n = 0;
    size_t i = 4;
    while (i < len && line[i] >= '0' && line[i] <= '9' && n <= TL_COUNT_MAX)
        n = n * 10 + (line[i++] - '0');
    if (i == 4 || n > TL_COUNT_MAX || !(TL_PREFIX(line + i, len - i, " tests in ") || TL_PREFIX(line + i, len - i, " test in ")))
        return -1;
    return n;
}

/* The line after "Ran N tests" (a blank one between): "OK", "OK (skipped=1)", "FAILED
 * (failures=2, errors=1, skipped=1, expected failures=1, unexpected successes=1)": the run's
 * counts. Failures, errors and unexpected successes fail the run (failed); the passed are the
 * rest. False: not that line. */
static bool verdict_line(struct unittest_state *st, const char *line, size_t len, struct tl_event *ev)
{
    struct tl_str rest;
    if (len == 2 && !memcmp(line, "OK", 2))
        rest = tl_str_make(line + 2, 0);
    else if (TL_PREFIX(line, len, "OK (") && line[len - 1] == ')')
        rest = tl_str_make(line + 4, len - 5);
    else if (TL_PREFIX(line, len, "FAILED (") && line[len - 1] == ')')
        rest = tl_str_make(line + 8, len - 9);
    else
        return false;
    int64_t failed = 0, skipped = 0, other = 0;
    for (size_t i = 0; i < rest.n;) {
        size_t e = i;
        while (e < rest.n && !(e + 2 <= rest.n && !memcmp(rest.p + e, ", ", 2)))
            e++;
        const char *eq = memchr(rest.p + i, '=', e - i);
        if (!eq)
            return false;
        struct tl_str key = tl_str_make(rest.p + i, (size_t)(eq - rest.p - i));
        int64_t v = 0;
        const char *d = eq + 1;
        if (d == rest.p + e)
            return false;
        for (; d < rest.p + e; d++) {
            if (*d < '0' || *d > '9' || v > TL_COUNT_MAX)
                return false;
            v = v * 10 + (*d - '0');
        }
        if (v > TL_COUNT_MAX)
            return false;
        if (tl_str_eq(key, "failures") || tl_str_eq(key, "errors") || tl_str_eq(key, "unexpected successes"))
            failed += v;
        else if (tl_str_eq(key, "skipped"))
            skipped += v;
        else if (tl_str_eq(key, "expected failures"))
            other += v;
        else
            return false;
        if (failed > TL_COUNT_MAX || skipped > TL_COUNT_MAX || other > TL_COUNT_MAX)
            return false;
        i = e + (e < rest.n ? 2 : 0);
    }
    int n = snprintf(st->words, sizeof st->words, "Ran %lld test%s: %.*s", (long long)st->ran,
                     st->ran == 1 ? "" : "s", (int)(len < 160 ? len : 160), line);
    tl_event_init(ev, TLE_TOTALS);
    ev->name = tl_str_make("unittest", 8);
    ev->message = tl_str_make(st->words, n > 0 && (size_t)n < sizeof st->words ? (size_t)n : sizeof st->words - 1);
    int64_t passed = st->ran - failed - skipped - other;
    ev->counts = (struct tl_counts){st->ran, passed >= 0 ? passed : -1, failed, skipped};
    return true;
}

static int unittest_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                          struct tl_event *ev)
{
    struct unittest_state *st = state;
    if (st->after_ran) {
        /* after "Ran N tests": a blank line, then its verdict */
        if (!len)
            return 0;
        st->after_ran = false;
        if (verdict_line(st, line, len, ev))
            return 1;
    }
    if (st->block == UT_NONE && !st->pending && !st->candidate && (st->ran = ran_line(line, len)) >= 0) {
        st->after_ran = true;
        return 0;
    }
    if (st->block != UT_NONE || (len && line[0] == '='))
        return block_line(st, line, len, ev);
    bool candidate = st->candidate;
    st->candidate = false;
    struct desc d;
    if (len >= 5 && ident_char(line[0]) && parse_desc(line, len, &d)) {
        size_t end = d.end;
        if (end == len) {
            keep_id(st, &d);
            st->candidate = true;
            st->pending = false;
            return 0;
        }
        if (end + 4 > len || memcmp(line + end, " ...", 4) != 0 ||
            (end + 4 < len && line[end + 4] != ' '))
            return 0;
        keep_id(st, &d);
        return after_desc(st, line + end + 4, len - end - 4, ev);
    }
    if (candidate) {
        /* The docstring's first line, then " ... ". */
        const char *dots = memmem(line, len, " ... ", 5);
        size_t at = dots ? (size_t)(dots - line) + 5 : 0;
        if (!dots && len >= 4 && memcmp(line + len - 4, " ...", 4) == 0)
            at = len;
        if (at)
            return after_desc(st, line + at, len - at, ev);
    }
    if (st->pending)
        st->output++;
    if (st->pending && len < 200) {
        enum tl_outcome oc;
        struct tl_str msg;
        double ms;
        if (parse_result(tl_str_make(line, len), &oc, &msg, &ms)) {
            st->pending = false;
            tl_set_result(ev, tl_str_make(st->id, st->id_len), tl_str_make(NULL, 0), oc);
            ev->message = msg;
            ev->t.duration_ms = ms;
            ev->t.when = TL_AT_LINE_END;
            return 1;
        }
    }
    return 0;
}

/* The output ended inside a block (killed, or the closing rule never came). */
static int unittest_flush(void *state, struct tl_event *ev)
{
    return end_block(state, ev);
}

static bool unittest_busy(const void *state)
{
    const struct unittest_state *st = state;
    return st->pending || st->candidate || st->block != UT_NONE || st->after_ran;
}

/* What a test prints between its description and its result is its output, as is a failure's
 * block (its traceback, -b's captured output): no line of theirs is another format's result.
 * A pending test whose result never comes stops capturing after UT_OUTPUT_MAX lines. */
#define UT_OUTPUT_MAX 10000
static bool unittest_captures(const void *state)
{
    const struct unittest_state *st = state;
    return (st->pending && st->output < UT_OUTPUT_MAX) || st->block == UT_DOC ||
           st->block == UT_TRACE;
}

const struct tl_format tl_format_unittest = {
    .name = "unittest",
    .bit = TL_FMT_UNITTEST,
    .state_size = sizeof(struct unittest_state),
    .parse = unittest_parse,
    .release = NULL,
    /* a description starts with an identifier (not a digit); a failure's block with a rule */
    .first_bytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_",
    .pairs = (const char *const[]){"==", NULL},
    .busy = unittest_busy,
    .captures = unittest_captures,
    .flush = unittest_flush,
};
