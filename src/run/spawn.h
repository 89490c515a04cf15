/* spawn.h — starting the command: clone, put it where it belongs, exec, and tell exec failures
 * (126 cannot invoke, 127 not found) apart from the command's own exit statuses.
 *
 * The child shares resmon-run's memory until its exec, as posix_spawn's does (CLONE_VM |
 * CLONE_VFORK, on a stack of its own; resmon-run waits): a fork copied the page tables and
 * made every page resmon-run wrote afterwards fault once, most of the CPU a run's start cost.
 * So the child only makes system calls; its environment is built before.
 *
 * An exec-error pipe (O_CLOEXEC) carries errno from a failed exec back to the parent; a successful
 * exec closes it, so a read of 0 bytes means the command is running. spawn_command() returns only
 * after that, so "running" is a fact when it returns.
 *
 * The child: joins the containment tier, gets its own process group (unless foreground), takes
 * the terminal when asked, gets PR_SET_PDEATHSIG so resmon-run's death (even by SIGKILL) still
 * delivers the timeout signal, has the caller's signal mask and dispositions restored (ignored
 * signals stay ignored), its stdout/stderr replaced when resmon-run interposes, and an extra
 * descriptor announced in the environment.
 */
#ifndef RESMON_SPAWN_H
#define RESMON_SPAWN_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "profile/usermark.h"
#include "observe/contain.h"

struct spawn_config {
    char **argv;
    const struct contain *contain; /* may be NULL */
    bool own_group;                /* setpgid(0, 0) */
    bool take_terminal;            /* give the controlling terminal (fd 0) to the command's group */
    int stdout_fd, stderr_fd;      /* -1: inherit ours; else dup2'ed onto 1 / 2 */
    int extra_fd;                  /* -1 or an fd to keep open across exec, its number put in
                                      the environment as env_name */
    const char *env_name;          /* NULL, or set to USERMARK_ENV_NO_FD when extra_fd is -1: the
                                      command can tell "supervised, nothing to send to" from
                                      "not supervised" */
    const sigset_t *child_mask;    /* the mask to exec with (the caller's original) */
    bool restore_sigchld_ignore;   /* the caller had SIGCHLD ignored: restore that for the child */
    bool restore_sigxfsz;          /* resmon-run ignores SIGXFSZ (a write past the file-size limit
                                      must fail, not kill it): give the command the caller's */
    bool sigxfsz_ignored;          /* ... which was SIG_IGN (else SIG_DFL) */
    const sigset_t *default_signals; /* NULL, or signals the command gets at their default even
                                        where the caller ignored them: those resmon-run acts on,
                                        as GNU timeout's handlers (which exec resets) give it */
    const char *mark;              /* NULL or "KEY=VALUE" added to the command's environment */
    const char *env_extra;         /* another one, likewise (PYTHONFAULTHANDLER for --dump=python) */
    int pdeath_signal;             /* 0: none */
    /* Last step before exec (e.g. seccomp filters for the command); returns 0 or -errno. Runs in
     * the child, in resmon-run's memory: system calls only, no allocation. */
    int (*before_exec)(void *ctx);
    void *before_exec_ctx;
    bool legacy_clone;             /* glibc's clone() even where clone3 is there (tests) */
};

/* Clone and exec. On success *ret_pid is the running command. If exec failed, the child has been
 * reaped, *ret_pid is left alone and the exec errno is returned negated (e.g. -ENOENT); other
 * failures (clone, memory) also return -errno, with *ret_exec_failed false. */
int spawn_command(const struct spawn_config *cfg, pid_t *ret_pid, bool *ret_exec_failed);

#endif
