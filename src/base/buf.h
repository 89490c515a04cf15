/* buf.h — the growable text buffer: how a module builds a text of unknown length (a payload, a
 * summary, a workflow command, a comparison) before handing it on whole.
 *
 *   struct buf b = {0};
 *   buf_puts(&b, "tests: ");
 *   buf_printf(&b, "%u failed", n);
 *   if (!buf_end(&b)) ...out of memory: the text is incomplete...
 *   ...b.p[0, b.len) is the text, a NUL after it...
 *   buf_release(&b);
 *
 * Appending is a bounds check and a memcpy (inline: the test-log payloads are built on a hot
 * path); growing doubles the capacity. Running out of memory is sticky: failed stays set and the
 * text is incomplete until buf_reset, so a caller checks once, at the end. There is always room
 * for the NUL after the text; buf_end writes it (an append does not: a payload is made of many
 * small pieces). The JSON writer (jsonw.h) keeps a buffer of its own: it is a writer, with its
 * own state. */
#ifndef RESMON_BUF_H
#define RESMON_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct buf {
    char *p; /* NULL until the first append */
    size_t len, cap;
    bool failed; /* memory ran out: the text is incomplete */
};

/* Room for more bytes and the NUL after them; false (failed set) when there is none. */
bool buf_grow(struct buf *b, size_t more);

static inline void buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->cap - b->len <= n && !buf_grow(b, n))
        return;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
}

static inline void buf_puts(struct buf *b, const char *s) { buf_add(b, s, strlen(s)); }

/* Appends the formatted text whole, however long. */
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Empty again (the memory is kept), failed cleared. */
static inline void buf_reset(struct buf *b)
{
    b->len = 0;
    b->failed = false;
}

/* The NUL after the text (b.p a C string, even when empty); false when the text is incomplete
 * (out of memory). */
static inline bool buf_end(struct buf *b)
{
    if (!b->p && !buf_grow(b, 0))
        return false;
    b->p[b->len] = '\0';
    return !b->failed;
}

void buf_release(struct buf *b);

#endif
