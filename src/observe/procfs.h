/* procfs.h — pure parsers for the /proc and cgroup files the sampler reads.
 *
 * Every parser takes the raw bytes of one file (buf, len; no NUL needed, embedded NULs are just
 * bytes) and fills a plain struct. None allocates, none does I/O, so they are cheap on the hot
 * path, unit-tested on captured files and fuzzed: any input, truncated or hostile (a command
 * name is chosen by the command), yields either a filled struct or -EINVAL/-ENODATA, never a
 * read outside [buf, buf+len).
 *
 * Numbers: counters are parsed as unsigned 64-bit and saturate at UINT64_MAX instead of
 * wrapping. Sizes with a "kB" unit (meminfo, status) are converted to bytes. Fields a file may
 * lack (kernel threads and zombies have no VmRSS; old kernels lack SReclaimable) are reported
 * through a `have` bit mask: a missing figure is never a zero.
 */
#ifndef RESMON_PROCFS_H
#define RESMON_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* /proc/stat: one "cpu" line, in clock ticks (USER_HZ). guest and guest_nice are already
 * included in user and nice by the kernel. */
struct procfs_cpu {
    uint64_t user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice;
};

/* /proc/stat per-CPU lines ("cpuN", not the "cpu" total) into cpus[0..max), in file order; the
 * number found is *ret_n (may exceed max: only max are stored). Missing trailing columns (old
 * kernels) are 0. Returns 0, or -ENODATA when no per-CPU line is present. */
int procfs_parse_stat(const char *buf, size_t len, struct procfs_cpu *cpus, size_t max,
                      size_t *ret_n);

enum {
    MEMINFO_TOTAL = 1u << 0,
    MEMINFO_FREE = 1u << 1,
    MEMINFO_AVAILABLE = 1u << 2,
    MEMINFO_BUFFERS = 1u << 3,
    MEMINFO_CACHED = 1u << 4,
    MEMINFO_SRECLAIMABLE = 1u << 5,
};
/* /proc/meminfo, bytes. */
struct procfs_meminfo {
    uint64_t total, free, available, buffers, cached, sreclaimable;
    unsigned have; /* MEMINFO_* */
};
/* Returns 0, or -ENODATA when MemTotal or MemFree is missing. */
int procfs_parse_meminfo(const char *buf, size_t len, struct procfs_meminfo *ret);

/* Sums of /proc/diskstats columns over the devices accepted by the filter. Sector counts are in
 * the kernel's fixed 512-byte units whatever the device's sector size; the times (ms) are what
 * the requests took, summed over requests (psutil's read_time and write_time). */
struct procfs_disk_totals {
    uint64_t reads, read_sectors, writes, write_sectors;
    uint64_t read_ms, write_ms;
    unsigned ndisks; /* devices summed */
};
/* is_disk(name, name_len, ctx) decides whether a device counts (the sampler accepts the names
 * present in /sys/block: whole disks, not partitions); NULL accepts all. Malformed lines are
 * skipped. Always returns 0. */
int procfs_parse_diskstats(const char *buf, size_t len,
                           bool (*is_disk)(const char *name, size_t name_len, void *ctx),
                           void *ctx, struct procfs_disk_totals *ret);

/* /proc/net/dev summed over every interface (loopback included, as psutil does). */
struct procfs_net_totals {
    uint64_t recv_bytes, recv_packets, sent_bytes, sent_packets;
    unsigned nifaces;
};
int procfs_parse_net_dev(const char *buf, size_t len, struct procfs_net_totals *ret);

/* /proc/<pid>/stat, the fields the sampler uses (field numbers per proc(5)). Times are clock
 * ticks; rss is in pages. */
#define PROCFS_COMM_MAX 64
#define PROC_PF_EXITING 0x4u /* include/linux/sched.h, unchanged since Linux 2.6 */

struct procfs_pid_stat {
    pid_t pid;                   /* (1) */
    char comm[PROCFS_COMM_MAX];  /* (2) without the parentheses, NUL-terminated, cut if long */
    char state;                  /* (3) R S D Z T t X I ... */
    pid_t ppid;                  /* (4) */
    uint64_t flags;              /* (9) the kernel's PF_* flags: PF_EXITING (0x4) from the
                                    moment it starts to exit, its exit event already sent */
    uint64_t majflt, cmajflt;    /* (12) (13) major page faults, its own and its waited-for children's */
    uint64_t utime, stime;       /* (14) (15) */
    uint64_t cutime, cstime;     /* (16) (17) children this process waited for */
    uint64_t num_threads;        /* (20) */
    uint64_t starttime;          /* (22) ticks after boot: with pid, the process identity */
    uint64_t rss;                /* (24) pages */
};
/* The command name may hold spaces and ')': it ends at the LAST ')' of the buffer. Returns 0,
 * or -EINVAL when the line is cut before field 24. */
int procfs_parse_pid_stat(const char *buf, size_t len, struct procfs_pid_stat *ret);

/* /proc/<pid>/stat's field (39): the CPU the task last ran on; -1 when the line has none. */
int procfs_pid_stat_cpu(const char *buf, size_t len);

/* /proc/<pid>/stat's field (52, Linux 3.5): the exit status as wait(2) reports it, set as the
 * task begins to exit; -1 when the line has none. Only meaningful for a zombie, and only where
 * the reader may trace it (else the kernel shows 0: /proc/<pid>/io, behind the same check, says). */
int procfs_pid_stat_exit_code(const char *buf, size_t len);

/* /proc/<pid>/task/<tid>/sched (kernels with CONFIG_SCHED_DEBUG): se.exec_start, in ns of the
 * scheduler's clock of the CPU the task last ran on; -ENOENT when the text has none, -ENODATA when
 * it is 0: the kernel forgets it when it moves a task that is not running to another CPU (the load
 * balancer, a task left on the run queue as it went to sleep), and the time it last ran is then
 * not known until it runs again. */
int procfs_parse_sched_exec_start(const char *buf, size_t len, uint64_t *ret_ns);

/* /proc/cpuinfo: the number of physical cores (distinct "physical id"/"core id" pairs); 0 when it
 * does not say (some architectures list neither). */
int procfs_count_cores(const char *buf, size_t len);

/* A CPU list as sysfs writes it (/sys/devices/system/cpu/online, .../topology/core_cpus_list:
 * "0-3,8,10-11\n"): each(cpu, ctx) for every CPU of it, in order, until each returns false. False
 * when the text is not such a list (nothing is called for a malformed part). */
bool procfs_parse_cpu_list(const char *buf, size_t len, bool (*each)(unsigned cpu, void *ctx), void *ctx);

enum {
    PSTATUS_VMRSS = 1u << 0,
    PSTATUS_VMHWM = 1u << 1,
    PSTATUS_THREADS = 1u << 2,
    PSTATUS_PPID = 1u << 3,
};
/* /proc/<pid>/status; VmRSS/VmHWM in bytes. Kernel threads and zombies lack the Vm* lines. */
struct procfs_pid_status {
    uint64_t vmrss, vmhwm, threads;
    pid_t ppid;
    unsigned have; /* PSTATUS_* */
};
/* Returns 0 (possibly with have == 0). */
int procfs_parse_pid_status(const char *buf, size_t len, struct procfs_pid_status *ret);

enum {
    PIO_RCHAR = 1u << 0,
    PIO_WCHAR = 1u << 1,
    PIO_READ_BYTES = 1u << 2,
    PIO_WRITE_BYTES = 1u << 3,
    PIO_CANCELLED = 1u << 4,
};
/* /proc/<pid>/io (includes what the children this process waited for did). */
struct procfs_pid_io {
    uint64_t rchar, wchar, read_bytes, write_bytes, cancelled_write_bytes;
    unsigned have; /* PIO_* */
};
/* Returns 0, or -ENODATA when neither read_bytes nor write_bytes is present. */
int procfs_parse_pid_io(const char *buf, size_t len, struct procfs_pid_io *ret);

/* /proc/<pid>/smaps_rollup: the "Pss:" line, bytes. Returns 0 or -ENODATA. */
int procfs_parse_smaps_pss(const char *buf, size_t len, uint64_t *ret);

enum {
    CGCPU_USAGE = 1u << 0,
    CGCPU_USER = 1u << 1,
    CGCPU_SYSTEM = 1u << 2,
};
/* cgroup v2 cpu.stat, microseconds. */
struct procfs_cg_cpu {
    uint64_t usage_usec, user_usec, system_usec;
    unsigned have; /* CGCPU_* */
};
/* Returns 0, or -ENODATA without usage_usec. */
int procfs_parse_cg_cpu_stat(const char *buf, size_t len, struct procfs_cg_cpu *ret);

/* A file holding one unsigned number (cgroup memory.peak, memory.current). Returns 0 or
 * -EINVAL ("max" and junk included). */
int procfs_parse_u64(const char *buf, size_t len, uint64_t *ret);

/* /proc/<pid>/cmdline into a printable string: NUL separators become spaces, trailing NULs are
 * dropped, the result is cut to out_max-1 bytes and NUL-terminated (out_max >= 1). Returns the
 * length written. Bytes are copied as they are (the JSON writer replaces invalid UTF-8). */
size_t procfs_format_cmdline(const char *buf, size_t len, char *out, size_t out_max);

/* A pressure stall information file (/proc/pressure/<resource>, <cgroup>/<resource>.pressure):
 *   some avg10=0.12 avg60=0.05 avg300=0.01 total=123456
 *   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
 * "some": at least one task stalled; "full": all non-idle tasks at once (absent for the machine's
 * cpu on older kernels). avg* in percent of the window, total in microseconds. */
struct procfs_psi_line {
    double avg10, avg60, avg300;
    uint64_t total_us;
};
struct procfs_psi {
    struct procfs_psi_line some, full;
    bool have_some, have_full;
};
/* Returns 0, or -ENODATA without a "some" line. */
int procfs_parse_psi(const char *buf, size_t len, struct procfs_psi *ret);

#endif
