/* profile.h — the full processed profile (profile-format.md §3–§5), always produced by converting
 * a stream: at a normal end, on a stop request, and in recovery of a stream a killed run left.
 *
 * Conversion reads the stream line by line (a torn last line, garbage lines and unknown types are
 * skipped and counted; an over-long line, above PROFILE_MAX_LINE bytes, too), keeps per marker
 * only a small fixed record (32 bytes: name index, category, start, end, payload offset and
 * length in the input), and writes the output in a second sequential pass that copies every
 * payload from the input. Memory is bounded by the marker count, never by payload sizes; no DOM of
 * the markers is ever built. Marker names are interned into stringArray ("(root)" first, then
 * first-use order). Payloads are validated as JSON (and UTF-8) before being trusted: the output is
 * valid whatever the input holds. A category outside meta.categories becomes 0.
 *
 * Phase markers: their payload is kept as is (the producer puts cpuTime there); when it has a
 * numeric cpuTime (ms) and no cpuPercent, the converter adds
 * cpuPercent = cpuTime / (duration × meta.logicalCPUs) as "12.3%".
 *
 * STATE LINES — how a producer says "this started and has not ended yet", so that whatever is
 * still open when the profile is written (normal end, timeout, or a killed run) still appears:
 *
 *   {"type":"open","kind":K,"key":S,"name":N,"startNs":T,"category":C,"data":{...}}
 *   {"type":"close","kind":K,"key":S}
 *
 *   kind      "test", "phase", "suite", ... (free; "test" is special, below)
 *   key       identifies the thing within its kind (the test id, the phase name)
 *   name      the marker name to write when the converter closes it ("test", "Phase", "suite")
 *   startNs   CLOCK_MONOTONIC ns of the start (integer); the stream's clock line maps it to ms.
 *             "startTime" (ms since t0) may be given instead.
 *   category  optional, default 0
 *   data      the payload the closing marker gets (first key "type")
 *
 * Emit the open line when the thing starts, and when it ends emit its marker FIRST, then the
 * close line (a kill between the two then leaves a duplicate, never a loss). Opens of the same
 * (kind,key) nest: a close ends the most recent open one. Any (kind,key) still open at the end of
 * the stream becomes a marker from its start to profilingEndTime; for kind "test" the payload gets
 * "status":open_status and "color" ("purple" for TIMEOUT, "orange" otherwise) unless it already
 * has them. Lines with other fields are tolerated; unknown keys are ignored.
 *
 * MARKER LIMIT. Memory (a record per marker) and the profile's size grow with the markers, and a
 * run may print tests without end: neither may grow without bound. The meta line's integer
 * "maxMarkers" (PROFILE_MAX_MARKERS_DEFAULT when absent; 0: no limit) is how many markers are kept
 * before the converter leaves some out. Past it, a marker whose payload's "color" is "green" (a
 * test or subtest that went as expected) is left out; past twice it, every marker is, except
 * those of the run's end (payload types Timeout, KillStep, Finalize, Command), for which
 * PROFILE_RUN_END_RESERVE more records are kept. Tests still open when the profile is written
 * still become markers. What was left out is counted (profile_stats.left_out) and said in a
 * "markers left out" Warning marker at the profile's end.
 *
 * LATE MESSAGES. Some harnesses print a failure's text after the test's result (testlog.h):
 *
 *   {"type":"message","test":NAME,"message":TEXT[,"status":STATUS]}
 *
 * gives TEXT to the "test" marker whose payload's "test" is NAME (and "status" STATUS, when the
 * line names one: a test with two results, testlog.h), when that marker went
 * otherwise than expected (its "color" is not "green") and has no "message": the payload is
 * written with "message":TEXT added. A marker can be given one message; one that nothing takes is
 * passed by. Bounded like the rest: the first 65 536 such markers can be given one (each payload
 * of at most 64 KiB, TEXT of at most 8 KiB as JSON text, 64 MiB in all); the search starts after
 * the marker given the last one, since harnesses print the texts in the order the tests ended.
 */
#ifndef RESMON_PROFILE_H
#define RESMON_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/streamread.h"

/* Longest stream line the converter accepts (longer lines are skipped and counted). Payloads are
 * also limited to this size. */
#define PROFILE_MAX_LINE SREAD_MAX_LINE

/* MARKER LIMIT above. 2 000 000 markers: 64 MiB of records, a profile of about 300 MiB. */
#define PROFILE_MAX_MARKERS_DEFAULT 2000000u
#define PROFILE_MAX_MARKERS_MAX (UINT64_C(1) << 40)
#define PROFILE_RUN_END_RESERVE 4096u

struct profile_end {
    double end_ms;           /* profilingEndTime; < 0: take the last timestamp seen in the stream */
    const char *open_status; /* status given to tests still open: "TIMEOUT" or "INCOMPLETE" (NULL:
                                "INCOMPLETE") */
    bool gzip;               /* write the profile gzip-compressed (as the profiler and Treeherder
                                read it); the stream itself is always plain */
    int *lock_fd;            /* not NULL: the profile, locked (flock) before it is renamed into
                                place, stays open in *lock_fd (the one there before is closed), so
                                that while a run lives its path is never free for another run */
    bool no_sync;            /* the profile is not fsynced (outfile.h): a run shorter than the
                                stream's fsync interval, which has nothing on disk that a crash
                                could take (its stream was never flushed either) */
    bool recovered;          /* the stream of a run that is gone (--recover): the command, still
                                open, is shown as cut off where the record ends, not as running */
};

/* Whether a profile written to path is compressed by default: its name ends in ".gz". */
bool profile_path_wants_gzip(const char *path);

struct profile_stats {
    uint64_t markers;       /* markers written */
    uint64_t counters;      /* counters written (markers.h, COUNTERS) */
    uint64_t skipped_lines; /* torn/garbage/over-long lines skipped */
    uint64_t closed_open;   /* open tests/phases closed by the converter */
    uint64_t left_out;      /* markers left out past the marker limit */
    uint64_t bytes;         /* size of the profile written (compressed, with gzip) */
    double end_ms;          /* the profilingEndTime written */
};

/* Convert the stream readable at in_fd (read from offset 0 with pread; the fd's offset is not
 * used) into a full profile written to out_fd (with write(2), from its current offset). Returns 0,
 * -EINVAL when the input is not a stream (first line not a valid meta line), or -errno. */
int profile_convert(int in_fd, int out_fd, const struct profile_end *end, struct profile_stats *ret_stats);

/* Finalize: convert in_fd into a temporary file beside path (in directory dirfd, created
 * O_EXCL|O_NOFOLLOW, mode 0666 & ~umask), fsync it, rename it over path, fsync the directory.
 * On failure the temporary file is removed and path is untouched. Safe to call again later on
 * the same in_fd (the stream lives on after the rename): the new profile replaces the old one. */
int profile_finalize(int in_fd, int dirfd, const char *path, const struct profile_end *end,
                     struct profile_stats *ret_stats);

/* FOLLOWING A RUN. Pass 1 (reading and indexing the lines) can run while the stream is still
 * being written, so that a finalization, above all the one of a stop request, only has the lines
 * written since the last update left to read before it writes: the same conversion, done ahead.
 * A follower reads complete lines only (a line without its newline yet waits for it; at a write,
 * such a tail counts as one damaged line, which is what the stream's writer makes of a torn
 * write). It keeps the per-marker records plus what is open right now: entries for opened and
 * closed state lines are dropped at their close, so memory grows with markers, not with tests.
 *
 *   profile_conv_new(stream_fd, &pc);            after the stream's header lines are written
 *   profile_conv_update(pc);                     now and then while the run writes lines
 *   profile_conv_finalize(pc, dirfd, path, ...); at a stop request, at the end (repeatable)
 *   profile_conv_free(pc);
 *
 * Errors are sticky: after a failed update (-ENOMEM, an I/O error, -EINVAL when the first line is
 * not a meta line) every later call returns the same error, and the caller falls back to
 * profile_finalize(), which reads the whole stream again. Writing a profile leaves the follower's
 * state as it was (open items are closed in the output only), so it can be called repeatedly. */
struct profile_conv;
int profile_conv_new(int in_fd, struct profile_conv **ret);
void profile_conv_free(struct profile_conv *pc);
int profile_conv_update(struct profile_conv *pc);
/* The sampled stacks the follower holds (profile_cpu.h), named as of the last profile written;
 * NULL: none. */
const struct pcpu *profile_conv_cpu(const struct profile_conv *pc);
/* Fed mode: after profile_conv_fed() (which reads what the file holds so far), the follower no
 * longer reads the stream back; the writer hands it each run of bytes as it lands in the file
 * (stream_set_tap), in file order, and profile_conv_update() takes the complete lines among them,
 * through the same indexing as a read line. The bytes must be exactly the file's: records point
 * into the file by offset, and writing the profile reads the payloads from there. They are the
 * writer's own lines (stream.h), so a marker line in the writer's layout is taken without scanning
 * its payload again; profile_conv_feed(pc, NULL, 0) says they may not be any more (a line the
 * writer could not finish), and from then on every line is validated as a read one is. */
int profile_conv_fed(struct profile_conv *pc);
int profile_conv_feed(struct profile_conv *pc, const char *buf, size_t len);
/* As profile_convert() / profile_finalize(), after reading what the stream gained. */
int profile_conv_write(struct profile_conv *pc, int out_fd, const struct profile_end *end,
                       struct profile_stats *ret_stats);
int profile_conv_finalize(struct profile_conv *pc, int dirfd, const char *path, const struct profile_end *end,
                          struct profile_stats *ret_stats);

/* What kind of file is at fd (read with pread from offset 0): a stream starts with the literal
 * {"type":"meta"; a full profile is a JSON object whose first key is "meta" and whose last
 * non-blank byte is '}', or a gzip file (its first two bytes 1f 8b: a compressed profile). */
enum profile_kind { PROFILE_KIND_STREAM, PROFILE_KIND_FULL, PROFILE_KIND_OTHER };
enum profile_kind profile_detect(int fd);

/* Recovery of the file a run left at in_path: a stream (however it ended: torn last line, garbage
 * lines, no end) is converted, open tests ending INCOMPLETE at the last timestamp seen, into
 * out_path (NULL: in_path itself, replaced atomically). The input is never modified unless it is
 * also the output; nothing is ever written through a symlink (the output is renamed into place).
 * gzip: compress the profile (profile_path_wants_gzip of the output's name is the usual choice).
 * Returns 0 when a profile was written, PROFILE_RECOVER_ALREADY_FULL when in_path already holds a
 * full profile (nothing written; with out_path, copied there), -EINVAL when it is neither, -EBUSY
 * when in_path is a stream a live run is still writing and it would be converted in place (the
 * run's path would be taken from under it), or -errno. */
#define PROFILE_RECOVER_ALREADY_FULL 1
int profile_recover(const char *in_path, const char *out_path, bool gzip, struct profile_stats *ret_stats);

#endif
