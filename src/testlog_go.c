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
 * Every result may come late (t.late): go prints a test's subtests' results with its own,
 * after the last subtest ended, and test2json's events for them carry that late time too.
 */
#include "testlog_formats.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "testlog.h"

struct go_state {
    char pkg[512], test[1024], msg[2048];
};

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
static int parse_result(const char *p, size_t m, struct tl_event *ev)
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
            tl_event_init(ev, run ? TLE_TEST_START : TLE_TEST_RESUME);
            ev->id = name;
            return 1;
        }
        return 0;
    case '-':
        return parse_result(line, len, ev);
    case ' ': {
        size_t i = 0;
        while (i < len && line[i] == ' ')
            i++;
        return i + 4 < len && line[i] == '-' ? parse_result(line + i, len - i, ev) : 0;
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
