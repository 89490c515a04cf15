/* clone3.h — a child process started on a stack of the caller's, running a function.
 *
 * glibc has no wrapper for clone3(2), and its clone() cannot place the child in a cgroup; some
 * tools refuse clone() flags that clone3 lets them refuse cleanly (valgrind aborts on a clone()
 * that shares memory without being a thread or a vfork, and answers clone3 with ENOSYS). Used
 * by spawn (the command, CLONE_VM | CLONE_VFORK, into the cgroup) and by the watchdog
 * (CLONE_VM). */
#ifndef RESMON_CLONE3_H
#define RESMON_CLONE3_H

#include <linux/sched.h>

#if defined(__x86_64__)
#define HAVE_CLONE3_CALL 1
/* clone3(args): in the child, on args->stack, fn(arg), then the exit system call with its
 * return value; the child never returns through the caller's frames (which the parent goes on
 * using). In the parent: the child's pid, or -errno (the raw system call: errno is untouched). */
long clone3_call(struct clone_args *args, int (*fn)(void *), void *arg);
#else
#define HAVE_CLONE3_CALL 0
#endif

#endif
