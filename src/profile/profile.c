/* profile.c — see profile.h.
 *
 * Two passes over the stream. Pass 1 reads it line by line through one buffer, validates every
 * line completely (a payload copied into the profile unchecked could make the whole profile
 * unreadable), and keeps a 32-byte record per marker. Pass 2 writes the profile; the markers'
 * payloads are copied from the input in file order through a read window, so the input is read
 * sequentially twice and nothing grows with payload sizes. Pass 1 can also follow a stream as it
 * grows (profile_conv_*), so that a stop request only waits for pass 2.
 */
#include "profile/profile.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <zlib.h>

#include "base/jsonw.h"
#include "base/outfile.h"
#include "base/util.h"
#include "observe/sampler.h"
#include "base/markers.h"
#include "profile/markertypes.h"
#include "profile/profile_stacks.h"
#include "profile/stream.h"

#define CHUNK (1u << 20)
#define FOLLOW_CHUNK (64u * 1024) /* the read buffer of a converter that follows a run */
#define MAX_DEPTH 64

/* ---- a validating JSON scanner over byte ranges ------------------------------------------- */

static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

static bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* p at the opening quote. Returns the position after the closing quote, or NULL. */
static const char *scan_string(const char *p, const char *e, bool *ret_escaped)
{
    bool esc = false;
    p++;
    while (p < e) {
        p += json_plain_prefix(p, (size_t)(e - p));
        if (p >= e)
            break;
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            if (ret_escaped)
                *ret_escaped = esc;
            return p + 1;
        }
        if (c == '\\') {
            esc = true;
            if (e - p < 2)
                return NULL;
            char x = p[1];
            if (x == 'u') {
                if (e - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5]))
                    return NULL;
                p += 6;
            } else if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' || x == 'r' ||
                       x == 't')
                p += 2;
            else
                return NULL;
            continue;
        }
        if (c < 0x20)
            return NULL;
        if (c < 0x80) {
            p++;
            continue;
        }
        size_t k = utf8_char_len(p, (size_t)(e - p));
        if (!k)
            return NULL;
        p += k;
    }
    return NULL;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static const char *scan_number(const char *p, const char *e)
{
    if (p < e && *p == '-')
        p++;
    if (p >= e)
        return NULL;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (p < e && is_digit(*p))
            p++;
    else
        return NULL;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || !is_digit(*p))
            return NULL;
        while (p < e && is_digit(*p))
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || !is_digit(*p))
            return NULL;
        while (p < e && is_digit(*p))
            p++;
    }
    return p;
}

static const char *scan_value(const char *p, const char *e, int depth);

static const char *scan_literal(const char *p, const char *e, const char *lit, size_t n)
{
    if ((size_t)(e - p) < n || memcmp(p, lit, n) != 0)
        return NULL;
    return p + n;
}

static const char *scan_container(const char *p, const char *e, int depth)
{
    bool obj = *p == '{';
    char close = obj ? '}' : ']';
    if (depth >= MAX_DEPTH)
        return NULL;
    p = skip_ws(p + 1, e);
    if (p < e && *p == close)
        return p + 1;
    for (;;) {
        if (obj) {
            if (p >= e || *p != '"' || !(p = scan_string(p, e, NULL)))
                return NULL;
            p = skip_ws(p, e);
            if (p >= e || *p != ':')
                return NULL;
            p = skip_ws(p + 1, e);
        }
        if (!(p = scan_value(p, e, depth + 1)))
            return NULL;
        p = skip_ws(p, e);
        if (p >= e)
            return NULL;
        if (*p == close)
            return p + 1;
        if (*p != ',')
            return NULL;
        p = skip_ws(p + 1, e);
    }
}

/* p at the first byte of a value (no leading blanks). Returns the position after it, or NULL. */
static const char *scan_value(const char *p, const char *e, int depth)
{
    if (p >= e)
        return NULL;
    switch (*p) {
    case '"':
        return scan_string(p, e, NULL);
    case '{':
    case '[':
        return scan_container(p, e, depth);
    case 't':
        return scan_literal(p, e, "true", 4);
    case 'f':
        return scan_literal(p, e, "false", 5);
    case 'n':
        return scan_literal(p, e, "null", 4);
    default:
        return scan_number(p, e);
    }
}

/* Iteration over the members of one object; every value is validated as it is passed. */
struct member {
    const char *key; /* raw key text between the quotes */
    size_t key_len;
    bool key_escaped;
    const char *val; /* the value's JSON text */
    size_t val_len;
};

struct obj_iter {
    const char *p, *e;
    bool first, done;
};

static int obj_begin(struct obj_iter *it, const char *p, const char *e)
{
    p = skip_ws(p, e);
    if (p >= e || *p != '{')
        return -1;
    it->p = skip_ws(p + 1, e);
    it->e = e;
    it->first = true;
    it->done = false;
    return 0;
}

/* 1: a member; 0: the object ended (it->p is after its '}'); -1: invalid. */
static int obj_next(struct obj_iter *it, struct member *m)
{
    const char *p = it->p, *e = it->e;
    if (it->done)
        return 0;
    if (p >= e)
        return -1;
    if (*p == '}' && it->first) {
        it->p = p + 1;
        it->done = true;
        return 0;
    }
    if (!it->first) {
        if (*p == '}') {
            it->p = p + 1;
            it->done = true;
            return 0;
        }
        if (*p != ',')
            return -1;
        p = skip_ws(p + 1, e);
    }
    it->first = false;
    if (p >= e || *p != '"')
        return -1;
    const char *k = p;
    if (!(p = scan_string(p, e, &m->key_escaped)))
        return -1;
    m->key = k + 1;
    m->key_len = (size_t)(p - k - 2);
    p = skip_ws(p, e);
    if (p >= e || *p != ':')
        return -1;
    p = skip_ws(p + 1, e);
    const char *v = p;
    if (!(p = scan_value(p, e, 1)))
        return -1;
    m->val = v;
    m->val_len = (size_t)(p - v);
    it->p = skip_ws(p, e);
    return 1;
}

static bool key_is(const struct member *m, const char *lit)
{
    size_t n = strlen(lit);
    return !m->key_escaped && m->key_len == n && memcmp(m->key, lit, n) == 0;
}

static bool val_is_str(const struct member *m, const char *lit)
{
    size_t n = strlen(lit);
    return m->val_len == n + 2 && m->val[0] == '"' && memcmp(m->val + 1, lit, n) == 0;
}

/* Exact powers of ten: a decimal whose digits fit 2^53 divided by one of these is correctly
 * rounded (one IEEE division of two exact values), the same double strtod gives. */
static const double pow10_exact[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The stream's times ("13.666", "-2.5", "1000") without strtod; false sends the caller to it. */
static bool val_number_fast(const char *v, size_t n, double *ret)
{
    const char *p = v, *e = v + n;
    bool neg = p < e && *p == '-';
    p += neg;
    uint64_t m = 0;
    int digits = 0, frac = -1;
    for (; p < e; p++) {
        if (is_digit(*p)) {
            if (++digits > 15)
                return false;
            m = m * 10 + (uint64_t)(*p - '0');
            if (frac >= 0)
                frac++;
        } else if (*p == '.' && frac < 0)
            frac = 0;
        else
            return false;
    }
    if (!digits || frac == 0)
        return false;
    double d = (double)m;
    if (frac > 0)
        d /= pow10_exact[frac];
    *ret = neg ? -d : d;
    return true;
}

static bool val_number(const char *v, size_t n, double *ret)
{
    char tmp[64];
    if (n == 0 || n >= sizeof tmp || !(v[0] == '-' || is_digit(v[0])))
        return false;
    if (val_number_fast(v, n, ret))
        return true;
    memcpy(tmp, v, n);
    tmp[n] = '\0';
    char *end;
    double d = strtod(tmp, &end);
    if (end != tmp + n || !isfinite(d))
        return false;
    *ret = d;
    return true;
}

static bool val_u64(const char *v, size_t n, uint64_t *ret)
{
    char tmp[32];
    if (n == 0 || n >= sizeof tmp || !is_digit(v[0]))
        return false;
    memcpy(tmp, v, n);
    tmp[n] = '\0';
    char *end;
    errno = 0;
    unsigned long long x = strtoull(tmp, &end, 10);
    if (end != tmp + n || errno)
        return false;
    *ret = x;
    return true;
}

/* Count the elements of a JSON array (already validated). */
static size_t array_count(const char *v, size_t n)
{
    const char *p = v, *e = v + n;
    if (p >= e || *p != '[')
        return 0;
    p = skip_ws(p + 1, e);
    if (p < e && *p == ']')
        return 0;
    size_t count = 0;
    while (p < e) {
        const char *q = scan_value(p, e, 1);
        if (!q)
            return count;
        count++;
        p = skip_ws(q, e);
        if (p >= e || *p != ',')
            break;
        p = skip_ws(p + 1, e);
    }
    return count;
}

static unsigned hex4(const char *s)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 4 | (unsigned)(s[i] <= '9' ? s[i] - '0' : (s[i] | 0x20) - 'a' + 10);
    return v;
}

/* Whether the JSON text s[0..n) (validated) has a \u escape of a lone surrogate in a string.
 * Strict JSON has none (RFC 8259 section 8.2: a surrogate alone is no character, and has no UTF-8
 * form), resmon-run's writer never makes one, but a stream given to --recover may hold them. With
 * fix (s itself, or a copy of it), each becomes \ufffd there: the same six bytes. */
static bool lone_surrogates(const char *s, size_t n, char *fix)
{
    bool found = false, in_string = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            in_string = !in_string;
        if (!in_string || s[i] != '\\')
            continue;
        if (s[i + 1] != 'u') {
            i++; /* an escaped quote or backslash is not one of ours */
            continue;
        }
        unsigned cp = hex4(s + i + 2);
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 12 <= n && s[i + 6] == '\\' && s[i + 7] == 'u' &&
            hex4(s + i + 8) >= 0xDC00 && hex4(s + i + 8) <= 0xDFFF) {
            i += 11; /* a pair: one character */
            continue;
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            found = true;
            if (fix)
                memcpy(fix + i + 2, "fffd", 4);
        }
        i += 5;
    }
    return found;
}

/* Decode the raw text of a JSON string (validated) and append it re-escaped canonically, so two
 * spellings of one name intern to one stringArray entry. */
static void canonical_string(struct jsonw *w, const char *s, size_t n)
{
    char *tmp = malloc(n ? n : 1);
    if (!tmp) {
        w->failed = true;
        return;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\') {
            tmp[o++] = s[i++];
            continue;
        }
        char x = s[i + 1];
        if (x != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            tmp[o++] = to[strchr(from, x) - from];
            i += 2;
            continue;
        }
        unsigned cp = (unsigned)strtoul((char[5]){s[i + 2], s[i + 3], s[i + 4], s[i + 5], 0}, NULL, 16);
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= n && s[i] == '\\' && s[i + 1] == 'u') {
            unsigned lo = (unsigned)strtoul((char[5]){s[i + 2], s[i + 3], s[i + 4], s[i + 5], 0}, NULL, 16);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF)
            cp = 0xFFFD;
        /* \u escapes are 6 bytes and decode to at most 4 (a pair: 12 → 4), so tmp never overflows. */
        if (cp < 0x80)
            tmp[o++] = (char)cp;
        else if (cp < 0x800) {
            tmp[o++] = (char)(0xC0 | cp >> 6);
            tmp[o++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            tmp[o++] = (char)(0xE0 | cp >> 12);
            tmp[o++] = (char)(0x80 | (cp >> 6 & 0x3F));
            tmp[o++] = (char)(0x80 | (cp & 0x3F));
        } else {
            tmp[o++] = (char)(0xF0 | cp >> 18);
            tmp[o++] = (char)(0x80 | (cp >> 12 & 0x3F));
            tmp[o++] = (char)(0x80 | (cp >> 6 & 0x3F));
            tmp[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    jsonw_escape(w, tmp, o);
    free(tmp);
}

/* ---- string interning --------------------------------------------------------------------- */

struct intern {
    char *arena;
    size_t alen, acap;
    struct ient {
        size_t off;
        uint32_t len;
    } *ent;
    uint32_t n, ecap;
    uint32_t *tab; /* id + 1, 0 = empty */
    uint32_t tcap;
};

/* Eight bytes per step: names and keys are short, and this runs for every stream line. */
static uint64_t hash_bytes(const char *s, size_t n)
{
    const uint64_t k = UINT64_C(0x9E3779B97F4A7C15);
    uint64_t h = k ^ n, w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * k;
        h ^= h >> 31;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * k;
    h ^= h >> 29;
    h *= UINT64_C(0xBF58476D1CE4E5B9);
    return h ^ (h >> 32);
}

static void intern_release(struct intern *t)
{
    free(t->arena);
    free(t->ent);
    free(t->tab);
    memset(t, 0, sizeof *t);
}

static int intern_grow(struct intern *t)
{
    uint32_t ncap = t->tcap ? t->tcap * 2 : 64;
    if (ncap == 0 || ncap > (UINT32_C(1) << 30))
        return -ENOMEM;
    uint32_t *tab = calloc(ncap, sizeof *tab);
    if (!tab)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t h = (uint32_t)hash_bytes(t->arena + t->ent[i].off, t->ent[i].len) & (ncap - 1);
        while (tab[h])
            h = (h + 1) & (ncap - 1);
        tab[h] = i + 1;
    }
    free(t->tab);
    t->tab = tab;
    t->tcap = ncap;
    return 0;
}

/* The id of s, or -1 when it is not interned. */
static int64_t intern_find(const struct intern *t, const char *s, size_t n)
{
    if (!t->tcap)
        return -1;
    uint32_t h = (uint32_t)hash_bytes(s, n) & (t->tcap - 1);
    while (t->tab[h]) {
        const struct ient *x = &t->ent[t->tab[h] - 1];
        if (x->len == n && memcmp(t->arena + x->off, s, n) == 0)
            return t->tab[h] - 1;
        h = (h + 1) & (t->tcap - 1);
    }
    return -1;
}

/* Returns the id of s (adding it), or -ENOMEM. */
static int64_t intern_get(struct intern *t, const char *s, size_t n)
{
    if (n > UINT32_MAX)
        return -ENOMEM;
    if ((uint64_t)(t->n + 1) * 2 > t->tcap && intern_grow(t) < 0)
        return -ENOMEM;
    uint32_t h = (uint32_t)hash_bytes(s, n) & (t->tcap - 1);
    while (t->tab[h]) {
        struct ient *x = &t->ent[t->tab[h] - 1];
        if (x->len == n && memcmp(t->arena + x->off, s, n) == 0)
            return t->tab[h] - 1;
        h = (h + 1) & (t->tcap - 1);
    }
    if (t->n >= (UINT32_C(1) << 30))
        return -ENOMEM;
    if (t->alen + n > t->acap) {
        size_t cap = t->acap ? t->acap : 4096;
        while (cap < t->alen + n)
            cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a)
            return -ENOMEM;
        t->arena = a;
        t->acap = cap;
    }
    if (t->n == t->ecap) {
        uint32_t cap = t->ecap ? t->ecap * 2 : 64;
        struct ient *x = realloc(t->ent, (size_t)cap * sizeof *x);
        if (!x)
            return -ENOMEM;
        t->ent = x;
        t->ecap = cap;
    }
    memcpy(t->arena + t->alen, s, n);
    t->ent[t->n] = (struct ient){t->alen, (uint32_t)n};
    t->alen += n;
    t->tab[h] = t->n + 1;
    return t->n++;
}

/* Forget every entry from id n on (a conversion's write undoes what it added). */
static void intern_truncate(struct intern *t, uint32_t n)
{
    if (n >= t->n)
        return;
    t->alen = t->ent[n].off;
    t->n = n;
    memset(t->tab, 0, t->tcap * sizeof *t->tab);
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t h = (uint32_t)hash_bytes(t->arena + t->ent[i].off, t->ent[i].len) & (t->tcap - 1);
        while (t->tab[h])
            h = (h + 1) & (t->tcap - 1);
        t->tab[h] = i + 1;
    }
}

/* ---- the line reader ---------------------------------------------------------------------- */

struct reader {
    int fd;
    char *buf;
    size_t cap, start, len; /* buf[0..len) holds input bytes from file offset base */
    uint64_t base;
    bool eof, skipping;
    bool follow; /* the file still grows: end of data is not the end of the last line */
    bool fed;    /* follow's bytes are handed over by the writer (reader_append), not read */
    bool trusted; /* fed, and every line handed over is one the writer made whole: its marker
                     lines are taken in the writer's layout (parse_marker_fed) */
    uint64_t skipped;
};

/* Append bytes the writer has just written at the end of the file (fed mode). */
static int reader_append(struct reader *r, const char *buf, size_t len)
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

/* 1: a line (without its newline) at *ret_line, file offset *ret_off; 0: end of input; -errno. */
static int reader_next(struct reader *r, const char **ret_line, size_t *ret_len, uint64_t *ret_off)
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
            if (r->fed && n > PROFILE_MAX_LINE) {
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
            if (r->len - r->start > PROFILE_MAX_LINE || r->skipping) {
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
            if (r->skipping || r->cap > PROFILE_MAX_LINE) {
                if (!r->skipping)
                    r->skipped++;
                r->skipping = true;
                r->base += r->len;
                r->len = 0;
            } else {
                size_t ncap = MIN(r->cap * 2, (size_t)PROFILE_MAX_LINE + 1);
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

/* ---- the conversion ----------------------------------------------------------------------- */

struct rec {
    uint64_t off;      /* payload offset in the input, or in conv.side when REC_SIDE */
    double start, end; /* ms; end NAN for an instant */
    uint32_t len_cat;  /* payload length (0: null) | category << 24 */
    uint32_t name;     /* stringArray index | REC_SIDE */
};
#define REC_SIDE (UINT32_C(1) << 31)
#define REC_LEN_MASK UINT32_C(0xFFFFFF)

/* What is open right now: only the (kind,key)s opened and not yet closed are kept, so a run of a
 * million tests, each opened and closed, holds a handful of entries, not a million. */
#define OPEN_NONE UINT32_MAX
struct open_ent {
    uint64_t off;  /* the open line in the input */
    uint32_t len;  /* its length; OPEN_NONE: a free entry */
    uint32_t prev; /* the entry this one shadows (same kind and key, opened earlier) */
    uint32_t next; /* the next key in the same bucket; in the free list, the next free entry */
    uint32_t key_len;
    uint64_t hash;
    char *key;     /* "kind\0key", the raw JSON texts */
};

struct open_set {
    struct open_ent *ent;
    uint32_t n, cap, free_head, live;
    uint32_t *bucket; /* the top entry of each key, chained through next */
    uint32_t nbucket; /* a power of two */
};

/* A counter declared by a {"type":"counter"} line (markers.h) and the samples read for it. */
#define MAX_COUNTERS 32
enum counter_role { ROLE_NONE, ROLE_TREE_CPU, ROLE_TREE_MEM };
struct counter {
    char *name, *category, *description, *display; /* JSON texts, validated */
    char *key;                                     /* raw text of the data key it reads */
    size_t key_len;
    uint32_t marker;                               /* name id of its markers */
    uint8_t next;                                  /* the next counter of the same markers + 1 */
    enum marker_counter_kind kind;
    enum counter_role role;
    double level;                                  /* MCOUNT_LEVEL: the last level */
    double first_start;                            /* the start of the first sample's interval */
    double *time, *count;
    size_t n, cap;
};

struct conv {
    int in_fd;
    struct reader rd;
    bool started;          /* the meta line has been taken */
    struct rec *recs;
    size_t nrec, rcap;
    struct intern names;
    struct open_set opens;
    struct jsonw side;     /* generated payloads */
    struct jsonw tmp;
    uint64_t meta_off, thread_off;
    size_t meta_len, thread_len;
    bool have_thread, have_clock;
    char run_name[64]; /* the run's thread's name: no dumped process's track may read the same */
    uint64_t t0_ns;
    unsigned ncat;
    int logical_cpus;
    double last_ms;
    uint64_t skipped, closed;
    uint64_t max_markers;                /* 0: no limit (profile.h, MARKER LIMIT) */
    struct counter counters[MAX_COUNTERS];
    unsigned ncounters, counters_written;
    uint8_t *counter_of; /* per name id: counter index + 1, 0 none */
    size_t counter_of_len;
    uint64_t dropped_routine, dropped_other; /* markers left out past the limit */
    /* Test markers a message line may still fill (LATE MESSAGES, profile.h): a hash of each one's
     * name and its record, in stream order; a filled one's record becomes REC_NONE. */
    struct msg_target {
        uint64_t hash;
        uint32_t rec;
    } *targets;
    size_t ntargets, targets_cap, target_next; /* target_next: where the next search starts */
    uint64_t message_bytes;                    /* side bytes the filled payloads take */
    struct pstacks *stacks;                  /* stack lines of dumped processes, NULL: none */
    /* output */
    int out_fd;
    char *obuf, *wbuf;     /* output buffer; read window over the input's payloads */
    size_t olen;
    uint64_t obytes;       /* bytes of profile written (compressed: what reached the file) */
    int oerr;
    z_stream *gz;          /* gzip output, or NULL */
    char *zbuf;
};

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
    uint64_t hash = hash_bytes(key, len);
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
    uint32_t *slot = open_slot(o, hash_bytes(key, len), key, len);
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

static void counter_release(struct counter *k)
{
    free(k->name);
    free(k->category);
    free(k->description);
    free(k->display);
    free(k->key);
    free(k->time);
    free(k->count);
}

static void conv_release(struct conv *c)
{
    for (unsigned i = 0; i < c->ncounters; i++)
        counter_release(&c->counters[i]);
    free(c->counter_of);
    free(c->targets);
    free(c->rd.buf);
    free(c->recs);
    intern_release(&c->names);
    open_set_release(&c->opens);
    pstacks_free(c->stacks);
    c->stacks = NULL;
    jsonw_release(&c->side);
    jsonw_release(&c->tmp);
    free(c->obuf);
    free(c->wbuf);
}

static void note_time(struct conv *c, double ms)
{
    if (isfinite(ms) && ms > c->last_ms)
        c->last_ms = ms;
}

static int add_rec(struct conv *c, int64_t name_id, double start, double end, unsigned cat, uint64_t off,
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
    note_time(c, start);
    note_time(c, end);
    return 0;
}

/* The text of a string value given as its raw JSON text (quotes included), in one spelling
 * whatever its escapes (canonical_string, in c->tmp when it has any). */
static int canonical_text(struct conv *c, const char *v, size_t n, const char **ret, size_t *ret_len)
{
    *ret = v + 1;
    *ret_len = n - 2;
    if (!memchr(*ret, '\\', *ret_len))
        return 0;
    jsonw_reset(&c->tmp);
    canonical_string(&c->tmp, *ret, *ret_len);
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
    if (canonical_text(c, v, n, &s, &len) < 0)
        return -ENOMEM;
    return only_find ? intern_find(&c->names, s, len) : intern_get(&c->names, s, len);
}

static int64_t intern_name(struct conv *c, const char *v, size_t n) { return intern_name_how(c, v, n, false); }

static unsigned category_of(const struct conv *c, const struct member *m)
{
    double d;
    if (!m || !val_number(m->val, m->val_len, &d) || d < 0 || d >= c->ncat || d != (double)(unsigned)d)
        return 0;
    return (unsigned)d;
}

/* A Phase payload with cpuTime and no cpuPercent gets cpuPercent (profile.h). Returns true when
 * the modified payload was put into c->side at *ret_off. */
static bool phase_fixup(struct conv *c, const char *data, size_t len, double start, double end,
                        uint64_t *ret_off, size_t *ret_len)
{
    struct obj_iter it;
    struct member m;
    double cpu = NAN;
    bool has_pct = false, any = false;
    if (!isfinite(end) || end <= start || obj_begin(&it, data, data + len) < 0)
        return false;
    while (obj_next(&it, &m) > 0) {
        any = true;
        if (key_is(&m, "cpuPercent"))
            has_pct = true;
        else if (key_is(&m, "cpuTime"))
            val_number(m.val, m.val_len, &cpu);
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

static bool is_object_or_null(const struct member *m)
{
    return m->val[0] == '{' || (m->val_len == 4 && memcmp(m->val, "null", 4) == 0);
}

/* Past the marker limit (profile.h): whether a marker with this payload still gets a record.
 * Counts the ones left out. */
static bool keep_past_limit(struct conv *c, const char *data, size_t len)
{
    bool routine = false, run_end = false;
    struct obj_iter it;
    struct member m;
    if (len && obj_begin(&it, data, data + len) == 0)
        while (obj_next(&it, &m) > 0) {
            if (key_is(&m, "color"))
                routine = val_is_str(&m, "green");
            else if (key_is(&m, "type"))
                run_end = val_is_str(&m, "Timeout") || val_is_str(&m, "KillStep") ||
                          val_is_str(&m, "Finalize") || val_is_str(&m, "Command");
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

/* ---- counters (markers.h, COUNTERS) ------------------------------------------------------- */

/* The first counter of markers named id (the others follow by next), or NULL. */
static struct counter *counter_for(struct conv *c, int64_t id)
{
    if (!c->ncounters || id < 0 || (size_t)id >= c->counter_of_len || !c->counter_of[id])
        return NULL;
    return &c->counters[c->counter_of[id] - 1];
}

/* {"type":"counter","name":S,"category":S,"description":S,"marker":S,"key":S,"kind":S,
 * "display":{...}}: 1 taken, 0 invalid (skipped), -errno. A second definition of a name, or one
 * past MAX_COUNTERS, is ignored. */
static int take_counter(struct conv *c, const char *line, size_t len)
{
    struct obj_iter it;
    struct member m, name = {0}, cat = {0}, desc = {0}, marker = {0}, key = {0}, kind = {0}, disp = {0};
    int r;
    if (obj_begin(&it, line, line + len) < 0)
        return 0;
    while ((r = obj_next(&it, &m)) > 0) {
        if (key_is(&m, "name"))
            name = m;
        else if (key_is(&m, "category"))
            cat = m;
        else if (key_is(&m, "description"))
            desc = m;
        else if (key_is(&m, "marker"))
            marker = m;
        else if (key_is(&m, "key"))
            key = m;
        else if (key_is(&m, "kind"))
            kind = m;
        else if (key_is(&m, "display"))
            disp = m;
    }
    if (r < 0 || skip_ws(it.p, it.e) != it.e)
        return 0;
    const struct member *strs[] = {&name, &cat, &marker, &key, &kind};
    for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
        if (!strs[i]->val || strs[i]->val[0] != '"')
            return 0;
    if ((desc.val && desc.val[0] != '"') || (disp.val && disp.val[0] != '{'))
        return 0;
    enum marker_counter_kind k;
    if (val_is_str(&kind, "amount"))
        k = MCOUNT_AMOUNT;
    else if (val_is_str(&kind, "level"))
        k = MCOUNT_LEVEL;
    else if (val_is_str(&kind, "share"))
        k = MCOUNT_SHARE;
    else
        return 0;
    for (unsigned i = 0; i < c->ncounters; i++)
        if (strlen(c->counters[i].name) == name.val_len && memcmp(c->counters[i].name, name.val, name.val_len) == 0)
            return 1;
    if (c->ncounters == MAX_COUNTERS)
        return 1;
    int64_t id = intern_name(c, marker.val, marker.val_len);
    if (id < 0)
        return (int)id;
    if ((size_t)id >= c->counter_of_len) {
        size_t n = (size_t)id + 64;
        uint8_t *x = realloc(c->counter_of, n);
        if (!x)
            return -ENOMEM;
        memset(x + c->counter_of_len, 0, n - c->counter_of_len);
        c->counter_of = x;
        c->counter_of_len = n;
    }
    struct counter *ct = &c->counters[c->ncounters];
    *ct = (struct counter){.kind = k, .marker = (uint32_t)id};
    ct->name = strndup(name.val, name.val_len);
    ct->category = strndup(cat.val, cat.val_len);
    ct->description = desc.val ? strndup(desc.val, desc.val_len) : strndup("\"\"", 2);
    ct->display = disp.val ? strndup(disp.val, disp.val_len) : NULL;
    ct->key = strndup(key.val + 1, key.val_len - 2);
    ct->key_len = key.val_len - 2;
    if (!ct->name || !ct->category || !ct->description || (disp.val && !ct->display) || !ct->key) {
        counter_release(ct);
        return -ENOMEM;
    }
    /* The tree's CPU and memory also cost what the converter closes itself (profile.h). */
    const struct marker_counter *cpu = &sampler_tree_cpu_counter, *mem = &sampler_tree_mem_counter;
    if (val_is_str(&marker, cpu->marker) && val_is_str(&key, cpu->type->fields[cpu->field].key) && k == cpu->kind)
        ct->role = ROLE_TREE_CPU;
    else if (val_is_str(&marker, mem->marker) && val_is_str(&key, mem->type->fields[mem->field].key) &&
             k == mem->kind)
        ct->role = ROLE_TREE_MEM;
    /* Several counters may read one marker name (each its own key): chained in declaration order. */
    c->ncounters++;
    if (!c->counter_of[id])
        c->counter_of[id] = (uint8_t)c->ncounters;
    else {
        struct counter *last = &c->counters[c->counter_of[id] - 1];
        while (last->next)
            last = &c->counters[last->next - 1];
        last->next = (uint8_t)c->ncounters;
    }
    return 1;
}

static int counter_push(struct counter *k, double t, double count)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 256;
        double *a = realloc(k->time, cap * sizeof *a);
        if (!a)
            return -ENOMEM;
        k->time = a;
        double *b = realloc(k->count, cap * sizeof *b);
        if (!b)
            return -ENOMEM;
        k->count = b;
        k->cap = cap;
    }
    k->time[k->n] = t;
    k->count[k->n] = count;
    k->n++;
    return 0;
}

/* A marker of counter k with payload data[0..len) from start to end (end NAN: an instant): its
 * sample, at the end of the interval it describes. */
static int counter_take(struct counter *k, const char *data, size_t len, double start, double end)
{
    struct obj_iter it;
    struct member m;
    double v = NAN;
    if (!len || obj_begin(&it, data, data + len) < 0)
        return 0;
    while (obj_next(&it, &m) > 0)
        if (!m.key_escaped && m.key_len == k->key_len && memcmp(m.key, k->key, m.key_len) == 0) {
            if (!val_number(m.val, m.val_len, &v))
                return 0;
            break;
        }
    if (!isfinite(v))
        return 0;
    double t = isnan(end) ? start : end;
    if (!k->n) {
        /* The front-end takes a counter's first sample as its origin and draws nothing of it (a
         * rate needs the time before it; a level is the sum of the changes): every counter starts
         * with a zero at the start of the first interval it measured, so that its first sample,
         * e.g. the CPU of the run's first second, is drawn and counted. */
        k->first_start = start;
        int r = counter_push(k, start, 0);
        if (r < 0)
            return r;
    }
    switch (k->kind) {
    case MCOUNT_AMOUNT:
        return counter_push(k, t, v);
    case MCOUNT_SHARE:
        return counter_push(k, t, isnan(end) ? 0 : v * (end - start));
    case MCOUNT_LEVEL: {
        double d = v - k->level;
        k->level = v;
        return counter_push(k, t, d);
    }
    }
    return 0;
}

static int cmp_sample(const void *a, const void *b)
{
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x < y ? -1 : x > y;
}

/* Samples in time order (they are written in order; a stream edited by hand may not be). */
static int counter_sort(struct counter *k)
{
    bool sorted = true;
    for (size_t i = 1; i < k->n && sorted; i++)
        sorted = k->time[i - 1] <= k->time[i];
    if (sorted)
        return 0;
    double *pairs = malloc(k->n * 2 * sizeof *pairs);
    if (!pairs)
        return -ENOMEM;
    /* a level's changes are re-derived from the levels after sorting */
    double level = 0;
    for (size_t i = 0; i < k->n; i++) {
        level += k->count[i];
        pairs[2 * i] = k->time[i];
        pairs[2 * i + 1] = k->kind == MCOUNT_LEVEL ? level : k->count[i];
    }
    qsort(pairs, k->n, 2 * sizeof *pairs, cmp_sample);
    double prev = 0;
    for (size_t i = 0; i < k->n; i++) {
        k->time[i] = pairs[2 * i];
        double v = pairs[2 * i + 1];
        k->count[i] = k->kind == MCOUNT_LEVEL ? v - prev : v;
        prev = v;
    }
    free(pairs);
    return 0;
}

static const struct counter *counter_with_role(const struct conv *c, enum counter_role role)
{
    for (unsigned i = 0; i < c->ncounters; i++)
        if (c->counters[i].role == role && c->counters[i].n)
            return &c->counters[i];
    return NULL;
}

/* What an amount counter counted between a and b (ms): its samples' amounts, each spread evenly
 * over the interval before it (the first over the one before its own). */
static double amount_between(const struct counter *k, double a, double b)
{
    double sum = 0;
    for (size_t i = 0; i < k->n; i++) {
        double t1 = k->time[i], t0 = i ? k->time[i - 1] : k->first_start;
        if (t1 <= a || t0 >= b)
            continue;
        if (t1 <= t0) {
            sum += k->count[i];
            continue;
        }
        double lo = MAX(a, t0), hi = MIN(b, t1);
        sum += k->count[i] * (hi - lo) / (t1 - t0);
    }
    return sum;
}

/* The highest level a level counter had at a sample within [a, b]; false when none was taken. */
static bool peak_between(const struct counter *k, double a, double b, double *ret)
{
    double level = 0, peak = -1;
    for (size_t i = 0; i < k->n; i++) {
        level += k->count[i];
        if (i && k->time[i] >= a && k->time[i] <= b && level > peak)
            peak = level;
    }
    if (peak < 0)
        return false;
    *ret = peak;
    return true;
}

/* ---- late messages (profile.h, LATE MESSAGES) ---------------------------------------------- */

#define REC_NONE UINT32_MAX
#define MSG_TARGETS_MAX 65536u               /* test markers a message may still fill */
#define MSG_PAYLOAD_MAX (64u * 1024)         /* the largest payload that may be filled */
#define MSG_TEXT_MAX (8u * 1024)             /* the longest message text taken (as JSON text) */
#define MSG_SIDE_MAX (UINT64_C(64) << 20)    /* what the filled payloads may take in all */

/* The hash of a name given as the raw JSON text of a string (quotes included), whatever its
 * spelling: escaped names are hashed in their canonical form. */
static int name_hash(struct conv *c, const char *v, size_t n, uint64_t *ret)
{
    const char *s;
    size_t len;
    if (canonical_text(c, v, n, &s, &len) < 0)
        return -ENOMEM;
    *ret = hash_bytes(s, len);
    return 0;
}

/* A test marker that went otherwise than expected and has no message yet may be given one by a
 * later message line: it becomes a target, while there is room. A green one (as expected) never
 * is, and is passed by on its colour's bytes, without a second look at its members. */
static int note_target(struct conv *c, const char *data, size_t len)
{
    if (c->ntargets == MSG_TARGETS_MAX || len > MSG_PAYLOAD_MAX || memmem(data, len, "\"color\":\"green\"", 15))
        return 0;
    struct obj_iter it;
    struct member m, test = {0};
    if (obj_begin(&it, data, data + len) < 0)
        return 0;
    while (obj_next(&it, &m) > 0) {
        if ((key_is(&m, "message") && !(m.val_len > 5 && !memcmp(m.val + m.val_len - 4, "...\"", 4))) ||
            (key_is(&m, "color") && val_is_str(&m, "green")))
            return 0; /* a message, but for one a line cut (text_cut_of) */
        if (key_is(&m, "test") && m.val[0] == '"')
            test = m;
    }
    uint64_t h;
    if (!test.val || name_hash(c, test.val, test.val_len, &h) < 0)
        return test.val ? -ENOMEM : 0;
    if (array_grow(&c->targets, &c->targets_cap, c->ntargets, sizeof *c->targets) < 0)
        return -ENOMEM;
    c->targets[c->ntargets++] = (struct msg_target){h, (uint32_t)(c->nrec - 1)};
    return 0;
}

static int pread_exact(int fd, char *buf, size_t len, uint64_t off);

/* A copy of the payload of record r (from c->side, which may move as it grows, or the input), in
 * *ret (the caller frees it). */
static int rec_payload(struct conv *c, const struct rec *r, char **ret)
{
    size_t len = r->len_cat & REC_LEN_MASK;
    if (!(*ret = malloc(len ? len : 1)))
        return -ENOMEM;
    if (r->name & REC_SIDE) {
        memcpy(*ret, c->side.buf + r->off, len);
        return 0;
    }
    return pread_exact(c->in_fd, *ret, len, r->off);
}

/* Whether the payload data (a validated object) names the test whose raw name text is name. */
static bool payload_names(struct conv *c, const char *data, size_t len, const char *name, size_t n)
{
    struct obj_iter it;
    struct member m;
    if (obj_begin(&it, data, data + len) < 0)
        return false;
    while (obj_next(&it, &m) > 0) {
        if (!key_is(&m, "test") || m.val[0] != '"')
            continue;
        if (m.val_len == n && memcmp(m.val, name, n) == 0)
            return true;
        if (!memchr(m.val, '\\', m.val_len) && !memchr(name, '\\', n))
            return false;
        jsonw_reset(&c->tmp); /* both in canonical form, one after the other */
        canonical_string(&c->tmp, m.val + 1, m.val_len - 2);
        size_t k = c->tmp.len;
        canonical_string(&c->tmp, name + 1, n - 2);
        return !jsonw_failed(&c->tmp) && c->tmp.len == 2 * k && memcmp(c->tmp.buf, c->tmp.buf + k, k) == 0;
    }
    return false;
}

/* ,"messageLines":[...] in c->side when the JSON string text (quotes included) holds more than
 * one line: the lines of a message, which the front-end shows a row each (a string field is shown
 * on one line). The text is cut at its \n escapes; a \r before one, and empty last lines, go. */
static void side_message_lines(struct conv *c, const char *text, size_t len)
{
    const char *b = text + 1, *e = text + len - 1, *last = b; /* last: the end of the text's last
                                                                 character that ends no line */
    const char *first_nl = NULL;
    for (const char *p = b; p < e; p++) {
        bool eol = *p == '\\' && p + 1 < e && (p[1] == 'n' || p[1] == 'r');
        if (eol && p[1] == 'n' && !first_nl && last > b)
            first_nl = p;
        p += *p == '\\' && p + 1 < e;
        if (!eol)
            last = p + 1;
    }
    if (!first_nl || first_nl >= last)
        return;
    static const char open[] = ",\"messageLines\":[\"";
    jsonw_append(&c->side, open, sizeof open - 1);
    const char *line = b;
    for (const char *p = b; p < last; p++) {
        if (*p != '\\')
            continue;
        if (p[1] == 'n') {
            const char *end = p;
            if (end - line >= 2 && end[-2] == '\\' && end[-1] == 'r' && (end - line < 3 || end[-3] != '\\'))
                end -= 2;
            jsonw_append(&c->side, line, (size_t)(end - line));
            jsonw_append(&c->side, "\",\"", 3);
            line = p + 2;
        }
        p++;
    }
    jsonw_append(&c->side, line, (size_t)(last - line));
    jsonw_append(&c->side, "\"]", 2);
}

/* Whether the payload (a validated object) may take the message text m: it has no message, or
 * one m's text cut (text_cut_of, on their JSON texts: both are the stream writer's), and its
 * "status" is st when the message line names one (st->val NULL: any). */
static bool cut_message_of(const char *data, size_t len, const struct member *m, const struct member *st)
{
    struct obj_iter it;
    struct member pm;
    bool status_ok = !st->val;
    if (obj_begin(&it, data, data + len) < 0)
        return false;
    while (obj_next(&it, &pm) > 0)
        if (key_is(&pm, "message") &&
            !(pm.val[0] == '"' && text_cut_of(pm.val + 1, pm.val_len - 2, m->val + 1, m->val_len - 2)))
            return false;
        else if (key_is(&pm, "status") && st->val)
            status_ok = pm.val_len == st->val_len && !memcmp(pm.val, st->val, st->val_len);
    return status_ok;
}

/* {"type":"message","test":NAME,"message":TEXT[,"status":S]}: the target of that name (and
 * status S, when given) gets the message, in a
 * payload of its own in c->side (the first target after the last one filled is tried first: a
 * harness prints its failures' texts in the order the tests ended). 1 taken (a message nothing
 * takes too), 0 invalid, -errno. */
static int take_message(struct conv *c, const char *line, size_t len)
{
    struct obj_iter it;
    struct member m, test = {0}, msg = {0}, status = {0};
    int r;
    if (obj_begin(&it, line, line + len) < 0)
        return 0;
    while ((r = obj_next(&it, &m)) > 0) {
        if (key_is(&m, "test"))
            test = m;
        else if (key_is(&m, "message"))
            msg = m;
        else if (key_is(&m, "status"))
            status = m;
    }
    if (r < 0 || skip_ws(it.p, it.e) != it.e || !test.val || test.val[0] != '"' || !msg.val || msg.val[0] != '"')
        return 0;
    uint64_t h;
    if (msg.val_len > MSG_TEXT_MAX || !c->ntargets)
        return 1;
    if ((r = name_hash(c, test.val, test.val_len, &h)) < 0)
        return r;
    for (size_t k = 0; k < c->ntargets; k++) {
        size_t i = (c->target_next + k) % c->ntargets;
        struct msg_target *t = &c->targets[i];
        if (t->rec == REC_NONE || t->hash != h)
            continue;
        struct rec *rc = &c->recs[t->rec];
        size_t plen = rc->len_cat & REC_LEN_MASK;
        _cleanup_free_ char *data = NULL;
        if ((r = rec_payload(c, rc, &data)) < 0)
            return r;
        if (!payload_names(c, data, plen, test.val, test.val_len) || !cut_message_of(data, plen, &msg, &status))
            continue;
        t->rec = REC_NONE;
        c->target_next = i + 1;
        size_t add = plen + 2 * msg.val_len + 32; /* the message, and its lines */
        if (c->message_bytes + add > MSG_SIDE_MAX)
            return 1;
        size_t off = c->side.len;
        jsonw_append(&c->side, "{", 1);
        struct obj_iter pi;
        struct member pm;
        bool first = true;
        obj_begin(&pi, data, data + plen);
        while (obj_next(&pi, &pm) > 0) /* its members, less the cut message (and its lines) */
            if (!key_is(&pm, "message") && !key_is(&pm, "messageLines")) {
                jsonw_append(&c->side, ",", !first);
                jsonw_append(&c->side, pm.key - 1, (size_t)(pm.val + pm.val_len - (pm.key - 1)));
                first = false;
            }
        jsonw_append(&c->side, &",\"message\":"[first], 11 - first); /* the comma unless first */
        jsonw_append(&c->side, msg.val, msg.val_len);
        side_message_lines(c, msg.val, msg.val_len);
        jsonw_append(&c->side, "}", 1);
        if (jsonw_failed(&c->side))
            return -ENOMEM;
        lone_surrogates(c->side.buf + off, c->side.len - off, c->side.buf + off);
        c->message_bytes += c->side.len - off;
        rc->off = off;
        rc->len_cat = (uint32_t)(c->side.len - off) | (rc->len_cat & ~REC_LEN_MASK);
        rc->name |= REC_SIDE;
        return 1;
    }
    return 1;
}

/* A marker line's members (NULL: absent). */
struct marker_fields {
    struct member mname, mstart, mend, mdata, mcat;
    struct member *name, *start, *end, *data, *cat;
    bool times; /* st and en are read already (en NAN: null) */
    double st, en;
};

/* Any marker line, every value validated. */
static bool parse_marker(const char *line, size_t len, struct marker_fields *f)
{
    struct obj_iter it;
    struct member m;
    memset(f, 0, sizeof *f);
    if (obj_begin(&it, line, line + len) < 0)
        return false;
    int r;
    while ((r = obj_next(&it, &m)) > 0) {
        if (key_is(&m, "name"))
            f->mname = m, f->name = &f->mname;
        else if (key_is(&m, "startTime"))
            f->mstart = m, f->start = &f->mstart;
        else if (key_is(&m, "endTime"))
            f->mend = m, f->end = &f->mend;
        else if (key_is(&m, "data"))
            f->mdata = m, f->data = &f->mdata;
        else if (key_is(&m, "category"))
            f->mcat = m, f->cat = &f->mcat;
    }
    return r == 0 && skip_ws(it.p, it.e) == it.e;
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

/* A time as the writer formats it (stream_format_ms: an optional '-', digits, '.', digits; 15
 * digits at most): its value, and the byte after it. NULL for any other number (the full check
 * then takes the line, and reads the same value: val_number). */
static const char *take_ms(const char *p, const char *e, double *ret)
{
    bool neg = p < e && *p == '-';
    p += neg;
    const char *s = p;
    uint64_t m = 0;
    int digits = 0, frac = -1;
    for (; p < e; p++) {
        unsigned d = (unsigned)(unsigned char)*p - '0';
        if (d <= 9) {
            m = m * 10 + d;
            digits++;
            frac += frac >= 0;
        } else if (*p == '.' && frac < 0 && digits)
            frac = 0;
        else
            break;
    }
    /* JSON's own rules too: a digit first, no leading zero, a digit after the point */
    if (!digits || digits > 15 || frac == 0 || (s[0] == '0' && p - s > 1 && s[1] != '.'))
        return NULL;
    double d = (double)m;
    if (frac > 0)
        d /= pow10_exact[frac];
    *ret = neg ? -d : d;
    return p;
}

/* A line the stream's writer made, in its layout (stream.h):
 *   {"type":"marker","name":S,"startTime":N,"endTime":N|null,"data":{...}|null[,"category":N]}
 * The follower is handed these bytes by the writer itself (fed mode), so the payload, which the
 * writer built with jsonw, is not scanned again: it runs from after "data": to the category or
 * the line's last '}'. The payload's own last byte is '}' or 'l' (null), never a digit, so a
 * category is told apart from the payload's end. The envelope is still checked: false sends the
 * line to parse_marker. */
static bool parse_marker_fed(const char *line, size_t len, struct marker_fields *f)
{
    const char *p = line, *e = line + len, *v;
    memset(f, 0, sizeof *f);
    if (!take_lit(&p, e, MARKER_HEAD, sizeof MARKER_HEAD - 1) || p >= e || *p != '"')
        return false;
    v = p;
    if (!(p = scan_string(p, e, NULL)))
        return false;
    f->mname = (struct member){.key = "name", .key_len = 4, .val = v, .val_len = (size_t)(p - v)};
    f->name = &f->mname;
    if (!take_lit(&p, e, ",\"startTime\":", 13) || !(v = p, p = take_ms(p, e, &f->st)))
        return false;
    f->mstart = (struct member){.key = "startTime", .key_len = 9, .val = v, .val_len = (size_t)(p - v)};
    f->start = &f->mstart;
    if (!take_lit(&p, e, ",\"endTime\":", 11))
        return false;
    v = p;
    f->en = NAN;
    if (!take_lit(&p, e, "null", 4) && !(p = take_ms(p, e, &f->en)))
        return false;
    f->mend = (struct member){.key = "endTime", .key_len = 7, .val = v, .val_len = (size_t)(p - v)};
    f->end = &f->mend;
    if (!take_lit(&p, e, ",\"data\":", 8) || e - p < 5 || e[-1] != '}')
        return false;
    const char *dend = e - 1, *k = dend;
    while (k > p && is_digit(k[-1]))
        k--;
    if (k < dend && k - p >= 12 + 2 && memcmp(k - 12, ",\"category\":", 12) == 0) {
        f->mcat = (struct member){.key = "category", .key_len = 8, .val = k, .val_len = (size_t)(dend - k)};
        f->cat = &f->mcat;
        dend = k - 12;
    }
    size_t dlen = (size_t)(dend - p);
    if (!((dlen >= 2 && p[0] == '{' && dend[-1] == '}') || (dlen == 4 && memcmp(p, "null", 4) == 0)))
        return false;
    f->mdata = (struct member){.key = "data", .key_len = 4, .val = p, .val_len = dlen};
    f->data = &f->mdata;
    f->times = true;
    return true;
}

/* 1 accepted, 0 invalid (skipped), -errno. */
/* A process marker's end, for a dumped process's track (pstacks_note_end). */
static void note_process_end(struct conv *c, const char *data, size_t len, double end)
{
    struct obj_iter it;
    struct member m;
    double pid;
    if (obj_begin(&it, data, data + len) == 0)
        while (obj_next(&it, &m) > 0)
            if (key_is(&m, "pid") && val_number(m.val, m.val_len, &pid)) {
                pstacks_note_end(c->stacks, (int)pid, end);
                return;
            }
}

static int take_marker(struct conv *c, const char *line, size_t len, uint64_t off)
{
    struct marker_fields f;
    if (!(c->rd.trusted && parse_marker_fed(line, len, &f)) && !parse_marker(line, len, &f))
        return 0;
    struct member *name = f.name, *start = f.start, *end = f.end, *data = f.data, *cat = f.cat;
    int r;
    double st = f.st, en = f.en;
    if (!f.times) {
        en = NAN;
        if (!name || name->val[0] != '"' || !start || !val_number(start->val, start->val_len, &st))
            return 0;
        if (end && !(end->val_len == 4 && memcmp(end->val, "null", 4) == 0) &&
            !val_number(end->val, end->val_len, &en))
            return 0;
    }
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
        note_time(c, st);
        note_time(c, en);
        return 1;
    }
    if (id < 0 && (id = intern_name(c, name->val, name->val_len)) < 0)
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
        lone_surrogates(c->side.buf + doff, dlen, c->side.buf + doff);
    else if (dlen && !c->rd.trusted && lone_surrogates(data->val, dlen, NULL)) {
        /* the payload as strict JSON, from the side buffer */
        doff = c->side.len;
        jsonw_append(&c->side, data->val, dlen);
        if (jsonw_failed(&c->side))
            return -ENOMEM;
        lone_surrogates(data->val, dlen, c->side.buf + doff);
        side = true;
    }
    r = add_rec(c, id, st, en, category_of(c, cat), doff, dlen, side);
    if (r == 0 && dlen && name->val_len == 6 && memcmp(name->val, "\"test\"", 6) == 0)
        r = note_target(c, data->val, dlen);
    return r < 0 ? r : 1;
}

/* The state key "kind\0key" of an open/close line (raw JSON texts of both strings), in c->tmp. */
static int state_key(struct conv *c, const struct member *kind, const struct member *key)
{
    jsonw_reset(&c->tmp);
    jsonw_append(&c->tmp, kind->val, kind->val_len);
    jsonw_append(&c->tmp, "", 1); /* jsonw_append copies n bytes: a NUL separator */
    jsonw_append(&c->tmp, key->val, key->val_len);
    return jsonw_failed(&c->tmp) ? -ENOMEM : 0;
}

struct state_fields {
    struct member kind, key, name, start_ns, start_ms, cat, data, cost;
    bool has_kind, has_key, has_name, has_start_ns, has_start_ms, has_cat, has_data, has_cost;
};

static bool parse_state(const char *line, size_t len, struct state_fields *f)
{
    struct obj_iter it;
    struct member m;
    int r;
    memset(f, 0, sizeof *f);
    if (obj_begin(&it, line, line + len) < 0)
        return false;
    while ((r = obj_next(&it, &m)) > 0) {
#define FIELD(k, fld)                                                                              \
    if (key_is(&m, k)) {                                                                           \
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
    return r == 0 && skip_ws(it.p, it.e) == it.e && f->has_kind && f->kind.val[0] == '"' && f->has_key &&
           f->key.val[0] == '"';
}

/* The start of an open line in ms, or NAN. */
static double state_start(const struct conv *c, const struct state_fields *f)
{
    double ms;
    uint64_t ns;
    if (f->has_start_ms && val_number(f->start_ms.val, f->start_ms.val_len, &ms))
        return ms;
    if (f->has_start_ns && c->have_clock && val_u64(f->start_ns.val, f->start_ns.val_len, &ns)) {
        int64_t d = ns >= c->t0_ns ? (int64_t)(ns - c->t0_ns) : -(int64_t)(c->t0_ns - ns);
        int64_t us = d >= 0 ? (d + 500) / 1000 : -((-d + 500) / 1000);
        return (double)us / 1000.0;
    }
    return NAN;
}

static int take_state(struct conv *c, bool open, const char *line, size_t len, uint64_t off)
{
    struct state_fields f;
    if (!parse_state(line, len, &f))
        return 0;
    if (open) {
        if (!f.has_name || f.name.val[0] != '"' || (f.has_data && !is_object_or_null(&f.data)))
            return 0;
        double st = state_start(c, &f);
        if (!isfinite(st) || len > UINT32_MAX)
            return 0;
        note_time(c, st);
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
    static const char prefix[] = "{\"type\":\"meta\"";
    struct obj_iter it;
    struct member m;
    int r;
    if (len < sizeof prefix - 1 || memcmp(line, prefix, sizeof prefix - 1) != 0 || obj_begin(&it, line, line + len) < 0)
        return -EINVAL;
    c->ncat = 1;
    while ((r = obj_next(&it, &m)) > 0) {
        double d;
        if (key_is(&m, "categories") && m.val[0] == '[') {
            size_t n = array_count(m.val, m.val_len);
            c->ncat = (unsigned)MIN(MAX(n, (size_t)1), (size_t)256);
        } else if (key_is(&m, "logicalCPUs") && val_number(m.val, m.val_len, &d) && d >= 1 && d < 1e6)
            c->logical_cpus = (int)d;
        else if (key_is(&m, "maxMarkers") && val_number(m.val, m.val_len, &d) && d >= 0 &&
                 d <= (double)PROFILE_MAX_MARKERS_MAX)
            c->max_markers = (uint64_t)d;
    }
    if (r < 0 || skip_ws(it.p, it.e) != it.e || len > UINT32_MAX)
        return -EINVAL;
    c->meta_off = off;
    c->meta_len = len;
    return 0;
}

static int take_thread(struct conv *c, const char *line, size_t len, uint64_t off)
{
    struct obj_iter it;
    struct member m;
    int r;
    if (c->have_thread || obj_begin(&it, line, line + len) < 0)
        return 0;
    char name[sizeof c->run_name] = "";
    while ((r = obj_next(&it, &m)) > 0) {
        if (key_is(&m, "stringArray") || key_is(&m, "markers"))
            return 0;
        /* a plain name (no escapes) is the track's as the front-end shows it */
        if (key_is(&m, "name") && m.val_len >= 2 && m.val[0] == '"' && m.val_len - 2 < sizeof name &&
            !memchr(m.val, '\\', m.val_len)) {
            memcpy(name, m.val + 1, m.val_len - 2);
            name[m.val_len - 2] = '\0';
        }
    }
    if (r < 0 || skip_ws(it.p, it.e) != it.e)
        return 0;
    memcpy(c->run_name, name, sizeof name);
    c->have_thread = true;
    c->thread_off = off;
    c->thread_len = len;
    return 1;
}

static int take_clock(struct conv *c, const char *line, size_t len)
{
    struct obj_iter it;
    struct member m;
    int r;
    uint64_t t0 = 0;
    bool ok = false;
    if (obj_begin(&it, line, line + len) < 0)
        return 0;
    while ((r = obj_next(&it, &m)) > 0)
        if (key_is(&m, "monotonicNs"))
            ok = val_u64(m.val, m.val_len, &t0);
    if (r < 0 || !ok || skip_ws(it.p, it.e) != it.e)
        return 0;
    c->t0_ns = t0;
    c->have_clock = true;
    return 1;
}

/* Dispatch on the "type" key, which writers put first; a line whose type is elsewhere is found by
 * a full scan. */
static int take_line(struct conv *c, const char *line, size_t len, uint64_t off)
{
    if (c->rd.trusted && len > sizeof MARKER_HEAD && memcmp(line, MARKER_HEAD, sizeof MARKER_HEAD - 1) == 0)
        return take_marker(c, line, len, off);
    struct obj_iter it;
    struct member m;
    if (obj_begin(&it, line, line + len) < 0)
        return 0;
    int r;
    const struct member *type = NULL;
    while ((r = obj_next(&it, &m)) > 0)
        if (key_is(&m, "type")) {
            type = &m;
            break;
        }
    if (!type)
        return 0;
    if (val_is_str(type, "marker"))
        return take_marker(c, line, len, off);
    if (val_is_str(type, "open"))
        return take_state(c, true, line, len, off);
    if (val_is_str(type, "close"))
        return take_state(c, false, line, len, off);
    if (val_is_str(type, "thread"))
        return take_thread(c, line, len, off);
    if (val_is_str(type, "clock"))
        return take_clock(c, line, len);
    if (val_is_str(type, "counter"))
        return take_counter(c, line, len);
    if (val_is_str(type, "stack"))
        return pstacks_add(&c->stacks, line, len);
    if (val_is_str(type, "message"))
        return take_message(c, line, len);
    /* Another meta line, a future "counter"/"sample" line: not ours to interpret. */
    return 0;
}

static int pread_exact(int fd, char *buf, size_t len, uint64_t off)
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
static void close_payload(struct conv *c, const struct member *data, const char *status, bool cost, double st,
                          double en, bool cut)
{
    bool has_status = false, has_color = false, has_cpu = false, has_rss = false, has_pct = false, any = false;
    const struct marker_type *mt = NULL;
    struct obj_iter it;
    struct member m;
    if (data && obj_begin(&it, data->val, data->val + data->val_len) == 0)
        while (obj_next(&it, &m) > 0) {
            any = true;
            has_status |= key_is(&m, "status");
            has_color |= key_is(&m, "color");
            has_cpu |= key_is(&m, "cpuTime");
            has_rss |= key_is(&m, "maxRSS");
            has_pct |= key_is(&m, "cpuPercent");
            if (key_is(&m, "type") && m.val[0] == '"')
                mt = marker_type_find(m.val + 1, m.val_len - 2);
        }
    if (data && cut) {
        /* A recovered command did not end where its record does: what it was doing after is
         * unknown, so its open line's "still running" is replaced by when the record stops. */
        jsonw_append(&c->side, "{", 1);
        bool sep = false;
        obj_begin(&it, data->val, data->val + data->val_len);
        while (obj_next(&it, &m) > 0) {
            if (key_is(&m, "exit") || key_is(&m, "reason"))
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
        double ms = amount_between(cpu, st, en);
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
    if (mem && !has_rss && marker_type_field(mt, "maxRSS", 6) >= 0 && peak_between(mem, st, en, &peak) && peak > 0) {
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
        int r = pread_exact(c->in_fd, line, o->len, o->off);
        if (r < 0)
            return r;
        struct state_fields f;
        if (!parse_state(line, o->len, &f))
            continue;
        double st = state_start(c, &f);
        double en = MAX(end_ms, st);
        int64_t id = intern_name(c, f.name.val, f.name.val_len);
        if (id < 0)
            return (int)id;
        bool is_test = val_is_str(&f.kind, "test");
        bool cost = f.has_cost && f.cost.val_len == 4 && memcmp(f.cost.val, "true", 4) == 0;
        size_t soff = c->side.len;
        bool has_data = f.has_data && f.data.val[0] == '{';
        if (has_data || is_test)
            close_payload(c, has_data ? &f.data : NULL, is_test ? status : NULL, cost, st, en,
                          cut && val_is_str(&f.kind, "command"));
        if (jsonw_failed(&c->side))
            return -ENOMEM;
        size_t slen = c->side.len - soff;
        if (slen > REC_LEN_MASK)
            continue;
        if (slen)
            lone_surrogates(c->side.buf + soff, slen, c->side.buf + soff);
        r = add_rec(c, id, st, en, category_of(c, f.has_cat ? &f.cat : NULL), soff, slen, true);
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
        c->gz->avail_out = CHUNK;
        zr = deflate(c->gz, finish ? Z_FINISH : Z_NO_FLUSH);
        if (zr == Z_STREAM_ERROR) {
            c->oerr = -EIO;
            return;
        }
        size_t have = CHUNK - c->gz->avail_out;
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
    if (c->olen + n > CHUNK) {
        out_flush(c);
        if (n > CHUNK / 2) {
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
            n = pread(c->in_fd, c->wbuf, CHUNK, (off_t)off);
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
    int r = pread_exact(c->in_fd, line, len, off);
    if (r < 0)
        return r;
    struct obj_iter it;
    struct member m;
    int n = 0;
    if (obj_begin(&it, line, line + len) < 0)
        return -EINVAL;
    while (obj_next(&it, &m) > 0) {
        bool drop = false;
        for (size_t i = 0; i < nskip && !drop; i++)
            drop = key_is(&m, skip[i]);
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
    struct obj_iter it;
    struct member m;
    OUT_LIT(c, "\"processType\":\"default\",\"processName\":");
    bool done = false;
    if (obj_begin(&it, meta, meta + len) == 0)
        while (!done && obj_next(&it, &m) > 0)
            if (key_is(&m, "product") && m.val[0] == '"') {
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
#define ZERO_NAME "Counters that stayed at zero"

static bool counter_is_zero(const struct counter *k)
{
    for (size_t j = 0; j < k->n; j++)
        if (k->count[j] != 0)
            return false;
    return true;
}

static bool any_zero_counter(const struct conv *c)
{
    for (unsigned i = 0; i < c->ncounters; i++)
        if (c->counters[i].n && counter_is_zero(&c->counters[i]))
            return true;
    return false;
}

/* The thread of ZERO_PID: no samples, no markers. */
static void out_zero_thread(struct conv *c)
{
    const char *rest = stream_thread_fields(), *tables = strstr(rest, "\"samples\":");
    OUT_LIT(c, ",{\"processType\":\"default\",\"processName\":\"" ZERO_NAME "\",\"processStartupTime\":0,"
               "\"processShutdownTime\":null,\"registerTime\":0,\"unregisterTime\":null,\"pausedRanges\":[],"
               "\"showMarkersInTimeline\":false,\"name\":\"" ZERO_NAME "\",\"isMainThread\":true,"
               "\"pid\":\"" ZERO_PID "\",\"tid\":0,");
    out_put(c, tables, strlen(tables));
    OUT_LIT(c, ",\"stringArray\":[\"(root)\"],\"markers\":{\"data\":[],\"name\":[],\"startTime\":[],"
               "\"endTime\":[],\"phase\":[],\"category\":[],\"stack\":[],\"length\":0}}");
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
    /* the run's thread, then one per dumped OS thread, then the one of HIDDEN COUNTERS */
    size_t dumped = pstacks_threads(c->stacks), zero_thread = 1 + dumped;
    bool zero = any_zero_counter(c);
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
        int r = pread_exact(c->in_fd, meta, c->meta_len, c->meta_off);
        if (r < 0)
            return r;
        out_thread_default(c, meta, c->meta_len);
        OUT_LIT(c, ",");
    }
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
    size_t wlen = 0;
    for (size_t i = 0; i < c->nrec; i++) {
        const struct rec *r = &c->recs[i];
        size_t len = r->len_cat & REC_LEN_MASK;
        if (i)
            OUT_LIT(c, ",");
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
    for (size_t i = 0; i < c->nrec; i++) {
        if (i)
            OUT_LIT(c, ",");
        out_uint(c, c->recs[i].name & ~REC_SIDE);
    }
    OUT_LIT(c, "],\"startTime\":[");
    for (size_t i = 0; i < c->nrec; i++) {
        if (i)
            OUT_LIT(c, ",");
        out_ms(c, c->recs[i].start);
    }
    OUT_LIT(c, "],\"endTime\":[");
    for (size_t i = 0; i < c->nrec; i++) {
        if (i)
            OUT_LIT(c, ",");
        if (isnan(c->recs[i].end))
            OUT_LIT(c, "null");
        else
            out_ms(c, c->recs[i].end);
    }
    OUT_LIT(c, "],\"phase\":[");
    for (size_t i = 0; i < c->nrec; i++)
    {
        const char *p = isnan(c->recs[i].end) ? ",0" : ",1";
        out_put(c, i ? p : p + 1, i ? 2 : 1);
    }
    OUT_LIT(c, "],\"category\":[");
    for (size_t i = 0; i < c->nrec; i++) {
        if (i)
            OUT_LIT(c, ",");
        out_uint(c, c->recs[i].len_cat >> 24);
    }
    OUT_LIT(c, "],\"stack\":[");
    for (size_t i = 0; i < c->nrec; i++)
        out_put(c, i ? ",null" : "null", i ? 5 : 4);
    OUT_LIT(c, "],\"length\":");
    out_uint(c, c->nrec);
    OUT_LIT(c, "}}");
    if (c->stacks) {
        /* the processes dumped at a stop, a thread each (profile_stacks.h) */
        jsonw_reset(&c->tmp);
        pstacks_write(c->stacks, c->ncat, c->run_name, &c->tmp);
        if (jsonw_failed(&c->tmp))
            return -ENOMEM;
        if (c->tmp.len) {
            OUT_LIT(c, ",");
            out_put(c, c->tmp.buf, c->tmp.len);
        }
    }
    if (zero)
        out_zero_thread(c);
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

static int conv_init(struct conv *c, int in_fd, bool follow)
{
    *c = (struct conv){.in_fd = in_fd, .ncat = 1, .max_markers = PROFILE_MAX_MARKERS_DEFAULT};
    c->rd = (struct reader){.fd = in_fd, .cap = follow ? FOLLOW_CHUNK : CHUNK, .follow = follow};
    open_set_init(&c->opens);
    jsonw_init(&c->side);
    jsonw_init(&c->tmp);
    c->rd.buf = malloc(c->rd.cap);
    /* stringArray[0] is the root function's name; a marker of that name shares it. */
    if (!c->rd.buf || intern_get(&c->names, "(root)", 6) != 0)
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
    while ((r = reader_next(&c->rd, &line, &len, &off)) > 0) {
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
    struct reader *rd = &c->rd;
    if (rd->follow && rd->cap > FOLLOW_CHUNK && rd->len - rd->start <= FOLLOW_CHUNK) {
        /* A long line made the buffer grow; give the memory back while the run goes on. */
        memmove(rd->buf, rd->buf + rd->start, rd->len - rd->start);
        rd->base += rd->start;
        rd->len -= rd->start;
        rd->start = 0;
        char *b = realloc(rd->buf, FOLLOW_CHUNK);
        if (b) {
            rd->buf = b;
            rd->cap = FOLLOW_CHUNK;
        }
    }
    return 0;
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
    return add_rec(c, id, end_ms, NAN, 0, off, c->side.len - off, true);
}

/* Close what is open and write the profile; what this adds to the state is taken back after,
 * so a converter that follows a stream can write again later. */
static int conv_write(struct conv *c, int out_fd, const struct profile_end *end, struct profile_stats *ret_stats)
{
    if (!c->started)
        return -EINVAL;
    size_t nrec = c->nrec, side_len = c->side.len;
    uint32_t nnames = c->names.n;
    double last_ms = c->last_ms;
    uint64_t skipped = c->skipped + c->rd.skipped;
    /* In follow mode an unterminated tail is a torn write (the writer starts its next line with a
     * newline): one damaged line. */
    if (c->rd.follow && c->rd.len > c->rd.start && !c->rd.skipping)
        skipped++;

    double end_ms = end && end->end_ms >= 0 && isfinite(end->end_ms) ? end->end_ms : c->last_ms;
    const char *status = end && end->open_status ? end->open_status : "INCOMPLETE";
    c->out_fd = out_fd;
    c->olen = 0;
    c->obytes = 0;
    c->oerr = 0;
    c->closed = 0;
    c->obuf = malloc(CHUNK);
    c->wbuf = malloc(CHUNK);
    int r = c->obuf && c->wbuf ? 0 : -ENOMEM;
    z_stream zs = {0};
    if (r == 0 && end && end->gzip) {
        /* Level 3: within a few percent of the default's size, at twice its speed (a stop
         * finalizes before it signals anything). 15 + 16: a gzip wrapper. */
        c->zbuf = malloc(CHUNK);
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
        pc->err = reader_append(&pc->c.rd, buf, len);
    return pc->err;
}

int profile_conv_write(struct profile_conv *pc, int out_fd, const struct profile_end *end,
                       struct profile_stats *ret_stats)
{
    int r = profile_conv_update(pc);
    return r < 0 ? r : conv_write(&pc->c, out_fd, end, ret_stats);
}

/* ---- finalize, detect, recover ------------------------------------------------------------ */

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

/* Write c's profile to a temporary file beside path, fsync it and rename it over path. */
static int finalize_conv(struct conv *c, int dirfd, const char *path, const struct profile_end *end,
                         struct profile_stats *ret_stats)
{
    struct conv_fill f = {c, end, {0}};
    int r = write_file_atomically(dirfd, path, fill_conv, &f, end ? end->lock_fd : NULL);
    if (r == 0 && ret_stats)
        *ret_stats = f.st;
    return r;
}

int profile_finalize(int in_fd, int dirfd, const char *path, const struct profile_end *end,
                     struct profile_stats *ret_stats)
{
    struct conv c;
    int r = conv_init(&c, in_fd, false);
    if (r == 0)
        r = conv_feed(&c);
    if (r == 0)
        r = finalize_conv(&c, dirfd, path, end, ret_stats);
    conv_release(&c);
    return r;
}

int profile_conv_finalize(struct profile_conv *pc, int dirfd, const char *path, const struct profile_end *end,
                          struct profile_stats *ret_stats)
{
    int r = profile_conv_update(pc);
    return r < 0 ? r : finalize_conv(&pc->c, dirfd, path, end, ret_stats);
}

enum profile_kind profile_detect(int fd)
{
    char head[64];
    ssize_t n;
    do
        n = pread(fd, head, sizeof head, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return PROFILE_KIND_OTHER;
    static const char stream_prefix[] = "{\"type\":\"meta\"";
    if ((size_t)n >= sizeof stream_prefix - 1 && memcmp(head, stream_prefix, sizeof stream_prefix - 1) == 0)
        return PROFILE_KIND_STREAM;
    if (n >= 2 && (unsigned char)head[0] == 0x1f && (unsigned char)head[1] == 0x8b)
        return PROFILE_KIND_FULL; /* only full profiles are ever compressed */
    const char *p = head, *e = head + n;
    p = skip_ws(p, e);
    if (p >= e || *p != '{')
        return PROFILE_KIND_OTHER;
    p = skip_ws(p + 1, e);
    if ((size_t)(e - p) < 6 || memcmp(p, "\"meta\"", 6) != 0)
        return PROFILE_KIND_OTHER;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size < 2)
        return PROFILE_KIND_OTHER;
    char tail[64];
    off_t at = st.st_size > (off_t)sizeof tail ? st.st_size - (off_t)sizeof tail : 0;
    do
        n = pread(fd, tail, sizeof tail, at);
    while (n < 0 && errno == EINTR);
    while (n > 0 && (tail[n - 1] == ' ' || tail[n - 1] == '\n' || tail[n - 1] == '\r' || tail[n - 1] == '\t'))
        n--;
    return n > 0 && tail[n - 1] == '}' ? PROFILE_KIND_FULL : PROFILE_KIND_OTHER;
}

bool profile_path_wants_gzip(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}

struct copy_fill {
    int in_fd;
    bool gzip;
    uint64_t bytes;
};

/* A file's bytes into fd, compressed when asked and not gzip already. */
static int fill_copy(void *ctx, int fd)
{
    struct copy_fill *f = ctx;
    _cleanup_free_ char *buf = malloc(CHUNK), *zbuf = malloc(CHUNK);
    if (!buf || !zbuf)
        return -ENOMEM;
    z_stream zs = {0};
    bool gz = false;
    uint64_t off = 0;
    int r = 0;
    for (;;) {
        ssize_t n;
        do
            n = pread(f->in_fd, buf, CHUNK, (off_t)off);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            r = -errno;
            break;
        }
        if (off == 0 && f->gzip && !(n >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b)) {
            if (deflateInit2(&zs, 3, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
                r = -ENOMEM;
                break;
            }
            gz = true;
        }
        off += (uint64_t)n;
        if (!gz) {
            if (n == 0)
                break;
            if ((r = write_all(fd, buf, (size_t)n)) < 0)
                break;
            f->bytes += (uint64_t)n;
            continue;
        }
        zs.next_in = (Bytef *)buf;
        zs.avail_in = (uInt)n;
        int zr;
        do {
            zs.next_out = (Bytef *)zbuf;
            zs.avail_out = CHUNK;
            zr = deflate(&zs, n ? Z_NO_FLUSH : Z_FINISH);
            size_t have = CHUNK - zs.avail_out;
            if (have && (r = write_all(fd, zbuf, have)) < 0)
                break;
            f->bytes += have;
        } while (zs.avail_out == 0 || (n == 0 && zr != Z_STREAM_END && zr != Z_STREAM_ERROR));
        if (r < 0 || n == 0)
            break;
    }
    if (gz)
        deflateEnd(&zs);
    return r;
}

int profile_recover(const char *in_path, const char *out_path, bool gzip, struct profile_stats *ret_stats)
{
    if (!in_path)
        return -EINVAL;
    /* O_NONBLOCK: a FIFO at the path must be refused, not waited on. */
    _cleanup_close_ int fd = open(in_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    if (!S_ISREG(st.st_mode))
        return -EINVAL;
    switch (profile_detect(fd)) {
    case PROFILE_KIND_FULL: {
        /* Nothing to convert; asked to put it elsewhere, it is copied there (compressed when
         * asked, unless it is already). */
        if (!out_path || strcmp(out_path, in_path) == 0)
            return PROFILE_RECOVER_ALREADY_FULL;
        struct copy_fill f = {fd, gzip};
        int r = write_file_atomically(AT_FDCWD, out_path, fill_copy, &f, NULL);
        if (r == 0 && ret_stats)
            *ret_stats = (struct profile_stats){.bytes = f.bytes};
        return r < 0 ? r : PROFILE_RECOVER_ALREADY_FULL;
    }
    case PROFILE_KIND_OTHER:
        return -EINVAL;
    case PROFILE_KIND_STREAM:
        break;
    }
    /* A stream a live run is writing: converting it in place would take its path from under it. */
    if ((!out_path || strcmp(out_path, in_path) == 0) && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK)
        return -EBUSY;
    struct profile_end end = {.end_ms = -1, .open_status = "INCOMPLETE", .gzip = gzip, .recovered = true};
    return profile_finalize(fd, AT_FDCWD, out_path ? out_path : in_path, &end, ret_stats);
}
