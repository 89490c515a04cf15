/* cpuprof.h — sampled on-CPU stacks of every process and thread of the command's tree
 * (--cpu-profile), taken by the kernel and written to the stream as they come.
 *
 * KERNEL SAMPLING, NOT PTRACE. perf_event_open(2) with the software cpu-clock event (it works in
 * VMs without a PMU), one event per CPU, each with its ring buffer mapped; the buffers are drained
 * from the supervisor's poll loop (cpuprof_fd: one epoll descriptor over all of them, woken when a
 * buffer is half full) and at each of its sampling ticks. No perf binary, no ptrace, no signal to
 * the command. Samples carry CLOCK_MONOTONIC times (the event's use_clockid), the clock of every
 * marker, so a test's range selects exactly the samples taken during it.
 *
 * FOLLOWING THE TREE: the events and their rings are perfring.h's, either the run's cgroup's
 * (every task of it sampled on whatever CPU it runs, a fork costs nothing) or resmon-run's own,
 * inherited by the command from its exec on ("inherit", for an unprivileged user).
 * The cgroup way where the run has a cgroup perf takes, else inherit: an inherited event counts
 * each task's own CPU time, so a process that ends before it has run a sampling period is never
 * sampled, and a tree of short processes is mostly missed (a shell starting 500 short
 * processes, 2.1 s of CPU: 8 samples at 99 Hz inherited, 218 on the cgroup, for about the same
 * cost a sample; README's cost table, scripts/bench-cpuprof).
 *
 * STACKS are the user-space callchains the kernel walks along frame pointers; with each sample the
 * kernel also copies the user registers and the top STACK_COPY bytes of the user stack, which
 * libdwfl's CFI unwinder walks (unwind.h: one unwinder per address space, its files
 * reported as they are mapped, freed when its process exits) — code built without frame
 * pointers, most distributions' packages, still unwinds up to main. The longer of the two walks
 * is kept. Where the kernel allows it (perf_event_paranoid <= 1, or root) samples taken in the
 * kernel are kept, with the kernel's own frames (nodes of space 0) above the user stack;
 * otherwise (paranoid 2, an unprivileged user: only their own processes, user space only)
 * samples are of user space only.
 *
 * NAMES are not looked up here: a sample holds addresses, named once per unique address when the
 * profile is written (profile_cpu.h, through forensics_syms: libdwfl, the symbolisation of the
 * stop's dump), from the mappings recorded here while the processes lived: /proc/PID/maps of the
 * command when sampling starts, then the kernel's own records of every executable mapping, fork
 * and exec of the tree, so that a process that exited long before the end still gets names.
 *
 * THE STREAM'S LINES (state lines, markers.h; times in ms since t0, as markers'):
 *   {"type":"cpuprofile","hz":N,"kernel":B,"follow":S}       sampling started (first line;
 *        follow: "cgroup" or "inherit", FOLLOWING)
 *   {"type":"cpuprofile","error":S}                          sampling is unavailable, and why
 *   {"type":"cpuspace","space":S,"pid":P,"parent":S0,"root":DIR,"time":MS}
 *        an address space: a process (pid P) began one, by fork (a copy of space S0) or exec
 *        (S0 0: empty); root: its root directory, read from /proc/P/root as its exec is drained
 *        (a fork: its parent's), when not / (a chroot: where its perf map is, ROOT/tmp)
 *   {"type":"cpumap","space":S,"start":"0xHEX","end":"0xHEX","pgoff":"0xHEX","file":PATH}
 *        an executable mapping of space S (PATH as resmon-run sees it: the kernel's path of a
 *        chrooted process's file, given from its root, is put under its root)
 *   {"type":"cputhread","pid":P,"tid":T,"name":S,"process":CMD,"time":MS}
 *        a thread's name (process: the process's command line, when known), at its first sample
 *        and whenever it changes
 *   {"type":"cpusamples","first":N,"nodes":[[PARENT,SPACE,"0xPC"],...],
 *    "samples":[[PID,TID,MS,NODE],...]}
 *        one per drain: the stack nodes first seen in it, numbered from N on (the first node of
 *        the run is 1; PARENT 0: the outermost frame), then the samples, each naming
 *        the innermost node of its stack. A return address is written minus one (the call).
 *   {"type":"cpuend","samples":N,"dropped":N,"lost":N[,"untracked":N]}
 *        at the end: samples written, dropped past a cap, lost by the kernel (a full buffer),
 *        address spaces not followed past their cap
 *
 * BOUNDED, whatever the run's length or the number of its processes: stacks are deduplicated (a
 * node per distinct frame-in-context, at most CPUPROF_MAX_NODES), at most CPUPROF_MAX_SAMPLES
 * samples are written, and at most CPUPROF_MAX_SPACES address spaces (a process's, and one per
 * exec) are followed, each a cpuspace line, its cpumap lines (a few hundred bytes a process) and
 * a few hundred bytes of memory while it lives; a process begun past that is not followed (its
 * samples are dropped) and counted (cpuend's untracked). At most CPUPROF_MAX_THREADS threads get
 * a cputhread line; the samples of later ones keep their tid. Past a cap what is dropped is
 * counted, and the profile's meta.cpuProfile says so.
 */
#ifndef RESMON_CPUPROF_H
#define RESMON_CPUPROF_H

#include <stdint.h>
#include <sys/types.h>

#include "base/markers.h"

#define CPUPROF_DEFAULT_HZ 99
#define CPUPROF_MAX_HZ 10000
#define CPUPROF_MAX_SAMPLES 2000000u
#define CPUPROF_MAX_NODES 2000000u
#define CPUPROF_MAX_SPACES 100000u
#define CPUPROF_MAX_THREADS 250000u

struct cpuprof;

/* Sampling at hz of the tree that cpuprof_start names, its lines to sink, times relative to t0_ns.
 * Returns 0 or -ENOMEM. */
int cpuprof_new(unsigned hz, const struct marker_sink *sink, uint64_t t0_ns, struct cpuprof **ret);
/* Start sampling, before the command is started: the cgroup whose directory cgroup_dirfd is (any
 * descriptor of it, O_PATH too) where perf takes it, else what resmon-run starts next, from its
 * exec on (the events are resmon-run's own, inherited, enabled by the exec; cgroup_dirfd -1: no
 * cgroup; FOLLOWING). Either way nothing the command forks escapes, however soon. 0, or -errno when
 * the kernel says no (EACCES/EPERM: perf_event_paranoid, ENOSYS/EPERM: a seccomp profile, ENOENT:
 * no cpu-clock event); then the stream gets the "error" line and nothing else changes. */
int cpuprof_start(struct cpuprof *cp, int cgroup_dirfd);
/* What a failure of cpuprof_start means (static text). */
const char *cpuprof_why(int err);
/* Why sampling is unavailable, as the -v line and the profile's meta say it: that, the errno's
 * text and perf_event_paranoid's level ("" while it is available). */
const char *cpuprof_error(const struct cpuprof *cp);
/* The descriptor to poll (POLLIN) while sampling, -1 when not sampling. */
int cpuprof_fd(const struct cpuprof *cp);
/* Read what the kernel has written and write it to the stream. Cheap when there is nothing. */
void cpuprof_drain(struct cpuprof *cp);
/* Drain, write the cpuend line, stop sampling (the events are closed). NULL is a no-op. */
void cpuprof_stop(struct cpuprof *cp);
/* What the cpuend line says: samples written, dropped past a cap, processes not followed. */
void cpuprof_counts(const struct cpuprof *cp, uint64_t *samples, uint64_t *dropped, uint64_t *untracked);
void cpuprof_free(struct cpuprof *cp);

#endif
