/* pytest -v, with and without pytest-xdist (testlog/formats.h has the result mapping).
 *
 * Statuses: PASSED → PASS, FAILED → FAIL, SKIPPED → SKIP, XFAIL → known FAIL, XPASS → unexpected
 * PASS, ERROR → ERROR; "(reason)" after the status becomes the message; a progress suffix
 * "[ 50%]" or "[ 3/10]" is dropped.
 *
 *   tests/test_a.py::TestC::test_x[p] PASSED   [ 50%]
 *     pytest printed the node id when the test started and the status when it ended, so this is
 *     TLE_TEST_START (timed by the line's first byte) + TLE_TEST_END at TL_AT_LINE_END.
 *   tests/test_a.py::test_y <test output without a newline>
 *     the test printed something (pytest -s): TLE_TEST_START for the node id (the first word),
 *     remembered; a later line ending in a status ("PASSED [ 50%]", "...outputFAILED") ends it.
 *   [gw0] [ 50%] PASSED tests/test_a.py::test_x
 *     xdist reports a result when the worker is done; its start is unknown: TLE_TEST_END only
 *     (the core places it at the line's arrival, with no duration).
 *     xdist -v also prints "tests/a.py::test_x " (with the space) when a worker starts the test:
 *     that opens it, as pytest -s output does.
 * Lines that start with a status ("FAILED tests/x.py::t - assert 0", the short summary) are not
 * results, nor is a node id alone on its line without a trailing space (the warnings summary
 * lists the tests that warned so). A node id is a first word whose file part (before "::") is a
 * .py file, a data file a conftest collects ("tests/x/y.txt::", "t/x.fif::case") or empty
 * (--pyargs: "::TestRot90::test_basic"); it ends at its first space, unless a parameter list "[" is open there: then at the "]" that closes it
 * before a space or the end (parametrised ids may hold spaces: "test_sep[ -2014-01-01]").
 *
 * The run's last rule gives pytest's counts ("==== 2 failed, 5 passed in 0.12s ====", without -v
 * too): TLE_TOTALS; errors count as failed (collection errors too, which are not tests). An
 * error at teardown that amended a pass, skip or xfail seen here is one test, not two as pytest
 * counts it (its JUnit report has one).
 * Failure texts come after every result, in sections ("==== FAILURES ====", "==== ERRORS ====",
 * "==== short test summary info ===="); inside them no line is a result:
 *   ___________ TestC.test_x[p] ___________    a failure's report, named by its head line (the
 *   ____ ERROR at setup of test_y _____        node id without its file, "::" as "."), then its
 *   ...                                        traceback; its last run of "E   " lines is the
 *   E       assert [1, 2] == [1, 3]            exception as pytest's JUnit report has it (the
 *   E         At index 1 diff: 2 != 3          "E" and the first line's indentation dropped)
 *   tests/test_a.py:12: AssertionError         (a "---- Captured ... ----" part is output, not it);
 *                                              the report's last such line is where it failed
 *   FAILED tests/test_a.py::TestC::test_x[p] - assert [1, 2] == [1, 3]
 *   ERROR tests/test_a.py::test_y - RuntimeError: boom
 *     the short summary names the node id: TLE_TEST_MESSAGE for it, stack = where it failed (the
 *     report's last location line, for an annotation's line=). Its reason is one line, cut
 *     at the terminal's width ("... - ValueError: bad valu..."): the report's text is taken when
 *     it begins with the reason (its full form), else the reason. The reports wait for their
 *     summary line in the state (the last PY_REPORTS of them); without a short summary (-rN)
 *     they name no test, and no message comes.
 *   SKIPPED [2] tests/test_a.py:12: the whole reason
 *     the -v line cuts a skip's reason at the terminal's width ("SKIPPED (the whole...)"): the
 *     short summary (-rs, -rA) has it whole, and names the skip's line, not the tests. The last
 *     PY_CUT_SKIPS tests whose reason was cut wait for it: the first N of that file whose cut
 *     reason (less its "...") begins this one get it (TLE_TEST_MESSAGE, which replaces a cut
 *     message, testlog/event.h).
 * A test's teardown is reported on its own: when it raises after the test passed, -v prints the
 * test twice, "t.py::test_a PASSED" then "t.py::test_a ERROR" (xdist: "[gw0] [ 50%] ERROR
 * t.py::test_a" after its PASSED). pytest's JUnit report has one test there, errored: the ERROR
 * amends the earlier result (tl_event.amends) when that was a pass, a skip or an expected failure
 * (one of the last PY_RECENT results); after a FAILED the report keeps both, and so do the
 * markers. Nothing is held back: the PASS is a result as soon as its line ends.
 * The reports and the PASSES section (-rP, -rA) show the tests' captured output and tracebacks
 * again: while in them the parser captures every line (tl_format.captures), so that nothing a
 * test printed ("ok 1 - x", "t.py::x PASSED") becomes a result of this or any other format.
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

/* A failure's report text, waiting for its short summary line. */
#define PY_REPORTS 64
struct pytest_report {
    uint64_t head; /* hash of its head line; 0: free */
    bool error;    /* from the ERRORS section ("ERROR at setup of ...") */
    size_t n;
    char text[TESTLOG_MESSAGE_MAX];
    size_t where_n;
    char where[256]; /* its last "tests/test_a.py:12: AssertionError" line: where it failed */
};

/* A skipped test whose reason the -v line cut ("SKIPPED (needs a database ser...)"), waiting for
 * the short summary's whole reason (the last PY_CUT_SKIPS of them; longer ids are not kept). */
#define PY_CUT_SKIPS 16
struct pytest_cut_skip {
    size_t id_n; /* 0: free */
    char id[512];
    size_t cut_n; /* the reason less its "..." */
    char cut[256];
};

/* A recent result an error at teardown may amend (its id's hash; status NULL: free). */
#define PY_RECENT 16
struct pytest_recent {
    uint64_t id;
    const char *status; /* tl_set_result's static status string */
};

/* PY_OUTPUT: the PASSES section (-rP, -rA), the passed tests' captured output again */
enum pytest_section { PY_RESULTS, PY_REPORTS_SECTION, PY_OUTPUT, PY_SUMMARY };

struct pytest_state {
    bool pending;
    char id[TESTLOG_ID_MAX];
    size_t id_len;
    enum pytest_section section;
    bool errors;     /* the reports section is ERRORS */
    bool in_report;  /* after a report's header */
    bool captured;   /* in its "---- Captured ... ----" part */
    bool in_e;       /* the previous line was an "E" line */
    uint64_t head;   /* the report's head line's hash */
    size_t e_indent; /* the first "E" line's spaces */
    struct pytest_report cur; /* the report being read: its last run of "E" lines */
    struct pytest_report reports[PY_REPORTS];
    unsigned next_report;
    struct pytest_cut_skip cut_skips[PY_CUT_SKIPS];
    unsigned next_cut_skip;
    struct pytest_recent recent[PY_RECENT];
    unsigned next_recent;
    int64_t amended[3]; /* errors at teardown that amended a pass, a skip, an expected failure */
};

/* A skip whose reason is cut: remember it for the summary's whole reason. */
static void note_skip(struct pytest_state *st, const struct tl_event *ev)
{
    struct tl_str m = ev->message;
    if (!tl_str_eq(ev->status, "SKIP") || m.n < 4 || memcmp(m.p + m.n - 3, "...", 3) ||
        ev->id.n > sizeof st->cut_skips[0].id || m.n - 3 > sizeof st->cut_skips[0].cut)
        return;
    struct pytest_cut_skip *c = &st->cut_skips[st->next_cut_skip++ % PY_CUT_SKIPS];
    memcpy(c->id, ev->id.p, ev->id.n);
    c->id_n = ev->id.n;
    memcpy(c->cut, m.p, m.n - 3);
    c->cut_n = m.n - 3;
}

static uint64_t head_hash(const char *p, size_t n);

/* A result (see the top): an ERROR amends the test's recent pass, skip or expected failure; those
 * are remembered for the error at teardown that may follow. */
static void note_result(struct pytest_state *st, struct tl_event *ev, enum tl_outcome oc)
{
    uint64_t h = head_hash(ev->id.p, ev->id.n);
    if (oc == TL_ERRORED) {
        for (unsigned k = 0; k < PY_RECENT; k++) {
            struct pytest_recent *r = &st->recent[k];
            if (r->status && r->id == h) {
                ev->amends = tl_str_make(r->status, strlen(r->status));
                st->amended[!strcmp(r->status, "PASS") ? 0 : !strcmp(r->status, "SKIP") ? 1 : 2]++;
                r->status = NULL;
                break;
            }
        }
    } else if (oc == TL_PASSED || oc == TL_SKIPPED || oc == TL_KNOWN_FAIL)
        st->recent[st->next_recent++ % PY_RECENT] = (struct pytest_recent){h, ev->status.p};
    note_skip(st, ev);
}

/* "SKIPPED [N] tests/test_a.py:12: the whole reason" of the short summary (-rs, -rA): the whole
 * reason for the N tests of that file whose -v line cut it (their cut reason begins it). */
static int skipped_line(struct pytest_state *st, const char *line, size_t len, struct tl_event *ev)
{
    if (!TL_PREFIX(line, len, "SKIPPED ["))
        return 0;
    size_t i = 9, count = 0;
    while (i < len && line[i] >= '0' && line[i] <= '9' && count < 1000000)
        count = count * 10 + (size_t)(line[i++] - '0');
    if (!count || !TL_PREFIX(line + i, len - i, "] "))
        return 0;
    const char *file = line + i + 2, *e = line + len;
    const char *colon = memchr(file, ':', (size_t)(e - file));
    if (!colon || colon == file)
        return 0;
    const char *q = colon + 1;
    while (q < e && *q >= '0' && *q <= '9')
        q++;
    if (q == colon + 1 || !TL_PREFIX(q, (size_t)(e - q), ": "))
        return 0;
    struct tl_str reason = tl_trim(tl_str_make(q + 2, (size_t)(e - q - 2)));
    size_t fn = (size_t)(colon - file);
    int n = 0;
    for (unsigned k = 0; k < PY_CUT_SKIPS && (size_t)n < count && n < TL_MAX_EVENTS; k++) {
        struct pytest_cut_skip *c = &st->cut_skips[(st->next_cut_skip + k) % PY_CUT_SKIPS];
        if (!c->id_n || c->id_n < fn + 2 || memcmp(c->id, file, fn) || memcmp(c->id + fn, "::", 2) ||
            c->cut_n >= reason.n || memcmp(c->cut, reason.p, c->cut_n))
            continue;
        tl_event_init(&ev[n], TLE_TEST_MESSAGE);
        ev[n].id = tl_str_make(c->id, c->id_n);
        ev[n].message = reason;
        c->id_n = 0;
        n++;
    }
    return n;
}

/* A status word at s (followed by the end, a space or '('); returns its length or 0. */
static size_t status_at(const char *s, size_t n, enum tl_outcome *ret)
{
    static const struct {
        const char *w;
        size_t n;
        enum tl_outcome oc;
    } words[] = {
        {"PASSED", 6, TL_PASSED},   {"FAILED", 6, TL_FAILED},
        {"SKIPPED", 7, TL_SKIPPED}, {"XFAIL", 5, TL_KNOWN_FAIL},
        {"XPASS", 5, TL_UNEXPECTED_PASS}, {"ERROR", 5, TL_ERRORED},
    };
    if (!n || (s[0] != 'P' && s[0] != 'F' && s[0] != 'S' && s[0] != 'X' && s[0] != 'E'))
        return 0;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (n >= words[i].n && memcmp(s, words[i].w, words[i].n) == 0 &&
            (n == words[i].n || s[words[i].n] == ' ' || s[words[i].n] == '(')) {
            *ret = words[i].oc;
            return words[i].n;
        }
    return 0;
}

static struct tl_str strip_progress(struct tl_str s)
{
    s = tl_trim(s);
    if (s.n < 3 || s.p[s.n - 1] != ']')
        return s;
    size_t i = s.n - 1;
    while (i > 0 && s.p[i - 1] != '[') {
        char c = s.p[i - 1];
        if (!((c >= '0' && c <= '9') || c == ' ' || c == '%' || c == '/'))
            return s;
        i--;
    }
    if (i == 0)
        return s;
    return tl_trim(tl_str_make(s.p, i - 1));
}

static struct tl_str reason_of(struct tl_str s)
{
    s = strip_progress(s);
    if (s.n >= 2 && s.p[0] == '(' && s.p[s.n - 1] == ')')
        return tl_str_make(s.p + 1, s.n - 2);
    return s;
}

/* The status of a pending test, last on a line: the whole line ("PASSED [ 88%]"), or glued to the
 * test's output, then only with pytest's progress suffix ("...outputFAILED   [100%]"). */
static bool late_status(struct pytest_state *st, const char *line, size_t len, struct tl_event *ev)
{
    struct tl_str all = tl_trim(tl_str_make(line, len));
    struct tl_str s = strip_progress(all);
    bool progress = s.n < all.n;
    enum tl_outcome oc;
    for (size_t k = 5; k <= 7 && k <= s.n; k++) {
        const char *q = s.p + s.n - k;
        if (status_at(q, k, &oc) == k && (progress || k == s.n)) {
            st->pending = false;
            tl_set_result(ev, tl_str_make(st->id, st->id_len), tl_str_make(NULL, 0), oc);
            ev->t.when = TL_AT_LINE_END;
            note_result(st, ev, oc);
            return true;
        }
    }
    return false;
}

/* The first word p[0..n) is a node id: its file part (before the first "::") is a .py file, a
 * data file a conftest collects (a name with an extension: "tests/x/y.txt::", "t/x.fif::"), or
 * empty (--pyargs: "::TestRot90::test_basic"); it holds no ':' itself. */
static bool is_nodeid(const char *p, size_t n)
{
    /* memchr for the colons: memmem's setup costs more than a whole short word */
    for (const char *q = p, *end = p + n; end - q >= 2; q++) {
        q = memchr(q, ':', (size_t)(end - q) - 1);
        if (!q)
            return false;
        if (q[1] != ':')
            return false; /* a ':' in the file part: a time, a URL, "file.c:12:" */
        if (q == p)
            return n > 2 && q[2] != ':';
        if (q - p >= 3 && !memcmp(q - 3, ".py", 3))
            return true;
        for (const char *d = q - 1; d > p && d[-1] != '/'; d--)
            if (*d == '.' && d[-1] != '.')
                return true; /* a file name with an extension */
        return false;
    }
    return false;
}

/* The length of the node id that starts s (its first word is one): see the top. */
static size_t nodeid_len(const char *s, size_t n, size_t first)
{
    const char *open = memchr(s, '[', first);
    if (!open || memchr(open, ']', (size_t)(s + first - open)))
        return first;
    for (size_t i = first; i < n; i++)
        if (s[i] == ']' && (i + 1 == n || s[i + 1] == ' '))
            return i + 1;
    return first;
}

/* ---- failure texts ---- */

static uint64_t head_hash(const char *p, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a; 0 means a free slot */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * UINT64_C(0x100000001b3);
    return h ? h : 1;
}

/* The head line of a node id: without its file, "::" as "." (up to its parameters). */
static uint64_t nodeid_head(struct tl_str id)
{
    const char *c = memmem(id.p, id.n, "::", 2);
    char buf[1024];
    size_t o = 0;
    bool params = false;
    for (size_t i = c ? (size_t)(c - id.p) + 2 : 0; i < id.n && o < sizeof buf; i++) {
        params |= id.p[i] == '[';
        if (!params && id.p[i] == ':' && i + 1 < id.n && id.p[i + 1] == ':') {
            buf[o++] = '.';
            i++;
        } else
            buf[o++] = id.p[i];
    }
    return head_hash(buf, o);
}

/* A section rule "==== TITLE ====": its title, or empty. */
static struct tl_str rule_title(const char *line, size_t len, char c)
{
    if (len < 5 || line[0] != c || line[1] != c || line[len - 1] != c)
        return tl_str_make(NULL, 0);
    size_t a = 0, b = len;
    while (a < b && line[a] == c)
        a++;
    while (b > a && line[b - 1] == c)
        b--;
    return tl_trim(tl_str_make(line + a, b - a));
}

/* The report read so far is complete: it waits for its summary line. */
static void end_report(struct pytest_state *st)
{
    if (st->in_report && st->cur.n) {
        struct pytest_report *r = &st->reports[st->next_report++ % PY_REPORTS];
        memcpy(r->text, st->cur.text, st->cur.n);
        r->n = st->cur.n;
        memcpy(r->where, st->cur.where, st->cur.where_n);
        r->where_n = st->cur.where_n;
        r->head = st->head;
        r->error = st->errors;
    }
    st->in_report = st->captured = st->in_e = false;
    st->cur.n = st->cur.where_n = 0;
}

/* A traceback entry's location line, "tests/test_a.py:12: AssertionError" (or ": in helper"). */
static bool location_line(const char *line, size_t len)
{
    const char *c = memchr(line, ':', len);
    if (!c || c - line < 4 || memcmp(c - 3, ".py", 3) || memchr(line, ' ', (size_t)(c - line)))
        return false;
    size_t i = (size_t)(c - line) + 1, d = i;
    while (i < len && line[i] >= '0' && line[i] <= '9')
        i++;
    return i > d && i < len && line[i] == ':';
}

/* A line of a report section. */
static void report_line(struct pytest_state *st, const char *line, size_t len)
{
    struct tl_str t = rule_title(line, len, '_');
    if (t.n && t.p[0] != '_') {
        /* a header "____ name ____" ("_ _ _ _" separates a traceback's entries) */
        end_report(st);
        static const char *const errs[] = {"ERROR at setup of ", "ERROR at teardown of ",
                                           "ERROR collecting "};
        for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
            if (t.n > strlen(errs[i]) && !memcmp(t.p, errs[i], strlen(errs[i]))) {
                t = tl_str_make(t.p + strlen(errs[i]), t.n - strlen(errs[i]));
                break;
            }
        st->head = head_hash(t.p, t.n);
        st->in_report = true;
        return;
    }
    if (!st->in_report || st->captured)
        return;
    if (len >= 2 && line[0] == '-' && line[1] == '-' && rule_title(line, len, '-').n) {
        st->captured = true; /* "---- Captured stdout call ----" */
        return;
    }
    if (!len || line[0] != 'E' || (len > 1 && line[1] != ' ')) {
        st->in_e = false;
        if (location_line(line, len) && len < sizeof st->cur.where) {
            memcpy(st->cur.where, line, len);
            st->cur.where_n = len;
        }
        return;
    }
    size_t sp = 1;
    while (sp < len && line[sp] == ' ')
        sp++;
    if (!st->in_e) { /* a new run: the exception is the last one */
        st->cur.n = 0;
        st->e_indent = sp - 1;
    }
    st->in_e = true;
    size_t cut = 1 + (sp - 1 < st->e_indent ? sp - 1 : st->e_indent);
    tl_append_line(st->cur.text, sizeof st->cur.text, &st->cur.n, tl_str_make(line + cut, len - cut));
}

/* "FAILED <node id>[ - reason]" or "ERROR ..." of the short summary. */
static int summary_line(struct pytest_state *st, const char *line, size_t len, struct tl_event *ev)
{
    bool error = TL_PREFIX(line, len, "ERROR ");
    size_t skip = error ? 6 : TL_PREFIX(line, len, "FAILED ") ? 7 : 0;
    if (!skip)
        return 0;
    const char *p = line + skip;
    size_t n = len - skip, first = 0;
    while (first < n && p[first] != ' ')
        first++;
    if (!is_nodeid(p, first))
        return 0; /* "ERROR tests/x.py - ...": a collection error, no test */
    struct tl_str id = tl_str_make(p, nodeid_len(p, n, first));
    struct tl_str reason = tl_str_make(NULL, 0);
    if (TL_PREFIX(p + id.n, n - id.n, " - "))
        reason = tl_trim(tl_str_make(p + id.n + 3, n - id.n - 3));
    struct tl_str text = tl_str_make(NULL, 0), where = text;
    uint64_t h = nodeid_head(id);
    for (unsigned k = 0; k < PY_REPORTS; k++) { /* the oldest first: in the order they failed */
        struct pytest_report *r = &st->reports[(st->next_report + k) % PY_REPORTS];
        if (r->head == h && r->error == error) {
            r->head = 0;
            text = tl_str_make(r->text, r->n);
            where = tl_str_make(r->where, r->where_n);
            break;
        }
    }
    struct tl_str cut = reason;
    if (cut.n >= 3 && !memcmp(cut.p + cut.n - 3, "...", 3))
        cut.n -= 3;
    tl_event_init(ev, TLE_TEST_MESSAGE);
    ev->id = id;
    ev->status = error ? tl_str_make("ERROR", 5) : tl_str_make("FAIL", 4);
    ev->stack = where;
    ev->message = text.n && (!cut.n || (text.n >= cut.n && !memcmp(text.p, cut.p, cut.n))) ? text
                  : reason.n ? reason : text;
    return ev->message.n ? 1 : 0;
}

/* The run's last rule, "==== 2 failed, 5 passed, 1 skipped in 0.12s ====" (a duration in
 * parentheses may follow): its counts as TLE_TOTALS. */
static bool totals_rule(struct pytest_state *st, struct tl_str t, struct tl_event *ev)
{
    static const char *const words[] = {"passed", "p", "failed", "f", "skipped", "s", "xfailed", "o", "xpassed", "o",
                                        "error", "f", "errors", "f", "deselected", "-", "warning", "-",
                                        "warnings", "-", "rerun", "-", NULL};
    if (!t.n || t.p[0] < '0' || t.p[0] > '9')
        return false;
    const char *in = NULL;
    for (const char *p = t.p; (p = memmem(p, (size_t)(t.p + t.n - p), " in ", 4)) != NULL; p += 4)
        in = p;
    if (!in || in + 4 >= t.p + t.n || in[4] < '0' || in[4] > '9')
        return false;
    if (!tl_totals(ev, "pytest", tl_str_make(t.p, (size_t)(in - t.p)), ", ", words))
        return false;
    ev->message = t;
    /* a test that passed (skipped, xfailed) and then errored at teardown: pytest counts the two
     * reports, the results one test (its ERROR amended the other, as pytest's JUnit report
     * has it) */
    struct tl_counts *c = &ev->counts;
    int64_t amended = st->amended[0] + st->amended[1] + st->amended[2];
    if (c->total >= amended)
        c->total -= amended;
    if (c->passed >= st->amended[0])
        c->passed -= st->amended[0];
    if (c->skipped >= st->amended[1])
        c->skipped -= st->amended[1];
    memset(st->amended, 0, sizeof st->amended); /* the session is over: another may follow */
    return true;
}

/* The sections after the results; false: the line is not one of theirs. */
static bool section_line(struct pytest_state *st, const char *line, size_t len, struct tl_event *ev,
                         int *ret)
{
    *ret = 0;
    struct tl_str t = rule_title(line, len, '=');
    if (t.n) {
        end_report(st);
        st->section = PY_RESULTS;
        if (totals_rule(st, t, ev)) {
            *ret = 1;
            return true;
        }
        if (tl_str_eq(t, "FAILURES") || tl_str_eq(t, "ERRORS")) {
            st->section = PY_REPORTS_SECTION;
            st->errors = t.p[0] == 'E';
        } else if (tl_str_eq(t, "PASSES"))
            st->section = PY_OUTPUT;
        else if (tl_str_eq(t, "short test summary info"))
            st->section = PY_SUMMARY;
        return st->section != PY_RESULTS || st->pending == false;
    }
    if (st->section == PY_REPORTS_SECTION)
        report_line(st, line, len);
    else if (st->section == PY_SUMMARY && !(*ret = skipped_line(st, line, len, ev)))
        *ret = summary_line(st, line, len, ev);
    return st->section != PY_RESULTS;
}

static int pytest_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                        struct tl_event *ev)
{
    struct pytest_state *st = state;
    enum tl_outcome oc;
    size_t w;
    int sec;
    if ((st->section != PY_RESULTS || (len >= 2 && line[0] == '=' && line[1] == '=')) &&
        section_line(st, line, len, ev, &sec))
        return sec;
    if (len < 8)
        goto not_nodeid;

    if (line[0] == '[' && line[1] == 'g' && line[2] == 'w') {
        size_t i = 3;
        while (i < len && line[i] >= '0' && line[i] <= '9')
            i++;
        if (i == 3 || i + 1 >= len || line[i] != ']' || line[i + 1] != ' ')
            return 0;
        i += 2;
        if (i < len && line[i] == '[') {
            const char *e = memchr(line + i, ']', len - i);
            if (!e || e + 1 >= line + len || e[1] != ' ')
                return 0;
            i = (size_t)(e - line) + 2;
        }
        if (!(w = status_at(line + i, len - i, &oc)) || i + w >= len)
            return 0;
        struct tl_str rest = tl_trim(tl_str_make(line + i + w, len - i - w));
        size_t sp = 0;
        while (sp < rest.n && rest.p[sp] != ' ')
            sp++;
        if (!is_nodeid(rest.p, sp))
            return 0;
        sp = nodeid_len(rest.p, rest.n, sp);
        tl_set_result(ev, tl_str_make(rest.p, sp), tl_str_make(NULL, 0), oc);
        if (sp < rest.n) {
            struct tl_str r = tl_trim(tl_str_make(rest.p + sp, rest.n - sp));
            if (TL_PREFIX(r.p, r.n, "- "))
                r = tl_str_make(r.p + 2, r.n - 2);
            ev->message = reason_of(r);
        }
        note_result(st, ev, oc);
        return 1;
    }

    /* Bound the search (at the longest id kept) so a huge line costs no more than a long id. */
    size_t scan = len < TESTLOG_ID_MAX ? len : TESTLOG_ID_MAX;
    const char *sp = memchr(line, ' ', scan);
    size_t first = sp ? (size_t)(sp - line) : scan;
    if ((!sp && len > scan) || !is_nodeid(line, first))
        goto not_nodeid;
    /* Find " STATUS" after the node id's first word (parameters may hold spaces). */
    for (size_t i = first; i < len; i++) {
        if (line[i] != ' ' || i + 1 >= len || !(w = status_at(line + i + 1, len - i - 1, &oc)))
            continue;
        struct tl_str id = tl_trim(tl_str_make(line, i));
        tl_event_init(&ev[0], TLE_TEST_START);
        ev[0].id = id;
        tl_set_result(&ev[1], id, tl_str_make(NULL, 0), oc);
        ev[1].t.when = TL_AT_LINE_END;
        ev[1].message = reason_of(tl_str_make(line + i + 1 + w, len - i - 1 - w));
        note_result(st, &ev[1], oc);
        st->pending = false;
        return 2;
    }
    if (first == len)
        goto not_nodeid; /* a node id alone: not a start (see the top) */
    first = nodeid_len(line, len, first);
    st->id_len = tl_copy(st->id, sizeof st->id, tl_str_make(line, first)).n;
    st->pending = true;
    tl_event_init(&ev[0], TLE_TEST_START);
    ev[0].id = tl_str_make(st->id, st->id_len);
    /* The test printed without a newline and the status followed on the same line. */
    if (late_status(st, line + first, len - first, &ev[1]))
        return 2;
    return 1;

not_nodeid:
    return st->pending ? late_status(st, line, len, ev) : 0;
}

static bool pytest_busy(const void *state)
{
    const struct pytest_state *st = state;
    return st->pending || st->section != PY_RESULTS;
}

/* The reports and the PASSES section show the tests' output and tracebacks again: no line of
 * theirs is a result, of pytest or of any other format (a test that printed "ok 1 - x"). */
static bool pytest_captures(const void *state)
{
    const struct pytest_state *st = state;
    return st->section == PY_REPORTS_SECTION || st->section == PY_OUTPUT;
}

const struct tl_format tl_format_pytest = {
    .name = "pytest",
    .bit = TL_FMT_PYTEST,
    .state_size = sizeof(struct pytest_state),
    .parse = pytest_parse,
    .release = NULL,
    /* "[gw0] ..." (xdist), a section's rule "====", a --pyargs id "::Test...", or a first word
     * holding a file name ("x.py::", "data.txt::") */
    .pairs = (const char *const[]){"[g", "==", "::", NULL},
    .dotted_word = true,
    .busy = pytest_busy,
    .captures = pytest_captures,
};
