/* Shared body of the test-log fuzz targets: the input is a log; it is split by the line splitter
 * in chunks whose sizes come from the input itself, and every line goes through the core with
 * the given formats. Every payload and state line must be a JSON object. */
#ifndef FUZZ_TESTLOG_H
#define FUZZ_TESTLOG_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linebuf.h"
#include "testlog.h"
#include "testlog_event.h"

static void fuzz_check(const char *s, size_t n)
{
    if (n < 2 || s[0] != '{' || s[n - 1] != '}' || strlen(s) != n)
        abort();
}

static void fuzz_marker(void *ctx, const char *name, uint64_t start, uint64_t end, int cat,
                        const char *data, size_t len)
{
    (void)ctx;
    (void)cat;
    if (!name || !*name || (end != MARKER_INSTANT && end < start))
        abort();
    fuzz_check(data, len);
}

static void fuzz_state(void *ctx, const char *line, size_t len)
{
    (void)ctx;
    fuzz_check(line, len);
}

static uint64_t fuzz_cpu(void *ctx)
{
    static uint64_t t;
    (void)ctx;
    return t += 1000;
}

struct fuzz_ctx {
    struct testlog *tl;
    const struct tl_format *f;
    void *state;
};

static void fuzz_line(void *ctx, const char *line, size_t len, bool truncated, uint64_t arrival)
{
    struct fuzz_ctx *c = ctx;
    testlog_line(c->tl, 1, line, len, truncated, arrival);
    /* the parser alone, on the raw line, with its own state */
    if (c->f && c->state) {
        struct tl_event ev[TL_MAX_EVENTS];
        int k = c->f->parse(c->state, line, len, arrival, ev);
        if (k < 0 || k > TL_MAX_EVENTS)
            abort();
    }
}

static int fuzz_testlog(const uint8_t *data, size_t size, unsigned formats, const struct tl_format *f)
{
    struct marker_sink sink = {.marker = fuzz_marker, .state = fuzz_state};
    struct testlog_probe probe = {fuzz_cpu, NULL};
    struct testlog_config cfg = {0};
    cfg.formats = formats;
    cfg.log_info = size & 1;
    cfg.process_output = size & 2;
    cfg.wall_at_t0_ms = 1767225600000.0;
    cfg.t0_ns = UINT64_C(1000000000000);
    struct fuzz_ctx c = {0};
    if (testlog_new(&cfg, &sink, &probe, &c.tl) < 0)
        return 0;
    c.f = f;
    c.state = f && f->state_size ? calloc(1, f->state_size) : NULL;
    struct linebuf *lb;
    if (linebuf_new(4096, &lb) < 0)
        abort();
    uint64_t now = cfg.t0_ns;
    size_t i = 0;
    while (i < size) {
        size_t chunk = 1 + data[i] % 251;
        if (chunk > size - i)
            chunk = size - i;
        now += 1000000;
        linebuf_feed(lb, (const char *)data + i, chunk, now, fuzz_line, &c);
        testlog_tree_sample(c.tl, now);
        i += chunk;
    }
    linebuf_flush(lb, fuzz_line, &c);
    testlog_finish(c.tl, now + 1, size & 4);
    linebuf_free(lb);
    if (c.state && f->release)
        f->release(c.state);
    free(c.state);
    testlog_free(c.tl);
    return 0;
}

#endif
