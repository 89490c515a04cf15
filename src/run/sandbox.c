/* sandbox.c — see sandbox.h. */
#include "run/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANDBOX_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define SANDBOX_SANITIZER 1
#endif
#endif
#ifndef SANDBOX_SANITIZER
#define SANDBOX_SANITIZER 0
#endif

/* ---- the allow-list of resmon-run itself --------------------------------------------------- */

/* Allowed without looking at arguments. Names that do not exist on the build's architecture are
 * skipped (mmap2, fcntl64, _llseek ... exist only on 32-bit ones). Grouped by who needs them. */
static const char *const allow_names[] = {
    /* I/O on descriptors that are already open, and /proc, cgroup and profile files */
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
    "pwritev2", "lseek", "_llseek", "close", "close_range", "dup", "dup2", "dup3", "fcntl",
    "fcntl64", "open", "openat", "openat2", "getdents", "getdents64", "fstat", "fstat64", "stat",
    "stat64", "lstat", "lstat64", "newfstatat", "fstatat64", "statx", "statfs", "fstatfs",
    "statfs64", "fstatfs64", "readlink", "readlinkat", "access", "faccessat", "faccessat2",
    "splice", "tee", "sendfile", "sendfile64", "copy_file_range",
    /* the stream and the finalizer: temp file beside the profile, durable rename */
    "fsync", "fdatasync", "ftruncate", "ftruncate64", "fallocate", "rename", "renameat",
    "renameat2", "unlink", "unlinkat", "mkdir", "mkdirat", "fchmod", "flock", "umask",
    /* an O_TMPFILE temporary gets its name only when it is whole (outfile.h) */
    "link", "linkat",
    /* containment clean-up: removing the cgroup leaf */
    "rmdir",
    /* the loop: poll, signalfd, timerfd, children */
    "poll", "ppoll", "ppoll_time64", "select", "_newselect", "pselect6", "pselect6_time64",
    "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "signalfd",
    "signalfd4", "timerfd_create", "timerfd_settime", "timerfd_settime64", "timerfd_gettime",
    "timerfd_gettime64", "wait4", "waitid", "waitpid", "kill", "tkill", "tgkill",
    "pidfd_open", "pidfd_send_signal", "rt_sigprocmask", "sigprocmask", "rt_sigaction",
    "sigaction", "rt_sigreturn", "sigreturn", "rt_sigpending", "rt_sigtimedwait",
    "rt_sigtimedwait_time64", "sigaltstack", "restart_syscall",
    /* time */
    "clock_gettime", "clock_gettime64", "clock_getres", "clock_getres_time64", "gettimeofday",
    "time", "nanosleep", "clock_nanosleep", "clock_nanosleep_time64",
    /* memory (mmap and mprotect: below, without PROT_EXEC) */
    "brk", "munmap", "mremap", "madvise",
    /* existing sockets (the marker socket, a netlink connector opened before the lock-down) */
    "recvfrom", "recv", "recvmsg", "recvmmsg", "recvmmsg_time64", "sendto", "send", "sendmsg",
    "sendmmsg", "getsockopt", "getsockname", "getpeername", "shutdown",
    /* identity and limits: the sampler, the summary, re-raising the command's signal */
    "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getuid32",
    "geteuid32", "getgid32", "getegid32", "getpgrp", "getpgid", "getsid", "getrlimit",
    "ugetrlimit", "setrlimit", "prlimit64", "getrusage", "sysinfo", "uname",
    "sched_getaffinity", "sched_yield", "getrandom", "getcwd", "futex", "futex_time64",
    /* leaving */
    "exit", "exit_group",
};

/* The dump of the tree at a stop (forensics.h) traces its members: seize, interrupt, read the
 * registers and memory of a stopped thread, detach. Not TRACEME, ATTACH (it signals), POKE*,
 * SETREGS*, CONT/SYSCALL/SINGLESTEP or SETOPTIONS: nothing that changes a tracee or lets it run
 * under the tracer. The kernel's own ptrace access check applies on top (an ancestor, the same
 * credentials, a dumpable tracee); membership of the tree is checked by forensics.c itself, since
 * a filter cannot know it. */
static const unsigned long allow_ptrace[] = {
    PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH, PTRACE_PEEKDATA, PTRACE_PEEKUSER,
#ifdef PT_GETREGS /* glibc: PTRACE_GETREGS is an enum value, PT_GETREGS its macro */
    PTRACE_GETREGS,
#endif
    PTRACE_GETREGSET,
};

/* What the sanitizer runtimes do at exit (LeakSanitizer's tracer task) and when reporting; clone
 * and ptrace are below, narrowed. */
static const char *const allow_names_sanitizer[] = {
    "sched_yield", "mincore", "set_robust_list", "rseq", "arch_prctl",
};

/* ioctl requests resmon-run makes: terminal queries and handing the terminal back. */
static const unsigned long allow_ioctl[] = {TCGETS, TIOCGPGRP, TIOCGWINSZ, FIONREAD};

/* prctl options that neither widen nor escape the lock-down. PR_SET_DUMPABLE is not one. */
static const int allow_prctl[] = {PR_GET_DUMPABLE, PR_GET_NAME, PR_SET_NAME, PR_GET_NO_NEW_PRIVS,
                                  PR_GET_SECCOMP, PR_GET_CHILD_SUBREAPER, PR_GET_PDEATHSIG};

static int add_allow_list(scmp_filter_ctx ctx, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int nr = seccomp_syscall_resolve_name(names[i]);
        if (nr == __NR_SCMP_ERROR)
            continue;
        int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        /* A pseudo-syscall of another architecture cannot be added to a native-only filter. */
        if (r < 0 && !(nr < 0 && (r == -EDOM || r == -EINVAL)))
            return r;
    }
    return 0;
}

/* Like add_allow_list, for the one syscall nr, only when the condition holds. */
static int allow_if(scmp_filter_ctx ctx, const char *name, struct scmp_arg_cmp cmp)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0;
    int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, cmp);
    return r < 0 && !(nr < 0 && (r == -EDOM || r == -EINVAL)) ? r : 0;
}

static int add_self_rules(scmp_filter_ctx ctx)
{
    int r = add_allow_list(ctx, allow_names, ARRAY_SIZE(allow_names));
    if (r < 0)
        return r;
    /* Memory, never executable: no new code can be mapped or made runnable. */
    const char *mem[] = {"mmap", "mmap2", "mprotect"};
    for (size_t i = 0; i < ARRAY_SIZE(mem); i++)
        if ((r = allow_if(ctx, mem[i], SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0))) < 0)
            return r;
    /* The kernel reads ioctl's request and fd as 32-bit values: compare those bits only. */
    for (size_t i = 0; i < ARRAY_SIZE(allow_ioctl); i++)
        if ((r = allow_if(ctx, "ioctl", SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, allow_ioctl[i]))) < 0)
            return r;
    r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 2, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, 0),
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSPGRP));
    if (r < 0)
        return r;
    /* Narrowing what the process connector delivers (procfilter.h): a classic BPF filter on a
     * socket only ever drops what that socket would receive. */
    r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(setsockopt), 2, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, SOL_SOCKET),
                         SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffu, SO_ATTACH_FILTER));
    if (r < 0)
        return r;
    for (size_t i = 0; i < ARRAY_SIZE(allow_ptrace); i++)
        if ((r = allow_if(ctx, "ptrace", SCMP_A0(SCMP_CMP_EQ, allow_ptrace[i]))) < 0)
            return r;
    /* The dump reads each CPU's scheduler clock by running on it for a moment (forensics.c): its
     * own affinity only. */
    if ((r = allow_if(ctx, "sched_setaffinity", SCMP_A0(SCMP_CMP_EQ, 0))) < 0)
        return r;
    /* libdw reads a stopped tracee's memory with it where available (the same access check as
     * PTRACE_PEEKDATA; it changes nothing). */
    static const char *const vm_read[] = {"process_vm_readv"};
    if ((r = add_allow_list(ctx, vm_read, ARRAY_SIZE(vm_read))) < 0)
        return r;
    if (SANDBOX_SANITIZER) {
        if ((r = add_allow_list(ctx, allow_names_sanitizer, ARRAY_SIZE(allow_names_sanitizer))) < 0)
            return r;
        /* The leak checker's tracer shares our memory (CLONE_VM); fork() does not, and stays
         * refused. The tracer attaches to us; nothing asks to be traced by our parent. */
        if ((r = allow_if(ctx, "clone", SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_VM, CLONE_VM))) < 0 ||
            (r = allow_if(ctx, "ptrace", SCMP_A0(SCMP_CMP_NE, PTRACE_TRACEME))) < 0)
            return r;
        return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 0);
    }
    for (size_t i = 0; i < ARRAY_SIZE(allow_prctl); i++)
        if ((r = allow_if(ctx, "prctl", SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, (unsigned)allow_prctl[i]))) < 0)
            return r;
    return 0;
}

/* The watchdog's allow-list (watchdog.h): it shares resmon-run's memory without sharing its
 * lock-down, so it has one of its own, narrower: waiting on its pipe, then taking the tree down
 * (its /proc and cgroup files, signals, the cgroup leaf's removal). No memory calls: it allocates
 * nothing. recvmsg: a message may carry a descriptor to close (watchdog.h). */
static const char *const watchdog_names[] = {
    "read", "recvmsg", "close", "futex", "exit", "exit_group", "restart_syscall", "rt_sigreturn",
    "open", "openat", "getdents64", "write", "kill", "pidfd_open", "pidfd_send_signal", "getpid",
    "nanosleep", "clock_nanosleep", "unlinkat", "rmdir",
};

/* ... and what the sanitizer runtimes may do in it (a report, the shadow memory). */
static const char *const watchdog_names_sanitizer[] = {
    "mmap", "munmap", "madvise", "mprotect", "sigaltstack", "rt_sigaction", "rt_sigprocmask",
    "prlimit64", "getrlimit", "gettid", "tgkill", "fstat", "newfstatat", "readlink", "prctl",
    "sched_yield", "mincore", "write", "writev",
};

static int add_watchdog_rules(scmp_filter_ctx ctx)
{
    int r = add_allow_list(ctx, watchdog_names, ARRAY_SIZE(watchdog_names));
    if (r >= 0 && SANDBOX_SANITIZER)
        r = add_allow_list(ctx, watchdog_names_sanitizer, ARRAY_SIZE(watchdog_names_sanitizer));
    return r;
}

/* Whether the kernel can take filters at all. PR_GET_SECCOMP fails with EINVAL without
 * CONFIG_SECCOMP; a container policy may make the syscalls fail as well (seen when loading). */
static bool seccomp_supported(void)
{
    return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
}

/* libseccomp before 2.5 reports every kernel refusal as ECANCELED. */
static int unavailable(int r)
{
    return r == -EINVAL || r == -ENOSYS || r == -EPERM || r == -EACCES || r == -EOPNOTSUPP || r == -ECANCELED
               ? -ENOSYS
               : r;
}

/* ---- test hooks ---------------------------------------------------------------------------- */

#ifdef RESMON_TEST_HOOKS
#include <stdio.h>

/* Debug mode: a refused call is logged and fails with ENOSYS instead of killing. The one signal
 * handler in the program, and only in builds with test hooks. Names are resolved beforehand:
 * libseccomp's resolver allocates. */
#define DEBUG_NAMES 1024
static char *debug_names[DEBUG_NAMES];

static void debug_on_sigsys(int sig, siginfo_t *si, void *ucv)
{
    char line[160];
    int nr = si->si_syscall;
    const char *name = nr >= 0 && nr < DEBUG_NAMES && debug_names[nr] ? debug_names[nr] : "?";
    int n = snprintf(line, sizeof line, "resmon-run: sandbox: refused syscall %s (%d, arch 0x%x)\n", name, nr,
                     si->si_arch);
    if (n > 0) {
        ssize_t w = write(STDERR_FILENO, line, (size_t)MIN((size_t)n, sizeof line - 1));
        (void)w;
    }
    /* The kernel leaves the syscall number as the return value: make it an honest ENOSYS. */
    ucontext_t *uc = ucv;
#if defined(__x86_64__)
    uc->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
#elif defined(__i386__)
    uc->uc_mcontext.gregs[REG_EAX] = -ENOSYS;
#elif defined(__aarch64__)
    uc->uc_mcontext.regs[0] = (unsigned long long)-ENOSYS;
#else
    (void)uc;
#endif
    (void)sig;
}

static bool debug_mode(void)
{
    const char *v = getenv("RESMON_SANDBOX_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
}

static int debug_prepare(void)
{
    for (int nr = 0; nr < DEBUG_NAMES; nr++)
        if (!debug_names[nr])
            debug_names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    struct sigaction sa = {.sa_sigaction = debug_on_sigsys, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) < 0)
        return -errno;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSYS);
    return sigprocmask(SIG_UNBLOCK, &set, NULL) < 0 ? -errno : 0;
}

void sandbox_test_trigger(void)
{
    const char *what = getenv("RESMON_TEST_FORBIDDEN_SYSCALL");
    if (!what || !*what)
        return;
    long r = -1;
    if (!strcmp(what, "socket"))
        r = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
    else if (!strcmp(what, "execve")) {
        char *argv[] = {(char *)"true", NULL};
        r = syscall(SYS_execve, "/bin/true", argv, environ);
    } else if (!strcmp(what, "fork"))
        r = (long)fork();
    else if (!strcmp(what, "mmap-exec"))
        r = (long)(intptr_t)mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    else if (!strcmp(what, "mprotect-exec")) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        r = p == MAP_FAILED ? -2 : mprotect(p, 4096, PROT_READ | PROT_EXEC);
    } else if (!strcmp(what, "ptrace"))
        r = syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0);
#if defined(__x86_64__)
    else if (!strcmp(what, "x32"))
        r = syscall(0x40000000 | SYS_getpid);
    else if (!strcmp(what, "i386")) {
        long nr = 20; /* getpid in the i386 table */
        __asm__ volatile("int $0x80" : "=a"(r) : "0"(nr) : "memory");
    }
#endif
    else
        return;
    int err = errno;
    char line[128];
    int n = snprintf(line, sizeof line, "resmon-run: sandbox: forbidden %s returned %ld (errno %d)\n", what, r,
                     r == -1 ? err : 0);
    if (n > 0) {
        ssize_t w = write(STDERR_FILENO, line, (size_t)n);
        (void)w;
    }
}

bool sandbox_test_hooks(void) { return true; }
#else
bool sandbox_test_hooks(void) { return false; }
void sandbox_test_trigger(void) {}
#endif

/* ---- lock-down ----------------------------------------------------------------------------- */

int sandbox_private_self(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ? -errno : 0; }

/* A filter of rules (add_self_rules, add_watchdog_rules), in a context of libseccomp's: kill is the
 * action for a refused call and for a foreign architecture. */
static int rules_filter(uint32_t kill, int (*rules)(scmp_filter_ctx), scmp_filter_ctx *ret)
{
    scmp_filter_ctx ctx = seccomp_init(kill);
    if (!ctx)
        return -ENOMEM;
    int r = 0;
#if SCMP_VER_MAJOR > 2 || (SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR >= 5)
    /* Raw errno from the kernel, not ECANCELED: tells "unavailable" from a bug. */
    if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1)) < 0)
        goto fail;
#endif
    if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, kill)) < 0 || (r = rules(ctx)) < 0)
        goto fail;
    *ret = ctx;
    return 0;
fail:
    seccomp_release(ctx);
    return r;
}

static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *ret);

static int rules_export(int (*rules)(scmp_filter_ctx), struct sock_fprog *ret)
{
    scmp_filter_ctx ctx;
    int r = rules_filter(SCMP_ACT_KILL_PROCESS, rules, &ctx);
    if (r < 0)
        return r;
    r = export_bpf(ctx, ret);
    seccomp_release(ctx);
    return r;
}

int sandbox_self_filter_export(struct sock_fprog *ret) { return rules_export(add_self_rules, ret); }

int sandbox_watchdog_filter_export(struct sock_fprog *ret) { return rules_export(add_watchdog_rules, ret); }

/* The same program, built with the program (sandbox_gen.c writes it out at build time) and linked
 * into resmon-run only: weak, so that the unit tests and the generator itself link without it
 * and build the filter when they lock down. Empty where the build cannot run what it compiles
 * (cross-compiling). */
extern const struct sock_filter sandbox_self_bpf[] __attribute__((weak));
extern const unsigned short sandbox_self_bpf_len __attribute__((weak));
extern const struct sock_filter sandbox_watchdog_bpf[] __attribute__((weak));
extern const unsigned short sandbox_watchdog_bpf_len __attribute__((weak));

int sandbox_watchdog_program(const struct sock_fprog **ret)
{
    /* built here at most once, and kept: the watchdog loads it from our memory */
    static struct sock_fprog prog;
    if (!prog.len) {
        if (!seccomp_supported())
            return -ENOSYS;
        if (&sandbox_watchdog_bpf_len && sandbox_watchdog_bpf_len)
            prog = (struct sock_fprog){sandbox_watchdog_bpf_len, (struct sock_filter *)sandbox_watchdog_bpf};
        else {
            int r = sandbox_watchdog_filter_export(&prog);
            if (r < 0)
                return unavailable(r);
        }
    }
    *ret = &prog;
    return 0;
}

/* Whether the kernel has SECCOMP_RET_KILL_PROCESS (4.14): the built program returns it. */
static bool kill_process_available(void)
{
    uint32_t action = SECCOMP_RET_KILL_PROCESS;
    return syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

int sandbox_lockdown_self(void)
{
    /* Both are worth having even where filters cannot be loaded. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return -errno;
    if (!seccomp_supported())
        return -ENOSYS;

    bool debug = false;
#ifdef RESMON_TEST_HOOKS
    debug = debug_mode();
#endif
    /* The program built with resmon-run: building it here was most of what the lock-down cost
     * (1.9 ms of a 15 ms run of `true`), in every run. */
    if (!debug && &sandbox_self_bpf_len && sandbox_self_bpf_len && kill_process_available()) {
        struct sock_fprog prog = {.len = sandbox_self_bpf_len, .filter = (struct sock_filter *)sandbox_self_bpf};
        return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 ? unavailable(-errno) : 0;
    }

    /* KILL_PROCESS needs API level 3 (kernel 4.14); before that KILL (the thread) is the same for
     * a process of one thread. */
    uint32_t kill = seccomp_api_get() >= 3 ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_KILL;
#ifdef RESMON_TEST_HOOKS
    if (debug) {
        kill = SCMP_ACT_TRAP;
        int r = debug_prepare();
        if (r < 0)
            return r;
    }
#endif
    scmp_filter_ctx ctx;
    int r = rules_filter(kill, add_self_rules, &ctx);
    if (r < 0)
        return r;
    r = seccomp_load(ctx);
    if (r < 0)
        r = unavailable(r);
    seccomp_release(ctx);
    return r;
}

/* ---- command filters ----------------------------------------------------------------------- */

struct sandbox_filter {
    struct sock_fprog prog; /* exported in the parent: loading it in the child allocates nothing */
    unsigned mask;          /* the classes denied */
};

int sandbox_parse_deny(const char *list, unsigned *ret_mask)
{
    static const struct name_bit classes[] = {
        {"network", SANDBOX_DENY_NETWORK},
        {"ptrace", SANDBOX_DENY_PTRACE},
        {"namespaces", SANDBOX_DENY_NAMESPACES},
        {"all", SANDBOX_DENY_NETWORK | SANDBOX_DENY_PTRACE | SANDBOX_DENY_NAMESPACES},
    };
    unsigned mask = 0;
    int r = parse_name_list(list, classes, ARRAY_SIZE(classes), &mask);
    if (r < 0)
        return r;
    *ret_mask |= mask;
    return 0;
}

static int deny(scmp_filter_ctx ctx, int err, const char *name)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0;
    return seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)err), nr, 0);
}

static int add_command_rules(scmp_filter_ctx ctx, unsigned mask)
{
    int r = 0;
    if (mask & SANDBOX_DENY_NETWORK) {
        /* Full 64-bit comparison: a family with stray upper bits is refused too (fail closed). */
        if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX))) < 0 ||
            (r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socketpair), 1,
                                  SCMP_A0(SCMP_CMP_NE, AF_UNIX))) < 0 ||
            (r = deny(ctx, ENOSYS, "io_uring_setup")) < 0 ||
            /* another process's descriptors, its sockets among them */
            (r = deny(ctx, EPERM, "pidfd_getfd")) < 0)
            return r;
    }
    if (mask & SANDBOX_DENY_PTRACE) {
        const char *names[] = {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"};
        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
            if ((r = deny(ctx, EPERM, names[i])) < 0)
                return r;
    }
    if (mask & SANDBOX_DENY_NAMESPACES) {
        const char *names[] = {"unshare", "setns", "mount", "umount", "umount2", "pivot_root", "fsopen",
                               "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr"};
        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
            if ((r = deny(ctx, EPERM, names[i])) < 0)
                return r;
        if ((r = deny(ctx, ENOSYS, "clone3")) < 0)
            return r;
        /* One rule per flag: "any of these bits" is not one comparison. The flags are clone's
         * first argument on x86 and arm (s390 would differ; not a target here). */
        const unsigned long ns_flags[] = {CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                          CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWCGROUP};
        for (size_t i = 0; i < ARRAY_SIZE(ns_flags); i++)
            if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]))) < 0)
                return r;
    }
    return r;
}

/* The architectures a command may use besides the native one. */
static void add_compat_arches(scmp_filter_ctx ctx)
{
    uint32_t native = seccomp_arch_native();
    if (native == SCMP_ARCH_X86_64) {
        seccomp_arch_add(ctx, SCMP_ARCH_X86);
        seccomp_arch_add(ctx, SCMP_ARCH_X32);
    } else if (native == SCMP_ARCH_AARCH64)
        seccomp_arch_add(ctx, SCMP_ARCH_ARM);
}

/* libseccomp 2.5 exports only to a descriptor: an anonymous memory file, read back. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *ret)
{
    _cleanup_close_ int fd = (int)syscall(SYS_memfd_create, "resmon-filter", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = seccomp_export_bpf(ctx, fd);
    if (r < 0)
        return r;
    off_t size = lseek(fd, 0, SEEK_CUR);
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
        size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
        return -E2BIG;
    struct sock_filter *insns = malloc((size_t)size);
    if (!insns)
        return -ENOMEM;
    ssize_t n;
    do
        n = pread(fd, insns, (size_t)size, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)size) {
        free(insns);
        return n < 0 ? -errno : -EIO;
    }
    *ret = (struct sock_fprog){.len = (unsigned short)(size / (off_t)sizeof(struct sock_filter)), .filter = insns};
    return 0;
}

int sandbox_command_filter_new(unsigned deny_mask, struct sandbox_filter **ret)
{
    if (!seccomp_supported())
        return -ENOSYS;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return -ENOMEM;
    int r;
    struct sandbox_filter *f = NULL;
    add_compat_arches(ctx);
    /* An architecture we do not know: refuse its calls rather than let it past the rules. */
    if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS))) < 0)
        goto out;
    if ((r = add_command_rules(ctx, deny_mask)) < 0)
        goto out;
    f = calloc(1, sizeof *f);
    if (!f) {
        r = -ENOMEM;
        goto out;
    }
    if ((r = export_bpf(ctx, &f->prog)) < 0)
        goto out;
    f->mask = deny_mask;
    *ret = TAKE_PTR(f);
    r = 0;
out:
    free(f);
    seccomp_release(ctx);
    return r;
}

/* Sockets the command inherits (above stderr) that are not AF_UNIX: a network it was not to
 * reach, already connected. Closed; 0-2 are left (a command started by inetd has its socket
 * there, and closing them would break more than it protects). In the command's child, which
 * shares resmon-run's memory (spawn.h): getdents64 into a buffer on the stack, no DIR to
 * allocate. */
static void close_inherited_sockets(void)
{
    int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    char buf[4096] __attribute__((aligned(8)));
    long n;
    while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0)
        for (long off = 0; off < n;) {
            struct dirent64 *e = (struct dirent64 *)(void *)(buf + off);
            off += e->d_reclen;
            int fd = atoi(e->d_name);
            struct stat st;
            int domain;
            socklen_t len = sizeof domain;
            if (fd <= 2 || fd == dfd || fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
                continue;
            if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX)
                continue;
            close(fd);
        }
    close(dfd);
}

int sandbox_command_filter_apply(void *filter)
{
    struct sandbox_filter *f = filter;
    if (!f)
        return 0;
    if (f->mask & SANDBOX_DENY_NETWORK)
        close_inherited_sockets();
    /* Required for an unprivileged filter; also what keeps set-user-ID programs from gaining
     * privileges the filter could be used against. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f->prog) == 0)
        return 0;
    if (errno != ENOSYS)
        return -errno;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &f->prog, 0, 0) < 0 ? -errno : 0;
}

void sandbox_filter_free(struct sandbox_filter *f)
{
    if (!f)
        return;
    free(f->prog.filter);
    free(f);
}
