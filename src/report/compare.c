/* compare.c — see compare.h. */
#include "report/compare.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/jsonw.h"
#include "base/sanitize.h"
#include "base/util.h"
#include "profile/profile.h"
#include "report/results.h"

/* The whole file at fd, gunzipped when it is gzip (NUL-terminated; *len bytes). */
static int slurp(int fd, bool gz, char **ret, size_t *len)
{
    int dfd = dup(fd);
    if (dfd < 0)
        return -errno;
    gzFile g = gzdopen(dfd, "rb"); /* reads plain files as they are too */
    if (!g) {
        close(dfd);
        return -ENOMEM;
    }
    size_t n = 0, cap = 0;
    char *b = NULL;
    int r = 0;
    for (;;) {
        if (array_reserve(&b, &cap, n + 65536 + 1, 1) < 0) {
            r = -ENOMEM;
            break;
        }
        int got = gzread(g, b + n, 65536);
        if (got < 0) {
            r = -EIO;
            break;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    gzclose(g);
    (void)gz;
    if (r < 0) {
        free(b);
        return r;
    }
    b[n] = 0;
    *ret = b;
    *len = n;
    return 0;
}

/* A thread's marker table: the columns the reader needs, and its strings. */
struct marker_cols {
    const cJSON *strings, *names, *data, *starts, *ends;
};

static bool marker_cols(const cJSON *thread, struct marker_cols *c)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(thread, "markers");
    c->strings = cJSON_GetObjectItemCaseSensitive(thread, "stringArray");
    c->names = cJSON_GetObjectItemCaseSensitive(m, "name");
    c->data = cJSON_GetObjectItemCaseSensitive(m, "data");
    c->starts = cJSON_GetObjectItemCaseSensitive(m, "startTime");
    c->ends = cJSON_GetObjectItemCaseSensitive(m, "endTime");
    return cJSON_IsArray(c->names) && cJSON_IsArray(c->data) && cJSON_IsArray(c->starts) && cJSON_IsArray(c->ends) &&
           cJSON_IsArray(c->strings);
}

/* Whether the thread holds a test marker. */
static bool holds_tests(const struct marker_cols *c)
{
    const cJSON *n;
    cJSON_ArrayForEach(n, c->names)
    {
        const cJSON *name = cJSON_GetArrayItem(c->strings, n->valueint);
        if (cJSON_IsString(name) && !strcmp(name->valuestring, "test"))
            return true;
    }
    return false;
}

/* A thread's markers as marker lines into buf (flushed to fd past 1 MiB); w is scratch. */
static int thread_lines(const struct marker_cols *c, struct jsonw *w, struct jsonw *buf, int fd)
{
    int r = 0;
    const cJSON *n = c->names->child, *d = c->data->child, *s = c->starts->child, *e = c->ends->child;
    for (; n && d && s && e && r == 0; n = n->next, d = d->next, s = s->next, e = e->next) {
        const cJSON *name = cJSON_GetArrayItem(c->strings, n->valueint);
        if (!cJSON_IsString(name) || !cJSON_IsObject(d))
            continue;
        char *payload = cJSON_PrintUnformatted(d);
        if (!payload)
            return -ENOMEM;
        jsonw_reset(w);
        jsonw_obj_open(w);
        jsonw_kv_str(w, "type", "marker");
        jsonw_kv_str(w, "name", name->valuestring);
        jsonw_kv_double(w, "startTime", s->valuedouble, 3);
        jsonw_key(w, "endTime");
        if (cJSON_IsNumber(e))
            jsonw_double(w, e->valuedouble, 3);
        else
            jsonw_null(w);
        jsonw_key(w, "data");
        jsonw_raw(w, payload, strlen(payload));
        jsonw_obj_close(w);
        free(payload);
        jsonw_append(buf, w->buf, w->len);
        jsonw_append(buf, "\n", 1);
        if (buf->len > 1 << 20) {
            r = jsonw_failed(w) || jsonw_failed(buf) ? -ENOMEM : write_all(fd, buf->buf, buf->len);
            jsonw_reset(buf);
        }
    }
    return r;
}

/* A full profile's markers written back as the stream lines they were converted from (meta,
 * then one marker line each), into a memory file the reader reads like a stream. The markers are
 * the first thread's (the run's: its command, samples and tests), then those of every other
 * thread that holds tests or the run's marker graphs that stayed at zero (the hidden thread of
 * pid "zero"), thread after thread: a profile may carry tests on several threads
 * (each process's or worker's), and a thread of stacks alone (a dumped process) says nothing
 * about results. */
static int profile_as_stream(const char *text, size_t len, int *ret_fd)
{
    cJSON *p = cJSON_ParseWithLength(text, len);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(p, "meta");
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(p, "threads");
    struct marker_cols first;
    if (!cJSON_IsObject(meta) || !cJSON_IsArray(threads) || !marker_cols(cJSON_GetArrayItem(threads, 0), &first)) {
        cJSON_Delete(p);
        return -EINVAL;
    }
    int fd = memfd_create("resmon-compare", MFD_CLOEXEC);
    if (fd < 0) {
        cJSON_Delete(p);
        return -errno;
    }
    int r = 0;
    struct jsonw w, buf; /* a line; the lines waiting to be written */
    jsonw_init(&w);
    jsonw_init(&buf);
    /* the meta line: its type first, as a stream has it */
    jsonw_obj_open(&w);
    jsonw_kv_str(&w, "type", "meta");
    const cJSON *k;
    cJSON_ArrayForEach(k, meta)
    {
        if (cJSON_IsString(k))
            jsonw_kv_str(&w, k->string, k->valuestring);
        else if (cJSON_IsNumber(k))
            jsonw_kv_double(&w, k->string, k->valuedouble, 4);
    }
    jsonw_obj_close(&w);
    jsonw_append(&buf, w.buf, w.len);
    jsonw_append(&buf, "\n", 1);
    bool is_first = true;
    const cJSON *t;
    cJSON_ArrayForEach(t, threads)
    {
        struct marker_cols c;
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(t, "pid");
        bool zero = cJSON_IsString(pid) && !strcmp(pid->valuestring, "zero"); /* the run's graphs at zero */
        if (r == 0 && marker_cols(t, &c) && (is_first || zero || holds_tests(&c)))
            r = thread_lines(&c, &w, &buf, fd);
        is_first = false;
    }
    if (r == 0)
        r = jsonw_failed(&w) || jsonw_failed(&buf) ? -ENOMEM : write_all(fd, buf.buf, buf.len);
    jsonw_release(&buf);
    jsonw_release(&w);
    cJSON_Delete(p);
    if (r < 0) {
        close(fd);
        return r;
    }
    *ret_fd = fd;
    return 0;
}

int compare_load(const char *path, struct results **ret)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    enum profile_kind kind = profile_detect(fd);
    int r;
    _cleanup_close_ int sfd = -1;
    if (kind == PROFILE_KIND_STREAM) {
        sfd = TAKE_FD(fd);
    } else if (kind == PROFILE_KIND_FULL) {
        char *text = NULL;
        size_t len = 0;
        unsigned char head[2] = {0};
        bool gz = pread(fd, head, 2, 0) == 2 && head[0] == 0x1f && head[1] == 0x8b;
        if ((r = slurp(fd, gz, &text, &len)) < 0)
            return r;
        r = profile_as_stream(text, len, &sfd);
        free(text);
        if (r < 0)
            return r;
    } else
        return -EINVAL;
    struct results *res;
    if ((r = results_new(sfd, RESULTS_SAMPLES, &res)) < 0)
        return r;
    r = results_update(res);
    if (r == 0 && !res->have_meta)
        r = -EINVAL;
    if (r < 0) {
        results_free(res);
        return r;
    }
    res->rd.fd = -1; /* read: the fd goes with this function */
    *ret = res;
    return 0;
}

/* ---- the comparison ------------------------------------------------------------------------ */

static void put_out(void *ctx, const char *p, size_t len) { buf_add(ctx, p, len); }

/* Text from a run (a test id, a status, a file name): in Markdown, what would format or break a
 * table is escaped; either way no control character reaches the reader (sanitize.h). */
static void md(struct buf *o, bool markdown, const char *s)
{
    sanitize(markdown ? SANITIZE_MARKDOWN : SANITIZE_TERMINAL, s, strlen(s), put_out, o);
}

static int by_id(const void *a, const void *b)
{
    const struct rs_test *const *x = a, *const *y = b;
    return strcmp((*x)->id, (*y)->id);
}

/* The run's tests by id (the last result of an id counts), sorted for lookups. */
static const struct rs_test **index_tests(const struct results *r, size_t *n)
{
    const struct rs_test **v = malloc((r->ntests ? r->ntests : 1) * sizeof *v);
    size_t k = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < r->ntests; i++)
        if (r->tests[i].id)
            v[k++] = &r->tests[i];
    qsort(v, k, sizeof *v, by_id);
    size_t u = 0; /* keep the last of each id (stable order: the later index wins) */
    for (size_t i = 0; i < k; i++) {
        if (u && strcmp(v[u - 1]->id, v[i]->id) == 0) {
            if (v[i] > v[u - 1])
                v[u - 1] = v[i];
        } else
            v[u++] = v[i];
    }
    *n = u;
    return v;
}

static const struct rs_test *find(const struct rs_test **v, size_t n, const char *id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(v[mid]->id, id);
        if (!c)
            return v[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static bool bad(const struct rs_test *t) { return t->open || t->unexpected; }
static double dur(const struct rs_test *t, double end) { return (t->open ? end : t->end) - t->start; }
static const char *status_of(const struct rs_test *t) { return t->open ? "INCOMPLETE" : t->status ? t->status : "?"; }

enum list { L_NEWFAIL, L_FIXED, L_SLOWER, L_FATTER, L_NEW, L_GONE, L_N };
static const char *const list_title[L_N] = {"New failures", "Fixed", "Slower", "Fatter", "New tests", "Gone"};

struct row {
    const struct rs_test *a, *b; /* old, new (either may be NULL) */
    double delta;                /* sorts: the bigger change first */
};

static int by_delta(const void *x, const void *y)
{
    const struct row *a = x, *b = y;
    return (a->delta < b->delta) - (a->delta > b->delta);
}

static void fmt_bytes(char *b, size_t n, double v)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t i = 0;
    while (fabs(v) >= 1024 && i < 4)
        v /= 1024, i++;
    snprintf(b, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static double tree_cpu_s(const struct results *r)
{
    return results_series_sum(r, RS_TREE_CPU) / 1000;
}

static double tree_peak(const struct results *r)
{
    double m = 0;
    for (size_t i = 0; i < r->series[RS_TREE_RSS].n; i++)
        m = MAX(m, r->series[RS_TREE_RSS].p[i].v);
    return m;
}

static size_t unexpected_count(const struct results *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->ntests; i++)
        n += r->tests[i].id && bad(&r->tests[i]);
    return n;
}

static void total_row(struct buf *o, bool markdown, const char *name, const char *a, const char *b)
{
    if (markdown)
        buf_printf(o, "| %s | %s | %s |\n", name, a, b);
    else
        buf_printf(o, "%-14s %18s %18s\n", name, a, b);
}

static void totals(struct buf *o, const struct results *a, const struct results *b, const char *an, const char *bn,
                   bool markdown)
{
    char x[64], y[64];
    if (markdown) {
        buf_printf(o, "| | ");
        md(o, true, an);
        buf_printf(o, " | ");
        md(o, true, bn);
        buf_printf(o, " |\n|---|---:|---:|\n");
    } else
        buf_printf(o, "%-14s %18s %18s\n", "", "old", "new");
    snprintf(x, sizeof x, "%.2f s", a->last_ms / 1000);
    snprintf(y, sizeof y, "%.2f s", b->last_ms / 1000);
    total_row(o, markdown, "wall time", x, y);
    snprintf(x, sizeof x, "%.2f s", tree_cpu_s(a));
    snprintf(y, sizeof y, "%.2f s", tree_cpu_s(b));
    total_row(o, markdown, "tree CPU", x, y);
    fmt_bytes(x, sizeof x, tree_peak(a));
    fmt_bytes(y, sizeof y, tree_peak(b));
    /* no sample but the counter's zero origin (a run shorter than one interval): unknown, not 0 B */
    if (tree_peak(a) <= 0)
        snprintf(x, sizeof x, "-");
    if (tree_peak(b) <= 0)
        snprintf(y, sizeof y, "-");
    total_row(o, markdown, "peak memory", x, y);
    snprintf(x, sizeof x, "%zu", a->ntests);
    snprintf(y, sizeof y, "%zu", b->ntests);
    total_row(o, markdown, "tests", x, y);
    snprintf(x, sizeof x, "%zu", unexpected_count(a));
    snprintf(y, sizeof y, "%zu", unexpected_count(b));
    total_row(o, markdown, "unexpected", x, y);
}

static void list(struct buf *o, enum list l, struct row *rows, size_t n, double a_end, double b_end, bool markdown)
{
    if (!n)
        return;
    qsort(rows, n, sizeof *rows, by_delta);
    buf_printf(o, markdown ? "\n**%s** (%zu)\n\n" : "\n%s (%zu):\n", list_title[l], n);
    if (markdown)
        buf_printf(o, "| Test | Old | New |\n|---|---|---|\n");
    for (size_t i = 0; i < n && i < COMPARE_MAX_LIST; i++) {
        const struct rs_test *a = rows[i].a, *b = rows[i].b;
        char old[64] = "-", new_[64] = "-";
        if (l == L_SLOWER) {
            snprintf(old, sizeof old, "%.3f s", dur(a, a_end) / 1000);
            double da = dur(a, a_end), db = dur(b, b_end);
            if (da > 0)
                snprintf(new_, sizeof new_, "%.3f s (%+.0f%%)", db / 1000, (db / da - 1) * 100);
            else
                snprintf(new_, sizeof new_, "%.3f s", db / 1000);
        } else if (l == L_FATTER) {
            char x[32], y[32];
            fmt_bytes(x, sizeof x, a->rss);
            fmt_bytes(y, sizeof y, b->rss);
            snprintf(old, sizeof old, "%s", x);
            snprintf(new_, sizeof new_, "%s (%+.0f%%)", y, a->rss > 0 ? (b->rss / a->rss - 1) * 100 : 100.0);
        } else {
            if (a)
                snprintf(old, sizeof old, "%s", status_of(a));
            if (b)
                snprintf(new_, sizeof new_, "%s", status_of(b));
            old[sanitize_uncut(old, strlen(old))] = new_[sanitize_uncut(new_, strlen(new_))] = '\0';
        }
        buf_printf(o, markdown ? "| " : "  ");
        md(o, markdown, (a ? a : b)->id);
        buf_printf(o, markdown ? " | " : "  ");
        md(o, markdown, old);
        buf_printf(o, markdown ? " | " : " -> ");
        md(o, markdown, new_);
        buf_printf(o, markdown ? " |\n" : "\n");
    }
    if (n > COMPARE_MAX_LIST)
        buf_printf(o, markdown ? "\n... and %zu more\n" : "  ... and %zu more\n", n - COMPARE_MAX_LIST);
}

int compare_format(const struct results *old, const struct results *new_, const char *old_name,
                   const char *new_name, const struct compare_options *opt, char **ret, size_t *ret_len,
                   size_t *regressions)
{
    double thr = (opt->threshold_pct > 0 ? opt->threshold_pct : 20) / 100;
    size_t na, nb;
    const struct rs_test **va = index_tests(old, &na), **vb = index_tests(new_, &nb);
    struct row *rows[L_N] = {0};
    size_t nrows[L_N] = {0};
    int r = 0;
    for (int l = 0; l < L_N && va && vb; l++)
        if (!(rows[l] = calloc(na + nb + 1, sizeof **rows)))
            r = -ENOMEM;
    if (!va || !vb)
        r = -ENOMEM;
    double ae = old->last_ms, be = new_->last_ms;
    for (size_t i = 0; r == 0 && i < nb; i++) {
        const struct rs_test *b = vb[i], *a = find(va, na, b->id);
        if (!a) {
            rows[L_NEW][nrows[L_NEW]++] = (struct row){NULL, b, bad(b)};
            if (bad(b))
                rows[L_NEWFAIL][nrows[L_NEWFAIL]++] = (struct row){NULL, b, 0};
            continue;
        }
        if (bad(b) && !bad(a))
            rows[L_NEWFAIL][nrows[L_NEWFAIL]++] = (struct row){a, b, 0};
        if (bad(a) && !bad(b))
            rows[L_FIXED][nrows[L_FIXED]++] = (struct row){a, b, 0};
        double da = dur(a, ae), db = dur(b, be);
        if (db - da >= COMPARE_MIN_SLOWER_MS && db > da * (1 + thr))
            rows[L_SLOWER][nrows[L_SLOWER]++] = (struct row){a, b, db - da};
        if (a->rss >= 0 && b->rss >= 0 && b->rss - a->rss >= COMPARE_MIN_FATTER_BYTES && b->rss > a->rss * (1 + thr))
            rows[L_FATTER][nrows[L_FATTER]++] = (struct row){a, b, b->rss - a->rss};
    }
    for (size_t i = 0; r == 0 && i < na; i++)
        if (!find(vb, nb, va[i]->id))
            rows[L_GONE][nrows[L_GONE]++] = (struct row){va[i], NULL, 0};

    struct buf o = {0};
    if (r == 0) {
        size_t reg = nrows[L_NEWFAIL] + nrows[L_SLOWER] + nrows[L_FATTER];
        /* A suite that stopped running has no failures to show: every test gone is one. */
        bool vanished = na > 0 && nb == 0;
        reg += vanished;
        if (opt->markdown) {
            buf_printf(&o, "### resmon-run: ");
            md(&o, true, old_name);
            buf_printf(&o, " \xe2\x86\x92 ");
            md(&o, true, new_name);
            buf_printf(&o, "\n\n");
        } else {
            buf_printf(&o, "resmon-run: comparing '");
            md(&o, false, old_name);
            buf_printf(&o, "' (old) with '");
            md(&o, false, new_name);
            buf_printf(&o, "' (new)\n\n");
        }
        totals(&o, old, new_, old_name, new_name, opt->markdown);
        buf_printf(&o, opt->markdown ? "\n%zu new failure%s, %zu fixed, %zu slower and %zu fatter (past %g%%), %zu new, %zu gone\n"
                               : "\n%zu new failure%s, %zu fixed, %zu slower and %zu fatter (past %g%%), %zu new, %zu gone\n",
             nrows[L_NEWFAIL], nrows[L_NEWFAIL] == 1 ? "" : "s", nrows[L_FIXED], nrows[L_SLOWER], nrows[L_FATTER],
             thr * 100, nrows[L_NEW], nrows[L_GONE]);
        if (vanished)
            buf_printf(&o, opt->markdown ? "\n**The new run recorded no test** (the old one recorded %zu): its suite did not run.\n"
                                   : "\nThe new run recorded no test (the old one recorded %zu): its suite did not run.\n",
                 na);
        for (int l = 0; l < L_N; l++)
            list(&o, (enum list)l, rows[l], nrows[l], ae, be, opt->markdown);
        *regressions = reg;
        if (!buf_end(&o))
            r = -ENOMEM;
    }
    for (int l = 0; l < L_N; l++)
        free(rows[l]);
    free(va);
    free(vb);
    if (r < 0) {
        free(o.p);
        return r;
    }
    *ret = o.p ? o.p : strdup("");
    *ret_len = o.len;
    return *ret ? 0 : -ENOMEM;
}
