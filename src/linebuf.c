/* linebuf.c — see linebuf.h.
 *
 * Lines that arrive whole inside one chunk are handed out straight from the caller's buffer; only
 * the piece of a line that straddles chunks is copied. The copy buffer grows on demand up to
 * max_line and never beyond, so a line without a newline costs at most max_line bytes however
 * long it runs.
 */
#include "linebuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

void linebuf_feed(struct linebuf *lb, const char *data, size_t len, uint64_t now_ns, linebuf_cb cb,
                  void *ctx)
{
    while (len > 0) {
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
