/* mocha's default "spec" reporter and its json-stream reporter (testlog/formats.h has the result
 * mapping).
 *
 * mocha prints a suite's title when the suite starts and a test's line when the test ends,
 * indented by two spaces a level; a suite's own tests run (and print) before its child suites:
 *
 *     Calculator                       a suite at level 1 (indentation 2)
 *       ✔ is slow (147ms)              PASS; "(Nms)" only for slow tests
 *       1) times out                   FAIL: failures are numbered 1, 2, ... in the run
 *       add                            a child suite at level 2
 *         - is pending                 pending (it.skip, a test without a body): SKIP
 *     ...
 *     6 passing (494ms)                the summary ends the results
 *     2 pending
 *     6 failing
 *     1) Calculator                    a failure's block: the title path, one title a line, the
 *          times out:                  last ending with ':', then the error as mocha prints it
 *        Error: Timeout of 100ms ...   (message, diff), then its stack ("at ..." lines)
 *         at listOnTimeout (...)
 *
 * A test's id is its full title as mocha names it (fullTitle(): the suite titles and the test's,
 * joined by spaces; json-stream and --grep use it too); the scope is empty. A failed hook
 * ('"before all" hook for "x"') is an ERROR under the suite's title.
 *
 * What makes a line a result, so that a test's own output is not taken for one: its indentation
 * must be exactly the level below the innermost suite (mocha prints nothing else there: a suite's
 * tests come before its child suites), a failure's number must be the next one, and a pending
 * "- title" counts only once the run has shown a passed or failed test. An indented line at a
 * suite's level or above it, not shaped like a result, is a suite title only when the next
 * indented line is one level deeper (mocha prints a title just before the suite's first child);
 * so a line a test prints is mistaken for a title only when a result one level deeper follows
 * it, and a line it prints in the very shape of a result at that level is taken for one. The
 * summary's "N passing" counts only when N is the number of passes seen.
 *
 * json-stream (--reporter json-stream): one JSON array a line, ["pass", {...}] and ["fail", {...}]
 * with "title", "fullTitle", "duration" (ms), and for a failure "err" and "stack": a result whose
 * id is fullTitle, lasting its duration, with the stack's head (the error's name and message, as
 * the spec reporter prints it) as message; ["start", ...] and ["end", ...] (the totals) name no
 * test. json-stream writes no event for a pending test: those leave no result.
 *
 * Timing: no line marks a test's start. A test ran from the previous result line to its own
 * (t.duration_ms, t.since_ns; the first of a run has no start), unless mocha printed "(Nms)".
 * The failure texts come as TLE_TEST_MESSAGE when a block's stack begins (or the next block, or
 * the end of the output); the text keeps the error's lines as printed, less the first line's
 * indentation, blank lines left out.
 */
#include "testlog/formats.h"

#include <cjson/cJSON.h>

#include "testlog/testlog.h"

#define MO_DEPTH 32
#define MO_PATH 1024

enum mocha_section { MO_RESULTS, MO_FAILURES };

struct mocha_state {
    char path[MO_PATH];      /* the suite titles, joined by ' ' */
    size_t off[MO_DEPTH + 1]; /* off[k]: the path's length at level k */
    unsigned depth;          /* suites open (levels 1..depth) */
    unsigned pending;        /* the level of a title line not yet confirmed (0: none) */
    char pending_title[MO_PATH];
    size_t pending_n;
    bool in_run;             /* a passed or failed test seen since the last summary */
    unsigned long nfail;     /* failures numbered so far in this run */
    unsigned long npass;     /* passes in this run: the summary's "N passing" says the same */
    bool have_last;
    uint64_t last_ns;        /* the previous result's arrival */
    enum mocha_section section;
    unsigned long blocks, block; /* failure blocks expected; the current one's number */
    bool in_title, collecting;
    char id[MO_PATH + 1024];
    size_t id_n;
    char title[MO_PATH];
    size_t title_n;
    char msg[TESTLOG_MESSAGE_MAX];
    size_t msg_n;
    char out[MO_PATH + 1024]; /* the id of the event handed out */
};

static size_t indent_of(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && p[i] == ' ')
        i++;
    return i;
}

/* "N<sep>" at s: N (> 0), and the length through sep; 0 when not. */
static size_t number_then(struct tl_str s, const char *sep, unsigned long *ret)
{
    size_t i = 0, m = strlen(sep);
    unsigned long v = 0;
    while (i < s.n && i < 9 && s.p[i] >= '0' && s.p[i] <= '9')
        v = v * 10 + (unsigned long)(s.p[i++] - '0');
    if (!i || s.n - i < m || memcmp(s.p + i, sep, m) != 0)
        return 0;
    *ret = v;
    return i + m;
}

/* "N passing (12ms)"; its N in *ret. */
static bool summary_line(struct tl_str c, unsigned long *ret)
{
    return number_then(c, " passing (", ret) && c.p[c.n - 1] == ')';
}

/* Begins as a result line does: "✔ ", "- " or "N) ". */
static bool result_shape(struct tl_str c)
{
    unsigned long no;
    return TL_PREFIX(c.p, c.n, "\xe2\x9c\x94 ") || TL_PREFIX(c.p, c.n, "- ") ||
           number_then(c, ") ", &no);
}

/* A test's title with mocha's slow-test duration "(123ms)" taken off. */
static struct tl_str title_duration(struct tl_str t, double *ret_ms)
{
    *ret_ms = __builtin_nan("");
    if (t.n < 6 || t.p[t.n - 1] != ')' || t.p[t.n - 2] != 's' || t.p[t.n - 3] != 'm')
        return t;
    size_t i = t.n - 3;
    while (i > 0 && t.p[i - 1] >= '0' && t.p[i - 1] <= '9')
        i--;
    if (i == t.n - 3 || i < 3 || t.p[i - 1] != '(' || t.p[i - 2] != ' ')
        return t;
    double v;
    if (!tl_parse_number(tl_str_make(t.p + i, t.n - 3 - i), &v))
        return t;
    *ret_ms = v;
    return tl_str_make(t.p, i - 2);
}

static bool hook_title(struct tl_str t)
{
    return (TL_PREFIX(t.p, t.n, "\"before ") || TL_PREFIX(t.p, t.n, "\"after ")) &&
           memmem(t.p, t.n, "\" hook", 6) != NULL;
}

/* The full title of a test at the current depth. */
static struct tl_str full_title(struct mocha_state *st, struct tl_str title)
{
    size_t n = 0, pl = st->off[st->depth];
    memcpy(st->out, st->path, pl);
    n = pl;
    if (pl && n < sizeof st->out)
        st->out[n++] = ' ';
    size_t m = title.n < sizeof st->out - n ? title.n : sizeof st->out - n;
    memcpy(st->out + n, title.p, m);
    return tl_str_make(st->out, n + m);
}

static void set_suite(struct mocha_state *st, unsigned level, struct tl_str title)
{
    size_t base = st->off[level - 1];
    if (base && base < MO_PATH)
        st->path[base++] = ' ';
    size_t m = title.n < MO_PATH - base ? title.n : MO_PATH - base;
    memcpy(st->path + base, title.p, m);
    st->off[level] = base + m;
    st->depth = level;
}

/* The failure text gathered for the current block, as a TLE_TEST_MESSAGE. */
static int emit_message(struct mocha_state *st, struct tl_event *ev)
{
    st->collecting = st->in_title = false;
    if (st->block >= st->blocks)
        st->section = MO_RESULTS; /* the last block: a new run may follow */
    if (!st->id_n || !st->msg_n)
        return 0;
    tl_event_init(ev, TLE_TEST_MESSAGE);
    memcpy(st->out, st->id, st->id_n);
    ev->id = tl_str_make(st->out, st->id_n);
    ev->message = tl_str_make(st->msg, st->msg_n);
    st->id_n = 0;
    return 1;
}

static void end_title(struct mocha_state *st)
{
    st->in_title = false;
    st->collecting = true;
    st->msg_n = 0;
    st->id_n = tl_copy(st->id, sizeof st->id, tl_str_make(st->title, st->title_n)).n;
}

static void add_title(struct mocha_state *st, struct tl_str t)
{
    if (t.n && t.p[t.n - 1] == ':') {
        t.n--;
        st->in_title = false;
    }
    if (st->title_n && st->title_n < sizeof st->title)
        st->title[st->title_n++] = ' ';
    size_t m = t.n < sizeof st->title - st->title_n ? t.n : sizeof st->title - st->title_n;
    memcpy(st->title + st->title_n, t.p, m);
    st->title_n += m;
}

static int failures(struct mocha_state *st, const char *line, size_t len, struct tl_event *ev)
{
    size_t ind = indent_of(line, len);
    struct tl_str c = tl_str_make(line + ind, len - ind);
    unsigned long no;
    size_t k;
    if (ind == 2 && (k = number_then(c, ") ", &no)) && no == st->block + 1 && no <= st->blocks) {
        int n = st->collecting ? emit_message(st, ev) : 0;
        st->block = no;
        st->title_n = 0;
        st->in_title = true;
        add_title(st, tl_str_make(c.p + k, c.n - k));
        if (!st->in_title)
            end_title(st);
        return n;
    }
    if (st->in_title) {
        add_title(st, tl_trim(c));
        if (!st->in_title)
            end_title(st);
        return 0;
    }
    if (!st->collecting)
        return 0;
    if ((ind >= 4 && TL_PREFIX(c.p, c.n, "at ")) || (ind == 6 && tl_str_eq(c, "+ expected - actual")))
        return emit_message(st, ev);
    /* mocha indents the error's first line; the message's other lines are as the error has them */
    struct tl_str text = st->msg_n ? tl_str_make(line, len) : c;
    while (text.n && text.p[text.n - 1] == ' ')
        text.n--;
    if (text.n)
        tl_append_line(st->msg, sizeof st->msg, &st->msg_n, text);
    return 0;
}

/* A json-stream line: its events (0: not one). */
static int json_stream(struct mocha_state *st, const char *line, size_t len, struct tl_event *ev)
{
    cJSON *a = cJSON_ParseWithLength(line, len);
    const cJSON *kind = cJSON_GetArrayItem(a, 0), *o = cJSON_GetArrayItem(a, 1);
    int n = 0;
    if (!cJSON_IsArray(a) || !cJSON_IsString(kind) || !cJSON_IsObject(o))
        goto out;
    const char *k = kind->valuestring;
    if (!strcmp(k, "start") || !strcmp(k, "end")) {
        tl_event_init(ev, TLE_ANCHOR);
        n = 1;
        goto out;
    }
    bool pass = !strcmp(k, "pass");
    if (!pass && strcmp(k, "fail"))
        goto out;
    const cJSON *title = cJSON_GetObjectItemCaseSensitive(o, "title"),
                *dur = cJSON_GetObjectItemCaseSensitive(o, "duration"),
                *stack = cJSON_GetObjectItemCaseSensitive(o, "stack"),
                *err = cJSON_GetObjectItemCaseSensitive(o, "err");
    struct tl_str id = tl_json_copy(o, "fullTitle", st->out, sizeof st->out);
    if (!id.n)
        goto out;
    enum tl_outcome oc = pass ? TL_PASSED : TL_FAILED;
    if (!pass && cJSON_IsString(title) &&
        hook_title(tl_str_make(title->valuestring, strlen(title->valuestring))))
        oc = TL_ERRORED;
    tl_set_result(ev, id, tl_str_make(NULL, 0), oc);
    if (cJSON_IsNumber(dur) && dur->valuedouble >= 0)
        ev->t.duration_ms = dur->valuedouble;
    const cJSON *text = cJSON_IsString(stack) ? stack : cJSON_IsString(err) ? err : NULL;
    if (!pass && text) {
        /* the stack's head: up to its first frame */
        const char *s = text->valuestring, *f = strstr(s, "\n    at ");
        st->msg_n = 0;
        for (const char *p = s, *end = f ? f : s + strlen(s); p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            struct tl_str l = tl_str_make(p, (size_t)((nl ? nl : end) - p));
            while (l.n && l.p[l.n - 1] == ' ')
                l.n--;
            if (l.n)
                tl_append_line(st->msg, sizeof st->msg, &st->msg_n, l);
            p = nl ? nl + 1 : end;
        }
        ev->message = tl_str_make(st->msg, st->msg_n);
    }
    n = 1;
out:
    cJSON_Delete(a);
    return n;
}

static int mocha_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                       struct tl_event *ev)
{
    struct mocha_state *st = state;
    if (len > 2 && line[0] == '[' && line[1] == '"')
        return json_stream(st, line, len, ev);
    if (st->section == MO_FAILURES)
        return failures(st, line, len, ev);
    size_t ind = indent_of(line, len);
    if (ind < 2 || ind == len || (ind & 1))
        return 0;
    struct tl_str c = tl_str_make(line + ind, len - ind);
    unsigned level = (unsigned)(ind / 2);
    unsigned long passing;
    bool summary = summary_line(c, &passing);
    if (level == 1 && st->in_run && summary && passing == st->npass) {
        st->blocks = st->nfail;
        st->block = 0;
        st->nfail = st->npass = 0;
        st->depth = st->pending = 0;
        st->in_run = false;
        st->have_last = false;
        st->section = st->blocks ? MO_FAILURES : MO_RESULTS;
        st->collecting = st->in_title = false;
        tl_event_init(ev, TLE_ANCHOR);
        return 1;
    }
    if (st->pending) {
        /* mocha prints a suite's title just before its first child (a title or a result, one
         * level deeper): a title line followed by anything else was a test's output */
        if (level == st->pending + 1)
            set_suite(st, st->pending, tl_str_make(st->pending_title, st->pending_n));
        st->pending = 0;
    }
    if (level == st->depth + 1) {
        enum tl_outcome oc = TL_PASSED;
        struct tl_str title = {NULL, 0};
        unsigned long no;
        size_t k;
        if (TL_PREFIX(c.p, c.n, "\xe2\x9c\x94 ")) { /* ✔ */
            oc = TL_PASSED;
            title = tl_str_make(c.p + 4, c.n - 4);
        } else if ((k = number_then(c, ") ", &no)) && no == st->nfail + 1) {
            oc = TL_FAILED;
            title = tl_str_make(c.p + k, c.n - k);
        } else if (st->in_run && TL_PREFIX(c.p, c.n, "- ")) {
            oc = TL_SKIPPED;
            title = tl_str_make(c.p + 2, c.n - 2);
        }
        if (title.n) {
            double ms = __builtin_nan("");
            if (oc == TL_PASSED) {
                title = title_duration(title, &ms);
                st->npass++;
            }
            if (oc == TL_FAILED) {
                st->nfail++;
                if (hook_title(title))
                    oc = TL_ERRORED;
            }
            st->in_run = true;
            tl_event_init(&ev[0], TLE_ANCHOR);
            tl_set_result(&ev[1], full_title(st, title), tl_str_make(NULL, 0), oc);
            if (!__builtin_isnan(ms))
                ev[1].t.duration_ms = ms;
            else if (st->have_last) {
                ev[1].t.duration_ms = (double)(arrival_ns - st->last_ns) / 1e6;
                ev[1].t.since_ns = st->last_ns;
            }
            st->have_last = true;
            st->last_ns = arrival_ns;
            return 2;
        }
    }
    if (level <= st->depth + 1 && level <= MO_DEPTH && !summary && !result_shape(c)) {
        st->pending = level;
        st->pending_n = tl_copy(st->pending_title, sizeof st->pending_title, tl_trim(c)).n;
    }
    return 0;
}

static int mocha_flush(void *state, struct tl_event *ev)
{
    struct mocha_state *st = state;
    return st->section == MO_FAILURES && st->collecting ? emit_message(st, ev) : 0;
}

/* A failure block's message may hold lines at any indentation (a multi-line error message). */
static bool mocha_busy(const void *state)
{
    const struct mocha_state *st = state;
    return st->section == MO_FAILURES && (st->in_title || st->collecting);
}

const struct tl_format tl_format_mocha = {
    .name = "mocha",
    .bit = TL_FMT_MOCHA,
    .state_size = sizeof(struct mocha_state),
    .parse = mocha_parse,
    .release = NULL,
    .flush = mocha_flush,
    /* every line mocha's spec reporter writes while idle is indented; json-stream's are arrays */
    .first_bytes = " ",
    .pairs = (const char *const[]){"[\"", NULL},
    .busy = mocha_busy,
};
