/* Fuzz target: the line splitter. Byte 0 sets max_line; chunk sizes come from the data. Every
 * delivered line is at most max_line bytes, holds no '\n', and the bytes of non-truncated lines
 * plus their newlines add up to the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/linebuf.h"

struct acc {
    size_t max, bytes;
    bool truncated;
};

static void cb(void *ctx, const char *line, size_t len, bool truncated, uint64_t arrival)
{
    struct acc *a = ctx;
    (void)arrival;
    if (len > a->max || memchr(line, '\n', len))
        abort();
    if (truncated)
        a->truncated = true;
    a->bytes += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct acc a = {1 + data[0] % 64, 0, false};
    struct linebuf *lb;
    if (linebuf_new(a.max, &lb) < 0)
        abort();
    size_t i = 1, newlines = 0;
    for (size_t k = 1; k < size; k++)
        newlines += data[k] == '\n';
    while (i < size) {
        size_t chunk = 1 + data[i] % 7;
        if (chunk > size - i)
            chunk = size - i;
        linebuf_feed(lb, (const char *)data + i, chunk, i, cb, &a);
        i += chunk;
    }
    linebuf_flush(lb, cb, &a);
    if (!a.truncated && a.bytes + newlines != size - 1)
        abort();
    linebuf_free(lb);
    return 0;
}
