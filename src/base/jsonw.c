/* jsonw.c — see jsonw.h. */
#include "base/jsonw.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jsonw_init(struct jsonw *w)
{
    memset(w, 0, sizeof *w);
    w->first[0] = true;
}

void jsonw_release(struct jsonw *w)
{
    free(w->buf);
    jsonw_init(w);
}

void jsonw_reset(struct jsonw *w)
{
    char *buf = w->buf;
    size_t cap = w->cap;
    jsonw_init(w);
    w->buf = buf;
    w->cap = cap;
    if (buf)
        buf[0] = '\0';
}

static bool grow(struct jsonw *w, size_t more);

/* Room for more bytes and the NUL; the common case stays inline. */
static inline bool reserve(struct jsonw *w, size_t more)
{
    if (w->len + more + 1 <= w->cap && !w->failed)
        return true;
    return grow(w, more);
}

static bool grow(struct jsonw *w, size_t more)
{
    if (w->failed)
        return false;
    if (w->len + more + 1 <= w->cap)
        return true;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + more + 1) {
        if (cap > SIZE_MAX / 2) {
            w->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(w->buf, cap);
    if (!p) {
        w->failed = true;
        return false;
    }
    w->buf = p;
    w->cap = cap;
    return true;
}

void jsonw_append(struct jsonw *w, const char *s, size_t n)
{
    if (!reserve(w, n))
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

void jsonw_appendf(struct jsonw *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(w, (size_t)n + 1))
        return;
    va_start(ap, fmt);
    vsnprintf(w->buf + w->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    w->len += (size_t)n;
}

static inline void put(struct jsonw *w, char c)
{
    if (!reserve(w, 1))
        return;
    w->buf[w->len++] = c;
    w->buf[w->len] = '\0';
}

/* Called before every value: the comma between array elements (object members get theirs in
 * jsonw_key). */
static void before_value(struct jsonw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (!w->first[w->depth])
        put(w, ',');
    w->first[w->depth] = false;
}

static void open_(struct jsonw *w, char c)
{
    before_value(w);
    if (w->depth >= JSONW_MAX_DEPTH) {
        w->failed = true;
        return;
    }
    put(w, c);
    w->first[++w->depth] = true;
}

static void close_(struct jsonw *w, char c)
{
    if (w->depth <= 0) {
        w->failed = true;
        return;
    }
    w->depth--;
    put(w, c);
}

void jsonw_obj_open(struct jsonw *w) { open_(w, '{'); }
void jsonw_obj_close(struct jsonw *w) { close_(w, '}'); }
void jsonw_arr_open(struct jsonw *w) { open_(w, '['); }
void jsonw_arr_close(struct jsonw *w) { close_(w, ']'); }

void jsonw_key_plain(struct jsonw *w, const char *key, size_t n)
{
    before_value(w);
    /* One copy, quotes and colon included. */
    if (reserve(w, n + 3)) {
        char *o = w->buf + w->len;
        o[0] = '"';
        memcpy(o + 1, key, n);
        o[n + 1] = '"';
        o[n + 2] = ':';
        w->len += n + 3;
        w->buf[w->len] = '\0';
    }
    w->after_key = true;
}

void jsonw_key(struct jsonw *w, const char *key)
{
    size_t n = strlen(key);
    if (json_plain_prefix(key, n) == n) {
        jsonw_key_plain(w, key, n); /* keys are nearly always plain */
        return;
    }
    before_value(w);
    put(w, '"');
    jsonw_escape(w, key, n);
    put(w, '"');
    put(w, ':');
    w->after_key = true;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF). */
size_t utf8_char_len(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

size_t utf8_valid_prefix(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_char_len((const char *)u + i, n - i);
        if (k == 0)
            break;
        i += k;
    }
    return i;
}

size_t json_plain_prefix(const char *s, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    /* As signed bytes everything from 0x80 up is negative: one compare finds those and controls. */
    const __m128i space = _mm_set1_epi8(' '), quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    for (; i + 16 <= n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i bad = _mm_or_si128(_mm_cmplt_epi8(x, space),
                                   _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)));
        unsigned m = (unsigned)_mm_movemask_epi8(bad);
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
#endif
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = ones * 0x80;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, q, b;
        memcpy(&x, s + i, 8);
        q = x ^ (ones * '"');
        b = x ^ (ones * '\\');
        /* Exact when no byte has its high bit set (no borrow crosses bytes then); otherwise the
         * byte loop below finds the first special byte. */
        if (((x - ones * 0x20) | (q - ones) | (b - ones) | x) & highs)
            break;
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
            break;
    }
    return i;
}

void jsonw_escape(struct jsonw *w, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    /* Worst case every byte becomes \ufffd (3 bytes out for an invalid byte) or \u00XX (6). */
    if (!reserve(w, n * 6))
        return;
    char *o = w->buf + w->len;
    while (i < n) {
        /* Plain runs (the bulk of every name and message) are copied whole. */
        size_t k = json_plain_prefix(s + i, n - i);
        memcpy(o, u + i, k);
        o += k;
        i += k;
        if (i >= n)
            break;
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            *o++ = (char)c;
            i++;
            continue;
        }
        if (c < 0x80) {
            *o++ = '\\';
            switch (c) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '\n': *o++ = 'n'; break;
            case '\r': *o++ = 'r'; break;
            case '\t': *o++ = 't'; break;
            case '\b': *o++ = 'b'; break;
            case '\f': *o++ = 'f'; break;
            default:
                *o++ = 'u';
                *o++ = '0';
                *o++ = '0';
                *o++ = hex[c >> 4];
                *o++ = hex[c & 15];
            }
            i++;
            continue;
        }
        k = utf8_char_len((const char *)u + i, n - i);
        if (k == 0) {
            /* One U+FFFD per invalid byte: simple, and never swallows a valid character. */
            *o++ = (char)0xEF;
            *o++ = (char)0xBF;
            *o++ = (char)0xBD;
            i++;
            continue;
        }
        memcpy(o, u + i, k);
        o += k;
        i += k;
    }
    w->len = (size_t)(o - w->buf);
    w->buf[w->len] = '\0';
}

void jsonw_strn(struct jsonw *w, const char *s, size_t n)
{
    before_value(w);
    put(w, '"');
    jsonw_escape(w, s, n);
    put(w, '"');
}

void jsonw_str(struct jsonw *w, const char *s)
{
    if (!s)
        jsonw_null(w);
    else
        jsonw_strn(w, s, strlen(s));
}

char *jsonw_digits_before(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

void jsonw_uint(struct jsonw *w, uint64_t v)
{
    char tmp[24], *p = jsonw_digits_before(tmp + sizeof tmp, v);
    before_value(w);
    jsonw_append(w, p, (size_t)(tmp + sizeof tmp - p));
}

void jsonw_int(struct jsonw *w, int64_t v)
{
    char tmp[24], *p = jsonw_digits_before(tmp + sizeof tmp, v < 0 ? -(uint64_t)v : (uint64_t)v);
    if (v < 0)
        *--p = '-';
    before_value(w);
    jsonw_append(w, p, (size_t)(tmp + sizeof tmp - p));
}

/* v with exactly `decimals` decimals as %f prints it, without stdio when that is provably the
 * same: v * 10^decimals is then within 2^-13 of the exact product, so unless its fraction is
 * within 2^-12 of one half, rounding it rounds the exact value the same way. Returns the length,
 * or 0 to use snprintf. */
static int fixed_fast(double v, int decimals, char *buf)
{
    static const double scale[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    double x = v * scale[decimals];
    double a = x < 0 ? -x : x;
    if (!(a < 1099511627776.0)) /* 2^40 */
        return 0;
    uint64_t n = (uint64_t)a;
    double f = a - (double)n;
    if (f > 0.5 - 1.0 / 4096 && f < 0.5 + 1.0 / 4096)
        return 0;
    n += f > 0.5;
    char tmp[32], *end = tmp + sizeof tmp, *p = end;
    for (int i = 0; i < decimals; i++) {
        *--p = (char)('0' + n % 10);
        n /= 10;
    }
    *--p = '.';
    p = jsonw_digits_before(p, n);
    if (x < 0)
        *--p = '-';
    int len = (int)(end - p);
    memcpy(buf, p, (size_t)len);
    return len;
}

int jsonw_fixed(double v, int decimals, char *buf)
{
    int n = fixed_fast(v, decimals, buf);
    /* %f never uses an exponent; resmon-run never calls setlocale(LC_NUMERIC), so the decimal
     * point is '.'. */
    if (!n)
        n = snprintf(buf, JSONW_FIXED_MAX, "%.*f", decimals, v);
    return n < 0 || n >= JSONW_FIXED_MAX ? -1 : n;
}

void jsonw_double(struct jsonw *w, double v, int decimals)
{
    if (!isfinite(v)) {
        jsonw_null(w);
        return;
    }
    if (decimals < 1)
        decimals = 1;
    if (decimals > 9)
        decimals = 9;
    char tmp[JSONW_FIXED_MAX];
    int n = jsonw_fixed(v, decimals, tmp);
    if (n < 0) {
        jsonw_null(w);
        return;
    }
    while (n > 2 && tmp[n - 1] == '0' && tmp[n - 2] != '.')
        n--;
    if (n == 2 && tmp[0] == '-' && tmp[1] == '0')
        n = 1, tmp[0] = '0';
    if (n == 4 && memcmp(tmp, "-0.0", 4) == 0) /* negative zero reads oddly */
        memmove(tmp, tmp + 1, (size_t)--n);
    before_value(w);
    jsonw_append(w, tmp, (size_t)n);
}

void jsonw_bool(struct jsonw *w, bool v)
{
    before_value(w);
    jsonw_append(w, v ? "true" : "false", v ? 4 : 5);
}

void jsonw_null(struct jsonw *w)
{
    before_value(w);
    jsonw_append(w, "null", 4);
}

void jsonw_raw(struct jsonw *w, const char *json, size_t n)
{
    before_value(w);
    jsonw_append(w, json, n);
}

void jsonw_kv_str(struct jsonw *w, const char *key, const char *s) { jsonw_key(w, key), jsonw_str(w, s); }
void jsonw_kv_strn(struct jsonw *w, const char *key, const char *s, size_t n) { jsonw_key(w, key), jsonw_strn(w, s, n); }
void jsonw_kv_int(struct jsonw *w, const char *key, int64_t v) { jsonw_key(w, key), jsonw_int(w, v); }
void jsonw_kv_uint(struct jsonw *w, const char *key, uint64_t v) { jsonw_key(w, key), jsonw_uint(w, v); }
void jsonw_kv_double(struct jsonw *w, const char *key, double v, int decimals) { jsonw_key(w, key), jsonw_double(w, v, decimals); }
void jsonw_kv_bool(struct jsonw *w, const char *key, bool v) { jsonw_key(w, key), jsonw_bool(w, v); }
