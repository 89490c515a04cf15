/* forensics.h — what the processes of the tree were doing, recorded before they are signalled.
 *
 * At a stop (own timeout, output timeout, a resource limit, a stop request, parent death) the
 * supervisor finalizes the profile once, then asks this module for a report on every live member
 * of the tree, then signals. Per process: pid, parent, command line, state, wchan, the current
 * system call (/proc/PID/syscall), the kernel stack where readable (/proc/PID/stack: root only);
 * per thread: its name and, symbolised, its user-space stack.
 *
 * STACKS come from elfutils' libdwfl (the library eu-stack is built on): the process's modules
 * are reported from /proc/PID/maps, each thread's frames are walked from its registers with the
 * modules' CFI, and each address is named from the ELF symbol tables, and from a debuginfo file
 * when one is installed: under /usr/lib/debug/.build-id, or the file a stripped module's
 * .gnu_debuglink names (beside it, in its .debug directory, under /usr/lib/debug), taken only if
 * its build-id is the module's; a Go binary without a symbol table (stripped, as the go tool
 * ships) has its functions named from its .gopclntab, the table the Go runtime uses. No network: debuginfod is never asked (the seccomp lock-down
 * would refuse its sockets, and a stop is no time to download). A thread in uninterruptible sleep
 * (D) is not traced (it would not stop); its frames are the kernel's, from its kernel stack
 * (root) or its wchan, named "function [kernel]", with no address.
 * Without libdw (configure: --without-libdw, or libdw-dev missing) the /proc facts are still
 * recorded and each process says "stacks unavailable: built without libdw".
 *
 * PTRACE, AND ONLY ON MEMBERS. A pid is traced only after a pidfd for it is held and the tree's
 * membership list, read again after the pidfd was opened, still names it (a pid recycled in
 * between would have to be a member again). Each thread is seized (PTRACE_SEIZE, no signal) and
 * interrupted (PTRACE_INTERRUPT); its stop is waited for without ever reaping: a process that
 * exits meanwhile is left for the supervisor's own wait. Every thread is detached before the
 * report returns, so nothing is traced when the supervisor signals the tree. Tracing needs the
 * tracer to be an ancestor under Yama's ptrace_scope=1, which resmon-run is; a process that made
 * itself non-dumpable (or changed credentials) cannot be traced by an unprivileged resmon-run, and
 * its report says so.
 *
 * BACK TO SLEEP before the report returns. The stop interrupts the system call a thread sleeps in
 * (pause, sigsuspend, poll, a futex); once detached, the kernel restarts it. A signal that lands
 * after the kernel decided to restart the call and before the thread sleeps in it again runs the
 * thread's handler, but the call goes on: it is not interrupted, and a program that looks at what
 * its handler did when the call returns never does (its TERM, a runtime's dump request: lost; a
 * Python handler, which runs only when the call returns, does not run). So each thread that was
 * asleep when listed is waited for until it sleeps again: microseconds when its CPU is free, at
 * most 100 ms per process (a thread woken meanwhile by something else runs on), within the budget.
 *
 * THE SCHEDULER'S CLOCK says since when a thread that is not running has not run: the kernel
 * brings a thread's se.exec_start (/proc/PID/task/TID/sched, on kernels built with
 * CONFIG_SCHED_DEBUG, as most distributions' are) up to date as it leaves the CPU. It is read
 * before any thread is traced (a traced thread runs to stop). Its clock is the CPU's scheduler
 * clock, which drifts from CLOCK_MONOTONIC by what the kernel leaves out of it (time stolen by a
 * hypervisor, interrupts), differently on each CPU: each CPU the threads last ran on is read
 * against CLOCK_MONOTONIC by running on it for a moment (our own exec_start there is when we were
 * put on it), so the error is that moment. Where the file, the CPU or the affinity change is not
 * available, the time is not known and nothing is said of it.
 *
 * THE BUDGET bounds the whole report (forensics_config.budget_ns): it is checked before each
 * process and each thread, and waits for a thread's stop end at it (a thread in the kernel, state
 * D, may never stop). What it cut off is counted and said (cut_off_processes, cut_off_threads; a
 * process not reached still has its /proc facts when they are cheap enough to read: they are
 * read first, for every process, before any stack).
 */
#ifndef RESMON_FORENSICS_H
#define RESMON_FORENSICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/jsonw.h"
#include "base/markers.h"

#define FORENSICS_MAX_FRAMES 64
#define FORENSICS_MAX_THREADS 256

struct forensics_thread {
    pid_t tid;
    char comm[64];
    char state;
    size_t nframes;
    char **frames;     /* innermost first: the function's name, else "module+0xoffset", else
                          "0xaddress" */
    uint64_t *pcs;     /* the frames' addresses */
    char **files;      /* each frame's source file, from debuginfo (NULL: unknown) */
    int *lines;        /* and line (0: unknown) */
    char **libs;       /* each frame's module (executable or library) by its file name (NULL:
                          unknown; kernel frames: "kernel") */
    uint64_t at_ns;    /* when its stack was taken (0: none was) */
    uint64_t start_ns; /* when the thread started (CLOCK_MONOTONIC, as the process's), 0: unknown */
    uint64_t cpu_ns;   /* CPU time it used (user + system, /proc's clock ticks) */
    /* when it last ran, as it was not running (CLOCK_MONOTONIC; THE SCHEDULER'S CLOCK), 0:
     * running, or not known: from then on it ran no instruction, so its stack is the one taken */
    uint64_t idle_since_ns;
    uint64_t idle_ns; /* how long that was when its facts were read */
    const char *error; /* static text: why there is no stack (NULL: frames are the stack) */
};

/* RUNTIME DUMPS (opt-in, --dump=go,java,python): after the stacks, a process whose executable is
 * one of these runtimes is asked for its own dump, with the signal that makes it print one: Go
 * programs print every goroutine on SIGQUIT (and exit), JVMs a thread dump on SIGQUIT (and go
 * on), CPython every thread's traceback on a fatal signal such as SIGABRT when PYTHONFAULTHANDLER
 * was set in its environment at its start (and then dies of it). A Go program is recognised by
 * its ELF sections (.go.buildinfo, .gopclntab: needs libelf, which comes with libdw), a JVM by
 * its executable's name (java), CPython likewise (python, python3, python3.11, ...). The caller
 * sends the signal and keeps what the process prints (forensics_process.runtime_dump). */
enum {
    FORENSICS_RT_GO = 1u << 0,
    FORENSICS_RT_JAVA = 1u << 1,
    FORENSICS_RT_PYTHON = 1u << 2,
};
/* "go,java,python" (any of them) into a FORENSICS_RT_* mask; -EINVAL on another name. */
int forensics_parse_runtimes(const char *list, unsigned *ret_mask);
/* The runtime among mask that pid's executable is (0: none of them), and the signal that makes
 * it dump: 0 for the go tool (its build information names cmd/go), which prints nothing of its
 * own on SIGQUIT but relays it to the test binary it runs and waits for it (`go test`): the test
 * binaries are the ones to dump. */
unsigned forensics_runtime_of(pid_t pid, unsigned mask, int *ret_signal);
const char *forensics_runtime_name(unsigned rt);

struct forensics_process {
    pid_t pid, ppid;
    char state;        /* /proc/PID/stat's state, '?' when unknown */
    char comm[64];
    char *cmd;         /* command line, words joined by spaces */
    char *wchan;       /* where it sleeps in the kernel ("0": running), NULL: unknown */
    char *syscall;     /* /proc/PID/syscall, one line ("running", "-1 ...", "NR args sp pc") */
    char *kstack;      /* /proc/PID/stack, NULL: not readable */
    uint64_t starttime; /* /proc's start time (ticks after boot): with pid, the process */
    uint64_t start_ns; /* when it started (CLOCK_MONOTONIC; /proc's clock ticks, so up to one
                          tick early), 0: unknown */
    const char *test;  /* the open test it ran under, NULL: none (filled by the caller) */
    struct forensics_thread *threads;
    size_t nthreads;
    size_t threads_total; /* threads the process has; more than nthreads when cut */
    const char *error;    /* static text: why there are no stacks at all, NULL: none */
    /* the runtime's own dump (RUNTIME DUMPS; filled by the caller) */
    unsigned runtime;          /* FORENSICS_RT_*, 0: none asked */
    char *runtime_dump;        /* what it printed meanwhile (malloc'ed, may be NULL) */
    size_t runtime_dump_len;
    const char *runtime_error; /* static text: why there is none, NULL: none */
};

struct forensics_report {
    struct forensics_process *procs;
    size_t nprocs;
    uint64_t start_ns, end_ns;
    size_t cut_off_processes; /* processes whose stacks the budget left out */
    size_t cut_off_threads;   /* threads likewise, in processes that were reached */
    bool stacks_available;    /* built with libdw */
};

struct forensics_config {
    uint64_t budget_ns; /* the whole report; 0: no stacks, /proc facts only */
    /* is_member(ctx, pid): the tree's membership, asked again after a pidfd is held */
    bool (*is_member)(void *ctx, pid_t pid);
    void *ctx;
};

/* Record the report on pids[0..n) (the tree's live members, the command first). Returns 0 with
 * *ret filled (free with forensics_report_free), or -ENOMEM. Processes that are gone are left
 * out. */
int forensics_record(const struct forensics_config *cfg, const pid_t *pids, size_t n, struct forensics_report *ret);
/* /proc's start time of a process (clock ticks since boot) on the monotonic clock (0: unknown). */
uint64_t forensics_start_ns(uint64_t ticks);
void forensics_report_free(struct forensics_report *r);

/* A hold on one member of the tree while it is traced or signalled: a pidfd, opened before its
 * membership is asked again; where the kernel has none (before 5.3, or under valgrind), its /proc
 * start time, read again after each step instead. */
struct forensics_hold {
    int pidfd; /* -1: none, the start time is the check */
    pid_t pid;
    uint64_t starttime;
};
/* Hold pid (whose start time was starttime when listed) if it is still that process and a
 * member. Returns 0, or -ESRCH (gone, another process, or no longer a member). */
int forensics_hold(const struct forensics_config *cfg, pid_t pid, uint64_t starttime, struct forensics_hold *h);
/* The held process is still alive and the one held. */
bool forensics_hold_same(const struct forensics_hold *h);
/* Signal the held process (pidfd_send_signal, else kill after the check). 0 or -errno. */
int forensics_hold_signal(const struct forensics_hold *h, int sig);
void forensics_release(struct forensics_hold *h);

/* SYMBOLS OF A MAPPED FILE: the sampled stacks (cpuprof.h) are named when the profile is
 * written, maybe long after their processes ended, from the mappings recorded while they lived:
 * each address as an offset into the file that was mapped there, named with the same libdwfl
 * session as the dump's (ELF symbols, local debuginfo by build-id, Go's own table), one session
 * per file, whatever number of processes mapped it. Without libdw (or a file that cannot be read)
 * every place is named "0xOFFSET". */
struct forensics_syms;
int forensics_syms_new(const char *path, struct forensics_syms **ret);
/* The name of the code at offset off of the file (from where its offset 0 is mapped): a function,
 * else "module+0xoffset", else "0xaddress"; and the module's file name (NULL: unknown), both
 * malloc'ed. 0 or -ENOMEM. */
int forensics_syms_name(struct forensics_syms *s, uint64_t off, char **ret_name, char **ret_lib);
void forensics_syms_free(struct forensics_syms *s);

/* The report as text, for people who grep CI artifacts (--dump-file). Appended to w. */
void forensics_text(const struct forensics_report *r, struct jsonw *w);

/* The marker type of a dumped process ("process dump", type ProcessDump: pid, ppid, cmd,
 * state, wchan, syscall, kernelStack, test, threads, topFrames, stacks), and its payload. */
extern const struct marker_type forensics_dump_type;
void forensics_dump_payload(struct jsonw *w, const struct forensics_process *p);

/* The stream's stack line of one thread (profile_stacks.h: the converter makes each dumped thread
 * a thread of the profile), time_ms when its stack was taken, start_ms when the process started,
 * thread_ms when the thread did (ms_of converts the monotonic clock to the stream's ms; a time it
 * does not know is left out):
 *   {"type":"stack","pid":P,"ppid":P,"tid":T,"process":CMD,"name":COMM,"thread":TCOMM,
 *    "state":"R","cpu":MS,"start":MS,"threadStart":MS,"time":MS,
 *    "frames":[innermost first],"files":[S|null],"lines":[N|null],"libs":[S|null]}
 * w is reset first. */
void forensics_stack_line(struct jsonw *w, const struct forensics_process *p, const struct forensics_thread *t,
                          double (*ms_of)(void *ctx, uint64_t ns), void *ctx);

/* The first n frames of t as one line ("a < b < c"), for the summary. Appended to w. */
void forensics_top_frames(const struct forensics_thread *t, size_t n, struct jsonw *w);

#endif
