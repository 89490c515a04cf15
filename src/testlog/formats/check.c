/* Check (libcheck) console output (testlog/formats.h has the result mapping). Check's TAP log is
 * read by tap.c and gives the same ids.
 *
 *   Running suite(s): Money                       → TLE_SUITE_START id = Money
 *   100%: Checks: 3, Failures: 0, Errors: 0       → TLE_SUITE_END (PASS when no failures and no
 *                                                   errors, else FAIL; message = the counts)
 *   check_money.c:19:F:Core:test_create:0: msg    → TLE_TEST_END id = "Core:test_create" (tcase:test)
 *       P → PASS (CK_VERBOSE), F → FAIL, E → ERROR, except E "Test timeout expired" → TIMEOUT and
 *       E "Received signal N (...)" → CRASH; S (a fixture failed: "Failed setup", "Test failure in
 *       fixture") → FAIL, as Check's own XML report has it, or TIMEOUT / CRASH as E is.
 *   The tcase is any text (spaces, colons: "Simple Tests", "Setup Fail Nofork 2"); the test is
 *   a C function name followed by ":<iteration>", then ": message" or the end of the line.
 * Check prints results when a suite is done, without times: a result has no start and no
 * duration (the core places it at the line's arrival).
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

struct check_state {
    char suite[512];
    size_t suite_len;
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool ident_char(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int result_line(const char *line, size_t len, struct tl_event *ev)
{
    /* "file.c:": the first colon, with a '.' and no space before it */
    size_t scan = len < 512 ? len : 512, c1 = 0;
    bool dot = false;
    while (c1 < scan && line[c1] != ':' && line[c1] != ' ')
        dot |= line[c1++] == '.';
    if (c1 == 0 || c1 == scan || line[c1] != ':' || !dot)
        return 0;
    size_t i = c1 + 1, d = i;
    while (i < len && is_digit(line[i]))
        i++;
    if (i == d || i + 3 >= len || line[i] != ':' || line[i + 2] != ':')
        return 0;
    char kind = line[i + 1];
    if (kind != 'P' && kind != 'F' && kind != 'E' && kind != 'S')
        return 0;
    /* ":<function>:<digits>" then ':' or the end, after a tcase of at least one byte */
    size_t id_start = i + 3, id_end = 0, k = 0;
    for (size_t c = id_start + 1; c < len && !id_end; c++) {
        if (line[c] != ':')
            continue;
        size_t f = c + 1;
        while (f < len && (ident_char(line[f])))
            f++;
        if (f == c + 1 || is_digit(line[c + 1]) || f >= len || line[f] != ':')
            continue;
        size_t g = f + 1;
        while (g < len && is_digit(line[g]))
            g++;
        if (g == f + 1 || (g < len && line[g] != ':'))
            continue;
        id_end = f;
        k = g;
    }
    if (!id_end)
        return 0;
    struct tl_str msg = k < len ? tl_trim(tl_str_make(line + k + 1, len - k - 1)) : tl_str_make(NULL, 0);
    enum tl_outcome oc = kind == 'P' ? TL_PASSED : kind == 'E' ? TL_ERRORED : TL_FAILED;
    if (kind == 'E' || kind == 'S') {
        if (msg.n && memmem(msg.p, msg.n, "Test timeout expired", 20))
            oc = TL_TIMED_OUT;
        else if (msg.n && memmem(msg.p, msg.n, "Received signal", 15))
            oc = TL_CRASHED;
    }
    tl_set_result(ev, tl_str_make(line + id_start, id_end - id_start), tl_str_make(NULL, 0), oc);
    ev->message = msg;
    return 1;
}

static int check_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                       struct tl_event *ev)
{
    struct check_state *st = state;
    if (len < 8)
        return 0;
    if (line[0] == 'R') {
        if (!TL_PREFIX(line, len, "Running suite(s):"))
            return 0;
        struct tl_str name = tl_trim(tl_str_make(line + 17, len - 17));
        if (!name.n)
            return 0;
        name = tl_copy(st->suite, sizeof st->suite, name);
        st->suite_len = name.n;
        tl_event_init(ev, TLE_SUITE_START);
        ev->id = name;
        return 1;
    }
    if (is_digit(line[0])) {
        size_t i = 0;
        while (i < len && i < 4 && is_digit(line[i]))
            i++;
        if (!TL_PREFIX(line + i, len - i, "%: Checks: "))
            return 0;
        const char *f = memmem(line, len, "Failures: ", 10), *e = memmem(line, len, "Errors: ", 8);
        if (!f || !e)
            return 0;
        bool clean = f + 10 < line + len && f[10] == '0' && (f + 11 == line + len || !is_digit(f[11])) && e + 8 < line + len &&
                     e[8] == '0' && (e + 9 == line + len || !is_digit(e[9]));
        tl_event_init(ev, TLE_SUITE_END);
        ev->id = st->suite_len ? tl_str_make(st->suite, st->suite_len) : TL_LIT("check");
        ev->status = clean ? TL_LIT("PASS") : TL_LIT("FAIL");
        ev->message = tl_str_make(line + i + 3, len - i - 3);
        return 1;
    }
    return result_line(line, len, ev);
}

const struct tl_format tl_format_check = {
    .name = "check",
    .bit = TL_FMT_CHECK,
    .state_size = sizeof(struct check_state),
    .parse = check_parse,
    .release = NULL,
    /* "Running suite(s):", "100%: Checks:", or a result whose first word is "file.c:..." */
    .first_bytes = "0123456789",
    .pairs = (const char *const[]){"Ru", NULL},
    .dotted_word = true,
};
