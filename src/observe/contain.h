/* contain.h — keeping the command's whole process tree together, whatever it does.
 *
 * Two tiers behind one interface, strongest first:
 *   CONTAIN_CGROUP    a cgroup v2 leaf created for this run (cgroup2 mount found in
 *                     /proc/self/mountinfo). Membership survives setsid() and double forks;
 *                     cgroup.procs lists members; cgroup.kill kills all at once; cpu.stat counts
 *                     the CPU of every process that was ever inside.
 *   CONTAIN_SUBREAPER PR_SET_CHILD_SUBREAPER on resmon-run: orphans re-parent to it, so every
 *                     descendant stays below it; members are found by walking parent links in /proc.
 * The command also gets a process group of its own in both tiers (spawn.h).
 *
 * Lifetime: contain_new() before the fork; contain_child_join() in the child before exec;
 * contain_free() after the tree is gone (removes the cgroup). Not thread-safe (nothing is).
 */
#ifndef RESMON_CONTAIN_H
#define RESMON_CONTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum contain_mode { CONTAIN_AUTO, CONTAIN_MODE_CGROUP, CONTAIN_MODE_SUBREAPER };
enum contain_tier { CONTAIN_CGROUP, CONTAIN_SUBREAPER };

struct contain;

/* Set up containment. AUTO tries the cgroup tier and falls back to the subreaper tier; an explicit
 * mode fails (-errno) when that tier is unavailable. ret_why, when not NULL, receives a static
 * string explaining an AUTO fallback (or NULL). The subreaper flag is set in every tier (it also
 * makes resmon-run the reaper of orphans in the cgroup tier, so no zombie escapes wait4). */
int contain_new(enum contain_mode mode, struct contain **ret, const char **ret_why);
void contain_free(struct contain *c);

enum contain_tier contain_tier(const struct contain *c);
const char *contain_tier_name(enum contain_tier t); /* "cgroup" / "subreaper" */
/* Path of the cgroup directory (cgroup tier) or NULL. */
const char *contain_cgroup_path(const struct contain *c);
/* An O_PATH|O_DIRECTORY fd of the cgroup directory (cgroup tier), or -1: the sampler reads
 * cpu.stat, memory.peak, ... relative to it. Owned by c. */
int contain_cgroup_fd(const struct contain *c);

/* In the forked child, before exec: move the calling process into the tier (cgroup: write "0" to
 * cgroup.procs through an fd opened before the fork; v2_joined: the fork put it there already)
 * and into the cgroups that enforce its limits (contain_set_limits). Async-signal-safe. Returns 0
 * or -errno. */
int contain_child_join(const struct contain *c, bool v2_joined);

/* LIMITS the kernel can enforce: the tree's memory (no swap beyond it) and its processes and
 * threads. Where a controller is available, before the command is forked: the run's cgroup v2
 * leaf when the memory / pids controllers can be enabled for it (cgroup tier), else a leaf of the
 * run's in the cgroup v1 hierarchy of that controller (hybrid layouts keep memory and pids there;
 * the command joins it too, in either tier). What a controller cannot do here is the caller's to
 * do by sampling (the supervisor). */
enum { CONTAIN_LIMIT_MEMORY = 1, CONTAIN_LIMIT_TASKS = 2, CONTAIN_LIMIT_MEMORY_HIGH = 4, CONTAIN_LIMIT_MEMORY_HOLD = 8 };
/* memory: bytes (0: none); tasks: count (0: none). Returns the CONTAIN_LIMIT_* the kernel enforces
 * now (>= 0), and in *ret_how a static text saying with what.
 * stop_first: the supervisor checks contain_events at each sample and stops the run (dump first)
 * when the tree nears or reaches the memory limit, so the kernel is told not to kill first:
 * with cgroup v2, memory.high an eighth below memory.max (1 MiB at least; MEMORY_HIGH): past it
 * the kernel throttles the tree and counts it (high_events); with cgroup v1, the leaf's OOM
 * killer off (MEMORY_HOLD): at the limit the kernel holds the tree's allocations (under_oom).
 * Without it (no sampling) the OOM killer acts at the limit. */
int contain_set_limits(struct contain *c, uint64_t memory, uint64_t tasks, bool stop_first, const char **ret_how);

/* What the kernel's controllers counted since the run began (where they are there). */
struct contain_events {
    bool have_oom;       /* oom_kills is known: the run's memory cgroup counts them */
    uint64_t oom_kills;  /* processes of the run the OOM killer killed */
    bool have_tasks;
    uint64_t tasks_refused; /* forks refused at the tasks limit */
    uint64_t memory_peak;   /* bytes, 0: unknown */
    bool have_high;
    uint64_t high_events;   /* times the tree's memory went past memory.high (cgroup v2) */
    bool under_oom;         /* the tree is held at the limit (cgroup v1, its OOM killer off) */
};
void contain_events(struct contain *c, struct contain_events *ret);

/* Without a memory cgroup of the run's own: the file of the memory cgroup resmon-run started in
 * that counts its OOM kills ("oom_kill N": cgroup v2 memory.events, v1 memory.oom_control), into
 * ret. Narrower than the machine's count, as it leaves out other jobs' cgroups; -ENOENT when
 * there is none or it is the root (whose count the kernel does not keep). */
int contain_home_oom_file(char *ret, size_t size);

/* Record the command's pid (the root of the tree) once forked. */
void contain_set_root(struct contain *c, pid_t pid);

/* A child of resmon-run that is not part of the tree (its watchdog). */
void contain_add_foreign(struct contain *c, pid_t pid);
/* The supervisor reaped pid. Returns true when it was not a member of the tree (a child that
 * predates the command, or the watchdog): its resources are not the tree's. */
bool contain_reaped(struct contain *c, pid_t pid);

/* Live members of the tree (excluding resmon-run itself), in *ret_pids (malloc'ed, caller frees),
 * count in *ret_n: the cgroup's processes (cgroup tier) or resmon-run's descendants (subreaper
 * tier) — and in both, every child of resmon-run's but those that predate the command: a
 * process that moved itself out of the cgroup and was orphaned is re-parented to resmon-run,
 * and is the tree's still. A process may exit right after it is listed: callers treat
 * ESRCH/ENOENT on a listed pid as normal. Zombies are listed until reaped. Returns 0 or -errno. */
int contain_members(struct contain *c, pid_t **ret_pids, size_t *ret_n);

/* THE COMMAND'S GROUP is signalled by its id (kill(-id)) only until the command is reaped
 * (contain_reaped): its pid holds the id until then. After, the id is free once no member is left
 * in the group (they died, or left it with setsid), and a new process that takes that pid and makes
 * itself a group (a shell's job, a daemon, another run's command) would get our signals: the
 * group's members are then signalled one by one, each through a pidfd and checked a member.
 *
 * Send sig to the command's process group: the timeout and stop signals go there, as GNU
 * timeout sends them (a nested supervisor, in a group of its own, handles its own command). Then
 * CONT, so a stopped member gets it. Returns the number of processes in the group signalled
 * (0 or the group's size is not known: 1 when the group exists), or -errno. */
int contain_signal_group(struct contain *c, int sig);
/* Send sig to every member once (the group of the command, and every listed pid outside it, so
 * setsid escapers are reached); CONT after it unless sig is KILL or CONT. Returns the number of processes signalled
 * (>= 0) or -errno. */
int contain_signal_all(struct contain *c, int sig);
/* One kill pass: SIGKILL to every member alive now (cgroup.kill in the cgroup tier, and the
 * children outside it). Never waits: a killed process takes a moment to die, and one that forked
 * meanwhile is caught by the next pass, which the caller runs when contain_watch says members
 * changed and contain_empty is still false. Returns the members alive before the pass. */
size_t contain_kill_pass(struct contain *c);
/* True when no live member is left (zombies waiting to be reaped do not count). */
bool contain_empty(struct contain *c);
/* Descriptors that become readable (POLLIN, or POLLPRI for cgroup.events) when members may have
 * ended: cgroup.events in the cgroup tier, else pidfds of up to max members that are not
 * resmon-run's children (a child's end comes as SIGCHLD). Owned by c, valid until the next call;
 * *ret_events is the poll event to wait for. Returns how many; *ret_complete is false when some
 * members have no descriptor (the caller then also looks again after a short while). */
size_t contain_watch(struct contain *c, int *fds, size_t max, short *ret_events, bool *ret_complete);

#endif
