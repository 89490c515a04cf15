/* The corpus of real harness output (tests/fixtures/real/README): every NAME.log parsed as
 * --parse=auto (the default) would parse it must give exactly the tests of NAME.tests — the
 * harness's own report — as test markers: the same number, each with its id and status.
 *
 * A marker's status is mapped onto the report's vocabulary by the marker's own fields: PASS/OK
 * green PASS, orange XPASS; FAIL orange FAIL, green (expected) XFAIL; others as they are (an
 * INCOMPLETE or OTHER never matches). Ids: the marker's test field, which joins a scoped id as
 * "scope/id" (scope its own field), against the report's id as each format names it:
 *   same       pytest node id, mozlog test, gtest Suite.Name, libtest path, Check tcase:test
 *              (Check's report says only success, failure or error: a CRASH or TIMEOUT marker is
 *              an error there)
 *   go -v      the report's "<package>/<Test>" without the package (-v output names none), which
 *              ends before the first Test, Example, Benchmark or Fuzz
 *   unittest   "name (qualified)" is the test "qualified" when that ends with ".name", else
 *              "qualified.name" (doctests: "json ()" is "json", "encode (json.encoder.X)" is
 *              "json.encoder.X.encode")
 *   prove      "<file> <n> <description>" is "<file>/<description>" ("<file>/<n>" without one);
 *              "<file>" alone is a file-level result; points of a nested subtest (scope below
 *              the file) are not in the report and are left out here
 *   node       "a > b > c" is "a/b/c"; the report has only tests without subtests, and the
 *              names as its XML reads them (junit_name)
 * A marker that amends an earlier result of its test (its "amends": pytest's error at teardown
 * after a pass) is that test's result, in the place of the earlier one's entry, as the stream's
 * readers take it (results.h). The two lists are compared sorted, so order (xdist's completion
 * order) does not matter.
 *
 * Failure texts: where the harness's report has them (NAME.msgs: "<id>\t<text>", escaped as
 * NAME.tests is), every test that failed or errored must hold exactly the report's text, and one
 * the report has none for must hold none: its marker's message, or the one a message line gave it
 * later (given here as the stream's readers give it: the first unexpected marker of that name
 * without one, or with one the text goes on from). A text the core cut at
 * TESTLOG_MESSAGE_MAX need only begin the report's. The report's text is normalised by the
 * derivation (scripts/real-fixtures): no blank lines, as no parser is offered an empty line.
 */
#include "testlog_capture.h"
#include "base/util.h"
#include "check_run.h"

#include <cjson/cJSON.h>
#include <unistd.h>

enum idmap { ID_SAME, ID_CHECK, ID_GO_TEXT, ID_UNITTEST, ID_PROVE, ID_NODE };

/* An unexpected result's failure text, as the markers (and message lines) say it. */
struct msg {
    char *id, *text; /* text NULL: none */
    char *status;    /* the marker's */
};

/* How a corpus's log and report may differ (README):
 *   C_FAILED_ONLY   the log names failed tests only (go test without -v, jest without --verbose):
 *                   the report's others (but errors) are left out
 *   C_SECOND_RUN    the report is of a second run: numbers in texts (temp names, addresses) are
 *                   compared as "#"
 *   C_INTERLEAVED   the console prints the test's own output among its failures' texts (gtest):
 *                   the report's lines need only be among the marker's, in order
 *   C_FAILED_FILES  the log names the tests of the files that failed only (vitest's default
 *                   reporter): the report's tests of a file ("<file>.js/...") without a FAIL or
 *                   ERROR are left out
 *   C_NO_PASSES     the log names no passed test (RSpec's lists): the report's passes are left
 *                   out
 *   C_SKIP_TEXTS    NAME.msgs holds the skips' reasons too (pytest's, which its -v line cuts and
 *                   its short summary gives whole) */
enum { C_FAILED_ONLY = 1, C_SECOND_RUN = 2, C_INTERLEAVED = 4, C_FAILED_FILES = 128, C_NO_PASSES = 256 };
/* What the report calls a failure (its vocabulary has fewer kinds than the console's): a CRASH
 * (ctest's "Exception", meson's "killed by signal", cmocka's caught signal), a TIMEOUT (ctest's
 * JUnit) or an ERROR (cmocka's failed setup) marker is a FAIL there. */
enum { C_CRASH_FAILS = 8, C_TIMEOUT_FAILS = 16, C_ERROR_FAILS = 32 };
/* C_UNPASSED_ONLY: the log names only the tests that did not simply pass (doctest's default
 * console prints failed, may_fail and should_fail test cases): the report's PASS are left out */
enum { C_UNPASSED_ONLY = 64, C_SKIP_TEXTS = 512 };

/* The length of the file part of a "STATUS\t<file>.js/<titles>" entry (through ".js"), 0 none. */
static size_t js_file_len(const char *entry)
{
    const char *p = strstr(entry, ".js/");
    return p ? (size_t)(p + 3 - entry) : 0;
}

/* An entry of a file (its file part, less the status) that has a failed or errored test. */
static bool file_failed(const struct cap *want, const char *entry)
{
    const char *tab = strchr(entry, '\t');
    size_t n = js_file_len(entry);
    if (!tab || !n)
        return false;
    const char *f = tab + 1;
    size_t fn = n - (size_t)(f - entry);
    for (size_t i = 0; i < want->n; i++) {
        const char *w = want->lines[i];
        const char *wt = strchr(w, '\t');
        if ((!strncmp(w, "FAIL\t", 5) || !strncmp(w, "ERROR\t", 6)) && wt &&
            !strncmp(wt + 1, f, fn) && wt[1 + fn] == '/')
            return true;
    }
    return false;
}

static const struct corpus {
    const char *name; /* tests/fixtures/real/<name>.log and .tests */
    enum idmap map;
    /* "<STATUS>\t<id>" of a result only one side can have (README): the report's synthetic
     * entry for failures outside any test (gtest's XML), a result the report leaves out (Check's
     * XML of the unchecked fixture), a result that differs between the log's run and the run
     * that made the report (libtest's time limits) */
    const char *report_only, *log_only;
    unsigned flags;
    /* a failed test whose text the report lost (vitest's JSON report of a timeout holds only a
     * stand-in, "STACK_TRACE_ERROR"; the derivation leaves it out): its marker's text is not
     * compared */
    const char *msg_lost;
    /* more such results, where a log holds several (NULL-terminated) */
    const char *const *report_more, *const *log_more;
} corpus[] = {
    {"mozlog/mozbase.raw", ID_SAME},
    {"mozlog/mozbase.tbpl", ID_SAME},
    {"mozlog/mozbase.mach", ID_SAME},
    {"mozlog/mozbase-stdout.tbpl", ID_SAME},
    {"pytest/dateutil-serial", ID_SAME},
    {"pytest/dateutil-serial-color", ID_SAME},
    {"pytest/dateutil-xdist", ID_SAME},
    {"pytest/mozbase-serial", ID_SAME},
    {"pytest/msgs", ID_SAME},
    {"pytest/skips", ID_SAME, .flags = C_SKIP_TEXTS},
    /* pytest prints a test that passed and then errored at teardown twice, PASSED then ERROR:
     * the ERROR amends the PASS, and the report has the one result ERROR; after a FAILED the
     * report has both, each with its text (-rA's short summary names the ERROR first) */
    {"pytest/edges", ID_SAME},
    {"pytest/edges-xdist", ID_SAME},
    {"pytest/edges-pyargs", ID_SAME},
    {"unittest/json-pyflakes", ID_UNITTEST},
    {"unittest/dateutil", ID_UNITTEST},
    {"unittest/msgs", ID_UNITTEST},
    {"unittest/edges", ID_UNITTEST},
    {"go/stdlib.json", ID_SAME},
    {"go/stdlib.v", ID_GO_TEXT, .flags = C_SECOND_RUN},
    {"go/msgs.json", ID_SAME},
    {"go/msgs.v", ID_GO_TEXT, .flags = C_SECOND_RUN},
    {"go/msgs", ID_GO_TEXT, .flags = C_SECOND_RUN | C_FAILED_ONLY},
    {"go/build-failed.json", ID_SAME},
    {"go/edges.json", ID_SAME},
    {"go/edges.v", ID_GO_TEXT, .flags = C_SECOND_RUN},
    /* go test -count=2: every test (testify's suite methods too) runs again under its name */
    {"go/rerun.json", ID_SAME},
    {"go/rerun.v", ID_GO_TEXT, .flags = C_SECOND_RUN},
    {"gtest/output-test", ID_SAME, "FAIL\tNonTestSuiteFailure.", .flags = C_INTERLEAVED},
    {"gtest/output-test-color", ID_SAME, "FAIL\tNonTestSuiteFailure.", .flags = C_INTERLEAVED},
    {"gtest/skip-typed", ID_SAME},
    {"gtest/msgs", ID_SAME, .flags = C_INTERLEAVED},
    {"tap-perl/path-tiny", ID_PROVE},
    {"tap-perl/test-exception", ID_PROVE},
    {"tap-node/runner-output", ID_NODE},
    /* the report is a second run's, whose doc test went over its time limit (README) */
    {"libtest/semver", ID_SAME, "TIMEOUT\tsrc/lib.rs - (line 19)", "PASS\tsrc/lib.rs - (line 19)"},
    {"libtest/semver.json", ID_SAME},
    {"libtest/libtest-quirks", ID_SAME},
    {"libtest/libtest-quirks.json", ID_SAME},
    {"check/check_check", ID_CHECK, NULL, "FAIL\tFix Sub:unchecked_setup"},
    /* a tcase name holding a newline and a backspace: its result line is split in the log, and
     * the XML report has the name without the backspace */
    /* mocha's spec reporter passes a test's console output through as it is, unmarked: the TAP
     * line one test prints is taken by the TAP parser (README) */
    {"mocha/spec", ID_SAME, NULL, "PASS\ttap lookalike"},
    /* json-stream names no pending test (its "end" totals count them) */
    {"mocha/json-stream", ID_SAME, NULL, "PASS\ttap lookalike"},
    /* mocha's tap reporter is TAP; the report's failed hook is a "not ok" there */
    {"mocha/tap", ID_SAME, NULL, "PASS\ttap lookalike"},
    {"jest/verbose", ID_SAME},
    /* jest without --verbose names the failed tests only */
    {"jest/default", ID_SAME, .flags = C_FAILED_ONLY},
    /* RSpec's pending and failure lists name no passed example; a test prints
     * "  1) Calculator fake failure", which mocha's parser takes for a failure (README) */
    {"rspec/progress", ID_SAME, NULL, "FAIL\tCalculator fake failure", .flags = C_NO_PASSES},
    /* the documentation tree; the same test's lines are shaped like it: "  adds two numbers" and
     * "  1) Calculator fake failure" read as passed examples, and the unindented
     * "rspec ./spec/fake_spec.rb:1 # Fake test" as a top-level group, which then names the
     * examples after it (README) */
    {"rspec/documentation", ID_SAME,
     .report_more = (const char *const[]){"PASS\tCalculator prints output that looks like results",
                                          "PASS\tCalculator add adds two numbers",
                                          "FAIL\tCalculator add fails on purpose",
                                          "FAIL\tCalculator add compares hashes",
                                          "PASS\tCalculator when nested passes inside a context", NULL},
     .log_more = (const char *const[]){"PASS\tCalculator adds two numbers",
                                       "PASS\tCalculator 1) Calculator fake failure",
                                       "PASS\trspec ./spec/fake_spec.rb:1 # Fake test prints output that looks like results",
                                       "PASS\trspec ./spec/fake_spec.rb:1 # Fake test add adds two numbers",
                                       "FAIL\trspec ./spec/fake_spec.rb:1 # Fake test add fails on purpose",
                                       "FAIL\trspec ./spec/fake_spec.rb:1 # Fake test add compares hashes",
                                       "PASS\trspec ./spec/fake_spec.rb:1 # Fake test when nested passes inside a context",
                                       NULL}},
    {"rspec/documentation-tree", ID_SAME},
    /* passes only: they are known at the totals */
    {"rspec/documentation-passes", ID_SAME},
    /* killed while the first example of a context hung: the examples before it, the context's
     * line being no result */
    {"rspec/documentation-timeout", ID_SAME},
    {"vitest/verbose", ID_SAME, .msg_lost = "test/calc.test.js/Calculator > times out"},
    /* vitest's default reporter lists the tests of the files that failed only */
    {"vitest/default", ID_SAME, .flags = C_FAILED_FILES,
     .msg_lost = "test/calc.test.js/Calculator > times out"},
    {"check/ex_output", ID_CHECK, "FAIL\tdescription \" ' < > & \t \nX end:test_xml_esc_fail_msg"},
    {"ctest/quirks-plain", ID_SAME, .flags = C_CRASH_FAILS | C_TIMEOUT_FAILS},
    {"ctest/quirks-V", ID_SAME, .flags = C_CRASH_FAILS | C_TIMEOUT_FAILS},
    {"ctest/quirks-j2", ID_SAME, .flags = C_CRASH_FAILS | C_TIMEOUT_FAILS},
    {"meson/quirks-plain", ID_SAME, .flags = C_CRASH_FAILS},
    {"meson/quirks-v", ID_SAME, .flags = C_CRASH_FAILS},
    {"meson/quirks-j2", ID_SAME, .flags = C_CRASH_FAILS},
    /* ctest and meson running a GoogleTest binary and a TAP script: what they show of a test's
     * output (-V, --output-on-failure, -v) is that test's output, not results of another format */
    {"wrapped/ctest-V", ID_SAME},
    {"wrapped/ctest-oof", ID_SAME},
    {"wrapped/meson-v", ID_SAME},
    {"wrapped/meson-v1", ID_SAME},
    {"cmocka/quirks", ID_SAME, .flags = C_CRASH_FAILS | C_ERROR_FAILS},
    {"teamcity/catch2", ID_SAME},
    /* mocha-teamcity-reporter: mocha --parallel (one flow, and one for a failed hook), and two
     * shards whose flows interleave, tests of one name running in both at once */
    {"teamcity/mocha-parallel", ID_SAME},
    {"teamcity/mocha-shards", ID_SAME},
    /* jest-teamcity: a suite per file and per describe block; three tests "adds" in three */
    {"teamcity/jest", ID_SAME},
    /* Catch2's console names failed test cases only, unless -s */
    {"catch2/default", ID_SAME, .flags = C_FAILED_ONLY},
    {"catch2/s", ID_SAME},
    {"doctest/default", ID_SAME, .flags = C_UNPASSED_ONLY},
    {"doctest/s", ID_SAME},
    {"doctest/d", ID_SAME},
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *entry(const char *status, const char *id, size_t idlen)
{
    char *s;
    if (asprintf(&s, "%s\t%.*s", status, (int)idlen, id) < 0)
        abort();
    return s;
}

/* What the parsed markers say: one entry per test marker. */
struct got {
    struct cap l, scopes; /* node: the scopes seen, to leave parents out */
    struct msg *msgs;     /* the unexpected results, in the order they ended */
    size_t nmsgs;
    enum idmap map;
    unsigned flags; /* the corpus's */
    size_t nested; /* prove: points of nested subtests, left out */
    size_t parents; /* node: tests with subtests, left out */
    long long totals[4];  /* the last "Test totals" marker's total, passed, failed, skipped (-1
                             not given) */
    size_t ntotals;       /* how many such markers */
};

static const char *json_s(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* node: a name as its junit report reads once parsed: node's junit reporter leaves newlines out
 * and writes other control characters raw; XML turns tabs and carriage returns in an attribute
 * into spaces, and the report's derivation reads the rest as the text \xNN. */
static char *junit_name(const char *name)
{
    char *s = malloc(strlen(name) * 4 + 1), *o = s;
    for (const char *p = name; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n')
            continue;
        if (c == '\t' || c == '\r')
            *o++ = ' ';
        else if (c < 0x20)
            o += sprintf(o, "\\x%02x", c);
        else
            *o++ = (char)c;
    }
    *o = '\0';
    return s;
}

/* node's junit report lists only the tests without subtests. A parent ends after its subtests:
 * a test whose name is the scope of a test that ended since it last ended is one; true when
 * name (its junit_name) is such a scope, which is then forgotten. */
static bool parent_ends(struct got *g, const char *name)
{
    bool parent = false;
    size_t k = 0;
    for (size_t j = 0; j < g->scopes.n; j++) {
        if (!strcmp(name, g->scopes.lines[j])) {
            parent = true;
            free(g->scopes.lines[j]);
        } else
            g->scopes.lines[k++] = g->scopes.lines[j];
    }
    g->scopes.n = k;
    return parent;
}

static void got_marker(void *ctx, const char *name, uint64_t s, uint64_t e, int cat,
                       const char *data, size_t len)
{
    (void)s, (void)e, (void)cat;
    struct got *g = ctx;
    if (!strcmp(name, "Test totals")) {
        cJSON *o = cJSON_ParseWithLength(data, len);
        ck_assert_msg(o != NULL, "payload is JSON: %.*s", (int)len, data);
        static const char *const keys[] = {"total", "passed", "failed", "skipped"};
        for (size_t i = 0; i < 4; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
            g->totals[i] = cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
        }
        g->ntotals++;
        cJSON_Delete(o);
        return;
    }
    if (strcmp(name, "test") != 0)
        return;
    cJSON *o = cJSON_ParseWithLength(data, len);
    ck_assert_msg(o != NULL, "payload is JSON: %.*s", (int)len, data);
    const char *test = json_s(o, "test"), *status = json_s(o, "status"),
               *color = json_s(o, "color"), *scope = json_s(o, "scope");
    ck_assert_ptr_nonnull(test);
    ck_assert_ptr_nonnull(status);
    ck_assert_ptr_nonnull(color);
    bool unexpected = strcmp(color, "orange") == 0;
    const char *st = status;
    if (!strcmp(status, "PASS") || !strcmp(status, "OK"))
        st = unexpected ? "XPASS" : "PASS";
    else if (!strcmp(status, "FAIL"))
        st = unexpected ? "FAIL" : "XFAIL";
    if (g->map == ID_CHECK && (!strcmp(st, "CRASH") || !strcmp(st, "TIMEOUT")))
        st = "ERROR";
    if (((g->flags & C_CRASH_FAILS) && !strcmp(st, "CRASH")) ||
        ((g->flags & C_TIMEOUT_FAILS) && !strcmp(st, "TIMEOUT")) ||
        ((g->flags & C_ERROR_FAILS) && !strcmp(st, "ERROR")))
        st = "FAIL";
    if (g->map == ID_PROVE && scope && !ends_with(scope, ".t"))
        g->nested++;
    else if (g->map == ID_NODE) {
        char *n = junit_name(test);
        if (parent_ends(g, n))
            g->parents++;
        else
            cap_add(&g->l, entry(st, n, strlen(n)));
        free(n);
        if (scope)
            cap_add(&g->scopes, junit_name(scope));
    } else {
        if (json_s(o, "amends")) { /* the test's latest entry is this one's */
            size_t k = g->l.n;
            while (k > 0 && strcmp(strchr(g->l.lines[k - 1], '\t') + 1, test))
                k--;
            ck_assert_msg(k > 0, "%s amends an earlier result it does not have", test);
            free(g->l.lines[k - 1]);
            memmove(&g->l.lines[k - 1], &g->l.lines[k], (g->l.n - k) * sizeof *g->l.lines);
            g->l.n--;
        }
        cap_add(&g->l, entry(st, test, strlen(test)));
    }
    if (!strcmp(st, "FAIL") || !strcmp(st, "ERROR") || !strcmp(st, "TIMEOUT") || !strcmp(st, "CRASH") ||
        ((g->flags & C_SKIP_TEXTS) && !strcmp(st, "SKIP"))) {
        const char *m = json_s(o, "message");
        g->msgs = realloc(g->msgs, (g->nmsgs + 1) * sizeof *g->msgs);
        g->msgs[g->nmsgs++] = (struct msg){strdup(test), m ? strdup(m) : NULL, strdup(status)};
    }
    cJSON_Delete(o);
}

/* A message line (testlog.h): the first unexpected result of that name (and status, when the
 * line says one) without a text, or with one the line cut (text_cut_of), gets it. */
static void got_state(void *ctx, const char *line, size_t len)
{
    struct got *g = ctx;
    cJSON *o = cJSON_ParseWithLength(line, len);
    ck_assert_ptr_nonnull(o);
    const char *type = json_s(o, "type"), *test = json_s(o, "test"), *m = json_s(o, "message"),
               *status = json_s(o, "status");
    if (type && !strcmp(type, "message")) {
        ck_assert_msg(test && m && *m, "a message line names its test and text: %.*s", (int)len, line);
        for (size_t i = 0; i < g->nmsgs; i++)
            if ((!g->msgs[i].text || text_cut_of(g->msgs[i].text, strlen(g->msgs[i].text), m, strlen(m))) &&
                !strcmp(g->msgs[i].id, test) && (!status || !strcmp(g->msgs[i].status, status))) {
                free(g->msgs[i].text);
                g->msgs[i].text = strdup(m);
                break;
            }
    }
    cJSON_Delete(o);
}

/* The report's id (escapes undone) as the markers name it. */
static char *map_id(enum idmap map, const char *status, const char *id)
{
    size_t n = strlen(id);
    switch (map) {
    case ID_SAME:
    case ID_CHECK:
        break;
    case ID_GO_TEXT: /* the package ends before the first Test/Example/Benchmark/Fuzz */
        for (const char *t = strchr(id, '/'); t; t = strchr(t + 1, '/'))
            if (!strncmp(t + 1, "Test", 4) || !strncmp(t + 1, "Example", 7) ||
                !strncmp(t + 1, "Benchmark", 9) || !strncmp(t + 1, "Fuzz", 4))
                return entry(status, t + 1, strlen(t + 1));
        break;
    case ID_UNITTEST: {
        const char *open = strstr(id, " (");
        if (!open || id[n - 1] != ')')
            break;
        size_t nl = (size_t)(open - id);
        const char *q = open + 2;
        size_t ql = (size_t)(id + n - 1 - q);
        if (ql == 0)
            return entry(status, id, nl);
        if (ql > nl && q[ql - nl - 1] == '.' && memcmp(q + ql - nl, id, nl) == 0)
            return entry(status, q, ql);
        char *s;
        if (asprintf(&s, "%s\t%.*s.%.*s", status, (int)ql, q, (int)nl, id) < 0)
            abort();
        return s;
    }
    case ID_PROVE: {
        const char *sp = strchr(id, ' ');
        if (!sp)
            break; /* a file-level result */
        const char *num = sp + 1, *desc = strchr(num, ' ');
        char *s;
        if (asprintf(&s, "%s\t%.*s/%s", status, (int)(sp - id), id,
                     desc ? desc + 1 : num) < 0)
            abort();
        return s;
    }
    case ID_NODE: {
        char *s = entry(status, "", 0), *o;
        size_t k = strlen(s);
        s = realloc(s, k + n + 1);
        o = s + k;
        for (size_t i = 0; i < n; i++) {
            if (i + 3 <= n && memcmp(id + i, " > ", 3) == 0) {
                *o++ = '/';
                i += 2;
            } else
                *o++ = id[i];
        }
        *o = '\0';
        return s;
    }
    }
    return entry(status, id, n);
}

/* Undo the \t \n \\ escapes of a .tests or .msgs field, in place. */
static char *unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            *o++ = *p == 't' ? '\t' : *p == 'n' ? '\n' : *p;
        } else
            *o++ = *p;
    }
    *o = '\0';
    return s;
}

static void read_truth(const char *path, enum idmap map, struct cap *l)
{
    size_t len;
    char *t = slurp(path, &len);
    ck_assert_msg(t != NULL, "%s", path);
    char *save = NULL;
    for (char *line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *tab = strchr(line, '\t');
        ck_assert_msg(tab != NULL, "%s: %s", path, line);
        *tab = '\0';
        cap_add(l, map_id(map, line, unescape(tab + 1)));
    }
    free(t);
}

/* Take the entry e out of l, which must hold it (NULL: nothing). */
static void drop_one(struct cap *l, const char *e, size_t n)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strncmp(l->lines[i], e, n) && !l->lines[i][n]) {
            free(l->lines[i]);
            l->lines[i] = l->lines[--l->n];
            return;
        }
    ck_abort_msg("no %.*s", (int)n, e);
}

/* Drop entry e (NULL: none) and each of list (NULL-terminated; NULL: none) from l. */
static void drop_each(struct cap *l, const char *e, const char *const *list)
{
    if (e)
        drop_one(l, e, strlen(e));
    for (; list && *list; list++)
        drop_one(l, *list, strlen(*list));
}

/* Printable form of an entry for the failure report. */
static const char *show(const char *s)
{
    static char buf[4][300];
    static int k;
    char *b = buf[k++ & 3];
    size_t o = 0;
    bool status = true;
    for (; *s && o + 5 < sizeof buf[0]; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\t' && status) {
            b[o++] = ' ';
            status = false;
        } else if (c < 0x20)
            o += (size_t)snprintf(b + o, sizeof buf[0] - o, "\\x%02x", c);
        else
            b[o++] = (char)c;
    }
    b[o] = '\0';
    return b;
}

/* s with every run of digits as one '#' (malloc'ed). */
static char *no_numbers(const char *s)
{
    char *r = strdup(s), *o = r;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            *o++ = *p;
        else if (o == r || o[-1] != '#')
            *o++ = '#';
    *o = '\0';
    return r;
}

/* Whether the lines of want are among those of got, in order. */
static bool lines_among(const char *got, const char *want)
{
    while (*want) {
        size_t wl = strcspn(want, "\n");
        for (;;) {
            size_t gl = strcspn(got, "\n");
            if (gl == wl && !memcmp(got, want, wl))
                break;
            if (!got[gl])
                return false;
            got += gl + 1;
        }
        got += wl;
        got += *got == '\n';
        want += wl;
        want += *want == '\n';
    }
    return true;
}

/* Whether got (a marker's text, NULL none) is the report's text want (NULL none); how they may
 * differ: the corpus's flags. *interleaved: it is only when C_INTERLEAVED allows. */
static bool same_text(const char *got, const char *want, unsigned flags, bool *interleaved)
{
    if (!got || !want)
        return !got && !want;
    char *g = flags & C_SECOND_RUN ? no_numbers(got) : strdup(got);
    char *w = flags & C_SECOND_RUN ? no_numbers(want) : strdup(want);
    size_t n = strlen(got);
    bool same = !strcmp(g, w) || (n > TESTLOG_MESSAGE_MAX - 8 && !strncmp(g, w, strlen(g)));
    if (!same && (flags & C_INTERLEAVED) && lines_among(g, w))
        same = *interleaved = true;
    free(g);
    free(w);
    return same;
}

/* The failure texts of the report (NAME.msgs) against the markers': the number
 * of tests whose text differs, said in report (at most a few). */
static size_t check_msgs(const struct corpus *c, const char *path, const struct got *g, char *report,
                         size_t cap, size_t *ret_checked, size_t *ret_interleaved)
{
    size_t len, bad = 0, ro = strlen(report);
    char *t = slurp(path, &len);
    ck_assert_msg(t != NULL, "%s", path);
    bool *used = calloc(g->nmsgs + 1, 1);
    char *save = NULL;
    struct cap want = {0};
    for (char *line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *tab = strchr(line, '\t');
        ck_assert_msg(tab != NULL, "%s: %s", path, line);
        *tab = '\0';
        char *mapped = map_id(c->map, "M", unescape(line)); /* "M\t<id>" */
        if (c->report_only && !strcmp(strchr(c->report_only, '\t') + 1, mapped + 2)) {
            free(mapped);
            continue;
        }
        const char *text = unescape(tab + 1);
        cap_add(&want, mapped);
        size_t i = 0;
        while (i < g->nmsgs && (used[i] || strcmp(g->msgs[i].id, mapped + 2)))
            i++;
        const char *got = i < g->nmsgs ? g->msgs[i].text : NULL;
        if (i < g->nmsgs)
            used[i] = true;
        bool inter = false, ok = i < g->nmsgs && same_text(got, text, c->flags, &inter);
        *ret_interleaved += inter;
        if (!ok && bad++ < 6 && ro < cap - 600)
            ro += (size_t)snprintf(report + ro, cap - ro, "\n  %s:\n    report  %.200s\n    markers %.200s",
                                   show(mapped + 2), show(text), i < g->nmsgs ? show(got ? got : "(none)") : "(no such test)");
        ++*ret_checked;
    }
    /* and no text where the report has none */
    for (size_t i = 0; i < g->nmsgs; i++)
        if (!used[i] && g->msgs[i].text) {
            bool listed = false;
            for (size_t k = 0; k < want.n && !listed; k++)
                listed = !strcmp(want.lines[k] + 2, g->msgs[i].id);
            listed |= c->msg_lost && !strcmp(c->msg_lost, g->msgs[i].id);
            /* go: a parent that failed only through a subtest has that subtest's text, named
             * ("TestX/sub: text"), which go's own report leaves out */
            const char *colon = strstr(g->msgs[i].text, ": ");
            const char *slash = colon ? memrchr(g->msgs[i].text, '/', (size_t)(colon - g->msgs[i].text)) : NULL;
            size_t pn = slash ? (size_t)(slash - g->msgs[i].text) : 0, idn = strlen(g->msgs[i].id);
            if (pn && pn <= idn && !memcmp(g->msgs[i].id + idn - pn, g->msgs[i].text, pn))
                listed = true;
            if (!listed && bad++ < 6 && ro < cap - 600)
                ro += (size_t)snprintf(report + ro, cap - ro, "\n  %s: a text the report has none of: %.200s",
                                       show(g->msgs[i].id), show(g->msgs[i].text));
        }
    cap_free(&want);
    free(used);
    free(t);
    return bad;
}

#define NCORPUS (sizeof corpus / sizeof corpus[0])

/* Loop index i: corpus[i % NCORPUS], through the prefilter for i < NCORPUS, else with every line
 * offered to every parser (the prefilter must change nothing on real output either). */
START_TEST(test_corpus)
{
    const struct corpus *c = &corpus[(size_t)_i % NCORPUS];
    bool raw = (size_t)_i >= NCORPUS;
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/real/%s.log", fixture_dir(), c->name);
    size_t len;
    char *log = slurp(path, &len);
    ck_assert_msg(log != NULL, "%s", path);

    struct got g = {.map = c->map, .flags = c->flags};
    struct marker_sink sink = {.marker = got_marker, .state = got_state, .ctx = &g};
    struct testlog_config cfg = {
        .formats = TL_FMT_ALL, .wall_at_t0_ms = WALL0, .t0_ns = T0, .no_prefilter = raw};
    struct testlog *tl;
    ck_assert_int_eq(testlog_new(&cfg, &sink, NULL, &tl), 0);
    /* producer timestamps (go -json, mozlog) are from the day the logs were made: far from
     * these arrival times, so they are ignored and the arrival clock times everything */
    double ms = feed_log(tl, log, len, 0);
    testlog_finish(tl, MS(ms + 10), false);
    free(log);

    /* The harness's own counts (NAME.totals: "total passed failed skipped" from its report):
     * the run's last "Test totals" marker says them; a count the summary line leaves out (it
     * prints no "0 pending") is one the report has as 0. */
    snprintf(path, sizeof path, "%s/tests/fixtures/real/%s.totals", fixture_dir(), c->name);
    FILE *tf = fopen(path, "r");
    if (tf) {
        long long want_t[4];
        ck_assert_int_eq(fscanf(tf, "%lld %lld %lld %lld", &want_t[0], &want_t[1], &want_t[2], &want_t[3]), 4);
        fclose(tf);
        ck_assert_msg(g.ntotals >= 1, "%s: no \"Test totals\" marker", c->name);
        for (size_t i = 0; i < 4; i++)
            ck_assert_msg(g.totals[i] == want_t[i] || (g.totals[i] == -1 && want_t[i] == 0 && i),
                          "%s: totals: got %lld %lld %lld %lld, the harness's report says %lld %lld %lld %lld",
                          c->name, g.totals[0], g.totals[1], g.totals[2], g.totals[3], want_t[0], want_t[1],
                          want_t[2], want_t[3]);
    }

    char msgs_report[4096] = "";
    size_t msgs_bad = 0, msgs_checked = 0, msgs_inter = 0;
    snprintf(path, sizeof path, "%s/tests/fixtures/real/%s.msgs", fixture_dir(), c->name);
    if (access(path, R_OK) == 0)
        msgs_bad = check_msgs(c, path, &g, msgs_report, sizeof msgs_report, &msgs_checked, &msgs_inter);
    testlog_free(tl);
    for (size_t i = 0; i < g.nmsgs; i++) {
        free(g.msgs[i].id);
        free(g.msgs[i].text);
        free(g.msgs[i].status);
    }
    free(g.msgs);

    struct cap want = {0};
    snprintf(path, sizeof path, "%s/tests/fixtures/real/%s.tests", fixture_dir(), c->name);
    read_truth(path, c->map, &want);
    drop_each(&want, c->report_only, c->report_more);
    if (c->map == ID_PROVE) {
        /* a file that skipped all its tests (a skip_all plan) ran none: prove counts no test
         * ("Tests="), and neither do the markers */
        size_t k = 0;
        for (size_t i = 0; i < want.n; i++)
            if (strncmp(want.lines[i], "SKIP\t", 5) || !ends_with(want.lines[i], ".t"))
                want.lines[k++] = want.lines[i];
            else
                free(want.lines[i]);
        want.n = k;
    }
    if (c->flags & (C_FAILED_ONLY | C_UNPASSED_ONLY)) {
        size_t k = 0;
        for (size_t i = 0; i < want.n; i++)
            if (!strncmp(want.lines[i], "FAIL\t", 5) || !strncmp(want.lines[i], "ERROR\t", 6) ||
                ((c->flags & C_UNPASSED_ONLY) && strncmp(want.lines[i], "PASS\t", 5)))
                want.lines[k++] = want.lines[i];
            else
                free(want.lines[i]);
        want.n = k;
    }
    if (c->flags & C_NO_PASSES) {
        size_t k = 0;
        for (size_t i = 0; i < want.n; i++)
            if (strncmp(want.lines[i], "PASS\t", 5))
                want.lines[k++] = want.lines[i];
            else
                free(want.lines[i]);
        want.n = k;
    }
    if (c->flags & C_FAILED_FILES) {
        bool *keep = calloc(want.n + 1, sizeof *keep);
        ck_assert_ptr_nonnull(keep);
        for (size_t i = 0; i < want.n; i++)
            keep[i] = file_failed(&want, want.lines[i]);
        size_t k = 0;
        for (size_t i = 0; i < want.n; i++)
            if (keep[i])
                want.lines[k++] = want.lines[i];
            else
                free(want.lines[i]);
        want.n = k;
        free(keep);
    }
    drop_each(&g.l, c->log_only, c->log_more);
    qsort(want.lines, want.n, sizeof *want.lines, cmp_str);
    qsort(g.l.lines, g.l.n, sizeof *g.l.lines, cmp_str);
    if (c->map == ID_NODE)
        ck_assert_msg(g.parents > 0, "%s: tests with subtests are tests too", c->name);
    cap_free(&g.scopes);
    if (c->map == ID_PROVE)
        ck_assert_msg(!strstr(c->name, "path-tiny") || g.nested > 0,
                      "%s: the nested subtests' points are tests too", c->name);

    /* report every difference (up to 40), then fail */
    size_t i = 0, j = 0, bad = 0;
    char report[8192] = "";
    size_t ro = 0;
    while (i < want.n || j < g.l.n) {
        int d = i == want.n ? 1 : j == g.l.n ? -1 : strcmp(want.lines[i], g.l.lines[j]);
        if (!d) {
            i++, j++;
            continue;
        }
        if (bad++ < 40 && ro < sizeof report - 400)
            ro += (size_t)snprintf(report + ro, sizeof report - ro, "\n  %s %s",
                                   d < 0 ? "missing:" : "extra:  ",
                                   d < 0 ? show(want.lines[i]) : show(g.l.lines[j]));
        if (d < 0)
            i++;
        else
            j++;
    }
    ck_assert_msg(bad == 0, "%s%s: %zu tests in the report, %zu parsed, %zu differences:%s",
                  c->name, raw ? " (no prefilter)" : "", want.n, g.l.n, bad, report);
    ck_assert_msg(msgs_bad == 0, "%s%s: %zu of the report's %zu failure texts differ:%s", c->name,
                  raw ? " (no prefilter)" : "", msgs_bad, msgs_checked, msgs_report);
    if (msgs_checked && !raw && getenv("TESTLOG_REAL_COUNTS"))
        fprintf(stderr, "%s: %zu failure texts as the report's (%zu with the test's own output among them)\n",
                c->name, msgs_checked, msgs_inter);
    cap_free(&want);
    cap_free(&g.l);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("testlog_real");
    TCase *tc = tcase_create("corpus");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_corpus, 0, (int)(2 * NCORPUS));
    suite_add_tcase(s, tc);
    return check_run(s);
}
