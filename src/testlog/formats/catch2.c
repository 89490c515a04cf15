/* Catch2's console reporter (testlog/formats.h has the result mapping). Catch2 names a test case
 * only in the header it prints before the assertions it reports:
 *
 *   ---------------------------------------------------   (a line of '-' only)
 *   test case name                                         (wrapped over lines when long)
 *     section                                              (indented: the section path)
 *   ---------------------------------------------------
 *   t.cpp:8                                                (where the test case is)
 *   ...................................................   (a line of '.' only)
 *
 * then "t.cpp:9: FAILED:" / "t.cpp:9: PASSED:" and the assertion's lines. A header is taken once
 * all of it has been seen (so a stray line of dashes is nothing). Each test case is a test: it
 * starts at its first header, runs over the headers of its sections (-s prints one per section
 * run), and ends FAIL when any of its assertions failed, else PASS, at the last line it printed
 * before the next test case's header or the totals ("=====" then "test cases: ..."). Its
 * message is the text of its failed assertions, location lines included (bounded).
 *
 * By default Catch2 reports failed assertions only: the passing test cases are never named, and
 * the profile has the failed ones only. With -s it reports every assertion, so every test case
 * that made one. A test case's header is printed when its first reported assertion is: its start
 * is then that instant, not when it began (Catch2 does not say). The durations -d yes prints
 * ("0.001 s: name") name sections and test cases alike and are not read.
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

enum c2_phase {
    C2_IDLE,   /* outside a header */
    C2_NAME_L, /* after the first rule: the name, then its sections */
    C2_LOC,    /* after the second rule: "file:line" */
    C2_DOTS,   /* then the row of dots */
};

struct catch2_state {
    enum c2_phase phase;
    struct tl_case c; /* its failure text: the lines after "file:N: FAILED:" */
    bool in_sections; /* the header's indented lines: the sections */
    size_t hdr_n;
    char hdr[TL_CASE_NAME]; /* the header's name being read */
};

/* "file:123" or "file:123: ..." → the offset after the digits (0: not one). */
static size_t location(const char *s, size_t n)
{
    size_t lim = n < 1024 ? n : 1024;
    for (size_t i = lim; i-- > 1;) {
        if (s[i] != ':')
            continue;
        size_t j = i + 1;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j > i + 1 && (j == n || s[j] == ':'))
            return j;
    }
    return 0;
}

/* The running test case's result, at the last line it printed. */
static int end_test(struct catch2_state *st, struct tl_event *ev)
{
    return tl_case_end(&st->c, st->c.failed ? TL_FAILED : TL_PASSED, ev);
}

static int catch2_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                        struct tl_event *ev)
{
    struct catch2_state *st = state;
    switch (st->phase) {
    case C2_NAME_L:
        if (tl_rule(line, len, '-')) {
            if (!st->hdr_n)
                break; /* no name: this rule may begin the header */
            st->phase = C2_LOC;
            return 0;
        }
        if (len >= 2 && line[0] == ' ' && line[1] == ' ' && st->hdr_n)
            st->in_sections = true;
        else if (!st->in_sections) {
            /* the name, or the next line of a wrapped one */
            if (st->hdr_n && st->hdr_n < sizeof st->hdr)
                st->hdr[st->hdr_n++] = ' ';
            st->hdr_n += tl_copy(st->hdr + st->hdr_n, sizeof st->hdr - st->hdr_n, tl_trim(tl_str_make(line, len))).n;
        } else {
            st->phase = C2_IDLE;
            break;
        }
        return 0;
    case C2_LOC:
        st->phase = C2_IDLE;
        if (location(line, len) != len)
            break; /* no header: the line is read as any other */
        st->phase = C2_DOTS;
        return 0;
    case C2_DOTS: {
        st->phase = C2_IDLE;
        if (!tl_rule(line, len, '.'))
            break;
        /* a header: the same test case's next section, or another test case */
        struct tl_str hdr = tl_str_make(st->hdr, st->hdr_n);
        if (st->c.open && tl_str_same(hdr, tl_case_name(&st->c))) {
            st->c.last_ns = arrival_ns;
            return 0;
        }
        int k = end_test(st, ev);
        return k + tl_case_start(&st->c, hdr, arrival_ns, &ev[k]);
    }
    case C2_IDLE:
        break;
    }
    if (tl_rule(line, len, '-')) {
        st->phase = C2_NAME_L;
        st->hdr_n = 0;
        st->in_sections = false;
        st->c.header_ns = arrival_ns;
        st->c.in_failure = false;
        return 0;
    }
    if (!st->c.open)
        return 0;
    if (tl_rule(line, len, '='))
        return end_test(st, ev);
    st->c.last_ns = arrival_ns;
    size_t loc = location(line, len);
    if (loc && loc < len) {
        struct tl_str rest = tl_trim(tl_str_make(line + loc + 1, len - loc - 1));
        st->c.in_failure = tl_str_eq(rest, "FAILED:");
        if (st->c.in_failure) {
            st->c.failed = true;
            tl_case_text(&st->c, tl_str_make(line, len));
            return 0;
        }
    }
    if (st->c.in_failure)
        tl_case_text(&st->c, tl_str_make(line, len));
    return 0;
}

static int catch2_flush(void *state, struct tl_event *ev) { return end_test(state, ev); }

static bool catch2_busy(const void *state)
{
    const struct catch2_state *st = state;
    return st->c.open || st->phase != C2_IDLE;
}

const struct tl_format tl_format_catch2 = {
    .name = "catch2",
    .bit = TL_FMT_CATCH2,
    .state_size = sizeof(struct catch2_state),
    .parse = catch2_parse,
    .release = NULL,
    .flush = catch2_flush,
    .pairs = (const char *const[]){"--", NULL},
    .busy = catch2_busy,
};
