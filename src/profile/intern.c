/* intern.c — see intern.h. */
#include "profile/intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Eight bytes per step: names and keys are short, and this runs for every stream line. */
uint64_t intern_hash(const char *s, size_t n)
{
    const uint64_t k = UINT64_C(0x9E3779B97F4A7C15);
    uint64_t h = k ^ n, w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * k;
        h ^= h >> 31;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * k;
    h ^= h >> 29;
    h *= UINT64_C(0xBF58476D1CE4E5B9);
    return h ^ (h >> 32);
}

void intern_release(struct intern *t)
{
    free(t->arena);
    free(t->ent);
    free(t->tab);
    memset(t, 0, sizeof *t);
}

static int intern_grow(struct intern *t)
{
    uint32_t ncap = t->tcap ? t->tcap * 2 : 64;
    if (ncap == 0 || ncap > (UINT32_C(1) << 30))
        return -ENOMEM;
    uint32_t *tab = calloc(ncap, sizeof *tab);
    if (!tab)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t h = (uint32_t)intern_hash(t->arena + t->ent[i].off, t->ent[i].len) & (ncap - 1);
        while (tab[h])
            h = (h + 1) & (ncap - 1);
        tab[h] = i + 1;
    }
    free(t->tab);
    t->tab = tab;
    t->tcap = ncap;
    return 0;
}

int64_t intern_find(const struct intern *t, const char *s, size_t n)
{
    if (!t->tcap)
        return -1;
    uint32_t h = (uint32_t)intern_hash(s, n) & (t->tcap - 1);
    while (t->tab[h]) {
        const struct ient *x = &t->ent[t->tab[h] - 1];
        if (x->len == n && memcmp(t->arena + x->off, s, n) == 0)
            return t->tab[h] - 1;
        h = (h + 1) & (t->tcap - 1);
    }
    return -1;
}

int64_t intern_get(struct intern *t, const char *s, size_t n)
{
    if (n > UINT32_MAX)
        return -ENOMEM;
    if ((uint64_t)(t->n + 1) * 2 > t->tcap && intern_grow(t) < 0)
        return -ENOMEM;
    uint32_t h = (uint32_t)intern_hash(s, n) & (t->tcap - 1);
    while (t->tab[h]) {
        struct ient *x = &t->ent[t->tab[h] - 1];
        if (x->len == n && memcmp(t->arena + x->off, s, n) == 0)
            return t->tab[h] - 1;
        h = (h + 1) & (t->tcap - 1);
    }
    if (t->n >= (UINT32_C(1) << 30))
        return -ENOMEM;
    if (t->alen + n > t->acap) {
        size_t cap = t->acap ? t->acap : 4096;
        while (cap < t->alen + n)
            cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a)
            return -ENOMEM;
        t->arena = a;
        t->acap = cap;
    }
    if (t->n == t->ecap) {
        uint32_t cap = t->ecap ? t->ecap * 2 : 64;
        struct ient *x = realloc(t->ent, (size_t)cap * sizeof *x);
        if (!x)
            return -ENOMEM;
        t->ent = x;
        t->ecap = cap;
    }
    memcpy(t->arena + t->alen, s, n);
    t->ent[t->n] = (struct ient){t->alen, (uint32_t)n};
    t->alen += n;
    t->tab[h] = t->n + 1;
    return t->n++;
}

/* Forget every entry from id n on (a conversion's write undoes what it added). */
void intern_truncate(struct intern *t, uint32_t n)
{
    if (n >= t->n)
        return;
    t->alen = t->ent[n].off;
    t->n = n;
    memset(t->tab, 0, t->tcap * sizeof *t->tab);
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t h = (uint32_t)intern_hash(t->arena + t->ent[i].off, t->ent[i].len) & (t->tcap - 1);
        while (t->tab[h])
            h = (h + 1) & (t->tcap - 1);
        t->tab[h] = i + 1;
    }
}
