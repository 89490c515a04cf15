/* testlog_tests.c — a test's life (testlog_impl.h): the open tests, their starts and ends
 * matched by id, the tree's cost while each ran (CPU and peak RSS from the probe, anchors for
 * the tests no start line announced), the Test and TestResult markers and the state lines of
 * open tests, their payloads spelled out as text, and the results kept for the summary. */
#include "testlog/testlog.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "base/util.h"
#include "testlog/event.h"
#include "testlog/formats.h"
#include "testlog/testlog_impl.h"

/* ---- marker types (markers.h): tests and their unexpected results -------------------------- */

/* test is the full name: the id, after its scope and a '/' when the format scopes it (go's
 * package, a TAP file or parent subtest, a mozlog subsuite), so that tests of different scopes
 * never share a name; scope is that scope alone, for tools. */
enum { TEST_TEST, TEST_NAME, TEST_SCOPE, TEST_STATUS, TEST_EXPECTED, TEST_OUTCOME, TEST_MESSAGE,
       TEST_MESSAGE_LINES, TEST_TIMEOUTFACTOR, TEST_CPU, TEST_RSS, TEST_LEAKED, TEST_LEAKED_CMDS, TEST_AMENDS,
       TEST_COLOR };
static const struct marker_field test_fields[] = {
    [TEST_TEST] = MARKER_FIELD("test", "Test Name", "string", 0),
    [TEST_NAME] = MARKER_FIELD("name", "Short Name", "string", MF_HIDDEN),
    [TEST_SCOPE] = MARKER_FIELD("scope", "Scope", "string", MF_OPTIONAL | MF_HIDDEN),
    [TEST_STATUS] = MARKER_FIELD("status", "Status", "string", 0),
    [TEST_EXPECTED] = MARKER_FIELD("expected", "Expected", "string", MF_OPTIONAL),
    /* a result other than a pass that the harness expected (xfail, a known failure): "expected"
     * is left out there (it equals the status), so a bare FAIL would read as a failure */
    [TEST_OUTCOME] = MARKER_FIELD("outcome", "Outcome", "string", MF_OPTIONAL),
    [TEST_MESSAGE] = MARKER_FIELD("message", "Message", "string", MF_OPTIONAL),
    /* A string field is shown on one line: a message of several lines (an assertion's diff) is
     * also given line by line, which the front-end shows one row each. */
    [TEST_MESSAGE_LINES] = MARKER_FIELD("messageLines", "Message, line by line", "list", MF_OPTIONAL),
    [TEST_TIMEOUTFACTOR] = MARKER_FIELD("timeoutfactor", "Timeout Factor", "integer", MF_OPTIONAL),
    [TEST_CPU] = MARKER_FIELD("cpuTime", "Tree CPU time", "duration", MF_OPTIONAL),
    [TEST_RSS] = MARKER_FIELD("maxRSS", "Tree peak RSS while it ran (sampled)", "bytes", MF_OPTIONAL),
    [TEST_LEAKED] = MARKER_FIELD("leaked", "Processes it left running", "integer", MF_OPTIONAL),
    [TEST_LEAKED_CMDS] = MARKER_FIELD("leakedCommands", "Left running", "string", MF_OPTIONAL),
    /* the status of the test's earlier marker that this one completes (tl_event.amends): the
     * test's result is this one; the readers of the stream count the test once */
    [TEST_AMENDS] = MARKER_FIELD("amends", "Replaces the result", "string", MF_OPTIONAL),
    [TEST_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
};
const struct marker_type testlog_test_type = {
    .name = "Test",
    .tooltip_label = "{marker.data.name}",
    .table_label = "{marker.data.status} \xe2\x80\x94 {marker.data.test}",
    .chart_label = "{marker.data.name}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .color_field = "color",
    .fields = test_fields,
    .nfields = ARRAY_SIZE(test_fields),
};

/* An instant at the end of each test with an unexpected result, in a row of its own ("unexpected
 * result"): a failing test shorter than a pixel of the chart is still there to see and hover. */
enum { RESULT_TEST, RESULT_STATUS, RESULT_EXPECTED, RESULT_MESSAGE, RESULT_MESSAGE_LINES, RESULT_COLOR };
static const struct marker_field result_fields[] = {
    [RESULT_TEST] = MARKER_FIELD("test", "Test Name", "string", 0),
    [RESULT_STATUS] = MARKER_FIELD("status", "Status", "string", 0),
    [RESULT_EXPECTED] = MARKER_FIELD("expected", "Expected", "string", MF_OPTIONAL),
    [RESULT_MESSAGE] = MARKER_FIELD("message", "Message", "string", MF_OPTIONAL),
    [RESULT_MESSAGE_LINES] = MARKER_FIELD("messageLines", "Message, line by line", "list", MF_OPTIONAL),
    [RESULT_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
};
const struct marker_type testlog_result_type = {
    .name = "TestResult",
    .tooltip_label = "{marker.data.status}: {marker.data.test}",
    .table_label = "{marker.data.status} \xe2\x80\x94 {marker.data.test}",
    .chart_label = "{marker.data.status}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .color_field = "color",
    .description = "A test's unexpected result, at its end",
    .fields = result_fields,
    .nfields = ARRAY_SIZE(result_fields),
};

/* ---- time ---- */

uint64_t event_time(const struct testlog *tl, const struct tl_event *ev, uint64_t line_arrival)
{
    /* An earlier line's arrival, or this line's; a line's end is now, when the complete line
     * is handled (tl_timing). */
    uint64_t arr = ev->t.when == TL_AT_EARLIER_LINE && ev->t.ns ? ev->t.ns : line_arrival;
    if (ev->t.when == TL_AT_LINE_END) {
        uint64_t end = now_ns();
        if (end > arr)
            arr = end;
    }
    double t = ev->t.wall_ms;
    if (!isfinite(t) || t <= 0 || tl->cfg.wall_at_t0_ms <= 0)
        return arr;
    if (t < 1e11) /* float seconds from some producers */
        t *= 1000.0;
    double mono = (double)tl->cfg.t0_ns + (t - tl->cfg.wall_at_t0_ms) * 1e6;
    if (fabs(mono - (double)arr) > (double)TESTLOG_MAX_SKEW_NS)
        return arr;
    if (mono > (double)arr) /* written after it happened: later is clock noise */
        return arr;
    if (mono < (double)tl->cfg.t0_ns)
        return tl->cfg.t0_ns;
    return (uint64_t)mono;
}

static uint64_t probe_cpu(const struct testlog *tl, bool *ok)
{
    *ok = tl->probe.tree_cpu_ns != NULL;
    return *ok ? tl->probe.tree_cpu_ns(tl->probe.ctx) : 0;
}

/* The tree's RSS now, when the probe can say; 0 (nothing yet) otherwise: a test's peak is what
 * the tree held while it ran, never what a sample before its start saw. */
static uint64_t probe_rss(const struct testlog *tl)
{
    return tl->probe.tree_rss ? tl->probe.tree_rss(tl->probe.ctx) : 0;
}

/* ---- colours and expectations ---- */

static bool status_is(struct tl_str s, const char *a, const char *b)
{
    return str_eq(s, a) || (b && str_eq(s, b));
}

bool is_unexpected(const struct tl_event *ev)
{
    if (ev->expected_known)
        return ev->unexpected;
    if (ev->expected.n)
        return !str_same(ev->expected, ev->status);
    return !(str_eq(ev->status, "PASS") || str_eq(ev->status, "OK") || str_eq(ev->status, "SKIP") ||
             str_eq(ev->status, "NOTRUN"));
}

const char *color_for(struct tl_str status, bool unexpected)
{
    /* a hung test is not a skipped one: each its own colour */
    if (str_eq(status, "TIMEOUT"))
        return "purple";
    if (str_eq(status, "SKIP"))
        return "yellow";
    if (status_is(status, "CRASH", "ERROR"))
        return "red";
    return unexpected ? "orange" : "green";
}

/* The short name of a test (the chart's label): the id without a path-like prefix. The prefix is
 * cut only where the id starts as a file path ("dom/base/test/test_a.html",
 * "tests/test_x.py::test_y[a/b]"): the part before the first byte that ends a path ('[', '(',
 * ':', '?', '#') must end in a file name with an extension. Slashes elsewhere are part
 * of the name: a parametrised id "test_x[Fake.Region/Abc]", a typed gtest "ATypedDeathTest/0.
 * ShouldRunFirst", a go subtest "TestX/sub". */
static struct tl_str short_name(struct tl_str id)
{
    /* the first byte that ends a path, its last '/' and the last '.' after that (memchr and
     * memrchr: a few vector steps where a loop would take one branch a byte) */
    if (!id.n)
        return id;
    size_t end = id.n;
    static const char stops[] = "[(:?#";
    for (const char *c = stops; *c; c++) {
        const char *q = memchr(id.p, *c, end);
        if (q)
            end = (size_t)(q - id.p);
    }
    const char *sl = memrchr(id.p, '/', end);
    if (!sl || sl + 1 == id.p + id.n)
        return id;
    size_t slash = (size_t)(sl - id.p);
    const char *dt = memrchr(sl, '.', end - slash);
    if (!dt)
        return id;
    size_t dot = (size_t)(dt - id.p);
    /* an extension: 1 to 6 lower-case letters and digits, starting with a letter */
    size_t ext = end - dot - 1;
    bool ok = ext >= 1 && ext <= 6 && id.p[dot + 1] >= 'a' && id.p[dot + 1] <= 'z';
    for (size_t i = dot + 1; ok && i < end; i++)
        ok = (id.p[i] >= 'a' && id.p[i] <= 'z') || is_digit(id.p[i]);
    if (!ok)
        return id;
    return tl_str_make(id.p + slash + 1, id.n - slash - 1);
}

/* A result's message as the markers and the summary keep it: at most TESTLOG_MESSAGE_MAX bytes
 * (a UTF-8 character is never cut), so that a harness that prints a whole log as the message
 * costs the profile no more than this per test. */
static struct tl_str bounded_message(struct tl_str m)
{
    m = tl_trim(m);
    if (m.n > TESTLOG_MESSAGE_MAX)
        m.n = utf8_valid_prefix(m.p, TESTLOG_MESSAGE_MAX);
    return m;
}

/* ---- payload text ----
 * The payloads and state lines written for every test are spelled out as text, keys and commas
 * included: the same bytes jsonw's structured calls give (the golden files hold them to it), at a
 * fraction of the cost — strings that need no escaping are copied whole, numbers are formatted
 * without printf, and appending a piece is a bounds check and a memcpy. */

__attribute__((noinline)) bool ob_grow(struct obuf *b, size_t more)
{
    if (b->failed)
        return false;
    size_t cap = b->cap ? b->cap : 512;
    while (cap - b->n < more + 1) { /* + 1: room for the final NUL */
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}


/* s escaped for a JSON string, without quotes. */
static void put_escaped(struct testlog *tl, const char *p, size_t n)
{
    if (json_plain_prefix(p, n) == n) {
        if (n)
            ob_put(&tl->ob, p, n);
        return;
    }
    jsonw_reset(&tl->esc);
    jsonw_escape(&tl->esc, p, n);
    if (jsonw_failed(&tl->esc))
        tl->ob.failed = true;
    else
        ob_put(&tl->ob, tl->esc.buf, tl->esc.len);
}

/* A JSON string value. */
#define LEAK_ID_MAX 1024 /* bytes of a test id handed to the leak probe */

void put_str(struct testlog *tl, const char *p, size_t n)
{
    PUT(&tl->ob, "\"");
    put_escaped(tl, p, n);
    PUT(&tl->ob, "\"");
}

void put_cstr(struct testlog *tl, const char *s) { put_str(tl, s, strlen(s)); }

/* A message and, when it has several lines, the same lines as a list in field lines. */
void put_message(struct testlog *tl, const struct marker_field *f, const struct marker_field *lines,
                        struct tl_str msg)
{
    put_field(&tl->ob, f);
    put_str(tl, msg.p, msg.n);
    size_t n = msg.n;
    while (n && (msg.p[n - 1] == '\n' || msg.p[n - 1] == '\r'))
        n--;
    if (!memchr(msg.p, '\n', n))
        return;
    put_field(&tl->ob, lines);
    PUT(&tl->ob, "[");
    for (const char *p = msg.p, *e = msg.p + n; p <= e;) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *end = nl ? nl : e;
        size_t len = (size_t)(end - p);
        if (len && p[len - 1] == '\r')
            len--;
        if (p != msg.p)
            PUT(&tl->ob, ",");
        put_str(tl, p, len);
        p = end + 1;
    }
    PUT(&tl->ob, "]");
}

static void put_uint(struct obuf *b, uint64_t v)
{
    char tmp[24], *p = jsonw_digits_before(tmp + sizeof tmp, v);
    ob_put(b, p, (size_t)(tmp + sizeof tmp - p));
}

static void put_int(struct obuf *b, int64_t v)
{
    if (v < 0)
        PUT(b, "-");
    put_uint(b, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* Milliseconds from profile time 0 to t (negative before it), as jsonw_double(v, 3) writes them. */
static void put_rel_ms(struct testlog *tl, uint64_t t)
{
    char tmp[32];
    bool neg = t < tl->cfg.t0_ns;
    ob_put(&tl->ob, tmp, tl_fmt_ms3(tmp, neg, neg ? tl->cfg.t0_ns - t : t - tl->cfg.t0_ns));
}

/* ---- state lines ---- */

/* "id" or "scope<sep>id", sep already escaped */
static void put_scoped(struct testlog *tl, struct tl_str scope, const char *sep, struct tl_str id)
{
    struct obuf *b = &tl->ob;
    PUT(b, "\"");
    if (scope.n) {
        put_escaped(tl, scope.p, scope.n);
        ob_put(b, sep, strlen(sep));
    }
    put_escaped(tl, id.p, id.n);
    PUT(b, "\"");
}

/* ,"test":full name,"name":short name[,"scope":scope] of a Test payload */
static void put_names(struct testlog *tl, struct tl_str scope, struct tl_str id)
{
    struct obuf *b = &tl->ob;
    put_field(b, &test_fields[TEST_TEST]);
    put_scoped(tl, scope, "/", id);
    struct tl_str sn = short_name(id);
    put_field(b, &test_fields[TEST_NAME]);
    put_str(tl, sn.p, sn.n);
    if (scope.n) {
        put_field(b, &test_fields[TEST_SCOPE]);
        put_str(tl, scope.p, scope.n);
    }
}

/* ,"key":"id" or ,"key":"scope\u001fid" */
static void put_key(struct testlog *tl, struct tl_str scope, struct tl_str id)
{
    PUT(&tl->ob, ",\"key\":");
    put_scoped(tl, scope, "\\u001f", id);
}

void state_close(struct testlog *tl, const char *kind, struct tl_str scope, struct tl_str id)
{
    if (!tl->sink.state)
        return;
    struct obuf *b = &tl->ob;
    ob_reset(b);
    PUT(b, "{\"type\":\"close\",\"kind\":");
    put_cstr(tl, kind);
    put_key(tl, scope, id);
    PUT(b, "}");
    if (ob_end(b))
        marker_state(&tl->sink, b->p, b->n);
}

/* The stream's open line of a test: a killed run recovers the test from it. */
static void state_open(struct testlog *tl, struct open_test *ot, uint64_t t)
{
    ot->open_line = 0;
    if (!tl->sink.state)
        return;
    struct obuf *b = &tl->ob;
    ob_reset(b);
    PUT(b, "{\"type\":\"open\",\"kind\":\"test\"");
    put_key(tl, sbuf_str(&ot->scope), sbuf_str(&ot->id));
    PUT(b, ",\"name\":\"test\",\"startTime\":");
    put_rel_ms(tl, t);
    PUT(b, ",\"category\":");
    put_int(b, CAT_TASKS);
    PUT(b, ",\"cost\":true,\"data\":{\"type\":\"Test\"");
    put_names(tl, sbuf_str(&ot->scope), sbuf_str(&ot->id));
    PUT(b, "}}");
    if (ob_end(b))
        ot->open_line = marker_state_open(&tl->sink, b->p, b->n);
}

/* The test's close line, unless its open line could still be taken back: then neither is
 * written (a test that began and ended in one chunk of output). */
static void close_line(struct testlog *tl, const struct open_test *ot)
{
    if (!marker_state_retract(&tl->sink, ot->open_line))
        state_close(tl, "test", sbuf_str(&ot->scope), sbuf_str(&ot->id));
}

void state_open_text(struct testlog *tl, const char *kind, struct tl_str name, uint64_t start)
{
    if (!tl->sink.state)
        return;
    struct obuf *b = &tl->ob;
    ob_reset(b);
    PUT(b, "{\"type\":\"open\",\"kind\":");
    put_cstr(tl, kind);
    put_key(tl, tl_str_make("", 0), name);
    PUT(b, ",\"name\":");
    put_cstr(tl, kind);
    PUT(b, ",\"startTime\":");
    put_rel_ms(tl, start);
    PUT(b, ",\"category\":");
    put_int(b, CAT_TASKS);
    PUT(b, ",\"data\":{\"type\":\"Text\"");
    put_field(b, &marker_text_type.fields[TEXT_TEXT]);
    put_str(tl, name.p, name.n);
    PUT(b, "}}");
    if (ob_end(b))
        marker_state(&tl->sink, b->p, b->n);
}

/* ---- tests ---- */

/* A result kept for the summary: its strings are copies. */
static struct testlog_result result_copy(const struct testlog_result *r, struct tl_str scope,
                                         struct tl_str id, struct tl_str status,
                                         struct tl_str expected, struct tl_str message)
{
    struct testlog_result c = *r;
    char *t = malloc(scope.n + 1 + id.n + 1);
    if (t) {
        size_t o = 0;
        if (scope.n) {
            memcpy(t, scope.p, scope.n);
            t[scope.n] = '/';
            o = scope.n + 1;
        }
        memcpy(t + o, id.p, id.n);
        t[o + id.n] = '\0';
    }
    c.test = t;
    c.scope_len = t ? scope.n : 0;
    c.status = strndup_or_null(status.p, status.n);
    c.expected = expected.n ? strndup_or_null(expected.p, expected.n) : NULL;
    c.message = message.n ? strndup_or_null(message.p, message.n) : NULL;
    return c;
}

static void record_result(struct testlog *tl, struct tl_str scope, struct tl_str id,
                          struct tl_str status, struct tl_str expected, struct tl_str message,
                          bool unexpected, uint64_t dur, uint64_t cpu, uint64_t rss, struct tl_str amends)
{
    uint64_t *was = amends.n ? &tl->stats.by_status[testlog_status_index(amends.p, amends.n)] : NULL;
    if (was && *was && tl->stats.tests) { /* the same test, counted once: with this result */
        tl->stats.tests--;
        (*was)--;
    }
    tl->stats.tests++;
    tl->stats.by_status[testlog_status_index(status.p, status.n)]++;
    struct testlog_result r = {0};
    /* an amending result is the test's, already among the slowest by its earlier one's time */
    bool slow = !amends.n && (tl->nslowest < TESTLOG_SLOWEST_MAX ||
                              dur > tl->slowest[TESTLOG_SLOWEST_MAX - 1].duration_ns);
    if (unexpected)
        tl->stats.unexpected++;
    bool keep_unexp = unexpected && tl->nunexp < TESTLOG_UNEXPECTED_MAX;
    if (!slow && !keep_unexp)
        return;
    r.duration_ns = dur;
    r.cpu_ns = cpu;
    r.max_rss = rss;
    if (slow) {
        struct testlog_result s = result_copy(&r, scope, id, status, expected, tl_str_make("", 0));
        size_t pos;
        if (tl->nslowest == TESTLOG_SLOWEST_MAX) {
            pos = TESTLOG_SLOWEST_MAX - 1;
            result_release(&tl->slowest[pos]);
        } else
            pos = tl->nslowest++;
        while (pos > 0 && tl->slowest[pos - 1].duration_ns < dur) {
            tl->slowest[pos] = tl->slowest[pos - 1];
            pos--;
        }
        tl->slowest[pos] = s;
    }
    if (keep_unexp) {
        if (!tl->unexp) {
            tl->unexp = calloc(TESTLOG_UNEXPECTED_MAX, sizeof *tl->unexp);
            if (!tl->unexp)
                return;
        }
        tl->unexp[tl->nunexp++] = result_copy(&r, scope, id, status, expected, message);
    }
}

/* ---- anchors: instants a test without an opener may have started at (TLE_ANCHOR) ---- */

/* Note what the tree had spent at ns (probed now: the caller is handling what arrived at ns). */
static void note_anchor_cpu(struct testlog *tl, uint64_t ns, uint64_t cpu, bool have_cpu)
{
    if (tl->nanchors && tl->anchors[(tl->anchor_head + TL_ANCHORS - 1) % TL_ANCHORS].ns == ns)
        return; /* the lines of one chunk share their arrival */
    struct anchor *a = &tl->anchors[tl->anchor_head];
    a->ns = ns;
    a->cpu = cpu;
    a->have_cpu = have_cpu;
    a->max_rss = probe_rss(tl);
    tl->anchor_head = (tl->anchor_head + 1) % TL_ANCHORS;
    if (tl->nanchors < TL_ANCHORS)
        tl->nanchors++;
}

void note_anchor(struct testlog *tl, uint64_t ns)
{
    if (tl->nanchors && tl->anchors[(tl->anchor_head + TL_ANCHORS - 1) % TL_ANCHORS].ns == ns)
        return;
    bool ok;
    uint64_t cpu = probe_cpu(tl, &ok);
    note_anchor_cpu(tl, ns, cpu, ok);
}

static const struct anchor *find_anchor(const struct testlog *tl, uint64_t ns)
{
    for (unsigned i = 1; ns && i <= tl->nanchors; i++) {
        const struct anchor *a = &tl->anchors[(tl->anchor_head + TL_ANCHORS - i) % TL_ANCHORS];
        if (a->ns == ns)
            return a->have_cpu ? a : NULL;
    }
    return NULL;
}

/* The anchor nearest ns, if one later than after is within slack of it. */
static const struct anchor *anchor_near(const struct testlog *tl, uint64_t ns, uint64_t after,
                                        uint64_t slack)
{
    const struct anchor *best = NULL;
    uint64_t best_d = slack;
    for (unsigned i = 0; i < tl->nanchors; i++) {
        const struct anchor *a = &tl->anchors[i];
        uint64_t d = a->ns > ns ? a->ns - ns : ns - a->ns;
        if (a->have_cpu && a->ns > after && d <= best_d) {
            best = a;
            best_d = d;
        }
    }
    return best;
}

/* How far a producer's duration may exceed the arrival interval it is compared with (its own
 * rounding: go prints 0.01 s steps), and how far from a test's start its anchor may be. */
static uint64_t slack_ns(uint64_t d) { return 10000000 + d / 20; }

/* How much shorter than the producer's duration the interval from its start line may be before
 * the start line counts as late. A quarter more than the rounding slack: a supervisor that is
 * starved of CPU reads a start line some milliseconds after it was written, which shortens the
 * interval a little (the test is then timed by its duration and costed from its start line, a
 * little short); a start line held in a buffer, or printed with the result, shortens it to
 * (almost) nothing. */
static uint64_t late_start_ns(uint64_t d) { return slack_ns(d) + d / 4; }

/* Emit the test marker for a result; ot is the open test (NULL: no start seen). The cost is
 * known from the open test's start, or from the anchor a test without an opener started at.
 *
 * A producer's duration longer than the open test's interval means the start line came late
 * (output held in a stdio buffer; a reporter that prints a test with its result): the duration is
 * the truth then, and the cost since the start line is not the test's. The test then goes as one
 * without an opener: it starts duration_ms before its end, and its cost is known only from an
 * anchor at that start (a later one misses part of the test, an earlier one adds what ran before
 * it). */
static void emit_test(struct testlog *tl, const struct open_test *ot, struct tl_str scope,
                      struct tl_str id, const struct tl_event *ev, uint64_t end)
{
    tl->last_unannounced = !ot;
    if (!ot) {
        int n = snprintf(tl->last_name, sizeof tl->last_name, "%.*s%s", (int)MIN(scope.n, 128), scope.p,
                         scope.n ? "/" : "");
        snprintf(tl->last_name + n, sizeof tl->last_name - (size_t)n, "%.*s", (int)MIN(id.n, 255), id.p);
    }
    uint64_t start = end;
    bool cost = false;
    uint64_t cpu = 0, rss = 0;
    double dms = ev->t.duration_ms;
    bool have_dur = isfinite(dms) && dms > 0 && dms < 1e12;
    uint64_t dur = have_dur ? (uint64_t)(dms * 1e6) : 0;
    const struct open_test *by = ot; /* the open test that times it */
    bool late_end = false, read_late = false;
    if (by) {
        start = by->start_ns;
        if (end < start)
            end = start;
        if (have_dur && dur > end - start + late_start_ns(dur))
            by = NULL; /* a late start line */
        else if (have_dur && dur > end - start + slack_ns(dur))
            read_late = true; /* its start line was read a little late: the duration times it */
        else if (have_dur && ev->t.late && dur + slack_ns(dur) < end - start)
            late_end = true;
    }
    if (late_end) {
        /* The result line came late: the test ended dur after its start. Its cost is known when
         * an anchor (another test's start, most often the next subtest's) is near that end; the
         * peak RSS since its start is not its own. */
        end = start + dur;
        const struct anchor *to = anchor_near(tl, end, start, slack_ns(dur));
        if (to && by->have_cpu) {
            cpu = to->cpu > by->cpu_start ? to->cpu - by->cpu_start : 0;
            cost = true;
        }
    } else if (by) {
        if (by->have_cpu) {
            bool ok;
            uint64_t now = probe_cpu(tl, &ok);
            cpu = now > by->cpu_start ? now - by->cpu_start : 0;
            rss = MAX(by->max_rss, probe_rss(tl));
            cost = ok;
        }
        if (read_late)
            start = MAX(dur < end ? end - dur : 0, tl->cfg.t0_ns);
    } else {
        start = dur < end ? end - dur : 0;
        if (start < tl->cfg.t0_ns && end >= tl->cfg.t0_ns)
            start = tl->cfg.t0_ns; /* nothing starts before the run */
        const struct anchor *from = find_anchor(tl, ev->t.since_ns);
        if (from && from->ns <= start + slack_ns(dur) && from->ns + slack_ns(dur) >= start) {
            /* A result decided on a later line ends at its own anchor when it has one. */
            const struct anchor *to =
                ev->t.when == TL_AT_EARLIER_LINE ? find_anchor(tl, ev->t.ns) : NULL;
            bool ok = true;
            uint64_t now = to ? to->cpu : probe_cpu(tl, &ok);
            cpu = now > from->cpu ? now - from->cpu : 0;
            rss = to ? from->max_rss : MAX(from->max_rss, probe_rss(tl));
            cost = ok;
        }
    }
    bool unexpected = is_unexpected(ev);
    struct obuf *b = &tl->ob;
    ob_reset(b);
    PUT(b, "{\"type\":\"Test\"");
    put_names(tl, scope, id);
    put_field(b, &test_fields[TEST_STATUS]);
    put_str(tl, ev->status.p, ev->status.n);
    if (ev->expected.n && !str_same(ev->expected, ev->status)) {
        put_field(b, &test_fields[TEST_EXPECTED]);
        put_str(tl, ev->expected.p, ev->expected.n);
    }
    if (!unexpected && !(str_eq(ev->status, "PASS") || str_eq(ev->status, "OK") || str_eq(ev->status, "SKIP") ||
                         str_eq(ev->status, "NOTRUN"))) {
        put_field(b, &test_fields[TEST_OUTCOME]);
        put_cstr(tl, str_eq(ev->status, "FAIL") ? "expected failure" : "expected");
    }
    struct tl_str msg = bounded_message(ev->message);
    if (msg.n)
        put_message(tl, &test_fields[TEST_MESSAGE], &test_fields[TEST_MESSAGE_LINES], msg);
    int64_t tf = ev->timeoutfactor ? ev->timeoutfactor : (ot ? ot->timeoutfactor : 0);
    if (tf) {
        put_field(b, &test_fields[TEST_TIMEOUTFACTOR]);
        put_int(b, tf);
    }
    if (ev->amends.n) {
        put_field(b, &test_fields[TEST_AMENDS]);
        put_str(tl, ev->amends.p, ev->amends.n);
    }
    put_field(b, &test_fields[TEST_COLOR]);
    put_cstr(tl, color_for(ev->status, unexpected));
    if (cost) {
        char tmp[32];
        put_field(b, &test_fields[TEST_CPU]);
        ob_put(b, tmp, tl_fmt_ms3(tmp, false, cpu));
        if (rss) { /* 0: no sample while it ran (unknown, not zero) */
            put_field(b, &test_fields[TEST_RSS]);
            put_uint(b, rss);
        }
    }
    if (tl->probe.leaked && !tl->finishing && start >= tl->cfg.t0_ns) {
        char test[LEAK_ID_MAX], cmds[512];
        snprintf(test, sizeof test, "%.*s", (int)MIN(id.n, sizeof test - 1), id.p);
        size_t n = tl->probe.leaked(tl->probe.ctx, test, start, cmds, sizeof cmds);
        if (n) {
            put_field(b, &test_fields[TEST_LEAKED]);
            put_uint(b, n);
            put_field(b, &test_fields[TEST_LEAKED_CMDS]);
            put_str(tl, cmds, strlen(cmds));
            tl->stats.leaking_tests++;
            tl->stats.leaked += n;
        }
    }
    PUT(b, "}");
    if (ob_end(b))
        marker_emit(&tl->sink, "test", start, end, CAT_TASKS, b->p, b->n);
    if (unexpected) {
        ob_reset(b);
        PUT(b, "{\"type\":\"TestResult\"");
        put_field(b, &result_fields[RESULT_TEST]);
        put_scoped(tl, scope, "/", id);
        put_field(b, &result_fields[RESULT_STATUS]);
        put_str(tl, ev->status.p, ev->status.n);
        if (ev->expected.n && !str_same(ev->expected, ev->status)) {
            put_field(b, &result_fields[RESULT_EXPECTED]);
            put_str(tl, ev->expected.p, ev->expected.n);
        }
        if (msg.n)
            put_message(tl, &result_fields[RESULT_MESSAGE], &result_fields[RESULT_MESSAGE_LINES], msg);
        put_field(b, &result_fields[RESULT_COLOR]);
        put_cstr(tl, color_for(ev->status, unexpected));
        PUT(b, "}");
        if (ob_end(b))
            marker_emit(&tl->sink, "unexpected result", end, MARKER_INSTANT, CAT_OTHER, b->p, b->n);
    }
    record_result(tl, scope, id, ev->status, ev->expected, msg, unexpected, end - start, cpu, rss, ev->amends);
}

uint64_t open_cost(size_t id_n, size_t scope_n)
{
    return sizeof(struct open_test) + id_n + scope_n + 2;
}

/* Close open test i with ev's result at end, and remove it from the table. */
static void close_open(struct testlog *tl, size_t i, const struct tl_event *ev, uint64_t end)
{
    struct open_test *ot = &tl->open[i];
    emit_test(tl, ot, sbuf_str(&ot->scope), sbuf_str(&ot->id), ev, end);
    close_line(tl, ot);
    /* keep order; keep the slot's buffers for reuse by moving it to the end */
    struct open_test keep = *ot;
    tl->open_bytes -= open_cost(ot->id.n, ot->scope.n);
    memmove(&tl->open[i], &tl->open[i + 1], (tl->nopen - i - 1) * sizeof *tl->open);
    tl->nopen--;
    keep.id.n = keep.scope.n = 0;
    tl->open[tl->nopen] = keep;
}

void close_with_status(struct testlog *tl, size_t i, const char *status, const char *message,
                              uint64_t end)
{
    struct tl_event ev;
    tl_event_init(&ev, TLE_TEST_END);
    ev.status = tl_str_make(status, strlen(status));
    if (message)
        ev.message = tl_str_make(message, strlen(message));
    close_open(tl, i, &ev, end);
}

/* An open test's cost counts from t: from the anchor at t when there is one (a line that began
 * before it was complete), else from now, which becomes an anchor (where an earlier test, whose
 * result comes late, may have ended). */
static void cost_from(struct testlog *tl, struct open_test *ot, uint64_t t)
{
    const struct anchor *a = find_anchor(tl, t);
    if (a) {
        ot->cpu_start = a->cpu;
        ot->have_cpu = true;
        ot->max_rss = a->max_rss;
        return;
    }
    ot->cpu_start = probe_cpu(tl, &ot->have_cpu);
    ot->max_rss = probe_rss(tl);
    note_anchor_cpu(tl, t, ot->cpu_start, ot->have_cpu);
}

ssize_t find_open(const struct testlog *tl, struct tl_str id, struct tl_str scope, bool any_scope)
{
    for (size_t i = tl->nopen; i > 0; i--) {
        const struct open_test *ot = &tl->open[i - 1];
        if (str_same(sbuf_str(&ot->id), id) && (any_scope || str_same(sbuf_str(&ot->scope), scope)))
            return (ssize_t)(i - 1);
    }
    return -1;
}

void test_start(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    struct tl_str id = ev->id;
    if (id.n > TL_ID_MAX)
        id.n = utf8_valid_prefix(id.p, TL_ID_MAX);
    ssize_t dup = find_open(tl, id, ev->scope, false);
    if (dup >= 0) /* started again without an end: the first run never finished */
        close_with_status(tl, (size_t)dup, "INCOMPLETE", NULL, t);
    struct tl_str scope = ev->scope;
    if (scope.n > TL_ID_MAX)
        scope.n = utf8_valid_prefix(scope.p, TL_ID_MAX);
    if (tl->open_bytes + open_cost(id.n, scope.n) > TESTLOG_OPEN_BYTES_MAX)
        return; /* no room: its end will come as a test without a start */
    if (tl->nopen == tl->open_cap) {
        size_t cap = tl->open_cap ? tl->open_cap * 2 : 16;
        struct open_test *o = realloc(tl->open, cap * sizeof *o);
        if (!o)
            return;
        memset(o + tl->open_cap, 0, (cap - tl->open_cap) * sizeof *o);
        tl->open = o;
        tl->open_cap = cap;
    }
    struct open_test *ot = &tl->open[tl->nopen];
    if (sbuf_set(&ot->id, id.p, id.n) < 0 || sbuf_set(&ot->scope, scope.p, scope.n) < 0)
        return;
    tl->open_bytes += open_cost(id.n, scope.n);
    ot->start_ns = t;
    ot->tail = 0;
    ot->tail_seen = false;
    cost_from(tl, ot, t);
    ot->timeoutfactor = ev->timeoutfactor;
    tl->nopen++;
    state_open(tl, ot, t);
}


/* Take back the tests the unfinished line of stream (1, 2) opened from its tail and its last
 * reading did not start again: the whole line (or the tail as it now stands) says what it holds. Their open lines are retracted or closed, and no marker is made. */
void untail(struct testlog *tl, int stream)
{
    for (size_t i = tl->nopen; i-- > 0;) {
        if (tl->open[i].tail != stream || tl->open[i].tail_seen)
            continue;
        close_line(tl, &tl->open[i]);
        struct open_test keep = tl->open[i];
        memmove(&tl->open[i], &tl->open[i + 1], (tl->nopen - i - 1) * sizeof *tl->open);
        tl->nopen--;
        keep.tail = 0;
        tl->open[tl->nopen] = keep;
    }
}

/* A paused test runs again from t: its time and cost start here (go's own elapsed time does not
 * count the pause either). */
void test_resume(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    ssize_t i = find_open(tl, ev->id, ev->scope, !ev->scope.n);
    if (i < 0)
        return;
    struct open_test *ot = &tl->open[i];
    if (t < ot->start_ns)
        return;
    ot->start_ns = t;
    cost_from(tl, ot, t);
    /* The stream's open line moves too (close, then open again from here), so a run killed
     * while the test runs recovers it from its CONT as a finished run's marker starts there. */
    close_line(tl, ot);
    state_open(tl, ot, t);
}

void test_end(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    ssize_t i;
    if (!ev->id.n)
        i = tl->nopen ? (ssize_t)tl->nopen - 1 : -1;
    else {
        struct tl_str id = ev->id;
        if (id.n > TL_ID_MAX)
            id.n = utf8_valid_prefix(id.p, TL_ID_MAX);
        i = find_open(tl, id, ev->scope, false);
        if (i < 0 && !ev->scope.n)
            i = find_open(tl, id, ev->scope, true);
        if (i < 0) {
            /* ended without a start we saw (or ended twice): still a result worth showing */
            tl->stats.ends_unmatched++;
            emit_test(tl, NULL, ev->scope, id, ev, t);
            return;
        }
    }
    if (i < 0) {
        tl->stats.ends_unmatched++;
        return;
    }
    close_open(tl, (size_t)i, ev, t);
}

/* A late message (TLE_TEST_MESSAGE): the failure text of a test that has already ended. Its
 * marker is in the stream: a message line follows, which the stream's readers (profile.h,
 * results.h) give the test's marker when that has no message, or one the line cut (text_cut_of:
 * the whole reason of a skip after its cut one); the summary's copy of the result gets it the
 * same way. Nothing is kept per test here: a message for a test that never ended (a
 * pytest collection error) names no marker, and the readers pass it by. */
void test_message(struct testlog *tl, const struct tl_event *ev)
{
    struct tl_str id = ev->id, scope = ev->scope, msg = bounded_message(ev->message);
    if (id.n > TL_ID_MAX)
        id.n = utf8_valid_prefix(id.p, TL_ID_MAX);
    if (scope.n > TL_ID_MAX)
        scope.n = utf8_valid_prefix(scope.p, TL_ID_MAX);
    if (!id.n || !msg.n)
        return;
    size_t full = scope.n ? scope.n + 1 + id.n : id.n;
    for (size_t i = 0; i < tl->nunexp; i++) {
        struct testlog_result *r = &tl->unexp[i];
        const char *t = r->test;
        if ((r->message && !text_cut_of(r->message, strlen(r->message), msg.p, msg.n)) || !t || strlen(t) != full ||
            (ev->status.n && (!r->status || !str_eq(ev->status, r->status))) ||
            (scope.n && (memcmp(t, scope.p, scope.n) || t[scope.n] != '/')) ||
            memcmp(t + full - id.n, id.p, id.n))
            continue;
        free((char *)r->message);
        r->message = strndup_or_null(msg.p, msg.n);
        r->where = ev->stack.n && ev->stack.n < TESTLOG_MESSAGE_MAX ? strndup_or_null(ev->stack.p, ev->stack.n) : NULL;
        break;
    }
    if (!tl->sink.state)
        return;
    struct obuf *b = &tl->ob;
    ob_reset(b);
    PUT(b, "{\"type\":\"message\"");
    put_field(b, &test_fields[TEST_TEST]);
    put_scoped(tl, scope, "/", id);
    put_field(b, &test_fields[TEST_MESSAGE]);
    put_str(tl, msg.p, msg.n);
    if (ev->status.n) {
        put_field(b, &test_fields[TEST_STATUS]);
        put_str(tl, ev->status.p, ev->status.n);
    }
    if (ev->stack.n && ev->stack.n < TESTLOG_MESSAGE_MAX) { /* for an annotation's file and line */
        PUT(b, ",\"where\":");
        put_str(tl, ev->stack.p, ev->stack.n);
    }
    PUT(b, "}");
    if (ob_end(b))
        marker_state(&tl->sink, b->p, b->n);
}
