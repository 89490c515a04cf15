/* jscan.c — see jscan.h. */
#include "base/jscan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"

#define MAX_DEPTH 64

static bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* p at the opening quote. Returns the position after the closing quote, or NULL. */
const char *js_scan_string(const char *p, const char *e, bool *ret_escaped)
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

static const char *scan_number(const char *p, const char *e)
{
    if (p < e && *p == '-')
        p++;
    if (p >= e)
        return NULL;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (p < e && js_is_digit(*p))
            p++;
    else
        return NULL;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || !js_is_digit(*p))
            return NULL;
        while (p < e && js_is_digit(*p))
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || !js_is_digit(*p))
            return NULL;
        while (p < e && js_is_digit(*p))
            p++;
    }
    return p;
}

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
    p = js_skip_ws(p + 1, e);
    if (p < e && *p == close)
        return p + 1;
    for (;;) {
        if (obj) {
            if (p >= e || *p != '"' || !(p = js_scan_string(p, e, NULL)))
                return NULL;
            p = js_skip_ws(p, e);
            if (p >= e || *p != ':')
                return NULL;
            p = js_skip_ws(p + 1, e);
        }
        if (!(p = js_scan_value(p, e, depth + 1)))
            return NULL;
        p = js_skip_ws(p, e);
        if (p >= e)
            return NULL;
        if (*p == close)
            return p + 1;
        if (*p != ',')
            return NULL;
        p = js_skip_ws(p + 1, e);
    }
}

/* p at the first byte of a value (no leading blanks). Returns the position after it, or NULL. */
const char *js_scan_value(const char *p, const char *e, int depth)
{
    if (p >= e)
        return NULL;
    switch (*p) {
    case '"':
        return js_scan_string(p, e, NULL);
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

int js_obj_begin(struct js_iter *it, const char *p, const char *e)
{
    p = js_skip_ws(p, e);
    if (p >= e || *p != '{')
        return -1;
    it->p = js_skip_ws(p + 1, e);
    it->e = e;
    it->first = true;
    it->done = false;
    return 0;
}

int js_obj_next(struct js_iter *it, struct js_member *m)
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
        p = js_skip_ws(p + 1, e);
    }
    it->first = false;
    if (p >= e || *p != '"')
        return -1;
    const char *k = p;
    if (!(p = js_scan_string(p, e, &m->key_escaped)))
        return -1;
    m->key = k + 1;
    m->key_len = (size_t)(p - k - 2);
    p = js_skip_ws(p, e);
    if (p >= e || *p != ':')
        return -1;
    p = js_skip_ws(p + 1, e);
    const char *v = p;
    if (!(p = js_scan_value(p, e, 1)))
        return -1;
    m->val = v;
    m->val_len = (size_t)(p - v);
    it->p = js_skip_ws(p, e);
    return 1;
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

/* Decode the raw text of a JSON string (validated) and append it re-escaped canonically, so two
 * spellings of one name intern to one stringArray entry. */
void js_canonical_string(struct jsonw *w, const char *s, size_t n)
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
