/* TAP 13/14 (testlog/formats.h has the result mapping).
 *
 * Recognised: "TAP version N", plans "1..N", test points "ok|not ok [N] [-] [desc] [# SKIP|TODO
 * reason]", "Bail out! reason", "# Subtest: name" (Node, TAP 14), subtests indented by 4 spaces
 * per level, YAML blocks between "---" and "..." indented under a test point.
 *
 * Levels: a line's level is its indentation / 4. Level d has a scope (path[0..off[d]]), the names
 * of the parents joined with '/'. "# Subtest: x" at level d opens test x (TLE_TEST_START) and makes
 * x the parent of level d+1; a test point at level d closes it. Subtests without an opener (plain
 * TAP 14) get a parent named by the number its test point will have.
 *
 * Holding: once a producer has shown that it writes YAML blocks or "# Subtest" openers (Node
 * does both), each result is held back until the line after it, so that a "duration_ms" in its
 * block can be used; the held event happened at an earlier line (TL_AT_EARLIER_LINE), the test point's arrival, so holding costs no
 * accuracy. At the end of the output the core takes what is still held (tap_flush).
 *
 * Timing: a test point whose test was not opened ran from the previous TAP line at its level (the
 * version line counts) to its arrival (t.duration_ms, and t.since_ns: every line that touches a level
 * is a TLE_ANCHOR, so the core knows what the tree had spent then). An opened test's result
 * names, as t.since_ns, the last line at the opener's level before the opener: Node prints
 * "# Subtest" only when the test is done, and the core then goes by the YAML duration_ms. Node's
 * YAML "failureType: 'testTimeoutFailure'" makes a FAIL a TIMEOUT; its "error:" is the message of
 * a result that has none.
 *
 * prove (Perl's TAP::Harness) -v: "t/basename.t .... " announces a file; its TAP follows, and the
 * file is the scope of its level 0 (ids "foo.txt -> foo", scope "t/basename.t"; a subtest's points
 * "t/parent.t/iterator"). prove's own lines are not test points: the bare "ok" verdict after a
 * file's TAP; "t/x.t .. skipped: reason" (a skip_all plan) ran no test and is none: a SKIP status
 * (TLE_SUBTEST) naming the file, with the reason, so that the tests are prove's "Tests=";
 * "Dubious, test returned N", "Failed N/M subtests" or "No subtests run" make the file a
 * file-level ERROR when its plan was missing or not met (a file that failed some tests but ran
 * its plan has only those failures), as TAP::Harness's own report has it.
 *
 * Failure diagnostics: Test::More (Test::Builder, Test2) follows a failed point with a block of
 * comments, "#   Failed test 'NAME'" (or "#   Failed test at FILE line N." when unnamed), then
 * "#   at FILE line N." and what was got and expected. The block, less its "#" and the
 * indentation its lines share, is the failure's text: of the failed point just before it, as a
 * TLE_TEST_MESSAGE once the block ends (the next TAP line that is not a comment, another block,
 * "# Looks like", the end), or of one of the last TAP_RECENT failed points without a text that it
 * names (the point on stdout, its block on stderr: two pipes, read in either order); or, when the
 * block comes first (the diagnostics go to stderr, which prove passes through at once while it
 * prints the TAP later), of the next "not ok" of that name at the block's level (of that file,
 * under prove), which carries it as its message. Up to TAP_DIAGS blocks wait so; a block no point
 * claims is no test. Node's YAML "location:" of a failure is added to its text as
 * "at FILE:LINE:COL" (the annotations' file and line).
 *
 * Descriptions are unescaped: "\\" and "\#" (TAP 14), and, from a producer that writes YAML
 * blocks (Node), its escapes of control characters "\n", "\t", "\r", "\f", "\v", "\b".
 * "not ok ... # SKIP" is a failure (TAP::Harness and Node count it as one), with the reason as
 * message.
 *
 * Without a version line or plan, bare "ok"/"not ok" and "ok desc" are not taken as TAP (other
 * formats print such lines: go's "ok  \tpkg", unittest's late "ok"): a test point then needs a
 * number or " - ". Check's TAP log ("ok 3 - check_x.c:tcase:test: message") has no version line
 * and prints its plan last.
 */
#include "testlog/formats.h"

#include <stdio.h>

#include "base/util.h"
#include "testlog/testlog.h"

#define TAP_DEPTH 16
#define TAP_PATH 1024

enum tap_hold {
    HOLD_NONE,
    HOLD_WAIT,     /* a result is held; its YAML block may start on this line */
    HOLD_YAML,     /* inside the held result's YAML block */
    HOLD_SKIPYAML, /* inside a YAML block whose result already went out */
};

struct held_text {
    char id[1024], scope[TAP_PATH], msg[1024], where[TAP_PATH];
};

/* A Test::More failure block (see the top). */
#define TAP_DIAGS 8
#define TAP_DIAG_NAME 1024 /* a test's name, as the held ones */
struct tap_diag {
    bool used;
    bool follows;        /* of the failed point before it: its text goes out as a late message */
    unsigned indent;     /* the block's level, in spaces */
    unsigned skip;       /* the indentation its first line had after the '#' (taken off each line) */
    size_t name_n, file_n, text_n;
    char name[TAP_DIAG_NAME]; /* the test it names ("" unnamed) */
    /* one that follows its point: that test as its marker names it (late messages of this line
     * point here, while the next point may already be the last failed one) */
    size_t id_n, scope_n;
    char id[TAP_DIAG_NAME], scope[TAP_PATH];
    char file[256];           /* FILE of its "at FILE line N" */
    char text[TESTLOG_MESSAGE_MAX];
};

/* A failed point that got no text: a block of its name may still come (after other lines: the
 * point came on stdout, its block on stderr, and the two pipes are read in either order). */
#define TAP_RECENT 8
struct tap_failed {
    bool used, named;
    unsigned indent;
    size_t id_n, scope_n;
    char id[512], scope[TAP_PATH];
};

/* What outlives a new TAP document (a file prove announces): the blocks waiting for their point,
 * the one being read, the failed points waiting for their block, and the failed point a block
 * may follow at once. */
struct tap_diags {
    struct tap_diag d[TAP_DIAGS];
    struct tap_failed recent[TAP_RECENT];
    unsigned recent_next;
    int cur;          /* the block being read (index + 1; 0 none) */
    unsigned next;    /* the slot the next block takes when none is free (the oldest, in turn) */
    bool last_failed; /* the last TAP line was a failed point, or a block after it */
    bool last_named;  /* it had a description */
    unsigned last_indent;
    size_t last_id_n, last_scope_n;
    char last_id[1024], last_scope[TAP_PATH];
};

struct tap_state {
    bool seen;      /* version line or plan seen */
    bool yaml_seen; /* the producer writes YAML blocks */
    bool opener_seen; /* it writes "# Subtest" openers (Node, which writes YAML blocks too) */
    bool after_point;
    unsigned point_indent;
    unsigned depth;
    size_t off[TAP_DEPTH + 2];
    bool opened[TAP_DEPTH + 2];
    bool have_last[TAP_DEPTH + 2];
    uint64_t last_ns[TAP_DEPTH + 2];
    /* Level k opened by "# Subtest": the last TAP line at level k-1 before the opener (Node
     * prints the opener when the test is done, with its result: the test ran since then). */
    bool have_opener_since[TAP_DEPTH + 2];
    uint64_t opener_since[TAP_DEPTH + 2];
    unsigned long count[TAP_DEPTH + 2];
    uint64_t last_any_ns;
    bool have_any;
    char path[TAP_PATH];

    enum tap_hold hold;
    unsigned yaml_indent;
    bool error_block; /* the held result's "error:" is a block scalar: its text is below */
    size_t where_n;   /* the held result's YAML "location:" (in its held texts' where) */
    struct tl_event held;
    /* Two sets, used in turn: a point that flushes the held result (an event pointing into one
     * set) and is held in its place copies into the other. */
    struct held_text held_text[2];
    unsigned held_set;
    char num[24]; /* the id of a test point without a description */
    char desc[1024]; /* an unescaped description */
    /* prove: the file announced (its name is path[0..off[0]]), its plan (-1: none yet), the test
     * points it ran at level 0, whether its file-level result is decided */
    bool file_active, file_judged;
    long file_plan;
    unsigned long file_ran;
    struct tap_diags diags;
};

static struct tl_str scope_of(const struct tap_state *st, unsigned level)
{
    return tl_str_make(st->path, st->off[level]);
}

/* Level k (k >= 1) gets parent name, below the scope of level k-1. */
static void set_level(struct tap_state *st, unsigned k, struct tl_str name, uint64_t since,
                      bool have_since, bool opened)
{
    size_t o = st->off[k - 1];
    if (o && o < TAP_PATH)
        st->path[o++] = '/';
    size_t n = name.n < TAP_PATH - o ? name.n : TAP_PATH - o;
    if (n)
        memcpy(st->path + o, name.p, n);
    st->off[k] = o + n;
    st->opened[k] = opened;
    st->count[k] = 0;
    st->last_ns[k] = since;
    st->have_last[k] = have_since;
    st->have_opener_since[k] = false;
}

/* Make level the deepest one: close finished subtest levels, or create levels for subtests
 * that appeared without an opener. */
static void enter_level(struct tap_state *st, unsigned level)
{
    while (st->depth < level) {
        char num[24];
        int len = snprintf(num, sizeof num, "%lu", st->count[st->depth] + 1);
        set_level(st, st->depth + 1, tl_str_make(num, (size_t)len), st->last_any_ns,
                  st->have_any, false);
        st->depth++;
    }
    st->depth = level;
}

static void touch(struct tap_state *st, unsigned level, uint64_t arrival_ns)
{
    st->last_ns[level] = arrival_ns;
    st->have_last[level] = true;
    st->last_any_ns = arrival_ns;
    st->have_any = true;
}

/* Every line that touches a level is an anchor: a later test point may have started there. */
static void anchor(struct tl_event *ev) { tl_event_init(ev, TLE_ANCHOR); }

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* A description keeps its leading spaces (after "- "), as TAP::Parser reads it. */
static struct tl_str rtrim(struct tl_str s)
{
    while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t'))
        s.n--;
    return s;
}

/* The directive of a description: '#' (not escaped) then SKIP or TODO. */
static int find_directive(struct tl_str d, struct tl_str *ret_desc, struct tl_str *ret_reason)
{
    for (size_t i = 0; i < d.n; i++) {
        if (d.p[i] != '#' || (i > 0 && d.p[i - 1] == '\\'))
            continue;
        struct tl_str r = tl_trim(tl_str_make(d.p + i + 1, d.n - i - 1));
        int kind = tl_iprefix(r, "skip") ? 1 : tl_iprefix(r, "todo") ? 2 : 0;
        if (!kind)
            continue;
        size_t j = 4;
        while (j < r.n && ((r.p[j] >= 'a' && r.p[j] <= 'z') || (r.p[j] >= 'A' && r.p[j] <= 'Z')))
            j++;
        if (j < r.n && r.p[j] == ':')
            j++;
        *ret_desc = rtrim(tl_str_make(d.p, i));
        *ret_reason = tl_trim(tl_str_make(r.p + j, r.n - j));
        return kind;
    }
    *ret_desc = rtrim(d);
    return 0;
}

/* Check's TAP description "file.c:tcase:test: message" → id "tcase:test", message. */
static bool check_form(struct tl_str d, struct tl_str *ret_id, struct tl_str *ret_msg)
{
    size_t colons[3], nc = 0;
    bool dot = false;
    for (size_t i = 0; i < d.n && nc < 3; i++) {
        char c = d.p[i];
        if (c == ' ' || c == '\t')
            return false;
        if (c == '.' && nc == 0)
            dot = true;
        if (c == ':') {
            if (i == 0 || (nc && colons[nc - 1] + 1 == i))
                return false;
            colons[nc++] = i;
        }
    }
    if (nc < 3 || !dot || (colons[2] + 1 < d.n && d.p[colons[2] + 1] != ' '))
        return false;
    *ret_id = tl_str_make(d.p + colons[0] + 1, colons[2] - colons[0] - 1);
    *ret_msg = tl_trim(tl_str_make(d.p + colons[2] + 1, d.n - colons[2] - 1));
    return true;
}

/* d without TAP's escapes (see the top), in st->desc when it had any. Node escapes a control
 * character before it escapes backslashes (a newline is written "\\\\n"): its escapes are undone
 * after TAP's. */
static struct tl_str unescape(struct tap_state *st, struct tl_str d)
{
    if (!memchr(d.p, '\\', d.n))
        return d;
    size_t o = 0;
    for (size_t i = 0; i < d.n && o < sizeof st->desc; i++) {
        char c = d.p[i];
        if (c == '\\' && i + 1 < d.n && (d.p[i + 1] == '\\' || d.p[i + 1] == '#'))
            c = d.p[++i];
        st->desc[o++] = c;
    }
    if (st->yaml_seen) {
        size_t k = 0;
        for (size_t i = 0; i < o; i++) {
            char c = st->desc[i], e = i + 1 < o ? st->desc[i + 1] : 0;
            char r = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'f' ? '\f'
                   : e == 'v' ? '\v' : e == 'b' ? '\b' : 0;
            if (c == '\\' && r) {
                c = r;
                i++;
            }
            st->desc[k++] = c;
        }
        o = k;
    }
    return tl_str_make(st->desc, o);
}

/* A YAML scalar of a held result's block ("error: 'text'"), unquoted, into the held texts. */
static struct tl_str yaml_text(struct tap_state *st, struct tl_str v)
{
    if (v.n >= 2 && (v.p[0] == '\'' || v.p[0] == '"') && v.p[v.n - 1] == v.p[0])
        v = tl_str_make(v.p + 1, v.n - 2);
    struct held_text *h = &st->held_text[st->held_set];
    return tl_copy(h->msg, sizeof h->msg, v);
}

/* A new TAP document ("TAP version", a file prove announces): the state starts afresh, but the
 * held texts stay (a result this line flushed points there), and so does prove's file scope
 * unless the line announces another file. */
static void new_document(struct tap_state *st, bool keep_file)
{
    struct tap_state fresh = {0};
    memcpy(fresh.held_text, st->held_text, sizeof fresh.held_text);
    fresh.held_set = st->held_set;
    fresh.diags = st->diags;
    if (keep_file && st->file_active) {
        memcpy(fresh.path, st->path, st->off[0]);
        fresh.off[0] = st->off[0];
        fresh.file_active = true;
        fresh.file_judged = st->file_judged;
        fresh.file_plan = st->file_plan;
        fresh.file_ran = st->file_ran;
    }
    *st = fresh;
}

/* prove's announcement of a file: "<file> <two or more dots>[ <rest>]", the file name holding a
 * '.' before a letter or digit (an extension); the file's length. */
static size_t prove_file(const char *p, size_t m, struct tl_str *ret_rest)
{
    const char *sp = memchr(p, ' ', m < 1024 ? m : 1024);
    if (!sp || sp == p)
        return 0;
    bool ext = false;
    for (const char *q = p; q + 1 < sp && !ext; q++)
        ext = q[0] == '.' && ((q[1] >= 'a' && q[1] <= 'z') || (q[1] >= 'A' && q[1] <= 'Z') ||
                              (q[1] >= '0' && q[1] <= '9'));
    if (!ext)
        return 0;
    size_t i = (size_t)(sp - p) + 1, d = i;
    while (i < m && p[i] == '.')
        i++;
    if (i - d < 2 || (i < m && p[i] != ' '))
        return 0;
    *ret_rest = tl_trim(tl_str_make(p + i, m - i));
    return (size_t)(sp - p);
}

/* A file-level result of prove's current file. */
static int file_result(struct tap_state *st, enum tl_outcome oc, struct tl_str msg,
                       struct tl_event *ev)
{
    st->file_judged = true;
    tl_set_result(ev, tl_str_make(st->path, st->off[0]), tl_str_make(NULL, 0), oc);
    ev->message = msg;
    return 1;
}

/* prove's lines about the file it ran: announcement, verdicts (see the top). -1: none of them. */
static int prove_line(struct tap_state *st, const char *p, size_t m, uint64_t arrival_ns,
                      struct tl_event *ev)
{
    if (st->file_active && !st->file_judged &&
        (TL_PREFIX(p, m, "Dubious, test returned ") || TL_PREFIX(p, m, "No subtests run") ||
         (TL_PREFIX(p, m, "Failed ") && memmem(p, m, " subtests", 9)))) {
        if (st->file_plan >= 0 && (unsigned long)st->file_plan == st->file_ran) {
            st->file_judged = true;
            return 0;
        }
        return file_result(st, TL_ERRORED, tl_trim(tl_str_make(p, m)), ev);
    }
    if (st->file_active && m == 2 && p[0] == 'o' && p[1] == 'k') {
        st->file_judged = true; /* the verdict: the file passed */
        return 0;
    }
    struct tl_str rest = {0};
    size_t fn = prove_file(p, m, &rest);
    if (!fn || fn >= TAP_PATH)
        return -1;
    /* What follows the dots: nothing (-v: the TAP comes next), the verdict "ok", or "skipped";
     * anything else is not prove's (pytest's "tests/a.py ....  [100%]"). */
    bool skipped = TL_PREFIX(rest.p, rest.n, "skipped:") || tl_str_eq(rest, "skipped");
    if (rest.n && !skipped && !tl_str_eq(rest, "ok"))
        return -1;
    new_document(st, false);
    memcpy(st->path, p, fn);
    st->off[0] = fn;
    st->file_active = true;
    st->file_plan = -1;
    touch(st, 0, arrival_ns); /* the first test ran from here */
    anchor(&ev[0]);
    if (skipped) {
        /* No test ran: prove counts none (its "Tests=" total), so the file is no test either,
         * only a SKIP status that names it, with the reason. */
        struct tl_str why = rest.n > 8 ? tl_trim(tl_str_make(rest.p + 8, rest.n - 8)) : rest;
        st->file_judged = true;
        tl_event_init(&ev[1], TLE_SUBTEST);
        ev[1].id = tl_str_make(st->path, st->off[0]);
        ev[1].status = tl_str_make("SKIP", 4);
        ev[1].message = why;
        return 2;
    }
    if (tl_str_eq(rest, "ok"))
        st->file_judged = true;
    return 1;
}

/* ---- Test::More's failure blocks (see the top) ---------------------------------------------- */

static bool follows_recent(struct tap_diags *g, struct tap_diag *d);

/* The block being read, if any, ends: the text of one that follows its failed point goes out as
 * that test's late message (0 or 1 event); one that came first waits for its point. */
static int end_block(struct tap_state *st, struct tl_event *ev)
{
    struct tap_diags *g = &st->diags;
    if (!g->cur)
        return 0;
    struct tap_diag *d = &g->d[g->cur - 1];
    g->cur = 0;
    if (!d->follows && !follows_recent(g, d))
        return 0; /* it waits for its point */
    d->used = false; /* its text stays as it is until a later line starts a block */
    g->last_failed = false;
    if (!d->text_n)
        return 0;
    tl_event_init(ev, TLE_TEST_MESSAGE);
    ev->id = tl_str_make(d->id, d->id_n);
    ev->scope = tl_str_make(d->scope, d->scope_n);
    ev->message = tl_str_make(d->text, d->text_n);
    return 1;
}

/* A block that names a failed point of the recent ones (at its level, in its file) follows it:
 * that point's test is the block's (d->id, d->scope), and the point is no longer waiting. */
static bool follows_recent(struct tap_diags *g, struct tap_diag *d)
{
    for (unsigned k = 0; k < TAP_RECENT; k++) {
        struct tap_failed *f = &g->recent[(g->recent_next - 1 - k) % TAP_RECENT]; /* newest first */
        if (!f->used || f->indent != d->indent || f->named != (d->name_n > 0) ||
            (f->named && (f->id_n != d->name_n || memcmp(f->id, d->name, d->name_n) != 0)) ||
            (d->file_n && f->scope_n && (f->scope_n != d->file_n || memcmp(f->scope, d->file, d->file_n) != 0)))
            continue;
        f->used = false;
        d->follows = true;
        d->id_n = tl_copy(d->id, sizeof d->id, tl_str_make(f->id, f->id_n)).n;
        d->scope_n = tl_copy(d->scope, sizeof d->scope, tl_str_make(f->scope, f->scope_n)).n;
        return true;
    }
    return false;
}

/* The failed point just before a block that follows it is no longer waiting for one. */
static void forget_recent(struct tap_diags *g)
{
    for (unsigned k = 0; k < TAP_RECENT; k++) {
        struct tap_failed *f = &g->recent[k];
        if (f->used && f->id_n == g->last_id_n && !memcmp(f->id, g->last_id, f->id_n) &&
            f->scope_n == g->last_scope_n && !memcmp(f->scope, g->last_scope, f->scope_n))
            f->used = false;
    }
}

/* "at FILE line N." in t: FILE into the block. */
static void block_file(struct tap_diag *d, struct tl_str t)
{
    const char *at = memmem(t.p, t.n, "at ", 3);
    const char *ln = at ? memmem(at + 3, t.n - (size_t)(at + 3 - t.p), " line ", 6) : NULL;
    if (ln && !d->file_n)
        d->file_n = tl_copy(d->file, sizeof d->file, tl_str_make(at + 3, (size_t)(ln - at - 3))).n;
}

/* A comment line ("#..." at indentation ind): part of a failure block, or its start. *took:
 * the line was the block's; else it is read as any other comment (after the block ended). */
static int diag_line(struct tap_state *st, const char *p, size_t m, unsigned ind, struct tl_event *ev,
                     bool *took)
{
    struct tap_diags *g = &st->diags;
    *took = false;
    if (p[1] != ' ')
        return 0; /* "#x": no comment of Test::More's (nor a line the prefilter passes) */
    size_t sp = 1;
    while (sp < m && p[sp] == ' ')
        sp++;
    struct tl_str t = tl_str_make(p + sp, m - sp);
    bool start = TL_PREFIX(t.p, t.n, "Failed test");
    if (g->cur && !start && ind == g->d[g->cur - 1].indent && !TL_PREFIX(t.p, t.n, "Looks like ") &&
        !TL_PREFIX(p, m, "# Subtest")) {
        struct tap_diag *d = &g->d[g->cur - 1];
        size_t cut = 1 + MIN(sp - 1, d->skip);
        if (!d->file_n && TL_PREFIX(t.p, t.n, "at "))
            block_file(d, t);
        tl_append_line(d->text, sizeof d->text, &d->text_n, tl_str_make(p + cut, m - cut));
        *took = true;
        return 0;
    }
    if (!start) {
        if (TL_PREFIX(t.p, t.n, "Looks like "))
            g->last_failed = false;
        return end_block(st, ev);
    }
    /* A new block: a free slot, else the oldest's; never the one still being read, whose text
     * a late message of this line may point at. */
    int slot = -1;
    for (int i = 0; i < TAP_DIAGS && slot < 0; i++)
        if (!g->d[i].used && i != g->cur - 1)
            slot = i;
    if (slot < 0) {
        slot = (int)(g->next++ % TAP_DIAGS);
        if (slot == g->cur - 1)
            slot = (int)(g->next++ % TAP_DIAGS);
    }
    int k = end_block(st, ev);
    struct tap_diag *d = &g->d[slot];
    d->used = true;
    d->indent = ind;
    d->skip = (unsigned)(sp - 1);
    d->name_n = d->file_n = d->text_n = 0;
    struct tl_str rest = tl_str_make(t.p + 11, t.n - 11);
    if (rest.n >= 3 && rest.p[0] == ' ' && rest.p[1] == '\'') {
        const char *q = memrchr(rest.p + 2, '\'', rest.n - 2);
        if (q)
            d->name_n = tl_copy(d->name, sizeof d->name, tl_str_make(rest.p + 2, (size_t)(q - rest.p - 2))).n;
    } else {
        block_file(d, rest); /* "Failed test at FILE line N." */
    }
    tl_append_line(d->text, sizeof d->text, &d->text_n, t);
    /* It follows the failed point just before it when it names that test. */
    d->follows = g->last_failed && g->last_indent == ind &&
                 (g->last_named ? d->name_n == g->last_id_n && memcmp(d->name, g->last_id, d->name_n) == 0
                                : d->name_n == 0);
    if (d->follows) {
        forget_recent(g);
        d->id_n = tl_copy(d->id, sizeof d->id, tl_str_make(g->last_id, g->last_id_n)).n;
        d->scope_n = tl_copy(d->scope, sizeof d->scope, tl_str_make(g->last_scope, g->last_scope_n)).n;
    }
    g->cur = slot + 1;
    *took = true;
    return k;
}

/* A failed point: a block that came before it and names it gives it its text; a block after it
 * may follow it. named: the point had a description (its id is not its number). */
static void failed_point(struct tap_state *st, struct tl_event *out, unsigned ind, bool named)
{
    struct tap_diags *g = &st->diags;
    struct tl_str file = st->file_active ? tl_str_make(st->path, st->off[0]) : tl_str_make(NULL, 0);
    for (int i = 0; i < TAP_DIAGS && !out->message.n; i++) {
        struct tap_diag *d = &g->d[i];
        if (!d->used || d->follows || i == g->cur - 1 || d->indent != ind ||
            (named ? d->name_n != out->id.n || memcmp(d->name, out->id.p, d->name_n) != 0 : d->name_n != 0) ||
            (d->file_n && file.n && (d->file_n != file.n || memcmp(d->file, file.p, file.n) != 0)))
            continue;
        d->used = false; /* its text stays as it is until a later line starts a block */
        out->message = tl_str_make(d->text, d->text_n);
    }
    if (!out->message.n && out->id.n <= sizeof g->recent[0].id) {
        struct tap_failed *f = &g->recent[g->recent_next++ % TAP_RECENT];
        f->used = true;
        f->named = named;
        f->indent = ind;
        f->id_n = tl_copy(f->id, sizeof f->id, out->id).n;
        f->scope_n = tl_copy(f->scope, sizeof f->scope, out->scope).n;
    }
    g->last_failed = true;
    g->last_named = named;
    g->last_indent = ind;
    g->last_id_n = tl_copy(g->last_id, sizeof g->last_id, out->id).n; /* its marker's (a number) */
    g->last_scope_n = tl_copy(g->last_scope, sizeof g->last_scope, out->scope).n;
}

static int test_point(struct tap_state *st, const char *p, size_t m, unsigned ind,
                      uint64_t arrival_ns, struct tl_event *out)
{
    bool ok = p[0] == 'o';
    size_t i = ok ? 2 : 6;
    unsigned long num = 0;
    bool have_num = false, need_seen = true;
    if (i < m) {
        if (p[i] != ' ')
            return -1;
        i++;
        /* "ok  \tpkg\t0.01s" is go's package line. */
        if (i < m && (p[i] == ' ' || p[i] == '\t'))
            return -1;
        if (i < m && is_digit(p[i])) {
            have_num = true;
            need_seen = false;
            for (; i < m && is_digit(p[i]); i++)
                num = num < 100000000 ? num * 10 + (unsigned long)(p[i] - '0') : num;
            if (i < m && p[i] != ' ')
                return -1;
        }
        while (i < m && p[i] == ' ')
            i++;
        if (i < m && p[i] == '-' && (i + 1 == m || p[i + 1] == ' ')) {
            need_seen = false;
            i += i + 1 < m ? 2 : 1;
        }
    }
    if (need_seen && !st->seen)
        return -1;
    struct tl_str desc, reason = {0}, id, msg = {0};
    int directive = find_directive(tl_str_make(p + i, m - i), &desc, &reason);
    desc = unescape(st, desc);
    id = desc;
    if (!directive)
        check_form(desc, &id, &msg);

    unsigned level = ind / 4;
    bool closes_opened = false;
    if (st->depth > level) {
        size_t start = st->off[level] + (st->off[level] ? 1 : 0);
        struct tl_str pname = tl_str_make(st->path + start,
                                          st->off[level + 1] > start ? st->off[level + 1] - start : 0);
        closes_opened = st->opened[level + 1] &&
                        (pname.n == id.n && (id.n == 0 || memcmp(pname.p, id.p, id.n) == 0));
        if (st->opened[level + 1] && id.n == 0)
            id = pname;
    }
    enter_level(st, level);
    st->count[level] = have_num ? num : st->count[level] + 1;
    if (!id.n) {
        /* An empty id would mean "the most recent open test" to the core. */
        int l = snprintf(st->num, sizeof st->num, "%lu", st->count[level]);
        id = tl_str_make(st->num, (size_t)l);
    }

    if (level == 0 && st->file_active)
        st->file_ran++;
    enum tl_outcome oc = ok ? TL_PASSED : TL_FAILED;
    if (directive == 1 && ok)
        oc = TL_SKIPPED;
    else if (directive == 2)
        oc = ok ? TL_UNEXPECTED_PASS : TL_KNOWN_FAIL;
    tl_set_result(out, id, scope_of(st, level), oc);
    out->message = directive ? reason : msg;
    if (oc == TL_FAILED)
        failed_point(st, out, ind, desc.n > 0);
    else
        st->diags.last_failed = false;
    if (!closes_opened && st->have_last[level] && arrival_ns >= st->last_ns[level]) {
        out->t.duration_ms = (double)(arrival_ns - st->last_ns[level]) / 1e6;
        out->t.since_ns = st->last_ns[level];
    } else if (closes_opened && st->have_opener_since[level + 1]) {
        out->t.since_ns = st->opener_since[level + 1]; /* for an opener that came late */
    }
    touch(st, level, arrival_ns);
    return 1;
}

/* The held result as it goes out: a failure's text gains its YAML location ("at FILE:LINE:COL",
 * where an annotation finds it). */
static struct tl_event release_held(struct tap_state *st)
{
    struct tl_event ev = st->held;
    struct held_text *h = &st->held_text[st->held_set];
    if (st->where_n && ev.unexpected && !tl_str_eq(ev.status, "PASS")) {
        size_t n = ev.message.n;
        if (ev.message.p != h->msg)
            n = tl_copy(h->msg, sizeof h->msg, ev.message).n;
        char at[sizeof h->where + 4];
        int l = snprintf(at, sizeof at, "at %.*s", (int)st->where_n, h->where);
        tl_append_line(h->msg, sizeof h->msg, &n, tl_str_make(at, (size_t)MIN(l, (int)sizeof at - 1)));
        ev.message = tl_str_make(h->msg, n);
    }
    st->where_n = 0;
    return ev;
}

/* A line while a result is held (its YAML block may follow, or is being read) or right after a
 * test point: true when the line was the block's (consumed: *n events are the line's); else the
 * held result, if any, is released into ev (*n) and the line is read as any other. */
static bool held_line(struct tap_state *st, const char *p, size_t m, unsigned ind, bool after_point,
                      struct tl_event *ev, int *n)
{
    if (st->hold == HOLD_YAML || st->hold == HOLD_SKIPYAML) {
        if (ind == st->yaml_indent && m == 3 && memcmp(p, "...", 3) == 0) {
            if (st->hold == HOLD_YAML)
                ev[(*n)++] = release_held(st);
            st->hold = HOLD_NONE;
            return true;
        }
        if (ind >= st->yaml_indent || m == 0) {
            if (st->hold == HOLD_YAML && ind > st->yaml_indent && st->error_block) {
                st->error_block = false; /* a block scalar's first line */
                st->held.message = yaml_text(st, tl_trim(tl_str_make(p, m)));
            }
            if (st->hold == HOLD_YAML && ind == st->yaml_indent) {
                st->error_block = false;
                struct tl_str s = tl_str_make(p, m);
                double v;
                if (TL_PREFIX(p, m, "duration_ms:") &&
                    tl_parse_number(tl_trim(tl_str_make(p + 12, m - 12)), &v) && v >= 0)
                    st->held.t.duration_ms = v;
                else if (TL_PREFIX(p, m, "location:")) {
                    struct tl_str loc = tl_trim(tl_str_make(p + 9, m - 9));
                    if (loc.n >= 2 && (loc.p[0] == '\'' || loc.p[0] == '"') && loc.p[loc.n - 1] == loc.p[0])
                        loc = tl_str_make(loc.p + 1, loc.n - 2);
                    struct held_text *h = &st->held_text[st->held_set];
                    st->where_n = tl_copy(h->where, sizeof h->where, loc).n;
                } else if (tl_iprefix(s, "failuretype:") &&
                         memmem(p, m, "testTimeoutFailure", 18))
                    st->held.status = TL_LIT("TIMEOUT");
                else if (TL_PREFIX(p, m, "error:") && !st->held.message.n) {
                    struct tl_str e = tl_trim(tl_str_make(p + 6, m - 6));
                    if (e.n && (e.p[0] == '|' || e.p[0] == '>'))
                        st->error_block = true;
                    else
                        st->held.message = yaml_text(st, e);
                }
            }
            return true;
        }
        /* The block ended without "...". */
        if (st->hold == HOLD_YAML)
            ev[(*n)++] = release_held(st);
        st->hold = HOLD_NONE;
    } else if (st->hold == HOLD_WAIT) {
        if (m == 3 && ind > st->point_indent && memcmp(p, "---", 3) == 0) {
            st->yaml_seen = true;
            st->hold = HOLD_YAML;
            st->yaml_indent = ind;
            return true;
        }
        ev[(*n)++] = release_held(st);
        st->hold = HOLD_NONE;
    } else if (after_point && m == 3 && ind > st->point_indent && memcmp(p, "---", 3) == 0) {
        st->yaml_seen = true;
        st->hold = HOLD_SKIPYAML;
        st->yaml_indent = ind;
        return true;
    }
    return false;
}

/* "1..N": a plan, at its level. */
static int plan_line(struct tap_state *st, const char *p, size_t m, unsigned level, uint64_t arrival_ns,
                     struct tl_event *ev, int n)
{
    if (TL_PREFIX(p, m, "1..")) {
        size_t i = 3;
        long plan = 0;
        if (i >= m || !is_digit(p[i]))
            return n;
        for (; i < m && is_digit(p[i]); i++)
            plan = plan < 100000000 ? plan * 10 + (p[i] - '0') : plan;
        if (i < m && p[i] != ' ')
            return n;
        if (level == 0 && st->file_active)
            st->file_plan = plan;
        st->seen = true;
        enter_level(st, level);
        touch(st, level, arrival_ns);
        anchor(&ev[n++]);
    }
    return n;
}

/* "# Subtest: NAME": a subtest opens at the next level (its result comes at the end). */
static int subtest_line(struct tap_state *st, const char *p, size_t m, unsigned level, uint64_t arrival_ns,
                        struct tl_event *ev, int n)
{
    if (TL_PREFIX(p, m, "# Subtest")) {
        struct tl_str name = tl_str_make(p + 9, m - 9);
        if (name.n && name.p[0] == ':') {
            name.p++;
            name.n--;
        } else if (name.n) {
            return n;
        }
        name = unescape(st, tl_trim(name));
        enter_level(st, level);
        char num[24];
        if (!name.n) {
            int l = snprintf(num, sizeof num, "%lu", st->count[level] + 1);
            name = tl_str_make(num, (size_t)l);
        }
        st->opener_seen = true;
        tl_event_init(&ev[n], TLE_TEST_START);
        ev[n].id = name;
        ev[n].scope = scope_of(st, level);
        uint64_t before = st->last_ns[level];
        bool had = st->have_last[level];
        touch(st, level, arrival_ns);
        set_level(st, level + 1, name, arrival_ns, true, true);
        st->opener_since[level + 1] = before;
        st->have_opener_since[level + 1] = had;
        st->depth = level + 1;
        if (name.p == num) {
            /* num dies with this call: point at the copy in path when it fits. */
            size_t o = st->off[level + 1];
            bool fits = o >= name.n && memcmp(st->path + o - name.n, num, name.n) == 0;
            ev[n].id = fits ? tl_str_make(st->path + o - name.n, name.n) : TL_LIT("?");
        }
        n++;
        anchor(&ev[n++]);
    }
    return n;
}

static int tap_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                     struct tl_event *ev)
{
    struct tap_state *st = state;
    int n = 0;
    unsigned ind = 0;
    while (ind < len && line[ind] == ' ')
        ind++;
    const char *p = line + ind;
    size_t m = len - ind;
    bool after_point = st->after_point;
    st->after_point = false;

    if (held_line(st, p, m, ind, after_point, ev, &n))
        return n;
    if (m < 2)
        return n;
    if (p[0] == '#') {
        bool took;
        n += diag_line(st, p, m, ind, ev + n, &took);
        if (took)
            return n;
    } else if (st->diags.cur || st->diags.last_failed) {
        n += end_block(st, ev + n);
        st->diags.last_failed = false;
    }
    unsigned level = ind / 4;
    if (level > TAP_DEPTH)
        return n;
    if (ind == 0 && n <= TL_MAX_EVENTS - 2) {
        int k = prove_line(st, p, m, arrival_ns, ev + n);
        if (k >= 0)
            return n + k;
    }

    switch (p[0]) {
    case 'o':
    case 'n': {
        if (!(p[0] == 'o' ? TL_PREFIX(p, m, "ok") : TL_PREFIX(p, m, "not ok")))
            return n;
        struct tl_event r;
        if (test_point(st, p, m, ind, arrival_ns, &r) < 0)
            return n;
        st->point_indent = ind;
        anchor(&ev[n++]);
        if (st->yaml_seen || st->opener_seen) {
            st->held = r;
            st->where_n = 0;
            st->held_set ^= 1;
            struct held_text *h = &st->held_text[st->held_set];
            st->held.id = tl_copy(h->id, sizeof h->id, r.id);
            st->held.scope = tl_copy(h->scope, sizeof h->scope, r.scope);
            st->held.message = tl_copy(h->msg, sizeof h->msg, r.message);
            tl_at_earlier_line(&st->held, arrival_ns);
            st->hold = HOLD_WAIT;
            return n;
        }
        st->after_point = true;
        ev[n++] = r;
        return n;
    }
    case 'T':
        if (ind == 0 && TL_PREFIX(p, m, "TAP version ")) {
            new_document(st, true);
            st->seen = true;
            touch(st, 0, arrival_ns); /* the first test ran from here */
            anchor(&ev[n++]);
        }
        return n;
    case 'B':
        if (TL_PREFIX(p, m, "Bail out!")) {
            tl_event_init(&ev[n], TLE_BAIL_OUT);
            ev[n].message = tl_trim(tl_str_make(p + 9, m - 9));
            n++;
        }
        return n;
    case '1':
        return plan_line(st, p, m, level, arrival_ns, ev, n);
    case '#':
        return subtest_line(st, p, m, level, arrival_ns, ev, n);
    default:
        return n;
    }
}

/* The end of the output completes a held result. */
static int tap_flush(void *state, struct tl_event *ev)
{
    struct tap_state *st = state;
    bool held = st->hold == HOLD_WAIT || st->hold == HOLD_YAML;
    if (held)
        ev[0] = release_held(st);
    st->hold = HOLD_NONE;
    return held + end_block(st, ev + held);
}

/* Held results and YAML blocks are decided by whatever line comes next, and so is the end of a
 * failure block (or of a failed point's chance of one). */
static bool tap_busy(const void *state)
{
    const struct tap_state *st = state;
    return st->hold != HOLD_NONE || st->after_point || st->diags.cur || st->diags.last_failed;
}

const struct tl_format tl_format_tap = {
    .name = "tap",
    .bit = TL_FMT_TAP,
    .state_size = sizeof(struct tap_state),
    .parse = tap_parse,
    .release = NULL,
    .flush = tap_flush,
    .first_bytes = " ",
    /* and prove's lines: a file name (dotted), "Dubious", "Failed", "No subtests run" */
    .pairs = (const char *const[]){"ok", "no", "TA", "Ba", "1.", "# ", "Du", "Fa", "No", NULL},
    .dotted_word = true,
    .busy = tap_busy,
};
