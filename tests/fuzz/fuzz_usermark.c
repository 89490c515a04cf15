/* Fuzz target: records from the command. The input is split at '\n' into records. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/usermark.h"

static void marker(void *ctx, const char *name, uint64_t start, uint64_t end, int cat,
                   const char *data, size_t len)
{
    (void)ctx;
    (void)cat;
    if (!name || !*name || (end != MARKER_INSTANT && end < start) || len < 2 || data[0] != '{' ||
        strlen(data) != len)
        abort();
}

static uint64_t cpu(void *ctx)
{
    static uint64_t t;
    (void)ctx;
    return t += 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct usermark *um;
    struct marker_sink sink = {.marker = marker};
    struct usermark_probe probe = {cpu, NULL};
    struct usermark_config cfg = {UINT64_C(1000000000), 2};
    if (usermark_new(&cfg, &sink, &probe, &um) < 0)
        return 0;
    uint64_t now = UINT64_C(2000000000);
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        usermark_record(um, p, n, now += 1000);
        p += n + 1;
    }
    usermark_finish(um, now + 1);
    usermark_free(um);
    um = NULL;
    return 0;
}
