/* tbpl.c — TBPL text, as mozlog's TBPL formatter writes it (test-logs.md, format 2).
 *
 *   TEST-START | id                                      opens
 *   TEST-PASS | id | took 12ms                           expected result, closes
 *   TEST-KNOWN-INTERMITTENT-FAIL | id | took 12ms        closes, counts as expected
 *   TEST-UNEXPECTED-FAIL | id | message                  unexpected result ...
 *   TEST-INFO took 12ms                                  ... which this line completes: the
 *                                                        expected status was PASS or OK (taken
 *                                                        as PASS)
 *   TEST-INFO expected TIMEOUT | took 12ms               ... or this one, naming any other
 *                                                        expected status ("TEST-INFO" alone or
 *                                                        "TEST-INFO expected X" when the
 *                                                        formatter did not see the start)
 *   TEST-PASS | id | subtest text                        a subtest (no "took")
 *   PROCESS-CRASH | reason [signature] | id              crash
 *   SUITE-START | Running 5 tests / SUITE-END | took 3s  suite
 *
 * An unexpected line is a test end only when a TEST-INFO line follows (mozlog's formatter writes
 * one after every unexpected test result, the message and stack lines in between); otherwise it
 * was an unexpected subtest. So it is held in the state and resolved by the next TBPL line (with
 * its own arrival time: TL_AT_EARLIER_LINE).
 *
 * TBPL on stdout beside pytest's own output (mozlog's pytest plugin with --log-tbpl=-): pytest's
 * progress character (".", "F", "E", "s", "x", "X") and the file name it announces ("tests/a.py ")
 * come first on the line; they are skipped.
 */
#include "testlog/event.h"

#include <stdlib.h>
#include <string.h>

#include "testlog/testlog.h"

#define TBPL_ID_MAX 4096
#define TBPL_MSG_MAX 4096

struct tbpl_state {
    bool pending;
    uint64_t pending_arrival;
    size_t id_n, status_n, msg_n;
    char id[TBPL_ID_MAX], status[64], msg[TBPL_MSG_MAX];
};

static const char *find(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (s[i] == needle[0] && memcmp(s + i, needle, k) == 0)
            return s + i;
    return NULL;
}

static bool starts(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(s, lit, k) == 0;
}

/* "took 12ms" (also "took 12.5ms") → ms */
static bool parse_took(const char *s, size_t n, double *ret)
{
    while (n && s[0] == ' ')
        s++, n--;
    while (n && s[n - 1] == ' ')
        n--;
    if (!starts(s, n, "took ") || n < 8 || memcmp(s + n - 2, "ms", 2) != 0)
        return false;
    double v = 0, scale = 0;
    for (size_t i = 5; i < n - 2; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            if (scale) {
                v += (c - '0') * scale;
                scale /= 10;
            } else
                v = v * 10 + (c - '0');
        } else if (c == '.' && !scale)
            scale = 0.1;
        else
            return false;
    }
    *ret = v;
    return true;
}

static bool status_word(const char *s, size_t n)
{
    if (!n || n >= 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

static size_t keep(char *dst, size_t cap, const char *s, size_t n)
{
    if (n > cap)
        n = cap;
    memcpy(dst, s, n);
    return n;
}

/* Split "A | B | rest" after the head word: fields separated by " | ". */
struct fields {
    struct tl_str f[3];
    int n;
};

static void split(const char *s, size_t n, struct fields *out)
{
    out->n = 0;
    while (out->n < 3) {
        const char *sep = out->n < 2 ? find(s, n, " | ") : NULL;
        if (!sep) {
            out->f[out->n++] = tl_str_make(s, n);
            return;
        }
        out->f[out->n++] = tl_str_make(s, (size_t)(sep - s));
        n -= (size_t)(sep - s) + 3;
        s = sep + 3;
    }
}

/* The held unexpected result, as an unexpected subtest. */
static int flush_pending(struct tbpl_state *st, struct tl_event *ev)
{
    if (!st->pending)
        return 0;
    st->pending = false;
    tl_event_init(ev, TLE_SUBTEST);
    ev->id = tl_str_make(st->id, st->id_n);
    ev->status = tl_str_make(st->status, st->status_n);
    ev->message = tl_str_make(st->msg, st->msg_n);
    /* "subtest - message" */
    const char *dash = find(st->msg, st->msg_n, " - ");
    if (dash) {
        ev->subtest = tl_str_make(st->msg, (size_t)(dash - st->msg));
        ev->message = tl_str_make(dash + 3, st->msg_n - (size_t)(dash - st->msg) - 3);
    }
    ev->expected_known = true;
    ev->unexpected = true;
    tl_at_earlier_line(ev, st->pending_arrival);
    return 1;
}

static bool is_progress(char c) { return c && strchr(".FEsxX", c); }

/* Where the TBPL text of a line starts: after pytest's file name and progress character when
 * those come first (see the top). len when the line holds none. */
static size_t tbpl_offset(const char *line, size_t len)
{
    size_t i = 0;
    const char *sp = memchr(line, ' ', len < 4096 ? len : 4096);
    if (sp && sp - line > 3 && !memcmp(sp - 3, ".py", 3))
        i = (size_t)(sp - line) + 1;
    if (i < len && is_progress(line[i]))
        i++;
    if (starts(line + i, len - i, "TEST-") || starts(line + i, len - i, "SUITE-") ||
        starts(line + i, len - i, "PROCESS-CRASH"))
        return i;
    return len;
}

/* "TEST-INFO [expected X][ | ][took Nms]" (see the top): the end of the pending unexpected
 * result, with its expectation and duration. */
static int info_line(struct tbpl_state *st, const char *line, size_t len, struct tl_event *ev)
{
    const char *p = line + 9;
    size_t n = len - 9;
    while (n && *p == ' ')
        p++, n--;
    struct tl_str expected = tl_str_make("PASS", 4);
    if (starts(p, n, "expected ")) {
        const char *sep = find(p, n, " | ");
        size_t en = sep ? (size_t)(sep - p) : n;
        /* "expected | took 5ms" (the " | " inside "expected "): no status named */
        if (en > 9)
            expected = tl_str_make(p + 9, en - 9);
        n -= sep ? en + 3 : n;
        p = sep ? sep + 3 : p + n;
    }
    double took = 0;
    bool have_took = parse_took(p, n, &took);
    if (!st->pending || (n && !have_took))
        return 0;
    st->pending = false;
    tl_event_init(ev, TLE_TEST_END);
    ev->id = tl_str_make(st->id, st->id_n);
    ev->status = tl_str_make(st->status, st->status_n);
    ev->message = tl_str_make(st->msg, st->msg_n);
    ev->expected = expected;
    ev->expected_known = true;
    ev->unexpected = true;
    tl_at_earlier_line(ev, st->pending_arrival);
    if (have_took)
        ev->t.duration_ms = took;
    return 1;
}

/* "PROCESS-CRASH | ...": a crash, after the pending result. */
static int crash_line(struct tbpl_state *st, const char *line, size_t len, struct tl_event *ev)
{
    struct fields fl;
    int k = flush_pending(st, ev);
    split(line + 16, len - 16, &fl);
    struct tl_event *e = &ev[k];
    tl_event_init(e, TLE_CRASH);
    /* "reason [signature] | id", or "id | application crashed [signature]" */
    for (int i = 0; i < fl.n && i < 2; i++) {
        struct tl_str f = fl.f[i];
        const char *lb = memchr(f.p, '[', f.n);
        if (lb && f.p[f.n - 1] == ']') {
            size_t rn = (size_t)(lb - f.p);
            while (rn && f.p[rn - 1] == ' ')
                rn--;
            e->reason = tl_str_make(f.p, rn);
            e->signature = tl_str_make(lb + 1, (size_t)(f.p + f.n - lb - 2));
            if (e->signature.n >= 2 && !memcmp(e->signature.p, "@ ", 2))
                e->signature = tl_str_make(e->signature.p + 2, e->signature.n - 2);
        } else if (!e->id.n)
            e->id = f;
    }
    return k + 1;
}

static int tbpl_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                      struct tl_event *ev)
{
    struct tbpl_state *st = state;
    if (len < 8)
        return 0;
    if (!(line[0] == 'T' || line[0] == 'P' || line[0] == 'S')) {
        size_t off = tbpl_offset(line, len);
        line += off;
        len -= off;
        if (len < 8)
            return 0;
    }

    if (starts(line, len, "TEST-INFO") && (len == 9 || line[9] == ' '))
        return info_line(st, line, len, ev);

    struct fields fl;
    int k = 0;
    if (starts(line, len, "PROCESS-CRASH | "))
        return crash_line(st, line, len, ev);
    if (starts(line, len, "SUITE-START | ")) {
        k = flush_pending(st, ev);
        tl_event_init(&ev[k], TLE_SUITE_START);
        ev[k].id = tl_str_make(line + 14, len - 14);
        return k + 1;
    }
    if (starts(line, len, "SUITE-END")) {
        k = flush_pending(st, ev);
        tl_event_init(&ev[k], TLE_SUITE_END);
        return k + 1;
    }
    if (!starts(line, len, "TEST-"))
        return 0;

    const char *bar = find(line, len, " | ");
    if (!bar)
        return 0;
    const char *word = line + 5;
    size_t wn = (size_t)(bar - word);
    if (!status_word(word, wn) || (wn == 4 && !memcmp(word, "INFO", 4)) ||
        (wn == 3 && !memcmp(word, "END", 3)))
        return 0;
    split(bar + 3, len - (size_t)(bar + 3 - line), &fl);
    struct tl_str id = fl.f[0];
    if (!id.n)
        return 0;

    if (wn == 5 && !memcmp(word, "START", 5)) {
        k = flush_pending(st, ev);
        tl_event_init(&ev[k], TLE_TEST_START);
        ev[k].id = id;
        return k + 1;
    }

    bool unexpected = starts(word, wn, "UNEXPECTED-");
    bool intermittent = starts(word, wn, "KNOWN-INTERMITTENT-");
    struct tl_str status = tl_str_make(word, wn);
    if (unexpected)
        status = tl_str_make(word + 11, wn - 11);
    else if (intermittent)
        status = tl_str_make(word + 19, wn - 19);
    if (!status.n)
        return 0;
    struct tl_str rest = fl.n > 1 ? fl.f[1] : tl_str_make("", 0);
    if (fl.n > 2) /* keep the message whole: "a | b" */
        rest.n = (size_t)(fl.f[2].p + fl.f[2].n - rest.p);

    if (unexpected) {
        k = flush_pending(st, ev);
        /* leak checkers report through unexpected-failure lines */
        if ((id.n == 13 && !memcmp(id.p, "LeakSanitizer", 13)) ||
            (id.n == 9 && !memcmp(id.p, "leakcheck", 9))) {
            tl_event_init(&ev[k], TLE_LEAK);
            ev[k].name = id.n == 9 ? tl_str_make("Leaked Total", 12) : tl_str_make("LSan Leak", 9);
            ev[k].message = rest;
            return k + 1;
        }
        st->pending = true;
        st->pending_arrival = arrival_ns;
        st->id_n = keep(st->id, sizeof st->id, id.p, id.n);
        st->status_n = keep(st->status, sizeof st->status, status.p, status.n);
        st->msg_n = keep(st->msg, sizeof st->msg, rest.p, rest.n);
        if (k)
            return k;
        /* nothing to report yet; the line is still recognised as TBPL */
        tl_event_init(&ev[0], TLE_LOG); /* level empty: ignored by the core */
        return 1;
    }

    k = flush_pending(st, ev);
    double took;
    struct tl_event *e = &ev[k];
    if (parse_took(rest.p, rest.n, &took)) {
        tl_event_init(e, TLE_TEST_END);
        e->t.duration_ms = took;
    } else {
        tl_event_init(e, TLE_SUBTEST);
        e->subtest = rest;
    }
    e->id = id;
    e->status = status;
    e->expected_known = true;
    e->unexpected = false;
    return k + 1;
}

const struct tl_format tl_format_tbpl = {
    .name = "tbpl",
    .bit = TL_FMT_TBPL,
    .state_size = sizeof(struct tbpl_state),
    .parse = tbpl_parse,
    .release = NULL,
    /* a held result is resolved only by the next TBPL line, which starts with one of these, or
     * with pytest's progress character before it, or with the file name pytest announces */
    .pairs = (const char *const[]){"TE", "PR", "SU", ".T", "FT", "ET", "sT", "xT", "XT", ".P",
                                   "FP", "EP", ".S", NULL},
    .dotted_word = true,
};
