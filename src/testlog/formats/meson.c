/* meson test console output (testlog/formats.h has the result mapping).
 *
 *    1/11 project / name   OK              0.27s                  → PASS, duration 270 ms
 *    4/11 project / name   FAIL            0.37s   exit status 1  → FAIL, message "exit status 1"
 *         ... FAIL ... killed by signal 11 SIGSEGV                → CRASH, message the reason
 *    SKIP → SKIP; TIMEOUT → TIMEOUT; EXPECTEDFAIL → FAIL expected FAIL; UNEXPECTEDPASS → PASS
 *    expected FAIL; ERROR → ERROR; INTERRUPT → INCOMPLETE is left to the core (no result)
 *    1/11 project / name   RUNNING                                → TLE_TEST_START (-v)
 *
 * The id is the name as meson prints it ("project:suite / name", spaces kept, the column's
 * padding trimmed). "Summary of Failures:" repeats the failed results: nothing is a result from
 * there to the counts that close it ("Ok: N"). meson's own lines for a TAP test's points
 * ("▶ 10/11 - name OK") and the output blocks of -v / --print-errorlogs are not results.
 */
#include "testlog/formats.h"

#include <math.h>

#include "testlog/testlog.h"

struct meson_state {
    bool in_summary;
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static const struct {
    const char *word;
    enum tl_outcome oc;
} results[] = {
    {"OK", TL_PASSED},           {"FAIL", TL_FAILED},
    {"SKIP", TL_SKIPPED},        {"TIMEOUT", TL_TIMED_OUT},
    {"EXPECTEDFAIL", TL_KNOWN_FAIL}, {"UNEXPECTEDPASS", TL_UNEXPECTED_PASS},
    {"ERROR", TL_ERRORED},
};

static int meson_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                       struct tl_event *ev)
{
    (void)arrival_ns;
    struct meson_state *st = state;
    size_t i = 0;
    while (i < len && i < 8 && line[i] == ' ')
        i++;
    if (i == len)
        return 0;
    if (!is_digit(line[i])) {
        if (TL_PREFIX(line, len, "Summary of Failures:"))
            st->in_summary = true;
        else if (TL_PREFIX(line, len, "Ok:"))
            st->in_summary = false;
        return 0;
    }
    /* "K/N ": meson counts from 1 and pads K with spaces, never zeros, so a K starting with '0'
     * is not its own (nor one its prefilter pairs, " 1" to " 9", would let through) */
    size_t d = i;
    if (line[i] == '0')
        return 0;
    while (i < len && is_digit(line[i]))
        i++;
    if (i == d || i >= len || line[i++] != '/')
        return 0;
    d = i;
    while (i < len && is_digit(line[i]))
        i++;
    if (i == d || i >= len || line[i++] != ' ')
        return 0;
    /* from the right: [reason] after the duration "N.NNs", the result word before it */
    struct tl_str rest = tl_trim(tl_str_make(line + i, len - i));
    struct tl_str words[64];
    size_t nw = 0;
    for (size_t a = 0; a < rest.n && nw < 64;) {
        while (a < rest.n && rest.p[a] == ' ')
            a++;
        size_t b = a;
        while (b < rest.n && rest.p[b] != ' ')
            b++;
        if (b > a)
            words[nw++] = tl_str_make(rest.p + a, b - a);
        a = b;
    }
    /* the result word is the first, after the name, followed by a duration or nothing */
    for (size_t w = 1; w < nw; w++) {
        struct tl_str wd = words[w];
        bool running = tl_str_eq(wd, "RUNNING");
        int r = -1;
        for (size_t k = 0; k < sizeof results / sizeof results[0] && !running; k++)
            if (tl_str_eq(wd, results[k].word))
                r = (int)k;
        if (r < 0 && !running)
            continue;
        double secs = NAN;
        if (w + 1 < nw) {
            struct tl_str t = words[w + 1];
            if (t.n < 2 || t.p[t.n - 1] != 's' || !tl_parse_number(tl_str_make(t.p, t.n - 1), &secs))
                continue;
        }
        if (running != (w + 1 == nw))
            continue; /* a result has its duration, RUNNING none */
        /* the name: up to the padding before the result word */
        struct tl_str name = tl_trim(tl_str_make(rest.p, (size_t)(wd.p - rest.p)));
        if (!name.n || !memmem(name.p, name.n, " / ", 3))
            return 0;
        if (running) {
            tl_event_init(ev, TLE_TEST_START);
            ev->id = name;
            return 1;
        }
        if (st->in_summary)
            return 0;
        struct tl_str reason = tl_str_make(NULL, 0);
        if (w + 2 < nw)
            reason = tl_trim(tl_str_make(words[w + 2].p, (size_t)(rest.p + rest.n - words[w + 2].p)));
        enum tl_outcome oc = results[r].oc;
        if (oc == TL_FAILED && TL_PREFIX(reason.p, reason.n, "killed by signal"))
            oc = TL_CRASHED;
        tl_set_result(ev, name, tl_str_make(NULL, 0), oc);
        ev->t.duration_ms = secs * 1000;
        if (oc != TL_PASSED)
            ev->message = reason;
        return 1;
    }
    return 0;
}

const struct tl_format tl_format_meson = {
    .name = "meson",
    .bit = TL_FMT_MESON,
    .state_size = sizeof(struct meson_state),
    .parse = meson_parse,
    .release = NULL,
    /* " 1/11 ...", "11/11 ...", "Summary of Failures:", "Ok:" */
    .first_bytes = "123456789",
    .pairs = (const char *const[]){" 1", " 2", " 3", " 4", " 5", " 6", " 7", " 8", " 9", "  ",
                                   "Su", "Ok", NULL},
};
