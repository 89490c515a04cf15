/* parse.h — the pure parsers of durations, sizes and signal names that the command line, --mark
 * and GNU timeout compatibility depend on, and the signal names every report prints.
 */
#ifndef RESMON_PARSE_H
#define RESMON_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* DURATION: a floating-point number with an optional suffix s, m, h or d. Rounds up to whole
 * nanoseconds, at least 1 ns for any positive value (an underflowing 1e-10000 included); huge
 * values clamp to UINT64_MAX ("never"); 0 means none. Negative values, NaN, junk: -EINVAL. */
int parse_duration(const char *s, uint64_t *ret_ns);

/* SIZE: a number of bytes with an optional suffix K, M, G or T (powers of 1024; "KiB" and "KB"
 * spellings too, also powers of 1024), fractions allowed ("1.5G"). -EINVAL for junk, zero or
 * negative values, -ERANGE past 2^63. */
int parse_size(const char *s, uint64_t *ret_bytes);

/* SIG: a name with or without "SIG" (case-insensitive), RTMIN+n / RTMAX-n, or a number 0..SIGRTMAX.
 * Returns -EINVAL when unknown. */
int parse_signal(const char *s, int *ret_sig);
/* The name of sig without "SIG" ("TERM", "RTMIN+2"; "0" for 0; the number otherwise), in buf. */
const char *signal_name(int sig, char *buf, size_t size);

#endif
