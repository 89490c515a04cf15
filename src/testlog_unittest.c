/* Python unittest -v (testlog_formats.h has the result mapping). unittest writes to stderr.
 *
 *   test_x (mod.Class.test_x) ... ok        Python >= 3.11: id = mod.Class.test_x
 *   test_x (mod.Class) ... ok               older: id = mod.Class.test_x
 *   json ()                                 a module's doctest (doctest.DocTestSuite), then
 *   Doctest: json ... ok                    its description line: id = json
 *   encode (json.encoder.JSONEncoder)       a function's or method's doctest, then
 *   Doctest: json.encoder.JSONEncoder.encode ... ok     id = json.encoder.JSONEncoder.encode
 * Results: "ok" → PASS, "FAIL" → FAIL, "ERROR" → ERROR, "skipped 'why'" → SKIP (message why),
 * "expected failure" → known FAIL, "unexpected success" → unexpected PASS; a " (0.012s)" suffix
 * (--durations) gives duration_ms.
 *
 * unittest prints the description when the test starts and the result when it ends, so a complete
 * line is TLE_TEST_START (first byte) + TLE_TEST_END at TL_AT_LINE_END. When the test wrote to the
 * same stream, the line ends with "... " or with that output: TLE_TEST_START, and the test stays
 * pending until a line that is only a result. A test with a docstring prints "test_x (mod.C.test_x)"
 * alone, then "First docstring line ... ok": the first line is remembered (no event) and the next
 * line, if it holds " ... ", is that test's.
 */
#include "testlog_formats.h"

#include "testlog.h"

struct unittest_state {
    bool pending;   /* started, result to come on a line of its own */
    bool candidate; /* "test_x (mod.C)" seen on the previous line */
    char id[1024];
    size_t id_len;
};

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A whole result "ok", "skipped 'x'", ... (with an optional " (0.001s)"). */
static bool parse_result(struct tl_str s, enum tl_outcome *ret_oc, struct tl_str *ret_msg,
                         double *ret_ms)
{
    s = tl_trim(s);
    *ret_ms = __builtin_nan("");
    *ret_msg = tl_str_make(NULL, 0);
    if (s.n > 4 && s.p[s.n - 1] == ')' && s.p[s.n - 2] == 's') {
        size_t i = s.n - 2;
        while (i > 0 && s.p[i - 1] != '(')
            i--;
        double v;
        if (i >= 2 && s.p[i - 2] == ' ' && tl_parse_number(tl_str_make(s.p + i, s.n - 2 - i), &v) &&
            v >= 0) {
            *ret_ms = v * 1000.0;
            s.n = i - 2;
        }
    }
    if (tl_str_eq(s, "ok"))
        *ret_oc = TL_PASSED;
    else if (tl_str_eq(s, "FAIL"))
        *ret_oc = TL_FAILED;
    else if (tl_str_eq(s, "ERROR"))
        *ret_oc = TL_ERRORED;
    else if (tl_str_eq(s, "expected failure"))
        *ret_oc = TL_KNOWN_FAIL;
    else if (tl_str_eq(s, "unexpected success"))
        *ret_oc = TL_UNEXPECTED_PASS;
    else if (TL_PREFIX(s.p, s.n, "skipped")) {
        struct tl_str r = tl_trim(tl_str_make(s.p + 7, s.n - 7));
        if (r.n >= 2 && (r.p[0] == '\'' || r.p[0] == '"') && r.p[r.n - 1] == r.p[0])
            r = tl_str_make(r.p + 1, r.n - 2);
        *ret_oc = TL_SKIPPED;
        *ret_msg = r;
    } else
        return false;
    return true;
}

/* "name (dotted)" at the start of the line: where it ends. */
struct desc {
    struct tl_str name, dotted;
    size_t end;
};

static bool parse_desc(const char *line, size_t len, struct desc *ret)
{
    size_t i = 0;
    if (!len || (line[0] >= '0' && line[0] <= '9'))
        return false;
    while (i < len && ident_char(line[i]))
        i++;
    if (i == 0 || i + 3 > len || line[i] != ' ' || line[i + 1] != '(')
        return false;
    size_t d = i + 2, j = d;
    while (j < len && (ident_char(line[j]) || line[j] == '.'))
        j++;
    if (j >= len || line[j] != ')')
        return false; /* "()": a module's doctest */
    ret->name = tl_str_make(line, i);
    ret->dotted = tl_str_make(line + d, j - d);
    ret->end = j + 1;
    return true;
}

/* The test's id, kept in the state: the dotted name, with the method appended in the old form. */
static void keep_id(struct unittest_state *st, const struct desc *d)
{
    size_t nl = d->name.n;
    bool new_form = d->dotted.n > nl + 1 && d->dotted.p[d->dotted.n - nl - 1] == '.' &&
                    memcmp(d->dotted.p + d->dotted.n - nl, d->name.p, nl) == 0;
    size_t n = tl_copy(st->id, sizeof st->id, d->dotted).n;
    if (!new_form && n + 1 + nl <= sizeof st->id) {
        if (n)
            st->id[n++] = '.';
        memcpy(st->id + n, d->name.p, nl);
        n += nl;
    }
    st->id_len = n;
}

/* What follows the description: " ... result", " ... output", or " ..." at the end. */
static int after_desc(struct unittest_state *st, const char *p, size_t n, struct tl_event *ev)
{
    struct tl_str id = tl_str_make(st->id, st->id_len);
    tl_event_init(&ev[0], TLE_TEST_START);
    ev[0].id = id;
    enum tl_outcome oc;
    struct tl_str msg;
    double ms;
    if (parse_result(tl_str_make(p, n), &oc, &msg, &ms)) {
        tl_set_result(&ev[1], id, tl_str_make(NULL, 0), oc);
        ev[1].message = msg;
        ev[1].t.duration_ms = ms;
        ev[1].t.when = TL_AT_LINE_END;
        st->pending = false;
        return 2;
    }
    st->pending = true;
    return 1;
}

static int unittest_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                          struct tl_event *ev)
{
    struct unittest_state *st = state;
    bool candidate = st->candidate;
    st->candidate = false;
    struct desc d;
    if (len >= 5 && ident_char(line[0]) && parse_desc(line, len, &d)) {
        size_t end = d.end;
        if (end == len) {
            keep_id(st, &d);
            st->candidate = true;
            st->pending = false;
            return 0;
        }
        if (end + 4 > len || memcmp(line + end, " ...", 4) != 0 ||
            (end + 4 < len && line[end + 4] != ' '))
            return 0;
        keep_id(st, &d);
        return after_desc(st, line + end + 4, len - end - 4, ev);
    }
    if (candidate) {
        /* The docstring's first line, then " ... ". */
        const char *dots = memmem(line, len, " ... ", 5);
        size_t at = dots ? (size_t)(dots - line) + 5 : 0;
        if (!dots && len >= 4 && memcmp(line + len - 4, " ...", 4) == 0)
            at = len;
        if (at)
            return after_desc(st, line + at, len - at, ev);
    }
    if (st->pending && len < 200) {
        enum tl_outcome oc;
        struct tl_str msg;
        double ms;
        if (parse_result(tl_str_make(line, len), &oc, &msg, &ms)) {
            st->pending = false;
            tl_set_result(ev, tl_str_make(st->id, st->id_len), tl_str_make(NULL, 0), oc);
            ev->message = msg;
            ev->t.duration_ms = ms;
            ev->t.when = TL_AT_LINE_END;
            return 1;
        }
    }
    return 0;
}

static bool unittest_busy(const void *state)
{
    const struct unittest_state *st = state;
    return st->pending || st->candidate;
}

const struct tl_format tl_format_unittest = {
    .name = "unittest",
    .bit = TL_FMT_UNITTEST,
    .state_size = sizeof(struct unittest_state),
    .parse = unittest_parse,
    .release = NULL,
    /* a description starts with an identifier (not a digit) */
    .first_bytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_",
    .busy = unittest_busy,
};
