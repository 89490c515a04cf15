/* pressure.h — pressure stall information (PSI): how much of the time tasks were kept waiting for
 * a CPU, for memory or for IO. For the machine from /proc/pressure/{cpu,memory,io} (no cgroup
 * needed) and for the command's tree from its cgroup v2 leaf's {cpu,memory,io}.pressure (the
 * cgroup tier). A thrashing job stalls on memory; a starved one on CPU; a hung one on neither:
 * the figures tell them apart.
 *
 * Owner of the Pressure marker type, its counters, and the memory-pressure warning:
 *
 *   name             type      when            data (ms stalled in the sample's interval)
 *   Pressure         Pressure  each sample     cpuSome, memorySome, memoryFull, ioSome, ioFull,
 *                                              memoryAvg60 (% of the last minute, the kernel's)
 *   Tree Pressure    Pressure  each sample     the same, for the tree's cgroup
 *   memory pressure  Warning   a sample where memory "some" avg60 reached PRESSURE_WARN_PCT
 *                              (the tree's when known, else the machine's); once per episode
 *
 * Counters (markers.h): CPU / Memory / IO Pressure of the machine, and of the tree, each drawn
 * as the share of time at least one task was stalled ("some").
 */
#ifndef RESMON_PRESSURE_H
#define RESMON_PRESSURE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/markers.h"

extern const struct marker_type pressure_type;

/* Memory "some" avg60 at or above this is a warning and a line of the summary. */
#define PRESSURE_WARN_PCT 10.0

struct pressure;

/* proc_fd: the /proc directory (an O_PATH fd); cg_dirfd: the tree's cgroup v2 leaf, or -1.
 * Declares the counters it feeds in sink (borrowed). *ret is NULL (and 0 returned) when the
 * kernel keeps no pressure figures (CONFIG_PSI off, or psi=0). */
int pressure_new(int proc_fd, int cg_dirfd, const struct marker_sink *sink, struct pressure **ret);
void pressure_free(struct pressure *p);

/* Read every file and emit the markers of the interval since the last read (the first call only
 * sets the baseline). The kernel's totals are cumulative, so reading less often loses nothing:
 * at most every PRESSURE_MIN_INTERVAL unless force (the last sample), but for the first interval
 * after the baseline, read at the first sample whatever its length. A file that cannot be read
 * leaves its figures out. */
#define PRESSURE_MIN_INTERVAL 1000000000ull /* 1 s */
void pressure_sample(struct pressure *p, uint64_t now_ns, bool force);

/* The worst memory pressure seen: the highest "some" avg60, and when (0: never read). */
struct pressure_worst {
    bool known;
    bool tree;      /* the tree's cgroup, not the machine */
    double avg60;   /* percent */
    uint64_t at_ns; /* the sample that saw it */
};
void pressure_worst_memory(const struct pressure *p, struct pressure_worst *ret);

/* What a sample costs here: the number of files read (0..6). */
unsigned pressure_files(const struct pressure *p);

/* The counters of this module, for tests and the schema list. */
const struct marker_counter *const *pressure_counters(size_t *ret_n);

#endif
