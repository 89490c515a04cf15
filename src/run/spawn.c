/* spawn.c — see spawn.h. */
#include "run/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
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

#include "base/clone3.h"
#include "base/util.h"

/* Under AddressSanitizer the child's frames, which never return, leave their red zones poisoned
 * on a stack the parent unmaps and the next mapping may reuse; and the sanitizer, which knows
 * only the thread's own stack, warns (on the command's stderr) at each call of a function that
 * does not return, made on the child's: the child's own functions are not instrumented. */
#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPAWN_ASAN 1
#endif
#endif
#ifdef SPAWN_ASAN
#include <sanitizer/asan_interface.h>
#define CHILD_SIDE __attribute__((no_sanitize_address))
#else
#define CHILD_SIDE
#endif

/* Report errno to the parent and leave. 127 is what a shell would say; the parent decides the
 * real status from the reported errno anyway. */
CHILD_SIDE static _Noreturn void child_fail(int errfd, int err)
{
    ssize_t ignored = write(errfd, &err, sizeof err);
    (void)ignored;
    _exit(127);
}

/* What the child reads: the parent's memory, shared until the exec (the parent waits). */
struct child_args {
    const struct spawn_config *cfg;
    char **envp;
    int errfd;
    pid_t parent;
    bool joined;
};

/* Runs in the parent's address space (CLONE_VM) on its own stack, the parent suspended until the
 * exec: system calls only, nothing written to memory the parent owns. The environment was built
 * beforehand, errno is the parent's (it does not look at it after a successful clone). */
CHILD_SIDE static _Noreturn void child(const struct child_args *a)
{
    const struct spawn_config *cfg = a->cfg;
    int errfd = a->errfd;
    if (cfg->pdeath_signal) {
        /* If we are already orphaned, the death signal will never come: act on it now. The saved
         * parent pid is compared, not 1, so this also works when resmon-run is PID 1. */
        if (prctl(PR_SET_PDEATHSIG, cfg->pdeath_signal, 0, 0, 0) < 0)
            child_fail(errfd, errno);
        if (getppid() != a->parent)
            kill(getpid(), cfg->pdeath_signal);
    }
    if (cfg->contain && contain_child_join(cfg->contain, a->joined) < 0)
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
    }
    /* Dispositions are the child's own (no CLONE_SIGHAND); a handler of the parent's must not
     * run here, on the parent's memory, before the exec resets it. */
    signal(SIGSYS, SIG_DFL);
    if (cfg->restore_sigchld_ignore)
        signal(SIGCHLD, SIG_IGN);
    if (cfg->restore_sigxfsz)
        signal(SIGXFSZ, cfg->sigxfsz_ignored ? SIG_IGN : SIG_DFL);
    if (cfg->default_signals)
        for (int s = 1; s < NSIG; s++)
            if (sigismember(cfg->default_signals, s) == 1)
                signal(s, SIG_DFL);
    if (cfg->before_exec) {
        int r = cfg->before_exec(cfg->before_exec_ctx);
        if (r < 0)
            child_fail(errfd, -r);
    }
    if (cfg->child_mask)
        sigprocmask(SIG_SETMASK, cfg->child_mask, NULL);
    execvpe(cfg->argv[0], cfg->argv, a->envp);
    child_fail(errfd, errno);
}

CHILD_SIDE static int child_main(void *arg) { child(arg); }

/* The command's environment: ours, with NAME=VALUE entries replaced or added (what setenv and
 * putenv in the child did, built here because the child must not allocate). adds[0..n): NULL
 * entries are skipped. Returns a malloc'ed array (the strings are borrowed), NULL on ENOMEM. */
static char **child_env(char *const *adds, size_t n)
{
    size_t have = 0;
    while (environ && environ[have])
        have++;
    char **env = malloc((have + n + 1) * sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < have; i++) {
        const char *e = environ[i], *eq = strchr(e, '=');
        size_t nl = eq ? (size_t)(eq - e) : strlen(e);
        bool replaced = false;
        for (size_t j = 0; j < n && !replaced; j++)
            replaced = adds[j] && strncmp(adds[j], e, nl) == 0 && adds[j][nl] == '=';
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < n; j++)
        if (adds[j])
            env[k++] = adds[j];
    env[k] = NULL;
    return env;
}

/* The child's stack: room for execvpe's PATH search and its fallback to /bin/sh for a script
 * (both on the stack: the argument vector once more), above a guard page. */
static size_t stack_size_for(const struct spawn_config *cfg)
{
    size_t argc = 0;
    while (cfg->argv[argc])
        argc++;
    const char *path = getenv("PATH");
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = ((size_t)256 << 10) + (argc + 3) * sizeof(char *) + (path ? strlen(path) : 0);
    return (size + page - 1) / page * page;
}


/* Start the child the way posix_spawn does: sharing our memory (no page tables copied, no
 * copy-on-write faults in either process afterwards: most of what a fork cost a run's start)
 * and with us suspended until it has exec'd or failed. Straight into the cgroup when there is
 * one, with clone3(CLONE_INTO_CGROUP) (Linux 5.7): the child's very first instruction already
 * counts in the cgroup's cpu.stat, so the tree's CPU is exact to the last tick. Elsewhere (no
 * clone3, another architecture) glibc's clone(), and the child joins before exec. */
static pid_t clone_child(const struct spawn_config *cfg, struct child_args *a, char *stack, size_t size)
{
    a->joined = false;
#if HAVE_CLONE3_CALL
    if (!cfg->legacy_clone) {
        int cgfd = cfg->contain ? contain_cgroup_fd(cfg->contain) : -1;
        struct clone_args args = {
            .flags = CLONE_VM | CLONE_VFORK | (cgfd >= 0 ? CLONE_INTO_CGROUP : 0),
            .exit_signal = SIGCHLD,
            .stack = (uint64_t)(uintptr_t)stack,
            .stack_size = size,
            .cgroup = cgfd >= 0 ? (uint64_t)cgfd : 0,
        };
        a->joined = cgfd >= 0;
        long pid = clone3_call(&args, child_main, a);
        if (pid >= 0)
            return (pid_t)pid;
        a->joined = false;
        if (cgfd >= 0) { /* CLONE_INTO_CGROUP refused (a v1 hierarchy, say): join by hand */
            args.flags &= ~(uint64_t)CLONE_INTO_CGROUP;
            args.cgroup = 0;
            if ((pid = clone3_call(&args, child_main, a)) >= 0)
                return (pid_t)pid;
        }
    }
#endif
    return clone(child_main, stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
}

int spawn_command(const struct spawn_config *cfg, pid_t *ret_pid, bool *ret_exec_failed)
{
    *ret_exec_failed = false;
    char fdvar[64] = "";
    if (cfg->extra_fd >= 0)
        snprintf(fdvar, sizeof fdvar, "%s=%d", cfg->env_name, cfg->extra_fd);
    else if (cfg->env_name)
        snprintf(fdvar, sizeof fdvar, "%s=%s", cfg->env_name, USERMARK_ENV_NO_FD);
    char *adds[] = {*fdvar ? fdvar : NULL, (char *)(uintptr_t)cfg->mark, (char *)(uintptr_t)cfg->env_extra};
    char **envp = child_env(adds, sizeof adds / sizeof *adds);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = stack_size_for(cfg);
    char *map = envp ? mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0)
                     : MAP_FAILED;
    int pipefd[2] = {-1, -1};
    if (map == MAP_FAILED || mprotect(map, page, PROT_NONE) < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
        int r = envp ? -errno : -ENOMEM;
        if (map != MAP_FAILED)
            munmap(map, size + page);
        free(envp);
        return r;
    }
    struct child_args a = {.cfg = cfg, .envp = envp, .errfd = pipefd[1], .parent = getpid()};
    pid_t pid = clone_child(cfg, &a, map + page, size);
    int clone_err = errno;
    /* The child has exec'd or exited: its stack is ours again. */
#ifdef SPAWN_ASAN
    __asan_unpoison_memory_region(map + page, size);
#endif
    munmap(map, size + page);
    free(envp);
    close(pipefd[1]);
    if (pid < 0) {
        close(pipefd[0]);
        return -clone_err;
    }
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
