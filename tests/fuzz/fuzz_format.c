/* Fuzz target for the test-log formats of the registry (src/testlog/registry.h) that have no
 * target of their own: the one named by $FUZZ_FORMAT (tests/fuzz/replay.sh and scripts/fuzz set
 * it, and take its corpus from tests/fuzz/corpus/<format>/). The input is split into lines (as
 * the core delivers them) and fed to one state; every line lives in its own exact-size allocation
 * so that reading past its end is caught by ASan, and every byte of every string handed out is
 * read. Then the whole input goes in as one line, and last the input goes through the core
 * (fuzz_testlog.h) with this format alone. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlog/event.h"
#include "fuzz_testlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned fuzz_sink;

static const struct tl_format *const fuzz_formats[] = {
#define TL_FORMAT(var, NAME, alias) &tl_format_##var,
#include "testlog/registry.h"
#undef TL_FORMAT
};

/* The format $FUZZ_FORMAT names; a run without one is a mistake, not an input to pass. */
static const struct tl_format *fuzz_format(void)
{
    static const struct tl_format *fmt;
    const char *name = getenv("FUZZ_FORMAT");
    for (size_t i = 0; !fmt && name && i < sizeof fuzz_formats / sizeof fuzz_formats[0]; i++)
        if (strcmp(fuzz_formats[i]->name, name) == 0)
            fmt = fuzz_formats[i];
    if (!fmt) {
        fprintf(stderr, "fuzz_format: FUZZ_FORMAT=%s is no format of testlog/registry.h\n", name ? name : "");
        abort();
    }
    return fmt;
}

static void fuzz_touch(struct tl_str s)
{
    unsigned h = 0;
    if (!s.n)
        return; /* an unset string may be NULL */
    for (size_t i = 0; i < s.n; i++)
        h += (unsigned char)s.p[i];
    fuzz_sink += h;
}

/* Events a parser handed out for a line that arrived at t: in range, with their strings. */
static void fuzz_events(const struct tl_event *ev, int k, uint64_t t)
{
    if (k < 0 || k > TL_MAX_EVENTS)
        abort();
    for (int i = 0; i < k; i++) {
        if ((unsigned)ev[i].kind > TLE_TOTALS || ev[i].t.since_ns > t)
            abort(); /* a kind out of range; a start after the line that ends the test */
        if (ev[i].kind == TLE_TOTALS && (!ev[i].name.n || ev[i].counts.total < 0 || ev[i].counts.passed < -1 ||
                                         ev[i].counts.failed < -1 || ev[i].counts.skipped < -1))
            abort(); /* counts are given (>= 0) or not (-1), and a total always */
        const struct tl_str *f[] = {&ev[i].id, &ev[i].scope, &ev[i].name, &ev[i].status,
                                    &ev[i].expected, &ev[i].message, &ev[i].subtest,
                                    &ev[i].level, &ev[i].signature, &ev[i].reason,
                                    &ev[i].minidump, &ev[i].process, &ev[i].command};
        for (size_t j = 0; j < sizeof f / sizeof f[0]; j++)
            fuzz_touch(*f[j]);
        if (ev[i].t.duration_ms < 0)
            abort();
    }
}

static void fuzz_line(const struct tl_format *fmt, void *state, const uint8_t *p, size_t n, uint64_t t)
{
    char *copy = malloc(n ? n : 1);
    if (!copy)
        return;
    if (n)
        memcpy(copy, p, n);
    struct tl_event ev[TL_MAX_EVENTS];
    int k = fmt->parse(state, copy, n, t, ev);
    /* and what the line released beyond them (tl_format.more), as the core asks for it */
    for (int more = k; more > 0; more = fmt->more ? fmt->more(state, ev) : 0)
        fuzz_events(ev, more, t);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct tl_format *fmt = fuzz_format();
    void *state = calloc(1, fmt->state_size ? fmt->state_size : 1);
    if (!state)
        return 0;
    uint64_t t = 1000000;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i == size || data[i] == '\n') {
            size_t n = i - start;
            if (n && data[start + n - 1] == '\r')
                n--;
            fuzz_line(fmt, state, data + start, n, t += 1000000);
            start = i + 1;
        }
    }
    fuzz_line(fmt, state, data, size, t += 1000000);
    if (fmt->release)
        fmt->release(state);
    free(state);
    /* and through the core, with a sink that takes open lines back */
    return fuzz_testlog_sink(data, size, fmt->bit, NULL, true);
}
