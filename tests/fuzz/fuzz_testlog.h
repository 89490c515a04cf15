/* Shared body of the test-log fuzz targets: the input is a log; it is split by the line splitter
 * in chunks whose sizes come from the input itself, and every line goes through the core with
 * the given formats. Every payload and state line must be a JSON object. */
#ifndef FUZZ_TESTLOG_H
#define FUZZ_TESTLOG_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/linebuf.h"
#include "testlog/event.h"
#include "testlog/testlog.h"

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

/* The sink holds state lines between chunks as the stream does, so open lines can be taken back;
 * open and close lines must stay balanced per (kind, key), taken-back ones counting as never
 * written, and every test must be closed at the end. */
#define FZ_MAX 8192
static struct fz_key {
    char *text; /* kind token, '|', key token (raw JSON) */
    long open;
} fz_keys[FZ_MAX];
static size_t fz_nkeys;
static struct fz_held {
    size_t key;
    bool live;
} fz_held[FZ_MAX];
static size_t fz_nheld;
static uint64_t fz_gen;

/* The raw JSON string token after field (e.g. "\"key\":") in a state line. */
static size_t fz_token(const char *s, size_t n, const char *field, const char **tok)
{
    const char *p = memmem(s, n, field, strlen(field));
    if (!p || p + strlen(field) >= s + n || p[strlen(field)] != '"')
        abort();
    p += strlen(field);
    const char *q = p + 1;
    while (q < s + n && *q != '"')
        q += *q == '\\' ? 2 : 1;
    if (q >= s + n)
        abort();
    *tok = p;
    return (size_t)(q + 1 - p);
}

static size_t fz_key_of(const char *line, size_t len)
{
    const char *k, *v;
    size_t kn = fz_token(line, len, "\"kind\":", &k), vn = fz_token(line, len, "\"key\":", &v);
    for (size_t i = 0; i < fz_nkeys; i++)
        if (strlen(fz_keys[i].text) == kn + 1 + vn && memcmp(fz_keys[i].text, k, kn) == 0 &&
            memcmp(fz_keys[i].text + kn + 1, v, vn) == 0)
            return i;
    if (fz_nkeys == FZ_MAX)
        abort();
    char *t = malloc(kn + 1 + vn + 1);
    if (!t)
        abort();
    memcpy(t, k, kn);
    t[kn] = '|';
    memcpy(t + kn + 1, v, vn);
    t[kn + 1 + vn] = '\0';
    fz_keys[fz_nkeys] = (struct fz_key){t, 0};
    return fz_nkeys++;
}

static bool fz_is(const char *line, size_t len, const char *type)
{
    size_t n = strlen(type);
    return len > 9 + n && memcmp(line, "{\"type\":\"", 9) == 0 && memcmp(line + 9, type, n) == 0 && line[9 + n] == '"';
}

static void fuzz_state_balanced(void *ctx, const char *line, size_t len)
{
    (void)ctx;
    fuzz_check(line, len);
    if (fz_is(line, len, "open"))
        fz_keys[fz_key_of(line, len)].open++;
    else if (fz_is(line, len, "close") && --fz_keys[fz_key_of(line, len)].open < 0)
        abort(); /* a close line without its open */
}

static uint64_t fuzz_state_open(void *ctx, const char *line, size_t len)
{
    fuzz_state_balanced(ctx, line, len);
    if (!fz_is(line, len, "open") || fz_nheld == FZ_MAX)
        abort();
    fz_held[fz_nheld] = (struct fz_held){fz_key_of(line, len), true};
    return fz_gen << 16 | ++fz_nheld;
}

static bool fuzz_state_retract(void *ctx, uint64_t h)
{
    (void)ctx;
    size_t i = h & 0xffff;
    if (h >> 16 != fz_gen || !i || i > fz_nheld || !fz_held[i - 1].live)
        return false;
    fz_held[i - 1].live = false;
    fz_keys[fz_held[i - 1].key].open--;
    return true;
}

static void fz_written(void)
{
    fz_gen++;
    fz_nheld = 0;
}

static void fz_reset(void)
{
    for (size_t i = 0; i < fz_nkeys; i++)
        free(fz_keys[i].text);
    fz_nkeys = fz_nheld = 0;
    fz_gen++;
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

static void fuzz_core_line(void *ctx, const char *line, size_t len, bool truncated, uint64_t arrival)
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

static int fuzz_testlog_sink(const uint8_t *data, size_t size, unsigned formats, const struct tl_format *f,
                             bool hold)
{
    struct marker_sink sink = {.marker = fuzz_marker, .state = fuzz_state};
    if (hold)
        sink = (struct marker_sink){.marker = fuzz_marker, .state = fuzz_state_balanced,
                                    .state_open = fuzz_state_open, .state_retract = fuzz_state_retract};
    fz_reset();
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
        linebuf_feed(lb, (const char *)data + i, chunk, now, fuzz_core_line, &c);
        testlog_tree_sample(c.tl, now);
        fz_written(); /* the chunk's lines are written */
        i += chunk;
    }
    linebuf_flush(lb, fuzz_core_line, &c);
    testlog_finish(c.tl, now + 1, size & 4);
    for (size_t k = 0; hold && k < fz_nkeys; k++)
        if (strncmp(fz_keys[k].text, "\"test\"|", 7) == 0 && fz_keys[k].open != 0)
            abort(); /* a test left open, or closed twice */
    fz_reset();
    linebuf_free(lb);
    if (f && c.state && f->release)
        f->release(c.state);
    free(c.state);
    testlog_free(c.tl);
    return 0;
}

/* Every input twice: through a plain sink, and through one that takes open lines back. */
static inline int fuzz_testlog(const uint8_t *data, size_t size, unsigned formats, const struct tl_format *f)
{
    fuzz_testlog_sink(data, size, formats, f, false);
    return fuzz_testlog_sink(data, size, formats, f, true);
}

#endif
