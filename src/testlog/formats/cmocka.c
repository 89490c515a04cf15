/* cmocka's default (CM_OUTPUT_STDOUT) output (testlog/formats.h has the result mapping). It
 * looks like GoogleTest's but is not: a group starts with "[==========] Running N test(s)."
 * (GoogleTest says "N tests from M test suites"), results have no time, and the summary after
 * "[==========] N test(s) run." lists the failed and skipped tests again. The gtest parser leaves
 * such a run alone; this one reads it:
 *
 *   [ RUN      ] name                 → TLE_TEST_START id = name
 *   [       OK ] name                 → PASS
 *   [  FAILED  ] name                 → FAIL, or CRASH when cmocka caught a signal ("Test failed
 *                                       with exception: Segmentation fault(11)")
 *   [  SKIPPED ] name                 → SKIP
 *   [  ERROR   ] name                 → ERROR (a setup or teardown failed)
 *
 * A result names the test its RUN line opened; a bracketed line naming another is the test's own
 * output. The failure text is what cmocka prints inside the test: "[  ERROR   ] --- text" and
 * "[   LINE   ] --- file.c:10: error: Failure!" give their text, other lines (a fail_msg, a
 * leak's report) are taken whole; as cmocka's XML report has it, except that the report leaves
 * out text the test printed through fail_msg. The group's name is not printed: results have no
 * scope.
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

#define CMOCKA_NAME 512

struct cmocka_state {
    bool in_run, in_summary, in_test;
    size_t name_n, msg_n;
    char name[CMOCKA_NAME], msg[TESTLOG_MESSAGE_MAX];
};

bool tl_cmocka_run_line(const char *line, size_t len)
{
    return TL_PREFIX(line, len, "[==========] Running ") && len >= 30 &&
           !memcmp(line + len - 9, " test(s).", 9);
}

static void add_text(struct cmocka_state *st, struct tl_str s)
{
    /* "[  ERROR   ] --- [   LINE   ] --- t.c:14: error: Failure!" (a fail_msg's location) */
    for (;;) {
        const char *l = memmem(s.p, s.n, "[   LINE   ] --- ", 17);
        struct tl_str head = tl_trim(tl_str_make(s.p, l ? (size_t)(l - s.p) : s.n));
        if (head.n)
            tl_append_line(st->msg, sizeof st->msg, &st->msg_n, head);
        if (!l)
            return;
        s = tl_str_make(l + 17, (size_t)(s.p + s.n - l - 17));
    }
}

static int cmocka_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                        struct tl_event *ev)
{
    (void)arrival_ns;
    struct cmocka_state *st = state;
    if (tl_cmocka_run_line(line, len)) {
        st->in_run = true;
        st->in_summary = st->in_test = false;
        return 0;
    }
    if (!st->in_run)
        return 0;
    bool tag = len >= 13 && line[0] == '[' && line[11] == ']' && line[12] == ' ';
    if (!tag) {
        if (st->in_test)
            add_text(st, tl_str_make(line, len));
        return 0;
    }
    struct tl_str rest = tl_str_make(line + 13, len - 13);
    const char *t = line + 1;
    if (!memcmp(t, "==========", 10)) {
        if (memmem(rest.p, rest.n, " test(s) run.", 13))
            st->in_summary = true, st->in_test = false;
        else
            st->in_run = false; /* another harness's run */
        return 0;
    }
    if (st->in_summary)
        return 0;
    if (!memcmp(t, " RUN      ", 10)) {
        struct tl_str name = tl_trim(rest);
        if (!name.n)
            return 0;
        st->name_n = tl_copy(st->name, sizeof st->name, name).n;
        st->in_test = true;
        st->msg_n = 0;
        tl_event_init(ev, TLE_TEST_START);
        ev->id = tl_str_make(st->name, st->name_n);
        return 1;
    }
    if (!st->in_test)
        return 0;
    if (TL_PREFIX(rest.p, rest.n, "--- ") &&
        (!memcmp(t, "  ERROR   ", 10) || !memcmp(t, "   LINE   ", 10))) {
        add_text(st, tl_str_make(rest.p + 4, rest.n - 4));
        return 0;
    }
    enum tl_outcome oc;
    if (!memcmp(t, "       OK ", 10))
        oc = TL_PASSED;
    else if (!memcmp(t, "  FAILED  ", 10))
        oc = TL_FAILED;
    else if (!memcmp(t, "  SKIPPED ", 10))
        oc = TL_SKIPPED;
    else if (!memcmp(t, "  ERROR   ", 10))
        oc = TL_ERRORED;
    else
        return 0;
    struct tl_str name = tl_trim(rest);
    if (name.n != st->name_n || memcmp(name.p, st->name, name.n))
        return 0; /* the test's own output */
    struct tl_str msg = tl_str_make(st->msg, st->msg_n);
    if (oc == TL_FAILED && memmem(msg.p, msg.n, "Test failed with exception: ", 28))
        oc = TL_CRASHED;
    tl_set_result(ev, tl_str_make(st->name, st->name_n), tl_str_make(NULL, 0), oc);
    if (oc != TL_PASSED && msg.n)
        ev->message = msg;
    st->in_test = false;
    return 1;
}

static bool cmocka_busy(const void *state)
{
    return ((const struct cmocka_state *)state)->in_test;
}

const struct tl_format tl_format_cmocka = {
    .name = "cmocka",
    .bit = TL_FMT_CMOCKA,
    .state_size = sizeof(struct cmocka_state),
    .parse = cmocka_parse,
    .release = NULL,
    .pairs = (const char *const[]){"[ ", "[=", NULL},
    .busy = cmocka_busy,
};
