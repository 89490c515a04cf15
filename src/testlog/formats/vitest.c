/* vitest's default and verbose reporters as they print off a terminal (testlog/formats.h has the
 * result mapping):
 *
 *    ✓ test/a.test.js > Outer > adds 1ms          --reporter=verbose: every test, on one line
 *    × test/a.test.js > Outer > fails 79ms        with its file and describe titles (" > "):
 *      → expected 2 to be 3 // Object.is equality ✓ PASS, × FAIL, ↓ SKIP (skipped and todo);
 *    ↓ test/a.test.js > Outer > is skipped         "→" the error's message, its other lines
 *                                                  unindented
 *    ❯ test/a.test.js (10 tests | 4 failed) 394ms  the default reporter: a file that failed,
 *      ✓ Outer > adds 18ms                         then every test of it (the same glyphs, the
 *      × Outer > fails 76ms                        file left out)
 *        → expected 2 to be 3 // Object.is equality
 *    ✓ test/b.test.js (2 tests) 24ms               a file that passed: its tests are not named
 *   stdout | test/a.test.js > Outer > prints       what a test printed, up to the next result
 *   ...                                            or file line: its output, not results
 *
 * A test's scope is its file, its id its describe titles and its own joined by " > ", as vitest
 * prints them. Without --reporter=verbose the tests of a file that passed leave no result (the
 * reporter does not name them). The message after "→" comes as TLE_TEST_MESSAGE when the next
 * result, file or summary line arrives (or the output ends). The lines come as the tests end: a
 * test ends at its line's arrival and lasts what vitest printed. Colours (vitest colours even off
 * a terminal when FORCE_COLOR is set) are stripped by the core first.
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

#define VI_PATH 1024

struct vitest_state {
    char file[VI_PATH];
    size_t file_n;      /* the default reporter's current failed file (0: none) */
    bool output;        /* inside a "stdout |" / "stderr |" block */
    bool collecting;    /* after a "→" line: its continuation lines */
    char id[VI_PATH], scope[VI_PATH];
    size_t id_n, scope_n;
    char msg[TESTLOG_MESSAGE_MAX];
    size_t msg_n;
    char out_id[VI_PATH], out_scope[VI_PATH];
};

#define SEP " > "

static int emit_message(struct vitest_state *st, struct tl_event *ev)
{
    bool had = st->collecting && st->msg_n && st->id_n;
    st->collecting = false;
    if (!had)
        return 0;
    tl_event_init(ev, TLE_TEST_MESSAGE);
    memcpy(st->out_id, st->id, st->id_n);
    memcpy(st->out_scope, st->scope, st->scope_n);
    ev->id = tl_str_make(st->out_id, st->id_n);
    ev->scope = tl_str_make(st->out_scope, st->scope_n);
    ev->message = tl_str_make(st->msg, st->msg_n);
    return 1;
}

/* A trailing " 18ms" / " 1.25s": taken off, its value in ms (NAN when none). */
static struct tl_str take_duration(struct tl_str t, double *ret_ms)
{
    *ret_ms = __builtin_nan("");
    const char *sp = t.n ? memrchr(t.p, ' ', t.n) : NULL;
    if (!sp)
        return t;
    struct tl_str d = tl_str_make(sp + 1, (size_t)(t.p + t.n - sp - 1));
    double scale = 1, v;
    if (d.n > 2 && d.p[d.n - 2] == 'm' && d.p[d.n - 1] == 's')
        d.n -= 2;
    else if (d.n > 1 && d.p[d.n - 1] == 's') {
        d.n -= 1;
        scale = 1000;
    } else
        return t;
    if (!tl_parse_number(d, &v))
        return t;
    *ret_ms = v * scale;
    return tl_str_make(t.p, (size_t)(sp - t.p));
}

/* The glyph a result line begins with (after its indentation); its length, 0 none. */
static size_t glyph(struct tl_str c, enum tl_outcome *ret)
{
    if (TL_PREFIX(c.p, c.n, "\xe2\x9c\x93 ")) { /* ✓ */
        *ret = TL_PASSED;
        return 4;
    }
    if (TL_PREFIX(c.p, c.n, "\xc3\x97 ")) { /* × */
        *ret = TL_FAILED;
        return 3;
    }
    if (TL_PREFIX(c.p, c.n, "\xe2\x86\x93 ")) { /* ↓ */
        *ret = TL_SKIPPED;
        return 4;
    }
    return 0;
}

/* A file's line "file (N tests[ | ...]) 24ms": the file, or empty. */
static struct tl_str file_of(struct tl_str c)
{
    const char *o = memmem(c.p, c.n, " (", 2);
    if (!o || c.p + c.n - o < 9 || !memmem(o, (size_t)(c.p + c.n - o), " test", 5) ||
        memchr(c.p, ' ', (size_t)(o - c.p)))
        return tl_str_make(NULL, 0);
    return tl_str_make(c.p, (size_t)(o - c.p));
}

static int result(struct vitest_state *st, struct tl_str file, struct tl_str rest,
                  enum tl_outcome oc, struct tl_event *ev)
{
    int n = emit_message(st, ev);
    double ms = __builtin_nan("");
    if (oc != TL_SKIPPED)
        rest = take_duration(rest, &ms);
    rest = tl_trim(rest);
    if (!rest.n || !file.n)
        return n;
    st->id_n = tl_copy(st->id, sizeof st->id, rest).n;
    st->scope_n = tl_copy(st->scope, sizeof st->scope, file).n;
    tl_set_result(&ev[n], tl_str_make(st->id, st->id_n), tl_str_make(st->scope, st->scope_n), oc);
    if (!__builtin_isnan(ms))
        ev[n].t.duration_ms = ms;
    st->msg_n = 0;
    return n + 1;
}

static int vitest_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                        struct tl_event *ev)
{
    (void)arrival_ns;
    struct vitest_state *st = state;
    size_t ind = 0;
    while (ind < len && line[ind] == ' ')
        ind++;
    struct tl_str c = tl_str_make(line + ind, len - ind);
    enum tl_outcome oc;
    size_t g;

    if (!ind && (TL_PREFIX(line, len, "stdout | ") || TL_PREFIX(line, len, "stderr | "))) {
        int n = emit_message(st, ev);
        st->output = true;
        tl_event_init(&ev[n], TLE_OUTPUT);
        ev[n].message = tl_str_make(line, len);
        return n + 1;
    }
    if (ind == 1 && (g = glyph(c, &oc)) != 0) {
        /* verbose "file > titles", or the default reporter's file line */
        struct tl_str rest = tl_str_make(c.p + g, c.n - g);
        struct tl_str file = file_of(rest);
        st->output = false;
        if (file.n) {
            int n = emit_message(st, ev);
            st->file_n = 0; /* a file that passed: its tests are not listed */
            return n;
        }
        const char *sep = memmem(rest.p, rest.n, SEP, sizeof SEP - 1);
        if (!sep)
            return 0;
        file = tl_str_make(rest.p, (size_t)(sep - rest.p));
        if (memchr(file.p, ' ', file.n))
            return 0;
        rest = tl_str_make(sep + 3, (size_t)(rest.p + rest.n - sep - 3));
        return result(st, file, rest, oc, ev);
    }
    if (ind == 1 && TL_PREFIX(c.p, c.n, "\xe2\x9d\xaf ")) { /* ❯ a file that failed */
        struct tl_str file = file_of(tl_str_make(c.p + 4, c.n - 4));
        if (!file.n)
            return 0;
        int n = emit_message(st, ev);
        st->output = false;
        st->file_n = tl_copy(st->file, sizeof st->file, file).n;
        tl_event_init(&ev[n], TLE_ANCHOR);
        return n + 1;
    }
    if (ind == 3 && st->file_n && (g = glyph(c, &oc)) != 0) {
        st->output = false;
        return result(st, tl_str_make(st->file, st->file_n), tl_str_make(c.p + g, c.n - g), oc,
                      ev);
    }
    if ((ind == 3 || ind == 5) && st->id_n && !st->output &&
        TL_PREFIX(c.p, c.n, "\xe2\x86\x92 ")) { /* → */
        st->collecting = true;
        st->msg_n = 0;
        tl_append_line(st->msg, sizeof st->msg, &st->msg_n, tl_str_make(c.p + 4, c.n - 4));
        tl_event_init(ev, TLE_ANCHOR);
        return 1;
    }
    if (st->output) {
        tl_event_init(ev, TLE_OUTPUT);
        ev->message = tl_str_make(line, len);
        return 1;
    }
    if (st->collecting) {
        if (TL_PREFIX(c.p, c.n, "Test Files ") || TL_PREFIX(c.p, c.n, "\xe2\x8e\xaf")) {
            st->file_n = 0;
            return emit_message(st, ev);
        }
        tl_append_line(st->msg, sizeof st->msg, &st->msg_n, tl_str_make(line, len));
        tl_event_init(ev, TLE_ANCHOR);
        return 1;
    }
    if (ind == 1 && TL_PREFIX(c.p, c.n, "Test Files "))
        st->file_n = 0;
    /* "      Tests  5 failed | 8 passed | 1 skipped | 1 todo (15)": the run's counts */
    if (TL_PREFIX(c.p, c.n, "Tests  ") && c.n > 9 && c.p[c.n - 1] == ')') {
        static const char *const words[] = {"passed", "p", "failed", "f", "skipped", "s", "todo", "s", NULL};
        struct tl_str list = tl_trim(tl_str_make(c.p + 7, c.n - 7));
        const char *open = memrchr(list.p, '(', list.n);
        if (!open)
            return 0;
        struct tl_str counts = tl_trim(tl_str_make(list.p, (size_t)(open - list.p)));
        int64_t total = 0;
        const char *d = open + 1, *end = list.p + list.n - 1;
        for (; d < end && *d >= '0' && *d <= '9' && total <= TL_COUNT_MAX; d++)
            total = total * 10 + (*d - '0');
        if (d == open + 1 || d != end || total > TL_COUNT_MAX || !tl_totals(ev, "vitest", counts, " | ", words))
            return 0;
        ev->message = list;
        ev->counts.total = total;
        return 1;
    }
    return 0;
}

static int vitest_flush(void *state, struct tl_event *ev)
{
    return emit_message(state, ev);
}

/* A test's output and an error's continuation lines may start with anything. */
static bool vitest_busy(const void *state)
{
    const struct vitest_state *st = state;
    return st->output || st->collecting;
}

const struct tl_format tl_format_vitest = {
    .name = "vitest",
    .bit = TL_FMT_VITEST,
    .state_size = sizeof(struct vitest_state),
    .parse = vitest_parse,
    .release = NULL,
    .flush = vitest_flush,
    .first_bytes = " ",
    .pairs = (const char *const[]){"st", NULL},
    .busy = vitest_busy,
};
