/* meson test console output (testlog/formats.h has the result mapping).
 *
 *    1/11 project / name   OK              0.27s                  → PASS, duration 270 ms
 *    4/11 project / name   FAIL            0.37s   exit status 1  → FAIL, message "exit status 1"
 *         ... FAIL ... killed by signal 11 SIGSEGV                → CRASH, message the reason
 *    SKIP → SKIP; TIMEOUT → TIMEOUT; EXPECTEDFAIL → FAIL expected FAIL; UNEXPECTEDPASS → PASS
 *    expected FAIL; ERROR → ERROR; INTERRUPT → INCOMPLETE is left to the core (no result)
 *    1/11 project / name   RUNNING                                → TLE_TEST_START (-v)
 *
 * The id is the name as meson prints it ("project:suite / name" when the project has several
 * suites, else the test's name alone; spaces kept, the column's padding trimmed). "Summary of Failures:" repeats the failed results: nothing is a result from
 * there to the counts that close it ("Ok: N"). meson's own lines for a TAP test's points
 * ("▶ 10/11 - name OK") are not results.
 *
 * A test's output, as -v and --print-errorlogs show it (after its result, or live with one
 * process), lies between a rule with scissors and a plain rule:
 *    ――――――――――――――― ✀  ―――――――――――――――
 *    [ RUN      ] Calc.Adds                  the test's own output: no format reads it
 *    ―――――――――――――――――――――――――――――――――
 * It is that test's output whatever harness the test runs (a GoogleTest binary, a TAP script):
 * the test is one meson test, as in meson's own report. A block that never closes stops being
 * withheld after MESON_OUTPUT_MAX lines.
 */
#include "testlog/formats.h"

#include <math.h>

#include "testlog/testlog.h"

#define MESON_OUTPUT_MAX 1000000

struct meson_state {
    bool in_summary;
    unsigned long output; /* lines read in a test's output block, 0: in none */
};

#define RULE "\xe2\x80\x95" /* U+2015, the bar meson draws its rules with */

/* A rule of meson's output blocks: bars only (the close), or bars around " ✀ " (the open). */
static bool rule(const char *line, size_t len, bool scissors)
{
    size_t bars = 0, i = 0;
    while (i + 3 <= len && !memcmp(line + i, RULE, 3))
        i += 3, bars++;
    if (bars < 8)
        return false;
    if (!scissors)
        return i == len;
    return TL_PREFIX(line + i, len - i, " \xe2\x9c\x80 ");
}

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
    if (st->output) {
        if (rule(line, len, false) || ++st->output > MESON_OUTPUT_MAX)
            st->output = 0;
        return 0;
    }
    if (rule(line, len, true)) {
        st->output = 1;
        return 0;
    }
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
        if (!name.n)
            return 0;
        /* a project with one suite names its tests alone ("1/2 calc OK  0.34s"): then the result
         * column's own width is the evidence (the word padded to 16 bytes before the duration,
         * RUNNING to 14 before the line's end) */
        if (!memmem(name.p, name.n, " / ", 3) &&
            (running ? (size_t)(line + len - wd.p) != 14 : words[w + 1].p - wd.p != 16))
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
        if (secs >= 0) /* "-1.00s" is no duration */
            ev->t.duration_ms = secs * 1000;
        if (oc != TL_PASSED)
            ev->message = reason;
        return 1;
    }
    return 0;
}

/* In a test's output block: every line is the test's (captures: no other format reads it). */
static bool meson_busy(const void *state) { return ((const struct meson_state *)state)->output > 0; }

const struct tl_format tl_format_meson = {
    .name = "meson",
    .bit = TL_FMT_MESON,
    .state_size = sizeof(struct meson_state),
    .parse = meson_parse,
    .release = NULL,
    /* " 1/11 ...", "11/11 ...", "Summary of Failures:", "Ok:", "――― ✀ ―――" */
    .first_bytes = "123456789",
    .pairs = (const char *const[]){" 1", " 2", " 3", " 4", " 5", " 6", " 7", " 8", " 9", "  ",
                                   "Su", "Ok", "\xe2\x80", NULL},
    .busy = meson_busy,
    .captures = meson_busy,
};
