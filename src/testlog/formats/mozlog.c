/* mozlog.c — mozlog raw JSON lines (test-logs.md, format 1).
 *
 * The project's one JSON scanner (base/jscan.h) instead of a JSON DOM: it reads the top-level
 * object once, remembers where the few interesting values are, and decodes only those strings
 * (most need no decoding and are used in place). That keeps a dense log cheap and lets a huge line
 * be read as a bounded prefix: members complete before the cut are usable (a suite_start whose
 * "tests" list is cut still names its suite), anything cut is ignored. Strings are read loosely
 * (their bytes as the producer wrote them; the sinks sanitize): a line is mozlog when it is JSON
 * but for that.
 *
 * Producer deviations handled: "time" missing, null or in float seconds (the core converts values
 * below 1e11), "test" given as a list of strings (joined with spaces), "pid" null, numeric or string
 * "process". Lines of the errorsummary format (actions test_result, group_result, test_groups, and
 * log/crash lines that carry a "line" number and no "thread"/"source") are not mozlog.
 */
#include "testlog/event.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jscan.h"
#include "testlog/testlog.h"

/* Lines longer than this are parsed as a prefix of this many bytes. */
#define MOZLOG_PREFIX (64 * 1024)

enum {
    F_ACTION,
    F_TIME,
    F_TEST,
    F_SUBSUITE,
    F_STATUS,
    F_EXPECTED,
    F_MESSAGE,
    F_KNOWN,
    F_EXTRA,
    F_SUBTEST,
    F_LEVEL,
    F_PROCESS,
    F_DATA,
    F_COMMAND,
    F_EXITCODE,
    F_SIGNATURE,
    F_REASON,
    F_MINIDUMP,
    F_COUNT,
    F_MIN,
    F_MAX,
    F_SOURCE,
    F_NAME,
    F_STACK,
    F_FRAMES,
    F_BYTES,
    F_ALLOCS,
    F_THRESHOLD,
    F_GROUP,
    F_LINE,
    F_THREAD,
    F_N
};

struct jv {
    const char *p; /* strings: the raw bytes between the quotes; others: the value's text */
    uint32_t n;    /* values lie within MOZLOG_PREFIX bytes: 16-byte entries, cheap to clear */
    char t;        /* 0 absent, 's' string, 'n' number, 'o' object, 'a' array, 'l' literal */
    bool esc;      /* string holds backslash escapes */
};

struct mozlog_state {
    char *arena; /* decoded strings of the current line */
    size_t cap, used;
};

/* The field a top-level key names, -1 for none of ours (a switch on length, then one compare per
 * candidate: cheaper than searching the name table for each of a line's keys). */
static int field_of(const char *k, size_t n)
{
    switch (n) {
    case 4:
        if (!memcmp(k, "data", 4))
            return F_DATA;
        if (!memcmp(k, "line", 4))
            return F_LINE;
        if (!memcmp(k, "name", 4))
            return F_NAME;
        if (!memcmp(k, "test", 4))
            return F_TEST;
        if (!memcmp(k, "time", 4))
            return F_TIME;
        return -1;
    case 5:
        if (!memcmp(k, "bytes", 5))
            return F_BYTES;
        if (!memcmp(k, "count", 5))
            return F_COUNT;
        if (!memcmp(k, "extra", 5))
            return F_EXTRA;
        if (!memcmp(k, "group", 5))
            return F_GROUP;
        if (!memcmp(k, "level", 5))
            return F_LEVEL;
        if (!memcmp(k, "stack", 5))
            return F_STACK;
        return -1;
    case 6:
        if (!memcmp(k, "action", 6))
            return F_ACTION;
        if (!memcmp(k, "frames", 6))
            return F_FRAMES;
        if (!memcmp(k, "reason", 6))
            return F_REASON;
        if (!memcmp(k, "source", 6))
            return F_SOURCE;
        if (!memcmp(k, "status", 6))
            return F_STATUS;
        if (!memcmp(k, "thread", 6))
            return F_THREAD;
        return -1;
    case 7:
        if (!memcmp(k, "command", 7))
            return F_COMMAND;
        if (!memcmp(k, "message", 7))
            return F_MESSAGE;
        if (!memcmp(k, "process", 7))
            return F_PROCESS;
        if (!memcmp(k, "subtest", 7))
            return F_SUBTEST;
        return -1;
    case 8:
        if (!memcmp(k, "exitcode", 8))
            return F_EXITCODE;
        if (!memcmp(k, "expected", 8))
            return F_EXPECTED;
        if (!memcmp(k, "subsuite", 8))
            return F_SUBSUITE;
        return -1;
    case 9:
        if (!memcmp(k, "signature", 9))
            return F_SIGNATURE;
        if (!memcmp(k, "threshold", 9))
            return F_THRESHOLD;
        return -1;
    case 11:
        if (!memcmp(k, "allocations", 11))
            return F_ALLOCS;
        return -1;
    case 12:
        if (!memcmp(k, "max_expected", 12))
            return F_MAX;
        if (!memcmp(k, "min_expected", 12))
            return F_MIN;
        return -1;
    case 13:
        if (!memcmp(k, "minidump_path", 13))
            return F_MINIDUMP;
        return -1;
    case 18:
        if (!memcmp(k, "known_intermittent", 18))
            return F_KNOWN;
        return -1;
    default:
        return -1;
    }
}

/* The value of a member, as the parser keeps it. */
static inline void take(struct jv *v, const struct js_member *m)
{
    char c = m->val[0];
    if (c == '"') {
        v->p = m->val + 1;
        v->n = (uint32_t)(m->val_len - 2);
        v->t = 's';
        v->esc = m->val_escaped;
        return;
    }
    v->p = m->val;
    v->n = (uint32_t)m->val_len;
    v->t = c == '{' ? 'o' : c == '[' ? 'a' : c == 't' || c == 'f' || c == 'n' ? 'l' : 'n';
    v->esc = false;
}

/* ---- decoding into the arena ---- */

static char *arena_take(struct mozlog_state *st, size_t n)
{
    if (st->used + n > st->cap)
        return NULL;
    char *p = st->arena + st->used;
    st->used += n;
    return p;
}

static struct tl_str jstr(struct mozlog_state *st, const struct jv *v)
{
    if (v->t != 's')
        return tl_str_make("", 0);
    if (!v->esc)
        return tl_str_make(v->p, v->n);
    char *o = arena_take(st, v->n);
    if (!o)
        return tl_str_make("", 0);
    size_t k = js_decode_string(v->p, v->n, o);
    st->used -= v->n - k;
    return tl_str_make(o, k);
}

/* A string, or the text of a number (pids, process ids). */
static struct tl_str jstr_or_num(struct mozlog_state *st, const struct jv *v)
{
    if (v->t == 'n')
        return tl_str_make(v->p, v->n);
    return jstr(st, v);
}

/* The strings of an array, joined with sep (test ids given as lists, lsan frames). */
static struct tl_str jjoin(struct mozlog_state *st, const struct jv *v, const char *sep)
{
    if (v->t == 's')
        return jstr(st, v);
    if (v->t != 'a')
        return tl_str_make("", 0);
    size_t seplen = strlen(sep);
    char *start = st->arena + st->used;
    size_t total = 0;
    struct js_iter it;
    struct js_member m;
    js_arr_begin(&it, v->p, v->p + v->n);
    it.loose = true;
    while (js_arr_next(&it, &m) > 0 && m.val[0] == '"') {
        struct jv e;
        take(&e, &m);
        if (total) {
            char *o = arena_take(st, seplen);
            if (!o)
                break;
            memcpy(o, sep, seplen);
            total += seplen;
        }
        char *o = arena_take(st, e.n);
        if (!o)
            break;
        size_t k = js_decode_string(e.p, e.n, o);
        st->used -= e.n - k;
        total += k;
    }
    return tl_str_make(start, total);
}

static bool array_has(const struct jv *v, struct tl_str s)
{
    if (v->t != 'a')
        return false;
    struct js_iter it;
    struct js_member m;
    js_arr_begin(&it, v->p, v->p + v->n);
    it.loose = true;
    while (js_arr_next(&it, &m) > 0 && m.val[0] == '"')
        if (m.val_len - 2 == s.n && memcmp(m.val + 1, s.p, s.n) == 0)
            return true;
    return false;
}

static bool jnum(const struct jv *v, double *ret)
{
    return v->t == 'n' && js_number(v->p, v->n, ret);
}

static bool jint(const struct jv *v, int64_t *ret)
{
    double d;
    if (!jnum(v, &d) || d != d || d > 9.2e18 || d < -9.2e18)
        return false;
    *ret = (int64_t)d;
    return true;
}

static bool is(const struct jv *v, const char *lit)
{
    size_t n = strlen(lit);
    return v->t == 's' && v->n == n && memcmp(v->p, lit, n) == 0;
}

static struct tl_str lit(const char *s) { return tl_str_make(s, strlen(s)); }

/* printf into the arena. */
static struct tl_str aprintf(struct mozlog_state *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static struct tl_str aprintf(struct mozlog_state *st, const char *fmt, ...)
{
    size_t room = st->cap - st->used;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(st->arena + st->used, room, fmt, ap);
    va_end(ap);
    if (k < 0)
        return lit("");
    if ((size_t)k >= room)
        k = room ? (int)room - 1 : 0;
    struct tl_str r = tl_str_make(st->arena + st->used, (size_t)k);
    st->used += (size_t)k;
    return r;
}

static void expectation(struct tl_event *ev, const struct jv *f)
{
    ev->expected_known = true;
    if (f[F_EXPECTED].t == 's') {
        ev->unexpected = !(ev->expected.n == ev->status.n &&
                           memcmp(ev->expected.p, ev->status.p, ev->status.n) == 0) &&
                         !array_has(&f[F_KNOWN], ev->status);
    }
}

/* Leaks and shutdown failures (LSan, Gecko's refcount logging): their markers. 1: an event, 0:
 * none, -1: not one of these actions. */
static int leak_action(struct mozlog_state *st, const struct jv *act, const struct jv *f, struct tl_event *ev)
{
    if (is(act, "lsan_leak")) {
        ev->kind = TLE_LEAK;
        ev->name = lit("LSan Leak");
        char *p = arena_take(st, 8);
        if (!p)
            return 0;
        memcpy(p, "leak at ", 8);
        if (f[F_FRAMES].t == 'a') {
            /* jjoin appends right after the prefix in the arena */
            struct tl_str frames = jjoin(st, &f[F_FRAMES], ", ");
            ev->message = tl_str_make(p, 8 + frames.n);
        } else
            ev->message = lit("leak");
    } else if (is(act, "lsan_summary")) {
        int64_t bytes = 0, allocs = 0;
        jint(&f[F_BYTES], &bytes);
        jint(&f[F_ALLOCS], &allocs);
        ev->kind = TLE_LEAK;
        ev->name = lit("LSan Summary");
        ev->message = aprintf(st, "%lld byte(s) leaked in %lld allocation(s).", (long long)bytes,
                              (long long)allocs);
    } else if (is(act, "mozleak_total")) {
        int64_t bytes = 0, threshold = 0;
        jint(&f[F_BYTES], &bytes);
        jint(&f[F_THRESHOLD], &threshold);
        if (bytes <= threshold)
            return 0;
        struct tl_str proc = jstr_or_num(st, &f[F_PROCESS]);
        ev->kind = TLE_LEAK;
        ev->name = lit("Leaked Total");
        ev->message = aprintf(st, "%.*s leaked %lld bytes", (int)(proc.n > 200 ? 200 : proc.n),
                              proc.n ? proc.p : "process", (long long)bytes);
    } else if (is(act, "shutdown_failure")) {
        ev->kind = TLE_LEAK;
        ev->name = lit("SHUTDOWN-FAIL");
        ev->id = jstr(st, &f[F_GROUP]);
        ev->message = jstr(st, &f[F_MESSAGE]);
    } else {
        return -1;
    }
    return 1;
}

static int mozlog_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                        struct tl_event *ev)
{
    (void)arrival_ns;
    struct mozlog_state *st = state;
    size_t lead = 0;
    while (lead < len && (line[lead] == ' ' || line[lead] == '\t'))
        lead++;
    if (lead == len || line[lead] != '{')
        return 0;
    line += lead;
    len -= lead;
    bool prefix = len > MOZLOG_PREFIX;
    size_t n = prefix ? MOZLOG_PREFIX : len;
    struct jv f[F_N];
    memset(f, 0, sizeof f);
    struct js_iter it;
    struct js_member m;
    int r;
    js_obj_begin(&it, line, line + n);
    it.loose = true;
    while ((r = js_obj_next(&it, &m)) > 0) {
        int fld = m.key_escaped ? -1 : field_of(m.key, m.key_len);
        /* a value that runs up to a prefix's cut may be cut itself (a number) */
        if (fld >= 0 && it.p < it.e)
            take(&f[fld], &m);
    }
    if (r < 0 ? !(prefix && it.cut) : js_skip_ws(it.p, it.e) != it.e)
        return 0;
    if (f[F_ACTION].t != 's')
        return 0;
    /* errorsummary lines carry a line number and none of mozlog's logger fields */
    if (f[F_LINE].t == 'n' && !f[F_THREAD].t && !f[F_SOURCE].t)
        return 0;

    /* room for every decoded string and the few composed messages */
    size_t need = 2 * n + 512;
    if (need > st->cap) {
        char *a = realloc(st->arena, need);
        if (!a)
            return 0;
        st->arena = a;
        st->cap = need;
    }
    st->used = 0;

    const struct jv *act = &f[F_ACTION];
    int leak;
    tl_event_init(ev, TLE_LOG);
    double t;
    if (jnum(&f[F_TIME], &t))
        ev->t.wall_ms = t;
    /* the members every action may use */
#define TEST() (ev->id = jjoin(st, &f[F_TEST], " "))

    if (is(act, "test_start")) {
        ev->kind = TLE_TEST_START;
        TEST();
        ev->scope = jstr(st, &f[F_SUBSUITE]);
    } else if (is(act, "test_end") || is(act, "test_status")) {
        ev->kind = is(act, "test_end") ? TLE_TEST_END : TLE_SUBTEST;
        TEST();
        ev->scope = jstr(st, &f[F_SUBSUITE]);
        ev->status = jstr(st, &f[F_STATUS]);
        ev->expected = jstr(st, &f[F_EXPECTED]);
        ev->message = jstr(st, &f[F_MESSAGE]);
        ev->stack = jstr(st, &f[F_STACK]);
        ev->subtest = jstr(st, &f[F_SUBTEST]);
        if (!ev->status.n)
            return 0;
        expectation(ev, f);
        if (f[F_EXTRA].t == 'o') {
            js_obj_begin(&it, f[F_EXTRA].p, f[F_EXTRA].p + f[F_EXTRA].n);
            it.loose = true;
            struct jv tf = {0};
            int64_t v;
            while (js_obj_next(&it, &m) > 0)
                if (js_key_is(&m, "timeoutfactor"))
                    take(&tf, &m);
            if (jint(&tf, &v) && v > 0)
                ev->timeoutfactor = v;
        }
    } else if (is(act, "suite_start")) {
        ev->kind = TLE_SUITE_START;
        ev->id = f[F_NAME].t == 's' ? jstr(st, &f[F_NAME]) : jstr(st, &f[F_SOURCE]);
        if (!ev->id.n)
            ev->id = lit("suite");
    } else if (is(act, "suite_end")) {
        ev->kind = TLE_SUITE_END;
        ev->id = jstr(st, &f[F_NAME]);
    } else if (is(act, "group_start") || is(act, "group_end")) {
        ev->kind = is(act, "group_start") ? TLE_GROUP_START : TLE_GROUP_END;
        ev->id = jstr(st, &f[F_NAME]);
        if (!ev->id.n && ev->kind == TLE_GROUP_START)
            ev->id = lit("group");
    } else if (is(act, "log")) {
        ev->kind = TLE_LOG;
        ev->level = jstr(st, &f[F_LEVEL]);
        ev->message = jstr(st, &f[F_MESSAGE]);
    } else if (is(act, "process_output")) {
        ev->kind = TLE_OUTPUT;
        ev->process = jstr_or_num(st, &f[F_PROCESS]);
        ev->message = jstr(st, &f[F_DATA]);
        TEST();
    } else if (is(act, "process_start") || is(act, "process_exit")) {
        ev->kind = is(act, "process_start") ? TLE_PROCESS_START : TLE_PROCESS_EXIT;
        ev->process = jstr_or_num(st, &f[F_PROCESS]);
        ev->command = jstr(st, &f[F_COMMAND]);
        if (jint(&f[F_EXITCODE], &ev->exitcode))
            ev->has_exitcode = true;
    } else if (is(act, "crash")) {
        ev->kind = TLE_CRASH;
        TEST();
        ev->signature = jstr(st, &f[F_SIGNATURE]);
        ev->reason = jstr(st, &f[F_REASON]);
        ev->minidump = jstr(st, &f[F_MINIDUMP]);
        ev->process = jstr_or_num(st, &f[F_PROCESS]);
    } else if (is(act, "assertion_count")) {
        int64_t count, mn = 0, mx = 0;
        if (!jint(&f[F_COUNT], &count))
            return 0;
        jint(&f[F_MIN], &mn);
        jint(&f[F_MAX], &mx);
        if (count >= mn && count <= mx)
            return 0;
        ev->kind = TLE_ASSERT;
        TEST();
        ev->message = aprintf(st, "assertion count %lld is %s than expected %lld to %lld assertions",
                              (long long)count, count > mx ? "more" : "less", (long long)mn,
                              (long long)mx);
    } else if ((leak = leak_action(st, act, f, ev)) >= 0) {
        return leak;
    } else {
        return 0; /* not a mozlog action we turn into markers (or not mozlog at all) */
    }
#undef TEST
    return 1;
}

static void mozlog_release(void *state)
{
    struct mozlog_state *st = state;
    free(st->arena);
    st->arena = NULL;
}

const struct tl_format tl_format_mozlog = {
    .name = "mozlog",
    .bit = TL_FMT_MOZLOG,
    .state_size = sizeof(struct mozlog_state),
    .parse = mozlog_parse,
    .release = mozlog_release,
    .first_bytes = " \t{",
};
