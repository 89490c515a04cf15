/* perfherder.h — the run's resource usage as Perfherder data, in the shape mozharness's
 * resource-usage logging gives it, so Perfherder tracks a job's CPU, I/O and memory across pushes
 * as it does for mozharness jobs:
 *
 *   {"framework":{"name":"job_resource_usage"},
 *    "suites":[{"name":"NAME.overall","extraOptions":[],"subtests":[
 *                 {"name":"cpu_percent","value":P}, {"name":"io_write_bytes","value":B},
 *                 {"name":"io.read_bytes","value":B}, {"name":"tree_cpu_time","value":S},
 *                 {"name":"tree_max_rss","value":B}]},
 *              {"name":"NAME.PHASE","subtests":[{"name":"time","value":S},
 *                                                {"name":"cpu_percent","value":P}]}, ...]}
 *
 * cpu_percent is the machine's busy percentage averaged over the run (or the phase), the I/O
 * figures the machine's disk bytes over the run, as mozharness measures them (its "io.read_bytes"
 * spelling kept, since Perfherder's series are keyed by name); tree_cpu_time (s) and
 * tree_max_rss (bytes) are the command's tree, which mozharness does not measure. The phases are
 * the ones the command marked (resmon-run --mark phase-begin/phase-end). mozharness's I/O times
 * are not measured here and not written.
 *
 * Under MOZ_AUTOMATION the supervisor writes this to $MOZ_UPLOAD_DIR/perfherder-data-resource-
 * usage.json (atomically, at the end and at a stop like the profile) and logs it once, at the
 * end, as a "PERFHERDER_DATA: {...}" line on stderr, which Treeherder's log parser reads.
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
