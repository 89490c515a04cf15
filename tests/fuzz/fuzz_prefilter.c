/* Fuzz target: the test-log prefilter changes nothing. The input (a log) goes through two cores
 * with all formats, one with the prefilter and one offering every line to every parser; the
 * markers and state lines they write must be the same bytes. Times are far beyond the monotonic
 * clock, so the comparison does not depend on when it runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlog/testlog.h"

struct rec {
    char *p;
    size_t n, cap;
};

static void rec_add(struct rec *r, const char *s, size_t n)
{
    if (r->n + n > r->cap) {
        size_t cap = (r->n + n) * 2 + 256;
        char *p = realloc(r->p, cap);
        if (!p)
            abort();
        r->p = p;
        r->cap = cap;
    }
    memcpy(r->p + r->n, s, n);
    r->n += n;
}

static void rec_marker(void *ctx, const char *name, uint64_t start, uint64_t end, int cat,
                       const char *data, size_t len)
{
    char head[128];
    int k = snprintf(head, sizeof head, "M %llu %llu %d ", (unsigned long long)start,
                     (unsigned long long)end, cat);
    rec_add(ctx, head, (size_t)k);
    rec_add(ctx, name, strlen(name));
    rec_add(ctx, " ", 1);
    rec_add(ctx, data, len);
    rec_add(ctx, "\n", 1);
}

static void rec_state(void *ctx, const char *line, size_t len)
{
    rec_add(ctx, "S ", 2);
    rec_add(ctx, line, len);
    rec_add(ctx, "\n", 1);
}

static void run(const uint8_t *data, size_t size, bool no_prefilter, struct rec *out)
{
    struct marker_sink sink = {.marker = rec_marker, .state = rec_state, .ctx = out};
    struct testlog_config cfg = {0};
    cfg.formats = size & 8 ? TL_FMT_ALL : 1u << (size % TL_FMT_COUNT); /* all, or one of the registry's */
    cfg.log_info = size & 1;
    cfg.process_output = size & 2;
    cfg.wall_at_t0_ms = 1767225600000.0;
    cfg.t0_ns = UINT64_C(1) << 60;
    cfg.no_prefilter = no_prefilter;
    struct testlog *tl;
    if (testlog_new(&cfg, &sink, NULL, &tl) < 0)
        abort();
    uint64_t now = cfg.t0_ns;
    for (size_t i = 0; i < size;) {
        const uint8_t *nl = memchr(data + i, '\n', size - i);
        size_t end = nl ? (size_t)(nl - data) : size;
        now += 1000000;
        testlog_line(tl, 1, (const char *)data + i, end - i, false, now);
        i = end + 1;
    }
    testlog_finish(tl, now + 1, size & 4);
    struct testlog_stats st;
    testlog_get_stats(tl, &st);
    char tail[64];
    int k = snprintf(tail, sizeof tail, "recognised %llu\n", (unsigned long long)st.recognised);
    rec_add(out, tail, (size_t)k);
    testlog_free(tl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rec a = {0}, b = {0};
    run(data, size, false, &a);
    run(data, size, true, &b);
    if (a.n != b.n || (a.n && memcmp(a.p, b.p, a.n) != 0))
        abort();
    free(a.p);
    free(b.p);
    return 0;
}
