/* limits.h — the run's resource limits and the kernel's OOM killer.
 *
 * LIMITS. --memory-limit (the tree's memory, swap included), --cpu-limit (the whole tree's CPU
 * time) and --tasks-limit (its processes and threads). Who enforces what:
 *   memory  the kernel, where a memory controller can hold the tree (the cgroup tier's leaf, or a
 *           cgroup v1 leaf of the run's). With sampling on (stop_first), the run stops before the
 *           kernel kills, so that the dump finds the tree alive: past cgroup v2's memory.high (an
 *           eighth below the limit, where the kernel throttles the tree), or when the kernel holds
 *           the tree at cgroup v1's limit (its OOM killer off for the leaf). Without sampling it
 *           reclaims, then its OOM killer kills in the tree, and that kill is the limit reached.
 *           Elsewhere the tree's summed RSS at each sample (shared pages counted in each process;
 *           a spike between samples is missed).
 *   tasks   the kernel (pids.max) where a pids controller can hold the tree: a fork past the limit
 *           fails, and the first refusal is the limit reached. Elsewhere the count at each sample
 *           (RLIMIT_NPROC counts every process of the user, not the tree's: not used).
 *   cpu     resmon-run, always: the tree's CPU time (cpu.stat in the cgroup tier, /proc and wait4
 *           otherwise) at each sample and at the earliest instant the tree could reach it with
 *           every CPU busy (limits_cpu_deadline).
 * Reaching one stops the run like a timeout (supervise.c): the timeout marker says which limit and
 * the figure (limits_check's text), the profile is finalized, then the stop signal.
 *
 * THE OOM KILLER. A process of the tree that died of SIGKILL nobody here sent, while the kernel's
 * OOM kill count rose: the run's memory cgroup's count when there is one (exact), else the
 * machine's (/proc/vmstat oom_kill; another process's kill at the same moment could be taken
 * for ours). Each such death is an "OOM kill" marker (owned here):
 *
 *   name      type     when             data
 *   OOM kill  OomKill  the victim died  pid, cmd, rss (at the last sample), maxRSS, test (running)
 */
#ifndef RESMON_LIMITS_H
#define RESMON_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/markers.h"
#include "observe/contain.h"

extern const struct marker_type limits_oom_type;

enum limit_kind { LIMIT_NONE, LIMIT_MEMORY, LIMIT_CPU, LIMIT_TASKS };
const char *limit_name(enum limit_kind k); /* "memory", "cpu", "tasks" */

struct limits_config {
    uint64_t memory; /* bytes, 0: none */
    uint64_t cpu_ns; /* 0: none */
    uint64_t tasks;  /* 0: none */
    const char *vmstat; /* NULL: /proc/vmstat (tests name another file) */
    bool stop_first;    /* limits_check runs at each sample: the kernel holds the tree at the
                           memory limit rather than kill (contain_set_limits) */
};

struct limits;

/* Set up the limits the kernel can enforce in c (before the command is forked: it joins them).
 * Returns 0 or -errno (-ENOMEM only: a limit the kernel cannot enforce is checked by sampling). */
int limits_new(const struct limits_config *cfg, struct contain *c, struct limits **ret);
void limits_free(struct limits *l);

/* For -v: who enforces each limit set, one line ("" when none is set). */
void limits_describe(const struct limits *l, char *buf, size_t size);
/* The figure set for limit k, as the stop marker's name carries it: "32 MiB (33.6 MB)" (the
 * memory graphs' units too), "2 s", "50 tasks"; "" when k has none. */
void limits_figure(const struct limits *l, enum limit_kind k, char *buf, size_t size);

/* What the tree uses now. */
struct limits_reading {
    uint64_t cpu_ns;          /* the tree's CPU time so far */
    bool rss_known;
    uint64_t rss;             /* its summed RSS, bytes */
    bool count_known;
    uint64_t tasks;           /* its processes + threads */
};

/* The limit reached now, if any (LIMIT_NONE), with a text naming the limit and the figure in
 * text[0..size). Reads the kernel's counters of the limits it enforces. */
enum limit_kind limits_check(struct limits *l, const struct limits_reading *r, char *text, size_t size);
/* limits_check on what the sampler last read of the tree (s), with cpu_ns its CPU time now. */
struct sampler;
enum limit_kind limits_check_tree(struct limits *l, const struct sampler *s, uint64_t cpu_ns, char *text,
                                  size_t size);

/* The earliest monotonic instant the tree, at cpu_ns now, could reach the CPU limit with ncpu
 * CPUs busy (never less than 10 ms from now); UINT64_MAX without a CPU limit. */
uint64_t limits_cpu_deadline(const struct limits *l, uint64_t now_ns, uint64_t cpu_ns, unsigned ncpu);

/* A death by SIGKILL of a tree process, as the sampler learned it (sampler.h). we_killed:
 * resmon-run had sent a KILL by then (the death is its own). */
struct sampler_killed;
void limits_note_death(struct limits *l, const struct sampler_killed *k, bool we_killed);

/* The deaths noted that the OOM killer caused, decided now, oldest first, moved to out[0..max).
 * A death waits up to 2 s for the count to rise (the count and the exit are not ordered), so
 * call this at each sample too. Without a memory cgroup the machine's count is re-read every
 * 10 s at most (reading /proc/vmstat costs ~30 us), so a rise is attributed only within that
 * window. Returns how many. */
size_t limits_oom_take(struct limits *l, uint64_t now_ns, struct sampler_killed *out, size_t max);

/* The OOM kill marker's payload in w. test: the test that was running (NULL: none). */
struct jsonw;
void limits_oom_payload(struct jsonw *w, const struct sampler_killed *k, const char *test);

/* Both steps for a run: the deaths by SIGKILL the sampler learned of are noted (limits_note_death;
 * we_killed as there), then the OOM killer's among those noted so far are taken into out[0..max)
 * (limits_oom_take) when there were deaths or settle asks (at each sample, and at the end). */
size_t limits_oom_kills(struct limits *l, struct sampler *s, bool we_killed, bool settle, struct sampler_killed *out,
                        size_t max);
/* An OOM kill said: a warning on stderr now (the command's text made safe for a terminal) and
 * its marker to sink (NULL: none). test: the test it ran under (NULL: none). */
void limits_say_oom(const struct marker_sink *sink, const struct sampler_killed *k, const char *test);

/* The limits the kernel enforces (CONTAIN_LIMIT_*): for memory, an OOM kill in the tree is then
 * the limit reached. */
unsigned limits_by_kernel(const struct limits *l);

#endif
