/* sandbox.h — seccomp: resmon-run locks itself down once the command runs, and the command can be
 * given opt-in deny filters.
 *
 * LOCK-DOWN OF RESMON-RUN ITSELF
 *
 * resmon-run parses untrusted bytes (the command's output, /proc files of processes it does not
 * control). Once the command is started and every descriptor resmon-run needs is open, it installs
 * an allow-list filter on itself: the syscalls of its poll loop, the sampler, the parsers, the
 * stream writer, the finalizer and the exit path. Anything else kills the whole process with
 * SIGSYS (SECCOMP_RET_KILL_PROCESS; KILL_THREAD on kernels before 4.14, equivalent here because
 * resmon-run has one thread). What the list leaves out, and therefore what a compromised
 * resmon-run cannot do: execve/execveat, fork/vfork/clone/clone3, executable memory (mmap and
 * mprotect with PROT_EXEC), socket/socketpair/connect/bind/listen/accept (existing sockets can be
 * read and written), ptrace and process_vm_* (but the read-only requests and process_vm_readv
 * the dump at a stop needs: forensics.h, allow_ptrace[]), mount/setns/unshare/pivot_root, keyctl, bpf,
 * perf_event_open, io_uring, userfaultfd, module and reboot calls, ioctl other than the few
 * terminal queries. The full list is allow_names[] and the argument-checked rules in sandbox.c.
 *
 * Filters are inherited across fork and exec, so the lock-down must come after the command was
 * spawned; anything that needs a forbidden call later (a new socket, a helper process) has to be
 * prepared before it. The same call sets PR_SET_NO_NEW_PRIVS and PR_SET_DUMPABLE 0: processes of
 * the same user (the command!) can no longer ptrace resmon-run or read its memory, and
 * /proc/<resmon-run>/ files other than the world-readable ones become root's. Non-dumpable comes
 * first, before the command is spawned (sandbox_private_self): the command must never find a
 * window in which it could attach to resmon-run. It is not inherited across exec (the kernel makes
 * an exec'd program dumpable again), so the command itself is unaffected.
 *
 * Only the native architecture is in the filter. A syscall made through another ABI — i386 via
 * int 0x80 on x86_64, or x32 numbers (bit 30) — is treated as a bad architecture and kills too:
 * libseccomp checks the audit architecture and, for x86_64, the x32 bit.
 *
 * Builds with AddressSanitizer/LeakSanitizer (detected at compile time) also allow what the
 * sanitizer runtime needs at exit: the leak checker clones a tracer task that shares the memory
 * and ptraces the process (clone with CLONE_VM, ptrace other than TRACEME, any prctl,
 * sched_yield, mincore). Release builds do not have these.
 *
 * COMMAND FILTERS (opt-in, --deny=CLASS[,CLASS]...; --deny-network is --deny=network)
 *
 * Installed in the forked child just before exec (spawn's before_exec hook), with the native and
 * compatible architectures (x86_64 also gets i386 and x32; aarch64 gets arm), so a 32-bit program
 * does not escape them. Every other syscall stays allowed. Loading a filter sets NO_NEW_PRIVS on
 * the command: set-user-ID programs (sudo, su, some ping) run without their privileges.
 *
 *   network     socket() and socketpair() for any family other than AF_UNIX fail with EACCES;
 *               io_uring_setup fails with ENOSYS (io_uring can create sockets by itself), so
 *               programs fall back to plain syscalls. Breaks: anything using TCP/UDP (localhost
 *               included: test servers on 127.0.0.1), DNS, netlink (ip, getifaddrs), raw ICMP.
 *               On i386, the multiplexed socketcall(SOCKET/SOCKETPAIR) cannot have its family
 *               inspected and fails for every family, AF_UNIX included.
 *   ptrace      ptrace, process_vm_readv/writev and pidfd_getfd fail with EPERM: a test cannot
 *               inspect or modify other processes of the user (the CI runner, a credential
 *               helper). Breaks: gdb, strace, rr, crash reporters that attach to the crashed
 *               process (Breakpad, Crashpad), and LeakSanitizer (ASan builds with leak detection
 *               report "LeakSanitizer has encountered a fatal error" and fail).
 *   namespaces  unshare, setns, mount-family calls, pivot_root, and clone with a CLONE_NEW* flag
 *               fail with EPERM; clone3 fails with ENOSYS (its flags are in memory, out of the
 *               filter's reach; glibc falls back to clone). Breaks: unprivileged containers
 *               (bubblewrap, podman, unshare(1)), and browser content sandboxes built on user
 *               namespaces (Chromium needs --no-sandbox; Firefox falls back to a weaker one).
 *
 * ERRORS
 *
 * Functions return 0 or -errno. -ENOSYS means seccomp is not available here (kernel without it,
 * or a container that forbids it): the caller warns once and goes on without the filter.
 */
#ifndef RESMON_SANDBOX_H
#define RESMON_SANDBOX_H

#include <stdbool.h>

enum sandbox_deny {
    SANDBOX_DENY_NETWORK = 1u << 0,
    SANDBOX_DENY_PTRACE = 1u << 1,
    SANDBOX_DENY_NAMESPACES = 1u << 2,
};

/* Install the allow-list on the calling process (see above). Call once, single-threaded, after
 * the command was spawned and every descriptor the rest of the run needs is open. Returns 0, or
 * -ENOSYS when seccomp is unavailable (the caller warns once and continues), or another -errno
 * when building the filter failed (also: warn and continue). NO_NEW_PRIVS and non-dumpable are
 * set even when the filter cannot be loaded.
 *
 * With --enable-test-hooks only, RESMON_SANDBOX_DEBUG=1 in the environment turns refusals into a
 * line on stderr ("resmon-run: sandbox: refused syscall NAME (NR, arch 0x...)") and an ENOSYS
 * failure instead of a kill, so one run of the test suite lists every call missing from the
 * allow-list. (A refusal while the sanitizer runtime blocks all signals still kills.) */
int sandbox_lockdown_self(void);

/* The lock-down's filter as libseccomp builds it, refusing with SECCOMP_RET_KILL_PROCESS:
 * *ret->filter is malloc'ed. The build writes it out once (src/run/sandbox_gen.c) and links the
 * program into resmon-run, which then loads it as it is instead of building it at every run (the
 * build's libseccomp, the run's kernel: syscall numbers do not change). Built at run time still:
 * with RESMON_SANDBOX_DEBUG (its action differs), on kernels without KILL_PROCESS (before 4.14;
 * KILL then), and where the build could not run it (cross-compiling). */
struct sock_fprog;
int sandbox_self_filter_export(struct sock_fprog *ret);

/* THE WATCHDOG'S FILTER. The watchdog (watchdog.h) is started before the lock-down and may share
 * resmon-run's memory: unfiltered, it would be the way out of the lock-down for a compromised
 * resmon-run, which can write its stack. It loads a filter of its own as it starts, before the
 * command exists: read, recvmsg, close, futex, exits; and to take the tree down openat, getdents64, write,
 * kill, pidfd_open, pidfd_send_signal, getpid, nanosleep, unlinkat, rmdir. Anything else kills it
 * (SECCOMP_RET_KILL_PROCESS; on kernels before 4.14 the kernel reads that as KILL, the same for a
 * process of one thread). Sanitizer builds add what their runtimes may call.
 * _export builds it with libseccomp (*ret->filter malloc'ed; the build writes it out as it does
 * the lock-down's). _program gives this run's: the built one, else built here once; static storage,
 * never freed. -ENOSYS where seccomp is unavailable. */
int sandbox_watchdog_filter_export(struct sock_fprog *ret);
int sandbox_watchdog_program(const struct sock_fprog **ret);

/* PR_SET_DUMPABLE 0 alone: called before the command is spawned, so that no process of the same
 * user can ptrace resmon-run or read its memory at any time in the run. Returns 0 or -errno. */
int sandbox_private_self(void);

/* True when this build has the test-only triggers (configure --enable-test-hooks). */
bool sandbox_test_hooks(void);

/* Test hooks only (a no-op otherwise): make the call named by RESMON_TEST_FORBIDDEN_SYSCALL —
 * socket, execve, fork, mmap-exec, mprotect-exec, ptrace, x32 or i386 (getpid through a foreign
 * ABI) — and report on stderr "resmon-run: sandbox: forbidden WHAT returned R (errno E)" if it
 * returns. Called right after the lock-down (tests/sandbox-hooks.sh). */
void sandbox_test_trigger(void);

/* Parse a comma-separated list of class names (network, ptrace, namespaces; "all" for every
 * class) into a SANDBOX_DENY_* mask OR'ed into *ret_mask. -EINVAL on an unknown or empty name. */
int sandbox_parse_deny(const char *list, unsigned *ret_mask);

/* The filter for the command. sandbox_command_filter_new() builds it in the parent (it allocates
 * and checks that seccomp is available: -ENOSYS otherwise, which the caller must treat as fatal —
 * the user asked for the restriction). sandbox_command_filter_apply() is spawn's before_exec
 * hook: it loads the filter in the child (ctx = the filter). The filter is freed in the parent
 * after spawning; _free(NULL) is a no-op. */
struct sandbox_filter;
int sandbox_command_filter_new(unsigned deny_mask, struct sandbox_filter **ret);
int sandbox_command_filter_apply(void *filter);
void sandbox_filter_free(struct sandbox_filter *f);

#endif
