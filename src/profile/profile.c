/* profile.c — see profile.h; the converter's parts are drawn in profile_conv.h.
 *
 * Pass 1: the lines of the stream, read or handed over by the writer, each taken by its type into
 * the converter's state; and the converter's public face (one-shot conversion, the follower).
 */
#include "profile/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "profile/profile_conv.h"
#include "profile/profile_cpu.h"
#include "profile/profile_messages.h"
#include "profile/profile_stacks.h"
#include "profile/profile_write.h"

static void open_set_init(struct open_set *o)
{
    memset(o, 0, sizeof *o);
    o->free_head = OPEN_NONE;
}

static void open_set_release(struct open_set *o)
{
    for (uint32_t i = 0; i < o->n; i++)
        free(o->ent[i].key);
    free(o->ent);
    free(o->bucket);
    open_set_init(o);
}

/* The slot holding the top entry of key (its value is OPEN_NONE when the key is not open). */
static uint32_t *open_slot(struct open_set *o, uint64_t hash, const char *key, size_t len)
{
    uint32_t *slot = &o->bucket[hash & (o->nbucket - 1)];
    while (*slot != OPEN_NONE) {
        struct open_ent *x = &o->ent[*slot];
        if (x->hash == hash && x->key_len == len && memcmp(x->key, key, len) == 0)
            break;
        slot = &x->next;
    }
    return slot;
}

static int open_rehash(struct open_set *o, uint32_t nbucket)
{
    uint32_t *b = malloc((size_t)nbucket * sizeof *b);
    if (!b)
        return -ENOMEM;
    memset(b, 0xFF, (size_t)nbucket * sizeof *b);
    for (uint32_t i = 0; i < o->nbucket; i++)
        for (uint32_t e = o->bucket[i], nx; e != OPEN_NONE; e = nx) {
            nx = o->ent[e].next;
            uint32_t *h = &b[o->ent[e].hash & (nbucket - 1)];
            o->ent[e].next = *h;
            *h = e;
        }
    free(o->bucket);
    o->bucket = b;
    o->nbucket = nbucket;
    return 0;
}

/* Push an open entry for key (copied) on top of any open one with the same key. */
static int open_push(struct open_set *o, const char *key, size_t len, uint64_t off, uint32_t line_len)
{
    if (len > UINT32_MAX || line_len == OPEN_NONE)
        return -ENOMEM;
    if (o->live + 1 > o->nbucket / 2 * 3 || !o->nbucket) {
        uint32_t nb = o->nbucket ? o->nbucket * 2 : 64;
        if (nb == 0 || open_rehash(o, nb) < 0)
            return -ENOMEM;
    }
    uint32_t id;
    if (o->free_head != OPEN_NONE) {
        id = o->free_head;
        o->free_head = o->ent[id].next;
    } else {
        if (o->n == o->cap) {
            uint32_t cap = o->cap ? o->cap * 2 : 64;
            struct open_ent *x = cap > o->cap ? realloc(o->ent, (size_t)cap * sizeof *x) : NULL;
            if (!x)
                return -ENOMEM;
            o->ent = x;
            o->cap = cap;
        }
        id = o->n++;
    }
    char *k = malloc(len ? len : 1);
    if (!k) {
        o->ent[id] = (struct open_ent){.len = OPEN_NONE, .next = o->free_head};
        o->free_head = id;
        return -ENOMEM;
    }
    memcpy(k, key, len);
    uint64_t hash = intern_hash(key, len);
    uint32_t *slot = open_slot(o, hash, key, len);
    uint32_t top = *slot;
    o->ent[id] = (struct open_ent){off, line_len, top, top != OPEN_NONE ? o->ent[top].next : OPEN_NONE,
                                   (uint32_t)len, hash, k};
    *slot = id;
    o->live++;
    return 0;
}

/* Close the most recent open entry of key, if any. */
static void open_pop(struct open_set *o, const char *key, size_t len)
{
    if (!o->nbucket)
        return;
    uint32_t *slot = open_slot(o, intern_hash(key, len), key, len);
    uint32_t top = *slot;
    if (top == OPEN_NONE)
        return;
    struct open_ent *x = &o->ent[top];
    if (x->prev != OPEN_NONE) {
        o->ent[x->prev].next = x->next;
        *slot = x->prev;
    } else
        *slot = x->next;
    free(x->key);
    *x = (struct open_ent){.len = OPEN_NONE, .next = o->free_head};
    o->free_head = top;
    o->live--;
}

static void conv_release(struct conv *c)
{
    for (unsigned i = 0; i < c->ncounters; i++)
        counter_release(&c->counters[i]);
    free(c->counter_of);
    free(c->hidden);
    free(c->targets);
    sread_release(&c->rd);
    free(c->recs);
    intern_release(&c->names);
    open_set_release(&c->opens);
    pstacks_free(c->stacks);
    pcpu_free(c->cpu);
    c->cpu = NULL;
    c->stacks = NULL;
    jsonw_release(&c->side);
    jsonw_release(&c->tmp);
    free(c->obuf);
    free(c->wbuf);
}

void conv_note_time(struct conv *c, double ms)
{
    if (isfinite(ms) && ms > c->last_ms)
        c->last_ms = ms;
}

int conv_add_rec(struct conv *c, int64_t name_id, double start, double end, unsigned cat, uint64_t off,
                   size_t len, bool side)
{
    if (c->nrec == c->rcap) {
        size_t cap = c->rcap ? c->rcap * 2 : 4096;
        struct rec *r = realloc(c->recs, cap * sizeof *r);
        if (!r)
            return -ENOMEM;
        c->recs = r;
        c->rcap = cap;
    }
    c->recs[c->nrec++] = (struct rec){off, start, end, (uint32_t)len | (uint32_t)cat << 24,
                                      (uint32_t)name_id | (side ? REC_SIDE : 0)};
    conv_note_time(c, start);
    conv_note_time(c, end);
    return 0;
}

int conv_canonical_text(struct conv *c, const char *v, size_t n, const char **ret, size_t *ret_len)
{
    *ret = v + 1;
    *ret_len = n - 2;
    if (!memchr(*ret, '\\', *ret_len))
        return 0;
    jsonw_reset(&c->tmp);
    js_canonical_string(&c->tmp, *ret, *ret_len);
    if (jsonw_failed(&c->tmp))
        return -ENOMEM;
    *ret = c->tmp.buf;
    *ret_len = c->tmp.len;
    return 0;
}

/* Intern a name given as the raw JSON text of a string value (quotes included); with only_find,
 * its id if it is interned already, else -1. */
static int64_t intern_name_how(struct conv *c, const char *v, size_t n, bool only_find)
{
    const char *s;
    size_t len;
    if (conv_canonical_text(c, v, n, &s, &len) < 0)
        return -ENOMEM;
    return only_find ? intern_find(&c->names, s, len) : intern_get(&c->names, s, len);
}

int64_t conv_intern_name(struct conv *c, const char *v, size_t n) { return intern_name_how(c, v, n, false); }

unsigned conv_category(const struct conv *c, const struct js_member *m)
{
    double d;
    if (!m || !js_number(m->val, m->val_len, &d) || d < 0 || d >= c->ncat || d != (double)(unsigned)d)
        return 0;
    return (unsigned)d;
}

/* A Phase payload with cpuTime and no cpuPercent gets cpuPercent (profile.h). Returns true when
 * the modified payload was put into c->side at *ret_off. */
static bool phase_fixup(struct conv *c, const char *data, size_t len, double start, double end,
                        uint64_t *ret_off, size_t *ret_len)
{
    struct js_iter it;
    struct js_member m;
    double cpu = NAN;
    bool has_pct = false, any = false;
    if (!isfinite(end) || end <= start || js_obj_begin(&it, data, data + len) < 0)
        return false;
    while (js_obj_next(&it, &m) > 0) {
        any = true;
        if (js_key_is(&m, "cpuPercent"))
            has_pct = true;
        else if (js_key_is(&m, "cpuTime"))
            js_number(m.val, m.val_len, &cpu);
    }
    if (has_pct || !any || !isfinite(cpu) || c->logical_cpus <= 0)
        return false;
    double pct = 100.0 * cpu / ((end - start) * c->logical_cpus);
    char buf[48];
    int n = snprintf(buf, sizeof buf, ",\"cpuPercent\":\"%.1f%%\"}", pct);
    if (n < 0 || (size_t)n >= sizeof buf)
        return false;
    const char *close = data + len - 1;
    while (close > data && *close != '}')
        close--;
    size_t off = c->side.len;
    jsonw_append(&c->side, data, (size_t)(close - data));
    jsonw_append(&c->side, buf, (size_t)n);
    if (jsonw_failed(&c->side))
        return false;
    *ret_off = off;
    *ret_len = c->side.len - off;
    return *ret_len <= REC_LEN_MASK;
}

static bool is_object_or_null(const struct js_member *m)
{
    return m->val[0] == '{' || (m->val_len == 4 && memcmp(m->val, "null", 4) == 0);
}

/* Past the marker limit (profile.h): whether a marker with this payload still gets a record.
 * Counts the ones left out. */
static bool keep_past_limit(struct conv *c, const char *data, size_t len)
{
    bool routine = false, run_end = false;
    struct js_iter it;
    struct js_member m;
    if (len && js_obj_begin(&it, data, data + len) == 0)
        while (js_obj_next(&it, &m) > 0) {
            if (js_key_is(&m, "color"))
                routine = js_val_is_str(&m, "green");
            else if (js_key_is(&m, "type"))
                run_end = js_val_is_str(&m, "Timeout") || js_val_is_str(&m, "KillStep") ||
                          js_val_is_str(&m, "Finalize") || js_val_is_str(&m, "Command");
        }
    uint64_t twice = 2 * c->max_markers;
    bool keep = c->nrec < twice ? !routine : run_end && c->nrec < twice + PROFILE_RUN_END_RESERVE;
    if (keep)
        return true;
    if (routine)
        c->dropped_routine++;
    else
        c->dropped_other++;
    return false;
}

/* 1 accepted, 0 invalid (skipped), -errno. */
/* A process marker's end, for a dumped process's track (pstacks_note_end). */
static void note_process_end(struct conv *c, const char *data, size_t len, double end)
{
    struct js_iter it;
    struct js_member m;
    double pid;
    if (js_obj_begin(&it, data, data + len) == 0)
        while (js_obj_next(&it, &m) > 0)
            if (js_key_is(&m, "pid") && js_number(m.val, m.val_len, &pid)) {
                pstacks_note_end(c->stacks, (int)pid, end);
                return;
            }
}

static int take_marker(struct conv *c, const char *line, size_t len, uint64_t off)
{
    struct sline_marker f;
    if (!sline_marker(line, len, c->rd.trusted, &f))
        return 0;
    struct js_member *name = f.name, *data = f.data, *cat = f.cat;
    int r;
    double st = f.st, en = f.en;
    if (data && !is_object_or_null(data))
        return 0;
    size_t dlen = data && data->val[0] == '{' ? data->val_len : 0;
    if (dlen > REC_LEN_MASK)
        return 0;
    if (en < st)
        en = st; /* a marker cannot end before it starts */
    if (c->stacks && dlen && !isnan(en) && name->val_len == 9 && memcmp(name->val, "\"process\"", 9) == 0)
        note_process_end(c, data->val, dlen, en);
    /* A counter's marker name was interned with the counter: a name that is not cannot feed one.
     * One lookup serves the counter and the record; a new name is added only for a marker that
     * is kept (past the limit the table must not grow). */
    int64_t id = intern_name_how(c, name->val, name->val_len, true);
    if (id < -1)
        return (int)id;
    struct counter *k = counter_for(c, id);
    for (; k; k = k->next ? &c->counters[k->next - 1] : NULL)
        if ((r = counter_take(k, data ? data->val : NULL, dlen, st, en)) < 0)
            return r;
    if (c->max_markers && c->nrec >= c->max_markers && !keep_past_limit(c, data ? data->val : NULL, dlen)) {
        conv_note_time(c, st);
        conv_note_time(c, en);
        return 1;
    }
    if (id < 0 && (id = conv_intern_name(c, name->val, name->val_len)) < 0)
        return (int)id;
    uint64_t doff = dlen ? off + (uint64_t)(data->val - line) : 0;
    bool side = false;
    if (dlen && name->val_len == 7 && memcmp(name->val, "\"Phase\"", 7) == 0) {
        uint64_t so;
        size_t sl;
        if (phase_fixup(c, data->val, dlen, st, en, &so, &sl)) {
            doff = so;
            dlen = sl;
            side = true;
        }
    }
    if (side)
        js_lone_surrogates(c->side.buf + doff, dlen, c->side.buf + doff);
    else if (dlen && !c->rd.trusted && js_lone_surrogates(data->val, dlen, NULL)) {
        /* the payload as strict JSON, from the side buffer */
        doff = c->side.len;
        jsonw_append(&c->side, data->val, dlen);
        if (jsonw_failed(&c->side))
            return -ENOMEM;
        js_lone_surrogates(data->val, dlen, c->side.buf + doff);
        side = true;
    }
    r = conv_add_rec(c, id, st, en, conv_category(c, cat), doff, dlen, side);
    if (r == 0 && dlen && name->val_len == 6 && memcmp(name->val, "\"test\"", 6) == 0)
        r = message_note_target(c, data->val, dlen);
    return r < 0 ? r : 1;
}

/* The state key "kind\0key" of an open/close line (raw JSON texts of both strings), in c->tmp. */
static int state_key(struct conv *c, const struct js_member *kind, const struct js_member *key)
{
    jsonw_reset(&c->tmp);
    jsonw_append(&c->tmp, kind->val, kind->val_len);
    jsonw_append(&c->tmp, "", 1); /* jsonw_append copies n bytes: a NUL separator */
    jsonw_append(&c->tmp, key->val, key->val_len);
    return jsonw_failed(&c->tmp) ? -ENOMEM : 0;
}

double conv_state_start(const struct conv *c, const struct sline_state *f)
{
    double ms;
    uint64_t ns;
    if (f->has_start_ms && js_number(f->start_ms.val, f->start_ms.val_len, &ms))
        return ms;
    if (f->has_start_ns && c->have_clock && js_u64(f->start_ns.val, f->start_ns.val_len, &ns)) {
        int64_t d = ns >= c->t0_ns ? (int64_t)(ns - c->t0_ns) : -(int64_t)(c->t0_ns - ns);
        int64_t us = d >= 0 ? (d + 500) / 1000 : -((-d + 500) / 1000);
        return (double)us / 1000.0;
    }
    return NAN;
}

static int take_state(struct conv *c, bool open, const char *line, size_t len, uint64_t off)
{
    struct sline_state f;
    if (!sline_state(line, len, &f))
        return 0;
    if (open) {
        if (!f.has_name || f.name.val[0] != '"' || (f.has_data && !is_object_or_null(&f.data)))
            return 0;
        double st = conv_state_start(c, &f);
        if (!isfinite(st) || len > UINT32_MAX)
            return 0;
        conv_note_time(c, st);
    }
    int r = state_key(c, &f.kind, &f.key);
    if (r < 0)
        return r;
    if (!open) {
        open_pop(&c->opens, c->tmp.buf, c->tmp.len);
        return 1;
    }
    r = open_push(&c->opens, c->tmp.buf, c->tmp.len, off, (uint32_t)len);
    return r < 0 ? r : 1;
}

static int take_meta(struct conv *c, const char *line, size_t len, uint64_t off)
{
    struct js_iter it;
    struct js_member m;
    int r;
    if (!sline_is_meta(line, len) || js_obj_begin(&it, line, line + len) < 0)
        return -EINVAL;
    c->ncat = 1;
    while ((r = js_obj_next(&it, &m)) > 0) {
        double d;
        if (js_key_is(&m, "categories") && m.val[0] == '[') {
            size_t n = js_array_count(m.val, m.val_len);
            c->ncat = (unsigned)MIN(MAX(n, (size_t)1), (size_t)256);
        } else if (js_key_is(&m, "logicalCPUs") && js_number(m.val, m.val_len, &d) && d >= 1 && d < 1e6)
            c->logical_cpus = (int)d;
        else if (js_key_is(&m, "maxMarkers") && js_number(m.val, m.val_len, &d) && d >= 0 &&
                 d <= (double)PROFILE_MAX_MARKERS_MAX)
            c->max_markers = (uint64_t)d;
    }
    if (r < 0 || js_skip_ws(it.p, it.e) != it.e || len > UINT32_MAX)
        return -EINVAL;
    c->meta_off = off;
    c->meta_len = len;
    return 0;
}

static int take_thread(struct conv *c, const char *line, size_t len, uint64_t off)
{
    struct js_iter it;
    struct js_member m;
    int r;
    if (c->have_thread || js_obj_begin(&it, line, line + len) < 0)
        return 0;
    char name[sizeof c->run_name] = "";
    while ((r = js_obj_next(&it, &m)) > 0) {
        if (js_key_is(&m, "stringArray") || js_key_is(&m, "markers"))
            return 0;
        /* a plain name (no escapes) is the track's as the front-end shows it */
        if (js_key_is(&m, "name") && m.val_len >= 2 && m.val[0] == '"' && m.val_len - 2 < sizeof name &&
            !memchr(m.val, '\\', m.val_len)) {
            memcpy(name, m.val + 1, m.val_len - 2);
            name[m.val_len - 2] = '\0';
        }
    }
    if (r < 0 || js_skip_ws(it.p, it.e) != it.e)
        return 0;
    memcpy(c->run_name, name, sizeof name);
    c->have_thread = true;
    c->thread_off = off;
    c->thread_len = len;
    return 1;
}

static int take_clock(struct conv *c, const char *line, size_t len)
{
    struct js_iter it;
    struct js_member m;
    int r;
    uint64_t t0 = 0;
    bool ok = false;
    if (js_obj_begin(&it, line, line + len) < 0)
        return 0;
    while ((r = js_obj_next(&it, &m)) > 0)
        if (js_key_is(&m, "monotonicNs"))
            ok = js_u64(m.val, m.val_len, &t0);
    if (r < 0 || !ok || js_skip_ws(it.p, it.e) != it.e)
        return 0;
    c->t0_ns = t0;
    c->have_clock = true;
    return 1;
}

static int take_line(struct conv *c, const char *line, size_t len, uint64_t off)
{
    switch (sline_type(line, len)) {
    case SLINE_MARKER: return take_marker(c, line, len, off);
    case SLINE_OPEN: return take_state(c, true, line, len, off);
    case SLINE_CLOSE: return take_state(c, false, line, len, off);
    case SLINE_THREAD: return take_thread(c, line, len, off);
    case SLINE_CLOCK: return take_clock(c, line, len);
    case SLINE_COUNTER: return counters_take_line(c, line, len);
    case SLINE_STACK: return pstacks_add(&c->stacks, line, len);
    case SLINE_MESSAGE: return message_take_line(c, line, len);
    case SLINE_CPU: return pcpu_add(&c->cpu, line, len);
    case SLINE_OTHER: break;
    }
    return 0;
}

int conv_pread(int fd, char *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO; /* the file shrank under us */
        got += (size_t)n;
    }
    return 0;
}

static int conv_init(struct conv *c, int in_fd, bool follow)
{
    *c = (struct conv){.in_fd = in_fd, .ncat = 1, .max_markers = PROFILE_MAX_MARKERS_DEFAULT};
    open_set_init(&c->opens);
    jsonw_init(&c->side);
    jsonw_init(&c->tmp);
    /* stringArray[0] is the root function's name; a marker of that name shares it. */
    if (sread_init(&c->rd, in_fd, follow) < 0 || intern_get(&c->names, "(root)", 6) != 0)
        return -ENOMEM;
    return 0;
}

/* Pass 1 over the lines not read yet (in follow mode, up to the last complete one). */
static int conv_feed(struct conv *c)
{
    const char *line = NULL;
    size_t len = 0;
    uint64_t off = 0;
    int r;
    while ((r = sread_next(&c->rd, &line, &len, &off)) > 0) {
        if (!c->started) {
            r = take_meta(c, line, len, off);
            if (r < 0)
                return r;
            c->started = true;
            continue;
        }
        if (len == 0)
            continue;
        r = take_line(c, line, len, off);
        if (r < 0)
            return r;
        if (r == 0)
            c->skipped++;
    }
    if (r < 0)
        return r;
    sread_shrink(&c->rd);
    return 0;
}

int profile_convert(int in_fd, int out_fd, const struct profile_end *end, struct profile_stats *ret_stats)
{
    struct conv c;
    int r = conv_init(&c, in_fd, false);
    if (r == 0)
        r = conv_feed(&c);
    if (r == 0)
        r = conv_write(&c, out_fd, end, ret_stats);
    conv_release(&c);
    return r;
}

/* ---- following a growing stream ------------------------------------------------------------ */

struct profile_conv {
    struct conv c;
    int err; /* sticky: after a failure every later call fails the same way */
};

int profile_conv_new(int in_fd, struct profile_conv **ret)
{
    struct profile_conv *pc = calloc(1, sizeof *pc);
    if (!pc)
        return -ENOMEM;
    int r = conv_init(&pc->c, in_fd, true);
    if (r < 0) {
        conv_release(&pc->c);
        free(pc);
        return r;
    }
    *ret = pc;
    return 0;
}

void profile_conv_free(struct profile_conv *pc)
{
    if (!pc)
        return;
    conv_release(&pc->c);
    free(pc);
}

const struct pcpu *profile_conv_cpu(const struct profile_conv *pc)
{
    return pc ? pc->c.cpu : NULL;
}

int profile_conv_update(struct profile_conv *pc)
{
    if (pc->err == 0)
        pc->err = conv_feed(&pc->c);
    return pc->err;
}

int profile_conv_fed(struct profile_conv *pc)
{
    int r = profile_conv_update(pc);
    if (r == 0)
        pc->c.rd.fed = pc->c.rd.trusted = true;
    return r;
}

int profile_conv_feed(struct profile_conv *pc, const char *buf, size_t len)
{
    if (!buf) {
        pc->c.rd.trusted = false;
        return pc->err;
    }
    if (pc->err == 0 && pc->c.rd.fed)
        pc->err = sread_append(&pc->c.rd, buf, len);
    return pc->err;
}

int profile_conv_write(struct profile_conv *pc, int out_fd, const struct profile_end *end,
                       struct profile_stats *ret_stats)
{
    int r = profile_conv_update(pc);
    return r < 0 ? r : conv_write(&pc->c, out_fd, end, ret_stats);
}

int profile_finalize(int in_fd, int dirfd, const char *path, const struct profile_end *end,
                     struct profile_stats *ret_stats)
{
    struct conv c;
    int r = conv_init(&c, in_fd, false);
    if (r == 0)
        r = conv_feed(&c);
    if (r == 0)
        r = conv_finalize(&c, dirfd, path, end, ret_stats);
    conv_release(&c);
    return r;
}

int profile_conv_finalize(struct profile_conv *pc, int dirfd, const char *path, const struct profile_end *end,
                          struct profile_stats *ret_stats)
{
    int r = profile_conv_update(pc);
    return r < 0 ? r : conv_finalize(&pc->c, dirfd, path, end, ret_stats);
}

