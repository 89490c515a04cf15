/* watchdog.h — the process tree dies with resmon-run, where the kernel allows it.
 *
 * A command (or a CI's cleanup gone wrong) may kill resmon-run outright: `kill -9 $PPID`. The
 * command itself then gets its parent-death signal (spawn.h), but what it started would live on.
 * The watchdog is a small process forked before the command, in a session of its own (so a KILL
 * to resmon-run's process group does not take it along). It holds one end of a socket pair whose
 * other end only resmon-run holds: when it ends without the all-clear byte resmon-run sends when
 * it is done with the tree, resmon-run has died, and the watchdog stops the tree: the
 * stop signal (the command gets it first, as its parent-death signal), then at once SIGKILL until
 * nothing is left. No grace: resmon-run killed outright is the last word of whoever stops the
 * run (a CI runner's KILL after its TERM, a command's `kill -9 $PPID`), as a second stop request
 * kills the tree at once, and nothing is left to record a slow stop:
 *   cgroup tier:    every process of the run's cgroup; then cgroup.kill (atomically), and the
 *                   empty leaf is removed;
 *   subreaper tier: its orphans now belong to an outer subreaper or init, so the tree is found
 *                   by the mark the command's environment carries (RESMON_RUN_ID=<id>, as the
 *                   GitHub runner finds job processes by RUNNER_TRACKING_ID): every process
 *                   holding it, and the command's process group while the command is not reaped
 *                   (then its id may be a stranger's group: contain.h); KILL in passes.
 * It is started only when leftovers are to be stopped (--kill-leftovers, the default but in the
 * timeout-compatible mode, where GNU timeout's behaviour is the contract).
 * What survives: in the subreaper tier, a process that dropped the mark from its environment and
 * left the command's process group (or whose environment we may not read: another user's);
 * nothing in the cgroup tier, unless it moved itself to another cgroup.
 *
 * The watchdog is not a member of the tree (contain_add_foreign), takes no part in the run, and
 * exits on the all-clear. It is started before the sandbox lock-down, and has a filter of its own
 * (sandbox.h), which it loads before resmon-run locks down (watchdog_wait_sandboxed): sharing
 * resmon-run's memory, an unfiltered watchdog would be a compromised resmon-run's way out.
 * Where it can (x86-64, clone3 and close_range: Linux 5.9), it shares resmon-run's memory, as a
 * thread would but as a process of its own (CLONE_VM, no CLONE_THREAD): no page tables copied,
 * no copy-on-write fault in the rest of the run. Until resmon-run is gone it then makes raw
 * system calls only (the C library's wrappers would write resmon-run's errno) and allocates
 * nothing, and after, nothing that needs malloc (resmon-run may have died holding its lock).
 * Sharing the memory, it shares its privacy too: resmon-run's PR_SET_DUMPABLE 0 (sandbox.h) is
 * the memory's, so the command can no more trace the watchdog than resmon-run. Elsewhere, and
 * where clone3 is refused (valgrind), it is forked. Not spawned: starting a program in its place
 * costs more than either (doc/design.md).
 */
#ifndef RESMON_WATCHDOG_H
#define RESMON_WATCHDOG_H

#include <stdint.h>
#include <sys/types.h>

#include "observe/contain.h"

#define WATCHDOG_ENV "RESMON_RUN_ID"

struct watchdog;

/* Fork the watchdog for the tree in c: sig is the stop signal; filter, when not NULL, the seccomp
 * program it loads as it starts (sandbox_watchdog_program; it must outlive the watchdog's start).
 * The command's environment must carry the mark (watchdog_run_id). */
struct sock_fprog;
int watchdog_new(struct contain *c, int sig, const struct sock_fprog *filter, struct watchdog **ret);
/* Before resmon-run's lock-down: wait until the watchdog is done with its filter. 0 once it runs
 * filtered (or was given none, or does not share our memory: then nothing of ours can reach it),
 * the kernel's -errno if it could not load it, -ESRCH if it died first. NULL: 0. */
int watchdog_wait_sandboxed(struct watchdog *w);
/* The mark: unique to this run (resmon-run's pid and start time). Static storage. */
const char *watchdog_run_id(const struct watchdog *w);
/* The command's process group, once it is spawned; 0 once the command is reaped (the id is no
 * longer held by it, and may become another group's). */
void watchdog_set_group(struct watchdog *w, pid_t pgid);
/* Close fd, and let the watchdog make the last close of its file: sent to it, it closes it at
 * once, beside what resmon-run does meanwhile. For a file whose last close costs: a file the run
 * removed to take its path (outfile_create_keep), whose blocks the kernel frees then (0.3-0.5 ms
 * for a profile of some kilobytes on ext4). Without a watchdog (w NULL), or if it cannot be sent,
 * the close here is the last. fd < 0: nothing. */
void watchdog_close(struct watchdog *w, int fd);
/* resmon-run is done with the tree: the watchdog exits without doing anything. Then frees w.
 * NULL is a no-op. */
void watchdog_release(struct watchdog *w);

#endif
