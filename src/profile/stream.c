/* stream.c — see stream.h. */
#include "profile/stream.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "base/jsonw.h"
#include "base/outfile.h"
#include "profile/markertypes.h"
#include "base/util.h"

struct stream {
    int fd;
    int replaced; /* the file that was at the path (stream_take_replaced), or -1 */
    void (*tap)(void *ctx, const char *buf, size_t len); /* stream_set_tap */
    void *tap_ctx;
    uint64_t t0_ns;
    uint64_t fsync_interval_ns, last_sync_ns;
    bool dirty;
    uint64_t lines, errors, lost;
    int last_error;
    /* What a failed write left to write (stream.h): back[back_off..+back_len), back_lines of its
     * newlines; partial: the file ends inside a line (the backlog's first bytes finish it). */
    char *back;
    size_t back_off, back_len, back_cap;
    uint64_t back_lines;
    bool partial;
    struct jsonw w; /* reused for every line */
    bool hold;      /* batch lines until stream_flush() */
    char *pend;     /* held lines, whole ones only */
    size_t pend_len, pend_cap;
    uint64_t pend_lines;
    /* Held lines that may be taken back (markers.h, marker_state_open): where they are in pend,
     * in order. A handle is (gen << HANDLE_BITS) | (index + 1); gen counts the flushes, so a
     * handle of a line already written never matches. */
    struct held_open {
        size_t off, len;
        bool live;
    } *opens;
    size_t nopens, opens_cap, retracted;
    uint64_t gen;
    struct marker_sink sink;
};

#define HANDLE_BITS 20

/* Held lines are written once this much is pending, whatever the caller does. */
#define HOLD_MAX (256u * 1024)

size_t stream_format_ms(double ms, char *buf)
{
    if (!isfinite(ms))
        ms = 0;
    if (ms >= 9e12 || ms <= -9e12) {
        /* Not a time on our axis; keep it exact rather than fast. */
        int n = snprintf(buf, 32, "%.3f", ms);
        if (n < 0 || n >= 32)
            return (size_t)snprintf(buf, 32, "0.0");
        while (n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
            n--;
        return (size_t)n;
    }
    /* Round half away from zero (no libm: the program links without it). */
    double x = ms * 1000.0;
    long long t = (long long)(x >= 0 ? x + 0.5 : x - 0.5);
    char *o = buf;
    if (t < 0) {
        *o++ = '-';
        t = -t;
    }
    unsigned long long fp = (unsigned long long)t % 1000;
    char tmp[24], *d = jsonw_digits_before(tmp + sizeof tmp, (unsigned long long)t / 1000);
    memcpy(o, d, (size_t)(tmp + sizeof tmp - d));
    o += tmp + sizeof tmp - d;
    *o++ = '.';
    *o++ = (char)('0' + fp / 100);
    if (fp % 100) {
        *o++ = (char)('0' + fp / 10 % 10);
        if (fp % 10)
            *o++ = (char)('0' + fp % 10);
    }
    if (o - buf == 4 && memcmp(buf, "-0.0", 4) == 0) /* rounded to zero from below */
        return (size_t)snprintf(buf, 32, "0.0");
    return (size_t)(o - buf);
}

double stream_ms(const struct stream *s, uint64_t mono_ns)
{
    int64_t d = mono_ns >= s->t0_ns ? (int64_t)(mono_ns - s->t0_ns) : -(int64_t)(s->t0_ns - mono_ns);
    /* Round to whole microseconds in integers first: a double of ns since boot loses them. */
    int64_t us = d >= 0 ? (d + 500) / 1000 : -((-d + 500) / 1000);
    return (double)us / 1000.0;
}

/* write(2) what it takes of buf; returns the bytes written and the error that stopped it (0). */
static size_t write_some(struct stream *s, const char *buf, size_t len, int *ret_err)
{
    size_t done = 0;
    *ret_err = 0;
    while (done < len) {
        ssize_t n = write(s->fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            *ret_err = n < 0 ? -errno : -EIO;
            s->errors++;
            s->last_error = *ret_err;
            break;
        }
        if (s->tap)
            s->tap(s->tap_ctx, buf + done, (size_t)n);
        done += (size_t)n;
    }
    return done;
}

static uint64_t count_newlines(const char *p, size_t n)
{
    uint64_t k = 0;
    for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))); p++)
        k++;
    return k;
}

/* Keep buf[0..len) (nlines lines, the first perhaps the rest of a line begun in the file) for a
 * retry, as far as the bound allows: a line begun must be finished, later lines are dropped whole
 * beyond the bound. */
static void backlog_keep(struct stream *s, const char *buf, size_t len, uint64_t nlines)
{
    size_t room = STREAM_BACKLOG_MAX > s->back_len ? STREAM_BACKLOG_MAX - s->back_len : 0;
    size_t take = len;
    if (take > room) {
        /* whole lines only: up to the last newline within the room (the first line whatever
         * its length, when it finishes one begun in the file) */
        const char *cut = NULL;
        for (const char *p = buf; p < buf + room && (p = memchr(p, '\n', room - (size_t)(p - buf))); p++)
            cut = p;
        take = cut ? (size_t)(cut - buf) + 1 : 0;
        if (!take && s->back_len == 0 && s->partial) {
            const char *nl = memchr(buf, '\n', len);
            take = nl ? (size_t)(nl - buf) + 1 : len;
        }
    }
    if (take && s->back_off + s->back_len + take > s->back_cap) {
        if (s->back_off) /* never on the first call: s->back is NULL then */
            memmove(s->back, s->back + s->back_off, s->back_len);
        s->back_off = 0;
        if (s->back_len + take > s->back_cap) {
            size_t cap = MAX(s->back_cap ? s->back_cap * 2 : 65536, s->back_len + take);
            char *b = realloc(s->back, cap);
            if (!b) {
                /* The rest of a line begun in the file is lost: what is written next glues on
                 * to it. A follower fed these bytes must not take that line for one of ours. */
                if (s->partial && s->back_len == 0 && s->tap)
                    s->tap(s->tap_ctx, NULL, 0);
                take = 0;
            } else {
                s->back = b;
                s->back_cap = cap;
            }
        }
    }
    uint64_t kept = take ? count_newlines(buf, take) : 0;
    if (take) {
        memcpy(s->back + s->back_off + s->back_len, buf, take);
        s->back_len += take;
        s->back_lines += kept;
    }
    s->lost += nlines - kept;
}

/* Write what waits from an earlier failure. Returns 0 when nothing waits any more. */
static int backlog_write(struct stream *s)
{
    if (!s->back_len)
        return 0;
    int err;
    size_t done = write_some(s, s->back + s->back_off, s->back_len, &err);
    uint64_t whole = count_newlines(s->back + s->back_off, done);
    s->lines += whole;
    s->back_lines -= whole;
    s->partial = done > 0 ? s->back[s->back_off + done - 1] != '\n' : s->partial;
    s->back_off += done;
    s->back_len -= done;
    if (!s->back_len)
        s->back_off = 0;
    if (err < 0)
        return err;
    s->last_error = 0;
    return 0;
}

/* Hand complete lines (nlines of them, each with its newline) to the kernel in one write, after
 * whatever waits from an earlier failure; what cannot be written waits (stream.h). */
static int write_lines(struct stream *s, const char *buf, size_t len, uint64_t nlines)
{
    int err = backlog_write(s);
    if (err < 0) {
        backlog_keep(s, buf, len, nlines);
        return err;
    }
    size_t done = write_some(s, buf, len, &err);
    uint64_t whole = count_newlines(buf, done);
    s->lines += whole;
    if (err < 0) {
        s->partial = done > 0 && buf[done - 1] != '\n';
        backlog_keep(s, buf + done, len - done, nlines - whole);
        return err;
    }
    s->partial = false;
    s->last_error = 0;
    s->dirty = true;
    if (s->fsync_interval_ns) {
        uint64_t now = now_ns();
        if (now - s->last_sync_ns >= s->fsync_interval_ns) {
            if (fdatasync(s->fd) == 0)
                s->dirty = false;
            s->last_sync_ns = now;
        }
    }
    return 0;
}

/* Squeeze the lines taken back out of pend (their order and the others' stay). */
static void drop_retracted(struct stream *s)
{
    size_t to = 0, from = 0;
    for (size_t i = 0; i < s->nopens; i++) {
        const struct held_open *h = &s->opens[i];
        if (h->live)
            continue;
        memmove(s->pend + to, s->pend + from, h->off - from);
        to += h->off - from;
        from = h->off + h->len;
    }
    memmove(s->pend + to, s->pend + from, s->pend_len - from);
    s->pend_len = to + (s->pend_len - from);
    s->pend_lines -= s->retracted;
}

int stream_flush(struct stream *s)
{
    if (!s)
        return 0;
    if (s->retracted)
        drop_retracted(s);
    s->nopens = s->retracted = 0;
    s->gen++;
    if (!s->pend_len)
        return backlog_write(s);
    size_t len = s->pend_len;
    uint64_t n = s->pend_lines;
    s->pend_len = 0;
    s->pend_lines = 0;
    return write_lines(s, s->pend, len, n);
}

void stream_hold(struct stream *s, bool hold)
{
    if (!s)
        return;
    if (!hold)
        stream_flush(s);
    s->hold = hold;
}

/* Start a line in the reused buffer. */
static struct jsonw *line_begin(struct stream *s)
{
    jsonw_reset(&s->w);
    return &s->w;
}

static int line_end(struct stream *s)
{
    jsonw_append(&s->w, "\n", 1);
    if (jsonw_failed(&s->w)) {
        s->lost++;
        return -ENOMEM;
    }
    if (!s->hold)
        return write_lines(s, s->w.buf, s->w.len, 1);
    if (s->pend_len + s->w.len > s->pend_cap) {
        size_t cap = MAX(s->pend_cap ? s->pend_cap * 2 : 4096, s->pend_len + s->w.len);
        char *p = realloc(s->pend, cap);
        if (!p) {
            /* No room to hold it: write what is held and this line now. */
            stream_flush(s);
            return write_lines(s, s->w.buf, s->w.len, 1);
        }
        s->pend = p;
        s->pend_cap = cap;
    }
    memcpy(s->pend + s->pend_len, s->w.buf, s->w.len);
    s->pend_len += s->w.len;
    s->pend_lines++;
    return s->pend_len >= HOLD_MAX ? stream_flush(s) : 0;
}

/* The layout stream.h gives, written as bytes (the follower reads it back in this layout:
 * profile.c, parse_marker_fed); only the name needs escaping, the payload is the producer's JSON. */
void stream_marker(struct stream *s, const char *name, uint64_t start_ns, uint64_t end_ns, int category,
                   const char *data, size_t data_len)
{
    if (!s)
        return;
    static const char head[] = "{\"type\":\"marker\",\"name\":\"";
    char num[96];
    size_t n;
    struct jsonw *w = line_begin(s);
    jsonw_append(w, head, sizeof head - 1);
    if (name)
        jsonw_escape(w, name, strlen(name));
    memcpy(num, "\",\"startTime\":", 14);
    n = 14 + stream_format_ms(stream_ms(s, start_ns), num + 14);
    memcpy(num + n, ",\"endTime\":", 11);
    n += 11;
    if (end_ns == MARKER_INSTANT)
        memcpy(num + n, "null", 4), n += 4;
    else
        n += stream_format_ms(stream_ms(s, end_ns), num + n);
    memcpy(num + n, ",\"data\":", 8);
    jsonw_append(w, num, n + 8);
    if (data && data_len)
        jsonw_append(w, data, data_len);
    else
        jsonw_append(w, "null", 4);
    if (category != 0) {
        /* ,"category":N} right-aligned in num */
        char *d = num + sizeof num;
        *--d = '}';
        d = jsonw_digits_before(d, category < 0 ? 0 - (uint64_t)(int64_t)category : (uint64_t)category);
        if (category < 0)
            *--d = '-';
        d -= 12;
        memcpy(d, ",\"category\":", 12);
        jsonw_append(w, d, (size_t)(num + sizeof num - d));
    } else
        jsonw_append(w, "}", 1);
    line_end(s);
}

void stream_state(struct stream *s, const char *line, size_t len)
{
    if (!s || !line || !len)
        return;
    /* A line must stay one line: an embedded newline would split it into garbage. */
    if (memchr(line, '\n', len)) {
        s->lost++;
        return;
    }
    struct jsonw *w = line_begin(s);
    jsonw_append(w, line, len);
    line_end(s);
}

static void sink_marker(void *ctx, const char *name, uint64_t start_ns, uint64_t end_ns, int category,
                        const char *data, size_t data_len)
{
    stream_marker(ctx, name, start_ns, end_ns, category, data, data_len);
}

uint64_t stream_state_open(struct stream *s, const char *line, size_t len)
{
    if (!s)
        return 0;
    uint64_t gen = s->gen;
    size_t off = s->pend_len;
    stream_state(s, line, len);
    /* Still held (not written at once, nor flushed by the hold limit): it can be taken back. */
    if (!s->hold || s->gen != gen || s->pend_len != off + len + 1 || s->nopens + 1 >= (1u << HANDLE_BITS))
        return 0;
    if (s->nopens == s->opens_cap) {
        size_t cap = s->opens_cap ? s->opens_cap * 2 : 64;
        struct held_open *o = realloc(s->opens, cap * sizeof *o);
        if (!o)
            return 0;
        s->opens = o;
        s->opens_cap = cap;
    }
    s->opens[s->nopens] = (struct held_open){off, len + 1, true};
    return (gen << HANDLE_BITS) | ++s->nopens;
}

bool stream_state_retract(struct stream *s, uint64_t handle)
{
    uint64_t i = handle & ((1u << HANDLE_BITS) - 1);
    if (!s || !i || handle >> HANDLE_BITS != s->gen || i > s->nopens || !s->opens[i - 1].live)
        return false;
    s->opens[i - 1].live = false;
    s->retracted++;
    return true;
}

static void sink_state(void *ctx, const char *line, size_t len) { stream_state(ctx, line, len); }
static uint64_t sink_state_open(void *ctx, const char *line, size_t len) { return stream_state_open(ctx, line, len); }
static bool sink_state_retract(void *ctx, uint64_t handle) { return stream_state_retract(ctx, handle); }

static const char *find_extra(const struct stream_meta *m, const char *key, bool *used)
{
    for (size_t i = 0; i < m->n_extra; i++)
        if (m->extra_keys[i] && strcmp(m->extra_keys[i], key) == 0) {
            used[i] = true;
            return m->extra_values[i] ? m->extra_values[i] : "";
        }
    return NULL;
}

/* Standard keys whose value an extra key of the same name replaces in place (as a dict update
 * upstream would). */
#define META_OVERRIDE(key, write_value)                                                            \
    do {                                                                                           \
        const char *_x = find_extra(m, key, used);                                                 \
        if (_x)                                                                                    \
            jsonw_kv_str(w, key, _x);                                                              \
        else {                                                                                     \
            jsonw_key(w, key);                                                                     \
            write_value;                                                                           \
        }                                                                                          \
    } while (0)

static void write_meta(struct jsonw *w, const struct stream_meta *m, bool *used)
{
    const char *product = m->product && *m->product ? m->product : "mach";
    jsonw_obj_open(w);
    jsonw_kv_str(w, "type", "meta");
    META_OVERRIDE("processType", jsonw_int(w, 0));
    META_OVERRIDE("product", jsonw_str(w, product));
    META_OVERRIDE("stackwalk", jsonw_int(w, 0));
    META_OVERRIDE("version", jsonw_int(w, 27));
    META_OVERRIDE("preprocessedProfileVersion", jsonw_int(w, 47));
    META_OVERRIDE("symbolicationNotSupported", jsonw_bool(w, true));
    META_OVERRIDE("interval", jsonw_double(w, m->interval_ms, 3));
    META_OVERRIDE("startTime", jsonw_double(w, m->start_wall_ms, 4));
    META_OVERRIDE("profilingStartTime", jsonw_int(w, 0));
    META_OVERRIDE("logicalCPUs", jsonw_int(w, m->logical_cpus));
    META_OVERRIDE("physicalCPUs", jsonw_int(w, m->physical_cpus));
    META_OVERRIDE("mainMemory", jsonw_uint(w, m->main_memory));
    /* markers.h's marker categories, then the dumped threads' states (profile_stacks.h) */
    static const char categories[] =
        "[{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
        "{\"name\":\"Phases\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
        "{\"name\":\"Tasks\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
        "{\"name\":\"Running\",\"color\":\"red\",\"subcategories\":[\"Other\"]},"
        "{\"name\":\"Sleeping\",\"color\":\"blue\",\"subcategories\":[\"Other\"]},"
        "{\"name\":\"Disk wait\",\"color\":\"orange\",\"subcategories\":[\"Other\"]},"
        "{\"name\":\"Stopped\",\"color\":\"purple\",\"subcategories\":[\"Other\"]}]";
    jsonw_key(w, "categories");
    jsonw_raw(w, categories, sizeof categories - 1);
    jsonw_key(w, "markerSchema");
    marker_schemas_write(w);
    jsonw_kv_bool(w, "usesOnlyOneStackType", true);
    jsonw_kv_uint(w, "maxMarkers", m->max_markers);
    static const char *const reserved[] = {"type", "categories", "markerSchema", "usesOnlyOneStackType",
                                           "profilingEndTime", "maxMarkers"};
    for (size_t i = 0; i < m->n_extra; i++) {
        const char *k = m->extra_keys[i];
        if (!k || used[i])
            continue;
        bool skip = false;
        for (size_t r = 0; r < ARRAY_SIZE(reserved); r++)
            skip |= strcmp(k, reserved[r]) == 0;
        /* A later duplicate of the same extra key: the first one wins, keys stay unique. */
        for (size_t j = 0; j < i && !skip; j++)
            skip = m->extra_keys[j] && strcmp(m->extra_keys[j], k) == 0;
        if (!skip)
            jsonw_kv_str(w, k, m->extra_values[i] ? m->extra_values[i] : "");
    }
    jsonw_obj_close(w);
}

/* The thread object of profile-format.md §4 after processName (stringArray and markers excluded),
 * but the main thread of its process: the front-end then draws its markers in the process's own
 * track, named after the thread (resmon-run), and not in a track below one named after the
 * product, which a dumped process of the same name (profile_stacks.h) would share. */
static const char thread_rest[] =
    "\"processStartupTime\":0,\"processShutdownTime\":null,\"registerTime\":0,"
    "\"unregisterTime\":null,\"pausedRanges\":[],\"showMarkersInTimeline\":true,\"name\":\"" STREAM_RUN_THREAD_NAME "\","
    "\"isMainThread\":true,\"pid\":\"0\",\"tid\":0,"
    "\"samples\":{\"weightType\":\"samples\",\"weight\":null,\"stack\":[],\"time\":[],\"length\":0},"
    "\"stackTable\":{\"frame\":[0],\"prefix\":[null],\"category\":[0],\"subcategory\":[0],\"length\":1},"
    "\"frameTable\":{\"address\":[-1],\"inlineDepth\":[0],\"category\":[null],\"subcategory\":[0],"
    "\"func\":[0],\"nativeSymbol\":[null],\"innerWindowID\":[0],\"implementation\":[null],"
    "\"line\":[null],\"column\":[null],\"length\":1},"
    "\"funcTable\":{\"isJS\":[false],\"relevantForJS\":[false],\"name\":[0],\"resource\":[-1],"
    "\"fileName\":[null],\"lineNumber\":[null],\"columnNumber\":[null],\"length\":1},"
    "\"resourceTable\":{\"lib\":[],\"name\":[],\"host\":[],\"type\":[],\"length\":0},"
    "\"nativeSymbols\":{\"libIndex\":[],\"address\":[],\"name\":[],\"functionSize\":[],\"length\":0}";

const char *stream_thread_fields(void) { return thread_rest; }

static void write_thread(struct jsonw *w, const char *product)
{
    jsonw_obj_open(w);
    jsonw_kv_str(w, "type", "thread");
    jsonw_kv_str(w, "processType", "default");
    jsonw_kv_str(w, "processName", product);
    jsonw_append(w, ",", 1);
    jsonw_append(w, thread_rest, sizeof thread_rest - 1);
    jsonw_obj_close(w);
}

int stream_open(int dirfd, const char *path, const struct stream_meta *meta, uint64_t fsync_interval_ns,
                struct stream **ret)
{
    if (!path || !*path || !meta || !ret)
        return -EINVAL;
    /* A file of its own (outfile.h): what resmon-run reads back from it is what it wrote, so
     * nobody else may write to it (0644). */
    _cleanup_close_ int fd = -1, replaced = -1;
    int r = outfile_create_keep(dirfd, path, O_RDWR | O_APPEND, 0644, &fd, &replaced);
    if (r < 0)
        return r;
    /* Locked as soon as it exists; a second run that came between took the path, and has it. */
    struct stat st, at;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0)
        return errno == EWOULDBLOCK ? -EBUSY : -errno;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (fstatat(dirfd, path, &at, AT_SYMLINK_NOFOLLOW) < 0 || at.st_dev != st.st_dev || at.st_ino != st.st_ino)
        return -EBUSY;

    struct stream *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->fd = s->replaced = -1;
    s->t0_ns = meta->t0_ns;
    s->fsync_interval_ns = fsync_interval_ns;
    s->last_sync_ns = now_ns();
    jsonw_init(&s->w);
    s->sink.marker = sink_marker;
    s->sink.state = sink_state;
    s->sink.state_open = sink_state_open;
    s->sink.state_retract = sink_state_retract;
    s->sink.ctx = s;

    /* The three header lines go out in one write: a reader never sees a meta line alone. */
    bool *used = calloc(meta->n_extra ? meta->n_extra : 1, sizeof *used);
    if (!used) {
        free(s);
        return -ENOMEM;
    }
    struct jsonw *w = &s->w;
    write_meta(w, meta, used);
    free(used);
    jsonw_append(w, "\n", 1);
    const char *product = meta->product && *meta->product ? meta->product : "mach";
    /* processName follows an overridden product, so the two never disagree. */
    for (size_t i = 0; i < meta->n_extra; i++)
        if (meta->extra_keys[i] && strcmp(meta->extra_keys[i], "product") == 0 && meta->extra_values[i]) {
            product = meta->extra_values[i];
            break;
        }
    /* jsonw's nesting state continues after the newline: a fresh top-level value follows. */
    w->first[0] = true;
    write_thread(w, product);
    jsonw_append(w, "\n", 1);
    char clock[64];
    int n = snprintf(clock, sizeof clock, "{\"type\":\"clock\",\"monotonicNs\":%llu}\n",
                     (unsigned long long)meta->t0_ns);
    jsonw_append(w, clock, (size_t)n);
    if (jsonw_failed(w)) {
        jsonw_release(w);
        free(s);
        return -ENOMEM;
    }
    s->fd = TAKE_FD(fd);
    r = write_all(s->fd, w->buf, w->len);
    if (r < 0) {
        stream_close(s);
        return r;
    }
    s->lines = 3;
    s->replaced = TAKE_FD(replaced);
    *ret = s;
    return 0;
}

void stream_close(struct stream *s)
{
    if (!s)
        return;
    if (s->fd >= 0) {
        stream_flush(s);
        close(s->fd);
    }
    if (s->replaced >= 0)
        close(s->replaced);
    free(s->back);
    jsonw_release(&s->w);
    free(s->pend);
    free(s->opens);
    free(s);
}

const struct marker_sink *stream_sink(struct stream *s) { return &s->sink; }
void stream_set_tap(struct stream *s, void (*tap)(void *ctx, const char *buf, size_t len), void *ctx)
{
    if (!s)
        return;
    s->tap = tap;
    s->tap_ctx = ctx;
}

int stream_fd(const struct stream *s) { return s->fd; }

int stream_take_replaced(struct stream *s) { return s ? TAKE_FD(s->replaced) : -1; }
uint64_t stream_lines(const struct stream *s) { return s->lines; }
uint64_t stream_write_errors(const struct stream *s) { return s->errors; }
int stream_last_error(const struct stream *s) { return s->last_error; }

void stream_health(const struct stream *s, struct stream_health *ret)
{
    *ret = (struct stream_health){
        .error = s->last_error,
        .failed_writes = s->errors,
        .lines_waiting = s->back_lines + (s->back_len && s->back[s->back_off + s->back_len - 1] != '\n'),
        .lines_lost = s->lost,
    };
}

int stream_sync(struct stream *s)
{
    stream_flush(s);
    if (fdatasync(s->fd) < 0)
        return -errno;
    s->dirty = false;
    s->last_sync_ns = now_ns();
    return 0;
}
