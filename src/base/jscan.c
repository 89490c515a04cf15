/* jscan.c — see jscan.h. */
#include "base/jscan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_DEPTH 64

/* How one scan goes: strict (every byte of a string checked) or loose (see jscan.h), and whether
 * it failed because the text ended. */
struct scan {
    bool loose;
    bool cut;
};

static bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* NULL, after noting that the text ended where more was needed. */
static const char *ended(struct scan *s)
{
    s->cut = true;
    return NULL;
}

/* p at a backslash: the position after its escape, or NULL. */
static const char *escape_at(const char *p, const char *e, struct scan *s)
{
    if (e - p < 2)
        return ended(s);
    char x = p[1];
    if (x == 'u') {
        for (int i = 2; i < 6; i++)
            if (p + i >= e)
                return ended(s);
            else if (!is_hex(p[i]))
                return NULL;
        return p + 6;
    }
    if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' || x == 'r' || x == 't')
        return p + 2;
    return NULL;
}

/* Index of the first '"' or '\\' in p[0, e - p), e - p if none. Sixteen (or eight) bytes at a
 * time: most strings are short, where a memchr call costs more than the search. */
static inline __attribute__((always_inline)) size_t quote_or_backslash(const char *p, const char *e)
{
    size_t n = (size_t)(e - p), j = 0;
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    for (; j + 16 <= n; j += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + j));
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)));
        if (m)
            return j + (size_t)__builtin_ctz(m);
    }
#endif
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    for (; j + 8 <= n; j += 8) {
        uint64_t x;
        memcpy(&x, p + j, 8);
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
        if (p[j] == '"' || p[j] == '\\')
            return j;
    return n;
}

/* p at the opening quote. Returns the position after the closing quote, or NULL. A character cut
 * by the end of the text counts as invalid UTF-8 (only loose readers, which do not check it, read
 * prefixes). */
/* Inlined into the iteration: a line's strings are most of what it holds. */
static inline __attribute__((always_inline)) const char *string_at(const char *p, const char *e,
                                                                   bool *ret_escaped, struct scan *s)
{
    bool esc = false;
    p++;
    while (p < e) {
        p += s->loose ? quote_or_backslash(p, e) : json_plain_prefix(p, (size_t)(e - p));
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
            if (!(p = escape_at(p, e, s)))
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
    return ended(s);
}

const char *js_scan_string(const char *p, const char *e, bool *ret_escaped)
{
    struct scan s = {0};
    return string_at(p, e, ret_escaped, &s);
}


/* One or more digits at p (a fraction's, an exponent's): past them; NULL when none; the text's
 * end before any is a cut (ended). */
static const char *digits(const char *p, const char *e, struct scan *s)
{
    if (p >= e)
        return ended(s);
    if (!js_is_digit(*p))
        return NULL;
    while (p < e && js_is_digit(*p))
        p++;
    return p;
}
static inline __attribute__((always_inline)) const char *number_at(const char *p, const char *e,
                                                                   struct scan *s)
{
    if (p < e && *p == '-')
        p++;
    if (p >= e)
        return ended(s);
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (p < e && js_is_digit(*p))
            p++;
    else
        return NULL;
    if (p < e && *p == '.')
        p = digits(p + 1, e, s);
    if (p && p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        p = digits(p, e, s);
    }
    return p;
}

static const char *literal_at(const char *p, const char *e, const char *lit, size_t n, struct scan *s)
{
    if ((size_t)(e - p) < n)
        return memcmp(p, lit, (size_t)(e - p)) == 0 ? ended(s) : NULL;
    if (memcmp(p, lit, n) != 0)
        return NULL;
    return p + n;
}

static const char *value_at(const char *p, const char *e, int depth, struct scan *s);

static const char *container_at(const char *p, const char *e, int depth, struct scan *s)
{
    bool obj = *p == '{';
    char close = obj ? '}' : ']';
    if (depth >= MAX_DEPTH)
        return NULL;
    p = js_skip_ws(p + 1, e);
    if (p < e && *p == close)
        return p + 1;
    for (;;) {
        if (obj) {
            if (p >= e)
                return ended(s);
            if (*p != '"' || !(p = string_at(p, e, NULL, s)))
                return NULL;
            p = js_skip_ws(p, e);
            if (p >= e)
                return ended(s);
            if (*p != ':')
                return NULL;
            p = js_skip_ws(p + 1, e);
        }
        if (!(p = value_at(p, e, depth + 1, s)))
            return NULL;
        p = js_skip_ws(p, e);
        if (p >= e)
            return ended(s);
        if (*p == close)
            return p + 1;
        if (*p != ',')
            return NULL;
        p = js_skip_ws(p + 1, e);
    }
}

/* p at the first byte of a value (no leading blanks). Returns the position after it, or NULL. */
static const char *value_at(const char *p, const char *e, int depth, struct scan *s)
{
    if (p >= e)
        return ended(s);
    switch (*p) {
    case '"':
        return string_at(p, e, NULL, s);
    case '{':
    case '[':
        return container_at(p, e, depth, s);
    case 't':
        return literal_at(p, e, "true", 4, s);
    case 'f':
        return literal_at(p, e, "false", 5, s);
    case 'n':
        return literal_at(p, e, "null", 4, s);
    default:
        return number_at(p, e, s);
    }
}

const char *js_scan_value(const char *p, const char *e, int depth)
{
    struct scan s = {0};
    return value_at(p, e, depth, &s);
}

static int iter_begin(struct js_iter *it, const char *p, const char *e, char open)
{
    p = js_skip_ws(p, e);
    it->e = e;
    it->first = true;
    it->done = false;
    it->loose = false;
    it->cut = p >= e;
    if (p >= e || *p != open)
        return -1;
    it->p = js_skip_ws(p + 1, e);
    return 0;
}

int js_obj_begin(struct js_iter *it, const char *p, const char *e) { return iter_begin(it, p, e, '{'); }
int js_arr_begin(struct js_iter *it, const char *p, const char *e) { return iter_begin(it, p, e, '['); }

/* -1, noting whether the text ended there. */
static int iter_fail(struct js_iter *it, bool cut)
{
    it->cut = cut;
    return -1;
}

static inline __attribute__((always_inline)) int iter_next(struct js_iter *it, struct js_member *m, bool obj)
{
    const char *p = it->p, *e = it->e;
    struct scan s = {it->loose, false};
    char close = obj ? '}' : ']';
    if (it->done)
        return 0;
    if (p >= e)
        return iter_fail(it, true);
    if (*p == close) {
        it->p = p + 1;
        it->done = true;
        return 0;
    }
    if (!it->first) {
        if (*p != ',')
            return -1;
        p = js_skip_ws(p + 1, e);
    }
    it->first = false;
    if (obj) {
        if (p >= e)
            return iter_fail(it, true);
        if (*p != '"')
            return -1;
        const char *k = p;
        if (!(p = string_at(p, e, &m->key_escaped, &s)))
            return iter_fail(it, s.cut);
        m->key = k + 1;
        m->key_len = (size_t)(p - k - 2);
        p = js_skip_ws(p, e);
        if (p >= e)
            return iter_fail(it, true);
        if (*p != ':')
            return -1;
        p = js_skip_ws(p + 1, e);
    } else {
        m->key = NULL;
        m->key_len = 0;
        m->key_escaped = false;
    }
    const char *v = p;
    m->val_escaped = false;
    if (p < e && *p == '"')
        p = string_at(p, e, &m->val_escaped, &s);
    else if (p < e && (*p == '-' || js_is_digit(*p))) /* times, pids: without a call */
        p = number_at(p, e, &s);
    else
        p = value_at(p, e, 1, &s);
    if (!p)
        return iter_fail(it, s.cut);
    m->val = v;
    m->val_len = (size_t)(p - v);
    it->p = js_skip_ws(p, e);
    return 1;
}

int js_obj_next(struct js_iter *it, struct js_member *m) { return iter_next(it, m, true); }
int js_arr_next(struct js_iter *it, struct js_member *m) { return iter_next(it, m, false); }

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
        if (js_is_digit(*p)) {
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

bool js_number(const char *v, size_t n, double *ret)
{
    /* the most common first: epoch milliseconds, pids, counts */
    uint64_t m = 0;
    size_t i = 0;
    while (i < n && i < 15 && js_is_digit(v[i]))
        m = m * 10 + (uint64_t)(v[i++] - '0');
    if (i == n && n) {
        *ret = (double)m;
        return true;
    }
    char tmp[64];
    if (n == 0 || n >= sizeof tmp || !(v[0] == '-' || js_is_digit(v[0])))
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

bool js_u64(const char *v, size_t n, uint64_t *ret)
{
    char tmp[32];
    if (n == 0 || n >= sizeof tmp || !js_is_digit(v[0]))
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

size_t js_array_count(const char *v, size_t n)
{
    const char *p = v, *e = v + n;
    if (p >= e || *p != '[')
        return 0;
    p = js_skip_ws(p + 1, e);
    if (p < e && *p == ']')
        return 0;
    size_t count = 0;
    while (p < e) {
        const char *q = js_scan_value(p, e, 1);
        if (!q)
            return count;
        count++;
        p = js_skip_ws(q, e);
        if (p >= e || *p != ',')
            break;
        p = js_skip_ws(p + 1, e);
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

bool js_lone_surrogates(const char *s, size_t n, char *fix)
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

size_t js_decode_string(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\') {
            out[o++] = s[i++];
            continue;
        }
        char x = s[i + 1];
        if (x != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            out[o++] = to[strchr(from, x) - from];
            i += 2;
            continue;
        }
        unsigned cp = hex4(s + i + 2);
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= n && s[i] == '\\' && s[i + 1] == 'u') {
            unsigned lo = hex4(s + i + 2);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF)
            cp = 0xFFFD;
        /* \u escapes are 6 bytes and decode to at most 4 (a pair: 12 → 4), so out never overflows. */
        if (cp < 0x80)
            out[o++] = (char)cp;
        else if (cp < 0x800) {
            out[o++] = (char)(0xC0 | cp >> 6);
            out[o++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out[o++] = (char)(0xE0 | cp >> 12);
            out[o++] = (char)(0x80 | (cp >> 6 & 0x3F));
            out[o++] = (char)(0x80 | (cp & 0x3F));
        } else {
            out[o++] = (char)(0xF0 | cp >> 18);
            out[o++] = (char)(0x80 | (cp >> 12 & 0x3F));
            out[o++] = (char)(0x80 | (cp >> 6 & 0x3F));
            out[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    return o;
}

/* Decode the raw text of a JSON string (validated) and append it re-escaped canonically, so two
 * spellings of one name intern to one stringArray entry. */
void js_canonical_string(struct jsonw *w, const char *s, size_t n)
{
    char *tmp = malloc(n ? n : 1);
    if (!tmp) {
        w->failed = true;
        return;
    }
    jsonw_escape(w, tmp, js_decode_string(s, n, tmp));
    free(tmp);
}

/* A time as the writer formats it (stream_format_ms: an optional '-', digits, '.', digits; 15
 * digits at most): its value, and the byte after it. NULL for any other number (the full check
 * then takes the line, and reads the same value: js_number). */
const char *js_ms(const char *p, const char *e, double *ret)
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
