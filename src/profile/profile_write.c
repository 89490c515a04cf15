/* profile_write.c — see profile_write.h. */
#include "profile/profile_write.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jscan.h"
#include "base/outfile.h"
#include "base/util.h"
#include "profile/markertypes.h"
#include "profile/profile_conv.h"
#include "profile/profile_cpu.h"
#include "profile/profile_stacks.h"
#include "profile/stream.h"

/* ---- closing what is still open ------------------------------------------------------------ */

static int cmp_off(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void side_key(struct conv *c, bool comma, const char *key)
{
    jsonw_append(&c->side, comma ? ",\"" : "\"", comma ? 2 : 1);
    jsonw_append(&c->side, key, strlen(key));
    jsonw_append(&c->side, "\":", 2);
}

/* The payload of something the converter closes itself, in c->side: the open line's data, and
 * for a test (status given) its status and colour; with cost, what the tree's counters say it
 * cost, in the fields its type has (cpuTime, maxRSS, cpuPercent) and the data lacks. */
static void close_payload(struct conv *c, const struct js_member *data, const char *status, bool cost, double st,
                          double en, bool cut)
{
    bool has_status = false, has_color = false, has_cpu = false, has_rss = false, has_pct = false, any = false;
    const struct marker_type *mt = NULL;
    struct js_iter it;
    struct js_member m;
    if (data && js_obj_begin(&it, data->val, data->val + data->val_len) == 0)
        while (js_obj_next(&it, &m) > 0) {
            any = true;
            has_status |= js_key_is(&m, "status");
            has_color |= js_key_is(&m, "color");
            has_cpu |= js_key_is(&m, "cpuTime");
            has_rss |= js_key_is(&m, "maxRSS");
            has_pct |= js_key_is(&m, "cpuPercent");
            if (js_key_is(&m, "type") && m.val[0] == '"')
                mt = marker_type_find(m.val + 1, m.val_len - 2);
        }
    if (data && cut) {
        /* A recovered command did not end where its record does: what it was doing after is
         * unknown, so its open line's "still running" is replaced by when the record stops. */
        jsonw_append(&c->side, "{", 1);
        bool sep = false;
        js_obj_begin(&it, data->val, data->val + data->val_len);
        while (js_obj_next(&it, &m) > 0) {
            if (js_key_is(&m, "exit") || js_key_is(&m, "reason"))
                continue;
            jsonw_append(&c->side, sep ? ",\"" : "\"", sep ? 2 : 1);
            jsonw_append(&c->side, m.key, m.key_len);
            jsonw_append(&c->side, "\":", 2);
            jsonw_append(&c->side, m.val, m.val_len);
            sep = true;
        }
        char text[96];
        int n = snprintf(text, sizeof text, ",\"exit\":\"unknown: the record was cut off at %.3f s\"", en / 1000);
        jsonw_append(&c->side, text + !sep, (size_t)n - !sep);
        jsonw_append(&c->side, ",\"reason\":\"cut-off\"", 19);
    } else if (data) {
        const char *close = data->val + data->val_len - 1;
        jsonw_append(&c->side, data->val, (size_t)(close - data->val));
    } else {
        jsonw_append(&c->side, "{\"type\":\"Test\"", 14);
        mt = marker_type_find("Test", 4);
        any = true;
    }
    bool comma = any;
    if (status && !has_status) {
        side_key(c, comma, "status");
        jsonw_append(&c->side, "\"", 1);
        jsonw_escape(&c->side, status, strlen(status));
        jsonw_append(&c->side, "\"", 1);
        comma = true;
    }
    if (status && !has_color) {
        /* the colours of testlog.h's Test markers: a hung test is purple, not a skipped yellow */
        const char *color = strcmp(status, "TIMEOUT") == 0 ? "purple" : "orange";
        side_key(c, comma, "color");
        jsonw_append(&c->side, "\"", 1);
        jsonw_append(&c->side, color, strlen(color));
        jsonw_append(&c->side, "\"", 1);
        comma = true;
    }
    const struct counter *cpu = cost && mt ? counter_with_role(c, ROLE_TREE_CPU) : NULL;
    const struct counter *mem = cost && mt ? counter_with_role(c, ROLE_TREE_MEM) : NULL;
    char buf[48];
    if (cpu && !has_cpu && marker_type_field(mt, "cpuTime", 7) >= 0) {
        double ms = counter_amount_between(cpu, st, en);
        side_key(c, comma, "cpuTime");
        jsonw_append(&c->side, buf, stream_format_ms(ms, buf));
        comma = true;
        if (!has_pct && en > st && c->logical_cpus > 0 && marker_type_field(mt, "cpuPercent", 10) >= 0) {
            int n = snprintf(buf, sizeof buf, "\"%.1f%%\"", 100.0 * ms / ((en - st) * c->logical_cpus));
            side_key(c, comma, "cpuPercent");
            jsonw_append(&c->side, buf, (size_t)n);
        }
    }
    double peak;
    if (mem && !has_rss && marker_type_field(mt, "maxRSS", 6) >= 0 && counter_peak_between(mem, st, en, &peak) && peak > 0) {
        side_key(c, comma, "maxRSS");
        jsonw_append(&c->side, buf, (size_t)snprintf(buf, sizeof buf, "%.0f", peak));
    }
    jsonw_append(&c->side, "}", 1);
}

/* Close every open entry left without its close line, at end_ms, in stream order; cut: the run
 * that wrote the stream is gone (recovery), so the command did not run to end_ms. */
static int close_open(struct conv *c, double end_ms, const char *status, bool cut)
{
    struct open_set *os = &c->opens;
    /* (offset, entry) pairs sorted by offset */
    _cleanup_free_ uint64_t *order = malloc(((size_t)os->live + 1) * 2 * sizeof *order);
    if (!order)
        return -ENOMEM;
    size_t k = 0;
    for (uint32_t i = 0; i < os->n && k < os->live; i++)
        if (os->ent[i].len != OPEN_NONE) {
            order[2 * k] = os->ent[i].off;
            order[2 * k + 1] = i;
            k++;
        }
    qsort(order, k, 2 * sizeof *order, cmp_off);
    for (size_t j = 0; j < k; j++) {
        const struct open_ent *o = &os->ent[order[2 * j + 1]];
        _cleanup_free_ char *line = malloc(o->len ? o->len : 1);
        if (!line)
            return -ENOMEM;
        int r = conv_pread(c->in_fd, line, o->len, o->off);
        if (r < 0)
            return r;
        struct sline_state f;
        if (!sline_state(line, o->len, &f))
            continue;
        double st = conv_state_start(c, &f);
        double en = MAX(end_ms, st);
        int64_t id = conv_intern_name(c, f.name.val, f.name.val_len);
        if (id < 0)
            return (int)id;
        bool is_test = js_val_is_str(&f.kind, "test");
        bool cost = f.has_cost && f.cost.val_len == 4 && memcmp(f.cost.val, "true", 4) == 0;
        size_t soff = c->side.len;
        bool has_data = f.has_data && f.data.val[0] == '{';
        if (has_data || is_test)
            close_payload(c, has_data ? &f.data : NULL, is_test ? status : NULL, cost, st, en,
                          cut && js_val_is_str(&f.kind, "command"));
        if (jsonw_failed(&c->side))
            return -ENOMEM;
        size_t slen = c->side.len - soff;
        if (slen > REC_LEN_MASK)
            continue;
        if (slen)
            js_lone_surrogates(c->side.buf + soff, slen, c->side.buf + soff);
        r = conv_add_rec(c, id, st, en, conv_category(c, f.has_cat ? &f.cat : NULL), soff, slen, true);
        if (r < 0)
            return r;
        c->closed++;
    }
    return 0;
}

/* ---- output ------------------------------------------------------------------------------- */

/* Bytes of the profile to the file: as they are, or through the compressor (finish: its end). */
static void out_write(struct conv *c, const char *s, size_t n, bool finish)
{
    if (c->oerr)
        return;
    if (!c->gz) {
        int r = write_all(c->out_fd, s, n);
        if (r < 0)
            c->oerr = r;
        else
            c->obytes += n;
        return;
    }
    c->gz->next_in = (Bytef *)(uintptr_t)s;
    c->gz->avail_in = (uInt)n;
    int zr;
    do {
        c->gz->next_out = (Bytef *)c->zbuf;
        c->gz->avail_out = CONV_CHUNK;
        zr = deflate(c->gz, finish ? Z_FINISH : Z_NO_FLUSH);
        if (zr == Z_STREAM_ERROR) {
            c->oerr = -EIO;
            return;
        }
        size_t have = CONV_CHUNK - c->gz->avail_out;
        int r = have ? write_all(c->out_fd, c->zbuf, have) : 0;
        if (r < 0) {
            c->oerr = r;
            return;
        }
        c->obytes += have;
    } while (c->gz->avail_out == 0 || (finish && zr != Z_STREAM_END));
}

static int out_flush(struct conv *c)
{
    if (c->olen)
        out_write(c, c->obuf, c->olen, false);
    c->olen = 0;
    return c->oerr;
}

static void out_put(struct conv *c, const char *s, size_t n)
{
    if (c->olen + n > CONV_CHUNK) {
        out_flush(c);
        if (n > CONV_CHUNK / 2) {
            out_write(c, s, n, false);
            return;
        }
    }
    memcpy(c->obuf + c->olen, s, n);
    c->olen += n;
}

#define OUT_LIT(c, lit) out_put(c, lit, sizeof lit - 1)

static void out_uint(struct conv *c, uint64_t v)
{
    char tmp[24], *p = jsonw_digits_before(tmp + sizeof tmp, v);
    out_put(c, p, (size_t)(tmp + sizeof tmp - p));
}

static void out_ms(struct conv *c, double ms)
{
    char buf[32];
    out_put(c, buf, stream_format_ms(ms, buf));
}

/* Copy input bytes [off, off+len) to the output through the read window (c->wbuf). */
static int copy_input(struct conv *c, uint64_t off, size_t len, uint64_t *win_base, size_t *win_len)
{
    while (len > 0) {
        if (off >= *win_base && off < *win_base + *win_len) {
            size_t k = MIN(len, (size_t)(*win_base + *win_len - off));
            out_put(c, c->wbuf + (off - *win_base), k);
            off += k;
            len -= k;
            continue;
        }
        ssize_t n;
        do
            n = pread(c->in_fd, c->wbuf, CONV_CHUNK, (off_t)off);
        while (n < 0 && errno == EINTR);
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        *win_base = off;
        *win_len = (size_t)n;
    }
    return 0;
}

/* Members of the object line at [off, off+len) except those named in skip[], copied as
 * "key":value with commas. Returns the number written, or -errno. */
static int copy_members(struct conv *c, uint64_t off, size_t len, const char *const *skip, size_t nskip)
{
    _cleanup_free_ char *line = malloc(len ? len : 1);
    if (!line)
        return -ENOMEM;
    int r = conv_pread(c->in_fd, line, len, off);
    if (r < 0)
        return r;
    struct js_iter it;
    struct js_member m;
    int n = 0;
    if (js_obj_begin(&it, line, line + len) < 0)
        return -EINVAL;
    while (js_obj_next(&it, &m) > 0) {
        bool drop = false;
        for (size_t i = 0; i < nskip && !drop; i++)
            drop = js_key_is(&m, skip[i]);
        if (drop)
            continue;
        if (n++)
            OUT_LIT(c, ",");
        OUT_LIT(c, "\"");
        out_put(c, m.key, m.key_len);
        OUT_LIT(c, "\":");
        out_put(c, m.val, m.val_len);
    }
    return n;
}

/* The product (raw JSON string) from the meta line, for a thread made up when the stream has
 * none. */
static void out_thread_default(struct conv *c, const char *meta, size_t len)
{
    struct js_iter it;
    struct js_member m;
    OUT_LIT(c, "\"processType\":\"default\",\"processName\":");
    bool done = false;
    if (js_obj_begin(&it, meta, meta + len) == 0)
        while (!done && js_obj_next(&it, &m) > 0)
            if (js_key_is(&m, "product") && m.val[0] == '"') {
                out_put(c, m.val, m.val_len);
                done = true;
            }
    if (!done)
        OUT_LIT(c, "\"mach\"");
    OUT_LIT(c, ",");
    const char *rest = stream_thread_fields();
    out_put(c, rest, strlen(rest));
}

/* HIDDEN COUNTERS. A counter that stayed at zero the whole run (no major fault, no pressure)
 * carries nothing to look at: it goes to a process of its own, ZERO_PID, whose one thread is left
 * out of meta.initialVisibleThreads, so that the front-end hides its track and its counters' (the
 * timeline's "hidden tracks" menu shows them). */
#define ZERO_PID "zero"
#define ZERO_NAME "Tracks that stayed at zero"

/* HIDDEN GRAPHS. Likewise a marker graph (IO, NetIO, Tree IO: a track each, drawn from its
 * markers' figures) whose every figure stayed at zero: its markers go to the thread of ZERO_PID,
 * whose track hides theirs. hidden[name id] says which names' markers go there. */
enum { NAME_UNSEEN, NAME_PLAIN, NAME_GRAPH_ZERO, NAME_GRAPH };

/* Whether the figures a graph of type t draws are all zero in the payload [p, p + n). */
static bool graph_figures_zero(const struct marker_type *t, const char *p, size_t n)
{
    struct js_iter it;
    struct js_member m;
    if (js_obj_begin(&it, p, p + n) < 0)
        return false;
    while (js_obj_next(&it, &m) > 0) {
        char key[80];
        if (m.key_len + 12 >= sizeof key)
            continue;
        int k = snprintf(key, sizeof key, "\"key\":\"%.*s\"", (int)m.key_len, m.key);
        if (!memmem(t->graphs, strlen(t->graphs), key, (size_t)k))
            continue;
        for (size_t i = 0; i < m.val_len; i++) /* a JSON number: zero when no digit is not 0 */
            if (m.val[i] >= '1' && m.val[i] <= '9')
                return false;
            else if (m.val[i] == 'e' || m.val[i] == 'E')
                break;
    }
    return true;
}

/* Fill c->hidden (per name id) and return how many names' markers are hidden, or -errno. A
 * name's first marker says its type; a graph's markers are read until one has a figure. */
static int find_zero_graphs(struct conv *c)
{
    free(c->hidden);
    if (!(c->hidden = calloc(c->names.n ? c->names.n : 1, 1)))
        return -ENOMEM;
    const struct marker_type **type = calloc(c->names.n ? c->names.n : 1, sizeof *type);
    if (!type)
        return -ENOMEM;
    char *buf = NULL;
    size_t cap = 0;
    int r = 0;
    for (size_t i = 0; i < c->nrec && r >= 0; i++) {
        const struct rec *rc = &c->recs[i];
        uint32_t nm = rc->name & ~REC_SIDE;
        size_t len = rc->len_cat & REC_LEN_MASK;
        if ((rc->name & REC_SIDE) || !len || nm >= c->names.n || c->hidden[nm] == NAME_PLAIN ||
            c->hidden[nm] == NAME_GRAPH)
            continue;
        if (len > cap) {
            char *b = realloc(buf, len);
            if (!b) {
                r = -ENOMEM;
                break;
            }
            buf = b;
            cap = len;
        }
        if ((r = conv_pread(c->in_fd, buf, len, rc->off)) < 0)
            break;
        if (c->hidden[nm] == NAME_UNSEEN) {
            struct js_iter it;
            struct js_member m;
            const struct marker_type *t = NULL;
            if (js_obj_begin(&it, buf, buf + len) == 0)
                while (js_obj_next(&it, &m) > 0)
                    if (js_key_is(&m, "type") && m.val_len >= 2 && !m.val_escaped) {
                        t = marker_type_find(m.val + 1, m.val_len - 2);
                        break;
                    }
            type[nm] = t;
            c->hidden[nm] = t && t->graphs ? NAME_GRAPH_ZERO : NAME_PLAIN;
            if (c->hidden[nm] == NAME_PLAIN)
                continue;
        }
        if (!graph_figures_zero(type[nm], buf, len))
            c->hidden[nm] = NAME_GRAPH;
    }
    free(buf);
    free(type);
    int n = 0;
    for (uint32_t i = 0; r >= 0 && i < c->names.n; i++)
        n += c->hidden[i] == NAME_GRAPH_ZERO;
    return r < 0 ? r : n;
}

static bool rec_hidden(const struct conv *c, size_t i)
{
    uint32_t nm = c->recs[i].name;
    return c->hidden && !(nm & REC_SIDE) && nm < c->names.n && c->hidden[nm] == NAME_GRAPH_ZERO;
}

/* A thread's "stringArray" and "markers": the run's thread's markers, or (hidden) those of
 * HIDDEN GRAPHS, under the same names. */
static int write_markers(struct conv *c, bool hidden)
{
    OUT_LIT(c, "\"stringArray\":[");
    for (uint32_t i = 0; i < c->names.n; i++) {
        if (i)
            OUT_LIT(c, ",");
        OUT_LIT(c, "\"");
        out_put(c, c->names.arena + c->names.ent[i].off, c->names.ent[i].len);
        OUT_LIT(c, "\"");
    }
    OUT_LIT(c, "],\"markers\":{\"data\":[");
    uint64_t wbase = 0;
    size_t wlen = 0, n = 0;
    bool sep = false;
#define EACH_REC for (size_t i = 0; i < c->nrec; i++) if (rec_hidden(c, i) == hidden)
#define SEP() (sep ? OUT_LIT(c, ",") : (void)0, sep = true)
    EACH_REC {
        const struct rec *r = &c->recs[i];
        size_t len = r->len_cat & REC_LEN_MASK;
        SEP();
        n++;
        if (!len)
            OUT_LIT(c, "null");
        else if (r->name & REC_SIDE)
            out_put(c, c->side.buf + r->off, len);
        else {
            int e = copy_input(c, r->off, len, &wbase, &wlen);
            if (e < 0)
                return e;
        }
        if (c->oerr)
            return c->oerr;
    }
    OUT_LIT(c, "],\"name\":[");
    sep = false;
    EACH_REC {
        SEP();
        out_uint(c, c->recs[i].name & ~REC_SIDE);
    }
    OUT_LIT(c, "],\"startTime\":[");
    sep = false;
    EACH_REC {
        SEP();
        out_ms(c, c->recs[i].start);
    }
    OUT_LIT(c, "],\"endTime\":[");
    sep = false;
    EACH_REC {
        SEP();
        if (isnan(c->recs[i].end))
            OUT_LIT(c, "null");
        else
            out_ms(c, c->recs[i].end);
    }
    OUT_LIT(c, "],\"phase\":[");
    sep = false;
    EACH_REC {
        SEP();
        out_put(c, isnan(c->recs[i].end) ? "0" : "1", 1);
    }
    OUT_LIT(c, "],\"category\":[");
    sep = false;
    EACH_REC {
        SEP();
        out_uint(c, c->recs[i].len_cat >> 24);
    }
    OUT_LIT(c, "],\"stack\":[");
    sep = false;
    EACH_REC {
        SEP();
        OUT_LIT(c, "null");
    }
#undef EACH_REC
#undef SEP
    OUT_LIT(c, "],\"length\":");
    out_uint(c, n);
    OUT_LIT(c, "}");
    return c->oerr;
}

/* The thread of ZERO_PID: no samples; the markers of HIDDEN GRAPHS. */
static int out_zero_thread(struct conv *c)
{
    const char *rest = stream_thread_fields(), *tables = strstr(rest, "\"samples\":");
    OUT_LIT(c, ",{\"processType\":\"default\",\"processName\":\"" ZERO_NAME "\",\"processStartupTime\":0,"
               "\"processShutdownTime\":null,\"registerTime\":0,\"unregisterTime\":null,\"pausedRanges\":[],"
               "\"showMarkersInTimeline\":false,\"name\":\"" ZERO_NAME "\",\"isMainThread\":true,"
               "\"pid\":\"" ZERO_PID "\",\"tid\":0,");
    out_put(c, tables, strlen(tables));
    OUT_LIT(c, ",");
    int e = write_markers(c, true);
    OUT_LIT(c, "}");
    return e;
}

/* The counters with samples, in the processed format of version 47: one sample group each; one
 * that stayed at zero belongs to the thread zero_thread of ZERO_PID (HIDDEN COUNTERS). */
static int write_counters(struct conv *c, size_t zero_thread)
{
    bool first = true;
    c->counters_written = 0;
    for (unsigned i = 0; i < c->ncounters; i++) {
        struct counter *k = &c->counters[i];
        if (!k->n)
            continue;
        int r = counter_sort(k);
        if (r < 0)
            return r;
        if (!first)
            OUT_LIT(c, ",");
        first = false;
        OUT_LIT(c, "{\"name\":");
        out_put(c, k->name, strlen(k->name));
        OUT_LIT(c, ",\"category\":");
        out_put(c, k->category, strlen(k->category));
        OUT_LIT(c, ",\"description\":");
        out_put(c, k->description, strlen(k->description));
        if (counter_is_zero(k)) {
            OUT_LIT(c, ",\"pid\":\"" ZERO_PID "\",\"mainThreadIndex\":");
            out_uint(c, zero_thread);
        } else
            OUT_LIT(c, ",\"pid\":\"0\",\"mainThreadIndex\":0");
        if (k->display) {
            OUT_LIT(c, ",\"display\":");
            out_put(c, k->display, strlen(k->display));
        }
        OUT_LIT(c, ",\"sampleGroups\":[{\"id\":0,\"samples\":{\"time\":[");
        for (size_t j = 0; j < k->n; j++) {
            if (j)
                OUT_LIT(c, ",");
            out_ms(c, k->time[j]);
        }
        OUT_LIT(c, "],\"count\":[");
        for (size_t j = 0; j < k->n; j++) {
            if (j)
                OUT_LIT(c, ",");
            out_ms(c, k->count[j]);
        }
        OUT_LIT(c, "],\"length\":");
        out_uint(c, k->n);
        OUT_LIT(c, "}}]}");
        c->counters_written++;
        if (c->oerr)
            return c->oerr;
    }
    return 0;
}

static int write_profile(struct conv *c, double end_ms)
{
    static const char *const meta_skip[] = {"type", "profilingEndTime"};
    static const char *const thread_skip[] = {"type", "stringArray", "markers"};
    OUT_LIT(c, "{\"meta\":{");
    int n = copy_members(c, c->meta_off, c->meta_len, meta_skip, ARRAY_SIZE(meta_skip));
    if (n < 0)
        return n;
    if (n)
        OUT_LIT(c, ",");
    OUT_LIT(c, "\"profilingEndTime\":");
    out_ms(c, end_ms);
    jsonw_reset(&c->tmp);
    pcpu_meta(c->cpu, &c->tmp);
    if (c->tmp.len) /* nothing without sampled stacks (and no buffer yet to copy from) */
        out_put(c, c->tmp.buf, c->tmp.len);
    /* the run's thread, then one per dumped OS thread and per sampled one, then the one of HIDDEN
     * COUNTERS */
    size_t dumped = pstacks_threads(c->stacks) + pcpu_threads(c->cpu), zero_thread = 1 + dumped;
    int zg = find_zero_graphs(c);
    if (zg < 0)
        return zg;
    bool zero = counters_any_zero(c) || zg > 0;
    if (dumped || zero) {
        /* The front-end hides threads without samples when others have some: the run's own
         * thread (markers, counters) stays shown beside the dumped processes; the thread of the
         * counters at zero is hidden. */
        OUT_LIT(c, ",\"initialVisibleThreads\":[");
        for (size_t i = 0; i <= dumped; i++) {
            if (i)
                OUT_LIT(c, ",");
            out_uint(c, i);
        }
        OUT_LIT(c, "],\"initialSelectedThreads\":[0]");
    }
    OUT_LIT(c, "},\"libs\":[],\"threads\":[{");
    if (c->have_thread) {
        n = copy_members(c, c->thread_off, c->thread_len, thread_skip, ARRAY_SIZE(thread_skip));
        if (n < 0)
            return n;
        if (n)
            OUT_LIT(c, ",");
    } else {
        _cleanup_free_ char *meta = malloc(c->meta_len ? c->meta_len : 1);
        if (!meta)
            return -ENOMEM;
        int r = conv_pread(c->in_fd, meta, c->meta_len, c->meta_off);
        if (r < 0)
            return r;
        out_thread_default(c, meta, c->meta_len);
        OUT_LIT(c, ",");
    }
    int e = write_markers(c, false);
    if (e < 0)
        return e;
    OUT_LIT(c, "}");
    if (c->stacks) {
        /* the processes dumped at a stop, a thread each (profile_stacks.h) */
        jsonw_reset(&c->tmp);
        pstacks_write(c->stacks, c->ncat, c->run_name, pcpu_sampled, c->cpu, &c->tmp);
        if (jsonw_failed(&c->tmp))
            return -ENOMEM;
        if (c->tmp.len) {
            OUT_LIT(c, ",");
            out_put(c, c->tmp.buf, c->tmp.len);
        }
    }
    if (pcpu_threads(c->cpu)) {
        jsonw_reset(&c->tmp);
        pcpu_write(c->cpu, c->ncat, &c->tmp);
        if (jsonw_failed(&c->tmp))
            return -ENOMEM;
        OUT_LIT(c, ",");
        out_put(c, c->tmp.buf, c->tmp.len);
    }
    if (zero && (e = out_zero_thread(c)) < 0)
        return e;
    OUT_LIT(c, "],\"counters\":[");
    int r = write_counters(c, zero_thread);
    if (r < 0)
        return r;
    OUT_LIT(c, "]}");
    out_flush(c);
    if (c->gz)
        out_write(c, "", 0, true);
    return c->oerr;
}

/* A profile that left markers out says so at its end, in a Warning marker. */
static int note_left_out(struct conv *c, double end_ms)
{
    uint64_t n = c->dropped_routine + c->dropped_other;
    if (!n)
        return 0;
    char msg[256];
    snprintf(msg, sizeof msg,
             "%" PRIu64 " markers past the limit of %" PRIu64 " were left out (%" PRIu64 " of them expected passes)",
             n, c->max_markers, c->dropped_routine);
    jsonw_reset(&c->tmp);
    jsonw_obj_open(&c->tmp);
    jsonw_kv_str(&c->tmp, "type", "Warning");
    jsonw_kv_str(&c->tmp, "message", msg);
    jsonw_kv_str(&c->tmp, "color", "orange");
    jsonw_obj_close(&c->tmp);
    size_t off = c->side.len;
    jsonw_append(&c->side, c->tmp.buf, c->tmp.len);
    int64_t id = intern_get(&c->names, "markers left out", 16);
    if (jsonw_failed(&c->tmp) || jsonw_failed(&c->side) || id < 0)
        return -ENOMEM;
    return conv_add_rec(c, id, end_ms, NAN, 0, off, c->side.len - off, true);
}

/* Close what is open and write the profile; what this adds to the state is taken back after,
 * so a converter that follows a stream can write again later. */
int conv_write(struct conv *c, int out_fd, const struct profile_end *end, struct profile_stats *ret_stats)
{
    if (!c->started)
        return -EINVAL;
    size_t nrec = c->nrec, side_len = c->side.len;
    uint32_t nnames = c->names.n;
    double last_ms = c->last_ms;
    uint64_t skipped = c->skipped + c->rd.skipped;
    /* In follow mode an unterminated tail is a torn write (the writer starts its next line with a
     * newline): one damaged line. */
    if (sread_torn_tail(&c->rd))
        skipped++;

    double end_ms = end && end->end_ms >= 0 && isfinite(end->end_ms) ? end->end_ms : c->last_ms;
    const char *status = end && end->open_status ? end->open_status : "INCOMPLETE";
    c->out_fd = out_fd;
    c->olen = 0;
    c->obytes = 0;
    c->oerr = 0;
    c->closed = 0;
    c->obuf = malloc(CONV_CHUNK);
    c->wbuf = malloc(CONV_CHUNK);
    int r = c->obuf && c->wbuf ? 0 : -ENOMEM;
    z_stream zs = {0};
    if (r == 0 && end && end->gzip) {
        /* Level 3: within a few percent of the default's size, at twice its speed (a stop
         * finalizes before it signals anything). 15 + 16: a gzip wrapper. */
        c->zbuf = malloc(CONV_CHUNK);
        if (!c->zbuf || deflateInit2(&zs, 3, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            r = -ENOMEM;
        else
            c->gz = &zs;
    }
    if (r == 0)
        r = close_open(c, end_ms, status, end && end->recovered);
    if (r == 0)
        r = note_left_out(c, end_ms);
    if (r == 0)
        r = write_profile(c, end_ms);
    if (r == 0 && ret_stats)
        *ret_stats = (struct profile_stats){
            .markers = c->nrec,
            .skipped_lines = skipped,
            .closed_open = c->closed,
            .left_out = c->dropped_routine + c->dropped_other,
            .bytes = c->obytes,
            .end_ms = end_ms,
            .counters = c->counters_written,
        };
    if (c->gz)
        deflateEnd(c->gz);
    c->gz = NULL;
    free(c->zbuf);
    free(c->obuf);
    free(c->wbuf);
    c->obuf = c->wbuf = c->zbuf = NULL;
    c->nrec = nrec;
    c->side.len = side_len;
    intern_truncate(&c->names, nnames);
    c->last_ms = last_ms;
    return r;
}

struct conv_fill {
    struct conv *c;
    const struct profile_end *end;
    struct profile_stats st;
};

static int fill_conv(void *ctx, int fd)
{
    struct conv_fill *f = ctx;
    return conv_write(f->c, fd, f->end, &f->st);
}

/* Write c's profile to a temporary file beside path, fsync it (unless end says not to) and rename it
 * over path. */
int conv_finalize(struct conv *c, int dirfd, const char *path, const struct profile_end *end,
                         struct profile_stats *ret_stats)
{
    struct conv_fill f = {c, end, {0}};
    int r = write_file_atomically_flags(dirfd, path, fill_conv, &f, end ? end->lock_fd : NULL,
                                        end && end->no_sync ? OUTFILE_NO_SYNC : 0);
    if (r == 0 && ret_stats)
        *ret_stats = f.st;
    return r;
}

