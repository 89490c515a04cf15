/* CMake's ctest console output, plain, -V/-VV and -j N (testlog/formats.h has the result
 * mapping).
 *
 *         Start  3: name                              → TLE_TEST_START id = name
 *    3/14 Test  #3: name .........   Passed    0.03 sec → TLE_TEST_END PASS, duration 30 ms
 *   ***Failed [reason]                                → FAIL (message: ctest's reason, e.g.
 *                                                       "Error regular expression found in
 *                                                       output. Regex=[x]")
 *   ***Timeout                                        → TIMEOUT
 *   ***Skipped, ***Not Run (Disabled)                 → SKIP ("Disabled" as message)
 *   ***Not Run                                        → ERROR (the command could not be run:
 *                                                       ctest lists it among the failed tests)
 *   [kind]***Exception: [kind]                        → CRASH, message the kind ("SegFault",
 *                                                       "Numerical", "Subprocess aborted")
 *   anything else                                     → FAIL with the status text as message
 *
 * A result line pads the name with dots to a fixed width and cuts a longer name, so the name is
 * taken from the test's Start line (by its number) when the parser still holds it; -j N prints
 * several Start lines before their results, in any order. --output-on-failure prints a failed
 * test's output after its result, up to the next ctest line: it becomes that test's failure text
 * (a TLE_TEST_MESSAGE, which the test keeps when its result line gave none), and no other
 * format reads it (tl_format.captures): a test that runs another harness (a GoogleTest binary, a
 * TAP script) is one ctest test, as in ctest's own report, whose output shows the inner harness's
 * results. -V prefixes the test's output with "N: " (which no format takes: the same holds) and
 * prints "test N" before each Start line: neither is a result.
 * The closing lists ("The following tests FAILED:" and the tab-indented lines under it) repeat
 * results and are not parsed.
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

#define CTEST_OPEN 64    /* Start lines remembered (ctest -j N has N open) */
#define CTEST_NAME 512

struct ctest_state {
    struct {
        unsigned num;
        size_t n;
        char name[CTEST_NAME];
    } open[CTEST_OPEN];
    unsigned next; /* ring position */
    /* --output-on-failure: the text after a failed result, for the test named msg_id */
    bool collecting;
    size_t msg_n, id_n;
    unsigned cur; /* id[cur] names it: the other may still be in an event of this call */
    char msg[TESTLOG_MESSAGE_MAX], id[2][CTEST_NAME];
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Digits at s[*i..]: their value; false when none. */
static bool number(const char *s, size_t n, size_t *i, unsigned *ret)
{
    size_t b = *i;
    unsigned v = 0;
    while (*i < n && is_digit(s[*i]) && *i - b < 9)
        v = v * 10 + (unsigned)(s[(*i)++] - '0');
    *ret = v;
    return *i > b;
}

/* "  Start  3: name" (leading spaces already skipped: s at 'S') */
static int start_line(struct ctest_state *st, const char *s, size_t n, struct tl_event *ev)
{
    size_t i = 5;
    unsigned num;
    while (i < n && s[i] == ' ')
        i++;
    if (i == 5 || !number(s, n, &i, &num) || i + 2 > n || s[i] != ':' || s[i + 1] != ' ')
        return 0;
    struct tl_str name = tl_trim(tl_str_make(s + i + 2, n - i - 2));
    if (!name.n)
        return 0;
    unsigned k = st->next++ % CTEST_OPEN;
    st->open[k].num = num;
    name = tl_copy(st->open[k].name, CTEST_NAME, name);
    st->open[k].n = name.n;
    tl_event_init(ev, TLE_TEST_START);
    ev->id = name;
    return 1;
}

/* The name a Start line gave test number num, and forget it; NULL when none is held. */
static struct tl_str take_name(struct ctest_state *st, unsigned num)
{
    for (unsigned k = 0; k < CTEST_OPEN; k++)
        if (st->open[k].n && st->open[k].num == num) {
            struct tl_str s = tl_str_make(st->open[k].name, st->open[k].n);
            st->open[k].n = 0;
            return s;
        }
    return tl_str_make(NULL, 0);
}

/* "3/14 Test  #3: name ....   Passed    0.03 sec" (s at the first digit) */
static int result_line(struct ctest_state *st, const char *s, size_t n, struct tl_event *ev)
{
    size_t i = 0;
    unsigned k, total, num;
    /* ctest counts from 1 and pads with spaces, never zeros: a count starting with '0' is not
     * its own (nor one its prefilter pairs, " 1" to " 9", would let through) */
    if (s[0] == '0' || !number(s, n, &i, &k) || i >= n || s[i++] != '/' || !number(s, n, &i, &total) ||
        !TL_PREFIX(s + i, n - i, " Test "))
        return 0;
    i += 5;
    while (i < n && s[i] == ' ')
        i++;
    if (i >= n || s[i++] != '#' || !number(s, n, &i, &num) || i + 2 > n || s[i] != ':' ||
        s[i + 1] != ' ')
        return 0;
    struct tl_str rest = tl_str_make(s + i + 2, n - i - 2);
    /* "<time> sec" at the end */
    if (rest.n < 6 || memcmp(rest.p + rest.n - 4, " sec", 4))
        return 0;
    size_t e = rest.n - 4, b = e;
    while (b > 0 && (is_digit(rest.p[b - 1]) || rest.p[b - 1] == '.'))
        b--;
    double secs;
    if (b == e || b == 0 || rest.p[b - 1] != ' ' || !tl_parse_number(tl_str_make(rest.p + b, e - b), &secs))
        return 0;
    struct tl_str head = tl_trim(tl_str_make(rest.p, b)); /* "name ....   Passed" */
    /* the status text follows the dots that pad the name (a name that fills the width has none) */
    struct tl_str name = take_name(st, num), status;
    const char *dots = NULL;
    for (size_t j = 0; j + 1 < head.n; j++)
        if (head.p[j] == ' ' && head.p[j + 1] == '.') {
            size_t d = j + 1;
            while (d < head.n && head.p[d] == '.')
                d++;
            if (d < head.n && (head.p[d] == ' ' || head.p[d] == '*' || (d > j + 2)))
                dots = head.p + j;
        }
    if (dots) {
        const char *p = dots + 1;
        while (p < head.p + head.n && *p == '.')
            p++;
        status = tl_trim(tl_str_make(p, (size_t)(head.p + head.n - p)));
        if (!name.n)
            name = tl_str_make(head.p, (size_t)(dots - head.p));
    } else {
        const char *p = memmem(head.p, head.n, "   Passed", 9);
        if (!p) {
            p = memmem(head.p, head.n, "***", 3);
            if (!p)
                return 0;
            while (p > head.p && p[-1] != ' ')
                p--; /* "Subprocess aborted***Exception:" */
        }
        status = tl_trim(tl_str_make(p, (size_t)(head.p + head.n - p)));
        if (!name.n)
            name = tl_trim(tl_str_make(head.p, (size_t)(p - head.p)));
    }
    if (!name.n || !status.n)
        return 0;

    enum tl_outcome oc;
    struct tl_str msg = tl_str_make(NULL, 0);
    const char *exc = memmem(status.p, status.n, "***Exception:", 13);
    if (tl_str_eq(status, "Passed"))
        oc = TL_PASSED;
    else if (exc) {
        oc = TL_CRASHED;
        msg = tl_trim(tl_str_make(exc + 13, (size_t)(status.p + status.n - exc - 13)));
        if (!msg.n)
            msg = tl_trim(tl_str_make(status.p, (size_t)(exc - status.p)));
    } else if (TL_PREFIX(status.p, status.n, "***Failed")) {
        oc = TL_FAILED;
        msg = tl_trim(tl_str_make(status.p + 9, status.n - 9));
    } else if (TL_PREFIX(status.p, status.n, "***Timeout"))
        oc = TL_TIMED_OUT;
    else if (TL_PREFIX(status.p, status.n, "***Skipped"))
        oc = TL_SKIPPED;
    else if (TL_PREFIX(status.p, status.n, "***Not Run (Disabled)")) {
        oc = TL_SKIPPED;
        msg = TL_LIT("Disabled");
    } else if (TL_PREFIX(status.p, status.n, "***Not Run")) {
        oc = TL_ERRORED;
        msg = TL_LIT("Not Run");
    } else {
        oc = TL_FAILED;
        msg = status;
    }
    tl_set_result(ev, name, tl_str_make(NULL, 0), oc);
    ev->t.duration_ms = secs * 1000;
    ev->message = msg;
    /* --output-on-failure: the text that follows is this test's */
    st->collecting = oc != TL_PASSED && oc != TL_SKIPPED;
    st->msg_n = 0;
    st->cur ^= 1;
    st->id_n = tl_copy(st->id[st->cur], sizeof st->id[0], name).n;
    return 1;
}

/* The failure text gathered since the last failed result, as a TLE_TEST_MESSAGE (0: none). */
static int take_message(struct ctest_state *st, struct tl_event *ev)
{
    bool had = st->collecting && st->msg_n;
    st->collecting = false;
    if (!had)
        return 0;
    tl_event_init(ev, TLE_TEST_MESSAGE);
    ev->id = tl_str_make(st->id[st->cur], st->id_n);
    ev->message = tl_str_make(st->msg, st->msg_n);
    return 1;
}

/* "test 3", which -V prints before a test's Start line */
static bool test_n(const char *s, size_t n)
{
    size_t i = 5;
    if (!TL_PREFIX(s, n, "test ") || n == i)
        return false;
    while (i < n && is_digit(s[i]))
        i++;
    return i == n;
}

static bool ctest_line(const char *s, size_t n)
{
    return TL_PREFIX(s, n, "Start ") || test_n(s, n) || TL_PREFIX(s, n, "Test project ") ||
           (is_digit(s[0]) && (memmem(s, n < 32 ? n : 32, " Test ", 6) ||
                               memmem(s, n, "% tests passed, ", 16))) ||
           TL_PREFIX(s, n, "The following tests ") || TL_PREFIX(s, n, "Total Test time");
}

static int ctest_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                       struct tl_event *ev)
{
    (void)arrival_ns;
    struct ctest_state *st = state;
    size_t i = 0;
    while (i < len && i < 16 && line[i] == ' ')
        i++;
    const char *s = line + i;
    size_t n = len - i;
    if (!n)
        return 0;
    if (st->collecting && !ctest_line(s, n)) {
        /* the failed test's output */
        if (!tl_append_line(st->msg, sizeof st->msg, &st->msg_n, tl_str_make(line, len)))
            st->collecting = st->msg_n > 0; /* full: keep what fits until the block ends */
        return 0;
    }
    int k = take_message(st, ev);
    if (TL_PREFIX(s, n, "Start ") && i >= 2)
        return k + start_line(st, s, n, ev + k);
    if (is_digit(s[0]))
        return k + result_line(st, s, n, ev + k);
    return k;
}

static int ctest_flush(void *state, struct tl_event *ev) { return take_message(state, ev); }

static bool ctest_busy(const void *state) { return ((const struct ctest_state *)state)->collecting; }

/* What --output-on-failure prints after a result is that test's output, whatever harness the
 * test runs (a GoogleTest binary, a TAP script): its failure text, not results of its own. */
static bool ctest_captures(const void *state) { return ctest_busy(state); }

const struct tl_format tl_format_ctest = {
    .name = "ctest",
    .bit = TL_FMT_CTEST,
    .state_size = sizeof(struct ctest_state),
    .parse = ctest_parse,
    .release = NULL,
    .flush = ctest_flush,
    /* "      Start  3: x", " 3/14 Test  #3: x", "13/14 Test #13: x", "Test project", "100% ..." */
    .first_bytes = "0123456789",
    .pairs = (const char *const[]){"  ", " 1", " 2", " 3", " 4", " 5", " 6", " 7", " 8", " 9",
                                   "Te", "Th", "To", NULL},
    .busy = ctest_busy,
    .captures = ctest_captures,
};
