/* stream.h — the JSON Lines stream: the profile's source of truth while the command runs
 * (profile-format.md §1–§2).
 *
 * stream_open() creates FILE as a new file of its own (outfile.h: never through a symlink, never
 * into a file that was there, which is replaced, unless it is not a regular file or someone
 * else's in a shared directory; mode 0644 & ~umask, as resmon-run reads it back), writes
 * the compact meta line (first bytes: {"type":"meta"), the thread line and a clock line, and then
 * appends one line per marker or state line, each built in memory and written with ONE write(2) on
 * an O_APPEND descriptor, so the file is complete up to the last event at every instant. Times are
 * converted from monotonic ns to ms since t0 with 3 decimals.
 *
 * Held lines: after stream_hold(s, true) lines are collected in memory (whole lines only) and
 * written together, one write(2) for all of them, by stream_flush(); also when 256 KiB are held,
 * and by stream_sync() and stream_close(). An event loop holds the lines an event produces and
 * flushes before it waits again (and before anything else that may block or signal), so the file
 * is still complete up to the last event whenever the program is not busy handling one; a line is
 * still never split between writes. A chatty test log then costs one system call per chunk of
 * output instead of one per marker.
 *
 * Lines, in order:
 *   {"type":"meta",...}     meta of profile-format.md §3 (no profilingEndTime), upstream key order,
 *                           then the extra keys (an extra key equal to a standard key replaces its
 *                           value in place)
 *   {"type":"thread",...}   thread of §4 without stringArray and markers
 *   {"type":"clock","monotonicNs":T0}
 *                           the CLOCK_MONOTONIC instant of profile time 0, so that state lines can
 *                           carry raw monotonic times (profile.h); readers ignore this type
 *   {"type":"marker","name":S,"startTime":MS,"endTime":MS|null,"data":{...}[,"category":N]}
 *                           one per marker (data null when the producer gave none; category
 *                           omitted when 0)
 *   any state line           verbatim, as handed to the sink (markers.h, profile.h)
 *
 * fsync cadence: fdatasync at most every fsync_interval_ns, checked when a line is written
 * (0: only on stream_sync()).
 *
 * A write that fails (disk full, a quota, the file-size limit, an I/O error) is never fatal — the
 * command must not notice — and loses nothing it can keep: what was not written (from the exact
 * byte a short write stopped at) waits in memory, up to STREAM_BACKLOG_MAX bytes, and is written
 * first at the next flush or write, so the file has no torn line and no line out of place once
 * space comes back. Past the bound, new lines are dropped whole and counted (stream_health).
 * Only at stream_close, if the backlog still cannot be written, is it lost (and a fragment may
 * stay, which readers skip as a torn line).
 *
 * Locking: the stream's file is locked (flock, exclusive) for the stream's life, so a second run
 * given the same path is refused (-EBUSY) instead of mixing its lines into ours; the profile
 * renamed over the path stays locked while the run lives (profile.h, profile_end.lock_fd).
 *
 * Finalization (profile.h) reads the stream back through stream_fd() (opened O_RDWR); after the
 * full profile has been renamed over FILE, the stream's inode lives on through this fd, so later
 * markers (the kill steps) can still be appended and a second finalization includes them.
 */
#ifndef RESMON_STREAM_H
#define RESMON_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/markers.h"

struct stream_meta {
    const char *product;        /* meta.product and thread processName */
    double interval_ms;         /* meta.interval */
    double start_wall_ms;       /* meta.startTime: wall clock of t0 (one instant with t0_ns) */
    uint64_t t0_ns;             /* monotonic profile time 0 */
    int logical_cpus, physical_cpus;
    uint64_t main_memory;       /* bytes */
    uint64_t max_markers;       /* meta.maxMarkers: the converter's marker limit (profile.h); 0 none */
    /* extra meta keys, merged last: keys[i] = values[i] (strings) */
    const char *const *extra_keys;
    const char *const *extra_values;
    size_t n_extra;
};

struct stream;

/* Create the stream at path and write its header lines. Fails with -errno so the caller can refuse
 * to start the command: outfile_create()'s errors (-ELOOP, -EINVAL, -EISDIR, -EPERM, -EBUSY when
 * another run holds the file: locking above), -EACCES, -ENOSPC/-EIO when the header cannot be
 * written, -ENOMEM; outfile_why() words them. dirfd: directory for
 * relative paths (AT_FDCWD). */
int stream_open(int dirfd, const char *path, const struct stream_meta *meta, uint64_t fsync_interval_ns,
                struct stream **ret);
/* Closes the fd (no fsync: call stream_sync first if wanted). NULL is a no-op. */
void stream_close(struct stream *s);

/* The sink that appends to this stream. Valid while s lives. */
const struct marker_sink *stream_sink(struct stream *s);

/* Direct forms of the sink's two callbacks. */
void stream_marker(struct stream *s, const char *name, uint64_t start_ns, uint64_t end_ns, int category,
                   const char *data, size_t data_len);
void stream_state(struct stream *s, const char *line, size_t len);
/* The sink's state_open and state_retract (markers.h): while lines are held, a state line can be
 * taken back until the next flush; the flush writes the other held lines in their order. */
uint64_t stream_state_open(struct stream *s, const char *line, size_t len);
bool stream_state_retract(struct stream *s, uint64_t handle);

/* Batch lines until stream_flush() (true), or write each at once (false, the default; switching
 * to false flushes). */
void stream_hold(struct stream *s, bool hold);
/* Write the held lines now (one write). Returns 0 or -errno (also counted in the error figures).
 * NULL is a no-op. */
int stream_flush(struct stream *s);

/* ms since t0, rounded to 3 decimals (the stream's and the profile's time axis). Negative for
 * instants before t0. */
double stream_ms(const struct stream *s, uint64_t mono_ns);

int stream_fd(const struct stream *s);
/* The file that was at the path before (removed: outfile_create_keep), open until stream_close()
 * unless taken here (then the caller's to close); -1 when there was none. */
int stream_take_replaced(struct stream *s);
/* Hand every run of bytes written to the file, as it lands, to tap (NULL: none): a follower of
 * the stream gets them without reading the file back (profile.h, fed mode). The runs make up
 * whole lines of the writer's, in the layout above, unless a line begun in the file can no longer
 * be finished (no memory to keep its rest after a failed write): then tap(ctx, NULL, 0) says so,
 * once, before the next run. */
void stream_set_tap(struct stream *s, void (*tap)(void *ctx, const char *buf, size_t len), void *ctx);
/* Lines written to the file (held and waiting ones not yet). */
uint64_t stream_lines(const struct stream *s);
/* write(2) calls that failed, and the last such error (-errno, 0 if none). */
uint64_t stream_write_errors(const struct stream *s);
int stream_last_error(const struct stream *s);

#define STREAM_BACKLOG_MAX (16u * 1024 * 1024)
struct stream_health {
    int error;              /* the error of the last write, 0 when it succeeded */
    uint64_t failed_writes; /* write(2) calls that failed so far */
    uint64_t lines_waiting; /* lines kept in memory for a retry (a partly written one counts) */
    uint64_t lines_lost;    /* lines dropped: the backlog was full, or could not be written at
                               the end */
};
void stream_health(const struct stream *s, struct stream_health *ret);
/* fdatasync now (called before finalizing). Returns 0 or -errno. */
int stream_sync(struct stream *s);

/* Append the stream's representation of a time (ms since t0 with at most 3 decimals, at least
 * one: "35.182", "100.0") to buf, which must hold 32 bytes. Returns the length. Shared with the
 * profile converter so both files print times identically. */
size_t stream_format_ms(double ms, char *buf);

/* The fixed members of the thread object that follow "processName" (compact JSON members without
 * braces), for the converter when a stream lacks its thread line. Static storage. */
const char *stream_thread_fields(void);
/* The name of the run's own thread, and so of its track (a dumped process's track is named after
 * its main thread: profile_stacks.c keeps the two apart). */
#define STREAM_RUN_THREAD_NAME "resmon-run"

#endif
