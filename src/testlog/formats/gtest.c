/* GoogleTest console output (testlog/formats.h has the result mapping).
 *
 *   [ RUN      ] Suite.Name                       → TLE_TEST_START id = Suite.Name
 *   [       OK ] Suite.Name (12 ms)               → TLE_TEST_END PASS, duration 12 ms
 *   [  FAILED  ] Suite.Name (3 ms)                → FAIL (", where GetParam() = ..." is dropped
 *                                                   from the id)
 *   [  SKIPPED ] Suite.Name (0 ms)                → SKIP
 *   [----------] N tests from Suite               → TLE_SUITE_START id = Suite
 *   [----------] N tests from Suite (X ms total)  → TLE_SUITE_END, duration X ms
 *
 * A failure or skip inside a test ("test/a.cc:12: Failure", "test/a.cc:12: Skipped", the lines
 * after it being its text) gives the test's result its message: the text after the first such
 * line, its lines joined by newlines, up to the next "[" line (bounded). An exception escaping
 * the test is "unknown file: Failure" then 'C++ exception with description "boom" thrown in the
 * test body.', the same way. A test's later failures stay in the text with their location lines,
 * so the message is what gtest's XML report says of its failures, the first location left out.
 *
 * The closing summary ("[==========] N tests from M test suites ran.") repeats failed and skipped
 * tests as "[  FAILED  ] Suite.Name" without a time: after that line nothing is a result until the
 * next "[==========] Running ...". Result lines without a time outside the summary are results
 * (--gtest_print_time=0).
 *
 * cmocka prints lines of the same shape; from its "[==========] Running N test(s)." to
 * GoogleTest's next "[==========] Running ..." nothing is taken here (cmocka.c reads it).
 */
#include "testlog/formats.h"

#include <math.h>

#include "testlog/testlog.h"

struct gtest_state {
    bool cmocka; /* in a cmocka run (cmocka.c), up to GoogleTest's next "Running" */
    bool in_summary;
    bool in_test;    /* a RUN line opened a test */
    bool collecting; /* after its first "file:line: Failure": the lines are its message */
    size_t msg_n;
    char msg[1024];
};

/* "path.cc:12: Failure" or "...: Skipped": its first word holds a '.' (the prefilter's promise);
 * "unknown file: Failure" (an exception) */
static bool failure_line(const char *line, size_t len)
{
    if (len <= 9 || (memcmp(line + len - 9, ": Failure", 9) && memcmp(line + len - 9, ": Skipped", 9)))
        return false;
    if (TL_PREFIX(line, len, "unknown file: "))
        return true;
    for (size_t i = 0; i < len && line[i] != ' '; i++)
        if (line[i] == '.')
            return true;
    return false;
}

/* Split "name[, where ...] (N ms[ total])" into the name and N. */
static struct tl_str split_time(struct tl_str s, const char *unit, double *ret_ms)
{
    size_t ul = strlen(unit);
    *ret_ms = __builtin_nan("");
    if (s.n > ul + 2 && s.p[s.n - 1] == ')' && memcmp(s.p + s.n - 1 - ul, unit, ul) == 0) {
        size_t end = s.n - 1 - ul, i = end;
        while (i > 0 && s.p[i - 1] != '(')
            i--;
        double v;
        if (i >= 2 && s.p[i - 2] == ' ' && tl_parse_number(tl_str_make(s.p + i, end - i), &v) &&
            v >= 0) {
            *ret_ms = v;
            s.n = i - 2;
        }
    }
    const char *w = memmem(s.p, s.n, ", where ", 8);
    if (w)
        s.n = (size_t)(w - s.p);
    return tl_trim(s);
}

static int gtest_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                       struct tl_event *ev)
{
    struct gtest_state *st = state;
    if (tl_cmocka_run_line(line, len)) {
        st->cmocka = true;
        st->in_test = st->collecting = false;
        return 0;
    }
    if (st->cmocka) {
        if (!TL_PREFIX(line, len, "[==========] Running "))
            return 0;
        st->cmocka = false;
    }
    if (len == 0 || line[0] != '[') {
        if (st->collecting) {
            /* a line of the failure's text */
            if (st->msg_n && st->msg_n < sizeof st->msg)
                st->msg[st->msg_n++] = '\n';
            st->msg_n += tl_copy(st->msg + st->msg_n, sizeof st->msg - st->msg_n,
                                 tl_str_make(line, len)).n;
            if (st->msg_n >= sizeof st->msg)
                st->collecting = false;
        } else if (st->in_test && !st->msg_n && failure_line(line, len))
            st->collecting = true;
        return 0;
    }
    st->collecting = false;
    if (len < 14 || line[11] != ']' || line[12] != ' ')
        return 0;
    struct tl_str rest = tl_trim(tl_str_make(line + 13, len - 13));
    const char *tag = line + 1;
    double ms;
    if (!memcmp(tag, " RUN      ", 10)) {
        st->in_summary = false;
        st->in_test = true;
        st->msg_n = 0;
        struct tl_str id = split_time(rest, " ms", &ms);
        if (!id.n)
            return 0;
        tl_event_init(ev, TLE_TEST_START);
        ev->id = id;
        return 1;
    }
    enum tl_outcome oc;
    if (!memcmp(tag, "       OK ", 10))
        oc = TL_PASSED;
    else if (!memcmp(tag, "  FAILED  ", 10))
        oc = TL_FAILED;
    else if (!memcmp(tag, "  SKIPPED ", 10))
        oc = TL_SKIPPED;
    else if (!memcmp(tag, "----------", 10)) {
        /* "N test(s) from Suite[ (X ms total)]" */
        size_t i = 0;
        while (i < rest.n && rest.p[i] >= '0' && rest.p[i] <= '9')
            i++;
        struct tl_str r = tl_str_make(rest.p + i, rest.n - i);
        if (i == 0)
            return 0;
        if (TL_PREFIX(r.p, r.n, " tests from "))
            r = tl_str_make(r.p + 12, r.n - 12);
        else if (TL_PREFIX(r.p, r.n, " test from "))
            r = tl_str_make(r.p + 11, r.n - 11);
        else
            return 0;
        struct tl_str suite = split_time(r, " ms total", &ms);
        if (!suite.n)
            return 0;
        tl_event_init(ev, !isnan(ms) ? TLE_SUITE_END : TLE_SUITE_START);
        ev->id = suite;
        ev->t.duration_ms = ms;
        return 1;
    } else if (!memcmp(tag, "==========", 10)) {
        if (TL_PREFIX(rest.p, rest.n, "Running "))
            st->in_summary = false;
        else if (memmem(rest.p, rest.n, " ran.", 5))
            st->in_summary = true;
        return 0;
    } else
        return 0;
    struct tl_str id = split_time(rest, " ms", &ms);
    if (!id.n || (st->in_summary && isnan(ms)))
        return 0;
    /* "[  FAILED  ] 2 tests, listed below:" and the like. */
    if (id.p[0] >= '0' && id.p[0] <= '9' && memmem(id.p, id.n, " test", 5) && !memchr(id.p, '.', id.n))
        return 0;
    tl_set_result(ev, id, tl_str_make(NULL, 0), oc);
    ev->t.duration_ms = ms;
    if (st->in_test && oc != TL_PASSED)
        ev->message = tl_trim(tl_str_make(st->msg, st->msg_n));
    st->in_test = false;
    return 1;
}

static bool gtest_busy(const void *state) { return ((const struct gtest_state *)state)->collecting; }

const struct tl_format tl_format_gtest = {
    .name = "gtest",
    .bit = TL_FMT_GTEST,
    .state_size = sizeof(struct gtest_state),
    .parse = gtest_parse,
    .release = NULL,
    .pairs = (const char *const[]){"[ ", "[-", "[=", "un", NULL},
    .dotted_word = true, /* "path.cc:12: Failure" ("un": "unknown file: Failure") */
    .busy = gtest_busy,
};
