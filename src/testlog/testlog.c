/* testlog.c — see testlog.h. The per-format parsers live in testlog/formats/<format>.c and speak
 * testlog/event.h; this file strips lines for matching, dispatches them, pairs test starts with
 * ends and writes the markers.
 *
 * Hot path: each format declares which first bytes and byte pairs its lines can start with (and
 * whether a '.' in the first word may make a line its own, and when it is busy waiting for a
 * continuation that any line may bring); a table indexed by a line's first two bytes then names
 * the parsers to call, so a line no parser can take costs a table look-up and no call. That
 * decision is made before the line is stripped (surely_untaken): CI prefixes are read in the
 * line's first 64 bytes when those hold no escape, and anything undecided there takes the exact
 * path (strip, then look up). no_prefilter in the config turns all of this off, which the unit
 * and fuzz tests use as the reference. Nothing is allocated per line. A test costs one slot in
 * the open-test table (whose string buffers are reused) and one payload spelled out as text in a
 * reused buffer (see "payload text").
 */
#include "testlog/testlog.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/jsonw.h"
#include "base/util.h"
#include "testlog/event.h"
#include "testlog/formats.h"

/* The formats in priority order (test-logs.md). A format whose parser is not part of this build
 * is simply not listed: --parse still accepts its name, and its bit selects nothing. */
static const struct tl_format *const format_table[] = {
#define TL_FORMAT(var, NAME, alias) &tl_format_##var,
#include "testlog/registry.h"
#undef TL_FORMAT
};

/* A set of parsers, by slot index: the prefilter's masks. */
typedef uint32_t fmt_mask;
_Static_assert(ARRAY_SIZE(format_table) <= 32, "prefilter masks are 32 bits");
_Static_assert(ARRAY_SIZE(format_table) == TL_FMT_COUNT, "one parser a format");

/* The names --parse accepts: each format's own (tl_format.name) and its alias (an alias of NULL
 * leaves a second entry that never matches). */
static const struct name_bit format_names[] = {
#define TL_FORMAT(var, NAME, alias) {#var, TL_FMT_##NAME}, {alias ? alias : "", TL_FMT_##NAME},
#include "testlog/registry.h"
#undef TL_FORMAT
};

static const char *const status_names[TL_STATUS_COUNT] = {
    [TL_STATUS_PASS] = "PASS",
    [TL_STATUS_FAIL] = "FAIL",
    [TL_STATUS_OK] = "OK",
    [TL_STATUS_ERROR] = "ERROR",
    [TL_STATUS_TIMEOUT] = "TIMEOUT",
    [TL_STATUS_CRASH] = "CRASH",
    [TL_STATUS_ASSERT] = "ASSERT",
    [TL_STATUS_PRECONDITION_FAILED] = "PRECONDITION_FAILED",
    [TL_STATUS_SKIP] = "SKIP",
    [TL_STATUS_NOTRUN] = "NOTRUN",
    [TL_STATUS_INCOMPLETE] = "INCOMPLETE",
    [TL_STATUS_OTHER] = "OTHER",
};

/* ---- marker types (markers.h): tests, their statuses and crashes, mozlog's processes -------- */

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

enum { STATUS_MESSAGE, STATUS_MESSAGE_LINES, STATUS_TEST, STATUS_SUBTEST, STATUS_STACK, STATUS_COLOR };
static const struct marker_field status_fields[] = {
    [STATUS_MESSAGE] = MARKER_FIELD("message", "Message", "string", MF_OPTIONAL),
    [STATUS_MESSAGE_LINES] = MARKER_FIELD("messageLines", "Message, line by line", "list", MF_OPTIONAL),
    [STATUS_TEST] = MARKER_FIELD("test", "Test Name", "string", MF_OPTIONAL),
    [STATUS_SUBTEST] = MARKER_FIELD("subtest", "Subtest", "string", MF_OPTIONAL),
    /* not "stack": the front-end reserves data.stack for a backtrace object */
    [STATUS_STACK] = MARKER_FIELD("stackTrace", "Stack", "string", MF_OPTIONAL),
    [STATUS_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
};
const struct marker_type testlog_status_type = {
    .name = "TestStatus",
    .table_label = "{marker.data.message} \xe2\x80\x94 {marker.data.test} {marker.data.subtest}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .color_field = "color",
    .fields = status_fields,
    .nfields = ARRAY_SIZE(status_fields),
};

enum { CRASH_SIGNATURE, CRASH_REASON, CRASH_TEST, CRASH_MINIDUMP, CRASH_COLOR };
static const struct marker_field crash_fields[] = {
    [CRASH_SIGNATURE] = MARKER_FIELD("signature", "Signature", "string", MF_OPTIONAL),
    [CRASH_REASON] = MARKER_FIELD("reason", "Reason", "string", MF_OPTIONAL),
    [CRASH_TEST] = MARKER_FIELD("test", "Test Name", "string", MF_OPTIONAL),
    [CRASH_MINIDUMP] = MARKER_FIELD("minidump", "Minidump", "string", MF_OPTIONAL),
    [CRASH_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
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

const struct marker_type testlog_crash_type = {
    .name = "Crash",
    .table_label = "{marker.data.signature} \xe2\x80\x94 {marker.data.test}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .color_field = "color",
    .fields = crash_fields,
    .nfields = ARRAY_SIZE(crash_fields),
};

/* A process a mozlog harness reports (process_start/process_exit): not a process of the tree the
 * sampler saw (the "Process" type), but what the log says, so a type of its own. */
enum { LPROC_CMD, LPROC_PID, LPROC_PROCESS, LPROC_EXIT, LPROC_COLOR };
static const struct marker_field logprocess_fields[] = {
    [LPROC_CMD] = MARKER_FIELD("cmd", "Command line", "string", MF_OPTIONAL),
    [LPROC_PID] = MARKER_FIELD("pid", "Process ID", "pid", MF_OPTIONAL),
    [LPROC_PROCESS] = MARKER_FIELD("process", "Process", "string", MF_OPTIONAL),
    [LPROC_EXIT] = MARKER_FIELD("exit", "Exit", "string", MF_OPTIONAL),
    [LPROC_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
};
const struct marker_type testlog_logprocess_type = {
    .name = "LogProcess",
    .tooltip_label = "{marker.name}: {marker.data.cmd}",
    .table_label = "{marker.data.cmd} \xe2\x80\x94 {marker.data.exit}",
    .chart_label = "{marker.data.cmd}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .color_field = "color",
    .description = "A process the test harness reported in its log",
    .fields = logprocess_fields,
    .nfields = ARRAY_SIZE(logprocess_fields),
};

#define TL_MAX_NEST 64     /* open suites and groups */
#define TL_MAX_PROCS 256   /* open mozlog processes */
#define TL_ID_MAX TESTLOG_ID_MAX

struct sbuf {
    char *p;
    size_t n, cap;
};

struct open_test {
    struct sbuf id, scope;
    uint64_t start_ns, cpu_start, max_rss;
    bool have_cpu;
    int64_t timeoutfactor;
    uint64_t open_line; /* the sink's handle of its open line (markers.h); 0: cannot be taken back */
    uint8_t tail;       /* the stream (1, 2) whose unfinished line's tail opened it; 0: none */
    bool tail_seen;     /* its tail, read again, starts it again */
};

struct open_span { /* a suite, group or process */
    struct sbuf key, text;
    uint64_t start_ns;
    bool group;
};

/* A growable text buffer, NUL-terminated when handed out (ob_end). */
struct obuf {
    char *p;
    size_t n, cap;
    bool failed;
};

struct fmt_slot {
    const struct tl_format *f;
    void *state;
};

struct testlog {
    struct testlog_config cfg;
    struct marker_sink sink;
    struct testlog_probe probe;
    bool finishing; /* testlog_finish closes what is open */
    struct fmt_slot fmts[ARRAY_SIZE(format_table)];
    size_t nfmts;
    /* Prefilter (bits are slot indexes): the parsers that may take, while idle, a line starting
     * with bytes a, b (by_first[a] | pair_rows[pair_row[a]][b]: a first byte some parser takes
     * whatever follows, or a pair named by a parser; row 0 is all zeros) or a line of the one
     * byte a (by_byte[a]); those that also take a line whose first word holds a '.'; those that
     * may ever be busy; those busy now. Rows exist only for the first bytes of named pairs (a
     * few dozen), not a 128 KiB table filled at every start. */
    fmt_mask by_first[256];
    uint8_t pair_row[256];
    fmt_mask (*pair_rows)[256];
    size_t npair_rows;
    fmt_mask by_byte[256];
    fmt_mask dotted, can_busy, busy;
    fmt_mask can_capture, capturing; /* parsers that may capture lines (tl_format.captures); those
                                        that do now: the first of them gets every line alone */

    char *strip;
    size_t strip_cap;
    struct jsonw w;   /* payloads of the rarer markers */
    struct obuf ob;   /* payloads and state lines of tests, written as text */
    struct jsonw esc; /* strings that need escaping, on their way into ob */

    struct open_test *open; /* ordered by start: the most recent is last */
    size_t nopen, open_cap;
    uint64_t open_bytes; /* what the open tests hold (TESTLOG_OPEN_BYTES_MAX) */
    /* A parser's state while it reads an unfinished line's tail (testlog_line_tail): its own is
     * left as it was. */
    void *tail_state;
    struct open_span nest[TL_MAX_NEST];
    size_t nnest;
    struct open_span *procs;
    size_t nprocs;

    /* TLE_ANCHOR instants (a ring, newest at anchor_head - 1): what the tree had spent then */
    struct anchor {
        uint64_t ns, cpu, max_rss;
        bool have_cpu;
    } anchors[TL_ANCHORS];
    unsigned anchor_head, nanchors;

    struct testlog_stats stats;
    /* The last test that ended, when no start line announced it (TAP, pytest without -v print a
     * test only with its result): what a hang in the next one is known by ("after N, name"). */
    bool last_unannounced;
    char last_name[256];
    struct testlog_result slowest[TESTLOG_SLOWEST_MAX];
    size_t nslowest;
    struct testlog_result *unexp;
    size_t nunexp;
};

/* ---- small helpers ---- */

static bool str_eq(struct tl_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static bool str_same(struct tl_str a, struct tl_str b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static int sbuf_set(struct sbuf *b, const char *p, size_t n)
{
    if (n > TL_ID_MAX)
        n = utf8_valid_prefix(p, TL_ID_MAX);
    if (n + 1 > b->cap) {
        size_t cap = n + 1 < 64 ? 64 : n + 1;
        char *q = realloc(b->p, cap);
        if (!q)
            return -ENOMEM;
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p, p, n);
    b->p[n] = '\0';
    b->n = n;
    return 0;
}

static struct tl_str sbuf_str(const struct sbuf *b) { return tl_str_make(b->p ? b->p : "", b->n); }

static char *strndup_or_null(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

int testlog_status_index(const char *status, size_t len)
{
    for (int i = 0; i < TL_STATUS_OTHER; i++)
        if (strlen(status_names[i]) == len && memcmp(status_names[i], status, len) == 0)
            return i;
    return TL_STATUS_OTHER;
}

const char *testlog_status_name(int i)
{
    return i >= 0 && i < TL_STATUS_COUNT ? status_names[i] : NULL;
}

unsigned testlog_available_formats(void)
{
    unsigned m = 0;
    for (size_t i = 0; i < ARRAY_SIZE(format_table); i++)
        if (format_table[i])
            m |= format_table[i]->bit;
    return m;
}

int testlog_parse_formats(const char *arg, unsigned *ret_mask)
{
    if (!arg)
        return -EINVAL;
    if (strcmp(arg, "auto") == 0 || strcmp(arg, "all") == 0) {
        *ret_mask = TL_FMT_ALL;
        return 0;
    }
    if (strcmp(arg, "none") == 0) {
        *ret_mask = 0;
        return 0;
    }
    return parse_name_list(arg, format_names, ARRAY_SIZE(format_names), ret_mask);
}

/* ---- lifecycle ---- */

/* A zeroed row of the prefilter for pairs starting with byte a (a == 0: row 0, which every byte
 * without a row of its own points to). */
static int add_pair_row(struct testlog *tl, unsigned a)
{
    size_t n = tl->npair_rows + 1;
    if (n > UINT8_MAX + 1)
        return -ENOMEM; /* 255 rows: more than there are first bytes in use */
    fmt_mask(*rows)[256] = realloc(tl->pair_rows, n * sizeof *rows);
    if (!rows)
        return -ENOMEM;
    memset(rows[n - 1], 0, sizeof *rows);
    tl->pair_rows = rows;
    tl->npair_rows = n;
    tl->pair_row[a] = (uint8_t)(n - 1);
    return 0;
}

int testlog_new(const struct testlog_config *cfg, const struct marker_sink *sink,
                const struct testlog_probe *probe, struct testlog **ret)
{
    struct testlog *tl = calloc(1, sizeof *tl);
    if (!tl)
        return -ENOMEM;
    tl->cfg = *cfg;
    if (sink)
        tl->sink = *sink;
    if (probe)
        tl->probe = *probe;
    jsonw_init(&tl->w);
    jsonw_init(&tl->esc);
    if (add_pair_row(tl, 0) < 0) {
        testlog_free(tl);
        return -ENOMEM;
    }
    size_t tail_size = 1;
    for (size_t i = 0; i < ARRAY_SIZE(format_table); i++) {
        const struct tl_format *f = format_table[i];
        if (!f || !(cfg->formats & f->bit))
            continue;
        size_t slot = tl->nfmts++;
        struct fmt_slot *s = &tl->fmts[slot];
        s->f = f;
        if (f->state_size > tail_size)
            tail_size = f->state_size;
        if (f->state_size) {
            s->state = calloc(1, f->state_size);
            if (!s->state) {
                testlog_free(tl);
                return -ENOMEM;
            }
        }
        fmt_mask bit = (fmt_mask)(1u << slot);
        bool any = (!f->first_bytes && !f->pairs) || cfg->no_prefilter;
        for (unsigned a = 0; a < 256; a++) {
            if (any || (a && f->first_bytes && strchr(f->first_bytes, (int)a))) {
                tl->by_byte[a] |= bit;
                tl->by_first[a] |= bit;
            }
        }
        for (const char *const *pr = f->pairs; pr && *pr && !any; pr++) {
            unsigned a = (unsigned char)(*pr)[0], b = (unsigned char)(*pr)[1];
            tl->by_byte[a] |= bit;
            if (!tl->pair_row[a] && add_pair_row(tl, a) < 0) {
                testlog_free(tl);
                return -ENOMEM;
            }
            tl->pair_rows[tl->pair_row[a]][b] |= bit;
        }
        if (f->dotted_word)
            tl->dotted |= bit;
        if (f->busy) {
            tl->can_busy |= bit;
            if (f->busy(s->state))
                tl->busy |= bit;
        }
        if (f->captures)
            tl->can_capture |= bit;
    }
    if (!(tl->tail_state = malloc(tail_size))) {
        testlog_free(tl);
        return -ENOMEM;
    }
    *ret = tl;
    return 0;
}

static void span_release(struct open_span *s)
{
    free(s->key.p);
    free(s->text.p);
}

static void result_release(struct testlog_result *r)
{
    free((char *)r->test);
    free((char *)r->status);
    free((char *)r->expected);
    free((char *)r->message);
    free((char *)r->where);
}

void testlog_free(struct testlog *tl)
{
    if (!tl)
        return;
    for (size_t i = 0; i < tl->nfmts; i++) {
        if (tl->fmts[i].state && tl->fmts[i].f->release)
            tl->fmts[i].f->release(tl->fmts[i].state);
        free(tl->fmts[i].state);
    }
    for (size_t i = 0; i < tl->open_cap; i++) {
        free(tl->open[i].id.p);
        free(tl->open[i].scope.p);
    }
    free(tl->open);
    free(tl->tail_state);
    for (size_t i = 0; i < TL_MAX_NEST; i++)
        span_release(&tl->nest[i]);
    if (tl->procs)
        for (size_t i = 0; i < TL_MAX_PROCS; i++)
            span_release(&tl->procs[i]);
    free(tl->procs);
    for (size_t i = 0; i < tl->nslowest; i++)
        result_release(&tl->slowest[i]);
    for (size_t i = 0; i < tl->nunexp; i++)
        result_release(&tl->unexp[i]);
    free(tl->unexp);
    free(tl->strip);
    free(tl->pair_rows);
    jsonw_release(&tl->w);
    jsonw_release(&tl->esc);
    free(tl->ob.p);
    free(tl);
}

/* ---- stripping (for matching only) ---- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

/* Length of a CI prefix at the start of s, 0 if none. */
static size_t ci_prefix(const char *s, size_t n)
{
    /* Taskcluster: "[task 2026-01-01T00:00:00.000Z] " */
    if (n > 8 && memcmp(s, "[task ", 6) == 0) {
        size_t lim = n < 64 ? n : 64;
        for (size_t i = 6; i + 1 < lim; i++)
            if (s[i] == ']')
                return (s[i - 1] == 'Z' && s[i + 1] == ' ') ? i + 2 : 0;
        return 0;
    }
    /* mozharness: "HH:MM:SS     INFO - " (any level word) */
    if (n > 12 && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':' && is_digit(s[3]) &&
        is_digit(s[4]) && s[5] == ':' && is_digit(s[6]) && is_digit(s[7]) && s[8] == ' ') {
        size_t i = 8;
        while (i < n && s[i] == ' ')
            i++;
        size_t w = i;
        while (i < n && is_upper(s[i]))
            i++;
        if (i > w && i + 3 <= n && memcmp(s + i, " - ", 3) == 0)
            return i + 3;
        if (i > w && i + 2 == n && memcmp(s + i, " -", 2) == 0)
            return n;
        return 0;
    }
    /* mochitest: "<n> INFO " */
    if (n > 6 && is_digit(s[0])) {
        size_t i = 0;
        while (i < n && i < 20 && is_digit(s[i]))
            i++;
        if (i + 6 <= n && memcmp(s + i, " INFO ", 6) == 0)
            return i + 6;
    }
    return 0;
}

/* ci_prefix() of a line known only by its first wn bytes (cut: the line goes on beyond them):
 * the same answer, or -1 when it depends on what lies beyond. */
static ssize_t ci_prefix_window(const char *s, size_t wn, bool cut)
{
    /* "n > k" for the whole line's n: 1, 0, or -1 unknown */
#define LEN_GT(k) (wn > (k) ? 1 : cut ? -1 : 0)
    int gt = LEN_GT(8);
    if (gt < 0)
        return -1;
    if (gt && memcmp(s, "[task ", 6) == 0) {
        size_t lim = cut ? 64 : (wn < 64 ? wn : 64);
        for (size_t i = 6; i + 1 < lim; i++) {
            if (i + 1 >= wn)
                return -1;
            if (s[i] == ']')
                return (s[i - 1] == 'Z' && s[i + 1] == ' ') ? (ssize_t)i + 2 : 0;
        }
        return 0;
    }
    if ((gt = LEN_GT(12)) < 0)
        return -1;
    if (gt && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':' && is_digit(s[3]) &&
        is_digit(s[4]) && s[5] == ':' && is_digit(s[6]) && is_digit(s[7]) && s[8] == ' ') {
        size_t i = 8;
        while (i < wn && s[i] == ' ')
            i++;
        size_t w = i;
        while (i < wn && is_upper(s[i]))
            i++;
        if (i == wn && cut)
            return -1;
        if (i > w && i + 3 <= wn && memcmp(s + i, " - ", 3) == 0)
            return (ssize_t)i + 3;
        if (i > w && i + 3 > wn && cut)
            return -1;
        if (i > w && !cut && i + 2 == wn && memcmp(s + i, " -", 2) == 0)
            return (ssize_t)wn;
        return 0;
    }
    if ((gt = LEN_GT(6)) < 0)
        return -1;
    if (gt && is_digit(s[0])) {
        size_t i = 0;
        while (i < wn && i < 20 && is_digit(s[i]))
            i++;
        if (i + 6 > wn)
            return cut ? -1 : 0;
        if (memcmp(s + i, " INFO ", 6) == 0)
            return (ssize_t)i + 6;
    }
    return 0;
#undef LEN_GT
}

/* Copy line without ANSI CSI sequences and charset designations into tl->strip. */
static bool strip_escapes(struct testlog *tl, const char *s, size_t n, const char **out, size_t *outn)
{
    if (n > tl->strip_cap) {
        size_t cap = n < 256 ? 256 : n;
        char *p = realloc(tl->strip, cap);
        if (!p)
            return false;
        tl->strip = p;
        tl->strip_cap = cap;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\x1b') {
            tl->strip[o++] = s[i++];
            continue;
        }
        if (i + 1 < n && s[i + 1] == '[') {
            size_t j = i + 2;
            while (j < n && (unsigned char)s[j] >= 0x20 && (unsigned char)s[j] <= 0x3f)
                j++; /* parameter and intermediate bytes */
            while (j < n && (unsigned char)s[j] >= 0x20 && (unsigned char)s[j] <= 0x2f)
                j++;
            i = j < n ? j + 1 : n; /* final byte 0x40..0x7e */
        } else if (i + 2 < n && (s[i + 1] == '(' || s[i + 1] == ')')) {
            i += 3;
        } else {
            i++;
        }
    }
    *out = tl->strip;
    *outn = o;
    return true;
}

static void strip_line(struct testlog *tl, const char *line, size_t len, const char **ret,
                       size_t *ret_len)
{
    const char *s = line;
    size_t n = len;
    if (n && s[n - 1] == '\r')
        n--;
    if (memchr(s, '\x1b', n)) {
        const char *o;
        size_t on;
        if (strip_escapes(tl, s, n, &o, &on)) {
            s = o;
            n = on;
        }
    }
    for (int k = 0; k < 3; k++) { /* prefixes can stack: [task …] HH:MM:SS INFO - 12 INFO … */
        size_t p = ci_prefix(s, n);
        if (!p)
            break;
        s += p;
        n -= p;
    }
    *ret = s;
    *ret_len = n;
}

/* ---- prefilter ---- */

/* The first word of s (the bytes before its first space, at most 4096) holds a '.' (tl_format).
 * With raw, s is not stripped yet: an escape byte then counts as a '.', since stripping it may
 * reveal one (or join the word with what follows a space inside the escape). */
static bool first_word_dotted(const char *s, size_t n, bool raw)
{
    size_t lim = n < 4096 ? n : 4096;
    for (size_t i = 0; i < lim && s[i] != ' '; i++)
        if (s[i] == '.' || (raw && s[i] == '\x1b'))
            return true;
    return false;
}

/* s[0..n) holds an escape byte: inline, as n is at most 64 here, too short to pay for a call. */
static inline bool has_escape(const char *s, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    const __m128i esc = _mm_set1_epi8('\x1b');
    for (; i + 16 <= n; i += 16)
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(s + i)), esc)))
            return true;
#endif
    for (; i < n; i++)
        if (s[i] == '\x1b')
            return true;
    return false;
}

/* The idle parsers that may take stripped line s (n > 0 bytes) by its first bytes. */
static fmt_mask by_start(const struct testlog *tl, const char *s, size_t n)
{
    unsigned char a = (unsigned char)s[0];
    if (n < 2)
        return tl->by_byte[a];
    return tl->by_first[a] | tl->pair_rows[tl->pair_row[a]][(unsigned char)s[1]];
}

/* True when no parser can take the line (len > 0), decided without stripping it: what stripping
 * would change is looked at only as far as the decision needs (false: undecided, or some parser
 * may take it). */
static bool surely_untaken(const struct testlog *tl, const char *s, size_t n)
{
    if (tl->busy)
        return false;
    if (s[n - 1] == '\r')
        n--;
    if (!n)
        return true;
    if (s[0] == '\x1b')
        return false;
    if (s[0] == '[' || is_digit(s[0])) {
        /* CI prefixes, read in the first 64 bytes when those hold no escape */
        size_t wn = n < 64 ? n : 64;
        bool cut = n > wn;
        if (has_escape(s, wn))
            return false;
        size_t off = 0;
        for (int k = 0; k < 3; k++) {
            ssize_t p = ci_prefix_window(s + off, wn - off, cut);
            if (p < 0)
                return false;
            if (!p)
                break;
            off += (size_t)p;
        }
        if (off == n)
            return true; /* nothing but prefixes */
        if (s[off] == '\x1b')
            return false;
        s += off;
        n -= off;
    }
    /* s[0] is the stripped line's first byte; so is s[1] its second unless an escape starts there */
    fmt_mask cand = n >= 2 && s[1] == '\x1b' ? tl->by_byte[(unsigned char)s[0]] : by_start(tl, s, n);
    return !cand && !(tl->dotted && first_word_dotted(s, n, true));
}

/* ---- time ---- */

static uint64_t event_time(const struct testlog *tl, const struct tl_event *ev, uint64_t line_arrival)
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

static bool is_unexpected(const struct tl_event *ev)
{
    if (ev->expected_known)
        return ev->unexpected;
    if (ev->expected.n)
        return !str_same(ev->expected, ev->status);
    return !(str_eq(ev->status, "PASS") || str_eq(ev->status, "OK") || str_eq(ev->status, "SKIP") ||
             str_eq(ev->status, "NOTRUN"));
}

static const char *color_for(struct tl_str status, bool unexpected)
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

static __attribute__((noinline)) bool ob_grow(struct obuf *b, size_t more)
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

static inline void ob_put(struct obuf *b, const char *s, size_t n)
{
    if (b->cap - b->n <= n && !ob_grow(b, n))
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

#define PUT(b, lit) ob_put((b), (lit), sizeof(lit) - 1)

/* ,"key": of field f of a type's table: payloads spelled out as text still take their keys from
 * the schema (markers.h). */
static void put_field(struct obuf *b, const struct marker_field *f)
{
    PUT(b, ",\"");
    ob_put(b, f->key, f->key_len);
    PUT(b, "\":");
}

static void ob_reset(struct obuf *b)
{
    b->n = 0;
    b->failed = false;
}

/* Terminate; false when the text is incomplete (out of memory). */
static bool ob_end(struct obuf *b)
{
    if (b->cap - b->n < 1 && !ob_grow(b, 0))
        return false;
    b->p[b->n] = '\0';
    return !b->failed;
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

static void put_str(struct testlog *tl, const char *p, size_t n)
{
    PUT(&tl->ob, "\"");
    put_escaped(tl, p, n);
    PUT(&tl->ob, "\"");
}

static void put_cstr(struct testlog *tl, const char *s) { put_str(tl, s, strlen(s)); }

/* A message and, when it has several lines, the same lines as a list in field lines. */
static void put_message(struct testlog *tl, const struct marker_field *f, const struct marker_field *lines,
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

static void state_close(struct testlog *tl, const char *kind, struct tl_str scope, struct tl_str id)
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

static void state_open_text(struct testlog *tl, const char *kind, struct tl_str name, uint64_t start)
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

static void note_anchor(struct testlog *tl, uint64_t ns)
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

static uint64_t open_cost(size_t id_n, size_t scope_n)
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

static void close_with_status(struct testlog *tl, size_t i, const char *status, const char *message,
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

static ssize_t find_open(const struct testlog *tl, struct tl_str id, struct tl_str scope, bool any_scope)
{
    for (size_t i = tl->nopen; i > 0; i--) {
        const struct open_test *ot = &tl->open[i - 1];
        if (str_same(sbuf_str(&ot->id), id) && (any_scope || str_same(sbuf_str(&ot->scope), scope)))
            return (ssize_t)(i - 1);
    }
    return -1;
}

static void test_start(struct testlog *tl, const struct tl_event *ev, uint64_t t)
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
static void untail(struct testlog *tl, int stream)
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
static void test_resume(struct testlog *tl, const struct tl_event *ev, uint64_t t)
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

static void test_end(struct testlog *tl, const struct tl_event *ev, uint64_t t)
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
static void test_message(struct testlog *tl, const struct tl_event *ev)
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
    PUT(b, "}");
    if (ob_end(b))
        marker_state(&tl->sink, b->p, b->n);
}

/* ---- other events ---- */

static void emit_status_instant(struct testlog *tl, const char *name, uint64_t t, struct tl_str test,
                                struct tl_str subtest, struct tl_str message, struct tl_str stack,
                                const char *color)
{
    struct obuf *b = &tl->ob;
    ob_reset(b);
    PUT(b, "{\"type\":\"TestStatus\"");
    if (test.n) {
        put_field(b, &status_fields[STATUS_TEST]);
        put_str(tl, test.p, test.n);
    }
    if (subtest.n) {
        put_field(b, &status_fields[STATUS_SUBTEST]);
        put_str(tl, subtest.p, subtest.n);
    }
    if (message.n)
        put_message(tl, &status_fields[STATUS_MESSAGE], &status_fields[STATUS_MESSAGE_LINES], message);
    if (stack.n) {
        put_field(b, &status_fields[STATUS_STACK]);
        put_str(tl, stack.p, stack.n);
    }
    put_field(b, &status_fields[STATUS_COLOR]);
    put_cstr(tl, color);
    PUT(b, "}");
    if (ob_end(b))
        marker_emit(&tl->sink, name, t, MARKER_INSTANT, CAT_OTHER, b->p, b->n);
}

static void subtest(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    char name[40];
    bool unexpected = is_unexpected(ev);
    tl->stats.subtests++;
    if (str_eq(ev->status, "PASS") && unexpected)
        strcpy(name, "UNEXPECTED-PASS");
    else if (str_eq(ev->status, "FAIL") && !unexpected)
        strcpy(name, "KNOWN-FAIL");
    else if (ev->status.n && ev->status.n < sizeof name && !memchr(ev->status.p, '\0', ev->status.n)) {
        /* (a NUL inside would cut the name short, down to nothing) */
        memcpy(name, ev->status.p, ev->status.n);
        name[ev->status.n] = '\0';
    } else
        strcpy(name, "STATUS");
    struct tl_str id = ev->id;
    if (!id.n && tl->nopen)
        id = sbuf_str(&tl->open[tl->nopen - 1].id);
    emit_status_instant(tl, name, t, id, ev->subtest, ev->message, ev->stack,
                        color_for(ev->status, unexpected));
}

static void log_line(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    char level[16];
    if (!ev->level.n || ev->level.n >= sizeof level)
        return;
    for (size_t i = 0; i < ev->level.n; i++) {
        char c = ev->level.p[i];
        level[i] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    level[ev->level.n] = '\0';
    const char *color;
    if (!strcmp(level, "CRITICAL") || !strcmp(level, "ERROR"))
        color = "red";
    else if (!strcmp(level, "WARNING"))
        color = "orange";
    else if (tl->cfg.log_info && (!strcmp(level, "INFO") || !strcmp(level, "DEBUG")))
        color = "grey";
    else
        return;
    struct tl_str none = tl_str_make("", 0);
    emit_status_instant(tl, level, t, none, none, ev->message, none, color);
}

/* The basename of a minidump path without its extension. */
static struct tl_str minidump_id(struct tl_str p)
{
    struct tl_str b = p;
    for (size_t i = p.n; i > 0; i--)
        if (p.p[i - 1] == '/' || p.p[i - 1] == '\\') {
            b = tl_str_make(p.p + i, p.n - i);
            break;
        }
    for (size_t i = b.n; i > 0; i--)
        if (b.p[i - 1] == '.') {
            if (i > 1)
                b.n = i - 1;
            break;
        }
    return b;
}

static void crash(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    tl->stats.crashes++;
    struct jsonw *w = &tl->w;
    struct mpay p;
    mpay_begin(&p, w, &testlog_crash_type);
    if (ev->signature.n)
        mpay_strn(&p, CRASH_SIGNATURE, ev->signature.p, ev->signature.n);
    if (ev->reason.n)
        mpay_strn(&p, CRASH_REASON, ev->reason.p, ev->reason.n);
    struct tl_str id = ev->id;
    if (!id.n && tl->nopen)
        id = sbuf_str(&tl->open[tl->nopen - 1].id);
    if (id.n)
        mpay_strn(&p, CRASH_TEST, id.p, id.n);
    if (ev->minidump.n) {
        struct tl_str m = minidump_id(ev->minidump);
        mpay_strn(&p, CRASH_MINIDUMP, m.p, m.n);
    }
    mpay_str(&p, CRASH_COLOR, "red");
    mpay_end(&p);
    if (!jsonw_failed(w))
        marker_emit(&tl->sink, "CRASH", t, MARKER_INSTANT, CAT_OTHER, w->buf, w->len);
}

static void nest_start(struct testlog *tl, const struct tl_event *ev, bool group, uint64_t t)
{
    if (tl->nnest == TL_MAX_NEST)
        return;
    struct open_span *s = &tl->nest[tl->nnest];
    if (sbuf_set(&s->key, ev->id.p, ev->id.n) < 0)
        return;
    s->group = group;
    s->start_ns = t;
    tl->nnest++;
    state_open_text(tl, group ? "group" : "suite", sbuf_str(&s->key), t);
}

static void nest_emit(struct testlog *tl, size_t i, uint64_t end)
{
    struct open_span *s = &tl->nest[i];
    const char *kind = s->group ? "group" : "suite";
    if (end < s->start_ns)
        end = s->start_ns;
    struct jsonw *w = &tl->w;
    marker_text_payload(w, s->key.p ? s->key.p : "", s->key.n);
    if (!jsonw_failed(w))
        marker_emit(&tl->sink, kind, s->start_ns, end, CAT_TASKS, w->buf, w->len);
    state_close(tl, kind, tl_str_make("", 0), sbuf_str(&s->key));
    struct open_span keep = *s;
    memmove(&tl->nest[i], &tl->nest[i + 1], (tl->nnest - i - 1) * sizeof *tl->nest);
    tl->nnest--;
    tl->nest[tl->nnest] = keep;
}

static void nest_end(struct testlog *tl, const struct tl_event *ev, bool group, uint64_t t)
{
    ssize_t last = -1;
    for (size_t i = tl->nnest; i > 0; i--) {
        struct open_span *s = &tl->nest[i - 1];
        if (s->group != group)
            continue;
        if (last < 0)
            last = (ssize_t)(i - 1);
        if (ev->id.n && str_same(sbuf_str(&s->key), ev->id)) {
            last = (ssize_t)(i - 1);
            break;
        }
    }
    if (last >= 0)
        nest_emit(tl, (size_t)last, t);
}

static void process_emit(struct testlog *tl, size_t i, const struct tl_event *ev, uint64_t end)
{
    struct open_span *p = &tl->procs[i];
    if (end < p->start_ns)
        end = p->start_ns;
    struct jsonw *w = &tl->w;
    struct mpay mp;
    mpay_begin(&mp, w, &testlog_logprocess_type);
    struct tl_str cmd = (ev && ev->command.n) ? ev->command : sbuf_str(&p->text);
    if (cmd.n)
        mpay_strn(&mp, LPROC_CMD, cmd.p, cmd.n);
    /* mozlog's process is usually a pid */
    bool numeric = p->key.n > 0 && p->key.n < 12;
    for (size_t k = 0; numeric && k < p->key.n; k++)
        numeric = is_digit(p->key.p[k]);
    if (numeric)
        mpay_int(&mp, LPROC_PID, strtoll(p->key.p, NULL, 10));
    else if (p->key.n)
        mpay_strn(&mp, LPROC_PROCESS, p->key.p, p->key.n);
    const char *color = "grey"; /* the log did not say how it ended */
    if (ev && ev->has_exitcode) {
        char ex[40];
        int n = snprintf(ex, sizeof ex, "status %lld", (long long)ev->exitcode);
        mpay_strn(&mp, LPROC_EXIT, ex, (size_t)n);
        color = ev->exitcode != 0 ? "red" : "green";
    }
    mpay_str(&mp, LPROC_COLOR, color);
    mpay_end(&mp);
    if (!jsonw_failed(w))
        marker_emit(&tl->sink, "process", p->start_ns, end, CAT_TASKS, w->buf, w->len);
    struct open_span keep = *p;
    memmove(&tl->procs[i], &tl->procs[i + 1], (tl->nprocs - i - 1) * sizeof *tl->procs);
    tl->nprocs--;
    tl->procs[tl->nprocs] = keep;
}

static void process_start(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    if (!tl->procs) {
        tl->procs = calloc(TL_MAX_PROCS, sizeof *tl->procs);
        if (!tl->procs)
            return;
    }
    for (size_t i = 0; i < tl->nprocs; i++)
        if (str_same(sbuf_str(&tl->procs[i].key), ev->process)) {
            process_emit(tl, i, NULL, t);
            break;
        }
    if (tl->nprocs == TL_MAX_PROCS)
        process_emit(tl, 0, NULL, t);
    struct open_span *p = &tl->procs[tl->nprocs];
    if (sbuf_set(&p->key, ev->process.p, ev->process.n) < 0 ||
        sbuf_set(&p->text, ev->command.p, ev->command.n) < 0)
        return;
    p->start_ns = t;
    tl->nprocs++;
}

static void process_exit(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    for (size_t i = 0; i < tl->nprocs; i++)
        if (str_same(sbuf_str(&tl->procs[i].key), ev->process)) {
            process_emit(tl, i, ev, t);
            return;
        }
    /* an exit without a start: an instant-length interval still shows the exit code */
    struct tl_event st = *ev;
    st.kind = TLE_PROCESS_START;
    process_start(tl, &st, t);
    if (tl->nprocs && str_same(sbuf_str(&tl->procs[tl->nprocs - 1].key), ev->process))
        process_emit(tl, tl->nprocs - 1, ev, t);
}

static void leak_or_assert(struct testlog *tl, const struct tl_event *ev, const char *fallback,
                           uint64_t t)
{
    char name[32];
    struct tl_str n = ev->name.n ? ev->name : tl_str_make(fallback, strlen(fallback));
    if (n.n >= sizeof name)
        n.n = sizeof name - 1;
    memcpy(name, n.p, n.n);
    name[n.n] = '\0';
    struct tl_str none = tl_str_make("", 0);
    emit_status_instant(tl, name, t, ev->id, none, ev->message, none, "orange");
}

static void bail_out(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    struct tl_str none = tl_str_make("", 0);
    emit_status_instant(tl, "BAIL-OUT", t, none, none, ev->message, none, "red");
    while (tl->nopen)
        close_with_status(tl, tl->nopen - 1, "INCOMPLETE", NULL, t);
}

static void handle(struct testlog *tl, const struct tl_event *ev, uint64_t arrival)
{
    uint64_t t = event_time(tl, ev, arrival);
    switch (ev->kind) {
    case TLE_SUITE_START:
        nest_start(tl, ev, false, t);
        break;
    case TLE_SUITE_END:
        nest_end(tl, ev, false, t);
        break;
    case TLE_GROUP_START:
        nest_start(tl, ev, true, t);
        break;
    case TLE_GROUP_END:
        nest_end(tl, ev, true, t);
        break;
    case TLE_TEST_START:
        if (ev->id.n)
            test_start(tl, ev, t);
        break;
    case TLE_TEST_END:
        test_end(tl, ev, t);
        break;
    case TLE_TEST_RESUME:
        test_resume(tl, ev, t);
        break;
    case TLE_SUBTEST:
        subtest(tl, ev, t);
        break;
    case TLE_LOG:
        log_line(tl, ev, t);
        break;
    case TLE_CRASH:
        crash(tl, ev, t);
        break;
    case TLE_PROCESS_START:
        process_start(tl, ev, t);
        break;
    case TLE_PROCESS_EXIT:
        process_exit(tl, ev, t);
        break;
    case TLE_ASSERT:
        leak_or_assert(tl, ev, "ASSERT", t);
        break;
    case TLE_LEAK:
        leak_or_assert(tl, ev, "LSan Leak", t);
        break;
    case TLE_OUTPUT:
        if (tl->cfg.process_output) {
            struct tl_str none = tl_str_make("", 0);
            emit_status_instant(tl, "output", t, ev->id, none, ev->message, none, "grey");
        }
        break;
    case TLE_BAIL_OUT:
        bail_out(tl, ev, t);
        break;
    case TLE_ANCHOR:
        note_anchor(tl, arrival);
        break;
    case TLE_TEST_MESSAGE:
        test_message(tl, ev);
        break;
    }
}

/* A line some parser may take: strip it and offer it to them in priority order. Kept out of
 * testlog_line so that the common case, a line no parser takes, runs in a small frame. */
static __attribute__((noinline)) void dispatch(struct testlog *tl, const char *line, size_t len,
                                               uint64_t arrival_ns)
{
    const char *s;
    size_t n;
    strip_line(tl, line, len, &s, &n);
    if (!n)
        return;
    struct tl_event ev[TL_MAX_EVENTS];
    fmt_mask cand = by_start(tl, s, n) | tl->busy;
    fmt_mask maybe = tl->dotted & ~cand; /* decided by the first word, when their turn comes */
    if (tl->capturing) {
        cand = tl->capturing & (fmt_mask)-tl->capturing;
        maybe = 0;
    }
    for (;;) {
        if (maybe && (!cand || __builtin_ctz(maybe) < __builtin_ctz(cand))) {
            if (first_word_dotted(s, n, false))
                cand |= maybe;
            maybe = 0;
            continue;
        }
        if (!cand)
            return;
        unsigned i = (unsigned)__builtin_ctz(cand);
        cand &= (fmt_mask)(cand - 1);
        struct fmt_slot *fs = &tl->fmts[i];
        int k = fs->f->parse(fs->state, s, n, arrival_ns, ev);
        if ((tl->can_busy >> i) & 1) {
            if (fs->f->busy(fs->state))
                tl->busy |= (fmt_mask)(1u << i);
            else
                tl->busy &= (fmt_mask)~(1u << i);
        }
        if ((tl->can_capture >> i) & 1) {
            if (fs->f->captures(fs->state))
                tl->capturing |= (fmt_mask)(1u << i);
            else
                tl->capturing &= (fmt_mask)~(1u << i);
        }
        if (k <= 0)
            continue;
        if (k > TL_MAX_EVENTS)
            k = TL_MAX_EVENTS;
        tl->stats.recognised++;
        for (int j = 0; j < k; j++)
            handle(tl, &ev[j], arrival_ns);
        return;
    }
}

/* ---- public entry points ---- */

void testlog_line(struct testlog *tl, int stream, const char *line, size_t len, bool truncated,
                  uint64_t arrival_ns)
{
    (void)truncated;
    untail(tl, stream);
    tl->stats.lines++;
    if (!tl->nfmts || !len || surely_untaken(tl, line, len))
        return;
    dispatch(tl, line, len, arrival_ns);
}


#define TL_TAIL_MAX 4096

static void read_tail(struct testlog *tl, int stream, const char *head, size_t len, uint64_t arrival_ns)
{
    const char *s;
    size_t n;
    strip_line(tl, head, len, &s, &n);
    if (!n)
        return;
    for (size_t i = 0; i < tl->nfmts; i++) {
        struct fmt_slot *fs = &tl->fmts[i];
        /* A parser that owns memory cannot be read on a copy of its state. */
        if (fs->f->release)
            continue;
        if (fs->state)
            memcpy(tl->tail_state, fs->state, fs->f->state_size);
        struct tl_event ev[TL_MAX_EVENTS];
        int k = fs->f->parse(fs->state ? tl->tail_state : NULL, s, n, arrival_ns, ev);
        for (int j = 0; j < k && j < TL_MAX_EVENTS; j++) {
            /* Only a start: an end on half a line ("ok 1 - fo") may not be the end it reads as.
             * A start of a test already open, or one past the open tests' memory bound, is left
             * to the whole line. */
            if (ev[j].kind != TLE_TEST_START || !ev[j].id.n)
                continue;
            uint64_t t = event_time(tl, &ev[j], arrival_ns);
            ssize_t dup = find_open(tl, ev[j].id, ev[j].scope, false);
            if (dup >= 0 && tl->open[dup].tail == stream && tl->open[dup].start_ns == t)
                tl->open[dup].tail_seen = true;
            if (dup >= 0 || tl->open_bytes + open_cost(ev[j].id.n, ev[j].scope.n) > TESTLOG_OPEN_BYTES_MAX)
                continue;
            size_t before = tl->nopen;
            test_start(tl, &ev[j], t);
            if (tl->nopen > before) {
                tl->open[tl->nopen - 1].tail = (uint8_t)stream;
                tl->open[tl->nopen - 1].tail_seen = true;
            }
        }
        if (k > 0)
            return;
    }
}

void testlog_line_tail(struct testlog *tl, int stream, const char *head, size_t len,
                       uint64_t arrival_ns)
{
    /* A test's start is a short line: a long tail (a progress bar, a huge line coming in many
     * chunks) is not read again at every chunk. */
    if (tl->nfmts && len && len <= TL_TAIL_MAX && tl->tail_state && !surely_untaken(tl, head, len))
        read_tail(tl, stream, head, len, arrival_ns);
    /* What the tail no longer starts is taken back; what it starts again stays as it was, so a
     * test printing without a newline costs the stream nothing per chunk. */
    untail(tl, stream);
    for (size_t i = 0; i < tl->nopen; i++)
        tl->open[i].tail_seen = false;
}

void testlog_line_begins(struct testlog *tl, const char *head, size_t len, uint64_t arrival_ns)
{
    if (tl->nfmts && len && !surely_untaken(tl, head, len))
        note_anchor(tl, arrival_ns);
}

void testlog_tree_sample(struct testlog *tl, uint64_t rss)
{
    for (size_t i = 0; i < tl->nopen; i++)
        if (rss > tl->open[i].max_rss)
            tl->open[i].max_rss = rss;
    for (unsigned i = 0; i < tl->nanchors; i++)
        if (rss > tl->anchors[i].max_rss)
            tl->anchors[i].max_rss = rss;
}

void testlog_each_open(const struct testlog *tl, void (*fn)(void *ctx, const char *id), void *ctx)
{
    char *name = malloc(2 * TL_ID_MAX + 2); /* scope/id, as the test's marker names it */
    if (!name)
        return;
    for (size_t i = 0; i < tl->nopen; i++) {
        const struct open_test *ot = &tl->open[i];
        size_t o = 0;
        if (ot->scope.n) {
            memcpy(name, ot->scope.p, ot->scope.n);
            name[ot->scope.n] = '/';
            o = ot->scope.n + 1;
        }
        if (ot->id.n)
            memcpy(name + o, ot->id.p, ot->id.n);
        name[o + ot->id.n] = '\0';
        fn(ctx, name);
    }
    if (!tl->nopen && tl->last_unannounced && tl->stats.tests) {
        snprintf(name, 2 * TL_ID_MAX + 2, "after %" PRIu64 ", %s", tl->stats.tests, tl->last_name);
        fn(ctx, name);
    }
    free(name);
}

const char *testlog_open_at(const struct testlog *tl, uint64_t t_ns)
{
    for (size_t i = tl->nopen; i-- > 0;) /* ordered by start */
        if (tl->open[i].start_ns <= t_ns)
            return tl->open[i].id.p ? tl->open[i].id.p : "";
    return NULL;
}

void testlog_finish(struct testlog *tl, uint64_t now_ns, bool timed_out)
{
    for (size_t i = 0; i < tl->nfmts; i++) {
        struct fmt_slot *fs = &tl->fmts[i];
        struct tl_event ev[TL_MAX_EVENTS];
        int k = fs->f->flush ? fs->f->flush(fs->state, ev) : 0;
        for (int j = 0; j < k && j < TL_MAX_EVENTS; j++)
            handle(tl, &ev[j], now_ns);
        if (((tl->can_busy >> i) & 1) && !fs->f->busy(fs->state))
            tl->busy &= (fmt_mask)~(1u << i);
        if (((tl->can_capture >> i) & 1) && !fs->f->captures(fs->state))
            tl->capturing &= (fmt_mask)~(1u << i);
    }
    tl->finishing = true; /* what the tests still open run is not left behind */
    while (tl->nopen)
        close_with_status(tl, 0, timed_out ? "TIMEOUT" : "INCOMPLETE",
                          timed_out ? "still running when the run timed out" : NULL, now_ns);
    while (tl->nnest)
        nest_emit(tl, tl->nnest - 1, now_ns);
    while (tl->nprocs)
        process_emit(tl, 0, NULL, now_ns);
}

void testlog_get_stats(const struct testlog *tl, struct testlog_stats *ret) { *ret = tl->stats; }

size_t testlog_slowest(const struct testlog *tl, const struct testlog_result **ret)
{
    *ret = tl->slowest;
    return tl->nslowest;
}

size_t testlog_unexpected(const struct testlog *tl, const struct testlog_result **ret)
{
    *ret = tl->unexp;
    return tl->nunexp;
}
