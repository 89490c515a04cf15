/* testlog_events.c — the events other than a test's start and end (testlog_impl.h): status
 * instants, subtests, log lines, crashes, suites and groups, the processes a harness reports,
 * leaks and assertions, bail-outs; and handle(), which sends each event of a parser where it
 * goes. Owns the TestStatus, Crash, LogProcess and TestTotals marker types. */
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

/* ---- marker types (markers.h): statuses, crashes, mozlog's processes ---------------------- */

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
    /* always there, "not reported" when the log did not say (a label reads it after the command) */
    [LPROC_EXIT] = MARKER_FIELD("exit", "Exit", "string", 0),
    [LPROC_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
};
const struct marker_type testlog_logprocess_type = {
    .name = "LogProcess",
    .tooltip_label = "{marker.name}{marker.data.cmd ? ': ' : ''}{marker.data.cmd}",
    .table_label = "{marker.data.cmd}{marker.data.cmd ? ' \xe2\x80\x94 ' : ''}{marker.data.exit}",
    .chart_label = "{marker.data.cmd}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .color_field = "color",
    .description = "A process the test harness reported in its log",
    .fields = logprocess_fields,
    .nfields = ARRAY_SIZE(logprocess_fields),
};

/* A harness's own count of the run's tests (TLE_TOTALS): what its summary line said, for the
 * tests its reporter does not name one by one (jest's and vitest's default reporters, pytest
 * without -v, RSpec's progress). */
enum { TOTALS_HARNESS, TOTALS_SUMMARY, TOTALS_TOTAL, TOTALS_PASSED, TOTALS_FAILED, TOTALS_SKIPPED, TOTALS_COLOR };
static const struct marker_field totals_fields[] = {
    [TOTALS_HARNESS] = MARKER_FIELD("harness", "Harness", "string", 0),
    [TOTALS_SUMMARY] = MARKER_FIELD("summary", "Its summary", "string", 0),
    [TOTALS_TOTAL] = MARKER_FIELD("total", "Tests", "integer", 0),
    [TOTALS_PASSED] = MARKER_FIELD("passed", "Passed", "integer", MF_OPTIONAL),
    [TOTALS_FAILED] = MARKER_FIELD("failed", "Failed", "integer", MF_OPTIONAL),
    [TOTALS_SKIPPED] = MARKER_FIELD("skipped", "Skipped", "integer", MF_OPTIONAL),
    [TOTALS_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
};
const struct marker_type testlog_totals_type = {
    .name = "TestTotals",
    .tooltip_label = "{marker.data.harness}: {marker.data.summary}",
    .table_label = "{marker.data.harness}: {marker.data.summary}",
    .chart_label = "{marker.data.total} tests",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .color_field = "color",
    .description = "The test harness's own count of the run's tests, from its summary line",
    .fields = totals_fields,
    .nfields = ARRAY_SIZE(totals_fields),
};

/* ---- other events ---- */

static void emit_status_instant(struct testlog *tl, const char *name, uint64_t t, struct tl_str test,
                                struct tl_str subtest, struct tl_str message, struct tl_str stack,
                                const char *color)
{
    struct buf *b = &tl->ob;
    buf_reset(b);
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
    if (buf_end(b))
        marker_emit(&tl->sink, name, t, MARKER_INSTANT, CAT_OTHER, b->p, b->len);
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

static void totals(struct testlog *tl, const struct tl_event *ev, uint64_t t)
{
    const struct tl_counts *c = &ev->counts;
    if (!ev->name.n || c->total < 0)
        return;
    struct jsonw *w = &tl->w;
    struct mpay p;
    mpay_begin(&p, w, &testlog_totals_type);
    mpay_strn(&p, TOTALS_HARNESS, ev->name.p, ev->name.n);
    mpay_strn(&p, TOTALS_SUMMARY, ev->message.p, ev->message.n);
    mpay_int(&p, TOTALS_TOTAL, c->total);
    if (c->passed >= 0)
        mpay_int(&p, TOTALS_PASSED, c->passed);
    if (c->failed >= 0)
        mpay_int(&p, TOTALS_FAILED, c->failed);
    if (c->skipped >= 0)
        mpay_int(&p, TOTALS_SKIPPED, c->skipped);
    mpay_str(&p, TOTALS_COLOR, c->failed > 0 ? "orange" : "green");
    mpay_end(&p);
    if (!jsonw_failed(w))
        marker_emit(&tl->sink, "Test totals", t, MARKER_INSTANT, CAT_OTHER, w->buf, w->len);
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

void nest_emit(struct testlog *tl, size_t i, uint64_t end)
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

void process_emit(struct testlog *tl, size_t i, const struct tl_event *ev, uint64_t end)
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
    } else
        mpay_str(&mp, LPROC_EXIT, "not reported");
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

void handle(struct testlog *tl, const struct tl_event *ev, uint64_t arrival)
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
    case TLE_TOTALS:
        totals(tl, ev, t);
        break;
    }
}

