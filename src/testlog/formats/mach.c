/* mach.c — the mach formatter (test-logs.md, format 3): what `./mach test` prints.
 *
 *    0:01.23 SUITE_START: mochitest-plain - running 3 tests
 *    0:01.23 TEST_START: dom/a.html
 *    0:01.70 TEST_END: FAIL, expected PASS - got 3
 *    0:01.70 TEST_END: Test OK. Subtests passed 3/3. Unexpected 0      (older versions)
 *    0:02.00 CRASH: pid:123. Test:dom/a.html. Minidump analysed:False. Signature:[@ foo]
 *    0:02.10 ERROR some message                                        (log lines)
 *    0:03.00 SUITE_END
 *
 * The time prefix is minutes:seconds since the harness started, with no anchor to the wall clock,
 * so events are timed by arrival. TEST_END names no test: the core closes the most recent one.
 */
#include "testlog/event.h"

#include <string.h>

#include "testlog/testlog.h"

static bool starts(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(s, lit, k) == 0;
}

static bool dig(char c) { return c >= '0' && c <= '9'; }

/* Length of the " 0:01.23 " prefix, 0 if absent. */
static size_t time_prefix(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && i < 8 && s[i] == ' ')
        i++;
    size_t d = i;
    while (i < n && i - d < 8 && dig(s[i]))
        i++;
    if (i == d || i + 7 > n)
        return 0;
    if (s[i] != ':' || !dig(s[i + 1]) || !dig(s[i + 2]) || s[i + 3] != '.' || !dig(s[i + 4]) ||
        !dig(s[i + 5]) || s[i + 6] != ' ')
        return 0;
    return i + 7;
}

static size_t word_len(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && ((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_'))
        i++;
    return i;
}

static const char *find(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (s[i] == needle[0] && memcmp(s + i, needle, k) == 0)
            return s + i;
    return NULL;
}

static int test_end(const char *s, size_t n, struct tl_event *ev)
{
    if (starts(s, n, "Test ")) /* older formatter */
        s += 5, n -= 5;
    size_t w = word_len(s, n);
    if (!w)
        return 0;
    tl_event_init(ev, TLE_TEST_END);
    ev->status = tl_str_make(s, w);
    ev->expected_known = true;
    const char *p = s + w;
    size_t left = n - w;
    if (starts(p, left, ", expected ")) {
        p += 11, left -= 11;
        size_t e = word_len(p, left);
        ev->expected = tl_str_make(p, e);
        ev->unexpected = !(e == w && memcmp(p, s, w) == 0);
        p += e, left -= e;
    }
    if (starts(p, left, " - "))
        ev->message = tl_str_make(p + 3, left - 3);
    return 1;
}

static int crash(const char *s, size_t n, struct tl_event *ev)
{
    tl_event_init(ev, TLE_CRASH);
    const char *t = find(s, n, "Test:");
    if (t) {
        t += 5;
        const char *e = find(t, (size_t)(s + n - t), ". ");
        ev->id = tl_str_make(t, e ? (size_t)(e - t) : (size_t)(s + n - t));
    }
    const char *sig = find(s, n, "[@ ");
    if (sig) {
        const char *e = memchr(sig, ']', (size_t)(s + n - sig));
        if (e)
            ev->signature = tl_str_make(sig + 3, (size_t)(e - sig - 3));
    } else if ((sig = find(s, n, "Signature:"))) {
        sig += 10;
        ev->signature = tl_str_make(sig, (size_t)(s + n - sig));
    }
    ev->reason = tl_str_make(s, n);
    return 1;
}

static int mach_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                      struct tl_event *ev)
{
    (void)state;
    (void)arrival_ns;
    if (len < 9 || !(line[0] == ' ' || dig(line[0])))
        return 0;
    size_t pre = time_prefix(line, len);
    if (!pre)
        return 0;
    const char *s = line + pre;
    size_t n = len - pre;
    size_t w = word_len(s, n);
    if (!w)
        return 0;
    const char *rest = s + w;
    size_t rn = n - w;
    bool colon = starts(rest, rn, ": ");
    if (colon)
        rest += 2, rn -= 2;

    if (w == 10 && !memcmp(s, "TEST_START", 10) && colon && rn) {
        tl_event_init(ev, TLE_TEST_START);
        ev->id = tl_str_make(rest, rn);
        return 1;
    }
    if (w == 8 && !memcmp(s, "TEST_END", 8) && colon)
        return test_end(rest, rn, ev);
    if (w == 11 && !memcmp(s, "SUITE_START", 11)) {
        tl_event_init(ev, TLE_SUITE_START);
        const char *dash = find(rest, rn, " - ");
        ev->id = tl_str_make(rest, dash ? (size_t)(dash - rest) : rn);
        if (!ev->id.n)
            ev->id = tl_str_make("suite", 5);
        return 1;
    }
    if (w == 9 && !memcmp(s, "SUITE_END", 9)) {
        tl_event_init(ev, TLE_SUITE_END);
        return 1;
    }
    if (w == 5 && !memcmp(s, "CRASH", 5) && colon)
        return crash(rest, rn, ev);
    if (((w == 5 && !memcmp(s, "ERROR", 5)) || (w == 7 && !memcmp(s, "WARNING", 7)) ||
         (w == 8 && !memcmp(s, "CRITICAL", 8)) || (w == 4 && !memcmp(s, "INFO", 4)) ||
         (w == 5 && !memcmp(s, "DEBUG", 5))) &&
        rn && rest[0] == ' ') {
        tl_event_init(ev, TLE_LOG);
        ev->level = tl_str_make(s, w);
        ev->message = tl_str_make(rest + 1, rn - 1);
        return 1;
    }
    return 0;
}

const struct tl_format tl_format_mach = {
    .name = "mach",
    .bit = TL_FMT_MACH,
    .state_size = 0,
    .parse = mach_parse,
    .release = NULL,
    .first_bytes = " 0123456789",
};
