/* intern.h — the converter's string table: each distinct string once, numbered in first-use
 * order, as a profile's stringArray wants its marker names.
 *
 * Open addressing over one arena of bytes: a lookup is a hash and a compare, and an entry costs
 * its bytes and 8 more. Ids are dense (0, 1, ...) and stable; intern_truncate takes back every
 * entry from an id on, which is how a conversion that writes a profile while it follows a stream
 * undoes the names that writing added (profile_conv.h). A zeroed struct intern is an empty table.
 */
#ifndef RESMON_INTERN_H
#define RESMON_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct intern {
    char *arena;
    size_t alen, acap;
    struct ient {
        size_t off;
        uint32_t len;
    } *ent;        /* ent[id]: the string of id, at arena + off */
    uint32_t n, ecap;
    uint32_t *tab; /* id + 1, 0 = empty */
    uint32_t tcap;
};

/* The hash of s[0, n) the table uses (and the converter's other tables). */
uint64_t intern_hash(const char *s, size_t n);

void intern_release(struct intern *t);
/* The id of s, or -1 when it is not interned. */
int64_t intern_find(const struct intern *t, const char *s, size_t n);
/* Returns the id of s (adding it), or -ENOMEM. */
int64_t intern_get(struct intern *t, const char *s, size_t n);
/* Forget every entry from id n on. */
void intern_truncate(struct intern *t, uint32_t n);

#endif
