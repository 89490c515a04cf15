/* doctest's console reporter (testlog/formats.h has the result mapping). doctest names a test case
 * in the header it prints before what it reports of it:
 *
 *   =====================================================   (a line of '=' only)
 *   t.cpp:7:                                                 (where the test case is)
 *   TEST SUITE: s                                            (when it is in one)
 *   TEST CASE:  name
 *     subcase                                                (indented: the subcase path)
 *
 * then "t.cpp:7: ERROR: ..." / "FATAL ERROR:" / "SUCCESS:" / "WARNING:" lines and theirs. Each
 * test case is a test: it starts at its first header, runs over the headers its subcases repeat,
 * and ends at the last line it printed before the next test case's header or doctest's totals
 * ("[doctest] test cases: ..."); with -d, at "0.000422 s: name" (its duration; the verdict below
 * may follow it, and the result goes out at the next header). It failed when an
 * ERROR or FATAL ERROR was reported, except as doctest decides at its end:
 *   "Allowed to fail so marking it as not failed" (may_fail)      → FAIL expected FAIL
 *   "Failed as expected so marking it as not failed" (should_fail) → FAIL expected FAIL
 *   "Should have failed but didn't! Marking it as failed!"        → PASS expected FAIL
 * Its message is the text of its errors, location lines included (bounded).
 *
 * By default doctest prints failed test cases only (and those of may_fail and should_fail): the
 * passing ones are never named. With -s or -d it prints every test case. A header is printed
 * when a test case first reports something: without -d its start is then, not when it began.
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

enum dt_phase {
    DT_IDLE,
    DT_LOC,  /* after a rule: "file:line:" */
    DT_CASE, /* then "TEST CASE:  name" */
};

struct doctest_state {
    enum dt_phase phase;
    struct tl_case c;
    enum tl_outcome verdict; /* doctest's own word at the end (may_fail, should_fail), or -1 */
    bool has_verdict;
    double dur_ms; /* -d's duration line, printed before doctest's verdict; < 0 none */
};

/* "file:123:" → its length, or 0 */
static size_t location(const char *s, size_t n)
{
    size_t lim = n < 1024 ? n : 1024;
    for (size_t i = 0; i < lim; i++) {
        if (s[i] == ' ')
            return 0;
        if (s[i] != ':' || i == 0)
            continue;
        size_t j = i + 1;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j > i + 1 && j < n && s[j] == ':')
            return j + 1;
    }
    return 0;
}

static int end_test(struct doctest_state *st, struct tl_event *ev)
{
    enum tl_outcome oc = st->has_verdict ? st->verdict : st->c.failed ? TL_FAILED : TL_PASSED;
    int k = tl_case_end(&st->c, oc, ev);
    if (k && st->dur_ms >= 0)
        ev->t.duration_ms = st->dur_ms;
    return k;
}

static bool same_name(const struct doctest_state *st, struct tl_str s)
{
    return st->c.open && tl_str_same(s, tl_case_name(&st->c));
}

static int doctest_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                         struct tl_event *ev)
{
    struct doctest_state *st = state;
    switch (st->phase) {
    case DT_LOC:
        st->phase = DT_IDLE;
        if (location(line, len) != len)
            break;
        st->phase = DT_CASE;
        return 0;
    case DT_CASE: {
        st->phase = DT_IDLE;
        if (TL_PREFIX(line, len, "TEST SUITE: ")) {
            st->phase = DT_CASE;
            return 0;
        }
        if (!TL_PREFIX(line, len, "TEST CASE:  "))
            break;
        struct tl_str name = tl_trim(tl_str_make(line + 12, len - 12));
        if (!name.n)
            return 0;
        if (same_name(st, name)) { /* a subcase of the running test case */
            st->c.last_ns = arrival_ns;
            st->c.in_failure = false;
            return 0;
        }
        int k = end_test(st, ev);
        st->has_verdict = false;
        st->dur_ms = -1;
        return k + tl_case_start(&st->c, name, arrival_ns, &ev[k]);
    }
    case DT_IDLE:
        break;
    }
    if (tl_rule(line, len, '=')) {
        st->phase = DT_LOC;
        st->c.header_ns = arrival_ns;
        st->c.in_failure = false;
        return 0;
    }
    if (!st->c.open)
        return 0;
    if (TL_PREFIX(line, len, "[doctest] "))
        return end_test(st, ev);
    /* -d: "0.000422 s: name" at the test case's end */
    const char *sp = memmem(line, len < 40 ? len : 40, " s: ", 4);
    double secs;
    if (sp && tl_parse_number(tl_str_make(line, (size_t)(sp - line)), &secs) && secs >= 0 &&
        same_name(st, tl_str_make(sp + 4, (size_t)(line + len - sp - 4)))) {
        st->dur_ms = secs * 1000;
        st->c.last_ns = arrival_ns; /* it ended here; doctest's verdict may follow */
        return 0;
    }
    if (st->dur_ms < 0)
        st->c.last_ns = arrival_ns;
    if (TL_PREFIX(line, len, "Allowed to fail so marking") ||
        TL_PREFIX(line, len, "Failed as expected so marking")) {
        st->verdict = st->c.failed ? TL_KNOWN_FAIL : TL_PASSED;
        st->has_verdict = true;
        st->c.in_failure = false;
        return 0;
    }
    if (TL_PREFIX(line, len, "Should have failed but didn't!")) {
        st->verdict = TL_UNEXPECTED_PASS;
        st->has_verdict = true;
        st->c.in_failure = false;
        return 0;
    }
    size_t loc = location(line, len);
    if (loc) {
        struct tl_str rest = tl_trim(tl_str_make(line + loc, len - loc));
        st->c.in_failure = TL_PREFIX(rest.p, rest.n, "ERROR: ") || TL_PREFIX(rest.p, rest.n, "FATAL ERROR: ");
        st->c.failed |= st->c.in_failure;
    }
    if (st->c.in_failure)
        tl_case_text(&st->c, tl_str_make(line, len));
    return 0;
}

static int doctest_flush(void *state, struct tl_event *ev) { return end_test(state, ev); }

static bool doctest_busy(const void *state)
{
    const struct doctest_state *st = state;
    return st->c.open || st->phase != DT_IDLE;
}

const struct tl_format tl_format_doctest = {
    .name = "doctest",
    .bit = TL_FMT_DOCTEST,
    .state_size = sizeof(struct doctest_state),
    .parse = doctest_parse,
    .release = NULL,
    .flush = doctest_flush,
    .pairs = (const char *const[]){"==", NULL},
    .busy = doctest_busy,
};
