/* otlp.c — see otlp.h. */
#include "report/otlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "base/outfile.h"
#include "base/util.h"
#include "report/junit.h"
#include "report/results.h"

/* A 64-bit mix (splitmix64's finaliser): ids that differ for every run and every test. */
static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint64_t run_seed(const struct results *r)
{
    uint64_t h = mix((uint64_t)(r->start_wall_ms * 1000) ^ mix(r->clock_ns));
    for (const char *p = r->product; p && *p; p++)
        h = mix(h ^ (unsigned char)*p);
    return h ? h : 1;
}

static void hex_id(struct jsonw *w, const char *key, const uint64_t *v, size_t n)
{
    char b[33];
    for (size_t i = 0; i < n; i++)
        snprintf(b + 16 * i, 17, "%016llx", (unsigned long long)v[i]);
    jsonw_kv_str(w, key, b);
}

/* Profile ms to ns since the epoch, as OTLP's decimal string of a fixed64: whole microseconds of
 * the start (exact in a double) plus the offset, so no digit is lost to a double's 53 bits. */
static void time_ns(struct jsonw *w, const char *key, const struct results *r, double ms)
{
    double us0 = r->start_wall_ms > 0 ? r->start_wall_ms * 1000 : 0;
    uint64_t ns = (uint64_t)llround(us0) * 1000 + (uint64_t)llround(MAX(ms, 0) * 1e6);
    char b[32];
    snprintf(b, sizeof b, "%llu", (unsigned long long)ns);
    jsonw_kv_str(w, key, b);
}

/* An attribute (a KeyValue): its AnyValue's one member is opened by kv_open, closed by kv_close. */
static void kv_open(struct jsonw *w, const char *key, const char *kind)
{
    jsonw_obj_open(w);
    jsonw_kv_str(w, "key", key);
    jsonw_key(w, "value");
    jsonw_obj_open(w);
    jsonw_key(w, kind);
}

static void kv_close(struct jsonw *w)
{
    jsonw_obj_close(w);
    jsonw_obj_close(w);
}

/* s, at most OTLP_VALUE_MAX bytes of it (cut before a character's continuation bytes), so that
 * one span or point has a bounded size whatever the stream held. */
static void bounded_str(struct jsonw *w, const char *s)
{
    size_t n = strlen(s);
    if (n > OTLP_VALUE_MAX) {
        n = OTLP_VALUE_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    jsonw_strn(w, s, n);
}

static void attr_str(struct jsonw *w, const char *key, const char *v)
{
    if (!v)
        return;
    kv_open(w, key, "stringValue");
    bounded_str(w, v);
    kv_close(w);
}

static void attr_int(struct jsonw *w, const char *key, int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    kv_open(w, key, "intValue"); /* an int64: a decimal string in OTLP/JSON */
    jsonw_str(w, b);
    kv_close(w);
}

static void attr_double(struct jsonw *w, const char *key, double v)
{
    kv_open(w, key, "doubleValue");
    jsonw_double(w, v, 6);
    kv_close(w);
}

static void resource(struct jsonw *w, const struct results *r)
{
    jsonw_key(w, "resource");
    jsonw_obj_open(w);
    jsonw_key(w, "attributes");
    jsonw_arr_open(w);
    attr_str(w, "service.name", "resmon-run");
    attr_str(w, "service.version", PACKAGE_VERSION);
    attr_str(w, "process.command_line", r->cmd);
    attr_str(w, "process.executable.name", r->product);
    attr_str(w, "cicd.pipeline.run.id", r->meta[RS_APP_BUILD_ID]);
    attr_str(w, "cicd.pipeline.run.url.full", r->meta[RS_CI_JOB_URL]);
    attr_str(w, "cicd.worker.name", r->meta[RS_DEVICE]);
    attr_str(w, "vcs.repository.name", r->meta[RS_CI_REPOSITORY]);
    attr_str(w, "vcs.ref.head.revision", r->meta[RS_CI_REVISION]);
    attr_str(w, "resmon.ci", r->meta[RS_CI]);
    attr_str(w, "resmon.source_url", r->meta[RS_SOURCE_URL]);
    jsonw_arr_close(w);
    jsonw_obj_close(w);
}

static void scope(struct jsonw *w)
{
    jsonw_key(w, "scope");
    jsonw_obj_open(w);
    jsonw_kv_str(w, "name", "resmon-run");
    jsonw_kv_str(w, "version", PACKAGE_VERSION);
    jsonw_obj_close(w);
}

/* A request's nesting: {"resourceX":[{resource,"scopeX":[{scope,"items":[ ... ]}]}]} — one
 * resource (this run), one scope (resmon-run). */
static void envelope_open(struct jsonw *w, const struct results *r, const char *resources, const char *scopes,
                          const char *items)
{
    jsonw_obj_open(w);
    jsonw_key(w, resources);
    jsonw_arr_open(w);
    jsonw_obj_open(w);
    resource(w, r);
    jsonw_key(w, scopes);
    jsonw_arr_open(w);
    jsonw_obj_open(w);
    scope(w);
    jsonw_key(w, items);
    jsonw_arr_open(w);
}

static void envelope_close(struct jsonw *w)
{
    jsonw_arr_close(w);
    jsonw_obj_close(w);
    jsonw_arr_close(w);
    jsonw_obj_close(w);
    jsonw_arr_close(w);
    jsonw_obj_close(w);
}

enum { STATUS_UNSET = 0, STATUS_OK = 1, STATUS_ERROR = 2, KIND_INTERNAL = 1 };

static void status(struct jsonw *w, int code, const char *message)
{
    jsonw_key(w, "status");
    jsonw_obj_open(w);
    if (message && code == STATUS_ERROR)
        jsonw_kv_str(w, "message", message);
    jsonw_kv_int(w, "code", code);
    jsonw_obj_close(w);
}

/* The run's result in the CI/CD semantic conventions' words. */
static const char *pipeline_result(const struct results *r)
{
    enum runmarks_reason end;
    if (!results_end(r, &end))
        return "error"; /* it never ended (or ended in words this build does not know) */
    switch (end) {
    case RUN_TIMEOUT:
    case RUN_OUTPUT_TIMEOUT:
    case RUN_CPU: return "timeout";
    case RUN_STOPPED:
    case RUN_PARENT_DIED: return "cancellation";
    case RUN_MEMORY:
    case RUN_TASKS:
    case RUN_OOM_KILL:
    case RUN_EXEC_FAILED: return "error";
    case RUN_EXIT:
    case RUN_SIGNAL: break; /* the command ended by itself: a crash is its failure */
    }
    return results_is(r->exit, "status 0") ? "success" : "failure";
}

static void run_span(struct jsonw *w, const struct results *r, const uint64_t trace[2], uint64_t span, double end_ms,
                     size_t unexpected)
{
    char name[256];
    snprintf(name, sizeof name, "resmon-run %s", r->product ? r->product : "command");
    jsonw_obj_open(w);
    hex_id(w, "traceId", trace, 2);
    hex_id(w, "spanId", &span, 1);
    jsonw_kv_str(w, "name", name);
    jsonw_kv_int(w, "kind", KIND_INTERNAL);
    time_ns(w, "startTimeUnixNano", r, 0);
    time_ns(w, "endTimeUnixNano", r, end_ms);
    jsonw_key(w, "attributes");
    jsonw_arr_open(w);
    const char *result = pipeline_result(r);
    attr_str(w, "cicd.pipeline.result", result);
    int code;
    if (r->exit && sscanf(r->exit, "status %d", &code) == 1)
        attr_int(w, "process.exit.code", code);
    attr_str(w, "resmon.reason", r->stop_reason ? r->stop_reason : r->reason ? r->reason : "running");
    attr_str(w, "resmon.exit", r->exit);
    attr_str(w, "resmon.limit", r->stop_limit);
    if (r->stop_after_ms > 0)
        attr_double(w, "resmon.timeout", r->stop_after_ms / 1000);
    attr_int(w, "resmon.tests", (int64_t)(r->ntests + r->left_out));
    attr_int(w, "resmon.tests.unexpected", (int64_t)unexpected);
    jsonw_arr_close(w);
    bool timeout;
    char *why = strcmp(result, "success") && strcmp(result, "failure") ? results_stop_words(r, &timeout) : NULL;
    char msg[512];
    snprintf(msg, sizeof msg, "%s%s%s", r->exit ? r->exit : "", why && r->exit ? ": " : "", why ? why : "");
    status(w, strcmp(result, "success") ? STATUS_ERROR : STATUS_OK, msg);
    free(why);
    jsonw_obj_close(w);
}

static void test_span(struct jsonw *w, const struct results *r, const struct rs_test *t, const uint64_t trace[2],
                      uint64_t parent, uint64_t span, double end_ms)
{
    jsonw_obj_open(w);
    hex_id(w, "traceId", trace, 2);
    hex_id(w, "spanId", &span, 1);
    hex_id(w, "parentSpanId", &parent, 1);
    jsonw_key(w, "name");
    bounded_str(w, t->id);
    jsonw_kv_int(w, "kind", KIND_INTERNAL);
    time_ns(w, "startTimeUnixNano", r, t->start);
    time_ns(w, "endTimeUnixNano", r, t->open ? MAX(end_ms, t->start) : MAX(t->end, t->start));
    jsonw_key(w, "attributes");
    jsonw_arr_open(w);
    attr_str(w, "test.case.name", t->id);
    char *suite, *classname;
    const char *name;
    junit_names(t, r->product, &suite, &classname, &name);
    attr_str(w, "test.suite.name", suite ? suite : r->product);
    free(suite);
    free(classname);
    bool timeout = false;
    char *why = results_cut(r, t) ? results_stop_words(r, &timeout) : NULL;
    const char *st = t->open ? (timeout ? "TIMEOUT" : "INCOMPLETE") : t->status;
    bool bad = t->open || t->unexpected;
    bool skip = !bad && (results_is(st, "SKIP") || results_is(st, "NOTRUN"));
    if (!skip)
        attr_str(w, "test.case.result.status", bad ? "fail" : "pass");
    attr_str(w, "resmon.test.status", st);
    attr_str(w, "resmon.test.expected", t->expected);
    if (t->cpu_ms >= 0)
        attr_double(w, "resmon.test.cpu_time", t->cpu_ms / 1000);
    if (t->rss >= 0)
        attr_int(w, "resmon.test.max_rss", (int64_t)t->rss);
    /* The span's status carries a message only with an error (OTLP's rule), so the reason a test
     * was skipped or expected to fail would be lost: the test's own message is an attribute. */
    attr_str(w, "resmon.test.message", t->message ? t->message : t->details);
    jsonw_arr_close(w);
    char msg[1024];
    if (why)
        snprintf(msg, sizeof msg, "still running when %s", why);
    else
        snprintf(msg, sizeof msg, "%s%s%s%s%s", st ? st : "", t->expected ? ", expected " : "",
                 t->expected ? t->expected : "", t->message || t->details ? ": " : "",
                 t->message ? t->message : t->details ? t->details : "");
    status(w, bad ? STATUS_ERROR : STATUS_OK, msg);
    free(why);
    jsonw_obj_close(w);
}

static int flush_line(struct jsonw *w, int fd)
{
    jsonw_append(w, "\n", 1);
    if (jsonw_failed(w))
        return -ENOMEM;
    int r = write_all(fd, w->buf, w->len);
    jsonw_reset(w);
    return r;
}

/* The request in w has grown past OTLP_LINE_SPLIT: end it as a line of its own and open the next
 * one like it. */
static int maybe_split(struct jsonw *w, const struct results *r, int fd, const char *const nest[3])
{
    if (w->len < OTLP_LINE_SPLIT)
        return 0;
    envelope_close(w);
    int rc = flush_line(w, fd);
    envelope_open(w, r, nest[0], nest[1], nest[2]);
    return rc;
}

static const struct results *by_id_r;
static int by_id(const void *a, const void *b)
{
    const struct rs_test *x = &by_id_r->tests[*(const size_t *)a], *y = &by_id_r->tests[*(const size_t *)b];
    int c = strcmp(x->id, y->id);
    return c ? c : (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* The test a scoped subtest ("pkg/TestX/sub") belongs to ("pkg/TestX"): of the tests of that id,
 * the last one that started no later than it. SIZE_MAX: none. */
static size_t parent_of(const struct results *r, const size_t *sorted, size_t n, size_t i)
{
    const struct rs_test *t = &r->tests[i];
    if (!t->scope || !sorted)
        return SIZE_MAX;
    size_t sl = strlen(t->scope);
    const char *slash = strrchr(t->id + sl + 1, '/');
    if (!slash)
        return SIZE_MAX;
    char *want = strndup(t->id, (size_t)(slash - t->id));
    if (!want)
        return SIZE_MAX;
    size_t lo = 0, hi = n; /* the first test whose id is not below the parent's */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(r->tests[sorted[mid]].id, want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t best = SIZE_MAX;
    for (; lo < n && strcmp(r->tests[sorted[lo]].id, want) == 0; lo++)
        if (best == SIZE_MAX || r->tests[sorted[lo]].start <= t->start)
            best = sorted[lo];
    free(want);
    return best;
}

static int traces(struct jsonw *w, const struct results *r, double end_ms, int fd)
{
    static const char *const nest[3] = {"resourceSpans", "scopeSpans", "spans"};
    uint64_t seed = run_seed(r);
    uint64_t trace[2] = {mix(seed), mix(seed ^ UINT64_C(0x5bd1e995))};
    uint64_t run = mix(seed + 1) | 1;
    size_t unexpected = 0, ids = 0;
    bool scoped = false;
    for (size_t i = 0; i < r->ntests; i++) {
        unexpected += r->tests[i].id && (r->tests[i].open || r->tests[i].unexpected);
        ids += r->tests[i].id != NULL;
        scoped |= r->tests[i].scope != NULL;
    }
    size_t *sorted = scoped ? malloc(ids * sizeof *sorted) : NULL;
    if (sorted) {
        for (size_t i = 0, k = 0; i < r->ntests; i++)
            if (r->tests[i].id)
                sorted[k++] = i;
        by_id_r = r;
        qsort(sorted, ids, sizeof *sorted, by_id);
    }
    envelope_open(w, r, nest[0], nest[1], nest[2]);
    run_span(w, r, trace, run, end_ms, unexpected);
    int rc = 0;
    for (size_t i = 0; i < r->ntests && rc == 0; i++) {
        if (!r->tests[i].id)
            continue;
        size_t p = parent_of(r, sorted, ids, i);
        if ((rc = maybe_split(w, r, fd, nest)) < 0)
            break;
        test_span(w, r, &r->tests[i], trace, p == SIZE_MAX ? run : mix(seed + 2 + p) | 1, mix(seed + 2 + i) | 1,
                  end_ms);
    }
    free(sorted);
    envelope_close(w);
    return rc < 0 ? rc : flush_line(w, fd);
}

struct metric_def {
    enum rs_series s;
    const char *name, *description, *unit;
    bool sum, monotonic, as_int;
    double scale; /* from the series' unit */
    const char *state; /* system.memory.state, NULL: none */
};

static void metric_open(struct jsonw *w, const struct metric_def *d)
{
    jsonw_obj_open(w);
    jsonw_kv_str(w, "name", d->name);
    jsonw_kv_str(w, "description", d->description);
    jsonw_kv_str(w, "unit", d->unit);
    jsonw_key(w, d->sum ? "sum" : "gauge");
    jsonw_obj_open(w);
    jsonw_key(w, "dataPoints");
    jsonw_arr_open(w);
}

static void metric_close(struct jsonw *w, const struct metric_def *d)
{
    jsonw_arr_close(w);
    if (d->sum) {
        jsonw_kv_int(w, "aggregationTemporality", 2); /* CUMULATIVE */
        jsonw_kv_bool(w, "isMonotonic", d->monotonic);
    }
    jsonw_obj_close(w);
    jsonw_obj_close(w);
}

static const char *const metric_nest[3] = {"resourceMetrics", "scopeMetrics", "metrics"};

/* A metric's points; a long series goes on over several requests, the metric named again in
 * each (its cumulative sums go on from the same start). */
static int metric(struct jsonw *w, const struct results *r, const struct metric_def *d, int fd)
{
    const struct rs_seriesbuf *sb = &r->series[d->s];
    if (!sb->n)
        return 0;
    metric_open(w, d);
    double total = 0;
    for (size_t i = 0; i < sb->n; i++) {
        const struct rs_point *p = &sb->p[i];
        double v = p->v * d->scale;
        if (d->monotonic)
            v = total += v;
        jsonw_obj_open(w);
        if (d->state) {
            jsonw_key(w, "attributes");
            jsonw_arr_open(w);
            attr_str(w, "system.memory.state", d->state);
            jsonw_arr_close(w);
        }
        if (d->sum)
            time_ns(w, "startTimeUnixNano", r, 0);
        time_ns(w, "timeUnixNano", r, p->end_ms);
        if (d->as_int) {
            char b[32];
            snprintf(b, sizeof b, "%lld", (long long)llround(v));
            jsonw_kv_str(w, "asInt", b);
        } else
            jsonw_kv_double(w, "asDouble", v, 6);
        jsonw_obj_close(w);
        if (w->len >= OTLP_LINE_SPLIT && i + 1 < sb->n) {
            metric_close(w, d);
            int rc = maybe_split(w, r, fd, metric_nest);
            if (rc < 0)
                return rc;
            metric_open(w, d);
        }
    }
    metric_close(w, d);
    return 0;
}

static int metrics(struct jsonw *w, const struct results *r, int fd)
{
    static const struct metric_def defs[] = {
        {RS_TREE_CPU, "resmon.tree.cpu.time", "CPU time of the command's process tree", "s", true, true, false,
         1e-3, NULL},
        {RS_TREE_RSS, "resmon.tree.memory.rss", "Resident memory of the command's process tree", "By", false, false,
         true, 1, NULL},
        {RS_CPU_BUSY, "system.cpu.utilization", "Busy fraction of the machine's CPUs", "1", false, false, false, 1,
         NULL},
        {RS_MEM_USED, "system.memory.usage", "Memory in use on the machine", "By", true, false, true, 1, "used"},
    };
    envelope_open(w, r, metric_nest[0], metric_nest[1], metric_nest[2]);
    int rc = 0;
    for (size_t i = 0; i < ARRAY_SIZE(defs) && rc == 0; i++)
        if ((rc = maybe_split(w, r, fd, metric_nest)) == 0)
            rc = metric(w, r, &defs[i], fd);
    envelope_close(w);
    return rc < 0 ? rc : flush_line(w, fd);
}

int otlp_write(const struct results *r, int out_fd, double end_ms)
{
    int rc = results_ready(r, &end_ms);
    if (rc < 0)
        return rc;
    struct jsonw w;
    jsonw_init(&w);
    rc = traces(&w, r, end_ms, out_fd);
    if (rc == 0)
        rc = metrics(&w, r, out_fd);
    jsonw_release(&w);
    return rc;
}

struct fill {
    const struct results *r;
    double end_ms;
};

static int fill_otlp(void *ctx, int fd)
{
    struct fill *f = ctx;
    return otlp_write(f->r, fd, f->end_ms);
}

int otlp_finalize(const struct results *r, int dirfd, const char *path, double end_ms)
{
    struct fill f = {r, end_ms};
    return write_file_atomically(dirfd, path, fill_otlp, &f, NULL);
}
