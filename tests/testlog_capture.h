/* testlog_capture.h — a marker sink that records markers and state lines as text, and a driver
 * that feeds a fixture log through linebuf + testlog and compares the capture with a golden file.
 *
 * Captured line formats (times in ms since T0, 3 decimals):
 *   M <name> <start> <end|-> <category> <data>
 *   S <state line>
 * Set TESTLOG_REGEN=1 to rewrite the golden files from the current output (then review the diff).
 */
#ifndef TESTLOG_CAPTURE_H
#define TESTLOG_CAPTURE_H

#include <check.h>
#include <sys/types.h>

#pragma GCC diagnostic ignored "-Wunused-function"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/linebuf.h"
#include "base/markers.h"
#include "testlog/testlog.h"

#define T0 UINT64_C(1000000000000)     /* monotonic ns of profile time 0 */
#define WALL0 1767225600000.0          /* 2026-01-01T00:00:00Z, epoch ms at T0 */
#define MS(x) (T0 + (uint64_t)((x) * 1e6))

struct cap {
    char **lines;
    size_t n, cap;
};

static void cap_add(struct cap *c, char *s)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->lines = realloc(c->lines, c->cap * sizeof *c->lines);
    }
    c->lines[c->n++] = s;
}

static void cap_marker(void *ctx, const char *name, uint64_t s, uint64_t e, int cat,
                       const char *data, size_t len)
{
    char *out;
    char end[40];
    if (e == MARKER_INSTANT)
        strcpy(end, "-");
    else
        snprintf(end, sizeof end, "%.3f", ((double)e - (double)T0) / 1e6);
    ck_assert_msg(strlen(data) == len, "payload length");
    ck_assert_msg(len > 10 && data[0] == '{' && data[len - 1] == '}', "payload is an object");
    if (asprintf(&out, "M %s %.3f %s %d %.*s", name, ((double)s - (double)T0) / 1e6, end, cat,
                 (int)len, data) < 0)
        abort();
    cap_add(ctx, out);
}

static void cap_state(void *ctx, const char *line, size_t len)
{
    char *out;
    if (asprintf(&out, "S %.*s", (int)len, line) < 0)
        abort();
    cap_add(ctx, out);
}

static void cap_free(struct cap *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->lines[i]);
    free(c->lines);
    memset(c, 0, sizeof *c);
}

/* Index of the first captured line containing needle, or -1. */
static ssize_t cap_find(const struct cap *c, const char *needle)
{
    for (size_t i = 0; i < c->n; i++)
        if (strstr(c->lines[i], needle))
            return (ssize_t)i;
    return -1;
}

static size_t cap_count(const struct cap *c, const char *needle)
{
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++)
        if (strstr(c->lines[i], needle))
            k++;
    return k;
}

static const struct marker_sink *cap_sink(struct cap *c)
{
    static struct marker_sink s;
    s.marker = cap_marker;
    s.state = cap_state;
    s.ctx = c;
    return &s;
}

/* A fake tree: CPU advances 10 ms of CPU per call. */
static uint64_t fake_cpu_ns;
static uint64_t fake_cpu(void *ctx)
{
    (void)ctx;
    fake_cpu_ns += 10000000;
    return fake_cpu_ns;
}

/* A fake tree's RSS now, as the test sets it (0: unknown); tl_make_rss's probe reads it. */
static uint64_t fake_rss_bytes;
static uint64_t fake_rss(void *ctx)
{
    (void)ctx;
    return fake_rss_bytes;
}

static struct testlog *tl_make(struct cap *c, unsigned formats, bool probe)
{
    struct testlog_config cfg = {0};
    cfg.formats = formats;
    cfg.wall_at_t0_ms = WALL0;
    cfg.t0_ns = T0;
    struct testlog_probe pr = {fake_cpu, NULL, NULL};
    struct testlog *tl;
    fake_cpu_ns = 0;
    ck_assert_int_eq(testlog_new(&cfg, cap_sink(c), probe ? &pr : NULL, &tl), 0);
    return tl;
}

/* Feed s as one line arriving at ms. */
static void feed(struct testlog *tl, const char *s, double ms)
{
    testlog_line(tl, 1, s, strlen(s), false, MS(ms));
}

static const char *fixture_dir(void)
{
    const char *d = getenv("TOP_SRCDIR");
    return d ? d : SRCDIR;
}

static char *slurp(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0, n;
    char *b = malloc(cap);
    while ((n = fread(b + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    b[len] = '\0';
    *ret_len = len;
    return b;
}

struct golden_ctx {
    struct testlog *tl;
    double ms;
};

static void golden_line(void *ctx, const char *line, size_t len, bool truncated, uint64_t arrival)
{
    struct golden_ctx *g = ctx;
    testlog_line(g->tl, 1, line, len, truncated, arrival);
}

/* Feed log[0..len) to tl through a line splitter: line i arrives at start + (i+1)*10 ms, each line
 * split in two chunks to exercise the splitter, the tree's RSS growing with time. Returns the
 * time after the last line (ms). */
static double feed_log(struct testlog *tl, const char *log, size_t len, double start_ms)
{
    struct golden_ctx g = {tl, 0};
    struct linebuf *lb;
    ck_assert_int_eq(linebuf_new(1 << 20, &lb), 0);
    double ms = start_ms;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(log + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - log) + 1 : len;
        size_t half = i + (end - i) / 2;
        ms += 10;
        linebuf_feed(lb, log + i, half - i, MS(ms), golden_line, &g);
        linebuf_feed(lb, log + half, end - half, MS(ms + 1), golden_line, &g);
        if (!nl)
            linebuf_flush(lb, golden_line, &g);
        testlog_tree_sample(tl, (uint64_t)ms * 1000); /* RSS grows with time */
        i = end;
    }
    linebuf_flush(lb, golden_line, &g);
    linebuf_free(lb);
    return ms;
}

/* Feed tests/fixtures/testlog/<name>.log (feed_log from 2000 ms), finish at the end, compare
 * with <expected>.expected. */
static void golden(const char *name, const char *expected, unsigned formats, bool log_info,
                   bool process_output, bool timed_out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/testlog/%s.log", fixture_dir(), name);
    size_t len;
    char *log = slurp(path, &len);
    ck_assert_msg(log != NULL, "fixture %s", path);

    struct cap c = {0};
    struct testlog_config cfg = {0};
    cfg.formats = formats;
    cfg.wall_at_t0_ms = WALL0;
    cfg.t0_ns = T0;
    cfg.log_info = log_info;
    cfg.process_output = process_output;
    struct testlog_probe pr = {fake_cpu, NULL, NULL};
    fake_cpu_ns = 0;
    struct testlog *tl;
    ck_assert_int_eq(testlog_new(&cfg, cap_sink(&c), &pr, &tl), 0);
    double ms = feed_log(tl, log, len, 2000); /* after every producer time in the fixtures */
    testlog_finish(tl, MS(ms + 10), timed_out);

    snprintf(path, sizeof path, "%s/tests/fixtures/testlog/%s.expected", fixture_dir(), expected);
    if (getenv("TESTLOG_REGEN")) {
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        for (size_t k = 0; k < c.n; k++)
            fprintf(f, "%s\n", c.lines[k]);
        fclose(f);
    }
    size_t elen;
    char *exp = slurp(path, &elen);
    ck_assert_msg(exp != NULL, "golden %s", path);
    size_t k = 0;
    char *save = NULL;
    for (char *l = strtok_r(exp, "\n", &save); l; l = strtok_r(NULL, "\n", &save), k++) {
        ck_assert_msg(k < c.n, "%s: missing line %zu: %s", name, k + 1, l);
        ck_assert_msg(strcmp(l, c.lines[k]) == 0, "%s line %zu:\n expected %s\n got      %s", name,
                      k + 1, l, c.lines[k]);
    }
    ck_assert_msg(k == c.n, "%s: %zu extra lines, first: %s", name, c.n - k,
                  k < c.n ? c.lines[k] : "");
    free(exp);
    free(log);
    testlog_free(tl);
    cap_free(&c);
}

#endif
