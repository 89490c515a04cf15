/* perfherder.h — the run's resource usage as Perfherder data, in the shape mozharness's
 * resource-usage logging gives it, so Perfherder tracks a job's CPU, I/O and memory across pushes
 * as it does for mozharness jobs:
 *
 *   {"framework":{"name":"job_resource_usage"},
 *    "suites":[{"name":"NAME.overall","extraOptions":[],"subtests":[
 *                 {"name":"cpu_percent","value":P}, {"name":"io_write_bytes","value":B},
 *                 {"name":"io.read_bytes","value":B}, {"name":"io_write_time","value":MS},
 *                 {"name":"io_read_time","value":MS}, {"name":"tree_cpu_time","value":S},
 *                 {"name":"tree_max_rss","value":B}, {"name":"tree_io_write_bytes","value":B},
 *                 {"name":"tree_io_read_bytes","value":B}]},
 *              {"name":"NAME.PHASE","subtests":[{"name":"time","value":S},
 *                                                {"name":"cpu_percent","value":P}]}, ...]}
 *
 * The overall suite has mozharness's subtests, in its order: cpu_percent, the machine's busy
 * percentage averaged over the run (or the phase); io_write_bytes and io.read_bytes, the disks'
 * bytes over the run; io_write_time and io_read_time, the time the disks' requests took (ms,
 * summed over requests: /proc/diskstats, as psutil reads it) — the machine's figures, as
 * mozharness measures them (its "io.read_bytes" spelling kept, since Perfherder's series are
 * keyed by name). Then the command's tree, which mozharness does not measure: tree_cpu_time (s),
 * tree_max_rss (bytes), and its own storage I/O, tree_io_write_bytes and tree_io_read_bytes
 * (its processes' /proc/PID/io, the ended ones' included). A figure that was not sampled (-i 0,
 * a run shorter than the interval, no such file) is left out rather than written as 0. A phase has mozharness's
 * time (s) and cpu_percent, and no I/O, as there: the machine's I/O lags the phase that caused
 * it. The phases are the ones the command marked (resmon-run --mark phase-begin/phase-end).
 *
 * Under MOZ_AUTOMATION the supervisor writes this to $MOZ_UPLOAD_DIR/perfherder-data-resource-
 * usage.json (atomically, at the end and at a stop like the profile) and logs it once, at the
 * end, as a "PERFHERDER_DATA: {...}" line on stderr, where Treeherder's log parser finds it (its
 * ingestion drops the job_resource_usage framework, as it does mozharness's: the file among the
 * artifacts is for the tools that read it there). A missing MOZ_UPLOAD_DIR is made.
 */
#ifndef RESMON_PERFHERDER_H
#define RESMON_PERFHERDER_H

#include <stdbool.h>
#include <stddef.h>

struct results;

#define PERFHERDER_FILE "perfherder-data-resource-usage.json"

/* Whether Perfherder data is wanted: getenv("MOZ_AUTOMATION") set and non-empty. */
bool perfherder_active(const char *moz_automation_env);

/* The data of what r read (with RESULTS_SAMPLES), suites named after name, as one line of compact
 * JSON (malloc'ed, NUL-terminated, no newline). end_ms as junit.h. 0, -EINVAL without a meta
 * line, -ENOMEM. */
int perfherder_format(const struct results *r, const char *name, double end_ms, char **ret, size_t *ret_len);
/* Write it atomically to dirfd/path. */
int perfherder_finalize(const struct results *r, const char *name, int dirfd, const char *path, double end_ms);

#endif
