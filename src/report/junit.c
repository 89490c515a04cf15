/* junit.c — see junit.h. */
#include "report/junit.h"

#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/outfile.h"
#include "report/libxml.h"

#include "base/util.h"
#include "report/results.h"

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

void junit_names(const struct rs_test *t, const char *product, char **ret_suite, char **ret_classname,
                 const char **ret_name)
{
    if (t->scope) { /* go: package and test (subtests keep their parent's path in the name) */
        size_t n = strlen(t->scope);
        *ret_suite = strdup(t->scope);
        *ret_classname = strdup(t->scope);
        *ret_name = t->id + n + 1;
        return;
    }
    struct junit_split sp;
    junit_split_id(t->id, strlen(t->id), &sp);
    *ret_classname = sp.cls_len ? junit_classname(t->id, &sp) : strdup(product ? product : "tests");
    *ret_suite = sp.suite_len ? strndup(t->id, sp.suite_len) : *ret_classname ? strdup(*ret_classname) : NULL;
    *ret_name = t->id + sp.name_off;
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

/* Printable ASCII (and tab, newline, return) needs no repair: most names and every figure. */
static bool plain(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x7f || ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r'))
            return false;
    return true;
}

static void attr(struct wctx *c, const char *name, const char *value)
{
    if (c->rc < 0 || !value)
        return;
    char *v = plain(value) ? NULL : xml_text(value);
    if ((!v && !plain(value)) || xmlTextWriterWriteAttribute(c->w, BAD_CAST name, BAD_CAST(v ? v : value)) < 0)
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
    char *v = plain(s) ? NULL : xml_text(s);
    if ((!v && !plain(s)) || xmlTextWriterWriteString(c->w, BAD_CAST(v ? v : s)) < 0)
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

static bool passing(const char *s)
{
    return results_is(s, "PASS") || results_is(s, "OK");
}

static void judge(const struct results *j, const struct rs_test *t, struct verdict *v)
{
    v->out = OUT_PASS;
    v->type = NULL;
    v->message = NULL;
    v->details = t->details;
    const char *st = t->status;
    bool timeout = false;
    if (t->open) {
        char *why = results_stop_words(j, &timeout);
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
        if (results_is(st, "SKIP") || results_is(st, "NOTRUN"))
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
    } else if (results_is(st, "SKIP") || results_is(st, "NOTRUN")) {
        v->out = OUT_SKIPPED;
        v->message = m ? strdup(m) : NULL;
    } else if (results_is(st, "TIMEOUT") || results_is(st, "INCOMPLETE")) {
        v->out = OUT_ERROR;
        v->type = results_is(st, "TIMEOUT") ? "timeout" : "incomplete";
        /* the run's own words name the stop that cut it, where a test's message cannot; a
         * timeout the harness gave is the harness's */
        char *why = results_cut(j, t) ? results_stop_words(j, &timeout) : NULL;
        if (why)
            (void)!asprintf(&v->message, "still running when %s", why);
        else
            v->message = strdup(m ? m : st);
        free(why);
    } else if (results_is(st, "ERROR") || results_is(st, "CRASH")) {
        v->out = OUT_ERROR;
        v->type = results_is(st, "ERROR") ? "error" : "crash";
        v->message = strdup(m ? m : st);
    } else {
        v->out = OUT_FAILURE;
        v->type = results_is(st, "FAIL") ? "failure" : "";
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

static void run_properties(struct wctx *c, const struct results *j)
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

static void testcase(struct wctx *c, const struct results *j, const struct entry *e, double end_ms)
{
    const struct rs_test *t = &j->tests[e->test];
    double end = t->open ? MAX(end_ms, t->start) : MAX(t->end, t->start);
    start(c, "testcase");
    attr(c, "classname", e->classname);
    attr(c, "name", e->name);
    attrf(c, "time", "%.3f", (end - t->start) / 1000);
    verdict_element(c, &e->v);
    /* The test's figures where every schema takes them: lines in its system-out, in the
     * [[PROPERTY|name=value]] form some readers turn into the test's properties (a properties
     * element in a testcase fails the Jenkins xUnit plugin's junit-10.xsd). */
    if (t->cpu_ms >= 0 || t->rss >= 0) {
        char b[96];
        int l = 0;
        if (t->cpu_ms >= 0)
            l = snprintf(b, sizeof b, "[[PROPERTY|cpuTime=%.3f]]\n", t->cpu_ms / 1000);
        if (t->rss >= 0)
            snprintf(b + l, sizeof b - (size_t)l, "[[PROPERTY|maxRSS=%.0f]]\n", t->rss);
        start(c, "system-out");
        text(c, b);
        end_el(c);
    }
    end_el(c);
}

/* The command as the only testcase, for a log without tests. */
static void command_case(struct wctx *c, const struct results *j, double end_ms, const char *ts)
{
    struct verdict v = {OUT_PASS, NULL, NULL, "", NULL};
    bool timeout = false;
    enum runmarks_reason end;
    bool ended = results_end(j, &end);
    /* the command ended by itself (a crash nobody sent included): its own failure, not a stop */
    if (!ended || (end != RUN_EXIT && end != RUN_SIGNAL && end != RUN_OOM_KILL && end != RUN_EXEC_FAILED)) {
        char *why = results_stop_words(j, &timeout);
        v.out = OUT_ERROR;
        v.type = timeout ? "timeout" : "incomplete";
        (void)!asprintf(&v.message, "the command did not end by itself: %s", why ? why : "");
        free(why);
    } else if (!results_is(j->exit, "status 0")) {
        v.out = OUT_FAILURE;
        v.type = runmarks_reason_name(end);
        (void)!asprintf(&v.message, "%s (%s)", j->exit ? j->exit : "failed", v.type);
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

/* Where the report goes, and the first write error: libxml2 only learns that a write failed,
 * the caller is told why (ENOSPC, EDQUOT ...). */
struct out {
    int fd;
    int err;
};

static int out_write(void *ctx, const char *buf, int len)
{
    struct out *o = ctx;
    int r = write_all(o->fd, buf, (size_t)len);
    if (r < 0 && !o->err)
        o->err = r;
    return r < 0 ? -1 : len;
}

static int out_close(void *ctx)
{
    return 0;
}

int junit_write(const struct results *j, int out_fd, double end_ms, struct junit_stats *ret_stats)
{
    int r = results_ready(j, &end_ms);
    if (r < 0)
        return r;
    if (libxml_load(NULL) < 0)
        return -ELIBACC; /* main() said why, when it loaded it for --junit */
    struct entry *es = calloc(j->ntests ? j->ntests : 1, sizeof *es);
    if (!es)
        return -ENOMEM;
    size_t n = 0, fails = 0, errs = 0;
    r = 0;
    for (size_t i = 0; i < j->ntests; i++) {
        const struct rs_test *t = &j->tests[i];
        if (!t->id)
            continue;
        struct entry *e = &es[n++];
        e->test = i;
        junit_names(t, j->product, &e->suite, &e->classname, &e->name);
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
    struct out out = {out_fd, 0};
    xmlOutputBufferPtr ob = r == 0 ? xmlOutputBufferCreateIO(out_write, out_close, &out, NULL) : NULL;
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
                const struct rs_test *t = &j->tests[es[k].test];
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
    if (ret_stats)
        *ret_stats = (struct junit_stats){n, open, j->left_out};
    if (c.rc == -EIO && out.err)
        c.rc = out.err; /* what the disk said, not the writer's "it failed" */
    return c.rc < 0 ? c.rc : 0;
}

struct fill {
    const struct results *j;
    double end_ms;
    struct junit_stats *st;
};

static int fill_junit(void *ctx, int fd)
{
    struct fill *f = ctx;
    return junit_write(f->j, fd, f->end_ms, f->st);
}

int junit_finalize(const struct results *j, int dirfd, const char *path, double end_ms, struct junit_stats *ret_stats)
{
    struct fill f = {j, end_ms, ret_stats};
    return write_file_atomically(dirfd, path, fill_junit, &f, NULL);
}
