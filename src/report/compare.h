/* compare.h — resmon-run --compare OLD NEW: two runs side by side, from their profiles or their
 * streams. Which tests are new failures (unexpected in NEW, not in OLD), which were fixed, which
 * got slower or fatter (past a threshold, in percent and at least COMPARE_MIN_SLOWER_MS /
 * COMPARE_MIN_FATTER_BYTES, so that noise on tiny tests is not news), which are new or gone, and
 * the runs' totals (wall time, tree CPU, peak memory, tests, unexpected results).
 *
 * A run is read with results.h: a stream directly; a full profile (plain or gzip) as the stream it
 * was converted from, by writing its markers back as stream lines — so a test, its status and
 * its cost mean the same whichever file is given. A profile's markers are its first thread's
 * (the run, its samples) and those of every other thread that holds tests. The text is for a terminal, the Markdown for a
 * CI's job summary.
 */
#ifndef RESMON_COMPARE_H
#define RESMON_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#define COMPARE_MIN_SLOWER_MS 100.0
#define COMPARE_MIN_FATTER_BYTES (4.0 * 1024 * 1024) /* a process more or less is not news */
#define COMPARE_MAX_LIST 20 /* entries shown per list; the rest are counted */

struct results;

/* Read the run at path (a stream or a full profile) into a new reader (*ret; results_free it).
 * 0, -EINVAL when it is neither, or -errno. */
int compare_load(const char *path, struct results **ret);

struct compare_options {
    double threshold_pct; /* slower / fatter past this many percent (0: 20) */
    bool markdown;
};

/* The comparison as text or Markdown (malloc'ed; *ret_len bytes); *regressions: the count of new
 * failures, slower and fatter tests. 0 or -ENOMEM. */
int compare_format(const struct results *old, const struct results *new_, const char *old_name,
                   const char *new_name, const struct compare_options *opt, char **ret, size_t *ret_len,
                   size_t *regressions);

#endif
