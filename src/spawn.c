/* spawn.c — see spawn.h. */
#include "spawn.h"

#include <fcntl.h>
#include <stdint.h>
#include <linux/sched.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "util.h"

/* Report errno to the parent and leave. 127 is what a shell would say; the parent decides the
 * real status from the reported errno anyway. */
static _Noreturn void child_fail(int errfd, int err)
{
    ssize_t ignored = write(errfd, &err, sizeof err);
    (void)ignored;
    _exit(127);
}

static _Noreturn void child(const struct spawn_config *cfg, int errfd, pid_t parent, bool joined)
{
    if (cfg->pdeath_signal) {
        /* If we are already orphaned, the death signal will never come: act on it now. The saved
         * parent pid is compared, not 1, so this also works when resmon-run is PID 1. */
        if (prctl(PR_SET_PDEATHSIG, cfg->pdeath_signal, 0, 0, 0) < 0)
            child_fail(errfd, errno);
        if (getppid() != parent)
            kill(getpid(), cfg->pdeath_signal);
    }
    if (cfg->contain && contain_child_join(cfg->contain, joined) < 0)
        child_fail(errfd, errno);
    if (cfg->own_group && setpgid(0, 0) < 0)
        child_fail(errfd, errno);
    if (cfg->take_terminal) {
        /* We are a background group now: tcsetpgrp would stop us with SIGTTOU unless blocked. */
        sigset_t ttou, old;
        sigemptyset(&ttou);
        sigaddset(&ttou, SIGTTOU);
        sigprocmask(SIG_BLOCK, &ttou, &old);
        tcsetpgrp(STDIN_FILENO, getpid());
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    if (cfg->stdout_fd >= 0 && dup2(cfg->stdout_fd, STDOUT_FILENO) < 0)
        child_fail(errfd, errno);
    if (cfg->stderr_fd >= 0 && dup2(cfg->stderr_fd, STDERR_FILENO) < 0)
        child_fail(errfd, errno);
    if (cfg->extra_fd >= 0) {
        /* Keep it across exec: a plain fcntl on our copy (it was O_CLOEXEC). */
        int flags = fcntl(cfg->extra_fd, F_GETFD);
        if (flags < 0 || fcntl(cfg->extra_fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
            child_fail(errfd, errno);
        char num[16];
        snprintf(num, sizeof num, "%d", cfg->extra_fd);
        if (setenv(cfg->env_name, num, 1) < 0)
            child_fail(errfd, errno);
    }
    if (cfg->restore_sigchld_ignore)
        signal(SIGCHLD, SIG_IGN);
    if (cfg->restore_sigxfsz)
        signal(SIGXFSZ, cfg->sigxfsz_ignored ? SIG_IGN : SIG_DFL);
    if (cfg->mark && putenv((char *)(uintptr_t)cfg->mark) < 0)
        child_fail(errfd, errno);
    if (cfg->env_extra && putenv((char *)(uintptr_t)cfg->env_extra) < 0)
        child_fail(errfd, errno);
    if (cfg->before_exec) {
        int r = cfg->before_exec(cfg->before_exec_ctx);
        if (r < 0)
            child_fail(errfd, -r);
    }
    if (cfg->child_mask)
        sigprocmask(SIG_SETMASK, cfg->child_mask, NULL);
    execvp(cfg->argv[0], cfg->argv);
    child_fail(errfd, errno);
}

/* Fork straight into the cgroup when there is one: with clone3(CLONE_INTO_CGROUP) (Linux 5.7) the
 * child's very first instruction already counts in the cgroup's cpu.stat, so the tree's CPU is
 * exact to the last tick. Elsewhere fork(), and the child joins before exec. Without CLONE_VM
 * and without a stack, clone3 returns in the child like fork (no atfork handlers: we have none). */
static pid_t fork_into(const struct spawn_config *cfg, bool *ret_joined)
{
    *ret_joined = false;
    int cgfd = cfg->contain ? contain_cgroup_fd(cfg->contain) : -1;
    if (cgfd >= 0) {
        struct clone_args args = {
            .flags = CLONE_INTO_CGROUP,
            .exit_signal = SIGCHLD,
            .cgroup = (uint64_t)cgfd,
        };
        long pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid >= 0) {
            *ret_joined = true;
            return (pid_t)pid;
        }
    }
    return fork();
}

int spawn_command(const struct spawn_config *cfg, pid_t *ret_pid, bool *ret_exec_failed)
{
    int pipefd[2];
    *ret_exec_failed = false;
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return -errno;
    pid_t parent = getpid();
    bool joined;
    pid_t pid = fork_into(cfg, &joined);
    if (pid < 0) {
        int r = -errno;
        close(pipefd[0]);
        close(pipefd[1]);
        return r;
    }
    if (pid == 0) {
        close(pipefd[0]);
        child(cfg, pipefd[1], parent, joined);
    }
    close(pipefd[1]);
    /* Also from this side, so that the group exists whichever of us runs first. */
    if (cfg->own_group)
        setpgid(pid, pid);
    int err = 0;
    ssize_t n;
    do
        n = read(pipefd[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    close(pipefd[0]);
    if (n == (ssize_t)sizeof err) {
        /* exec failed: the child exits at once; reap it so it is not mistaken for the command. */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        *ret_exec_failed = true;
        return -(err ? err : EIO);
    }
    *ret_pid = pid;
    return 0;
}
