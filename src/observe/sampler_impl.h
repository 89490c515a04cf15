/* sampler_impl.h — what the sampler's parts share; not for other modules (they include
 * sampler.h). The sampler is one object in five files, one concern each:
 *   sampler.c          the table of the tree's processes (pid, starttime) → entry, a process's
 *                      end and its "Process" marker, and the public calls (sampler.h);
 *   sampler_machine.c  the machine's sample and markers;
 *   sampler_tree.c     reading a process's /proc files, the scan of the tree, its totals and
 *                      markers;
 *   sampler_events.c   the process connector and its kernel-side filter, and the handling of a
 *                      fork, exec or exit, whichever source told it;
 *   sampler_names.c    the kernel's names of the tree's processes (perf records of their execs),
 *                      and without the connector the same events' records of forks and exits.
 * The state they share is struct sampler below; each part touches its own block of it (the
 * comments name them) and reaches the others through the calls declared here. */
#ifndef RESMON_SAMPLER_IMPL_H
#define RESMON_SAMPLER_IMPL_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/markers.h"
#include "base/util.h"
#include "observe/perfring.h"
#include "observe/procfs.h"
#include "observe/sampler.h"

#define SCRATCH_SIZE (64 * 1024)
#define CMD_MAX 512
#define MAX_CPUS 4096

enum pent_flags {
    P_ENDED = 1u << 0,     /* marker emitted; kept as a tombstone while the pid is still listed */
    P_EXIT_KNOWN = 1u << 1,
    P_STAT_KNOWN = 1u << 2, /* starttime and the per-process figures were read at least once */
    P_CMD_STALE = 1u << 3,  /* exec'd since cmd was read */
    P_LIVE = 1u << 4,       /* counted in the live sums of the last scan */
    P_IO_OK = 1u << 5,
    P_REAPED = 1u << 6,     /* exact figures from wait4 */
    P_CMD_TRIED = 1u << 7,  /* cmdline read attempted (kernel threads and zombies have none) */
    P_STAT_SEEN = 1u << 8,  /* utime/stime hold figures of an earlier read */
    P_FORK_SEEN = 1u << 9,  /* its fork event was handled (not only found by a scan) */
    P_CMD_GIVEN = 1u << 10, /* the command line it was exec'd with (sampler_track) */
    P_FILTERED = 1u << 11,  /* the attached event filter passes its events (in its set or open window) */
    P_EXEC_WATCHED = 1u << 12, /* forked into the filter's window: an exec of it would have passed */
    P_EXEC_OURS = 1u << 13, /* its next exec is resmon-run's of the command line given */
    P_GONE = 1u << 14,      /* a scan found it reaped before its exit event came (gone_ns) */
};

struct pent {
    pid_t pid, ppid;
    unsigned flags;
    uint32_t seen_gen;
    uint64_t starttime; /* ticks after boot (identity, with pid) */
    uint64_t start_ns, end_ns;
    uint64_t alive_ns;  /* a scan read it running, not a zombie nor exiting, after this instant */
    uint64_t gone_ns;   /* P_GONE: when a scan found it gone (its end: pent_end) */
    int fd_stat, fd_io, fd_status;
    int wstatus;
    /* Last figures read (ticks / bytes); the live sums hold exactly these contributions. */
    uint64_t utime, stime, cutime, cstime;
    uint64_t majflt;    /* its own and its waited-for children's */
    uint64_t read_bytes, write_bytes;
    uint64_t rss, max_rss, threads;
    uint64_t status_ns; /* when status (VmHWM) was last read */
    uint64_t io_ns;     /* when io was last read */
    uint64_t cpu_ns_final; /* from rusage when reaped */
    char comm[PROCFS_COMM_MAX];
    char *cmd; /* malloc'ed once per exec, NULL unknown */
    uint64_t cmd_ns; /* when cmd was read, or inherited at the fork: an exec the kernel recorded
                      * after it (sampler_names.c) makes it another program's */
    uint64_t cmd_t0; /* when that read began (= cmd_ns where not read): an exec recorded during
                      * the read may or may not be in what it read (pent_end) */
};

/* The text a reader parsed last and what it made of it. Idle disks and a quiet network leave
 * diskstats and net/dev byte for byte as they were: the same text gives the same figures, and is
 * not parsed again. */
struct same_text {
    char *text;
    size_t len, cap;
    bool valid;
    union {
        struct procfs_disk_totals disk;
        struct procfs_net_totals net;
    } v;
};

struct sampler {
    struct sampler_config cfg;
    struct contain *contain;
    const struct marker_sink *sink;
    uint64_t t0_ns, last_ns;
    char proc_root[256];
    int proc_fd; /* O_PATH dir of proc_root */
    long hz, page_size;
    int64_t boot_minus_mono_ns;
    pid_t self;
    char *scratch;
    struct jsonw w;

    /* machine */
    int fd_stat, fd_meminfo, fd_diskstats, fd_netdev;
    struct procfs_cpu *cpu_prev, *cpu_cur;
    size_t ncpu, cpu_cap;
    bool have_cpu;
    struct procfs_disk_totals disk_prev;
    bool have_disk;
    struct procfs_net_totals net_prev;
    bool have_net;
    char *disk_names; /* each name as its length (one byte) and its bytes */
    size_t disk_names_len;
    struct same_text disk_text, net_text; /* what diskstats and net/dev read last */

    /* tree */
    int fd_cg_cpu, fd_cg_peak;
    uint64_t cg_usage0, cg_user0, cg_system0;
    struct pent *ents;
    size_t nents, ents_cap;
    int32_t *hash; /* index into ents, -1 empty; size hash_cap (power of 2) */
    size_t hash_cap;
    uint32_t gen;
    long fd_budget;
    /* Live sums over entries flagged P_LIVE, in ticks and bytes. */
    uint64_t live_user_t, live_sys_t, live_rb, live_wb, live_majflt;
    /* What processes reaped by resmon-run used (wait4), in ns and bytes. */
    uint64_t reaped_user_ns, reaped_sys_ns, reaped_rb, reaped_wb, reaped_majflt;
    /* Cumulative figures already reported (never decrease). */
    uint64_t rep_cpu_ns, rep_user_ns, rep_sys_ns, rep_rb, rep_wb, rep_majflt;
    uint64_t rep_cpu_read_ns; /* when rep_cpu_ns was read (the clock, not the sample's time) */
    bool io_ever_ok;
    uint64_t tree_rss;
    bool tree_rss_known;
    uint64_t spot_ns, spot_rss, spot_cpu; /* the last spot reading (spot_read) */

    /* process connector */
    int nl_fd;
    int events_err; /* 0 with the connector, else why not (-errno; -ENOTSUP: not asked for) */
    /* The kernel-side event filter (procfilter.h): on when attached; dirty when the tree gained
     * a process since; fset is the set built for it. */
    bool filter_on, filter_dirty;
    bool filter_stray; /* an event not of the tree passed: the window went to another process */
    pid_t *fset;
    size_t fset_cap;
    pid_t filter_newest; /* the newest pid the last filter knew: the window starts above it */
    uint64_t filter_ns;  /* when it was attached */
    pid_t win_lo, win_hi; /* the window of the attached filter */
    bool win_open;        /* ... open-ended: every pid allocated since it was attached passes */
    uint64_t stray_ns;    /* when an outsider's event last passed (0: never) */
    uint64_t lost_at_scan; /* lost_events at the last full member listing */
    uint64_t full_scan_ns;
    uint64_t scan_ns; /* time of the sample in progress */
    /* Exits of processes not (yet) known: a child that runs and exits on another CPU can report
     * its exit before its parent's fork event is sent. With the event filter, the exits of the
     * processes whose forks it did not pass land here too, never claimed: the ring is sized for a
     * burst read late (a starved run), so that they do not push out the ones still to come. */
    struct {
        pid_t pid, parent;
        int code;
        bool known; /* code is the exit's (the connector's; perf's records have none) */
        uint64_t ns;
    } early[2048];
    unsigned early_next;
    pid_t root_open;  /* the root, while its open line is not closed */
    struct {
        char exit[32];
        uint64_t n;
    } unnamed[8]; /* processes gone before they could be named, by exit */
    unsigned unnamed_kinds;
    /* the kernel's names (sampler_names.c): the events, and the last names read from them */
    struct perfring names;
    int names_err; /* 0 with them, else why not (-errno; -ENOTSUP: not asked for) */
    bool names_task;    /* they carry the tree's forks and exits too (no connector) */
    bool names_reading; /* names_drain is going through a read (its records are in use) */
    struct kname {
        pid_t pid;
        uint64_t ns; /* when it took the name */
        bool exec;   /* at an exec (else by PR_SET_NAME) */
        char comm[16];
    } knames[4096];
    unsigned knames_next;
    struct sampler_killed killed[16]; /* ring: deaths by SIGKILL not yet taken */
    unsigned killed_head, killed_n;
    struct pressure *psi;
    pid_t *pids;      /* reused member list built from the table */
    size_t pids_cap;

    struct sampler_totals tot;
};

static inline uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ticks_to_ns(const struct sampler *s, uint64_t t)
{
    return t / (uint64_t)s->hz * NSEC_PER_SEC + t % (uint64_t)s->hz * NSEC_PER_SEC / (uint64_t)s->hz;
}

static inline uint64_t tv_ns(const struct timeval *tv)
{
    return (uint64_t)tv->tv_sec * NSEC_PER_SEC + (uint64_t)tv->tv_usec * NSEC_PER_USEC;
}

/* pread a whole (small) file from offset 0. /proc and cgroup files are seq_files: a read fills
 * the buffer as far as the content goes, so a short read is the end. Reading on to get the 0 of
 * EOF would make the kernel format the file a second time (half the sampler's cost). */
static inline ssize_t pread_all(int fd, char *buf, size_t max)
{
    size_t len = 0;
    for (;;) {
        ssize_t n = pread(fd, buf + len, max - len, (off_t)len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        len += (size_t)n;
        if (n == 0 || len == max || (size_t)n < max - (len - (size_t)n))
            return (ssize_t)len;
    }
}

static inline int open_at(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    return fd < 0 ? -errno : fd;
}

static inline void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* ---- machine (sampler_machine.c) ---- */

struct machine_now {
    bool cpu, mem, disk, net;
    size_t ncpu;
    struct procfs_meminfo mem_v;
    struct procfs_disk_totals disk_v;
    struct procfs_net_totals net_v;
};

extern const struct marker_counter sampler_cpu_counter, sampler_mem_counter;
/* The names of the whole disks (/sys/block), which diskstats is summed over. */
int load_disk_names(struct sampler *s);
/* Read the machine's files into m; commit makes m the base of the next sample's deltas. */
void machine_read(struct sampler *s, struct machine_now *m);
void machine_commit(struct sampler *s, const struct machine_now *m);
/* The machine's markers for [start, end]: deltas of m against the last committed reading. */
void machine_emit(struct sampler *s, const struct machine_now *m, uint64_t start, uint64_t end);

static inline uint64_t dsub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* The payload in s->w as a marker of the sampler's category. */
static inline void emit(struct sampler *s, const char *name, uint64_t start, uint64_t end)
{
    if (!jsonw_failed(&s->w))
        marker_emit(s->sink, name, start, end, CAT_OTHER, s->w.buf, s->w.len);
}

/* ---- the table of processes (sampler.c) ---- */

struct pent *pent_lookup(struct sampler *s, pid_t pid);
/* A known process that has not ended. */
bool pent_tracked(struct sampler *s, pid_t pid);
struct pent *pent_add(struct sampler *s, pid_t pid);
void pent_remove(struct sampler *s, struct pent *p);
/* Close p's kept files (the fd budget gets them back). */
void pent_close(struct sampler *s, struct pent *p);
/* Forget p's contribution to the live sums. */
void pent_unlive(struct sampler *s, struct pent *p);
/* End p at end_ns: its "Process" marker, then (remove) out of the table. */
void pent_end(struct sampler *s, struct pent *p, uint64_t end_ns, bool remove);
ssize_t read_pid_file(struct sampler *s, pid_t pid, const char *name, char *buf, size_t cap);
void read_cmdline(struct sampler *s, struct pent *p);
bool exec_catch_up(struct sampler *s, struct pent *p);

/* ---- the tree (sampler_tree.c) ---- */

struct tree_now {
    bool cpu, io, count;
    uint64_t cpu_ns, user_ns, sys_ns, rb, wb, majflt;
    uint64_t rss, pss, processes, threads;
    bool rss_known, pss_known;
};

extern const struct marker_counter sampler_majflt_counter;
/* Refresh p from /proc (stat, and io and status when due): 1 read, 0 gone (or another process
 * now holds the pid: *reused), <0 another error. */
int pent_refresh(struct sampler *s, struct pent *p, bool *reused);
/* Read one of p's files into s->scratch, with its kept fd (*fd) when the budget allows: the
 * length read; 0 or -ESRCH: gone. */
ssize_t pent_read(struct sampler *s, struct pent *p, int *fd, const char *name);
void tree_scan(struct sampler *s, uint64_t now_ns, struct tree_now *t);
void tree_totals(struct sampler *s, struct tree_now *t);
void tree_emit(struct sampler *s, struct tree_now *t, uint64_t start, uint64_t end);

/* ---- process events (sampler_events.c) ---- */

/* Open the process connector: the socket's fd, or -errno. */
int nl_open(struct sampler *s);
/* Hand the kernel-side filter the tree as known now, when it changed. */
void filter_sync(struct sampler *s);
/* A fork, exec or exit of a process, from the connector or from perf's records of the tree's
 * tasks (sampler_names.c): the same event either way. exit_known: an exit's exit_code is its
 * status (perf's exit records carry none: a zombie's stat may still tell it). */
struct proc_event;
void proc_event_take(struct sampler *s, const struct proc_event *ev, bool exit_known);

/* ---- the kernel's names (sampler_names.c) ---- */

/* Open the events (before the command starts): 0 or -errno. */
int names_open(struct sampler *s);
/* Read the names the kernel has written since the last call. */
void names_drain(struct sampler *s);
/* The newest name pid took (exec: at an exec, not by PR_SET_NAME) after after_ns and before
 * end_ns (0: not ended), and when (at_ns, may be NULL), read now (where the records are not the process events too: read
 * before, by whoever ends a process): false when the kernel left none (or none is kept). */
bool names_find(struct sampler *s, pid_t pid, uint64_t after_ns, uint64_t end_ns, bool exec, char *comm, size_t size,
                uint64_t *at_ns);

#endif
