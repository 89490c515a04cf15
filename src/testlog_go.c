/* go test: the -json stream of test2json and plain `go test -v` text, one format "go"
 * (testlog_formats.h has the result mapping).
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
 * closes it with that duration; "ok  \tpkg\t0.01s" and "FAIL\tpkg\t..."
 * end package pkg (TLE_SUITE_END with duration; no start was printed for it, and `go test` prints a
 * package's -v output in one piece, so tests carry no scope here).
 *
 * A failed or skipped test's message is the first "x_test.go:12: text" line of its output (-json:
 * its output events; -v: the lines after its last "=== RUN"/"=== CONT"), which go prints before
 * its result.
 *
 * Every result may come late (t.late): go prints a test's subtests' results with its own,
 * after the last subtest ended, and test2json's events for them carry that late time too.
 */
#include "testlog_formats.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "testlog.h"

/* A test's failure text: the first "file_test.go:12: text" line of its output, kept until its
 * result (go prints it before "--- FAIL"), for the last GO_MSGS tests that printed one. */
#define GO_MSGS 16
struct go_msg {
    char key[512]; /* package U+001F test */
    char text[512];
    size_t key_n, text_n;
};

struct go_state {
    char pkg[512], test[1024], msg[2048];
    char cur[512]; /* -v text: the test that ran last (its output lines are its own) */
    size_t cur_n;
    struct go_msg msgs[GO_MSGS];
    unsigned next_msg;
};

static size_t msg_key(char *dst, size_t cap, struct tl_str pkg, struct tl_str test)
{
    size_t n = tl_copy(dst, cap, pkg).n;
    if (n < cap)
        dst[n++] = '\x1f';
    return n + tl_copy(dst + n, cap - n, test).n;
}

/* "    x_test.go:12: text": the text after the location, or empty when the line is not one. */
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

static void note_msg(struct go_state *st, struct tl_str pkg, struct tl_str test, struct tl_str out)
{
    struct tl_str text = located(out);
    if (!text.n || !test.n)
        return;
    char key[512];
    size_t kn = msg_key(key, sizeof key, pkg, test);
    for (unsigned i = 0; i < GO_MSGS; i++)
        if (st->msgs[i].key_n == kn && !memcmp(st->msgs[i].key, key, kn))
            return; /* the first one is the failure */
    struct go_msg *m = &st->msgs[st->next_msg++ % GO_MSGS];
    memcpy(m->key, key, kn);
    m->key_n = kn;
    m->text_n = tl_copy(m->text, sizeof m->text, text).n;
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
            return tl_str_make(m->text, m->text_n);
        }
    }
    return tl_str_make(NULL, 0);
}

static struct tl_str json_str(const cJSON *o, const char *key, char *buf, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || !v->valuestring)
        return tl_str_make(buf, 0);
    return tl_copy(buf, cap, tl_str_make(v->valuestring, strlen(v->valuestring)));
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
    struct tl_str pkg = json_str(o, "Package", st->pkg, sizeof st->pkg);
    struct tl_str test = json_str(o, "Test", st->test, sizeof st->test);
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
        struct tl_str msg = json_str(o, "Output", st->msg, sizeof st->msg);
        if (msg.n && msg.p[msg.n - 1] == '\n')
            msg.n--;
        if (act[0] == 'o')
            note_msg(st, pkg, test, msg);
        ev->message = msg;
        ev->id = test;
        ev->process = act[0] == 'b' && act[1] == 'u' ? json_str(o, "ImportPath", st->pkg, sizeof st->pkg)
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

/* "--- PASS: TestX/sub (0.01s)" after the indentation. */
static int parse_result(struct go_state *st, const char *p, size_t m, struct tl_event *ev)
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
    tl_set_result(ev, name, tl_str_make(NULL, 0), oc);
    ev->t.duration_ms = secs * 1000.0;
    ev->t.late = true;
    struct tl_str msg = take_msg(st, tl_str_make(NULL, 0), name);
    if (oc != TL_PASSED)
        ev->message = msg;
    return 1;
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

static int go_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                    struct tl_event *ev)
{
    struct go_state *st = state;
    if (len < 4)
        return 0;
    switch (line[0]) {
    case '{':
        return parse_json(st, line, len, ev);
    case '=':
        if (TL_PREFIX(line, len, "=== RUN ") || TL_PREFIX(line, len, "=== CONT ")) {
            bool run = line[4] == 'R';
            size_t skip = run ? 8 : 9;
            struct tl_str name = tl_trim(tl_str_make(line + skip, len - skip));
            if (!name.n)
                return 0;
            st->cur_n = tl_copy(st->cur, sizeof st->cur, name).n;
            tl_event_init(ev, run ? TLE_TEST_START : TLE_TEST_RESUME);
            ev->id = name;
            return 1;
        }
        return 0;
    case '-':
        return parse_result(st, line, len, ev);
    case ' ': {
        size_t i = 0;
        while (i < len && line[i] == ' ')
            i++;
        if (i + 4 < len && line[i] == '-')
            return parse_result(st, line + i, len - i, ev);
        /* a test's output, which is not a result: its failure text is noted */
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

const struct tl_format tl_format_go = {
    .name = "go",
    .bit = TL_FMT_GO,
    .state_size = sizeof(struct go_state),
    .parse = go_parse,
    .release = NULL,
    .first_bytes = "{ ",
    .pairs = (const char *const[]){"==", "--", "ok", "FA", NULL},
};
