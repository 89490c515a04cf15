/* sampler.h — periodic samples of the machine and of the command's process tree, turned into
 * markers (profile-format.md §5) and handed to a marker sink as soon as each sample is taken.
 *
 * The supervisor owns the timer and the poll loop; it calls sampler_sample() on every tick (with
 * the number of ticks the timerfd reported, so missed ticks are counted, not bunched), tells the
 * sampler about every child it reaps (sampler_reaped), and takes one last sample when the command
 * ends (sampler_sample with final = true).
 *
 * Machine: /proc/stat (per-CPU), /proc/meminfo, /proc/diskstats (whole disks), /proc/net/dev —
 * exactly the upstream monitor's markers: "CPU Use", "Memory", "IO", "NetIO", "Sampling Interval".
 * Tree: members from contain_members(); /proc/<pid>/stat, status, io → "Tree CPU",
 * "Tree Memory", "Tree IO", "Processes", and one "process" marker per tree process when it ends.
 * A process is identified by (pid, starttime) so a reused pid is a new process.
 *
 * Accounting is exact: the tree's CPU total equals what the kernel accounted for the whole tree
 * (cgroup cpu.stat when available; else live utime+stime+cutime+cstime plus reaped rusage).
 * Figures that cannot be read are left out, never reported as zero.
 */
#ifndef RESMON_SAMPLER_H
#define RESMON_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "contain.h"
#include "markers.h"

struct sampler_config {
    uint64_t interval_ns; /* nominal interval (0: sampling off — the sampler still accounts) */
    bool pss;             /* also read PSS (smaps_rollup), costlier */
    bool system;          /* sample the machine (default true) */
    bool tree;            /* sample the process tree (default true) */
};

/* Totals for the summary and the profile's end. */
struct sampler_totals {
    uint64_t tree_cpu_ns;      /* exact CPU time of the whole tree so far */
    uint64_t tree_user_ns, tree_system_ns;
    uint64_t peak_rss;         /* bytes; peak of the tree's summed RSS (0 if never read) */
    uint64_t samples;          /* samples taken */
    uint64_t missed_ticks;     /* ticks the timer reported beyond one per sample */
    uint64_t processes_seen;   /* distinct tree processes observed */
};

struct sampler;

/* t0_ns: profile time 0 (the baseline the first sample runs from). c: the containment of the
 * tree (borrowed, outlives the sampler). sink: where markers go (borrowed). */
int sampler_new(const struct sampler_config *cfg, struct contain *c, const struct marker_sink *sink,
                uint64_t t0_ns, struct sampler **ret);
void sampler_free(struct sampler *s);

/* Take a sample ending at now_ns; ticks = expirations read from the timerfd (>= 1; the excess is
 * counted as missed). final = the last sample (command ended): it also ends the "process" markers
 * of members that are gone. Returns 0 or -errno (a failed sample is reported, never fatal). */
int sampler_sample(struct sampler *s, uint64_t now_ns, uint64_t ticks, bool final);

/* The supervisor reaped pid (wait4): its status and rusage make the accounting exact and end its
 * "process" marker with the right exit ("status N" / "signal NAME"). */
void sampler_reaped(struct sampler *s, pid_t pid, int wstatus, const struct rusage *ru,
                    uint64_t now_ns);

/* The tree's cumulative CPU time now, as exactly and cheaply as the tier allows (cgroup: read
 * cpu.stat; else the last sample's figure plus what was reaped since). Used for per-test cost. */
uint64_t sampler_tree_cpu_ns(struct sampler *s);
/* The tree's RSS at the last sample (bytes), 0 if unknown. */
uint64_t sampler_tree_rss(const struct sampler *s);

void sampler_get_totals(const struct sampler *s, struct sampler_totals *ret);

#endif
