/* buf.c — see buf.h. */
#include "base/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Out of line: the inline append stays a compare and a copy. */
__attribute__((noinline)) bool buf_grow(struct buf *b, size_t more)
{
    if (b->failed)
        return false;
    size_t cap = b->cap ? b->cap : 512;
    while (cap - b->len < more + 1) { /* + 1: room for the final NUL */
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    if (cap != b->cap) {
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return false;
        }
        b->p = p;
        b->cap = cap;
    }
    return true;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if (!buf_grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void buf_release(struct buf *b)
{
    free(b->p);
    *b = (struct buf){0};
}
