/* profile_counters.c — see profile_counters.h. */
#include "profile/profile_counters.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "observe/sampler.h"
#include "profile/profile_conv.h"

void counter_release(struct counter *k)
{
    free(k->name);
    free(k->category);
    free(k->description);
    free(k->display);
    free(k->key);
    free(k->time);
    free(k->count);
}

struct counter *counter_for(struct conv *c, int64_t id)
{
    if (!c->ncounters || id < 0 || (size_t)id >= c->counter_of_len || !c->counter_of[id])
        return NULL;
    return &c->counters[c->counter_of[id] - 1];
}

int counters_take_line(struct conv *c, const char *line, size_t len)
{
    struct js_iter it;
    struct js_member m, name = {0}, cat = {0}, desc = {0}, marker = {0}, key = {0}, kind = {0}, disp = {0};
    int r;
    if (js_obj_begin(&it, line, line + len) < 0)
        return 0;
    while ((r = js_obj_next(&it, &m)) > 0) {
        if (js_key_is(&m, "name"))
            name = m;
        else if (js_key_is(&m, "category"))
            cat = m;
        else if (js_key_is(&m, "description"))
            desc = m;
        else if (js_key_is(&m, "marker"))
            marker = m;
        else if (js_key_is(&m, "key"))
            key = m;
        else if (js_key_is(&m, "kind"))
            kind = m;
        else if (js_key_is(&m, "display"))
            disp = m;
    }
    if (r < 0 || js_skip_ws(it.p, it.e) != it.e)
        return 0;
    const struct js_member *strs[] = {&name, &cat, &marker, &key, &kind};
    for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
        if (!strs[i]->val || strs[i]->val[0] != '"')
            return 0;
    if ((desc.val && desc.val[0] != '"') || (disp.val && disp.val[0] != '{'))
        return 0;
    enum marker_counter_kind k;
    if (js_val_is_str(&kind, "amount"))
        k = MCOUNT_AMOUNT;
    else if (js_val_is_str(&kind, "level"))
        k = MCOUNT_LEVEL;
    else if (js_val_is_str(&kind, "share"))
        k = MCOUNT_SHARE;
    else
        return 0;
    for (unsigned i = 0; i < c->ncounters; i++)
        if (strlen(c->counters[i].name) == name.val_len && memcmp(c->counters[i].name, name.val, name.val_len) == 0)
            return 1;
    if (c->ncounters == MAX_COUNTERS)
        return 1;
    int64_t id = conv_intern_name(c, marker.val, marker.val_len);
    if (id < 0)
        return (int)id;
    if ((size_t)id >= c->counter_of_len) {
        size_t n = (size_t)id + 64;
        uint8_t *x = realloc(c->counter_of, n);
        if (!x)
            return -ENOMEM;
        memset(x + c->counter_of_len, 0, n - c->counter_of_len);
        c->counter_of = x;
        c->counter_of_len = n;
    }
    struct counter *ct = &c->counters[c->ncounters];
    *ct = (struct counter){.kind = k, .marker = (uint32_t)id};
    ct->name = strndup(name.val, name.val_len);
    ct->category = strndup(cat.val, cat.val_len);
    ct->description = desc.val ? strndup(desc.val, desc.val_len) : strndup("\"\"", 2);
    ct->display = disp.val ? strndup(disp.val, disp.val_len) : NULL;
    ct->key = strndup(key.val + 1, key.val_len - 2);
    ct->key_len = key.val_len - 2;
    if (!ct->name || !ct->category || !ct->description || (disp.val && !ct->display) || !ct->key) {
        counter_release(ct);
        return -ENOMEM;
    }
    /* The tree's CPU and memory also cost what the converter closes itself (profile.h). */
    const struct marker_counter *cpu = &sampler_tree_cpu_counter, *mem = &sampler_tree_mem_counter;
    if (js_val_is_str(&marker, cpu->marker) && js_val_is_str(&key, cpu->type->fields[cpu->field].key) && k == cpu->kind)
        ct->role = ROLE_TREE_CPU;
    else if (js_val_is_str(&marker, mem->marker) && js_val_is_str(&key, mem->type->fields[mem->field].key) &&
             k == mem->kind)
        ct->role = ROLE_TREE_MEM;
    /* Several counters may read one marker name (each its own key): chained in declaration order. */
    c->ncounters++;
    if (!c->counter_of[id])
        c->counter_of[id] = (uint8_t)c->ncounters;
    else {
        struct counter *last = &c->counters[c->counter_of[id] - 1];
        while (last->next)
            last = &c->counters[last->next - 1];
        last->next = (uint8_t)c->ncounters;
    }
    return 1;
}

static int counter_push(struct counter *k, double t, double count)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 256;
        double *a = realloc(k->time, cap * sizeof *a);
        if (!a)
            return -ENOMEM;
        k->time = a;
        double *b = realloc(k->count, cap * sizeof *b);
        if (!b)
            return -ENOMEM;
        k->count = b;
        k->cap = cap;
    }
    k->time[k->n] = t;
    k->count[k->n] = count;
    k->n++;
    return 0;
}

/* A marker of counter k with payload data[0..len) from start to end (end NAN: an instant): its
 * sample, at the end of the interval it describes. */
int counter_take(struct counter *k, const char *data, size_t len, double start, double end)
{
    struct js_iter it;
    struct js_member m;
    double v = NAN;
    if (!len || js_obj_begin(&it, data, data + len) < 0)
        return 0;
    while (js_obj_next(&it, &m) > 0)
        if (!m.key_escaped && m.key_len == k->key_len && memcmp(m.key, k->key, m.key_len) == 0) {
            if (!js_number(m.val, m.val_len, &v))
                return 0;
            break;
        }
    if (!isfinite(v))
        return 0;
    double t = isnan(end) ? start : end;
    if (!k->n) {
        /* The front-end takes a counter's first sample as its origin and draws nothing of it (a
         * rate needs the time before it; a level is the sum of the changes): every counter starts
         * with a zero at the start of the first interval it measured, so that its first sample,
         * e.g. the CPU of the run's first second, is drawn and counted. */
        k->first_start = start;
        int r = counter_push(k, start, 0);
        if (r < 0)
            return r;
    }
    switch (k->kind) {
    case MCOUNT_AMOUNT:
        return counter_push(k, t, v);
    case MCOUNT_SHARE:
        return counter_push(k, t, isnan(end) ? 0 : v * (end - start));
    case MCOUNT_LEVEL: {
        double d = v - k->level;
        k->level = v;
        return counter_push(k, t, d);
    }
    }
    return 0;
}

static int cmp_sample(const void *a, const void *b)
{
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x < y ? -1 : x > y;
}

int counter_sort(struct counter *k)
{
    bool sorted = true;
    for (size_t i = 1; i < k->n && sorted; i++)
        sorted = k->time[i - 1] <= k->time[i];
    if (sorted)
        return 0;
    double *pairs = malloc(k->n * 2 * sizeof *pairs);
    if (!pairs)
        return -ENOMEM;
    /* a level's changes are re-derived from the levels after sorting */
    double level = 0;
    for (size_t i = 0; i < k->n; i++) {
        level += k->count[i];
        pairs[2 * i] = k->time[i];
        pairs[2 * i + 1] = k->kind == MCOUNT_LEVEL ? level : k->count[i];
    }
    qsort(pairs, k->n, 2 * sizeof *pairs, cmp_sample);
    double prev = 0;
    for (size_t i = 0; i < k->n; i++) {
        k->time[i] = pairs[2 * i];
        double v = pairs[2 * i + 1];
        k->count[i] = k->kind == MCOUNT_LEVEL ? v - prev : v;
        prev = v;
    }
    free(pairs);
    return 0;
}

const struct counter *counter_with_role(const struct conv *c, enum counter_role role)
{
    for (unsigned i = 0; i < c->ncounters; i++)
        if (c->counters[i].role == role && c->counters[i].n)
            return &c->counters[i];
    return NULL;
}

double counter_amount_between(const struct counter *k, double a, double b)
{
    double sum = 0;
    for (size_t i = 0; i < k->n; i++) {
        double t1 = k->time[i], t0 = i ? k->time[i - 1] : k->first_start;
        if (t1 <= a || t0 >= b)
            continue;
        if (t1 <= t0) {
            sum += k->count[i];
            continue;
        }
        double lo = MAX(a, t0), hi = MIN(b, t1);
        sum += k->count[i] * (hi - lo) / (t1 - t0);
    }
    return sum;
}

bool counter_peak_between(const struct counter *k, double a, double b, double *ret)
{
    double level = 0, peak = -1;
    for (size_t i = 0; i < k->n; i++) {
        level += k->count[i];
        if (i && k->time[i] >= a && k->time[i] <= b && level > peak)
            peak = level;
    }
    if (peak < 0)
        return false;
    *ret = peak;
    return true;
}

bool counter_is_zero(const struct counter *k)
{
    for (size_t j = 0; j < k->n; j++)
        if (k->count[j] != 0)
            return false;
    return true;
}

bool counters_any_zero(const struct conv *c)
{
    for (unsigned i = 0; i < c->ncounters; i++)
        if (c->counters[i].n && counter_is_zero(&c->counters[i]))
            return true;
    return false;
}

