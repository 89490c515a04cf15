/* watchdog.h — the process tree dies with resmon-run, where the kernel allows it.
 *
 * A command (or a CI's cleanup gone wrong) may kill resmon-run outright: `kill -9 $PPID`. The
 * command itself then gets its parent-death signal (spawn.h), but what it started would live on.
 * The watchdog is a small process forked before the command, in a session of its own (so a KILL
 * to resmon-run's process group does not take it along). It holds the read end of a pipe whose
 * write end only resmon-run holds: when that pipe ends without the all-clear byte resmon-run
 * writes when it is done with the tree, resmon-run has died, and the watchdog stops the tree: the
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
 * exits on the all-clear. It is forked before the sandbox lock-down, and lives without one.
 * Forked, not spawned: starting resmon-run again (or a helper) in its place costs more CPU than
 * the fork's page tables and copy-on-write faults, and no wall time (doc/design.md).
 */
#ifndef RESMON_WATCHDOG_H
#define RESMON_WATCHDOG_H

#include <stdint.h>
#include <sys/types.h>

#include "observe/contain.h"

#define WATCHDOG_ENV "RESMON_RUN_ID"

struct watchdog;

/* Fork the watchdog for the tree in c: sig is the stop signal. The command's environment must
 * carry the mark (watchdog_run_id). */
int watchdog_new(struct contain *c, int sig, struct watchdog **ret);
/* The mark: unique to this run (resmon-run's pid and start time). Static storage. */
const char *watchdog_run_id(const struct watchdog *w);
/* The command's process group, once it is spawned; 0 once the command is reaped (the id is no
 * longer held by it, and may become another group's). */
void watchdog_set_group(struct watchdog *w, pid_t pgid);
/* resmon-run is done with the tree: the watchdog exits without doing anything. Then frees w.
 * NULL is a no-op. */
void watchdog_release(struct watchdog *w);

#endif
