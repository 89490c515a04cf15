/* profile_write.h — pass 2 of the converter (profile_conv.h): the profile written from what pass 1
 * kept.
 *
 * What is still open is closed first (profile.h, STATE LINES): each open entry becomes a marker
 * from its start to the profile's end, its payload made in the side buffer (a test's status and
 * colour; with "cost", what the tree's counters say the span cost; a recovered command's cut-off).
 * A profile that left markers out says so in a Warning marker at its end. Then the profile is
 * written in one sequential pass: meta (the stream's meta line's members and profilingEndTime),
 * the run's thread (the stream's thread line's members, the stringArray, the markers table with
 * every payload copied from the input through a read window), a thread per dumped OS thread
 * (profile_stacks.h), the thread of HIDDEN COUNTERS, and the counters (profile_counters.h).
 * Optionally through gzip (level 3). What closing added to the state is taken back after, so a
 * follower can write again later.
 */
#ifndef RESMON_PROFILE_WRITE_H
#define RESMON_PROFILE_WRITE_H

#include "profile/profile.h"

struct conv;

/* The profile of what c has read, to out_fd (with write(2), from its offset). 0 or -errno. */
int conv_write(struct conv *c, int out_fd, const struct profile_end *end, struct profile_stats *ret_stats);

/* Write c's profile to a temporary file beside path (in dirfd), fsync it and rename it over path
 * (profile_finalize). */
int conv_finalize(struct conv *c, int dirfd, const char *path, const struct profile_end *end,
                  struct profile_stats *ret_stats);

#endif
