/* linebuf.c — see linebuf.h.
 *
 * Lines that arrive whole inside one chunk are handed out straight from the caller's buffer; only
 * the piece of a line that straddles chunks is copied. When nothing is pending, the chunk's
 * newlines are found 64 bytes at a time in one pass (a search call per line costs more than the
 * search on short lines). The copy buffer grows on demand up to
 * max_line and never beyond, so a line without a newline costs at most max_line bytes however
 * long it runs.
 */
#include "base/linebuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define LINEBUF_INITIAL 4096

struct linebuf {
    size_t max_line;
    char *buf;
    size_t len, cap;
    bool skipping;       /* the current line was delivered truncated; drop bytes up to '\n' */
    bool have_start;     /* arrival of the current line's first byte is known */
    uint64_t start_ns;
};

int linebuf_new(size_t max_line, struct linebuf **ret)
{
    if (max_line == 0)
        return -EINVAL;
    struct linebuf *lb = calloc(1, sizeof *lb);
    if (!lb)
        return -ENOMEM;
    lb->max_line = max_line;
    *ret = lb;
    return 0;
}

void linebuf_free(struct linebuf *lb)
{
    if (!lb)
        return;
    free(lb->buf);
    free(lb);
}

/* Append to the pending line; false when memory runs out (the line is then cut short). */
static bool append(struct linebuf *lb, const char *p, size_t n)
{
    if (lb->len + n > lb->cap) {
        size_t cap = lb->cap ? lb->cap : LINEBUF_INITIAL;
        while (cap < lb->len + n)
            cap *= 2;
        if (cap > lb->max_line)
            cap = lb->max_line;
        char *nb = realloc(lb->buf, cap);
        if (!nb)
            return false;
        lb->buf = nb;
        lb->cap = cap;
    }
    memcpy(lb->buf + lb->len, p, n);
    lb->len += n;
    return true;
}

/* Mask of the '\n' bytes in the 64 bytes at p (bit i: p[i]). */
static inline uint64_t newlines64(const char *p)
{
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n');
    uint64_t m = 0;
    for (int k = 0; k < 4; k++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        m |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, nl)) << (16 * k);
    }
    return m;
#else
    uint64_t m = 0;
    for (int k = 0; k < 64; k++)
        m |= (uint64_t)(p[k] == '\n') << k;
    return m;
#endif
}

/* The common case, nothing pending: every whole line of data that fits max_line is handed out in
 * place, its newline found by one pass over the chunk, 64 bytes at a time (a search call per
 * line costs more than the search on short lines). Returns how many bytes were consumed: up to
 * the first line left to the general path (longer than max_line, or the unterminated tail). */
static size_t feed_whole_lines(struct linebuf *lb, const char *data, size_t len, uint64_t now_ns,
                               linebuf_cb cb, void *ctx)
{
    size_t start = 0; /* first byte of the next line */
    size_t base = 0;
    for (; base + 64 <= len; base += 64) {
        for (uint64_t m = newlines64(data + base); m; m &= m - 1) {
            size_t nl = base + (size_t)__builtin_ctzll(m);
            if (nl - start > lb->max_line)
                return start;
            cb(ctx, data + start, nl - start, false, now_ns);
            start = nl + 1;
        }
    }
    for (size_t from = base; from < len; from = start) { /* the last bytes, under 64 */
        const char *q = memchr(data + from, '\n', len - from);
        if (!q)
            break;
        size_t nl = (size_t)(q - data);
        if (nl - start > lb->max_line)
            break;
        cb(ctx, data + start, nl - start, false, now_ns);
        start = nl + 1;
    }
    return start;
}

void linebuf_feed(struct linebuf *lb, const char *data, size_t len, uint64_t now_ns, linebuf_cb cb,
                  void *ctx)
{
    while (len > 0) {
        if (lb->len == 0 && !lb->skipping && !lb->have_start) {
            size_t used = feed_whole_lines(lb, data, len, now_ns, cb, ctx);
            data += used;
            len -= used;
            if (!len)
                return;
        }
        if (!lb->have_start) {
            lb->have_start = true;
            lb->start_ns = now_ns;
        }
        const char *nl = memchr(data, '\n', len);
        size_t seg = nl ? (size_t)(nl - data) : len;

        if (lb->skipping) {
            if (!nl)
                return;
            lb->skipping = false;
            lb->have_start = false;
        } else if (lb->len == 0 && nl && seg <= lb->max_line) {
            /* the common case: a whole line inside this chunk, no copy */
            lb->have_start = false;
            cb(ctx, data, seg, false, lb->start_ns);
        } else {
            size_t room = lb->max_line - lb->len;
            size_t take = seg < room ? seg : room;
            bool ok = append(lb, data, take);
            if (!ok || seg > room) {
                /* longer than max_line (or out of memory): deliver what we have as truncated */
                cb(ctx, lb->buf ? lb->buf : "", lb->len, true, lb->start_ns);
                lb->len = 0;
                if (nl) {
                    lb->have_start = false;
                } else {
                    lb->skipping = true;
                    return;
                }
            } else if (nl) {
                lb->have_start = false;
                cb(ctx, lb->buf, lb->len, false, lb->start_ns);
                lb->len = 0;
            } else {
                return; /* wait for the rest of the line */
            }
        }
        data += seg + 1;
        len -= seg + 1;
    }
}

void linebuf_flush(struct linebuf *lb, linebuf_cb cb, void *ctx)
{
    if (lb->len > 0)
        cb(ctx, lb->buf, lb->len, false, lb->start_ns);
    lb->len = 0;
    lb->skipping = false;
    lb->have_start = false;
}

const char *linebuf_pending(const struct linebuf *lb, size_t *ret_len, uint64_t *ret_arrival_ns)
{
    if (lb->skipping || !lb->have_start || !lb->len)
        return NULL;
    *ret_len = lb->len;
    *ret_arrival_ns = lb->start_ns;
    return lb->buf;
}
