/* Unit tests of the sandbox: class lists, the command filters' effects, and the lock-down's
 * allow-list (what passes, what kills). Every filter is loaded in a child forked by the test
 * itself, so the test runner stays unfiltered even with CK_FORK=no; under valgrind (which runs the
 * guest's syscalls itself and cannot live under a filter) the loading tests are skipped. */
#include "run/sandbox.h"

#include <check.h>
#include "check_run.h"
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Sanitizer builds allow any prctl for the runtime's leak checker (sandbox.h). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define SANITIZER 1
#endif
#endif
#ifndef SANITIZER
#define SANITIZER 0
#endif

static bool under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload");
}

static bool seccomp_here(void) { return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0; }

/* Run fn in a child; return its wait status. fn returns the exit code (0 = all expectations met,
 * else the number of the failed step). */
static int in_child(int (*fn)(void *), void *arg)
{
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0)
        _exit(fn(arg));
    int st;
    while (waitpid(p, &st, 0) < 0)
        ck_assert_int_eq(errno, EINTR);
    return st;
}

#define SKIP_UNLESS_LOADABLE()                                                                                         \
    do {                                                                                                               \
        if (under_valgrind() || !seccomp_here()) {                                                                     \
            check_skip("seccomp filters cannot be loaded here: skipped\n");                                            \
            return;                                                                                                    \
        }                                                                                                              \
    } while (0)

/* ---- class lists ---------------------------------------------------------------------------- */

START_TEST(test_parse_deny)
{
    unsigned m = 0;
    ck_assert_int_eq(sandbox_parse_deny("network", &m), 0);
    ck_assert_uint_eq(m, SANDBOX_DENY_NETWORK);
    ck_assert_int_eq(sandbox_parse_deny("ptrace,namespaces", &m), 0);
    ck_assert_uint_eq(m, SANDBOX_DENY_NETWORK | SANDBOX_DENY_PTRACE | SANDBOX_DENY_NAMESPACES);
    m = 0;
    ck_assert_int_eq(sandbox_parse_deny("all", &m), 0);
    ck_assert_uint_eq(m, SANDBOX_DENY_NETWORK | SANDBOX_DENY_PTRACE | SANDBOX_DENY_NAMESPACES);
    const char *bad[] = {"", "net", "network,", ",network", "network,,ptrace", "NETWORK", "networks"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = 42;
        ck_assert_msg(sandbox_parse_deny(bad[i], &m) == -EINVAL, "'%s' accepted", bad[i]);
        ck_assert_uint_eq(m, 42);
    }
}
END_TEST

/* ---- command filters ----------------------------------------------------------------------- */

/* Building (and freeing) a filter needs no kernel support beyond the probe; every class. */
/* The lock-down's program as the build wrote it (linked in, as into resmon-run) is what the rules
 * build now: a rule changed without the program following would fail here. The lock-down tests
 * below load it. */
#ifdef SANDBOX_TEST_RUNTIME
/* Built as unit_sandbox_runtime, without the programs the build writes (as a cross build is): the
 * filters are built when they are loaded, and every loading test below runs on those. */
START_TEST(test_builtin_program)
{
    SKIP_UNLESS_LOADABLE();
    struct sock_fprog p;
    ck_assert_int_eq(sandbox_self_filter_export(&p), 0);
    ck_assert_uint_gt(p.len, 20);
    free(p.filter);
}
END_TEST
#else
extern const unsigned short sandbox_self_bpf_len;
extern const struct sock_filter sandbox_self_bpf[];

START_TEST(test_builtin_program)
{
    /* (libseccomp asks the kernel what it supports first, which valgrind cannot answer) */
    SKIP_UNLESS_LOADABLE();
    struct sock_fprog p;
    ck_assert_int_eq(sandbox_self_filter_export(&p), 0);
    ck_assert_uint_gt(p.len, 20);
    ck_assert_uint_eq(p.len, sandbox_self_bpf_len);
    ck_assert_int_eq(memcmp(p.filter, sandbox_self_bpf, p.len * sizeof *p.filter), 0);
    /* it ends refusing: the last instruction kills the process */
    ck_assert_uint_eq(p.filter[p.len - 1].code, BPF_RET | BPF_K);
    ck_assert_uint_eq(p.filter[p.len - 1].k, SECCOMP_RET_KILL_PROCESS);
    free(p.filter);
}
END_TEST
#endif

START_TEST(test_filter_build)
{
    if (!seccomp_here())
        return;
    for (unsigned m = 0; m < 8; m++) {
        struct sandbox_filter *f = NULL;
        ck_assert_int_eq(sandbox_command_filter_new(m, &f), 0);
        ck_assert_ptr_nonnull(f);
        sandbox_filter_free(f);
    }
    sandbox_filter_free(NULL);
    ck_assert_int_eq(sandbox_command_filter_apply(NULL), 0);
}
END_TEST

static int apply(unsigned mask)
{
    struct sandbox_filter *f = NULL;
    if (sandbox_command_filter_new(mask, &f) < 0)
        return 100;
    int r = sandbox_command_filter_apply(f);
    sandbox_filter_free(f);
    return r < 0 ? 101 : 0;
}

static int errno_of(long r) { return r < 0 ? errno : 0; }

static int network_child(void *arg)
{
    (void)arg;
    int r = apply(SANDBOX_DENY_NETWORK);
    if (r)
        return r;
    if (errno_of(socket(AF_INET, SOCK_STREAM, 0)) != EACCES)
        return 1;
    if (errno_of(socket(AF_INET6, SOCK_DGRAM, 0)) != EACCES)
        return 2;
    if (errno_of(socket(AF_NETLINK, SOCK_RAW, 0)) != EACCES)
        return 3;
    int sv[2];
    if (errno_of(socketpair(AF_INET, SOCK_STREAM, 0, sv)) != EACCES)
        return 4;
    /* stray upper bits in the family: refused, not mistaken for AF_UNIX */
    if (errno_of(syscall(SYS_socket, (1L << 32) | AF_UNIX, SOCK_STREAM, 0)) != EACCES)
        return 5;
    if (socket(AF_UNIX, SOCK_STREAM, 0) < 0)
        return 6;
    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
        return 7;
    if (errno_of(syscall(SYS_io_uring_setup, 1, NULL)) != ENOSYS)
        return 8;
    /* other classes untouched */
    if (errno_of(unshare(0)) != 0)
        return 9;
    /* the filter is kept across exec and fork: it is the command's whole tree's */
    if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 || prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2)
        return 10;
    return 0;
}

START_TEST(test_deny_network)
{
    SKIP_UNLESS_LOADABLE();
    int st = in_child(network_child, NULL);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
}
END_TEST

static int ptrace_child(void *arg)
{
    (void)arg;
    int r = apply(SANDBOX_DENY_PTRACE);
    if (r)
        return r;
    if (errno_of(ptrace(PTRACE_TRACEME, 0, NULL, NULL)) != EPERM)
        return 1;
    if (errno_of(syscall(SYS_process_vm_readv, getpid(), NULL, 0, NULL, 0, 0)) != EPERM)
        return 2;
    if (socket(AF_INET, SOCK_STREAM, 0) < 0)
        return 3;
    return 0;
}

START_TEST(test_deny_ptrace)
{
    SKIP_UNLESS_LOADABLE();
    int st = in_child(ptrace_child, NULL);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
}
END_TEST

static int ns_child(void *arg)
{
    (void)arg;
    int r = apply(SANDBOX_DENY_NAMESPACES);
    if (r)
        return r;
    if (errno_of(unshare(CLONE_NEWUSER)) != EPERM)
        return 1;
    if (errno_of(unshare(CLONE_NEWNS)) != EPERM)
        return 2;
    if (errno_of(syscall(SYS_clone3, NULL, 0)) != ENOSYS)
        return 3;
    if (errno_of(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0)) != EPERM)
        return 4;
    if (errno_of(syscall(SYS_setns, -1, 0)) != EPERM)
        return 5;
    /* a plain fork still works (glibc's fork is clone without CLONE_NEW*) */
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    if (p < 0 || waitpid(p, NULL, 0) != p)
        return 6;
    return 0;
}

START_TEST(test_deny_namespaces)
{
    SKIP_UNLESS_LOADABLE();
    int st = in_child(ns_child, NULL);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
}
END_TEST

/* ---- lock-down ----------------------------------------------------------------------------- */

/* What resmon-run's run does after the lock-down, in miniature: all of it must pass. */
static int allowed_child(void *arg)
{
    (void)arg;
    char dir[] = "/tmp/resmon-sandbox.XXXXXX";
    if (!mkdtemp(dir))
        return 90;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int sv[2];
    if (dfd < 0 || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
        return 91;
    if (sandbox_lockdown_self() < 0)
        return 92;
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
        return 1;
    /* the finalizer: temp file, write, fsync, rename, directory fsync */
    int fd = openat(dfd, "p.tmp", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 || write(fd, "{}\n", 3) != 3 || pwrite(fd, "[", 1, 0) != 1 || fsync(fd) < 0 || fdatasync(fd) < 0 ||
        ftruncate(fd, 3) < 0)
        return 2;
    struct stat st;
    if (fstat(fd, &st) < 0 || fstatat(dfd, "p.tmp", &st, 0) < 0 || close(fd) < 0)
        return 3;
    if (renameat(dfd, "p.tmp", dfd, "p.json") < 0 || fsync(dfd) < 0 || unlinkat(dfd, "p.json", 0) < 0)
        return 4;
    /* the sampler: /proc reads, directory listing */
    char buf[4096];
    fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || pread(fd, buf, sizeof buf, 0) <= 0 || close(fd) < 0)
        return 5;
    fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syscall(SYS_getdents64, fd, buf, sizeof buf) <= 0 || close(fd) < 0)
        return 6;
    /* the marker socket */
    if (send(sv[1], "x", 1, 0) != 1 || recv(sv[0], buf, sizeof buf, MSG_DONTWAIT) != 1)
        return 7;
    /* memory: allocation, large allocation, read-only remap */
    void *big = malloc(64 << 20);
    void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!big || p == MAP_FAILED || mprotect(p, 4096, PROT_READ) < 0 || munmap(p, 1 << 20) < 0)
        return 8;
    free(big);
    /* time, signals, the terminal query */
    struct timespec now, pause = {0, 1000};
    if (clock_gettime(CLOCK_MONOTONIC, &now) < 0 || clock_gettime(CLOCK_BOOTTIME, &now) < 0 ||
        nanosleep(&pause, NULL) < 0)
        return 9;
    sigset_t set;
    sigemptyset(&set);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 || kill(getpid(), 0) < 0)
        return 10;
    (void)isatty(0);
    if (rmdir(dir) < 0)
        return 11;
    /* the exit path: die of the command's signal */
    struct rlimit rl = {0, 0};
    if (setrlimit(RLIMIT_CORE, &rl) < 0)
        return 12;
    signal(SIGUSR1, SIG_DFL);
    raise(SIGUSR1);
    return 13;
}

START_TEST(test_lockdown_allows)
{
    SKIP_UNLESS_LOADABLE();
    int st = in_child(allowed_child, NULL);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1, "status 0x%x (exit %d)", st,
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
END_TEST

static int forbidden_child(void *arg)
{
    int what = *(int *)arg;
    if (sandbox_lockdown_self() < 0)
        return 92;
    switch (what) {
    case 0: socket(AF_UNIX, SOCK_STREAM, 0); break;
    case 1: fork(); break;
    case 2: mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); break;
    case 3: {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        mprotect(p, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
        break;
    }
    case 4: execl("/bin/true", "true", (char *)NULL); break;
    case 5: prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); break;
    case 6: ioctl(1, TIOCSTI, "x"); break;
    case 7: syscall(SYS_connect, 0, NULL, 0); break;
    case 8: syscall(SYS_unshare, 0); break;
    case 9: syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0); break;
    }
    return 0;
}

START_TEST(test_lockdown_kills)
{
    SKIP_UNLESS_LOADABLE();
    int what = _i;
    if (SANITIZER && what == 5)
        return;
    int st = in_child(forbidden_child, &what);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "case %d: status 0x%x", what, st);
}
END_TEST

/* ---- the watchdog's filter ------------------------------------------------------------------ */

#ifdef SANDBOX_TEST_RUNTIME
START_TEST(test_watchdog_builtin)
{
    SKIP_UNLESS_LOADABLE();
    /* no program was built with this binary: the run's is built here, once */
    const struct sock_fprog *run, *again;
    ck_assert_int_eq(sandbox_watchdog_program(&run), 0);
    struct sock_fprog p;
    ck_assert_int_eq(sandbox_watchdog_filter_export(&p), 0);
    ck_assert_uint_eq(p.len, run->len);
    ck_assert_int_eq(memcmp(p.filter, run->filter, p.len * sizeof *p.filter), 0);
    free(p.filter);
    ck_assert_int_eq(sandbox_watchdog_program(&again), 0);
    ck_assert_ptr_eq(again->filter, run->filter);
}
END_TEST
#else
extern const unsigned short sandbox_watchdog_bpf_len;
extern const struct sock_filter sandbox_watchdog_bpf[];

START_TEST(test_watchdog_builtin)
{
    SKIP_UNLESS_LOADABLE();
    struct sock_fprog p;
    ck_assert_int_eq(sandbox_watchdog_filter_export(&p), 0);
    ck_assert_uint_eq(p.len, sandbox_watchdog_bpf_len);
    ck_assert_int_eq(memcmp(p.filter, sandbox_watchdog_bpf, p.len * sizeof *p.filter), 0);
    free(p.filter);
    /* the run's program is the built one */
    const struct sock_fprog *run;
    ck_assert_int_eq(sandbox_watchdog_program(&run), 0);
    ck_assert_ptr_eq(run->filter, sandbox_watchdog_bpf);
}
END_TEST
#endif

static int load_watchdog_filter(void)
{
    const struct sock_fprog *p;
    if (sandbox_watchdog_program(&p) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return 100;
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, p) < 0 ? 101 : 0;
}

/* What taking a tree down does (watchdog.c), under the filter: exits 7 when it all passed. */
static int watchdog_allowed_child(void *arg)
{
    (void)arg;
    int r = load_watchdog_filter();
    if (r)
        return r;
    int procfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (procfd < 0)
        return 1;
    char ents[4096] __attribute__((aligned(8)));
    if (syscall(SYS_getdents64, procfd, ents, sizeof ents) <= 0)
        return 2;
    char path[32];
    snprintf(path, sizeof path, "%d/environ", (int)syscall(SYS_getpid));
    int fd = (int)syscall(SYS_openat, procfd, path, O_RDONLY | O_CLOEXEC);
    char buf[64];
    if (fd < 0 || syscall(SYS_read, fd, buf, sizeof buf) < 0 || syscall(SYS_close, fd) < 0)
        return 3;
    int pfd = (int)syscall(SYS_pidfd_open, syscall(SYS_getpid), 0);
    if (pfd >= 0 && syscall(SYS_pidfd_send_signal, pfd, 0, NULL, 0) < 0)
        return 4;
    if (syscall(SYS_kill, syscall(SYS_getpid), 0) < 0)
        return 5;
    struct timespec ts = {0, 1000};
    if (syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL) != 0)
        return 6;
    if (syscall(SYS_write, STDERR_FILENO, "", 0) < 0)
        return 8;
    syscall(SYS_exit_group, 7);
    return 9;
}

START_TEST(test_watchdog_allows)
{
    SKIP_UNLESS_LOADABLE();
    int st = in_child(watchdog_allowed_child, NULL);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 7, "status 0x%x", st);
}
END_TEST

/* What a watchdog turned against us would want: each kills it. */
static int watchdog_forbidden_child(void *arg)
{
    int what = *(int *)arg;
    int r = load_watchdog_filter();
    if (r)
        return r;
    char *argv[] = {(char *)"true", NULL};
    switch (what) {
    case 0:
        syscall(SYS_execve, "/bin/true", argv, NULL);
        break;
    case 1:
        syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
        break;
    case 2:
        syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
        break;
    case 3:
        syscall(SYS_mmap, 0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        break;
    case 4:
        syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);
        break;
    case 5:
        syscall(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0);
        break;
    }
    return 50;
}

START_TEST(test_watchdog_kills)
{
    SKIP_UNLESS_LOADABLE();
    int what = _i;
    /* sanitizer builds let their runtime map memory and call prctl */
    if (SANITIZER && (what == 3 || what == 5))
        return;
    int st = in_child(watchdog_forbidden_child, &what);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "case %d: status 0x%x", what, st);
}
END_TEST

START_TEST(test_hooks_flag)
{
#ifdef RESMON_TEST_HOOKS
    ck_assert(sandbox_test_hooks());
#else
    ck_assert(!sandbox_test_hooks());
#endif
}
END_TEST

int main(void)
{
    /* The debug mode would turn the kills these tests expect into logged refusals. */
    unsetenv("RESMON_SANDBOX_DEBUG");
    Suite *s = suite_create("sandbox");
    TCase *tc = tcase_create("deny");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_parse_deny);
    tcase_add_test(tc, test_builtin_program);
    tcase_add_test(tc, test_filter_build);
    tcase_add_test(tc, test_deny_network);
    tcase_add_test(tc, test_deny_ptrace);
    tcase_add_test(tc, test_deny_namespaces);
    suite_add_tcase(s, tc);
    tc = tcase_create("lockdown");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_lockdown_allows);
    tcase_add_loop_test(tc, test_lockdown_kills, 0, 10);
    tcase_add_test(tc, test_hooks_flag);
    suite_add_tcase(s, tc);
    tc = tcase_create("watchdog");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_watchdog_builtin);
    tcase_add_test(tc, test_watchdog_allows);
    tcase_add_loop_test(tc, test_watchdog_kills, 0, 6);
    suite_add_tcase(s, tc);
    return check_run(s);
}
