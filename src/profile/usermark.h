/* usermark.h — markers the supervised command records itself, through a descriptor resmon-run
 * hands it (the environment variable RESMON_FD holds its number).
 *
 * Transport: an AF_UNIX SOCK_DGRAM socketpair. Every write(2)/send(2) of a record is one datagram,
 * delivered whole or not at all, so any number of descendants can write concurrently and one that
 * writes garbage, or dies mid-way, cannot stall or desynchronise the others. resmon-run keeps the
 * read end (non-blocking, polled); the command inherits the write end.
 *
 * Record: one compact JSON object per datagram, at most USERMARK_MAX_RECORD bytes, UTF-8:
 *
 *   {"action":"event","name":N[,"text":T][,"time":S]}          instant marker N
 *   {"action":"marker","name":N,"start":S[,"end":S][,"text":T]} interval marker N (end: now)
 *   {"action":"begin","name":N[,"text":T][,"time":S]}           opens interval marker N ...
 *   {"action":"end","name":N[,"time":S]}                        ... closes the latest open N
 *   {"action":"phase-begin","name":N[,"time":S]}                opens phase N ...
 *   {"action":"phase-end","name":N[,"time":S]}                  ... closes it
 *
 * N: non-empty string of at most USERMARK_MAX_NAME bytes; T: string (default N). S: seconds on
 * CLOCK_MONOTONIC as a number (Python's time.monotonic(); the same clock for every process of the
 * machine); absent, or outside [profile time 0, now], means "when the record arrived". Unknown
 * members are ignored, so the format can grow.
 *
 * Markers (profile-format.md §5): events are instants (category 0) with a Text payload
 * {"text":T}; markers and begin/end pairs are intervals (category 2, Text); phases are "Phase"
 * markers (category 1) with {"phase":N,"cpuTime":MS,"cpuPercent":"P%"} where cpuTime is the CPU
 * the process tree used during the phase (from the probe) and cpuPercent that time as a share of
 * all logical CPUs over the phase's wall time (the scale of upstream's phase cpuPercent).
 * Begun markers and phases are announced as state lines (markers.h):
 *   {"type":"open","kind":"marker"|"phase","key":N,"name":MARKER_NAME,"startTime":MS,
 *    "category":C[,"cost":true],"data":{...}}   and   {"type":"close","kind":...,"key":N}
 * (a phase the converter has to close itself gets its cost from the tree's counters: "cost").
 *
 * Malformed records (not JSON, wrong members, an end without a begin) and oversized ones are
 * dropped and counted; nothing a command writes can make resmon-run fail.
 */
#ifndef RESMON_USERMARK_H
#define RESMON_USERMARK_H

#include <stddef.h>
#include <stdint.h>

#include "base/markers.h"

/* The Phase type (markers.h), owned here: phase, cpuTime, cpuPercent. */
extern const struct marker_type usermark_phase_type;
enum { PHASE_PHASE, PHASE_CPUTIME, PHASE_CPUPERCENT };

#define USERMARK_ENV "RESMON_FD"
/* RESMON_FD's value when the run records nothing (--no-profile): supervised, nowhere to send */
#define USERMARK_ENV_NO_FD "none"
#define USERMARK_MAX_RECORD 65536
#define USERMARK_MAX_NAME 256
#define USERMARK_MAX_OPEN 256

struct usermark_probe {
    uint64_t (*tree_cpu_ns)(void *ctx); /* cumulative tree CPU now; NULL: phases carry no cost */
    void *ctx;
};

struct usermark_config {
    uint64_t t0_ns;  /* monotonic profile time 0 */
    unsigned ncpus;  /* logical CPUs for cpuPercent; 0: ask sysconf */
};

struct usermark_stats {
    uint64_t records;   /* records turned into markers */
    uint64_t malformed; /* dropped: not a valid record (includes unmatched ends) */
    uint64_t oversized; /* dropped: longer than USERMARK_MAX_RECORD */
    uint64_t overflow;  /* dropped: begin beyond USERMARK_MAX_OPEN open markers */
};

struct usermark;

/* Creates the socketpair (both ends O_CLOEXEC; the read end non-blocking). sink and probe are
 * borrowed and must outlive the object; probe may be NULL. */
int usermark_new(const struct usermark_config *cfg, const struct marker_sink *sink,
                 const struct usermark_probe *probe, struct usermark **ret);
void usermark_free(struct usermark *um);

/* The write end for the command: the spawner makes it survive exec (dup2 to itself or to another
 * number, clearing FD_CLOEXEC, in the child) and puts its number in RESMON_FD. -1 once closed. */
int usermark_fd_for_child(const struct usermark *um);
/* After the command is spawned, the supervisor drops its own copy of the write end. */
void usermark_close_child_fd(struct usermark *um);
/* The read end to poll for POLLIN. */
int usermark_read_fd(const struct usermark *um);

/* Read the records waiting on the read end (at most a bounded batch, so the loop stays fair; poll
 * again for more) and emit their markers, timed now_ns unless they carry a sane time. Returns the
 * number of datagrams read or -errno (other than EAGAIN). */
int usermark_drain(struct usermark *um, uint64_t now_ns);
/* Handle one record given as bytes (what usermark_drain does per datagram; exposed for tests and
 * fuzzing). Returns 0, or -EINVAL / -EMSGSIZE when the record was dropped (and counted). */
int usermark_record(struct usermark *um, const char *buf, size_t len, uint64_t now_ns);
/* End of run: begun markers and phases still open end at now_ns. */
void usermark_finish(struct usermark *um, uint64_t now_ns);
void usermark_get_stats(const struct usermark *um, struct usermark_stats *ret);

/* Client side, for `resmon-run --mark KIND NAME [TEXT]`: argv holds the words after --mark:
 *   event NAME [TEXT] | begin NAME [TEXT] | end NAME | phase-begin NAME | phase-end NAME
 * Builds the record (stamped with the current monotonic time) and sends it to $RESMON_FD.
 * Returns 0; -EINVAL when the arguments are wrong (print usage, exit 125); -EBADF when RESMON_FD is
 * unset or not a number (not running under resmon-run); -errno when sending fails. RESMON_FD set to
 * USERMARK_ENV_NO_FD (a resmon-run that records nothing: --no-profile) sends nothing and returns 0. */
int usermark_send(int argc, char **argv);

#endif
