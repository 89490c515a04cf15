/* stream.h — the JSON Lines stream: the profile's source of truth while the command runs
 * (profile-format.md §1–§2).
 *
 * stream_open() creates FILE (never following a symlink at the path), writes the compact meta line
 * (first bytes: {"type":"meta") and the thread line, and then appends one line per marker or state
 * line, each built in memory and written with ONE write(2) on an O_APPEND descriptor, so the file
 * is complete up to the last event at every instant. Times are converted from monotonic ns to ms
 * since t0 with 3 decimals.
 *
 * fsync cadence: at most every fsync_interval_ns while lines are being written (0: never).
 * A failed write (disk full) is counted and remembered, never fatal: the command must not notice.
 *
 * Finalization (profile.h) reads the stream back through stream_fd(); after the full profile has
 * been renamed over FILE, the stream's inode lives on through this fd, so later markers (the kill
 * steps) can still be appended and a second finalization includes them.
 */
#ifndef RESMON_STREAM_H
#define RESMON_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "markers.h"

struct stream_meta {
    const char *product;        /* meta.product and thread processName */
    double interval_ms;         /* meta.interval */
    double start_wall_ms;       /* meta.startTime: wall clock of t0 (one instant with t0_ns) */
    uint64_t t0_ns;             /* monotonic profile time 0 */
    int logical_cpus, physical_cpus;
    uint64_t main_memory;       /* bytes */
    /* extra meta keys, merged last: keys[i] = values[i] (strings) */
    const char *const *extra_keys;
    const char *const *extra_values;
    size_t n_extra;
};

struct stream;

/* Create the stream at path. Fails with -errno (e.g. -ELOOP for a symlink, -EACCES) so the caller
 * can refuse to start the command. dirfd: directory for relative paths (AT_FDCWD). */
int stream_open(int dirfd, const char *path, const struct stream_meta *meta, uint64_t fsync_interval_ns,
                struct stream **ret);
void stream_close(struct stream *s);

/* The sink that appends to this stream. Valid while s lives. */
const struct marker_sink *stream_sink(struct stream *s);

/* ms since t0, rounded to 3 decimals (the stream's and the profile's time axis). */
double stream_ms(const struct stream *s, uint64_t mono_ns);

int stream_fd(const struct stream *s);
/* Lines written / lines that failed to be written (e.g. ENOSPC). */
uint64_t stream_lines(const struct stream *s);
uint64_t stream_write_errors(const struct stream *s);
/* fsync now (called before finalizing). */
int stream_sync(struct stream *s);

#endif
