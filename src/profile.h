/* profile.h — the full processed profile (profile-format.md §3–§5), always produced by converting
 * a stream: at a normal end, on a stop request, and in recovery of a stream a killed run left.
 *
 * Conversion reads the stream line by line (a torn last line, garbage lines and unknown types are
 * skipped and counted), keeps per marker only a small fixed record plus the payload's offset in the
 * stream (payloads are copied from the input when writing, never held as a DOM), interns marker
 * names into stringArray, and writes the column-oriented markers table.
 *
 * State lines (markers.h) describe things still open (a test started, a phase begun); the
 * converter closes those that have no matching end: as INCOMPLETE/TIMEOUT tests ending at end_ms.
 */
#ifndef RESMON_PROFILE_H
#define RESMON_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile_end {
    double end_ms;          /* profilingEndTime; < 0: take the last timestamp seen in the stream */
    const char *open_status; /* status given to tests still open: "TIMEOUT" or "INCOMPLETE" */
};

struct profile_stats {
    uint64_t markers;       /* markers written */
    uint64_t skipped_lines; /* torn/garbage lines skipped */
    uint64_t closed_open;   /* open tests/phases closed by the converter */
};

/* Convert the stream readable at in_fd (read from offset 0 with pread; the fd's offset is not
 * used) into a full profile written to out_fd. Returns 0, -EINVAL when the input is not a stream
 * (first line not a meta line), or -errno. */
int profile_convert(int in_fd, int out_fd, const struct profile_end *end, struct profile_stats *ret_stats);

/* Finalize: convert in_fd into a temporary file beside path (in directory dirfd, created
 * O_EXCL without following symlinks), fsync it, rename it over path, fsync the directory. */
int profile_finalize(int in_fd, int dirfd, const char *path, const struct profile_end *end,
                     struct profile_stats *ret_stats);

/* What kind of file is at fd: */
enum profile_kind { PROFILE_KIND_STREAM, PROFILE_KIND_FULL, PROFILE_KIND_OTHER };
enum profile_kind profile_detect(int fd);

#endif
