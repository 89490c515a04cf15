/* jest's default and --verbose reporters (testlog/formats.h has the result mapping). jest writes
 * them on stderr, each test file's results at once when the file is done:
 *
 *   PASS __tests__/allpass.test.js       a file (after "PASS " or "FAIL "; " (1.2 s)" when slow)
 *   FAIL __tests__/calc.test.js
 *     ✓ a root-level test                --verbose: every test, indented two spaces a level
 *     Calculator                         under its describe blocks (a block's own tests before
 *       ✓ is slow (123 ms)               its child blocks); ✓ PASS, ✕ FAIL, "○ skipped" SKIP,
 *       ✕ times out (106 ms)             "✎ todo" SKIP; "(N ms)" when it took 1 ms or more
 *       ○ skipped is skipped
 *       ✎ todo is still to do
 *     ● Calculator › times out           a failure's block (both reporters): its title path
 *       thrown: "Exceeded timeout..."    joined by " › ", the message (indented 4), the code
 *       > 18 |   test('times out', ...   frame, the stack ("at ...")
 *           at test (__tests__/calc.test.js:18:3)
 *   Tests:       5 failed, 1 skipped, 1 todo, 8 passed, 15 total   the run's counts (TLE_TOTALS)
 *
 * A test's scope is its file, its id the describe titles and its own joined by " › ", as jest's
 * failure blocks name it. Without --verbose the reporter names only the failed tests (one FAIL
 * result per "●" block, no duration): the passed, skipped and todo tests of a file, and a file
 * that passed, leave no result. A file that could not run ("● Test suite failed to run") is an
 * ERROR whose id is the file (no scope). With --verbose a block is the message of the ✕ test
 * before it.
 *
 * Messages: a block's lines from its message to the code frame ("> 7 | ...", " 8 | ...") or the
 * stack, less their 4 spaces, blank lines left out, as TLE_TEST_MESSAGE.
 *
 * Console output: jest prints what a test logged as blocks — "  console.log" (before the file's
 * result line; under "  ● Console" after it without --verbose), the logged lines indented below
 * it, then the "at" line of the call. Those lines are the test's output, not results of any
 * format: they are taken here (TLE_OUTPUT) before other formats see them, so this format comes
 * early in the registry.
 *
 * Tree lines count only under a file's result line at exactly the level below the innermost
 * describe title (what jest prints there); any other indented line at or above that level is a
 * describe title. Timing: the lines come when the file is done, not when its tests ran: a test
 * ends at its line's arrival and lasts what jest printed (0 when it printed nothing).
 * FORCE_COLOR colours: the core strips the escapes before the parser sees the line.
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

#define JE_DEPTH 32
#define JE_PATH 1024

struct jest_state {
    char file[JE_PATH];
    size_t file_n;         /* 0: no file's results are being printed */
    bool files;            /* a file's result line came since the last "Tests:" line */
    bool verbose;          /* the current file's tests were listed (--verbose) */
    char path[JE_PATH];    /* describe titles, joined by " › " */
    size_t off[JE_DEPTH + 1];
    unsigned depth;
    size_t console;        /* the indentation of a console block's header + 1; 0: none */
    bool in_block, collecting; /* inside a "●" block; gathering its message */
    char id[JE_PATH + 256];
    size_t id_n;
    char msg[TESTLOG_MESSAGE_MAX];
    size_t msg_n;
    char out[JE_PATH + 256];
};

#define SEP " \xe2\x80\xba " /* " › " */

static size_t indent_of(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && p[i] == ' ')
        i++;
    return i;
}

/* "console.<method>" alone on its line. */
static bool console_header(struct tl_str c)
{
    if (!TL_PREFIX(c.p, c.n, "console.") || c.n == 8)
        return false;
    for (size_t i = 8; i < c.n; i++)
        if (c.p[i] < 'a' || c.p[i] > 'z')
            return false;
    return true;
}

/* A code frame line: optional '>', spaces, a line number or nothing, then " |". */
static bool code_frame(struct tl_str c)
{
    size_t i = 0;
    if (i < c.n && c.p[i] == '>')
        i++;
    while (i < c.n && c.p[i] == ' ')
        i++;
    while (i < c.n && c.p[i] >= '0' && c.p[i] <= '9')
        i++;
    while (i < c.n && c.p[i] == ' ')
        i++;
    return i > 0 && i < c.n && c.p[i] == '|' && c.p[i - 1] == ' ';
}

static void output(struct tl_event *ev, struct tl_str line)
{
    tl_event_init(ev, TLE_OUTPUT);
    ev->message = line;
}

static int emit_message(struct jest_state *st, struct tl_event *ev)
{
    bool had = st->collecting && st->msg_n;
    st->collecting = false;
    if (!had)
        return 0;
    tl_event_init(ev, TLE_TEST_MESSAGE);
    memcpy(st->out, st->id, st->id_n);
    ev->id = tl_str_make(st->out, st->id_n);
    ev->scope = tl_str_make(st->file, st->file_n);
    ev->message = tl_str_make(st->msg, st->msg_n);
    return 1;
}

/* A file's result line "PASS path" / "FAIL path" [" (1.234 s)"]: the path, or empty. */
static struct tl_str file_line(const char *line, size_t len)
{
    if (len < 6 || (!TL_PREFIX(line, len, "PASS ") && !TL_PREFIX(line, len, "FAIL ")))
        return tl_str_make(NULL, 0);
    struct tl_str p = tl_str_make(line + 5, len - 5);
    if (p.n > 3 && p.p[p.n - 1] == ')' && p.p[p.n - 2] == 's') {
        const char *o = memchr(p.p, '(', p.n);
        while (o && memchr(o + 1, '(', (size_t)(p.p + p.n - o - 1)))
            o = memchr(o + 1, '(', (size_t)(p.p + p.n - o - 1));
        if (o && o > p.p && o[-1] == ' ')
            p.n = (size_t)(o - 1 - p.p);
    }
    p = tl_trim(p);
    if (!p.n || memchr(p.p, ' ', p.n) || memchr(p.p, '\t', p.n))
        return tl_str_make(NULL, 0);
    return p;
}

static struct tl_str join(struct jest_state *st, struct tl_str title)
{
    size_t n = st->off[st->depth];
    memcpy(st->out, st->path, n);
    if (n && n + sizeof SEP - 1 <= sizeof st->out) {
        memcpy(st->out + n, SEP, sizeof SEP - 1);
        n += sizeof SEP - 1;
    }
    size_t m = title.n < sizeof st->out - n ? title.n : sizeof st->out - n;
    memcpy(st->out + n, title.p, m);
    return tl_str_make(st->out, n + m);
}

/* " (123 ms)" / " (1.5 s)" at the end of a verbose test line: taken off, its value in ms. */
static struct tl_str title_duration(struct tl_str t, double *ret_ms)
{
    *ret_ms = 0;
    if (t.n < 6 || t.p[t.n - 1] != ')')
        return t;
    const char *o = t.p + t.n - 1;
    while (o > t.p && *o != '(')
        o--;
    if (o == t.p || o[-1] != ' ')
        return t;
    struct tl_str in = tl_str_make(o + 1, (size_t)(t.p + t.n - 1 - (o + 1)));
    double scale = 1;
    if (in.n > 3 && !memcmp(in.p + in.n - 3, " ms", 3))
        in.n -= 3;
    else if (in.n > 2 && !memcmp(in.p + in.n - 2, " s", 2)) {
        in.n -= 2;
        scale = 1000;
    } else
        return t;
    double v;
    if (!tl_parse_number(in, &v))
        return t;
    *ret_ms = v * scale;
    return tl_str_make(t.p, (size_t)(o - 1 - t.p));
}

static void set_describe(struct jest_state *st, unsigned level, struct tl_str title)
{
    size_t base = st->off[level - 1];
    if (base && base + sizeof SEP - 1 <= JE_PATH) {
        memcpy(st->path + base, SEP, sizeof SEP - 1);
        base += sizeof SEP - 1;
    }
    size_t m = title.n < JE_PATH - base ? title.n : JE_PATH - base;
    memcpy(st->path + base, title.p, m);
    st->off[level] = base + m;
    st->depth = level;
}

/* A "●" block's header at indentation 2. */
static int block_header(struct jest_state *st, struct tl_str title, struct tl_event *ev)
{
    int n = emit_message(st, ev);
    st->in_block = true;
    if (tl_str_eq(title, "Console")) {
        st->in_block = false;
        output(&ev[n], title);
        return n + 1;
    }
    st->collecting = true;
    st->msg_n = 0;
    struct tl_str file = tl_str_make(st->file, st->file_n);
    if (tl_str_eq(title, "Test suite failed to run")) {
        st->id_n = tl_copy(st->id, sizeof st->id, file).n;
        st->file_n = 0; /* the message's scope: none, as the result's */
        tl_set_result(&ev[n], tl_str_make(st->id, st->id_n), tl_str_make(NULL, 0), TL_ERRORED);
        return n + 1;
    }
    st->id_n = tl_copy(st->id, sizeof st->id, title).n;
    if (st->verbose)
        return n;
    tl_set_result(&ev[n], tl_str_make(st->id, st->id_n), file, TL_FAILED);
    return n + 1;
}

static int jest_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                      struct tl_event *ev)
{
    (void)arrival_ns;
    struct jest_state *st = state;
    size_t ind = indent_of(line, len);
    struct tl_str c = tl_str_make(line + ind, len - ind);
    /* the prefilter offers no other unindented line: none may change the state */
    if (!ind && !TL_PREFIX(line, len, "PA") && !TL_PREFIX(line, len, "FA") &&
        !TL_PREFIX(line, len, "Te"))
        return 0;

    if (st->console) {
        if (ind >= st->console + 1) {
            if (ind == 6 && TL_PREFIX(c.p, c.n, "at "))
                st->console = 0; /* the call's location ends the block */
            output(ev, tl_str_make(line, len));
            return 1;
        }
        st->console = 0;
    }
    if ((ind == 2 || (ind == 4 && st->file_n)) && console_header(c)) {
        int n = emit_message(st, ev);
        st->in_block = false;
        st->console = ind;
        output(&ev[n], tl_str_make(line, len));
        return n + 1;
    }
    if (!ind) {
        struct tl_str f = file_line(line, len);
        if (f.n) {
            int n = emit_message(st, ev);
            st->file_n = tl_copy(st->file, sizeof st->file, f).n;
            st->files = true;
            st->verbose = st->in_block = false;
            st->depth = 0;
            tl_event_init(&ev[n], TLE_ANCHOR);
            return n + 1;
        }
        if (st->files && TL_PREFIX(line, len, "Tests: ")) {
            static const char *const words[] = {"passed", "p", "failed", "f", "skipped", "s", "todo", "s",
                                                "total", "t", NULL};
            int n = emit_message(st, ev);
            st->file_n = 0;
            st->files = st->in_block = false;
            if (tl_totals(&ev[n], "jest", tl_trim(tl_str_make(line + 7, len - 7)), ", ", words))
                n++;
            return n;
        }
        return 0;
    }
    if (!st->file_n && !st->collecting)
        return 0;
    if (ind == 2 && TL_PREFIX(c.p, c.n, "\xe2\x97\x8f ")) /* ● */
        return block_header(st, tl_trim(tl_str_make(c.p + 4, c.n - 4)), ev);
    if (st->in_block) {
        if (!st->collecting)
            return 0;
        if (ind < 4 || (ind >= 6 && TL_PREFIX(c.p, c.n, "at ")) || code_frame(c))
            return emit_message(st, ev);
        struct tl_str text = tl_str_make(line + 4, len - 4);
        while (text.n && text.p[text.n - 1] == ' ')
            text.n--;
        if (text.n)
            tl_append_line(st->msg, sizeof st->msg, &st->msg_n, text);
        return 0;
    }
    if (ind & 1)
        return 0;
    unsigned level = (unsigned)(ind / 2);
    if (level == st->depth + 1) {
        static const struct {
            const char *glyph;
            size_t n;
            enum tl_outcome oc;
        } kinds[] = {
            {"\xe2\x9c\x93 ", 4, TL_PASSED},            /* ✓ */
            {"\xe2\x9c\x95 ", 4, TL_FAILED},            /* ✕ */
            {"\xe2\x97\x8b skipped ", 12, TL_SKIPPED},  /* ○ skipped */
            {"\xe2\x9c\x8e todo ", 9, TL_SKIPPED},      /* ✎ todo */
        };
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            if (c.n <= kinds[i].n || memcmp(c.p, kinds[i].glyph, kinds[i].n) != 0)
                continue;
            struct tl_str title = tl_str_make(c.p + kinds[i].n, c.n - kinds[i].n);
            double ms = 0;
            if (kinds[i].oc != TL_SKIPPED)
                title = title_duration(title, &ms);
            st->verbose = true;
            tl_set_result(ev, join(st, title), tl_str_make(st->file, st->file_n), kinds[i].oc);
            if (kinds[i].oc != TL_SKIPPED && ms >= 0) /* "(-5 ms)" is no duration */
                ev->t.duration_ms = ms;
            return 1;
        }
    }
    if (level <= st->depth + 1 && level <= JE_DEPTH)
        set_describe(st, level, tl_trim(c));
    return 0;
}

static int jest_flush(void *state, struct tl_event *ev)
{
    return emit_message(state, ev);
}

const struct tl_format tl_format_jest = {
    .name = "jest",
    .bit = TL_FMT_JEST,
    .state_size = sizeof(struct jest_state),
    .parse = jest_parse,
    .release = NULL,
    .flush = jest_flush,
    /* a file's "PASS"/"FAIL" line, "Tests:"; everything else is indented */
    .first_bytes = " ",
    .pairs = (const char *const[]){"PA", "FA", "Te", NULL},
    .busy = NULL,
};
