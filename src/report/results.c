/* results.c — see results.h. */
#include "report/results.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jscan.h"
#include "base/util.h"

static char *dup_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring ? strdup(v->valuestring) : NULL;
}

static double get_num(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : dflt;
}

static void replace(char **dst, char *s)
{
    if (s) {
        free(*dst);
        *dst = s;
    }
}

int results_new(int stream_fd, unsigned what, struct results **ret)
{
    struct results *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    int r = sread_init(&j->rd, stream_fd, true);
    if (r < 0) {
        free(j);
        return r;
    }
    j->what = what;
    *ret = j;
    return 0;
}

static void test_release(struct rs_test *t)
{
    free(t->id);
    free(t->scope);
    free(t->status);
    free(t->expected);
    free(t->message);
    free(t->details);
    free(t->where);
}

void results_free(struct results *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->ntests; i++)
        test_release(&j->tests[i]);
    for (size_t i = 0; i < j->nopen; i++)
        free(j->opens[i].key);
    for (size_t i = 0; i < j->npend; i++) {
        free(j->pend[i].id);
        free(j->pend[i].text);
    }
    free(j->tests);
    free(j->opens);
    sread_release(&j->rd);
    free(j->product);
    free(j->cmd);
    free(j->exit);
    free(j->reason);
    free(j->stop_reason);
    free(j->stop_limit);
    for (size_t i = 0; i < j->n_stop_open; i++)
        free(j->stop_open[i]);
    free(j->stop_open);
    for (size_t i = 0; i < RS_NMETA; i++)
        free(j->meta[i]);
    for (size_t i = 0; i < RS_NSERIES; i++)
        free(j->series[i].p);
    for (size_t i = 0; i < j->nphases; i++)
        free(j->phases[i].name);
    for (size_t i = 0; i < j->ntotals; i++) {
        free(j->totals[i].harness);
        free(j->totals[i].summary);
    }
    free(j->phases);
    free(j);
}

static struct rs_test *new_test(struct results *j)
{
    if (j->ntests == RESULTS_MAX_TESTS) {
        j->left_out++;
        return NULL;
    }
    if (array_grow(&j->tests, &j->tests_cap, j->ntests, sizeof *j->tests) < 0)
        return NULL;
    struct rs_test *t = &j->tests[j->ntests++];
    memset(t, 0, sizeof *t);
    t->cpu_ms = t->rss = -1;
    return t;
}

/* A state line's start: startTime (ms), or startNs on the stream's clock. */
static double line_start(const struct results *j, const cJSON *o)
{
    double ms = get_num(o, "startTime", NAN);
    if (isnan(ms) && j->have_clock) {
        double ns = get_num(o, "startNs", NAN);
        if (!isnan(ns))
            ms = (ns - (double)j->clock_ns) / 1e6;
    }
    return isnan(ms) ? j->last_ms : ms;
}

/* Add a line to *dst, keeping at most RESULTS_MAX_DETAILS bytes. */
static void add_line(char **dst, const char *line)
{
    size_t have = *dst ? strlen(*dst) : 0, add = strlen(line);
    if (have >= RESULTS_MAX_DETAILS)
        return;
    add = MIN(add, RESULTS_MAX_DETAILS - have);
    char *p = realloc(*dst, have + add + 2);
    if (!p)
        return;
    if (have)
        p[have++] = '\n';
    memcpy(p + have, line, add);
    p[have + add] = 0;
    *dst = p;
}

static void take_pending(struct results *j, struct rs_test *t)
{
    for (size_t i = 0; i < j->npend;) {
        if (strcmp(j->pend[i].id, t->id) == 0) {
            add_line(&t->details, j->pend[i].text);
            free(j->pend[i].id);
            free(j->pend[i].text);
            j->pend[i] = j->pend[--j->npend];
        } else
            i++;
    }
}

/* An unexpected subtest status or a crash, said of a test: the open test of that id gets it, or
 * it waits for the test's marker. */
static void on_detail(struct results *j, const char *id, const char *text)
{
    for (size_t i = j->nopen; i > 0; i--) {
        struct rs_test *t = &j->tests[j->opens[i - 1].test];
        if (t->open && strcmp(t->id, id) == 0) {
            add_line(&t->details, text);
            return;
        }
    }
    for (size_t i = 0; i < j->npend; i++)
        if (strcmp(j->pend[i].id, id) == 0) {
            add_line(&j->pend[i].text, text);
            return;
        }
    if (j->npend == RESULTS_MAX_PENDING) { /* the oldest goes */
        free(j->pend[0].id);
        free(j->pend[0].text);
        memmove(&j->pend[0], &j->pend[1], (RESULTS_MAX_PENDING - 1) * sizeof *j->pend);
        j->npend--;
    }
    struct rs_pending *p = &j->pend[j->npend];
    p->id = strdup(id);
    p->text = strdup(text);
    if (p->id && p->text)
        j->npend++;
    else {
        free(p->id);
        free(p->text);
    }
}

static void on_status_marker(struct results *j, const cJSON *o, bool crash)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(data, "test");
    const cJSON *color = cJSON_GetObjectItemCaseSensitive(data, "color");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (!cJSON_IsString(id) || !id->valuestring || !cJSON_IsString(name) || !name->valuestring)
        return;
    if (!crash && !(cJSON_IsString(color) && color->valuestring &&
                    (!strcmp(color->valuestring, "orange") || !strcmp(color->valuestring, "red"))))
        return;
    const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, crash ? "signature" : "subtest"));
    const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, crash ? "reason" : "message"));
    char *line = NULL;
    if (asprintf(&line, "%s%s%s%s%s", name->valuestring, a ? " " : "", a ? a : "", b ? ": " : "", b ? b : "") < 0)
        return;
    on_detail(j, id->valuestring, line);
    free(line);
}

static bool status_in(const char *s, const char *const *set)
{
    for (; s && *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

static void fill_result(struct results *j, struct rs_test *t, const cJSON *data)
{
    t->ended = ++j->results_seen;
    t->leaked = (uint64_t)MAX(get_num(data, "leaked", 0), 0);
    replace(&t->status, dup_str(data, "status"));
    replace(&t->expected, dup_str(data, "expected"));
    replace(&t->message, dup_str(data, "message"));
    t->cpu_ms = get_num(data, "cpuTime", t->cpu_ms);
    t->rss = get_num(data, "maxRSS", t->rss);
    /* The payload names the expected status only when it differs; green is a result as
     * expected, orange an unexpected one; an outcome is the harness's word that this status was
     * expected (a known failure, an expected ERROR or TIMEOUT, whose colour is the status's);
     * else the harness's default holds (test-logs.md): PASS, OK, SKIP and NOTRUN are expected. */
    static const char *const fine[] = {"PASS", "OK", "SKIP", "NOTRUN", NULL};
    const char *color = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "color"));
    if (t->expected)
        t->unexpected = true;
    else if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(data, "outcome")))
        t->unexpected = false;
    else if (color && !strcmp(color, "green"))
        t->unexpected = false;
    else if (color && !strcmp(color, "orange"))
        t->unexpected = true;
    else
        t->unexpected = !status_in(t->status, fine);
}

/* The harness's scope of the test (go's package, a TAP file or parent subtest, a mozlog subsuite),
 * kept only when the full name is that scope, a '/' and the test's own name. */
static void take_scope(struct rs_test *t, const cJSON *data)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "scope"));
    size_t n = s ? strlen(s) : 0;
    if (!t->scope && n && t->id && strncmp(t->id, s, n) == 0 && t->id[n] == '/' && t->id[n + 1])
        t->scope = strdup(s);
}

static void drop_test(struct results *j, size_t k);

/* A result that completes the same test's earlier one (the payload's "amends": pytest's error at
 * teardown after the test passed): the test ended before, and this is its result; the entry the
 * result's own start line opened goes. False when no ended test of that id is left to amend. */
static bool amend_test(struct results *j, const cJSON *o, const cJSON *data, const char *id)
{
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(data, "amends")))
        return false;
    size_t k = j->ntests;
    while (k > 0 && (j->tests[k - 1].open || !j->tests[k - 1].id || strcmp(j->tests[k - 1].id, id)))
        k--;
    if (!k)
        return false;
    struct rs_test *t = &j->tests[k - 1];
    t->end = get_num(o, "endTime", j->last_ms);
    fill_result(j, t, data);
    take_pending(j, t);
    for (size_t i = j->nopen; i > 0; i--) {
        size_t ot = j->opens[i - 1].test;
        if (j->tests[ot].open && strcmp(j->tests[ot].id, id) == 0) {
            free(j->opens[i - 1].key);
            memmove(&j->opens[i - 1], &j->opens[i], (j->nopen - i) * sizeof *j->opens);
            j->nopen--;
            drop_test(j, ot); /* after the earlier test: it stays where it is */
            break;
        }
    }
    return true;
}

/* A test's result. A kill between its marker and its close line leaves the test open too: the
 * most recent open entry of the same id is the same test. */
static void on_test_marker(struct results *j, const cJSON *o)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(data, "test");
    if (!cJSON_IsString(id) || !id->valuestring || amend_test(j, o, data, id->valuestring))
        return;
    for (size_t i = j->nopen; i > 0; i--) {
        struct rs_test *ot = &j->tests[j->opens[i - 1].test];
        if (ot->open && strcmp(ot->id, id->valuestring) == 0) {
            ot->open = false;
            ot->end = get_num(o, "endTime", j->last_ms);
            fill_result(j, ot, data);
            take_pending(j, ot);
            return;
        }
    }
    struct rs_test *t = new_test(j);
    if (!t)
        return;
    t->id = strdup(id->valuestring);
    t->start = get_num(o, "startTime", j->last_ms);
    t->end = get_num(o, "endTime", t->start);
    take_scope(t, data);
    fill_result(j, t, data);
    if (t->id)
        take_pending(j, t);
}

static void on_open_test(struct results *j, const cJSON *o)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(o, "key");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(data, "test");
    if (!cJSON_IsString(key) || !cJSON_IsString(id) || !key->valuestring || !id->valuestring)
        return;
    if (array_grow(&j->opens, &j->opens_cap, j->nopen, sizeof *j->opens) < 0)
        return;
    struct rs_test *t = new_test(j);
    if (!t)
        return;
    t->id = strdup(id->valuestring);
    t->start = line_start(j, o);
    t->open = true;
    take_scope(t, data);
    char *k = strdup(key->valuestring);
    if (!t->id || !k) {
        free(k);
        return;
    }
    j->opens[j->nopen++] = (struct rs_open){k, (size_t)(t - j->tests)};
}

/* A test taken back: tests[k] goes, and what points past it moves down. */
static void drop_test(struct results *j, size_t k)
{
    test_release(&j->tests[k]);
    memmove(&j->tests[k], &j->tests[k + 1], (j->ntests - k - 1) * sizeof *j->tests);
    j->ntests--;
    for (size_t i = 0; i < j->nopen; i++)
        if (j->opens[i].test > k)
            j->opens[i].test--;
    if (j->msg_next > k)
        j->msg_next--;
    if (j->msg_next >= j->ntests)
        j->msg_next = 0;
}

/* Opens of the same key nest: a close ends the most recent. Its test has had its marker (which
 * came first) or, after a duplicate, stays as it was. A close without a marker takes the test
 * back: the line that seemed to start it was not what it read as (testlog.h, an unfinished
 * line's tail), and the profile has no test for it either. */
static void on_close_test(struct results *j, const cJSON *o)
{
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(o, "key");
    if (!cJSON_IsString(key) || !key->valuestring)
        return;
    for (size_t i = j->nopen; i > 0; i--) {
        if (strcmp(j->opens[i - 1].key, key->valuestring) == 0) {
            size_t k = j->opens[i - 1].test;
            bool taken_back = j->tests[k].open;
            free(j->opens[i - 1].key);
            memmove(&j->opens[i - 1], &j->opens[i], (j->nopen - i) * sizeof *j->opens);
            j->nopen--;
            if (taken_back)
                drop_test(j, k);
            return;
        }
    }
}

/* A message line (testlog.h): the failure text of a test that ended without one, as the
 * profile's converter gives it (profile.h, LATE MESSAGES): the test of that name (and status,
 * when the line says one) that went
 * otherwise than expected and has no message gets it, as does one whose message the line cut
 * (text_cut_of: a skip's whole reason). The search starts after the test given the
 * last one: a harness prints the texts in the order the tests ended. */
static void on_message(struct results *j, const cJSON *o)
{
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "test"));
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "message"));
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "status"));
    const char *where = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "where"));
    if (!id || !msg || !*msg)
        return;
    for (size_t k = 0; k < j->ntests; k++) {
        size_t i = (j->msg_next + k) % j->ntests;
        struct rs_test *t = &j->tests[i];
        if (t->open || !t->id || strcmp(t->id, id) != 0 || (status && !results_is(t->status, status)) ||
            (t->message ? !text_cut_of(t->message, strlen(t->message), msg, strlen(msg)) : !t->unexpected))
            continue;
        replace(&t->message, strdup(msg));
        free(t->where);
        t->where = where ? strdup(where) : NULL;
        j->msg_next = i + 1;
        return;
    }
}

/* The tests the stop's marker says were running (testlog.h's names: "after N, NAME" where the
 * format announces no start): the last stop's. */
static void on_stop_open(struct results *j, const cJSON *data)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(data, "openTests"), *e;
    for (size_t i = 0; i < j->n_stop_open; i++)
        free(j->stop_open[i]);
    j->n_stop_open = 0;
    size_t n = (size_t)MAX(cJSON_GetArraySize(list), 0), cap = 0;
    if (!n || array_reserve(&j->stop_open, &cap, n, sizeof *j->stop_open) < 0)
        return;
    cJSON_ArrayForEach(e, list)
        if (cJSON_IsString(e) && e->valuestring && (j->stop_open[j->n_stop_open] = strdup(e->valuestring)))
            j->n_stop_open++;
}

static void on_command(struct results *j, const cJSON *data)
{
    replace(&j->cmd, dup_str(data, "cmd"));
    replace(&j->exit, dup_str(data, "exit"));
    replace(&j->reason, dup_str(data, "reason"));
}

/* Where each series is read from: a sample marker (by its name) and a field of its data. The
 * series of one marker are neighbours. */
static const struct {
    const char *marker, *field;
} series_src[RS_NSERIES] = {
    [RS_TREE_CPU] = {"Tree CPU", "cpuTime"},
    [RS_TREE_RSS] = {"Tree Memory", "rss"},
    [RS_CPU_BUSY] = {"CPU Use", "busy"},
    [RS_MEM_USED] = {"Memory", "used"},
    [RS_IO_READ] = {"IO", "read_bytes"},
    [RS_IO_WRITE] = {"IO", "write_bytes"},
    [RS_IO_READ_TIME] = {"IO", "read_time"},
    [RS_IO_WRITE_TIME] = {"IO", "write_time"},
    [RS_TREE_IO_READ] = {"Tree IO", "read_bytes"},
    [RS_TREE_IO_WRITE] = {"Tree IO", "write_bytes"},
};

/* Two neighbouring points as one: a busy fraction averages, memory keeps its peak, the amounts
 * (CPU time, I/O bytes and times) add up. */
static struct rs_point merge(enum rs_series k, struct rs_point a, struct rs_point b)
{
    struct rs_point m = {a.start_ms, b.end_ms, 0};
    m.v = k == RS_CPU_BUSY ? (a.v + b.v) / 2 : k == RS_TREE_RSS || k == RS_MEM_USED ? MAX(a.v, b.v) : a.v + b.v;
    return m;
}

static void on_sample(struct results *j, enum rs_series k, const cJSON *o, const cJSON *data)
{
    if (k + 1 < RS_NSERIES && !strcmp(series_src[k + 1].marker, series_src[k].marker)) /* one marker, more series */
        on_sample(j, k + 1, o, data);
    double v = get_num(data, series_src[k].field, NAN);
    if (isnan(v))
        return;
    struct rs_seriesbuf *sb = &j->series[k];
    struct rs_point pt = {get_num(o, "startTime", j->last_ms), get_num(o, "endTime", j->last_ms), v};
    if (sb->n == RESULTS_MAX_POINTS) { /* full: neighbours merge, the series keeps its span */
        for (size_t i = 0; i + 1 < sb->n; i += 2)
            sb->p[i / 2] = merge(k, sb->p[i], sb->p[i + 1]);
        sb->n /= 2;
    }
    if (array_grow(&sb->p, &sb->cap, sb->n, sizeof *sb->p) < 0)
        return;
    sb->p[sb->n++] = pt;
    sb->seen++;
}

static void on_phase(struct results *j, const cJSON *o, const cJSON *data)
{
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "phase"));
    if (!name || j->nphases == RESULTS_MAX_PHASES ||
        array_grow(&j->phases, &j->phases_cap, j->nphases, sizeof *j->phases) < 0)
        return;
    struct rs_phase *ph = &j->phases[j->nphases];
    ph->start_ms = get_num(o, "startTime", j->last_ms);
    ph->end_ms = get_num(o, "endTime", ph->start_ms);
    if ((ph->name = strdup(name)))
        j->nphases++;
}

double results_series_mean(const struct results *r, enum rs_series k, double from_ms, double to_ms)
{
    const struct rs_seriesbuf *sb = &r->series[k];
    double sum = 0, weight = 0;
    for (size_t i = 0; i < sb->n; i++) {
        const struct rs_point *p = &sb->p[i];
        double w = MIN(p->end_ms, to_ms) - MAX(p->start_ms, from_ms);
        if (w > 0 || (p->end_ms == p->start_ms && p->end_ms >= from_ms && p->end_ms < to_ms)) {
            w = MAX(w, 1e-9);
            sum += p->v * w;
            weight += w;
        }
    }
    return weight > 0 ? sum / weight : NAN;
}

int results_ready(const struct results *r, double *end_ms)
{
    if (r->err)
        return r->err;
    if (!r->have_meta)
        return -EINVAL;
    if (*end_ms < 0)
        *end_ms = r->last_ms;
    return 0;
}

double results_series_sum(const struct results *r, enum rs_series k)
{
    double sum = 0;
    for (size_t i = 0; i < r->series[k].n; i++)
        sum += r->series[k].p[i].v;
    return sum;
}

/* What a line is to the results. */
enum line_kind {
    L_NONE,
    L_META,
    L_CLOCK,
    L_TEST,         /* a "test" marker */
    L_STOP,         /* the stop's marker (runmarks.h names it) */
    L_COMMAND,      /* the command's marker, or its open line */
    L_OPEN_TEST,
    L_CLOSE_TEST,
    L_STATUS,       /* a TestStatus marker */
    L_CRASH,        /* a Crash marker */
    L_TOTALS,       /* a TestTotals marker */
    L_PHASE,        /* a Phase marker (RESULTS_SAMPLES) */
    L_MESSAGE,
    L_SAMPLE,       /* a sample marker (RESULTS_SAMPLES): L_SAMPLE + its first series */
};

/* Whether the payload's type is type (its first member, as every producer writes it). */
static bool payload_is(const struct js_member *data, const char *type)
{
    struct js_iter it;
    struct js_member m;
    return data && js_obj_begin(&it, data->val, data->val + data->val_len) == 0 && js_obj_next(&it, &m) > 0 &&
           js_key_is(&m, "type") && js_val_is_str(&m, type);
}

/* Whether the payload's colour is orange or red (an unexpected status). */
static bool payload_color_bad(const struct js_member *data)
{
    struct js_iter it;
    struct js_member m;
    if (js_obj_begin(&it, data->val, data->val + data->val_len) < 0)
        return false;
    while (js_obj_next(&it, &m) > 0)
        if (js_key_is(&m, "color"))
            return js_val_is_str(&m, "orange") || js_val_is_str(&m, "red");
    return false;
}

static enum line_kind marker_kind(const struct results *j, const struct sline_marker *f)
{
    const struct js_member *name = f->name;
    if (js_val_is_str(name, "test"))
        return L_TEST;
    if (js_val_is_str(name, "timeout") || js_val_is_str(name, "memory limit") || js_val_is_str(name, "CPU limit") ||
        js_val_is_str(name, "tasks limit"))
        return L_STOP;
    if (js_val_is_str(name, "command"))
        return L_COMMAND;
    if (j->what & RESULTS_SAMPLES) {
        for (size_t k = 0; k < RS_NSERIES; k++)
            if (js_val_is_str(name, series_src[k].marker))
                return (enum line_kind)(L_SAMPLE + k);
        if (js_val_is_str(name, "Phase"))
            return L_PHASE;
    }
    /* a status counts against its test only when unexpected: the many that are not (a suite's
     * passing subtests) are passed by on their colour, unparsed */
    if (payload_is(f->data, "TestStatus"))
        return payload_color_bad(f->data) ? L_STATUS : L_NONE;
    if (payload_is(f->data, "Crash"))
        return L_CRASH;
    if (payload_is(f->data, "TestTotals"))
        return L_TOTALS;
    return L_NONE;
}

/* An open or close line's kind, its members read up to it. */
static bool kind_is(const char *p, size_t n, const char *kind)
{
    struct js_iter it;
    struct js_member m;
    if (js_obj_begin(&it, p, p + n) < 0)
        return false;
    while (js_obj_next(&it, &m) > 0)
        if (js_key_is(&m, "kind"))
            return js_val_is_str(&m, kind);
    return false;
}

/* What the line is, read by the stream's reader; a marker's times count for the stream's end. */
static enum line_kind line_kind(struct results *j, const char *p, size_t n)
{
    struct sline_marker f;
    switch (sline_type(p, n)) {
    case SLINE_MARKER:
        if (!sline_marker(p, n, true, &f))
            return L_NONE;
        double t = isnan(f.en) ? f.st : MAX(f.st, f.en);
        if (isfinite(t) && t > j->last_ms)
            j->last_ms = t;
        return marker_kind(j, &f);
    case SLINE_CLOCK: return L_CLOCK;
    case SLINE_OPEN:
        return kind_is(p, n, "test") ? L_OPEN_TEST : kind_is(p, n, "command") ? L_COMMAND : L_NONE;
    case SLINE_CLOSE: return kind_is(p, n, "test") ? L_CLOSE_TEST : L_NONE;
    case SLINE_MESSAGE: return L_MESSAGE;
    default: return L_NONE;
    }
}

static void on_meta(struct results *j, const cJSON *o)
{
    j->have_meta = true;
    replace(&j->product, dup_str(o, "product"));
    j->start_wall_ms = get_num(o, "startTime", 0);
    static const char *const keys[RS_NMETA] = {
        [RS_CI] = "ci", [RS_CI_JOB_URL] = "ciJobURL", [RS_DEVICE] = "device", [RS_SOURCE_URL] = "sourceURL",
        [RS_APP_BUILD_ID] = "appBuildID", [RS_CI_REPOSITORY] = "ciRepository", [RS_CI_REVISION] = "ciRevision",
    };
    for (size_t i = 0; i < RS_NMETA; i++)
        replace(&j->meta[i], dup_str(o, keys[i]));
}

static void on_totals(struct results *j, const cJSON *data)
{
    char *harness = dup_str(data, "harness"), *summary = dup_str(data, "summary");
    double total = get_num(data, "total", NAN);
    if (!harness || !summary || !(total >= 0 && total < 9e15)) {
        free(harness);
        free(summary);
        return;
    }
    if (j->ntotals == RESULTS_MAX_TOTALS) {
        free(j->totals[0].harness);
        free(j->totals[0].summary);
        memmove(&j->totals[0], &j->totals[1], (RESULTS_MAX_TOTALS - 1) * sizeof j->totals[0]);
        j->ntotals--;
    }
    struct rs_totals *t = &j->totals[j->ntotals++];
    *t = (struct rs_totals){harness, summary, (int64_t)total};
    if (j->totals_sum <= INT64_MAX - t->total)
        j->totals_sum += t->total;
}

static void on_line(struct results *j, const char *p, size_t n)
{
    enum line_kind what;
    if (!j->have_meta) {
        if (!sline_is_meta(p, n)) {
            j->err = -EINVAL;
            return;
        }
        what = L_META;
    } else if ((what = line_kind(j, p, n)) == L_NONE)
        return;
    cJSON *o = cJSON_ParseWithLength(p, n);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        if (what == L_META)
            j->err = -EINVAL;
        return;
    }
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    switch (what) {
    case L_NONE: break;
    case L_META: on_meta(j, o); break;
    case L_CLOCK: {
        double ns = get_num(o, "monotonicNs", NAN);
        if (!isnan(ns) && ns >= 0) {
            j->clock_ns = (uint64_t)ns;
            j->have_clock = true;
        }
        break;
    }
    case L_TEST: on_test_marker(j, o); break;
    case L_STOP:
        replace(&j->stop_reason, dup_str(data, "reason"));
        replace(&j->stop_limit, dup_str(data, "limit"));
        j->stop_after_ms = get_num(data, "after", 0);
        on_stop_open(j, data);
        break;
    case L_COMMAND: on_command(j, data); break;
    case L_OPEN_TEST: on_open_test(j, o); break;
    case L_CLOSE_TEST: on_close_test(j, o); break;
    case L_STATUS:
    case L_CRASH: on_status_marker(j, o, what == L_CRASH); break;
    case L_PHASE: on_phase(j, o, data); break;
    case L_TOTALS: on_totals(j, data); break;
    case L_MESSAGE: on_message(j, o); break;
    default: on_sample(j, (enum rs_series)(what - L_SAMPLE), o, data); break;
    }
    cJSON_Delete(o);
}

int results_update(struct results *j)
{
    const char *line;
    size_t len;
    uint64_t off;
    int r;
    while (!j->err && (r = sread_next(&j->rd, &line, &len, &off)) != 0) {
        if (r < 0)
            return j->err = r;
        if (len)
            on_line(j, line, len);
    }
    sread_shrink(&j->rd);
    return j->err;
}

bool results_end(const struct results *r, enum runmarks_reason *ret)
{
    return r->stop_reason ? runmarks_reason_parse(r->stop_reason, true, ret)
                          : runmarks_reason_parse(r->reason, false, ret);
}

static int by_ended(const void *a, const void *b)
{
    uint64_t x = (*(const struct rs_test *const *)a)->ended, y = (*(const struct rs_test *const *)b)->ended;
    return x < y ? -1 : x > y;
}

size_t results_ended(const struct results *r, const struct rs_test ***ret)
{
    *ret = NULL;
    size_t n = 0;
    for (size_t i = 0; i < r->ntests; i++)
        n += !r->tests[i].open && r->tests[i].id;
    const struct rs_test **list = n ? malloc(n * sizeof *list) : NULL;
    if (!list)
        return 0;
    n = 0;
    for (size_t i = 0; i < r->ntests; i++)
        if (!r->tests[i].open && r->tests[i].id)
            list[n++] = &r->tests[i];
    qsort(list, n, sizeof *list, by_ended);
    *ret = list;
    return n;
}

uint64_t results_duration_ns(const struct rs_test *t)
{
    double ms = t->end - t->start;
    return ms > 0 ? (uint64_t)llround(ms * 1e6) : 0;
}

bool results_is(const char *s, const char *lit)
{
    return s && strcmp(s, lit) == 0;
}

/* Why the tests still open at the end did not end, in words ("the run timed out after 2 s
 * (--timeout)"), and whether that was a timeout: read from the typed end (results_end), so that
 * a command that died of a signal nobody sent is its own crash, not a stop. */
bool results_cut(const struct results *r, const struct rs_test *t)
{
    if (t->open || (results_is(t->status, "INCOMPLETE") && !t->message))
        return true;
    for (size_t i = 0; t->id && i < r->n_stop_open; i++)
        if (!strcmp(r->stop_open[i], t->id))
            return true;
    return false;
}

char *results_stop_words(const struct results *j, bool *timeout)
{
    enum runmarks_reason end;
    char *s = NULL;
    *timeout = false;
    if (!results_end(j, &end)) {
        if (j->stop_reason) /* a word this build does not know */
            (void)!asprintf(&s, "the run was stopped (%s)", j->stop_reason);
        else
            s = strdup("the record stopped (resmon-run was killed, or is still running)");
        return s;
    }
    const char *exit = j->exit ? j->exit : "";
    switch (end) {
    case RUN_TIMEOUT:
        *timeout = true;
        if (j->stop_after_ms > 0)
            (void)!asprintf(&s, "the run timed out after %g s (--timeout)", j->stop_after_ms / 1000);
        else
            s = strdup("the run timed out");
        break;
    case RUN_OUTPUT_TIMEOUT:
        *timeout = true;
        (void)!asprintf(&s, "the command printed nothing for %g s (--output-timeout)", j->stop_after_ms / 1000);
        break;
    case RUN_CPU:
    case RUN_MEMORY:
    case RUN_TASKS:
        *timeout = end == RUN_CPU;
        (void)!asprintf(&s, "the run reached its %s limit (--%s-limit)%s%s",
                        end == RUN_CPU ? "CPU time" : end == RUN_TASKS ? "tasks" : "memory",
                        runmarks_reason_name(end), j->stop_limit ? ": " : "", j->stop_limit ? j->stop_limit : "");
        break;
    case RUN_STOPPED: s = strdup("the run was stopped by a signal"); break;
    case RUN_PARENT_DIED: s = strdup("the run was stopped: resmon-run's parent went away"); break;
    case RUN_SIGNAL: (void)!asprintf(&s, "the command died of %s", exit); break;
    case RUN_OOM_KILL: s = strdup("the kernel's OOM killer killed the command"); break;
    case RUN_EXEC_FAILED: (void)!asprintf(&s, "the command could not be run (%s)", exit); break;
    case RUN_EXIT: (void)!asprintf(&s, "the command ended (%s)", exit); break;
    }
    return s;
}
