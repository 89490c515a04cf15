/* RSpec's lists after a run (testlog/formats.h has the result mapping), as its default progress
 * format and --format documentation both print them:
 *
 *   Pending: (Failures listed here are expected and do not affect your suite's status)
 *     1) Calculator is skipped                 a pending or skipped example: SKIP, its reason
 *        # no time                             ("# ...", the line after) the message
 *   Failures:
 *     1) Calculator add fails on purpose       a failed example: FAIL, named by its full
 *        Failure/Error: expect(1 + 1).to eq(3) description (its groups' and its own, joined
 *          expected: 3                         by spaces, as RSpec names it); the lines after
 *               got: 2                         "Failure/Error:" up to the backtrace ("# ./")
 *        # ./spec/calc_spec.rb:7:in `block ...' are its message, less 7 spaces
 *   Failed examples:
 *   rspec ./spec/calc_spec.rb:6 # Calculator add fails on purpose   (the same failures again)
 *
 * The numbers must run 1, 2, ... in each list. What this cannot know: the passed examples (the
 * progress format prints a dot for each; the documentation format's tree is not read: its
 * top-level group's line is any text), and when the examples ran: the results come when RSpec
 * prints its lists, after the run, with no duration.
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

enum rspec_section { RS_NONE, RS_PENDING, RS_FAILURES };

struct rspec_state {
    enum rspec_section section;
    unsigned long next;   /* the number the next entry of the list must have */
    bool in_entry, collecting, reason_next;
    char id[1024];
    size_t id_n;
    char msg[TESTLOG_MESSAGE_MAX];
    size_t msg_n;
    char out[1024];
};

static int emit_message(struct rspec_state *st, struct tl_event *ev)
{
    bool had = st->in_entry && st->msg_n;
    st->in_entry = st->collecting = st->reason_next = false;
    if (!had)
        return 0;
    tl_event_init(ev, TLE_TEST_MESSAGE);
    memcpy(st->out, st->id, st->id_n);
    ev->id = tl_str_make(st->out, st->id_n);
    ev->message = tl_str_make(st->msg, st->msg_n);
    return 1;
}

static int rspec_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                       struct tl_event *ev)
{
    (void)arrival_ns;
    struct rspec_state *st = state;
    if (TL_PREFIX(line, len, "Pending: (Failures listed here are expected") ||
        (len == 9 && !memcmp(line, "Failures:", 9))) {
        int n = emit_message(st, ev);
        st->section = line[0] == 'P' ? RS_PENDING : RS_FAILURES;
        st->next = 1;
        tl_event_init(&ev[n], TLE_ANCHOR);
        return n + 1;
    }
    if (!st->section)
        return 0;
    size_t ind = 0;
    while (ind < len && line[ind] == ' ')
        ind++;
    struct tl_str c = tl_str_make(line + ind, len - ind);
    if (ind == 0) {
        /* "Finished in ...", "Failed examples:": the list is over (other unindented lines are
         * not offered: the prefilter) */
        if (!TL_PREFIX(line, len, "Fi") && !TL_PREFIX(line, len, "Fa"))
            return 0;
        int n = emit_message(st, ev);
        st->section = RS_NONE;
        return n;
    }
    if (ind == 2) {
        unsigned long v = 0;
        size_t i = 0;
        while (i < c.n && i < 9 && c.p[i] >= '0' && c.p[i] <= '9')
            v = v * 10 + (unsigned long)(c.p[i++] - '0');
        if (i && v == st->next && c.n > i + 2 && c.p[i] == ')' && c.p[i + 1] == ' ') {
            int n = emit_message(st, ev);
            st->next++;
            st->id_n = tl_copy(st->id, sizeof st->id, tl_trim(tl_str_make(c.p + i + 2, c.n - i - 2))).n;
            st->msg_n = 0;
            st->in_entry = true;
            st->reason_next = st->section == RS_PENDING;
            tl_set_result(&ev[n], tl_str_make(st->id, st->id_n), tl_str_make(NULL, 0),
                          st->section == RS_PENDING ? TL_SKIPPED : TL_FAILED);
            return n + 1;
        }
        return 0;
    }
    if (!st->in_entry || ind < 5)
        return 0;
    if (TL_PREFIX(c.p, c.n, "# ")) {
        if (st->reason_next) { /* a pending example's reason */
            st->reason_next = false;
            tl_append_line(st->msg, sizeof st->msg, &st->msg_n, tl_str_make(c.p + 2, c.n - 2));
            return emit_message(st, ev);
        }
        return emit_message(st, ev); /* the backtrace */
    }
    st->reason_next = false;
    if (st->section == RS_FAILURES) {
        if (ind == 5 && TL_PREFIX(c.p, c.n, "Failure/Error:")) {
            st->collecting = true;
            return 0;
        }
        if (st->collecting) {
            size_t cut = ind < 7 ? ind : 7;
            struct tl_str t = tl_str_make(line + cut, len - cut);
            while (t.n && t.p[t.n - 1] == ' ')
                t.n--;
            if (t.n)
                tl_append_line(st->msg, sizeof st->msg, &st->msg_n, t);
        }
    }
    return 0;
}

static int rspec_flush(void *state, struct tl_event *ev)
{
    return emit_message(state, ev);
}

const struct tl_format tl_format_rspec = {
    .name = "rspec",
    .bit = TL_FMT_RSPEC,
    .state_size = sizeof(struct rspec_state),
    .parse = rspec_parse,
    .release = NULL,
    .flush = rspec_flush,
    /* "Pending: (...", "Failures:", then indented entries; "Finished in" ends a list */
    .first_bytes = " ",
    .pairs = (const char *const[]){"Pe", "Fa", "Fi", NULL},
    .busy = NULL,
};
