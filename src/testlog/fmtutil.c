/* Helpers shared by the test-log format parsers (testlog/formats.h). */
#include "testlog/formats.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

void tl_set_result(struct tl_event *ev, struct tl_str id, struct tl_str scope,
                   enum tl_outcome outcome)
{
    static const struct {
        const char *status, *expected;
        bool unexpected;
    } map[] = {
        [TL_PASSED] = {"PASS", NULL, false},
        [TL_FAILED] = {"FAIL", "PASS", true},
        [TL_SKIPPED] = {"SKIP", NULL, false},
        [TL_KNOWN_FAIL] = {"FAIL", "FAIL", false},
        [TL_UNEXPECTED_PASS] = {"PASS", "FAIL", true},
        [TL_ERRORED] = {"ERROR", "PASS", true},
        [TL_TIMED_OUT] = {"TIMEOUT", "PASS", true},
        [TL_CRASHED] = {"CRASH", "PASS", true},
    };
    tl_event_init(ev, TLE_TEST_END);
    ev->id = id;
    ev->scope = scope;
    ev->status = tl_str_make(map[outcome].status, strlen(map[outcome].status));
    if (map[outcome].expected)
        ev->expected = tl_str_make(map[outcome].expected, strlen(map[outcome].expected));
    ev->unexpected = map[outcome].unexpected;
    ev->expected_known = true;
}

struct tl_str tl_trim(struct tl_str s)
{
    while (s.n && (s.p[0] == ' ' || s.p[0] == '\t')) {
        s.p++;
        s.n--;
    }
    while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t'))
        s.n--;
    return s;
}

struct tl_str tl_copy(char *dst, size_t cap, struct tl_str s)
{
    size_t n = s.n < cap ? s.n : cap;
    if (n)
        memcpy(dst, s.p, n);
    return tl_str_make(dst, n);
}

int tl_case_start(struct tl_case *c, struct tl_str name, uint64_t now_ns, struct tl_event *ev)
{
    c->cur ^= 1;
    c->name_n = tl_copy(c->name[c->cur], sizeof c->name[0], name).n;
    c->msg_n[c->cur] = 0;
    c->open = true;
    c->failed = c->in_failure = false;
    c->last_ns = now_ns;
    tl_event_init(ev, TLE_TEST_START);
    ev->id = tl_case_name(c);
    tl_at_earlier_line(ev, c->header_ns);
    return 1;
}

int tl_case_end(struct tl_case *c, enum tl_outcome oc, struct tl_event *ev)
{
    if (!c->open)
        return 0;
    c->open = c->in_failure = false;
    tl_set_result(ev, tl_case_name(c), tl_str_make(NULL, 0), oc);
    if (oc != TL_PASSED && c->msg_n[c->cur])
        ev->message = tl_str_make(c->msg[c->cur], c->msg_n[c->cur]);
    tl_at_earlier_line(ev, c->last_ns);
    return 1;
}

struct tl_str tl_json_copy(const struct cJSON *o, const char *key, char *buf, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || !v->valuestring)
        return tl_str_make(buf, 0);
    return tl_copy(buf, cap, tl_str_make(v->valuestring, strlen(v->valuestring)));
}

bool tl_rule(const char *s, size_t n, char c)
{
    if (n < 20)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] != c)
            return false;
    return true;
}

bool tl_append_line(char *dst, size_t cap, size_t *n, struct tl_str line)
{
    size_t have = *n;
    if (have && have < cap)
        dst[have++] = '\n';
    size_t room = cap > have ? cap - have : 0, k = line.n <= room ? line.n : room;
    if (k < line.n) /* never half a character */
        while (k && ((unsigned char)line.p[k] & 0xC0) == 0x80)
            k--;
    if (k)
        memcpy(dst + have, line.p, k);
    *n = have + k;
    return k == line.n && *n < cap;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool tl_parse_number(struct tl_str s, double *ret)
{
    size_t i = 0;
    double v = 0, scale = 1;
    bool neg = false, any = false;
    if (i < s.n && (s.p[i] == '-' || s.p[i] == '+'))
        neg = s.p[i++] == '-';
    for (; i < s.n && is_digit(s.p[i]); i++, any = true)
        v = v * 10 + (s.p[i] - '0');
    if (i < s.n && s.p[i] == '.')
        for (i++; i < s.n && is_digit(s.p[i]); i++, any = true)
            v += (s.p[i] - '0') * (scale /= 10);
    if (!any)
        return false;
    if (i < s.n && (s.p[i] == 'e' || s.p[i] == 'E')) {
        i++;
        bool eneg = false;
        int e = 0;
        if (i < s.n && (s.p[i] == '-' || s.p[i] == '+'))
            eneg = s.p[i++] == '-';
        if (i >= s.n || !is_digit(s.p[i]))
            return false;
        for (; i < s.n && is_digit(s.p[i]); i++)
            if (e < 400)
                e = e * 10 + (s.p[i] - '0');
        for (; e > 0 && v != 0 && isfinite(v); e--)
            v = eneg ? v / 10 : v * 10;
    }
    if (i != s.n || !isfinite(v))
        return false;
    *ret = neg ? -v : v;
    return true;
}

static bool digits(const char *p, int n, int *ret)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit(p[i]))
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *ret = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool tl_parse_rfc3339(struct tl_str s, double *ret_ms)
{
    const char *p = s.p;
    int y, mo, d, h, mi, sec;
    if (s.n < 20 || !digits(p, 4, &y) || p[4] != '-' || !digits(p + 5, 2, &mo) || p[7] != '-' ||
        !digits(p + 8, 2, &d) || (p[10] != 'T' && p[10] != 't' && p[10] != ' ') ||
        !digits(p + 11, 2, &h) || p[13] != ':' || !digits(p + 14, 2, &mi) || p[16] != ':' ||
        !digits(p + 17, 2, &sec))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return false;
    size_t i = 19;
    double frac = 0, scale = 1;
    if (i < s.n && p[i] == '.') {
        i++;
        if (i >= s.n || !is_digit(p[i]))
            return false;
        for (; i < s.n && is_digit(p[i]); i++)
            frac += (p[i] - '0') * (scale /= 10);
    }
    int off = 0;
    if (i < s.n && (p[i] == 'Z' || p[i] == 'z')) {
        i++;
    } else if (i + 6 <= s.n && (p[i] == '+' || p[i] == '-') && p[i + 3] == ':') {
        int oh, om;
        if (!digits(p + i + 1, 2, &oh) || !digits(p + i + 4, 2, &om) || oh > 23 || om > 59)
            return false;
        off = (oh * 60 + om) * (p[i] == '-' ? -1 : 1);
        i += 6;
    } else {
        return false;
    }
    if (i != s.n)
        return false;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off * 60;
    *ret_ms = (double)secs * 1000.0 + frac * 1000.0;
    return true;
}

bool tl_iprefix(struct tl_str s, const char *lit)
{
    size_t n = strlen(lit);
    if (s.n < n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s.p[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != lit[i])
            return false;
    }
    return true;
}

/* What jsonw_double(v, 3) writes: "%.3f", trailing zeros trimmed but one kept, no "-0.0". */
static size_t ms3_printf(char *buf, double v)
{
    int n = snprintf(buf, 32, "%.3f", v);
    if (n < 0 || n >= 32) {
        memcpy(buf, "null", 4);
        return 4;
    }
    while (n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
        n--;
    if (n == 4 && memcmp(buf, "-0.0", 4) == 0)
        memmove(buf, buf + 1, (size_t)--n);
    return (size_t)n;
}

size_t tl_fmt_ms3(char *buf, bool neg, uint64_t ns)
{
    /* Away from a tie (ns % 1000 == 500) and below 2^53 ns (relative error 2^-53 < 1 ns), the
     * correctly rounded double ns/1e6 lies on the same side of every rounding boundary as the
     * exact value, so rounding to microseconds in integers gives printf's digits. */
    if (ns % 1000 == 500 || ns >= UINT64_C(9000000000000000)) {
        double v = (double)ns / 1e6;
        return ms3_printf(buf, neg ? -v : v);
    }
    uint64_t us = (ns + 500) / 1000;
    char tmp[32];
    size_t k = sizeof tmp;
    unsigned frac = (unsigned)(us % 1000);
    uint64_t ip = us / 1000;
    /* fraction: three digits, trailing zeros trimmed, at least one kept */
    char f[3] = {(char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10)};
    size_t fl = f[2] != '0' ? 3 : f[1] != '0' ? 2 : 1;
    while (fl > 0) /* right to left */
        tmp[--k] = f[--fl];
    tmp[--k] = '.';
    do {
        tmp[--k] = (char)('0' + ip % 10);
        ip /= 10;
    } while (ip);
    if (neg && us)
        tmp[--k] = '-';
    size_t len = sizeof tmp - k;
    memcpy(buf, tmp + k, len);
    return len;
}

bool tl_totals(struct tl_event *ev, const char *harness, struct tl_str s, const char *sep,
               const char *const *words)
{
    struct tl_counts c = {-1, -1, -1, -1};
    int64_t sum = 0;
    size_t seplen = strlen(sep), i = 0, items = 0;
    while (i < s.n) {
        size_t e = i;
        while (e < s.n && !(e + seplen <= s.n && !memcmp(s.p + e, sep, seplen)))
            e++;
        struct tl_str item = tl_trim(tl_str_make(s.p + i, e - i));
        int64_t n = 0;
        size_t d = 0;
        while (d < item.n && item.p[d] >= '0' && item.p[d] <= '9' && n <= TL_COUNT_MAX)
            n = n * 10 + (item.p[d++] - '0');
        if (!d || n > TL_COUNT_MAX || d + 1 >= item.n || item.p[d] != ' ')
            return false;
        struct tl_str word = tl_str_make(item.p + d + 1, item.n - d - 1);
        size_t w = 0;
        while (w < word.n && word.p[w] != ' ')
            w++;
        word.n = w;
        const char *const *k = words;
        while (*k && !tl_str_eq(word, k[0]))
            k += 2;
        if (!*k)
            return false;
        int64_t *to = NULL;
        switch (k[1][0]) {
        case 'p': to = &c.passed; break;
        case 'f': to = &c.failed; break;
        case 's': to = &c.skipped; break;
        case 't': to = &c.total; break;
        default: break;
        }
        if (to)
            *to = (*to < 0 ? 0 : *to) + n;
        if (k[1][0] != 't' && k[1][0] != '-')
            sum += n;
        if (sum > TL_COUNT_MAX || (to && *to > TL_COUNT_MAX))
            return false; /* no harness counts so many: not a count */
        items++;
        i = e + (e < s.n ? seplen : 0);
    }
    if (!items)
        return false;
    if (c.total < 0)
        c.total = sum;
    tl_event_init(ev, TLE_TOTALS);
    ev->name = tl_str_make(harness, strlen(harness));
    ev->message = s;
    ev->counts = c;
    return true;
}
