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
 * The numbers must run 1, 2, ... in each list. With the progress format (a dot for each passed
 * example) that is all there is: the passed examples are not known, and the results come when
 * RSpec prints its lists, after the run, with no duration.
 *
 * --format documentation prints, before the lists, a tree: each group's line when the group
 * starts, indented two spaces a level, and each example's line when the example ENDS:
 *
 *   Calculator                                 a top-level group (indent 0)
 *     add                                      a group: the next tree line is deeper
 *       adds two numbers                       a passed example: the next tree line is not
 *       fails on purpose (FAILED - 1)          a failed one, numbered as in "Failures:"
 *     is skipped (PENDING: no time)            a pending one, with its reason
 *
 * So a plain line is a group or a passed example, which only the next tree line tells: a passed
 * example is a result one line late, timed at its own line's arrival (TL_AT_EARLIER_LINE), and
 * taken to have run since the tree line before it (its duration, and the tree's costs since
 * that line's TLE_ANCHOR). A failed or pending example is a result at its line; the lists then
 * give it its failure text (TLE_TEST_MESSAGE, by the "(FAILED - N)" number and the pending
 * examples' order) rather than a second result. Names are full descriptions as RSpec builds
 * them: the groups' and the example's descriptions joined by spaces, without one before a group
 * starting with '#', '.' or "::" under a group named like a Ruby constant ("Calc#add": RSpec
 * joins so when the parent group describes a class, which the tree does not say otherwise).
 *
 * Any indented output is shaped like a tree, so the tree is trusted only once the run shows it
 * is RSpec's: a "(FAILED - 1)" or "(PENDING: ...)" line where the tree allows one, or RSpec's
 * closing "Finished in ... (files took ...)" followed by "N examples, M failures". Until then the
 * passed examples are held (their names, up to RS_HELD_MAX bytes: past that the earliest are
 * forgotten) and handed out at once when that evidence comes (tl_format.more); output without
 * it gives none. A line deeper than the tree allows (by more than one level under a group) is
 * no tree line. What this cannot know: a line an example prints itself that is shaped like the
 * tree (indented at a tree level, or unindented: a new top-level group) is read as part of it;
 * the last plain line before an interrupted run (a timeout), which may be a group whose first
 * example was running or a passed example, is not a result (but RSpec stopped by TERM prints its
 * lists and totals without the running example's line: that plain line then reads as a passed
 * example); an example's start (its line comes
 * at its end), so no example is open at a stop; a top-level group whose description starts
 * with a byte other than a letter or a digit is not read (the prefilter), nor anything under
 * it. */
#include "testlog/formats.h"

#include "testlog/testlog.h"

#include <stdlib.h>

enum rspec_section { RS_NONE, RS_PENDING, RS_FAILURES };

#define RS_DEPTH 64              /* group levels read */
#define RS_NAME 2048             /* bytes of a full description */
#define RS_HELD_MAX (1u << 20)   /* bytes of passed examples held until the evidence */

/* A passed example held back: its name follows the record. */
struct rs_held {
    uint64_t end_ns, since_ns;
    uint32_t n;
};

struct rspec_state {
    enum rspec_section section;
    unsigned long next;   /* the number the next entry of the list must have */
    bool in_entry, collecting, reason_next;
    char id[1024];
    size_t id_n;
    char msg[TESTLOG_MESSAGE_MAX];
    size_t msg_n;
    char out[1024];
    /* the documentation tree */
    bool trusted;                /* the run has shown it is RSpec's (see above) */
    bool finished;               /* "Finished in ...": the next line may be the totals */
    bool ended;                  /* the totals were read: the next tree is another run's */
    unsigned depth;              /* groups open: their full descriptions end at gend[] */
    size_t gend[RS_DEPTH];
    bool gconst[RS_DEPTH];       /* the group's own description reads like a Ruby constant */
    char path[RS_NAME];          /* the innermost open group's full description */
    bool plain;                  /* the last tree line is plain: a group or a passed example */
    unsigned plain_level;
    uint64_t plain_ns, plain_since;
    size_t plain_n;
    char plain_text[RS_NAME];
    uint64_t last_ns;            /* the last tree line's arrival */
    unsigned long failed_tree, pending_tree; /* results the tree gave */
    char name[2][RS_NAME];       /* the results of one call */
    /* passed examples held until the evidence, and handed out (more) from held_off */
    char *held;
    size_t held_n, held_off, held_cap;
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

static bool is_alnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* "Foo", "Foo::Bar": how a class a group describes prints */
static bool ruby_constant(struct tl_str s)
{
    bool start = true;
    for (size_t i = 0; i < s.n; i++) {
        if (start && !(s.p[i] >= 'A' && s.p[i] <= 'Z'))
            return false;
        start = false;
        if (s.p[i] == ':' && i + 2 < s.n && s.p[i + 1] == ':') {
            i++;
            start = true;
        } else if (!is_alnum(s.p[i]) && s.p[i] != '_')
            return false;
    }
    return s.n > 0 && !start;
}

/* The full description of what desc names at level (groups 0..level-1 its parents), into dst. */
static struct tl_str full_name(const struct rspec_state *st, unsigned level, struct tl_str desc,
                               bool group, char *dst)
{
    size_t n = level ? st->gend[level - 1] : 0;
    memcpy(dst, st->path, n);
    if (n && !(group && st->gconst[level - 1] &&
               (desc.n && (desc.p[0] == '#' || desc.p[0] == '.' || TL_PREFIX(desc.p, desc.n, "::")))) &&
        n < RS_NAME)
        dst[n++] = ' ';
    size_t k = desc.n < RS_NAME - n ? desc.n : RS_NAME - n;
    memcpy(dst + n, desc.p, k);
    return tl_str_make(dst, n + k);
}

/* Hold a passed example until the evidence (forgetting the earliest past RS_HELD_MAX). */
static void hold(struct rspec_state *st, struct tl_str name, uint64_t end_ns, uint64_t since_ns)
{
    size_t need = sizeof(struct rs_held) + name.n;
    need = (need + 7) & ~(size_t)7;
    if (st->held_n + need > RS_HELD_MAX && st->held_n) {
        /* forget the earliest half */
        size_t cut = 0;
        while (cut < st->held_n && cut < st->held_n / 2) {
            const struct rs_held *h = (const void *)(st->held + cut);
            cut += (sizeof *h + h->n + 7) & ~(size_t)7;
        }
        memmove(st->held, st->held + cut, st->held_n - cut);
        st->held_n -= cut;
    }
    if (st->held_n + need > st->held_cap) {
        size_t cap = st->held_cap ? st->held_cap * 2 : 4096;
        while (cap < st->held_n + need)
            cap *= 2;
        char *p = realloc(st->held, cap);
        if (!p)
            return;
        st->held = p;
        st->held_cap = cap;
    }
    struct rs_held h = {end_ns, since_ns, (uint32_t)name.n};
    memcpy(st->held + st->held_n, &h, sizeof h);
    memcpy(st->held + st->held_n + sizeof h, name.p, name.n);
    st->held_n += need;
}

/* A passed example's result: its line arrived at end_ns, the tree line before it at since_ns. */
static void passed(struct tl_event *ev, struct tl_str name, uint64_t end_ns, uint64_t since_ns)
{
    tl_set_result(ev, name, tl_str_make(NULL, 0), TL_PASSED);
    tl_at_earlier_line(ev, end_ns);
    if (since_ns && since_ns <= end_ns) {
        ev->t.duration_ms = (double)(end_ns - since_ns) / 1e6;
        ev->t.since_ns = since_ns;
    }
}

/* The plain line held is a passed example (the next tree line is not deeper): its result in
 * *ev (1), or held back until the evidence (0). */
static int decide_passed(struct rspec_state *st, struct tl_event *ev, char *buf)
{
    st->plain = false;
    if (!st->plain_level)
        return 0; /* an empty top-level group: none in RSpec's tree */
    struct tl_str name = full_name(st, st->plain_level, tl_str_make(st->plain_text, st->plain_n), false, buf);
    if (!st->trusted) {
        hold(st, name, st->plain_ns, st->plain_since);
        return 0;
    }
    passed(ev, name, st->plain_ns, st->plain_since);
    return 1;
}

/* Open the group the plain line held names, at its level. */
static void open_group(struct rspec_state *st)
{
    unsigned l = st->plain_level;
    st->plain = false;
    if (l >= RS_DEPTH)
        return;
    char buf[RS_NAME];
    struct tl_str name = full_name(st, l, tl_str_make(st->plain_text, st->plain_n), true, buf);
    memcpy(st->path, name.p, name.n);
    st->gend[l] = name.n;
    st->gconst[l] = ruby_constant(tl_str_make(st->plain_text, st->plain_n));
    st->depth = l + 1;
}

/* The tree is over (RSpec's lists or totals follow): the plain line held is a passed example. */
static int close_tree(struct rspec_state *st, struct tl_event *ev)
{
    int n = st->plain ? decide_passed(st, ev, st->name[0]) : 0;
    st->depth = 0;
    st->last_ns = 0;
    return n;
}

/* "(FAILED - 12)" at the end of c: its number, 0 none */
static unsigned long failed_suffix(struct tl_str c, size_t *cut)
{
    if (c.n < 12 || c.p[c.n - 1] != ')')
        return 0;
    size_t e = c.n - 1, b = e;
    while (b > 0 && c.p[b - 1] >= '0' && c.p[b - 1] <= '9' && e - b < 9)
        b--;
    if (b == e || b < 11 || memcmp(c.p + b - 11, " (FAILED - ", 11))
        return 0;
    unsigned long v = 0;
    for (size_t i = b; i < e; i++)
        v = v * 10 + (unsigned long)(c.p[i] - '0');
    *cut = b - 11;
    return v;
}

/* A line of the documentation tree at level (indent / 2), its text c. Returns the events. */
static int tree_line(struct rspec_state *st, unsigned level, struct tl_str c, uint64_t arrival_ns,
                     struct tl_event *ev)
{
    /* where the line may stand: a group's child (a level below the plain line held, or the
     * innermost open group), or a sibling of what is open */
    unsigned open = st->plain ? st->plain_level + 1 : st->depth;
    if (level > open)
        return 0;
    size_t cut = 0;
    unsigned long failed = 0;
    const char *pend = NULL;
    if (level > 0 && c.p[c.n - 1] == ')') { /* an example's mark; a top-level line is a group */
        failed = failed_suffix(c, &cut);
        if (failed != st->failed_tree + 1)
            failed = 0;
        pend = failed ? NULL : memmem(c.p, c.n, " (PENDING: ", 11);
    }
    bool marked = failed || pend;
    int n = 0;
    if (st->plain) {
        if (level == st->plain_level + 1)
            open_group(st);
        else
            n += decide_passed(st, &ev[n], st->name[0]);
    }
    if (level < st->depth)
        st->depth = level;
    uint64_t since = st->last_ns;
    st->last_ns = arrival_ns;
    if (!marked) {
        if (c.n > sizeof st->plain_text || level >= RS_DEPTH)
            return n; /* too long to name its children by: not read */
        st->plain = true;
        st->plain_level = level;
        st->plain_ns = arrival_ns;
        st->plain_since = since;
        st->plain_n = c.n;
        memcpy(st->plain_text, c.p, c.n);
        if (st->trusted)
            tl_event_init(&ev[n++], TLE_ANCHOR);
        return n;
    }
    st->trusted = true; /* the evidence: what was held goes out (more) */
    struct tl_str desc = failed ? tl_str_make(c.p, cut) : tl_str_make(c.p, (size_t)(pend - c.p));
    struct tl_str name = full_name(st, level, tl_trim(desc), false, st->name[1]);
    tl_set_result(&ev[n], name, tl_str_make(NULL, 0), failed ? TL_FAILED : TL_SKIPPED);
    if (since && since <= arrival_ns) {
        ev[n].t.duration_ms = (double)(arrival_ns - since) / 1e6;
        ev[n].t.since_ns = since;
    }
    if (failed)
        st->failed_tree++;
    else {
        st->pending_tree++;
        ev[n].message = tl_str_make(pend + 11, (size_t)(c.p + c.n - 1 - pend - 11));
    }
    return n + 1;
}

/* "10 examples, 3 failures, 3 pending", "1 example, 0 failures" */
static bool totals_line(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    return i && (TL_PREFIX(s + i, n - i, " examples, ") || TL_PREFIX(s + i, n - i, " example, ")) &&
           memmem(s, n, " failure", 8);
}

static int rspec_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                       struct tl_event *ev)
{
    struct rspec_state *st = state;
    if (!len || (line[0] != ' ' && !is_alnum(line[0])))
        return 0; /* none of its lines (the prefilter's first bytes): the state stays as it was */
    bool finished = st->finished;
    st->finished = false;
    if (st->ended) { /* what was held went out after the totals (more): start afresh */
        st->ended = st->trusted = false;
        st->failed_tree = st->pending_tree = 0;
    }
    if (TL_PREFIX(line, len, "Pending: (Failures listed here are expected") ||
        (len == 9 && !memcmp(line, "Failures:", 9))) {
        int n = emit_message(st, ev);
        n += close_tree(st, &ev[n]);
        st->section = line[0] == 'P' ? RS_PENDING : RS_FAILURES;
        st->next = 1;
        tl_event_init(&ev[n], TLE_ANCHOR);
        return n + 1;
    }
    if (TL_PREFIX(line, len, "Finished in ") && memmem(line, len, " (files took ", 13)) {
        /* RSpec's totals follow: the tree is over, if this is RSpec's line */
        st->finished = true;
        if (st->section)
            return emit_message(st, ev) + (st->section = RS_NONE, 0);
        return 0;
    }
    if (finished && totals_line(line, len)) {
        /* the evidence that ends the run: what was held goes out (more) */
        int n = close_tree(st, ev);
        st->trusted = st->ended = true;
        tl_event_init(&ev[n], TLE_ANCHOR);
        n++;
        /* its counts: "N examples, M failures, K pending" (and "E errors occurred outside of
         * examples", which are not examples); RSpec does not print the passed */
        static const char *const words[] = {"examples", "t", "example", "t", "failures", "f", "failure", "f",
                                            "pending", "s", "errors", "-", "error", "-", NULL};
        struct tl_counts *c = &ev[n].counts;
        if (n < TL_MAX_EVENTS && tl_totals(&ev[n], "rspec", tl_str_make(line, len), ", ", words)) {
            int64_t passed = c->total - (c->failed > 0 ? c->failed : 0) - (c->skipped > 0 ? c->skipped : 0);
            c->passed = passed >= 0 ? passed : -1; /* (a line that does not add up says none) */
            n++;
        }
        return n;
    }
    if (!st->section) {
        size_t ind = 0;
        while (ind < len && line[ind] == ' ')
            ind++;
        if (ind == len || ind % 2 || (ind == 0 && !is_alnum(line[0])))
            return 0;
        return tree_line(st, (unsigned)(ind / 2), tl_str_make(line + ind, len - ind), arrival_ns, ev);
    }
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
            /* an example the documentation tree gave already: its text only */
            if (v <= (st->section == RS_PENDING ? st->pending_tree : st->failed_tree))
                return n ? n : (tl_event_init(&ev[0], TLE_ANCHOR), 1);
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
    struct rspec_state *st = state;
    /* the plain line last read is not known to be an example (see above); without the
     * evidence, nothing held is a result */
    st->plain = false;
    if (!st->trusted)
        st->held_n = st->held_off = 0;
    return emit_message(state, ev);
}

/* The passed examples held until the evidence, once it came. */
static int rspec_more(void *state, struct tl_event *ev)
{
    struct rspec_state *st = state;
    if (!st->trusted || st->held_off >= st->held_n) {
        if (st->trusted)
            st->held_n = st->held_off = 0; /* the names handed out stay until the next call */
        return 0;
    }
    int n = 0;
    while (n < TL_MAX_EVENTS && st->held_off < st->held_n) {
        struct rs_held h;
        memcpy(&h, st->held + st->held_off, sizeof h);
        passed(&ev[n++], tl_str_make(st->held + st->held_off + sizeof h, h.n), h.end_ns, h.since_ns);
        st->held_off += (sizeof h + h.n + 7) & ~(size_t)7;
    }
    return n;
}

static void rspec_release(void *state)
{
    free(((struct rspec_state *)state)->held);
}

const struct tl_format tl_format_rspec = {
    .name = "rspec",
    .bit = TL_FMT_RSPEC,
    .state_size = sizeof(struct rspec_state),
    .parse = rspec_parse,
    .release = rspec_release,
    .flush = rspec_flush,
    .more = rspec_more,
    /* the tree's lines (indented, or a top-level group's: a letter or a digit), "Pending: (...",
     * "Failures:", indented entries, "Finished in", the totals */
    .first_bytes = " 0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    .busy = NULL,
};
