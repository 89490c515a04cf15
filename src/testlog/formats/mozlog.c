/* mozlog.c — mozlog raw JSON lines (test-logs.md, format 1).
 *
 * A dedicated scanner instead of a JSON DOM: it reads the top-level object once, remembers where
 * the few interesting values are, and decodes only those strings (most need no decoding and are
 * used in place). That keeps a dense log cheap and lets a huge line be read as a bounded prefix:
 * members complete before the cut are usable (a suite_start whose "tests" list is cut still names
 * its suite), anything cut is ignored.
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
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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


#define MAX_KEY 24 /* longer keys are none of ours */

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

enum scan { SCAN_OK, SCAN_SHORT, SCAN_BAD };

static inline size_t ws(const char *s, size_t n, size_t i)
{
    /* What JSON writers put between tokens: nothing, or one space (Python's ", " and ": "). */
    if (i < n && (unsigned char)s[i] > ' ')
        return i;
    if (i + 1 < n && s[i] == ' ' && (unsigned char)s[i + 1] > ' ')
        return i + 1;
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c > ' ') /* the usual case, first */
            return i;
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return i;
    }
    return i;
}

/* Index of the first '"' or '\\' in s[j..n), n if none. Sixteen (or eight) bytes at a time: most
 * strings are short, where a memchr call costs more than the search. */
static size_t find_quote_or_backslash(const char *s, size_t n, size_t j)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    for (; j + 16 <= n; j += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + j));
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)));
        if (m)
            return j + (size_t)__builtin_ctz(m);
    }
#endif
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    for (; j + 8 <= n; j += 8) {
        uint64_t x;
        memcpy(&x, s + j, 8);
        uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        /* exact for the lowest matching byte, which is all that is used */
        uint64_t hit = ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs);
        if (hit) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return j + (size_t)(__builtin_ctzll(hit) >> 3);
#else
            break;
#endif
        }
    }
    for (; j < n; j++)
        if (s[j] == '"' || s[j] == '\\')
            return j;
    return n;
}

/* s[*i] == '"'; on success *i is past the closing quote. */
static inline enum scan scan_string(const char *s, size_t n, size_t *i, struct jv *v)
{
    size_t j = *i + 1;
    bool esc = false;
    for (;;) {
        j = j < n ? find_quote_or_backslash(s, n, j) : n;
        if (j >= n)
            return SCAN_SHORT;
        if (s[j] == '"')
            break;
        esc = true;
        j += 2;
    }
    v->p = s + *i + 1;
    v->n = (uint32_t)(j - *i - 1);
    v->t = 's';
    v->esc = esc;
    *i = j + 1;
    return SCAN_OK;
}

static enum scan scan_value(const char *s, size_t n, size_t *i, struct jv *v)
{
    size_t j = *i;
    if (j >= n)
        return SCAN_SHORT;
    char c = s[j];
    if (c == '"')
        return scan_string(s, n, i, v);
    if (c == '{' || c == '[') {
        int depth = 0;
        while (j < n) {
            char d = s[j];
            if (d == '"') {
                struct jv dummy;
                size_t k = j;
                enum scan r = scan_string(s, n, &k, &dummy);
                if (r != SCAN_OK)
                    return r;
                j = k;
                continue;
            }
            if (d == '{' || d == '[')
                depth++;
            else if (d == '}' || d == ']') {
                if (--depth == 0) {
                    v->p = s + *i;
                    v->n = (uint32_t)(j + 1 - *i);
                    v->t = c == '{' ? 'o' : 'a';
                    *i = j + 1;
                    return SCAN_OK;
                }
            }
            j++;
        }
        return SCAN_SHORT;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        for (; j < n; j++) {
            unsigned char d = (unsigned char)s[j];
            if ((unsigned)(d - '0') < 10)
                continue;
            if (d != '-' && d != '+' && d != '.' && d != 'e' && d != 'E')
                break;
        }
        if (j >= n)
            return SCAN_SHORT;
        v->t = 'n';
    } else if (c == 't' || c == 'f' || c == 'n') {
        while (j < n && s[j] >= 'a' && s[j] <= 'z')
            j++;
        size_t len = j - *i;
        if (!((len == 4 && (!memcmp(s + *i, "true", 4) || !memcmp(s + *i, "null", 4))) ||
              (len == 5 && !memcmp(s + *i, "false", 5))))
            return j >= n ? SCAN_SHORT : SCAN_BAD;
        v->t = 'l';
    } else
        return SCAN_BAD;
    v->p = s + *i;
    v->n = (uint32_t)(j - *i);
    v->esc = false;
    *i = j;
    return SCAN_OK;
}

/* Scan an object, storing the values of the members named in names[0..nf) into out[] (names NULL:
 * the top-level fields F_*, by field_of()). */
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

static enum scan scan_object(const char *s, size_t n, const char *const *names, size_t nf,
                             struct jv *out)
{
    size_t i = ws(s, n, 0);
    if (i >= n)
        return SCAN_SHORT;
    if (s[i] != '{')
        return SCAN_BAD;
    i = ws(s, n, i + 1);
    if (i < n && s[i] == '}')
        return ws(s, n, i + 1) == n ? SCAN_OK : SCAN_BAD;
    for (;;) {
        if (i >= n)
            return SCAN_SHORT;
        if (s[i] != '"')
            return SCAN_BAD;
        struct jv key, val;
        enum scan r = scan_string(s, n, &i, &key);
        if (r != SCAN_OK)
            return r;
        i = ws(s, n, i);
        if (i >= n)
            return SCAN_SHORT;
        if (s[i] != ':')
            return SCAN_BAD;
        i = ws(s, n, i + 1);
        r = scan_value(s, n, &i, &val);
        if (r != SCAN_OK)
            return r;
        if (!names) {
            int f = field_of(key.p, key.n);
            if (f >= 0)
                out[f] = val;
        } else if (key.n && key.n <= MAX_KEY)
            for (size_t f = 0; f < nf; f++)
                if (names[f][0] == key.p[0] && strnlen(names[f], key.n + 1) == key.n &&
                    memcmp(names[f], key.p, key.n) == 0) {
                    out[f] = val;
                    break;
                }
        i = ws(s, n, i);
        if (i >= n)
            return SCAN_SHORT;
        if (s[i] == ',') {
            i = ws(s, n, i + 1);
            continue;
        }
        if (s[i] == '}')
            return ws(s, n, i + 1) == n ? SCAN_OK : SCAN_BAD;
        return SCAN_BAD;
    }
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

static int hex4(const char *p)
{
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p[k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Decode raw string bytes into o (at least n bytes: decoding never grows a JSON string). */
static size_t unescape(const char *s, size_t n, char *o)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\' || i + 1 >= n) {
            o[k++] = s[i++];
            continue;
        }
        char c = s[i + 1];
        i += 2;
        switch (c) {
        case 'n': o[k++] = '\n'; break;
        case 't': o[k++] = '\t'; break;
        case 'r': o[k++] = '\r'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'u': {
            int cp = i + 4 <= n ? hex4(s + i) : -1;
            if (cp < 0) {
                o[k++] = '?';
                break;
            }
            i += 4;
            unsigned u = (unsigned)cp;
            if (u >= 0xd800 && u < 0xdc00 && i + 6 <= n && s[i] == '\\' && s[i + 1] == 'u') {
                int lo = hex4(s + i + 2);
                if (lo >= 0xdc00 && lo < 0xe000) {
                    u = 0x10000 + ((u - 0xd800) << 10) + ((unsigned)lo - 0xdc00);
                    i += 6;
                }
            }
            if (u >= 0xd800 && u < 0xe000)
                u = 0xfffd; /* lone surrogate */
            k += put_utf8(o + k, u);
            break;
        }
        default: o[k++] = c; break; /* \" \\ \/ and anything unknown */
        }
    }
    return k;
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
    size_t k = unescape(v->p, v->n, o);
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
    size_t i = 1;
    for (;;) {
        i = ws(v->p, v->n, i);
        if (i >= v->n || v->p[i] != '"')
            break;
        struct jv e;
        if (scan_string(v->p, v->n, &i, &e) != SCAN_OK)
            break;
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
        size_t k = unescape(e.p, e.n, o);
        st->used -= e.n - k;
        total += k;
        i = ws(v->p, v->n, i);
        if (i >= v->n || v->p[i] != ',')
            break;
        i++;
    }
    return tl_str_make(start, total);
}

static bool array_has(const struct jv *v, struct tl_str s)
{
    if (v->t != 'a')
        return false;
    size_t i = 1;
    for (;;) {
        i = ws(v->p, v->n, i);
        if (i >= v->n || v->p[i] != '"')
            return false;
        struct jv e;
        if (scan_string(v->p, v->n, &i, &e) != SCAN_OK)
            return false;
        if (e.n == s.n && memcmp(e.p, s.p, s.n) == 0)
            return true;
        i = ws(v->p, v->n, i);
        if (i >= v->n || v->p[i] != ',')
            return false;
        i++;
    }
}

static bool jnum(const struct jv *v, double *ret)
{
    if (v->t != 'n' || v->n == 0 || v->n > 40)
        return false;
    if (v->n < 16) { /* plain non-negative integers (epoch ms, pids, counts) without strtod */
        uint64_t x = 0;
        size_t i = 0;
        while (i < v->n && v->p[i] >= '0' && v->p[i] <= '9')
            x = x * 10 + (uint64_t)(v->p[i++] - '0');
        if (i == v->n) {
            *ret = (double)x;
            return true;
        }
    }
    char buf[48];
    memcpy(buf, v->p, v->n);
    buf[v->n] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (end == buf)
        return false;
    *ret = d;
    return true;
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
    enum scan r = scan_object(line, n, NULL, F_N, f);
    if (r == SCAN_BAD || (r == SCAN_SHORT && !prefix))
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
            static const char *const tf_name[1] = {"timeoutfactor"};
            struct jv tf[1] = {{0}};
            int64_t v;
            if (scan_object(f[F_EXTRA].p, f[F_EXTRA].n, tf_name, 1, tf) == SCAN_OK &&
                jint(&tf[0], &v) && v > 0)
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
