/* junit.c — see junit.h. */
#include "junit.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/xmlwriter.h>

#include "util.h"

#define JUNIT_MAX_LINE (16u * 1024 * 1024) /* as the profile's converter (profile.h) */
#define READ_CHUNK (256u * 1024)

struct jtest {
    char *id, *status, *expected, *message;
    double start, end; /* profile ms */
    double cpu_ms;     /* < 0: unknown */
    double rss;        /* bytes; < 0: unknown */
    bool open;         /* never ended */
    bool unexpected;
    char *details;     /* what the log said against it (unexpected subtests, crashes), bounded */
};

/* Details of a test whose marker has not come yet (a test that starts and ends within one chunk
 * of output has no open line: its statuses come first). */
struct jpending {
    char *id, *text;
};
#define MAX_PENDING 64
#define MAX_DETAILS 8192

struct jopen {
    char *key;
    size_t test; /* index in tests */
};

struct junit {
    int fd;
    off_t off;            /* the first byte not yet read into a complete line */
    int err;
    bool have_meta;
    char *buf;
    size_t cap;
    struct jtest *tests;
    size_t ntests, tests_cap, left_out;
    struct jopen *opens;
    size_t nopen, opens_cap;
    struct jpending pend[MAX_PENDING];
    size_t npend;
    double last_ms, start_wall_ms, clock_ms_per_ns; /* clock: monotonicNs of time 0 */
    uint64_t clock_ns;
    bool have_clock;
    char *product;
    /* the run */
    char *cmd, *exit, *reason;      /* the command marker or its open line */
    char *stop_reason, *stop_limit; /* the timeout marker */
    double stop_after_ms;           /* its "after" (0: none) */
    struct junit_stats st;
};

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

int junit_new(int stream_fd, struct junit **ret)
{
    xmlInitParser();
    struct junit *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->fd = stream_fd;
    j->last_ms = 0;
    *ret = j;
    return 0;
}

static void test_release(struct jtest *t)
{
    free(t->id);
    free(t->status);
    free(t->expected);
    free(t->message);
    free(t->details);
}

void junit_free(struct junit *j)
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
    free(j->buf);
    free(j->product);
    free(j->cmd);
    free(j->exit);
    free(j->reason);
    free(j->stop_reason);
    free(j->stop_limit);
    free(j);
}

static struct jtest *new_test(struct junit *j)
{
    if (j->ntests == JUNIT_MAX_TESTS) {
        j->left_out++;
        return NULL;
    }
    if (array_grow(&j->tests, &j->tests_cap, j->ntests, sizeof *j->tests) < 0)
        return NULL;
    struct jtest *t = &j->tests[j->ntests++];
    memset(t, 0, sizeof *t);
    t->cpu_ms = t->rss = -1;
    return t;
}

/* A state line's start: startTime (ms), or startNs on the stream's clock. */
static double line_start(const struct junit *j, const cJSON *o)
{
    double ms = get_num(o, "startTime", NAN);
    if (isnan(ms) && j->have_clock) {
        double ns = get_num(o, "startNs", NAN);
        if (!isnan(ns))
            ms = (ns - (double)j->clock_ns) / 1e6;
    }
    return isnan(ms) ? j->last_ms : ms;
}

/* Add a line to *dst, keeping at most MAX_DETAILS bytes. */
static void add_line(char **dst, const char *line)
{
    size_t have = *dst ? strlen(*dst) : 0, add = strlen(line);
    if (have >= MAX_DETAILS)
        return;
    add = MIN(add, MAX_DETAILS - have);
    char *p = realloc(*dst, have + add + 2);
    if (!p)
        return;
    if (have)
        p[have++] = '\n';
    memcpy(p + have, line, add);
    p[have + add] = 0;
    *dst = p;
}

static void take_pending(struct junit *j, struct jtest *t)
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
static void on_detail(struct junit *j, const char *id, const char *text)
{
    for (size_t i = j->nopen; i > 0; i--) {
        struct jtest *t = &j->tests[j->opens[i - 1].test];
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
    if (j->npend == MAX_PENDING) { /* the oldest goes */
        free(j->pend[0].id);
        free(j->pend[0].text);
        memmove(&j->pend[0], &j->pend[1], (MAX_PENDING - 1) * sizeof *j->pend);
        j->npend--;
    }
    struct jpending *p = &j->pend[j->npend];
    p->id = strdup(id);
    p->text = strdup(text);
    if (p->id && p->text)
        j->npend++;
    else {
        free(p->id);
        free(p->text);
    }
}

static void on_status_marker(struct junit *j, const cJSON *o, bool crash)
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

static void fill_result(struct jtest *t, const cJSON *data)
{
    replace(&t->status, dup_str(data, "status"));
    replace(&t->expected, dup_str(data, "expected"));
    replace(&t->message, dup_str(data, "message"));
    t->cpu_ms = get_num(data, "cpuTime", t->cpu_ms);
    t->rss = get_num(data, "maxRSS", t->rss);
    /* The payload names the expected status only when it differs; green is a result as
     * expected, orange an unexpected one; yellow and red say nothing of it, and then the
     * harness's default holds (test-logs.md): PASS, OK, SKIP and NOTRUN are expected. */
    static const char *const fine[] = {"PASS", "OK", "SKIP", "NOTRUN", NULL};
    const char *color = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "color"));
    if (t->expected)
        t->unexpected = true;
    else if (color && !strcmp(color, "green"))
        t->unexpected = false;
    else if (color && !strcmp(color, "orange"))
        t->unexpected = true;
    else
        t->unexpected = !status_in(t->status, fine);
}

/* A test's result. A kill between its marker and its close line leaves the test open too: the
 * most recent open entry of the same id is the same test. */
static void on_test_marker(struct junit *j, const cJSON *o)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(data, "test");
    if (!cJSON_IsString(id) || !id->valuestring)
        return;
    for (size_t i = j->nopen; i > 0; i--) {
        struct jtest *ot = &j->tests[j->opens[i - 1].test];
        if (ot->open && strcmp(ot->id, id->valuestring) == 0) {
            ot->open = false;
            ot->end = get_num(o, "endTime", j->last_ms);
            fill_result(ot, data);
            take_pending(j, ot);
            return;
        }
    }
    struct jtest *t = new_test(j);
    if (!t)
        return;
    t->id = strdup(id->valuestring);
    t->start = get_num(o, "startTime", j->last_ms);
    t->end = get_num(o, "endTime", t->start);
    fill_result(t, data);
    if (t->id)
        take_pending(j, t);
}

static void on_open_test(struct junit *j, const cJSON *o)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(o, "key");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(data, "test");
    if (!cJSON_IsString(key) || !cJSON_IsString(id) || !key->valuestring || !id->valuestring)
        return;
    if (array_grow(&j->opens, &j->opens_cap, j->nopen, sizeof *j->opens) < 0)
        return;
    struct jtest *t = new_test(j);
    if (!t)
        return;
    t->id = strdup(id->valuestring);
    t->start = line_start(j, o);
    t->open = true;
    char *k = strdup(key->valuestring);
    if (!t->id || !k) {
        free(k);
        return;
    }
    j->opens[j->nopen++] = (struct jopen){k, (size_t)(t - j->tests)};
}

/* Opens of the same key nest: a close ends the most recent. Its test has had its marker (which
 * came first) or, after a duplicate, stays as it was. */
static void on_close_test(struct junit *j, const cJSON *o)
{
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(o, "key");
    if (!cJSON_IsString(key) || !key->valuestring)
        return;
    for (size_t i = j->nopen; i > 0; i--) {
        if (strcmp(j->opens[i - 1].key, key->valuestring) == 0) {
            struct jtest *t = &j->tests[j->opens[i - 1].test];
            if (t->open) { /* a close without its marker: it ended, result unknown */
                t->open = false;
                t->end = j->last_ms;
            }
            free(j->opens[i - 1].key);
            memmove(&j->opens[i - 1], &j->opens[i], (j->nopen - i) * sizeof *j->opens);
            j->nopen--;
            return;
        }
    }
}

static void on_command(struct junit *j, const cJSON *data)
{
    replace(&j->cmd, dup_str(data, "cmd"));
    replace(&j->exit, dup_str(data, "exit"));
    replace(&j->reason, dup_str(data, "reason"));
}

static bool starts(const char *p, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && memcmp(p, lit, l) == 0;
}

/* The time of a marker line, read without parsing it (the stream's own key order: name, then
 * startTime, endTime). */
static void note_time(struct junit *j, const char *p, size_t n)
{
    static const char k1[] = "\"startTime\":", k2[] = "\"endTime\":";
    const char *s = memmem(p, MIN(n, 4096), k1, sizeof k1 - 1);
    if (!s)
        return;
    char *e;
    double t = strtod(s + sizeof k1 - 1, &e);
    if (e && *e == ',' && (size_t)(e - p) + sizeof k2 - 1 < n && memcmp(e + 1, k2, sizeof k2 - 1) == 0) {
        char *e2;
        double t2 = strtod(e + sizeof k2, &e2);
        if (e2 != e + sizeof k2 && isfinite(t2))
            t = MAX(t, t2);
    }
    if (isfinite(t) && t > j->last_ms)
        j->last_ms = t;
}

static void on_line(struct junit *j, const char *p, size_t n)
{
    bool marker = starts(p, n, "{\"type\":\"marker\",");
    if (marker)
        note_time(j, p, n);
    int what;
    if (!j->have_meta)
        what = starts(p, n, "{\"type\":\"meta\"") ? 1 : -1;
    else if (starts(p, n, "{\"type\":\"clock\""))
        what = 2;
    else if (marker && starts(p, n, "{\"type\":\"marker\",\"name\":\"test\","))
        what = 3;
    else if (marker && starts(p, n, "{\"type\":\"marker\",\"name\":\"timeout\","))
        what = 4;
    else if (marker && starts(p, n, "{\"type\":\"marker\",\"name\":\"command\","))
        what = 5;
    else if (starts(p, n, "{\"type\":\"open\",\"kind\":\"test\","))
        what = 6;
    else if (starts(p, n, "{\"type\":\"close\",\"kind\":\"test\","))
        what = 7;
    else if (starts(p, n, "{\"type\":\"open\",\"kind\":\"command\","))
        what = 8;
    else if (marker && memmem(p, MIN(n, 512), "\"data\":{\"type\":\"TestStatus\",", 28))
        what = 9;
    else if (marker && memmem(p, MIN(n, 512), "\"data\":{\"type\":\"Crash\",", 23))
        what = 10;
    else
        return;
    if (what < 0) {
        j->err = -EINVAL;
        return;
    }
    cJSON *o = cJSON_ParseWithLength(p, n);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        if (what == 1)
            j->err = -EINVAL;
        return;
    }
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    switch (what) {
    case 1:
        j->have_meta = true;
        replace(&j->product, dup_str(o, "product"));
        j->start_wall_ms = get_num(o, "startTime", 0);
        break;
    case 2: {
        double ns = get_num(o, "monotonicNs", NAN);
        if (!isnan(ns) && ns >= 0) {
            j->clock_ns = (uint64_t)ns;
            j->have_clock = true;
        }
        break;
    }
    case 3: on_test_marker(j, o); break;
    case 4:
        replace(&j->stop_reason, dup_str(data, "reason"));
        replace(&j->stop_limit, dup_str(data, "limit"));
        j->stop_after_ms = get_num(data, "after", 0);
        break;
    case 5:
    case 8: on_command(j, data); break;
    case 6: on_open_test(j, o); break;
    case 7: on_close_test(j, o); break;
    case 9:
    case 10: on_status_marker(j, o, what == 10); break;
    }
    cJSON_Delete(o);
}

int junit_update(struct junit *j)
{
    if (j->err)
        return j->err;
    size_t have = 0;   /* bytes in buf from j->off */
    bool skipping = false; /* inside an over-long line */
    for (;;) {
        if (have + READ_CHUNK + 1 > j->cap) {
            size_t cap = MAX(j->cap * 2, have + READ_CHUNK + 1);
            char *b = realloc(j->buf, cap);
            if (!b)
                return j->err = -ENOMEM;
            j->buf = b;
            j->cap = cap;
        }
        ssize_t got = pread(j->fd, j->buf + have, READ_CHUNK, j->off + (off_t)have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return j->err = -errno;
        if (got == 0)
            break;
        have += (size_t)got;
        size_t pos = 0;
        for (;;) {
            char *nl = memchr(j->buf + pos, '\n', have - pos);
            if (!nl)
                break;
            size_t len = (size_t)(nl - (j->buf + pos));
            if (!skipping && len)
                on_line(j, j->buf + pos, len);
            skipping = false;
            if (j->err)
                return j->err;
            pos += len + 1;
        }
        j->off += (off_t)pos;
        memmove(j->buf, j->buf + pos, have - pos);
        have -= pos;
        if (have >= JUNIT_MAX_LINE) { /* skipped, like the converter does */
            j->off += (off_t)have;
            have = 0;
            skipping = true;
        }
    }
    return 0;
}

void junit_stats(const struct junit *j, struct junit_stats *ret)
{
    *ret = j->st;
}

/* ---- names ---------------------------------------------------------------------------------- */

static const char *find2(const char *p, size_t n, const char *lit)
{
    return memmem(p, n, lit, strlen(lit));
}

static const char *last_of(const char *p, size_t n, char c)
{
    return memrchr(p, c, n);
}

static bool is_ident(const char *p, size_t n)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i && c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

void junit_split_id(const char *id, size_t n, struct junit_split *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->name_off = 0;
    /* unittest: "test_x (pkg.mod.Class)" or, from Python 3.11, "test_x (pkg.mod.Class.test_x)" */
    const char *sp = memchr(id, ' ', n);
    if (sp && n > 3 && id[n - 1] == ')' && sp[1] == '(' && is_ident(id, (size_t)(sp - id))) {
        size_t name_len = (size_t)(sp - id);
        const char *c = sp + 2;
        size_t cl = (size_t)(id + n - 1 - c);
        if (cl > name_len + 1 && c[cl - name_len - 1] == '.' && memcmp(c + cl - name_len, id, name_len) == 0)
            cl -= name_len + 1;
        if (cl && !memchr(c, ' ', cl)) {
            ret->cls_off = (size_t)(c - id);
            ret->cls_len = cl;
            ret->name_off = 0; /* the whole id stays the name: it is how the harness says it */
            return;
        }
    }
    /* The head: before parameters ("[...]") and descriptions (" ..."). */
    size_t head = n;
    const char *br = memchr(id, '[', n);
    if (br)
        head = (size_t)(br - id);
    if (sp && (size_t)(sp - id) < head)
        head = (size_t)(sp - id);
    const char *dc = find2(id, head, "::");
    if (dc) { /* pytest, libtest */
        const char *last = dc;
        for (const char *q; (q = find2(last + 2, head - (size_t)(last + 2 - id), "::"));)
            last = q;
        ret->cls_len = (size_t)(last - id);
        ret->name_off = (size_t)(last - id) + 2;
        ret->suite_len = (size_t)(dc - id);
        ret->pytest_path = ret->suite_len > 3 && memcmp(id + ret->suite_len - 3, ".py", 3) == 0;
        return;
    }
    if (sp && head == (size_t)(sp - id) && (memchr(id, '/', head) || memchr(id, '.', head))) {
        /* TAP from prove: "t/file.t 3 description" */
        size_t rest = head;
        while (rest < n && id[rest] == ' ')
            rest++;
        if (rest < n) {
            ret->cls_len = head;
            ret->name_off = rest;
            return;
        }
    }
    /* Check: "Suite name:test_name" (a suite may have spaces, the test has none) */
    const char *colon = last_of(id, n, ':');
    if (colon && colon > id && colon + 1 < id + n && !memchr(colon + 1, ' ', (size_t)(id + n - colon - 1)) &&
        !memchr(id, '/', n)) {
        ret->cls_len = (size_t)(colon - id);
        ret->name_off = (size_t)(colon - id) + 1;
        return;
    }
    /* GoogleTest: "Suite.Test", "Prefix/Suite/0.Test/1": one '.', an identifier after it that a
     * file extension would not be (capitalised, or no directory before it) */
    const char *dot = memchr(id, '.', head);
    if (dot && !memchr(dot + 1, '.', head - (size_t)(dot + 1 - id))) {
        const char *after = dot + 1;
        size_t al = head - (size_t)(after - id);
        const char *sl = memchr(after, '/', al);
        size_t il = sl ? (size_t)(sl - after) : al;
        bool dir_before = memchr(id, '/', (size_t)(dot - id)) != NULL;
        if (dot > id && is_ident(after, il) && (!dir_before || (after[0] >= 'A' && after[0] <= 'Z'))) {
            ret->cls_len = (size_t)(dot - id);
            ret->name_off = (size_t)(dot - id) + 1;
            return;
        }
    }
    /* Paths: mozlog "dir/test_x.html", go "pkg/path/TestX" */
    const char *slash = last_of(id, head, '/');
    if (slash && slash > id && slash + 1 < id + n) {
        ret->cls_len = (size_t)(slash - id);
        ret->name_off = (size_t)(slash - id) + 1;
    }
}

char *junit_classname(const char *id, const struct junit_split *sp)
{
    char *c = strndup(id + sp->cls_off, sp->cls_len);
    if (!c || !sp->pytest_path)
        return c;
    /* "dir/test_x.py::Class" -> "dir.test_x.Class", as pytest's own report names it */
    char *o = c;
    for (size_t i = 0; i < sp->cls_len; i++) {
        if (i + 3 <= sp->cls_len && memcmp(c + i, ".py", 3) == 0 && (i + 3 == sp->cls_len || c[i + 3] == ':')) {
            i += 2;
            continue;
        }
        if (i + 2 <= sp->cls_len && c[i] == ':' && c[i + 1] == ':') {
            *o++ = '.';
            i++;
            continue;
        }
        *o++ = c[i] == '/' ? '.' : c[i];
    }
    *o = 0;
    return c;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* XML 1.0 takes only valid UTF-8 without most control characters: anything else becomes U+FFFD. */
static char *xml_text(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *o = malloc(n * 3 + 1), *q = o;
    if (!o)
        return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p;
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        bool ok = len && (size_t)(end - p) >= len;
        uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
        for (size_t i = 1; ok && i < len; i++) {
            ok = (p[i] & 0xc0) == 0x80;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        if (ok) {
            static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
            ok = cp >= min[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff) && cp != 0xfffe &&
                 cp != 0xffff && (cp >= 0x20 || cp == '\t' || cp == '\n' || cp == '\r');
        }
        if (ok) {
            memcpy(q, p, len);
            q += len;
            p += len;
        } else {
            memcpy(q, "\xef\xbf\xbd", 3);
            q += 3;
            p += len && (size_t)(end - p) >= len ? len : 1;
        }
    }
    *q = 0;
    return o;
}

struct wctx {
    xmlTextWriterPtr w;
    int rc;
};

static void attr(struct wctx *c, const char *name, const char *value)
{
    if (c->rc < 0 || !value)
        return;
    char *v = xml_text(value);
    if (!v || xmlTextWriterWriteAttribute(c->w, BAD_CAST name, BAD_CAST v) < 0)
        c->rc = -EIO;
    free(v);
}

static void attrf(struct wctx *c, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void attrf(struct wctx *c, const char *name, const char *fmt, ...)
{
    char b[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    attr(c, name, b);
}

static void start(struct wctx *c, const char *el)
{
    if (c->rc >= 0 && xmlTextWriterStartElement(c->w, BAD_CAST el) < 0)
        c->rc = -EIO;
}

static void end_el(struct wctx *c)
{
    if (c->rc >= 0 && xmlTextWriterEndElement(c->w) < 0)
        c->rc = -EIO;
}

static void text(struct wctx *c, const char *s)
{
    if (c->rc < 0 || !s || !*s)
        return;
    char *v = xml_text(s);
    if (!v || xmlTextWriterWriteString(c->w, BAD_CAST v) < 0)
        c->rc = -EIO;
    free(v);
}

static void property(struct wctx *c, const char *name, const char *value)
{
    if (!value)
        return;
    start(c, "property");
    attr(c, "name", name);
    attr(c, "value", value);
    end_el(c);
}

enum outcome { OUT_PASS, OUT_FAILURE, OUT_ERROR, OUT_SKIPPED };

struct verdict {
    enum outcome out;
    const char *type; /* failure/error type; NULL: typebuf */
    char *message;    /* malloc'ed */
    char typebuf[24]; /* a status in lower case, as the type */
    const char *details; /* the element's text after the message (the test's) */
};

static bool is(const char *s, const char *lit)
{
    return s && strcmp(s, lit) == 0;
}

static bool passing(const char *s)
{
    return is(s, "PASS") || is(s, "OK");
}

/* Why the tests still open at the end did not end, in words ("the run timed out after 2 s
 * (--timeout)"), and whether that was a timeout. */
static char *stop_words(const struct junit *j, bool *timeout)
{
    const char *r = j->stop_reason;
    char *s = NULL;
    *timeout = is(r, "timeout") || is(r, "output-timeout") || is(r, "cpu");
    if (is(r, "timeout") && j->stop_after_ms > 0)
        (void)!asprintf(&s, "the run timed out after %g s (--timeout)", j->stop_after_ms / 1000);
    else if (is(r, "timeout"))
        s = strdup("the run timed out");
    else if (is(r, "output-timeout"))
        (void)!asprintf(&s, "the command printed nothing for %g s (--output-timeout)", j->stop_after_ms / 1000);
    else if (r && j->stop_limit)
        (void)!asprintf(&s, "the run was stopped at its %s limit: %s", r, j->stop_limit);
    else if (is(r, "signal"))
        s = strdup("the run was stopped by a signal");
    else if (is(r, "parent-died"))
        s = strdup("the run was stopped: resmon-run's parent went away");
    else if (r)
        (void)!asprintf(&s, "the run was stopped (%s)", r);
    else
        s = strdup("the run's record ends while it ran (resmon-run was killed, or is still running)");
    return s;
}

static void judge(const struct junit *j, const struct jtest *t, struct verdict *v)
{
    v->out = OUT_PASS;
    v->type = NULL;
    v->message = NULL;
    v->details = t->details;
    const char *st = t->status;
    bool timeout = false;
    if (t->open) {
        char *why = stop_words(j, &timeout);
        v->out = OUT_ERROR;
        v->type = timeout ? "timeout" : "incomplete";
        (void)!asprintf(&v->message, "still running when %s", why ? why : "the run ended");
        free(why);
        return;
    }
    bool unexpected = t->unexpected;
    const char *m = t->message;
    char first[200];
    if (!m && t->details) { /* the first thing the log said against it */
        size_t l = strcspn(t->details, "\n");
        snprintf(first, sizeof first, "%.*s", (int)MIN(l, sizeof first - 1), t->details);
        m = first;
    }
    if (!unexpected) {
        if (!st || passing(st))
            return;
        v->out = OUT_SKIPPED;
        if (is(st, "SKIP") || is(st, "NOTRUN"))
            v->message = m ? strdup(m) : NULL;
        else
            (void)!asprintf(&v->message, "expected %s%s%s", st, m ? ": " : "", m ? m : "");
        return;
    }
    if (passing(st)) {
        v->out = OUT_FAILURE;
        v->type = "unexpected-pass";
        (void)!asprintf(&v->message, "%s, expected %s%s%s", st, t->expected ? t->expected : "a failure",
                        m ? ": " : "", m ? m : "");
    } else if (is(st, "SKIP") || is(st, "NOTRUN")) {
        v->out = OUT_SKIPPED;
        v->message = m ? strdup(m) : NULL;
    } else if (is(st, "TIMEOUT") || is(st, "INCOMPLETE")) {
        v->out = OUT_ERROR;
        v->type = is(st, "TIMEOUT") ? "timeout" : "incomplete";
        /* the run's own words name the timeout, where a test's message cannot */
        char *why = j->stop_reason || !m ? stop_words(j, &timeout) : NULL;
        if (why)
            (void)!asprintf(&v->message, "still running when %s", why);
        else
            v->message = strdup(m);
        free(why);
    } else if (is(st, "ERROR") || is(st, "CRASH")) {
        v->out = OUT_ERROR;
        v->type = is(st, "ERROR") ? "error" : "crash";
        v->message = strdup(m ? m : st);
    } else {
        v->out = OUT_FAILURE;
        v->type = is(st, "FAIL") ? "failure" : "";
        (void)!asprintf(&v->message, "%s%s%s", st, m ? ": " : "", m ? m : "");
    }
    if (v->type && !*v->type) {
        size_t i = 0;
        for (; st[i] && i < sizeof v->typebuf - 1; i++)
            v->typebuf[i] = (char)(st[i] >= 'A' && st[i] <= 'Z' ? st[i] + 32 : st[i]);
        v->typebuf[i] = 0;
        v->type = NULL; /* typebuf then (entries move when sorted) */
    }
}

struct entry {
    size_t test;
    char *suite, *classname;
    const char *name;
    struct verdict v;
};

static int by_suite(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    int c = strcmp(x->suite, y->suite);
    return c ? c : (x->test > y->test) - (x->test < y->test);
}

static void timestamp(char *b, size_t size, double wall_ms)
{
    time_t s = (time_t)(wall_ms / 1000);
    struct tm tm;
    if (wall_ms <= 0 || !gmtime_r(&s, &tm) || !strftime(b, size, "%Y-%m-%dT%H:%M:%S", &tm))
        b[0] = 0;
}

static void run_properties(struct wctx *c, const struct junit *j)
{
    start(c, "properties");
    property(c, "resmon.command", j->cmd ? j->cmd : j->product ? j->product : "command");
    property(c, "resmon.reason", j->stop_reason ? j->stop_reason : j->reason ? j->reason : "running");
    property(c, "resmon.exit", j->exit);
    property(c, "resmon.limit", j->stop_limit);
    if (j->stop_after_ms > 0) {
        char b[32];
        snprintf(b, sizeof b, "%.3f", j->stop_after_ms / 1000);
        property(c, "resmon.timeout", b);
    }
    end_el(c);
}

static void verdict_element(struct wctx *c, const struct verdict *v)
{
    if (v->out == OUT_PASS)
        return;
    start(c, v->out == OUT_FAILURE ? "failure" : v->out == OUT_ERROR ? "error" : "skipped");
    attr(c, "message", v->message);
    if (v->out != OUT_SKIPPED)
        attr(c, "type", v->type ? v->type : v->typebuf);
    if (v->out != OUT_SKIPPED) {
        text(c, v->message);
        if (v->details) {
            text(c, "\n");
            text(c, v->details);
        }
    }
    end_el(c);
}

static void testcase(struct wctx *c, const struct junit *j, const struct entry *e, double end_ms)
{
    const struct jtest *t = &j->tests[e->test];
    double end = t->open ? MAX(end_ms, t->start) : MAX(t->end, t->start);
    start(c, "testcase");
    attr(c, "classname", e->classname);
    attr(c, "name", e->name);
    attrf(c, "time", "%.3f", (end - t->start) / 1000);
    if (t->cpu_ms >= 0 || t->rss >= 0) {
        start(c, "properties");
        char b[32];
        if (t->cpu_ms >= 0) {
            snprintf(b, sizeof b, "%.3f", t->cpu_ms / 1000);
            property(c, "cpuTime", b);
        }
        if (t->rss >= 0) {
            snprintf(b, sizeof b, "%.0f", t->rss);
            property(c, "maxRSS", b);
        }
        end_el(c);
    }
    verdict_element(c, &e->v);
    end_el(c);
}

/* The command as the only testcase, for a log without tests. */
static void command_case(struct wctx *c, const struct junit *j, double end_ms, const char *ts)
{
    struct verdict v = {OUT_PASS, NULL, NULL, "", NULL};
    bool timeout = false;
    if (j->stop_reason || !j->reason || is(j->reason, "running")) {
        char *why = stop_words(j, &timeout);
        v.out = OUT_ERROR;
        v.type = timeout ? "timeout" : "incomplete";
        (void)!asprintf(&v.message, "the command did not end by itself: %s", why ? why : "");
        free(why);
    } else if (!is(j->exit, "status 0")) {
        v.out = OUT_FAILURE;
        v.type = j->reason;
        (void)!asprintf(&v.message, "%s (%s)", j->exit ? j->exit : "failed", j->reason);
    }
    const char *name = j->cmd ? j->cmd : j->product ? j->product : "command";
    start(c, "testsuite");
    attr(c, "name", j->product ? j->product : "command");
    attrf(c, "tests", "1");
    attrf(c, "failures", "%d", v.out == OUT_FAILURE);
    attrf(c, "errors", "%d", v.out == OUT_ERROR);
    attrf(c, "skipped", "0");
    attrf(c, "time", "%.3f", MAX(end_ms, 0) / 1000);
    if (*ts)
        attr(c, "timestamp", ts);
    attrf(c, "id", "0");
    run_properties(c, j);
    start(c, "testcase");
    attr(c, "classname", "resmon-run");
    attr(c, "name", name);
    attrf(c, "time", "%.3f", MAX(end_ms, 0) / 1000);
    verdict_element(c, &v);
    end_el(c);
    end_el(c);
    free(v.message);
}

static int out_write(void *ctx, const char *buf, int len)
{
    int fd = *(int *)ctx;
    return write_all(fd, buf, (size_t)len) < 0 ? -1 : len;
}

static int out_close(void *ctx)
{
    return 0;
}

int junit_write(struct junit *j, int out_fd, double end_ms)
{
    int r = junit_update(j);
    if (r < 0)
        return r;
    if (!j->have_meta)
        return -EINVAL;
    if (end_ms < 0)
        end_ms = j->last_ms;
    struct entry *es = calloc(j->ntests ? j->ntests : 1, sizeof *es);
    if (!es)
        return -ENOMEM;
    size_t n = 0, fails = 0, errs = 0;
    r = 0;
    for (size_t i = 0; i < j->ntests; i++) {
        const struct jtest *t = &j->tests[i];
        if (!t->id)
            continue;
        struct entry *e = &es[n++];
        e->test = i;
        struct junit_split sp;
        junit_split_id(t->id, strlen(t->id), &sp);
        e->classname = sp.cls_len ? junit_classname(t->id, &sp) : strdup(j->product ? j->product : "tests");
        e->suite = sp.suite_len ? strndup(t->id, sp.suite_len) : strdup(e->classname ? e->classname : "");
        e->name = t->id + sp.name_off;
        judge(j, t, &e->v);
        if (!e->classname || !e->suite)
            r = -ENOMEM;
        fails += e->v.out == OUT_FAILURE;
        errs += e->v.out == OUT_ERROR;
    }
    if (r == 0)
        qsort(es, n, sizeof *es, by_suite);

    char ts[32];
    timestamp(ts, sizeof ts, j->start_wall_ms);
    xmlOutputBufferPtr ob = r == 0 ? xmlOutputBufferCreateIO(out_write, out_close, &out_fd, NULL) : NULL;
    struct wctx c = {ob ? xmlNewTextWriter(ob) : NULL, r};
    if (!c.w) {
        if (ob)
            xmlOutputBufferClose(ob);
        c.rc = r < 0 ? r : -ENOMEM;
    } else {
        xmlTextWriterSetIndent(c.w, 1);
        xmlTextWriterSetIndentString(c.w, BAD_CAST "  ");
        if (xmlTextWriterStartDocument(c.w, "1.0", "UTF-8", NULL) < 0)
            c.rc = -EIO;
        start(&c, "testsuites");
        attr(&c, "name", j->cmd ? j->cmd : j->product);
        attrf(&c, "tests", "%zu", n ? n : 1);
        attrf(&c, "failures", "%zu", fails);
        attrf(&c, "errors", "%zu", errs);
        attrf(&c, "time", "%.3f", MAX(end_ms, 0) / 1000);
        if (!n)
            command_case(&c, j, end_ms, ts);
        for (size_t i = 0, sid = 0; i < n; sid++) {
            size_t k = i, sf = 0, se = 0, ss = 0;
            double first = INFINITY, last = -INFINITY;
            for (; k < n && strcmp(es[k].suite, es[i].suite) == 0; k++) {
                const struct jtest *t = &j->tests[es[k].test];
                sf += es[k].v.out == OUT_FAILURE;
                se += es[k].v.out == OUT_ERROR;
                ss += es[k].v.out == OUT_SKIPPED;
                first = MIN(first, t->start);
                last = MAX(last, t->open ? MAX(end_ms, t->start) : MAX(t->end, t->start));
            }
            start(&c, "testsuite");
            attr(&c, "name", es[i].suite);
            attrf(&c, "tests", "%zu", k - i);
            attrf(&c, "failures", "%zu", sf);
            attrf(&c, "errors", "%zu", se);
            attrf(&c, "skipped", "%zu", ss);
            attrf(&c, "time", "%.3f", (last - first) / 1000);
            if (*ts)
                attr(&c, "timestamp", ts);
            attrf(&c, "id", "%zu", sid);
            run_properties(&c, j);
            for (; i < k; i++)
                testcase(&c, j, &es[i], end_ms);
            end_el(&c);
        }
        end_el(&c);
        if (c.rc >= 0 && xmlTextWriterEndDocument(c.w) < 0)
            c.rc = -EIO;
        if (c.rc >= 0 && xmlTextWriterFlush(c.w) < 0)
            c.rc = -EIO;
        xmlFreeTextWriter(c.w); /* closes ob */
    }
    size_t open = 0;
    for (size_t i = 0; i < n; i++) {
        open += j->tests[es[i].test].open;
        free(es[i].suite);
        free(es[i].classname);
        free(es[i].v.message);
    }
    free(es);
    j->st = (struct junit_stats){n, open, j->left_out};
    return c.rc < 0 ? c.rc : 0;
}

struct fill {
    struct junit *j;
    double end_ms;
};

static int fill_junit(void *ctx, int fd)
{
    struct fill *f = ctx;
    return junit_write(f->j, fd, f->end_ms);
}

int junit_finalize(struct junit *j, int dirfd, const char *path, double end_ms)
{
    int r = junit_update(j);
    if (r < 0)
        return r;
    struct fill f = {j, end_ms};
    return write_file_atomically(dirfd, path, fill_junit, &f, NULL);
}

int junit_recover(const char *stream_path, const char *out_path, struct junit_stats *ret_stats)
{
    _cleanup_close_ int fd = open(stream_path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct junit *j;
    int r = junit_new(fd, &j);
    if (r < 0)
        return r;
    r = junit_finalize(j, AT_FDCWD, out_path, -1);
    if (r == 0 && ret_stats)
        junit_stats(j, ret_stats);
    junit_free(j);
    return r;
}
