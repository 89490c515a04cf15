/* profile_counters.h — the converter's counters (markers.h, COUNTERS): a {"type":"counter"} line
 * declares one, which reads a numeric field of the markers of one name; each such marker becomes
 * a sample of it. The profile shows them as tracks (profile_write.h writes them).
 *
 * A sample is taken at the end of the interval its marker describes, as the kind says: an amount
 * (what was counted in the interval), a share (a fraction of the interval: its value times the
 * duration) or a level (its value; the change from the last one is stored, as the front-end sums
 * a counter's samples). Every counter starts with a zero at the start of its first interval: the
 * front-end takes a counter's first sample as its origin and draws nothing of it.
 *
 * The tree's CPU and memory counters (the sampler's) also tell what a span of the run cost: the
 * converter asks them for what it closes itself (profile.h, STATE LINES, "cost").
 */
#ifndef RESMON_PROFILE_COUNTERS_H
#define RESMON_PROFILE_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/markers.h"

struct conv;

#define MAX_COUNTERS 32 /* counters one stream may declare; more are ignored */

enum counter_role { ROLE_NONE, ROLE_TREE_CPU, ROLE_TREE_MEM };

/* A counter declared by a counter line and the samples read for it. */
struct counter {
    char *name, *category, *description, *display; /* JSON texts, validated */
    char *key;                                     /* raw text of the data key it reads */
    size_t key_len;
    uint32_t marker;                               /* name id of its markers */
    uint8_t next;                                  /* the next counter of the same markers + 1 */
    enum marker_counter_kind kind;
    enum counter_role role;
    double level;                                  /* MCOUNT_LEVEL: the last level */
    double first_start;                            /* the start of the first sample's interval */
    double *time, *count;
    size_t n, cap;
};

void counter_release(struct counter *k);

/* {"type":"counter","name":S,"category":S,"description":S,"marker":S,"key":S,"kind":S,
 * "display":{...}}: 1 taken, 0 invalid (skipped), -errno. A second definition of a name, or one
 * past MAX_COUNTERS, is ignored. */
int counters_take_line(struct conv *c, const char *line, size_t len);

/* The first counter of markers named id (the others follow by next), or NULL. */
struct counter *counter_for(struct conv *c, int64_t id);
/* A marker of counter k with payload data[0..len) from start to end (end NAN: an instant): its
 * sample. 0, or -ENOMEM. */
int counter_take(struct counter *k, const char *data, size_t len, double start, double end);

/* Samples in time order (they are written in order; a stream edited by hand may not be). */
int counter_sort(struct counter *k);
/* Whether every sample of k is zero (profile_write.c, HIDDEN COUNTERS); and whether any counter
 * with samples is. */
bool counter_is_zero(const struct counter *k);
bool counters_any_zero(const struct conv *c);

/* The counter with samples that has role, or NULL. */
const struct counter *counter_with_role(const struct conv *c, enum counter_role role);
/* What an amount counter counted between a and b (ms): its samples' amounts, each spread evenly
 * over the interval before it (the first over the one before its own). */
double counter_amount_between(const struct counter *k, double a, double b);
/* The highest level a level counter had at a sample within [a, b]; false when none was taken. */
bool counter_peak_between(const struct counter *k, double a, double b, double *ret);

#endif
