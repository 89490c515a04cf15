/* streamread.c — see streamread.h. */
#include "profile/streamread.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define READ_CHUNK (1u << 20)     /* the read buffer of a reader of a whole file */
#define FOLLOW_CHUNK (64u * 1024) /* the read buffer of a reader that follows a run */

int sread_init(struct sread *r, int fd, bool follow)
{
    *r = (struct sread){.fd = fd, .cap = follow ? FOLLOW_CHUNK : READ_CHUNK, .follow = follow};
    r->buf = malloc(r->cap);
    return r->buf ? 0 : -ENOMEM;
}

void sread_release(struct sread *r)
{
    free(r->buf);
    r->buf = NULL;
}

int sread_append(struct sread *r, const char *buf, size_t len)
{
    if (r->start > 0 && r->len + len > r->cap) {
        memmove(r->buf, r->buf + r->start, r->len - r->start);
        r->base += r->start;
        r->len -= r->start;
        r->start = 0;
    }
    if (r->len + len > r->cap) {
        size_t ncap = MAX(r->cap * 2, r->len + len);
        char *b = realloc(r->buf, ncap);
        if (!b)
            return -ENOMEM;
        r->buf = b;
        r->cap = ncap;
    }
    memcpy(r->buf + r->len, buf, len);
    r->len += len;
    return 0;
}

int sread_next(struct sread *r, const char **ret_line, size_t *ret_len, uint64_t *ret_off)
{
    for (;;) {
        char *nl = r->len > r->start ? memchr(r->buf + r->start, '\n', r->len - r->start) : NULL;
        if (nl) {
            size_t s = r->start, n = (size_t)(nl - (r->buf + s));
            r->start = s + n + 1;
            if (r->skipping) {
                r->skipping = false;
                continue;
            }
            if (r->fed && n > SREAD_MAX_LINE) {
                r->skipped++; /* whole in one write, but as long as a read one that is skipped */
                continue;
            }
            *ret_line = r->buf + s;
            *ret_len = n;
            *ret_off = r->base + s;
            return 1;
        }
        if (r->eof) {
            if (r->start < r->len && !r->skipping) {
                /* Unterminated last line: a torn write, or a producer that omits the final
                 * newline. The caller's validation decides. */
                size_t s = r->start;
                r->start = r->len;
                *ret_line = r->buf + s;
                *ret_len = r->len - s;
                *ret_off = r->base + s;
                return 1;
            }
            return 0;
        }
        if (r->fed) {
            /* The rest of the line comes with a later write. One longer than any line may be is
             * skipped as a read one would be (what is in hand of it is dropped). */
            if (r->len - r->start > SREAD_MAX_LINE || r->skipping) {
                if (!r->skipping)
                    r->skipped++;
                r->skipping = true;
                r->base += r->len;
                r->start = r->len = 0;
            }
            return 0;
        }
        /* Keep the partial line, make room, read more. */
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->len - r->start);
            r->base += r->start;
            r->len -= r->start;
            r->start = 0;
        }
        if (r->len == r->cap) {
            if (r->skipping || r->cap > SREAD_MAX_LINE) {
                if (!r->skipping)
                    r->skipped++;
                r->skipping = true;
                r->base += r->len;
                r->len = 0;
            } else {
                size_t ncap = MIN(r->cap * 2, (size_t)SREAD_MAX_LINE + 1);
                char *b = realloc(r->buf, ncap);
                if (!b)
                    return -ENOMEM;
                r->buf = b;
                r->cap = ncap;
            }
        }
        ssize_t n;
        do
            n = pread(r->fd, r->buf + r->len, r->cap - r->len, (off_t)(r->base + r->len));
        while (n < 0 && errno == EINTR);
        if (n < 0)
            return -errno;
        if (n == 0) {
            if (r->follow)
                return 0; /* the partial line waits for the rest */
            r->eof = true;
        }
        r->len += (size_t)n;
    }
}

void sread_shrink(struct sread *r)
{
    if (!r->follow || r->cap <= FOLLOW_CHUNK || r->len - r->start > FOLLOW_CHUNK)
        return;
    memmove(r->buf, r->buf + r->start, r->len - r->start);
    r->base += r->start;
    r->len -= r->start;
    r->start = 0;
    char *b = realloc(r->buf, FOLLOW_CHUNK);
    if (b) {
        r->buf = b;
        r->cap = FOLLOW_CHUNK;
    }
}

bool sread_torn_tail(const struct sread *r)
{
    return r->follow && r->len > r->start && !r->skipping;
}

/* ---- what a line is ----------------------------------------------------------------------- */

bool sline_is_meta(const char *line, size_t len)
{
    static const char prefix[] = "{\"type\":\"meta\"";
    return len >= sizeof prefix - 1 && memcmp(line, prefix, sizeof prefix - 1) == 0;
}

/* Any marker line, every value validated. */
static bool marker_members(const char *line, size_t len, struct sline_marker *f)
{
    struct js_iter it;
    struct js_member m;
    memset(f, 0, sizeof *f);
    if (js_obj_begin(&it, line, line + len) < 0)
        return false;
    int r;
    while ((r = js_obj_next(&it, &m)) > 0) {
        if (js_key_is(&m, "name"))
            f->mname = m, f->name = &f->mname;
        else if (js_key_is(&m, "startTime"))
            f->mstart = m, f->start = &f->mstart;
        else if (js_key_is(&m, "endTime"))
            f->mend = m, f->end = &f->mend;
        else if (js_key_is(&m, "data"))
            f->mdata = m, f->data = &f->mdata;
        else if (js_key_is(&m, "category"))
            f->mcat = m, f->cat = &f->mcat;
    }
    return r == 0 && js_skip_ws(it.p, it.e) == it.e;
}

/* Take `lit` (n bytes) at *p. */
static bool take_lit(const char **p, const char *e, const char *lit, size_t n)
{
    if ((size_t)(e - *p) < n || memcmp(*p, lit, n) != 0)
        return false;
    *p += n;
    return true;
}

#define MARKER_HEAD "{\"type\":\"marker\",\"name\":"

/* A line the stream's writer made, in its layout (stream.h):
 *   {"type":"marker","name":S,"startTime":N,"endTime":N|null,"data":{...}|null[,"category":N]}
 * Read so where the caller allows it (the follower, handed these bytes by the writer itself in
 * fed mode; the results, which parse a payload they want on their own): the payload, which the
 * writer built with jsonw, is not scanned again, it runs from after "data": to the category or
 * the line's last '}'. The payload's own last byte is '}' or 'l' (null), never a digit, so a
 * category is told apart from the payload's end. The envelope is still checked: false sends the
 * line to marker_members. */
static bool marker_fed(const char *line, size_t len, struct sline_marker *f)
{
    const char *p = line, *e = line + len, *v;
    memset(f, 0, sizeof *f);
    if (!take_lit(&p, e, MARKER_HEAD, sizeof MARKER_HEAD - 1) || p >= e || *p != '"')
        return false;
    v = p;
    if (!(p = js_scan_string(p, e, NULL)))
        return false;
    f->mname = (struct js_member){.key = "name", .key_len = 4, .val = v, .val_len = (size_t)(p - v)};
    f->name = &f->mname;
    if (!take_lit(&p, e, ",\"startTime\":", 13) || !(v = p, p = js_ms(p, e, &f->st)))
        return false;
    f->mstart = (struct js_member){.key = "startTime", .key_len = 9, .val = v, .val_len = (size_t)(p - v)};
    f->start = &f->mstart;
    if (!take_lit(&p, e, ",\"endTime\":", 11))
        return false;
    v = p;
    f->en = NAN;
    if (!take_lit(&p, e, "null", 4) && !(p = js_ms(p, e, &f->en)))
        return false;
    f->mend = (struct js_member){.key = "endTime", .key_len = 7, .val = v, .val_len = (size_t)(p - v)};
    f->end = &f->mend;
    if (!take_lit(&p, e, ",\"data\":", 8) || e - p < 5 || e[-1] != '}')
        return false;
    const char *dend = e - 1, *k = dend;
    while (k > p && js_is_digit(k[-1]))
        k--;
    if (k < dend && k - p >= 12 + 2 && memcmp(k - 12, ",\"category\":", 12) == 0) {
        f->mcat = (struct js_member){.key = "category", .key_len = 8, .val = k, .val_len = (size_t)(dend - k)};
        f->cat = &f->mcat;
        dend = k - 12;
    }
    size_t dlen = (size_t)(dend - p);
    if (!((dlen >= 2 && p[0] == '{' && dend[-1] == '}') || (dlen == 4 && memcmp(p, "null", 4) == 0)))
        return false;
    f->mdata = (struct js_member){.key = "data", .key_len = 4, .val = p, .val_len = dlen};
    f->data = &f->mdata;
    return true;
}

/* The "type" member, which writers put first; a line whose type is elsewhere is found by a scan
 * of the members before it. */
enum sline_type sline_type(const char *line, size_t len)
{
    if (len > sizeof MARKER_HEAD && memcmp(line, MARKER_HEAD, sizeof MARKER_HEAD - 1) == 0)
        return SLINE_MARKER;
    struct js_iter it;
    struct js_member m;
    if (js_obj_begin(&it, line, line + len) < 0)
        return SLINE_OTHER;
    static const struct {
        const char *name;
        enum sline_type type;
    } types[] = {
        {"marker", SLINE_MARKER}, {"open", SLINE_OPEN},       {"close", SLINE_CLOSE},
        {"thread", SLINE_THREAD}, {"clock", SLINE_CLOCK},     {"counter", SLINE_COUNTER},
        {"stack", SLINE_STACK},   {"message", SLINE_MESSAGE},   {"cpuprofile", SLINE_CPU},
        {"cpuspace", SLINE_CPU},  {"cpumap", SLINE_CPU},        {"cputhread", SLINE_CPU},
        {"cpusamples", SLINE_CPU}, {"cpuend", SLINE_CPU},
    };
    while (js_obj_next(&it, &m) > 0)
        if (js_key_is(&m, "type")) {
            for (size_t i = 0; i < ARRAY_SIZE(types); i++)
                if (js_val_is_str(&m, types[i].name))
                    return types[i].type;
            return SLINE_OTHER; /* another meta line, a future type: not ours to interpret */
        }
    return SLINE_OTHER;
}

bool sline_marker(const char *line, size_t len, bool writer, struct sline_marker *f)
{
    if (writer && marker_fed(line, len, f))
        return true;
    if (!marker_members(line, len, f))
        return false;
    f->en = NAN;
    if (!f->name || f->name->val[0] != '"' || !f->start || !js_number(f->start->val, f->start->val_len, &f->st))
        return false;
    return !f->end || (f->end->val_len == 4 && memcmp(f->end->val, "null", 4) == 0) ||
           js_number(f->end->val, f->end->val_len, &f->en);
}

bool sline_state(const char *line, size_t len, struct sline_state *f)
{
    struct js_iter it;
    struct js_member m;
    int r;
    memset(f, 0, sizeof *f);
    if (js_obj_begin(&it, line, line + len) < 0)
        return false;
    while ((r = js_obj_next(&it, &m)) > 0) {
#define FIELD(k, fld)                                                                              \
    if (js_key_is(&m, k)) {                                                                        \
        f->fld = m;                                                                                \
        f->has_##fld = true;                                                                       \
        continue;                                                                                  \
    }
        FIELD("kind", kind)
        FIELD("key", key)
        FIELD("name", name)
        FIELD("startNs", start_ns)
        FIELD("startTime", start_ms)
        FIELD("category", cat)
        FIELD("data", data)
        FIELD("cost", cost)
#undef FIELD
    }
    return r == 0 && js_skip_ws(it.p, it.e) == it.e && f->has_kind && f->kind.val[0] == '"' && f->has_key &&
           f->key.val[0] == '"';
}

