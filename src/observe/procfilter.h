/* procfilter.h — a classic BPF socket filter for the process connector, so that the kernel drops
 * the events the sampler would throw away before they wake resmon-run.
 *
 * The connector multicasts every fork, exec and exit of the whole machine, threads included; each
 * one delivered costs a wake-up, a recv and a lookup (~17 us here). The filter passes only:
 *   fork   of a process (not a thread) whose parent is in the set;
 *   exec   of a process in the set;
 *   exit   of a process (not a thread) whose parent is in the set (every process of the tree
 *          has its parent in the tree, or resmon-run: it is the subreaper), or whose parent
 *          the kernel reports as 0: it does when the parent reaped the process before its exit
 *          was reported (once in some thousands of exits of a busy parent);
 * and nothing else (no other event kind, no reply). The set is the tree as the sampler knows it,
 * plus resmon-run itself (the command's fork); it is rebuilt when the tree gains a process.
 * Fork and exit are told by the parent's tgid, which Linux reports since 4.18 (an older kernel
 * sends 0 there: such a kernel gets the filter of kinds and threads only, see sampler_events.c).
 *
 * The filter lags: a process joins the set only once its fork event was read, so what a new
 * process does before the filter is re-attached would be dropped (its exec, its own children).
 * Two answers: a window of pids passes too (sampler_events.c: open-ended, every pid the kernel
 * allocates after the attach, while no other process's event passes through it; else the few
 * allocated next), so that the tree's new processes are heard without a new filter; and the
 * caller catches up with a process that fell outside it right after the re-attach that adds it
 * (its command line read again, its children listed); the scans remain the safety net. Past
 * PROCFILTER_MAX_SET processes the set is left out and the filter drops only threads and other
 * kinds.
 *
 * Layout the filter reads (struct nlmsghdr, struct cn_msg, struct proc_event, host byte order;
 * classic BPF loads words big-endian, so the constants are compared byte-swapped where needed).
 */
#ifndef RESMON_PROCFILTER_H
#define RESMON_PROCFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROCFILTER_MAX_SET 1024

struct sock_filter;

/* Build the program for the tgids set[0..n) and the window of tgids [lo, hi) (lo >= hi: none)
 * into prog (room for procfilter_size(n, lo < hi) instructions); n > PROCFILTER_MAX_SET: no set
 * and no window, kinds and threads only. Returns the instruction count. */
size_t procfilter_size(size_t n, bool window);
size_t procfilter_build(const pid_t *set, size_t n, pid_t lo, pid_t hi, struct sock_filter *prog);

/* Build and attach to the connector socket fd (SO_ATTACH_FILTER replaces the previous one
 * atomically; before bind, nothing is queued unfiltered). Returns 0 or -errno. */
int procfilter_attach(int fd, const pid_t *set, size_t n, pid_t lo, pid_t hi);

#endif
