/* sampler.h — periodic samples of the machine and of the command's process tree, turned into
 * markers (profile-format.md §5) and handed to a marker sink as soon as each sample is taken.
 *
 * The supervisor owns the timer and the poll loop; it calls sampler_sample() on every tick (with
 * the number of ticks the timerfd reported, so missed ticks are counted, not bunched), tells the
 * sampler about every child it reaps (sampler_reaped), and takes one last sample when the command
 * ends (sampler_sample with final = true).
 *
 * Machine: /proc/stat (per-CPU), /proc/meminfo, /proc/diskstats (whole disks), /proc/net/dev —
 * exactly the upstream monitor's markers: "CPU Use", "Memory", "IO", "NetIO", "Sampling Interval".
 * Tree: members from contain_members(); /proc/<pid>/stat, status, io → "Tree CPU",
 * "Tree Memory", "Tree IO", "Processes", and one "process" marker per tree process when it ends.
 * A process is identified by (pid, starttime) so a reused pid is a new process. Events and scans
 * race: a scan may find a recycled pid's new holder before the events of its old holder's exit
 * and its own fork are read. An exit reported before a scan saw the pid's process running is the
 * old holder's, not its; a fork event for a process a scan already found (same parent, started
 * within two clock ticks) names that process.
 *
 * Accounting is exact: the tree's CPU total equals what the kernel accounted for the whole tree
 * (cgroup cpu.stat when available; else live utime+stime+cutime+cstime plus reaped rusage).
 * Figures that cannot be read are left out, never reported as zero.
 *
 * How every process is learned, even one that lives shorter than an interval:
 *   * the netlink process connector (CN_PROC, needs CAP_NET_ADMIN and the initial pid
 *     namespace): fork/exec/exit events with kernel timestamps. A fork whose parent is a known
 *     tree process adds the child at once, its exec re-reads the command line, its exit ends
 *     the "process" marker with the exit status the kernel reports. The socket is opened by
 *     sampler_new (before any seccomp lock-down); the supervisor should poll sampler_event_fd()
 *     and call sampler_handle_events() when it is readable, so a fork storm cannot overflow the
 *     socket buffer (sampler_sample drains it too). Overflows are counted (lost_events) and the
 *     /proc scan below still finds every process alive at a sample.
 *   * without the connector (an unprivileged user): the kernel's perf records of the tree's
 *     forks and exits (PERF_RECORD_FORK/EXIT, with kernel timestamps), written into the rings
 *     that name execs (sampler_names.c, below) and handed, in order of time, to the same
 *     handling as the connector's events (sampler_events.c). They carry no exit status: an exit
 *     has one when the process's stat still shows it (a zombie not yet reaped, stat's field 52),
 *     else none. The execs of processes whose fork was read re-read the command line too. Lost
 *     records are counted (names_lost); the scans find what they missed.
 *   * the /proc scan at every sample (contain_members): the fallback, and the source of every
 *     per-process figure. With neither of the above (perf events refused) a process that starts
 *     and ends between two samples gets no marker of its own, but its CPU time is still counted
 *     exactly (cgroup cpu.stat, or its parent's cutime/cstime, or wait4 rusage).
 * How every process is named: by its command line, read from /proc when the process is learned
 * and again at each exec. A process that exec'd and was reaped before that read has none left to
 * read; its name is then the one the kernel gave it at the exec (15 bytes: the program's file
 * name, cut), taken from the kernel's own record (perf side-band records, sampler_names.c:
 * opened by sampler_new, before the command starts; where perf events cannot be opened, a name
 * still in /proc), and its marker's command line says it was not read ("true (command line not
 * read)"). Only a process of which nothing is known is counted unnamed, by exit, in an
 * "unnamed processes" warning at the end.
 * A process marker's cpuTime and maxRSS include the children it waited for (as wait4 and time(1)
 * report them); they are exact for processes resmon-run reaps itself (sampler_reaped) and the
 * last observed figures otherwise.
 *
 * Cost: per tree process the sampler keeps /proc/<pid>/stat, io and status open (within an fd
 * budget of half RLIMIT_NOFILE; beyond it files are opened per read) and reads them with one
 * pread each: stat every sample; io when the process used CPU since its last read, turned zombie,
 * or a second has passed (IO totals stay exact; a near-idle process's bytes may show up to a
 * second late); status (VmHWM) when RSS grew or a second has passed. Buffers and tables are
 * reused, so steady-state sampling does not allocate.
 * Syscalls used after sampler_new: openat, pread64, read, close, recvfrom (netlink), epoll_wait,
 * munmap (the names' rings).
 */
#ifndef RESMON_SAMPLER_H
#define RESMON_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "base/markers.h"
#include "observe/contain.h"

/* The sampler's marker types (markers.h), and the counters it declares in the stream: the
 * machine's and the tree's CPU and memory are drawn as counter tracks, the other figures (IO,
 * network, process counts, the sampling interval) as marker graphs. */
extern const struct marker_type sampler_cpu_type, sampler_mem_type, sampler_io_type, sampler_netio_type,
    sampler_interval_type, sampler_process_type, sampler_treecpu_type, sampler_treemem_type,
    sampler_treeio_type, sampler_treecount_type;
enum { TREECPU_CPUTIME, TREECPU_USER, TREECPU_SYSTEM, TREECPU_CORES };
enum { TREEMEM_RSS, TREEMEM_PSS, TREEMEM_MAJFLT };
/* "Tree CPU" (ms of CPU per sample) and "Tree Memory" (bytes): the converter costs what it
 * closes itself from these (profile.h). */
extern const struct marker_counter sampler_tree_cpu_counter, sampler_tree_mem_counter;
/* Every counter the sampler may declare. */
const struct marker_counter *const *sampler_counters(size_t *ret_n);

struct sampler_config {
    uint64_t interval_ns; /* nominal interval (0: sampling off — the sampler still accounts) */
    bool pss;             /* also read PSS (smaps_rollup), costlier */
    bool system;          /* sample the machine (default true) */
    bool tree;            /* sample the process tree (default true) */
    bool proc_events;     /* use the process connector when available (default true) */
    bool event_filter;    /* with it, a kernel filter passing the tree's events only (procfilter.h;
                           * default true) */
    bool pressure;        /* read pressure stall information (pressure.h; default true) */
    bool proc_names;      /* the kernel's names of processes gone before their command line was
                           * read (sampler_names.c; default true) */
    const char *proc_root; /* NULL = "/proc"; tests point it at fixture files (machine part) */
    const char *sys_block; /* NULL = "/sys/block" (names of whole disks) */
    bool events_polled;   /* the caller reads the events whenever sampler_event_fd is readable
                           * (a sample then skips its own read, which would find none) */
    bool events_after_scan; /* tests: sampler_sample scans before it reads pending process events,
                               as when a fork races the scan; with events_polled, neither its
                               scans nor it read them (as when they come later still) */
    uint64_t filter_reopen_ns; /* how long the event filter's window stays shut after an outsider's
                                  event passed (sampler_events.c; default 1 s) */
};

/* A process a scan finds reaped before its exit event came (its parent reaped it first: the
 * kernel sends the event after waking the parent, and a busy machine can hold the exiting task
 * in between for tens of milliseconds) waits for that event, which says how it died (an OOM kill
 * is told by its SIGKILL): up to SAMPLER_GONE_WAIT_NS in the run, and up to
 * SAMPLER_GONE_FINISH_NS from when it was found gone in sampler_finish. Its process marker ends
 * when it was found gone at the latest. */
#define SAMPLER_GONE_WAIT_NS UINT64_C(1000000000)
#define SAMPLER_GONE_FINISH_NS UINT64_C(250000000)

/* Defaults: interval 1 s, no PSS, system, tree, proc_events, event_filter and proc_names on, real
 * /proc. */
void sampler_config_init(struct sampler_config *cfg);

/* Totals for the summary and the profile's end. */
struct sampler_totals {
    uint64_t tree_cpu_ns;      /* exact CPU time of the whole tree so far */
    uint64_t tree_cpu_read_ns; /* when it was read (monotonic; 0: never): it covers the tree's
                                  life up to then, which may be past the command's end */
    uint64_t tree_user_ns, tree_system_ns;
    uint64_t peak_rss;         /* bytes; peak of the tree's summed RSS (0 if never read) */
    uint64_t samples;          /* samples taken */
    uint64_t missed_ticks;     /* ticks the timer reported beyond one per sample */
    uint64_t processes_seen;   /* distinct tree processes observed */
    uint64_t processes_ended;  /* processes ended */
    uint64_t processes_unnamed; /* ... of which gone before anything named them: no marker */
    uint64_t lost_events;      /* process-connector overflows (ENOBUFS) */
    uint64_t names_lost;       /* the kernel's names lost (a full ring, sampler_names.c), and its
                                  records of forks and exits where they are read */
    uint64_t events;           /* process events read (what the kernel's filter let through) */
    uint64_t filter_attaches;  /* event filters handed to the kernel (each one costs a compile) */
    uint64_t filter_strays;    /* wake-ups that read an outsider's event (its window passed it) */
    uint64_t major_faults;     /* the tree's major page faults so far */
    bool count_known;          /* the last sample counted the tree: */
    uint64_t live_processes, live_threads;
    bool rss_known;            /* the last sample summed the tree's RSS (sampler_tree_rss) */
    bool proc_events;          /* the process connector is in use */
};

struct sampler;

/* t0_ns: profile time 0 (the baseline the first sample runs from; the baseline counters are read
 * here). c: the containment of the tree (borrowed, outlives the sampler; NULL = machine only).
 * sink: where markers go (borrowed). */
int sampler_new(const struct sampler_config *cfg, struct contain *c, const struct marker_sink *sink,
                uint64_t t0_ns, struct sampler **ret);
void sampler_free(struct sampler *s);

/* Take a sample ending at now_ns; ticks = expirations read from the timerfd (>= 1; the excess is
 * counted as missed). final = the last sample (command ended): it also ends the "process" markers
 * of members that are gone. Returns 0 or -errno (a failed sample is reported, never fatal). */
int sampler_sample(struct sampler *s, uint64_t now_ns, uint64_t ticks, bool final);

/* The supervisor reaped pid (wait4): its status and rusage make the accounting exact and end its
 * "process" marker with the right exit ("status N" / "signal NAME"). */
void sampler_reaped(struct sampler *s, pid_t pid, int wstatus, const struct rusage *ru,
                    uint64_t now_ns);

/* The tree's cumulative CPU time now, as exactly and cheaply as the tier allows (cgroup: read
 * cpu.stat; else the processes the sampler knows read again — one pread each, at most every
 * 2 ms — with what their reaped children and resmon-run's used). Used for per-test cost. */
uint64_t sampler_tree_cpu_ns(struct sampler *s);
/* Without the process connector and the cgroup's cpu.stat, the processes born since the last
 * sample are unknown until the next one: list the tree again now, as a sample does (without
 * writing one), so that sampler_tree_cpu_ns counts them. A no-op where either tells. For checks
 * that cannot wait for the next sample (--cpu-limit's timer). */
void sampler_rescan(struct sampler *s, uint64_t now_ns);
/* Whether the tree's processes are learned from the process connector: 0, or why not (-EPERM: an
 * unprivileged user; -ENOTSUP: not asked for or no tree to watch). For -v. */
int sampler_events_status(const struct sampler *s);
/* Whether the kernel's names of exec'd processes are read (sampler_names.c): 0, or why not
 * (-errno of perf_event_open or its mapping; -ENOTSUP: not asked for or no tree to watch). For
 * -v. */
int sampler_names_status(const struct sampler *s);
/* How they follow the tree: "cgroup" or "inherit" (perfring.h), NULL when not read. */
const char *sampler_names_way(const struct sampler *s);
/* Whether the same records also tell the tree's forks and exits (without the connector: "How
 * every process is learned"). For -v. */
bool sampler_names_tasks(const struct sampler *s);
/* The tree's RSS at the last sample (bytes), 0 if unknown. */
uint64_t sampler_tree_rss(const struct sampler *s);
/* The tree's RSS now (bytes, 0 if unknown): the processes the sampler knows, each read again
 * (one pread of its stat), unless the last such reading is younger than max_age_ns — then that
 * one. For per-test peaks between samples; a process born since the last sample or event is not
 * in it. */
uint64_t sampler_tree_rss_now(struct sampler *s, uint64_t now_ns, uint64_t max_age_ns);

void sampler_get_totals(const struct sampler *s, struct sampler_totals *ret);

/* Processes of the tree that died of SIGKILL, as their ends are learned (a process-connector
 * exit, a scan, a reap), for the supervisor to tell an OOM kill from its own (supervise.c). */
struct sampler_killed {
    pid_t pid;
    uint64_t end_ns;
    uint64_t rss;     /* its RSS at the last sample that read it, bytes */
    uint64_t max_rss; /* its peak, bytes (0: unknown) */
    char cmd[160];    /* its command line, cut */
};
/* Move up to max of the recorded kills (oldest first) to out; returns how many. The sampler keeps
 * the last 16 not yet taken. */
size_t sampler_take_killed(struct sampler *s, struct sampler_killed *out, size_t max);

/* The pressure figures (pressure.h), NULL when the kernel keeps none or sampling is off. */
struct pressure;
const struct pressure *sampler_pressure(const struct sampler *s);

/* Optional: the command's pid right after the fork, so events of its children are caught before
 * the first sample lists it, with the command line it is exec'd with (NULL: read it from /proc).
 * The root's process marker then also has an open line (profile.h) until it ends. */
void sampler_track(struct sampler *s, pid_t pid, uint64_t now_ns, const char *cmd);

/* Processes of the tree the sampler knows and has not seen end, started at or after since_ns
 * (monotonic; a start known from /proc's clock ticks is up to a tick early): up to max of them
 * into out (the command line borrowed until the next call into the sampler, NULL unknown).
 * Returns how many there are. For the processes a test leaves behind (supervise.c): the process
 * connector makes them known at once; without it, those a sample has found. */
struct sampler_proc {
    pid_t pid;
    uint64_t starttime; /* /proc's start time (ticks): with pid, the process */
    const char *cmd;
    const char *comm;
};
size_t sampler_started_since(const struct sampler *s, uint64_t since_ns, struct sampler_proc *out, size_t max);

/* The descriptor to poll for POLLIN: the process-connector socket, else the kernel's names' rings
 * (sampler_names.c; read with the connector's events when there is one), or -1 when neither is in
 * use. */
int sampler_event_fd(const struct sampler *s);
/* Read every pending process event and name (non-blocking); call when sampler_event_fd() is
 * readable. */
void sampler_handle_events(struct sampler *s, uint64_t now_ns);

/* End the "process" marker of every process still known (exit left out): call once when the
 * supervisor is done with the tree (after the last sampler_reaped), before sampler_free. */
void sampler_finish(struct sampler *s, uint64_t now_ns);

/* wstatus as the "exit" text of process and command markers: "status N" or "signal NAME"
 * (NAME without "SIG", e.g. "signal KILL"). Returns the length (cut to n-1). */
size_t sampler_format_exit(int wstatus, char *buf, size_t n);

#endif
