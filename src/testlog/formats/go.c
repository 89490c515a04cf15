/* go test: the -json stream of test2json and plain `go test -v` text, one format "go"
 * (testlog/formats.h has the result mapping).
 *
 * JSON ({"Time":..,"Action":..,"Package":..,"Test":..,"Elapsed":..,"Output":..}):
 *   start (no Test)           → TLE_SUITE_START id = Package
 *   run                       → TLE_TEST_START id = Test, scope = Package
 *   pass/fail/skip with Test  → TLE_TEST_END, duration_ms = Elapsed·1000
 *   pass/fail/skip no Test    → TLE_SUITE_END id = Package, status PASS/FAIL/SKIP, duration
 *   output, bench, build-output → TLE_OUTPUT (process = Package or ImportPath, id = Test,
 *                               message = Output without its newline)
 *   build-fail                → TLE_LOG level ERROR "build failed: <ImportPath>"
 *   cont with Test            → TLE_TEST_RESUME (a parallel test runs from here)
 *   pause, attr               → nothing (returns 0)
 * t.wall_ms = Time (RFC 3339) on every event. Parallel packages interleave in one stream: tests are
 * keyed by Test + Package.
 *
 * Text (-v): "=== RUN   TestX" opens TestX; "=== CONT  TestX" resumes it after a pause
 * (t.Parallel); "--- PASS|FAIL|SKIP: TestX/sub (0.01s)" (indented 4 spaces per subtest level)
 * closes it with that duration (a "--- FAIL:" indented deeper than its name has levels, or not
 * by a multiple of 4, is text the test logged); "ok  \tpkg\t0.01s" and "FAIL\tpkg\t..."
 * end package pkg (TLE_SUITE_END with duration; no start was printed for it, and `go test` prints a
 * package's -v output in one piece, so tests carry no scope here).
 *
 * A failed or skipped test's message is its failure text: the "x_test.go:12: text" lines of its
 * output and the lines that continue them (indented deeper: a message of several lines), their
 * locations kept (-json: its output events; -v: the lines after its last
 * "=== RUN"/"=== CONT", "=== PAUSE" ending them), which go -v prints before its result. Without
 * -v, go prints a failed test's text after its result, indented one level deeper than it; a
 * parent's own lines may come after its subtests' reports:
 *   --- FAIL: TestX (0.00s)
 *       --- FAIL: TestX/sub (0.00s)
 *           x_test.go:12: the subtest's text
 *       x_test.go:20: the parent's text
 * Those are TLE_TEST_MESSAGEs, sent when the test's report ends (a line less indented, or not
 * output), for tests at the first GO_LATE_LEVELS levels.
 *
 * Every result may come late (t.late): go prints a test's subtests' results with its own,
 * after the last subtest ended, and test2json's events for them carry that late time too.
 */
#include "testlog/formats.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "testlog/testlog.h"

/* A failure text being gathered (see the top). */
struct go_text {
    char text[TESTLOG_MESSAGE_MAX];
    size_t n;
    size_t indent; /* of its last located line */
    bool cont;     /* the next line more indented than that continues it */
};

/* A test's failure text, kept until its result (go -v and -json print it before "--- FAIL"), for
 * the last GO_MSGS tests that printed one. */
#define GO_MSGS 16
struct go_msg {
    char key[512]; /* package U+001F test */
    size_t key_n;
    struct go_text t;
};

/* Without -v: the reports open at each level, whose text follows them (see the top). At most
 * three, so that closing them and the line's own event fit in TL_MAX_EVENTS. */
#define GO_LATE_LEVELS 3
struct go_late {
    char name[512];
    size_t name_n; /* 0: no report open at this level */
    struct go_text t;
};

struct go_state {
    char pkg[512], test[TESTLOG_ID_MAX], msg[2048];
    char cur[TESTLOG_ID_MAX]; /* -v text: the test that ran last (its output lines are its own) */
    size_t cur_n;
    struct go_msg msgs[GO_MSGS];
    unsigned next_msg;
    struct go_late late[GO_LATE_LEVELS];
    struct go_late sent[GO_LATE_LEVELS]; /* the closed reports' events point here: a line may
                                            close a level and open it again */
    /* The first failing subtest's text, for its parent (see failure_text): the parent's key
     * (package U+001F test), "sub: text", and the parent's message built from it. */
    char cause_key[512];
    size_t cause_key_n;
    char cause[1024], cause_msg[1024];
    size_t cause_n;
};

static size_t msg_key(char *dst, size_t cap, struct tl_str pkg, struct tl_str test)
{
    size_t n = tl_copy(dst, cap, pkg).n;
    if (n < cap)
        dst[n++] = '\x1f';
    return n + tl_copy(dst + n, cap - n, test).n;
}

/* The message of a failed test: its own text, or, when it printed none (a parent test that failed
 * only through a subtest, whose result go prints after the subtests' in -v and -json), its first
 * failing subtest's, as "TestX/sub: text". A subtest's text is kept for its parent meanwhile. */
static struct tl_str failure_text(struct go_state *st, struct tl_str pkg, struct tl_str name, struct tl_str msg)
{
    char key[512];
    size_t kn = msg_key(key, sizeof key, pkg, name);
    if (!msg.n && st->cause_n && st->cause_key_n == kn && !memcmp(st->cause_key, key, kn)) {
        memcpy(st->cause_msg, st->cause, st->cause_n);
        msg = tl_str_make(st->cause_msg, st->cause_n);
        st->cause_n = 0;
    }
    const char *slash = name.n ? memrchr(name.p, '/', name.n) : NULL;
    if (!slash || !msg.n)
        return msg;
    char pkey[512];
    size_t pn = msg_key(pkey, sizeof pkey, pkg, tl_str_make(name.p, (size_t)(slash - name.p)));
    if (st->cause_n && st->cause_key_n == pn && !memcmp(st->cause_key, pkey, pn))
        return msg; /* the first failing subtest is the cause */
    memcpy(st->cause_key, pkey, pn);
    st->cause_key_n = pn;
    int n = snprintf(st->cause, sizeof st->cause, "%.*s: %.*s", (int)(name.n < 256 ? name.n : 256), name.p,
                     (int)msg.n, msg.p);
    st->cause_n = n < 0 ? 0 : (size_t)n < sizeof st->cause ? (size_t)n : sizeof st->cause - 1;
    return msg;
}

/* "    x_test.go:12: text": the text after the location, or empty when the line is not one. The
 * location stays in the message: it is where the failure is (an annotation's file= and line=). */
static struct tl_str located(struct tl_str s)
{
    s = tl_trim(s);
    const char *go = memmem(s.p, s.n < 512 ? s.n : 512, ".go:", 4);
    if (!go || memchr(s.p, ' ', (size_t)(go - s.p)))
        return tl_str_make(NULL, 0);
    size_t i = (size_t)(go - s.p) + 4, d = i;
    while (i < s.n && s.p[i] >= '0' && s.p[i] <= '9')
        i++;
    if (i == d || i + 1 >= s.n || s.p[i] != ':' || s.p[i + 1] != ' ')
        return tl_str_make(NULL, 0);
    return tl_trim(tl_str_make(s.p + i + 2, s.n - i - 2));
}

static size_t indent_of(struct tl_str s)
{
    size_t i = 0;
    while (i < s.n && s.p[i] == ' ')
        i++;
    return i;
}

/* A line of a test's output into its text t: a located line, or one continuing the last. */
static void add_text(struct go_text *t, struct tl_str out)
{
    struct tl_str loc = located(out), line = tl_trim(out);
    size_t ind = indent_of(out);
    if (loc.n) {
        tl_append_line(t->text, sizeof t->text, &t->n, line);
        t->indent = ind;
        t->cont = true;
    } else if (t->cont && ind > t->indent && line.n && !TL_PREFIX(line.p, line.n, "--- ") &&
               !TL_PREFIX(line.p, line.n, "=== ")) /* -json: a result is output too */
        tl_append_line(t->text, sizeof t->text, &t->n, line);
    else
        t->cont = false;
}

static void note_msg(struct go_state *st, struct tl_str pkg, struct tl_str test, struct tl_str out)
{
    if (!test.n)
        return;
    char key[512];
    size_t kn = msg_key(key, sizeof key, pkg, test);
    for (unsigned i = 0; i < GO_MSGS; i++)
        if (st->msgs[i].key_n == kn && !memcmp(st->msgs[i].key, key, kn)) {
            add_text(&st->msgs[i].t, out);
            return;
        }
    if (!located(out).n)
        return;
    struct go_msg *m = &st->msgs[st->next_msg++ % GO_MSGS];
    memcpy(m->key, key, kn);
    m->key_n = kn;
    m->t.n = 0;
    add_text(&m->t, out);
}

/* The failure text noted for the test, forgotten now (the text stays valid until the next call). */
static struct tl_str take_msg(struct go_state *st, struct tl_str pkg, struct tl_str test)
{
    char key[512];
    size_t kn = msg_key(key, sizeof key, pkg, test);
    for (unsigned i = 0; i < GO_MSGS; i++) {
        struct go_msg *m = &st->msgs[i];
        if (m->key_n == kn && !memcmp(m->key, key, kn)) {
            m->key_n = 0;
            return tl_str_make(m->t.text, m->t.n);
        }
    }
    return tl_str_make(NULL, 0);
}

/* Close the reports open at level from and deeper (see the top): an event for each that has a
 * text, deepest first; returns how many. */
static int close_late(struct go_state *st, size_t from, struct tl_event *ev)
{
    int n = 0;
    for (size_t d = GO_LATE_LEVELS; d-- > from;) {
        struct go_late *l = &st->late[d], *out = &st->sent[d];
        if (l->name_n && l->t.n) {
            memcpy(out->name, l->name, l->name_n);
            memcpy(out->t.text, l->t.text, l->t.n);
            tl_event_init(&ev[n], TLE_TEST_MESSAGE);
            ev[n].id = tl_str_make(out->name, l->name_n);
            ev[n].message = tl_str_make(out->t.text, l->t.n);
            n++;
        }
        l->name_n = 0;
    }
    return n;
}

/* A line of output without -v: the text of the report open one level up, if any. */
static bool late_text(struct go_state *st, struct tl_str out)
{
    size_t ind = indent_of(out);
    for (size_t d = GO_LATE_LEVELS; d-- > 0;) {
        struct go_late *l = &st->late[d];
        if (l->name_n && (ind == 4 * (d + 1) || (l->t.cont && ind > l->t.indent))) {
            add_text(&l->t, out);
            return true;
        }
    }
    return false;
}

static int parse_json(struct go_state *st, const char *line, size_t len, struct tl_event *ev)
{
    if (!memmem(line, len, "\"Action\"", 8))
        return 0;
    cJSON *o = cJSON_ParseWithLength(line, len);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return 0;
    }
    int n = 0;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "Action");
    const char *act = cJSON_IsString(a) ? a->valuestring : NULL;
    if (!act)
        goto out;
    struct tl_str pkg = tl_json_copy(o, "Package", st->pkg, sizeof st->pkg);
    struct tl_str test = tl_json_copy(o, "Test", st->test, sizeof st->test);
    double time_ms = __builtin_nan(""), v;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "Time");
    if (cJSON_IsString(t) && tl_parse_rfc3339(tl_str_make(t->valuestring, strlen(t->valuestring)), &v))
        time_ms = v;
    const cJSON *el = cJSON_GetObjectItemCaseSensitive(o, "Elapsed");
    double dur = cJSON_IsNumber(el) && el->valuedouble >= 0 ? el->valuedouble * 1000.0
                                                            : __builtin_nan("");

    if ((!strcmp(act, "run") || !strcmp(act, "cont")) && test.n) {
        tl_event_init(ev, act[0] == 'r' ? TLE_TEST_START : TLE_TEST_RESUME);
        ev->id = test;
        ev->scope = pkg;
        n = 1;
    } else if (!strcmp(act, "start") && !test.n) {
        tl_event_init(ev, TLE_SUITE_START);
        ev->id = pkg;
        n = 1;
    } else if (!strcmp(act, "pass") || !strcmp(act, "fail") || !strcmp(act, "skip")) {
        enum tl_outcome oc = act[0] == 'p' ? TL_PASSED : act[0] == 'f' ? TL_FAILED : TL_SKIPPED;
        if (test.n) {
            tl_set_result(ev, test, pkg, oc);
            ev->t.late = true;
            struct tl_str m = take_msg(st, pkg, test);
            if (oc == TL_FAILED)
                m = failure_text(st, pkg, test, m);
            if (oc != TL_PASSED)
                ev->message = m;
        } else {
            tl_event_init(ev, TLE_SUITE_END);
            ev->id = pkg;
            ev->status = oc == TL_PASSED ? TL_LIT("PASS") : oc == TL_FAILED ? TL_LIT("FAIL")
                                                                             : TL_LIT("SKIP");
        }
        ev->t.duration_ms = dur;
        n = 1;
    } else if (!strcmp(act, "output") || !strcmp(act, "bench") || !strcmp(act, "build-output")) {
        tl_event_init(ev, TLE_OUTPUT);
        struct tl_str msg = tl_json_copy(o, "Output", st->msg, sizeof st->msg);
        if (msg.n && msg.p[msg.n - 1] == '\n')
            msg.n--;
        if (act[0] == 'o')
            note_msg(st, pkg, test, msg);
        ev->message = msg;
        ev->id = test;
        ev->process = act[0] == 'b' && act[1] == 'u' ? tl_json_copy(o, "ImportPath", st->pkg, sizeof st->pkg)
                                                      : pkg;
        ev->scope = ev->process;
        n = 1;
    } else if (!strcmp(act, "build-fail")) {
        tl_event_init(ev, TLE_LOG);
        const cJSON *ip = cJSON_GetObjectItemCaseSensitive(o, "ImportPath");
        int l = snprintf(st->msg, sizeof st->msg, "build failed: %s",
                         cJSON_IsString(ip) ? ip->valuestring : "");
        ev->level = TL_LIT("ERROR");
        ev->message = tl_str_make(st->msg, l < 0 ? 0 : (size_t)l < sizeof st->msg ? (size_t)l
                                                                                 : sizeof st->msg - 1);
        n = 1;
    }
    if (n)
        ev->t.wall_ms = time_ms;
out:
    cJSON_Delete(o);
    return n;
}

/* "--- PASS: TestX/sub (0.01s)" after the indentation (depth: its level; the reports open at
 * that level and deeper end first, and their events come first). */
static int parse_result(struct go_state *st, const char *p, size_t m, size_t depth, struct tl_event *ev)
{
    enum tl_outcome oc;
    if (TL_PREFIX(p, m, "--- PASS: "))
        oc = TL_PASSED;
    else if (TL_PREFIX(p, m, "--- FAIL: "))
        oc = TL_FAILED;
    else if (TL_PREFIX(p, m, "--- SKIP: "))
        oc = TL_SKIPPED;
    else
        return 0;
    struct tl_str rest = tl_trim(tl_str_make(p + 10, m - 10)), name = rest;
    double secs = __builtin_nan("");
    if (rest.n > 3 && rest.p[rest.n - 1] == ')' && rest.p[rest.n - 2] == 's') {
        size_t i = rest.n - 2;
        while (i > 0 && rest.p[i - 1] != '(')
            i--;
        double v;
        if (i >= 1 && (i == 1 || rest.p[i - 2] == ' ') &&
            tl_parse_number(tl_str_make(rest.p + i, rest.n - 2 - i), &v) && v >= 0) {
            secs = v;
            name = tl_trim(tl_str_make(rest.p, i - 1));
        }
    }
    if (!name.n)
        return 0;
    size_t levels = 0; /* a result is indented at most one level per '/' of its name */
    for (const char *q = name.p; (q = memchr(q, '/', (size_t)(name.p + name.n - q))); q++)
        levels++;
    if (depth > levels)
        return 0; /* deeper: text a test logged (go's test2json does not take it either) */
    int n = close_late(st, depth < GO_LATE_LEVELS ? depth : GO_LATE_LEVELS, ev);
    ev += n;
    tl_set_result(ev, name, tl_str_make(NULL, 0), oc);
    ev->t.duration_ms = secs * 1000.0;
    ev->t.late = true;
    struct tl_str msg = take_msg(st, tl_str_make(NULL, 0), name);
    if (oc == TL_FAILED)
        msg = failure_text(st, tl_str_make(NULL, 0), name, msg);
    if (oc != TL_PASSED)
        ev->message = msg;
    if (oc == TL_FAILED && depth < GO_LATE_LEVELS) {
        struct go_late *l = &st->late[depth];
        l->name_n = tl_copy(l->name, sizeof l->name, name).n;
        l->t.n = 0;
        l->t.cont = false;
    }
    return n + 1;
}

/* "ok  \tpkg\t0.01s[\t...]" and "FAIL\tpkg\t0.01s" / "FAIL\tpkg [build failed]". */
static int parse_package(const char *p, size_t m, size_t skip, bool ok, struct tl_event *ev)
{
    size_t i = skip, s = skip;
    while (i < m && p[i] != '\t' && p[i] != ' ')
        i++;
    if (i == s)
        return 0;
    tl_event_init(ev, TLE_SUITE_END);
    ev->id = tl_str_make(p + s, i - s);
    ev->status = ok ? TL_LIT("PASS") : TL_LIT("FAIL");
    if (i < m && p[i] == '\t') {
        size_t j = ++i;
        while (j < m && p[j] != '\t')
            j++;
        double v;
        if (j - i >= 2 && p[j - 1] == 's' && tl_parse_number(tl_str_make(p + i, j - i - 1), &v) &&
            v >= 0)
            ev->t.duration_ms = v * 1000.0;
    } else if (i < m) {
        ev->message = tl_trim(tl_str_make(p + i, m - i));
    }
    return 1;
}

static int go_text_line(struct go_state *st, const char *line, size_t len, struct tl_event *ev)
{
    switch (line[0]) {
    case '=':
        if (TL_PREFIX(line, len, "=== RUN ") || TL_PREFIX(line, len, "=== CONT ")) {
            bool run = line[4] == 'R';
            size_t skip = run ? 8 : 9;
            struct tl_str name = tl_trim(tl_str_make(line + skip, len - skip));
            if (!name.n)
                return 0;
            st->cur_n = tl_copy(st->cur, sizeof st->cur, name).n;
            tl_event_init(ev, run ? TLE_TEST_START : TLE_TEST_RESUME);
            ev->id = tl_str_make(st->cur, st->cur_n);
            return 1;
        }
        if (TL_PREFIX(line, len, "=== PAUSE "))
            st->cur_n = 0; /* the output that follows is another test's */
        return 0;
    case '-':
        return parse_result(st, line, len, 0, ev);
    case ' ': {
        size_t i = 0;
        while (i < len && line[i] == ' ')
            i++;
        int r;
        if (i + 4 < len && line[i] == '-' && line[i + 1] == '-' && line[i + 2] == '-' &&
            i % 4 == 0 && (r = parse_result(st, line + i, len - i, i / 4, ev)))
            return r;
        /* a test's output, which is not a result: its failure text is noted */
        if (!late_text(st, tl_str_make(line, len)))
            note_msg(st, tl_str_make(NULL, 0), tl_str_make(st->cur, st->cur_n), tl_str_make(line, len));
        return 0;
    }
    case 'o':
        return TL_PREFIX(line, len, "ok  \t") ? parse_package(line, len, 5, true, ev) : 0;
    case 'F':
        return TL_PREFIX(line, len, "FAIL\t") ? parse_package(line, len, 5, false, ev) : 0;
    default:
        return 0;
    }
}

static bool late_open(const struct go_state *st)
{
    for (size_t d = 0; d < GO_LATE_LEVELS; d++)
        if (st->late[d].name_n)
            return true;
    return false;
}

static int go_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                    struct tl_event *ev)
{
    struct go_state *st = state;
    if (late_open(st) && (!len || (line[0] != ' ' && line[0] != '-'))) {
        /* a line that is no report's: the reports end (its own event after theirs) */
        int n = close_late(st, 0, ev);
        if (len < 4)
            return n;
        return n + (line[0] == '{' ? parse_json(st, line, len, ev + n) : go_text_line(st, line, len, ev + n));
    }
    if (len < 4)
        return 0;
    return line[0] == '{' ? parse_json(st, line, len, ev) : go_text_line(st, line, len, ev);
}

static bool go_busy(const void *state) { return late_open(state); }

/* The output ended inside a report. */
static int go_flush(void *state, struct tl_event *ev) { return close_late(state, 0, ev); }

const struct tl_format tl_format_go = {
    .name = "go",
    .bit = TL_FMT_GO,
    .state_size = sizeof(struct go_state),
    .parse = go_parse,
    .release = NULL,
    .first_bytes = "{ ",
    .pairs = (const char *const[]){"==", "--", "ok", "FA", NULL},
    .busy = go_busy,
    .flush = go_flush,
};
