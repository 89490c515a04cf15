#include "observe/sampler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "base/jsonw.h"
#include "base/util.h"
#include "observe/pressure.h"
#include "observe/procfilter.h"
#include "observe/procfs.h"

#define SCRATCH_SIZE (64 * 1024)
#define CMD_MAX 512
#define MAX_CPUS 4096

/* ---- marker types (markers.h): upstream's machine types, the tree's, the process ------------ */

enum { CPU_PCT, CPU_USER_PCT, CPU_IOWAIT_PCT, CPU_SYSTEM_PCT, CPU_NICE_PCT, CPU_IDLE_PCT, CPU_BUSY,
       CPU_NICE, CPU_USER, CPU_SYSTEM, CPU_IOWAIT, CPU_SOFTIRQ };
static const struct marker_field cpu_fields[] = {
    [CPU_PCT] = MARKER_FIELD("cpuPercent", "CPU Percent", "string", 0),
    [CPU_USER_PCT] = MARKER_FIELD("user_pct", "User %", "string", 0),
    [CPU_IOWAIT_PCT] = MARKER_FIELD("iowait_pct", "IO Wait %", "string", 0),
    [CPU_SYSTEM_PCT] = MARKER_FIELD("system_pct", "System %", "string", 0),
    [CPU_NICE_PCT] = MARKER_FIELD("nice_pct", "Nice %", "string", 0),
    [CPU_IDLE_PCT] = MARKER_FIELD("idle_pct", "Idle %", "string", 0),
    [CPU_BUSY] = MARKER_FIELD("busy", "Busy (the machine)", "percentage", 0),
    /* upstream's stacked fractions (nice, +user, +system, +iowait, +softirq), which its graph drew:
     * the "CPU Use" counter draws the machine's CPU now */
    [CPU_NICE] = MARKER_FIELD("nice", "Stacked: nice", "decimal", MF_HIDDEN),
    [CPU_USER] = MARKER_FIELD("user", "Stacked: + user", "decimal", MF_HIDDEN),
    [CPU_SYSTEM] = MARKER_FIELD("system", "Stacked: + system", "decimal", MF_HIDDEN),
    [CPU_IOWAIT] = MARKER_FIELD("iowait", "Stacked: + iowait", "decimal", MF_HIDDEN),
    [CPU_SOFTIRQ] = MARKER_FIELD("softirq", "Stacked: + softirq", "decimal", MF_HIDDEN),
};
const struct marker_type sampler_cpu_type = {
    .name = "CPU", .tooltip_label = "{marker.name}", .display = "[]",
    .fields = cpu_fields, .nfields = ARRAY_SIZE(cpu_fields),
};

enum { MEM_USED, MEM_CACHED, MEM_BUFFERS };
static const struct marker_field mem_fields[] = {
    [MEM_USED] = MARKER_FIELD("used", "Memory Used", "bytes", 0),
    [MEM_CACHED] = MARKER_FIELD("cached", "Memory cached", "bytes", 0),
    [MEM_BUFFERS] = MARKER_FIELD("buffers", "Memory buffers", "bytes", 0),
};
const struct marker_type sampler_mem_type = {
    .name = "Mem", .tooltip_label = "{marker.name}", .display = "[]",
    .fields = mem_fields, .nfields = ARRAY_SIZE(mem_fields),
};

enum { IO_WRITE_BYTES, IO_WRITE_COUNT, IO_READ_BYTES, IO_READ_COUNT, IO_WRITE_TIME, IO_READ_TIME };
static const struct marker_field io_fields[] = {
    [IO_WRITE_BYTES] = MARKER_FIELD("write_bytes", "Written", "bytes", 0),
    [IO_WRITE_COUNT] = MARKER_FIELD("write_count", "Write count", "integer", 0),
    [IO_READ_BYTES] = MARKER_FIELD("read_bytes", "Read", "bytes", 0),
    [IO_READ_COUNT] = MARKER_FIELD("read_count", "Read count", "integer", 0),
    /* the disks' time on requests, summed over requests (several at once count several times) */
    [IO_WRITE_TIME] = MARKER_FIELD("write_time", "Time writing", "duration", 0),
    [IO_READ_TIME] = MARKER_FIELD("read_time", "Time reading", "duration", 0),
};
const struct marker_type sampler_io_type = {
    .name = "IO", .tooltip_label = "{marker.name}", .display = "[]",
    .fields = io_fields, .nfields = ARRAY_SIZE(io_fields),
    .graphs = "[{\"key\":\"read_bytes\",\"color\":\"green\",\"type\":\"bar\"},"
              "{\"key\":\"write_bytes\",\"color\":\"red\",\"type\":\"bar\"}]",
};

enum { NET_SENT_BYTES, NET_SENT_COUNT, NET_RECV_BYTES, NET_RECV_COUNT };
static const struct marker_field netio_fields[] = {
    [NET_SENT_BYTES] = MARKER_FIELD("sent_bytes", "Sent", "bytes", 0),
    [NET_SENT_COUNT] = MARKER_FIELD("sent_count", "Packets sent", "integer", 0),
    [NET_RECV_BYTES] = MARKER_FIELD("recv_bytes", "Received", "bytes", 0),
    [NET_RECV_COUNT] = MARKER_FIELD("recv_count", "Packets received", "integer", 0),
};
const struct marker_type sampler_netio_type = {
    .name = "NetIO", .tooltip_label = "{marker.name}", .display = "[]",
    .fields = netio_fields, .nfields = ARRAY_SIZE(netio_fields),
    .graphs = "[{\"key\":\"recv_bytes\",\"color\":\"blue\",\"type\":\"bar\"},"
              "{\"key\":\"sent_bytes\",\"color\":\"orange\",\"type\":\"bar\"}]",
};

enum { INTERVAL_INTERVAL, INTERVAL_MISSED };
static const struct marker_field interval_fields[] = {
    [INTERVAL_INTERVAL] = MARKER_FIELD("interval", "Interval", "duration", 0),
    [INTERVAL_MISSED] = MARKER_FIELD("missed", "Ticks missed", "integer", MF_OPTIONAL),
};
const struct marker_type sampler_interval_type = {
    .name = "Interval", .tooltip_label = "{marker.name}", .display = "[]",
    .fields = interval_fields, .nfields = ARRAY_SIZE(interval_fields),
    .graphs = "[{\"key\":\"interval\",\"color\":\"purple\",\"type\":\"line\"}]",
};

enum { PROC_CMD, PROC_PID, PROC_PPID, PROC_EXIT, PROC_CPU, PROC_RSS };
static const struct marker_field process_fields[] = {
    [PROC_CMD] = MARKER_FIELD("cmd", "Command line", "string", 0),
    [PROC_PID] = MARKER_FIELD("pid", "Process ID", "pid", 0),
    [PROC_PPID] = MARKER_FIELD("ppid", "Parent process ID", "pid", MF_OPTIONAL),
    [PROC_EXIT] = MARKER_FIELD("exit", "Exit", "string", MF_OPTIONAL),
    [PROC_CPU] = MARKER_FIELD("cpuTime", "CPU Time", "duration", MF_OPTIONAL),
    [PROC_RSS] = MARKER_FIELD("maxRSS", "Peak RSS", "bytes", MF_OPTIONAL),
};
const struct marker_type sampler_process_type = {
    .name = "Process", .tooltip_label = "{marker.name}", .table_label = "{marker.data.cmd}",
    .chart_label = "{marker.data.cmd}", .display = "[\"marker-chart\",\"marker-table\"]",
    .fields = process_fields, .nfields = ARRAY_SIZE(process_fields),
};

static const struct marker_field treecpu_fields[] = {
    [TREECPU_CPUTIME] = MARKER_FIELD("cpuTime", "CPU Time", "duration", 0),
    [TREECPU_USER] = MARKER_FIELD("user", "User", "duration", 0),
    [TREECPU_SYSTEM] = MARKER_FIELD("system", "System", "duration", 0),
    [TREECPU_CORES] = MARKER_FIELD("cores", "Cores busy", "decimal", 0),
};
const struct marker_type sampler_treecpu_type = {
    .name = "TreeCPU", .tooltip_label = "{marker.name}", .display = "[]",
    .description = "CPU time the command's process tree used in the sample's interval",
    .fields = treecpu_fields, .nfields = ARRAY_SIZE(treecpu_fields),
};

static const struct marker_field treemem_fields[] = {
    [TREEMEM_RSS] = MARKER_FIELD("rss", "Resident", "bytes", 0),
    [TREEMEM_PSS] = MARKER_FIELD("pss", "Proportional", "bytes", MF_OPTIONAL),
    [TREEMEM_MAJFLT] = MARKER_FIELD("majorFaults", "Major page faults", "integer", MF_OPTIONAL),
};
const struct marker_type sampler_treemem_type = {
    .name = "TreeMem", .tooltip_label = "{marker.name}", .display = "[]",
    .description = "Resident memory of the command's process tree (summed over its processes) at the sample",
    .fields = treemem_fields, .nfields = ARRAY_SIZE(treemem_fields),
};

enum { TREEIO_READ, TREEIO_WRITE };
static const struct marker_field treeio_fields[] = {
    [TREEIO_READ] = MARKER_FIELD("read_bytes", "Read", "bytes", 0),
    [TREEIO_WRITE] = MARKER_FIELD("write_bytes", "Written", "bytes", 0),
};
const struct marker_type sampler_treeio_type = {
    .name = "TreeIO", .tooltip_label = "{marker.name}", .display = "[]",
    .description = "Storage IO of the command's process tree in the sample's interval",
    .fields = treeio_fields, .nfields = ARRAY_SIZE(treeio_fields),
    .graphs = "[{\"key\":\"read_bytes\",\"color\":\"green\",\"type\":\"bar\"},"
              "{\"key\":\"write_bytes\",\"color\":\"red\",\"type\":\"bar\"}]",
};

enum { TREECOUNT_PROCESSES, TREECOUNT_THREADS };
static const struct marker_field treecount_fields[] = {
    [TREECOUNT_PROCESSES] = MARKER_FIELD("processes", "Processes", "integer", 0),
    [TREECOUNT_THREADS] = MARKER_FIELD("threads", "Threads", "integer", 0),
};
const struct marker_type sampler_treecount_type = {
    .name = "TreeCount", .tooltip_label = "{marker.name}", .display = "[]",
    .description = "Live processes and threads of the command's process tree at the sample",
    .fields = treecount_fields, .nfields = ARRAY_SIZE(treecount_fields),
    .graphs = "[{\"key\":\"processes\",\"color\":\"blue\",\"type\":\"line\"},"
              "{\"key\":\"threads\",\"color\":\"teal\",\"type\":\"line\"}]",
};

/* Counters: the front-end's counter display (graph type, unit, colour, label, tooltip rows). A
 * rate's "rate" is count per ms: CPU ms per ms is cores, a share per ms of a share is the share.
 * The tracks go in the order of their sortWeight, what someone looking into a stop wants first
 * first: the tree's CPU and memory (100, 101), the machine's (102, 103), pressure (pressure.c,
 * 104..109), the tree's major faults (110). A label names the track for what it measures (the
 * counter's name stays, for the tools that read it). */
static const struct marker_counter cpu_counter = {
    .name = "CPU Use", .category = "CPU",
    .description = "CPU use of the whole machine (100% = every core busy)",
    .marker = "CPU Use", .type = &sampler_cpu_type, .field = CPU_BUSY, .kind = MCOUNT_SHARE,
    .display = "{\"graphType\":\"line-rate\",\"unit\":\"percent\",\"color\":\"yellow\","
               "\"markerSchemaLocation\":null,\"sortWeight\":102,\"label\":\"Machine CPU\",\"tooltipRows\":["
               "{\"type\":\"value\",\"source\":\"rate\",\"format\":{\"unit\":\"percent\"},"
               "\"label\":\"of the machine's CPU\"}]}",
};
static const struct marker_counter mem_counter = {
    .name = "Memory", .category = "Memory",
    .description = "Memory used on the machine (total - free - buffers - cache)",
    .marker = "Memory", .type = &sampler_mem_type, .field = MEM_USED, .kind = MCOUNT_LEVEL,
    .display = "{\"graphType\":\"line-accumulated\",\"unit\":\"bytes\",\"color\":\"orange\","
               "\"markerSchemaLocation\":null,\"sortWeight\":103,\"label\":\"Machine Memory\",\"tooltipRows\":["
               "{\"type\":\"value\",\"source\":\"accumulated\",\"format\":{\"unit\":\"bytes\"},"
               "\"label\":\"used on the machine\"},"
               "{\"type\":\"value\",\"source\":\"count-range\",\"format\":{\"unit\":\"bytes\"},"
               "\"label\":\"range in the graph\"}]}",
};
const struct marker_counter sampler_tree_cpu_counter = {
    .name = "Tree CPU", .category = "CPU",
    .description = "CPU use of the command's process tree (100% = one core)",
    .marker = "Tree CPU", .type = &sampler_treecpu_type, .field = TREECPU_CPUTIME, .kind = MCOUNT_AMOUNT,
    .display = "{\"graphType\":\"line-rate\",\"unit\":\"percent\",\"color\":\"green\","
               "\"markerSchemaLocation\":null,\"sortWeight\":100,\"label\":\"Tree CPU\",\"tooltipRows\":["
               "{\"type\":\"value\",\"source\":\"rate\",\"format\":{\"unit\":\"percent\"},"
               "\"label\":\"CPU of the tree (100% = one core)\"},"
               "{\"type\":\"separator\"},"
               "{\"type\":\"value\",\"source\":\"committed-range-total\",\"format\":{\"unit\":\"number\"},"
               "\"label\":\"CPU ms in the visible range\"},"
               "{\"type\":\"value\",\"source\":\"selection-total\",\"format\":{\"unit\":\"number\"},"
               "\"label\":\"CPU ms in the selection\",\"requiresPreviewSelection\":true}]}",
};
const struct marker_counter sampler_tree_mem_counter = {
    .name = "Tree Memory", .category = "Memory",
    .description = "Resident memory of the command's process tree (summed over its processes)",
    .marker = "Tree Memory", .type = &sampler_treemem_type, .field = TREEMEM_RSS, .kind = MCOUNT_LEVEL,
    .display = "{\"graphType\":\"line-accumulated\",\"unit\":\"bytes\",\"color\":\"purple\","
               "\"markerSchemaLocation\":null,\"sortWeight\":101,\"label\":\"Tree Memory\",\"tooltipRows\":["
               "{\"type\":\"value\",\"source\":\"accumulated\",\"format\":{\"unit\":\"bytes\"},"
               "\"label\":\"resident in the tree\"},"
               "{\"type\":\"value\",\"source\":\"count-range\",\"format\":{\"unit\":\"bytes\"},"
               "\"label\":\"range in the graph\"}]}",
};

/* Major page faults (a page read back from disk or swap): a tree that faults a lot is thrashing. */
static const struct marker_counter majflt_counter = {
    .name = "Tree Major Faults", .category = "Memory",
    .description = "Major page faults of the command's process tree (pages read back from disk or swap)",
    .marker = "Tree Memory", .type = &sampler_treemem_type, .field = TREEMEM_MAJFLT, .kind = MCOUNT_AMOUNT,
    .display = "{\"graphType\":\"line-rate\",\"unit\":\"number\",\"color\":\"grey\","
               "\"markerSchemaLocation\":null,\"sortWeight\":110,\"label\":\"Tree Major Faults\",\"tooltipRows\":["
               "{\"type\":\"value\",\"source\":\"count\",\"format\":{\"unit\":\"number\"},"
               "\"label\":\"major page faults in the sample\"},"
               "{\"type\":\"value\",\"source\":\"selection-total\",\"format\":{\"unit\":\"number\"},"
               "\"label\":\"in the selection\",\"requiresPreviewSelection\":true}]}",
};

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
    P_FILTERED = 1u << 11,  /* in the set of the attached event filter (procfilter.h) */
    P_EXEC_WATCHED = 1u << 12, /* forked into the filter's window: an exec of it would have passed */
    P_EXEC_OURS = 1u << 13, /* its next exec is resmon-run's of the command line given */
};

struct pent {
    pid_t pid, ppid;
    unsigned flags;
    uint32_t seen_gen;
    uint64_t starttime; /* ticks after boot (identity, with pid) */
    uint64_t start_ns, end_ns;
    uint64_t alive_ns;  /* a scan read it running, not a zombie nor exiting, after this instant */
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

static bool same_text_is(const struct same_text *t, const char *buf, size_t n)
{
    return t->valid && t->len == n && (n == 0 || memcmp(t->text, buf, n) == 0);
}

/* Keep buf as the text last parsed (its figures: the caller's, in t->v). Without memory the
 * next read is simply parsed. */
static void same_text_keep(struct same_text *t, const char *buf, size_t n)
{
    t->valid = false;
    if (n > t->cap) {
        char *b = realloc(t->text, n);
        if (!b)
            return;
        t->text = b;
        t->cap = n;
    }
    if (n)
        memcpy(t->text, buf, n);
    t->len = n;
    t->valid = true;
}

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
        uint64_t ns;
    } early[2048];
    unsigned early_next;
    pid_t root_open;  /* the root, while its open line is not closed */
    struct {
        char exit[32];
        uint64_t n;
    } unnamed[8]; /* processes gone before they could be named, by exit */
    unsigned unnamed_kinds;
    struct sampler_killed killed[16]; /* ring: deaths by SIGKILL not yet taken */
    unsigned killed_head, killed_n;
    struct pressure *psi;
    pid_t *pids;      /* reused member list built from the table */
    size_t pids_cap;

    struct sampler_totals tot;
};

void sampler_config_init(struct sampler_config *cfg)
{
    *cfg = (struct sampler_config){
        .interval_ns = NSEC_PER_SEC, .system = true, .tree = true, .proc_events = true,
        .event_filter = true, .pressure = true};
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t ticks_to_ns(const struct sampler *s, uint64_t t)
{
    return t / (uint64_t)s->hz * NSEC_PER_SEC + t % (uint64_t)s->hz * NSEC_PER_SEC / (uint64_t)s->hz;
}

static uint64_t tv_ns(const struct timeval *tv)
{
    return (uint64_t)tv->tv_sec * NSEC_PER_SEC + (uint64_t)tv->tv_usec * NSEC_PER_USEC;
}

/* pread a whole (small) file from offset 0. /proc and cgroup files are seq_files: a read fills
 * the buffer as far as the content goes, so a short read is the end. Reading on to get the 0 of
 * EOF would make the kernel format the file a second time (half the sampler's cost). */
static ssize_t pread_all(int fd, char *buf, size_t max)
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

static int open_at(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    return fd < 0 ? -errno : fd;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

const struct marker_counter *const *sampler_counters(size_t *ret_n)
{
    static const struct marker_counter *const all[] = {&cpu_counter, &mem_counter, &sampler_tree_cpu_counter,
                                                       &sampler_tree_mem_counter, &majflt_counter};
    *ret_n = ARRAY_SIZE(all);
    return all;
}

/* ---- machine ---------------------------------------------------------------------------- */

static bool disk_filter(const char *name, size_t n, void *ctx)
{
    const struct sampler *s = ctx;
    /* /sys/block spells '/' in device names as '!'. */
    for (size_t off = 0; off < s->disk_names_len;) {
        size_t dn = (unsigned char)s->disk_names[off];
        const char *d = s->disk_names + off + 1;
        if (dn == n) {
            size_t i = 0;
            while (i < n && (d[i] == name[i] || (d[i] == '!' && name[i] == '/')))
                i++;
            if (i == n)
                return true;
        }
        off += dn + 1;
    }
    return false;
}

static int load_disk_names(struct sampler *s)
{
    const char *dir = s->cfg.sys_block ? s->cfg.sys_block : "/sys/block";
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    size_t cap = 256, len = 0;
    char *buf = malloc(cap);
    struct dirent *e;
    int r = 0;
    while (buf && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        size_t n = strlen(e->d_name) + 1;
        if (n > 256)
            continue; /* NAME_MAX is 255: not a device name */
        if (len + n > cap) {
            char *nb = realloc(buf, cap = (len + n) * 2);
            if (!nb) {
                r = -ENOMEM;
                break;
            }
            buf = nb;
        }
        buf[len] = (char)(unsigned char)(n - 1);
        memcpy(buf + len + 1, e->d_name, n - 1);
        len += n;
    }
    closedir(d);
    if (!buf)
        return -ENOMEM;
    if (r < 0) {
        free(buf);
        return r;
    }
    s->disk_names = buf;
    s->disk_names_len = len;
    return 0;
}

struct machine_now {
    bool cpu, mem, disk, net;
    size_t ncpu;
    struct procfs_meminfo mem_v;
    struct procfs_disk_totals disk_v;
    struct procfs_net_totals net_v;
};

static void machine_read(struct sampler *s, struct machine_now *m)
{
    ssize_t n;
    size_t ncpu;
    m->cpu = m->mem = m->disk = m->net = false;
    if (s->fd_stat >= 0 && (n = pread_all(s->fd_stat, s->scratch, SCRATCH_SIZE)) > 0 &&
        procfs_parse_stat(s->scratch, (size_t)n, s->cpu_cur, s->cpu_cap, &ncpu) == 0) {
        m->ncpu = MIN(ncpu, s->cpu_cap);
        m->cpu = true;
    }
    if (s->fd_meminfo >= 0 && (n = pread_all(s->fd_meminfo, s->scratch, SCRATCH_SIZE)) > 0)
        m->mem = procfs_parse_meminfo(s->scratch, (size_t)n, &m->mem_v) == 0;
    if (s->fd_diskstats >= 0 && (n = pread_all(s->fd_diskstats, s->scratch, SCRATCH_SIZE)) >= 0) {
        if (same_text_is(&s->disk_text, s->scratch, (size_t)n)) {
            m->disk_v = s->disk_text.v.disk;
            m->disk = true;
        } else if ((m->disk = procfs_parse_diskstats(s->scratch, (size_t)n, disk_filter, s, &m->disk_v) == 0)) {
            same_text_keep(&s->disk_text, s->scratch, (size_t)n);
            s->disk_text.v.disk = m->disk_v;
        }
    }
    if (s->fd_netdev >= 0 && (n = pread_all(s->fd_netdev, s->scratch, SCRATCH_SIZE)) > 0) {
        if (same_text_is(&s->net_text, s->scratch, (size_t)n)) {
            m->net_v = s->net_text.v.net;
            m->net = true;
        } else if ((m->net = procfs_parse_net_dev(s->scratch, (size_t)n, &m->net_v) == 0)) {
            same_text_keep(&s->net_text, s->scratch, (size_t)n);
            s->net_text.v.net = m->net_v;
        }
    }
}

static void machine_commit(struct sampler *s, const struct machine_now *m)
{
    if (m->cpu) {
        struct procfs_cpu *t = s->cpu_prev;
        s->cpu_prev = s->cpu_cur;
        s->cpu_cur = t;
        s->ncpu = m->ncpu;
        s->have_cpu = true;
    }
    if (m->disk) {
        s->disk_prev = m->disk_v;
        s->have_disk = true;
    }
    if (m->net) {
        s->net_prev = m->net_v;
        s->have_net = true;
    }
}

static uint64_t dsub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

static void kv_pct(struct mpay *p, unsigned field, double v)
{
    char buf[JSONW_FIXED_MAX + 2];
    int n = isfinite(v) ? jsonw_fixed(v, 1, buf) : -1;
    if (n < 0) { /* a rate that is not a number is shown as none */
        memcpy(buf, "0.0", 3);
        n = 3;
    }
    buf[n++] = '%';
    buf[n] = '\0';
    mpay_str(p, field, buf);
}

static void emit(struct sampler *s, const char *name, uint64_t start, uint64_t end)
{
    if (!jsonw_failed(&s->w))
        marker_emit(s->sink, name, start, end, CAT_OTHER, s->w.buf, s->w.len);
}

/* Markers of the upstream monitor, payloads field for field (profile-format.md §5). */
static void machine_emit(struct sampler *s, const struct machine_now *m, uint64_t start,
                         uint64_t end)
{
    struct jsonw *w = &s->w;
    double dt = (double)(end - start) / 1e9;
    if (dt <= 0)
        dt = 1e-9;
    if (m->cpu && s->have_cpu && s->ncpu > 0 && m->ncpu == s->ncpu) {
        double sum[6] = {0}; /* nice user system iowait softirq idle, seconds */
        double pct_sum = 0;
        for (size_t i = 0; i < s->ncpu; i++) {
            const struct procfs_cpu *a = &s->cpu_prev[i], *b = &s->cpu_cur[i];
            uint64_t d[8] = {dsub(b->user, a->user),       dsub(b->nice, a->nice),
                             dsub(b->system, a->system),   dsub(b->idle, a->idle),
                             dsub(b->iowait, a->iowait),   dsub(b->irq, a->irq),
                             dsub(b->softirq, a->softirq), dsub(b->steal, a->steal)};
            sum[0] += (double)d[1];
            sum[1] += (double)d[0];
            sum[2] += (double)d[2];
            sum[3] += (double)d[4];
            sum[4] += (double)d[6];
            sum[5] += (double)d[3];
            /* psutil's per-core busy percent: everything but idle and iowait, of all time
             * except guest (already inside user/nice). */
            uint64_t total = 0;
            for (size_t k = 0; k < 8; k++)
                total += d[k];
            double pct = total ? (double)(total - d[3] - d[4]) * 100.0 / (double)total : 0.0;
            pct_sum += pct < 0 ? 0 : pct > 100 ? 100 : pct;
        }
        double rate[6], divisor = 0;
        for (size_t k = 0; k < 6; k++) {
            rate[k] = sum[k] / (double)s->hz / dt;
            divisor += rate[k];
        }
        if (divisor < 1)
            divisor = 1;
        double ncores = (double)s->ncpu;
        struct mpay p;
        mpay_begin(&p, w, &sampler_cpu_type);
        kv_pct(&p, CPU_PCT, pct_sum / ncores);
        static const unsigned stacked[] = {CPU_NICE, CPU_USER, CPU_SYSTEM, CPU_IOWAIT, CPU_SOFTIRQ};
        double acc = 0;
        for (size_t k = 0; k < 5; k++) {
            acc += rate[k] / divisor;
            mpay_double(&p, stacked[k], acc, 3);
        }
        kv_pct(&p, CPU_NICE_PCT, 100.0 * rate[0] / ncores);
        kv_pct(&p, CPU_USER_PCT, 100.0 * rate[1] / ncores);
        kv_pct(&p, CPU_SYSTEM_PCT, 100.0 * rate[2] / ncores);
        kv_pct(&p, CPU_IOWAIT_PCT, 100.0 * rate[3] / ncores);
        kv_pct(&p, CPU_IDLE_PCT, 100.0 * rate[5] / ncores);
        /* the share cpuPercent gives, as a number: what the CPU Use counter draws */
        mpay_double(&p, CPU_BUSY, pct_sum / ncores / 100.0, 4);
        mpay_end(&p);
        emit(s, "CPU Use", start, end);
    }
    if (m->mem) {
        const struct procfs_meminfo *v = &m->mem_v;
        /* psutil's figures: cached includes reclaimable slab; used falls back to total-free. */
        uint64_t cached = v->cached + v->sreclaimable;
        uint64_t used = v->total - MIN(v->total, v->free);
        if (used >= v->buffers + cached)
            used -= v->buffers + cached;
        struct mpay p;
        mpay_begin(&p, w, &sampler_mem_type);
        mpay_uint(&p, MEM_USED, used);
        mpay_uint(&p, MEM_CACHED, cached);
        mpay_uint(&p, MEM_BUFFERS, v->buffers);
        mpay_end(&p);
        emit(s, "Memory", start, end);
    }
    if (m->disk && s->have_disk) {
        const struct procfs_disk_totals *a = &s->disk_prev, *b = &m->disk_v;
        struct mpay p;
        mpay_begin(&p, w, &sampler_io_type);
        mpay_uint(&p, IO_READ_COUNT, dsub(b->reads, a->reads));
        mpay_uint(&p, IO_READ_BYTES, dsub(b->read_sectors, a->read_sectors) * 512);
        mpay_uint(&p, IO_WRITE_COUNT, dsub(b->writes, a->writes));
        mpay_uint(&p, IO_WRITE_BYTES, dsub(b->write_sectors, a->write_sectors) * 512);
        mpay_uint(&p, IO_WRITE_TIME, dsub(b->write_ms, a->write_ms));
        mpay_uint(&p, IO_READ_TIME, dsub(b->read_ms, a->read_ms));
        mpay_end(&p);
        emit(s, "IO", start, end);
    }
    if (m->net && s->have_net) {
        const struct procfs_net_totals *a = &s->net_prev, *b = &m->net_v;
        struct mpay p;
        mpay_begin(&p, w, &sampler_netio_type);
        mpay_uint(&p, NET_RECV_COUNT, dsub(b->recv_packets, a->recv_packets));
        mpay_uint(&p, NET_RECV_BYTES, dsub(b->recv_bytes, a->recv_bytes));
        mpay_uint(&p, NET_SENT_COUNT, dsub(b->sent_packets, a->sent_packets));
        mpay_uint(&p, NET_SENT_BYTES, dsub(b->sent_bytes, a->sent_bytes));
        mpay_end(&p);
        emit(s, "NetIO", start, end);
    }
}

/* ---- process table ---------------------------------------------------------------------- */

static size_t hash_slot(const struct sampler *s, pid_t pid)
{
    return ((uint32_t)pid * 2654435761u) & (s->hash_cap - 1);
}

static struct pent *lookup(struct sampler *s, pid_t pid)
{
    if (!s->hash_cap)
        return NULL;
    for (size_t i = hash_slot(s, pid);; i = (i + 1) & (s->hash_cap - 1)) {
        int32_t k = s->hash[i];
        if (k < 0)
            return NULL;
        if (s->ents[k].pid == pid)
            return &s->ents[k];
    }
}

static void hash_put(struct sampler *s, pid_t pid, int32_t idx)
{
    size_t i = hash_slot(s, pid);
    while (s->hash[i] >= 0 && s->ents[s->hash[i]].pid != pid)
        i = (i + 1) & (s->hash_cap - 1);
    s->hash[i] = idx;
}

static int hash_grow(struct sampler *s, size_t want)
{
    size_t cap = s->hash_cap ? s->hash_cap : 64;
    while (cap < want * 2)
        cap *= 2;
    if (cap == s->hash_cap)
        return 0;
    int32_t *h = malloc(cap * sizeof *h);
    if (!h)
        return -ENOMEM;
    free(s->hash);
    s->hash = h;
    s->hash_cap = cap;
    memset(h, 0xff, cap * sizeof *h);
    for (size_t k = 0; k < s->nents; k++)
        hash_put(s, s->ents[k].pid, (int32_t)k);
    return 0;
}

/* Delete pid's slot, shifting the following cluster back (linear probing without tombstones). */
static void hash_del(struct sampler *s, pid_t pid)
{
    size_t mask = s->hash_cap - 1, i = hash_slot(s, pid);
    while (s->hash[i] >= 0 && s->ents[s->hash[i]].pid != pid)
        i = (i + 1) & mask;
    if (s->hash[i] < 0)
        return;
    for (size_t j = i;;) {
        s->hash[i] = -1;
        for (;;) {
            j = (j + 1) & mask;
            if (s->hash[j] < 0)
                return;
            size_t home = hash_slot(s, s->ents[s->hash[j]].pid);
            /* move j back to i unless its home lies cyclically in (i, j] */
            if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
                continue;
            s->hash[i] = s->hash[j];
            i = j;
            break;
        }
    }
}

static struct pent *pent_add(struct sampler *s, pid_t pid)
{
    if (s->nents == s->ents_cap) {
        size_t cap = s->ents_cap ? s->ents_cap * 2 : 64;
        struct pent *e = realloc(s->ents, cap * sizeof *e);
        if (!e)
            return NULL;
        s->ents = e;
        s->ents_cap = cap;
    }
    if (hash_grow(s, s->nents + 1) < 0)
        return NULL;
    struct pent *p = &s->ents[s->nents];
    *p = (struct pent){.pid = pid, .fd_stat = -1, .fd_io = -1, .fd_status = -1};
    hash_put(s, pid, (int32_t)s->nents);
    s->nents++;
    s->tot.processes_seen++;
    s->filter_dirty = true;
    return p;
}

static void pent_close(struct sampler *s, struct pent *p)
{
    int *fds[] = {&p->fd_stat, &p->fd_io, &p->fd_status};
    for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
        if (*fds[i] >= 0) {
            close_fd(fds[i]);
            s->fd_budget++;
        }
}

/* Forget p's contribution to the live sums. */
static void pent_unlive(struct sampler *s, struct pent *p)
{
    if (!(p->flags & P_LIVE))
        return;
    s->live_user_t -= p->utime + p->cutime;
    s->live_sys_t -= p->stime + p->cstime;
    s->live_majflt -= p->majflt;
    if (p->flags & P_IO_OK) {
        s->live_rb -= p->read_bytes;
        s->live_wb -= p->write_bytes;
    }
    p->flags &= ~(unsigned)P_LIVE;
}

static void pent_remove(struct sampler *s, struct pent *p)
{
    pent_unlive(s, p);
    pent_close(s, p);
    free(p->cmd);
    hash_del(s, p->pid);
    size_t idx = (size_t)(p - s->ents), last = s->nents - 1;
    if (idx != last) {
        hash_del(s, s->ents[last].pid);
        s->ents[idx] = s->ents[last];
        hash_put(s, s->ents[idx].pid, (int32_t)idx);
    }
    s->nents--;
}

size_t sampler_format_exit(int wstatus, char *buf, size_t n)
{
    int r;
    if (WIFSIGNALED(wstatus)) {
        const char *name = sigabbrev_np(WTERMSIG(wstatus));
        r = name ? snprintf(buf, n, "signal %s", name)
                 : snprintf(buf, n, "signal %d", WTERMSIG(wstatus));
    } else
        r = snprintf(buf, n, "status %d", WEXITSTATUS(wstatus));
    return r < 0 ? 0 : MIN((size_t)r, n - 1);
}

/* Read PID's /proc file NAME into buf. Returns its length, or -1. */
static ssize_t read_pid_file(struct sampler *s, pid_t pid, const char *name, char *buf, size_t cap)
{
    char path[80];
    snprintf(path, sizeof path, "%d/%s", (int)pid, name);
    int fd = open_at(s->proc_fd, path);
    if (fd < 0)
        return -1;
    ssize_t n = pread_all(fd, buf, cap);
    close(fd);
    return n;
}

static void set_cmd(struct pent *p, const char *raw, size_t n)
{
    char out[CMD_MAX];
    size_t len = procfs_format_cmdline(raw, n, out, sizeof out);
    char *c = malloc(len + 1);
    if (!c)
        return;
    memcpy(c, out, len + 1);
    free(p->cmd);
    p->cmd = c;
}

/* Its name (comm) as the kernel has it now, into comm; false when gone. */
static bool read_comm(struct sampler *s, pid_t pid, char comm[PROCFS_COMM_MAX])
{
    char buf[PROCFS_COMM_MAX];
    ssize_t n = read_pid_file(s, pid, "comm", buf, sizeof buf - 1);
    if (n <= 0)
        return false;
    n -= buf[n - 1] == '\n';
    memcpy(comm, buf, (size_t)n);
    comm[n] = '\0';
    return true;
}

static void read_cmdline(struct sampler *s, struct pent *p)
{
    bool execd = p->flags & P_CMD_STALE;
    p->flags |= P_CMD_TRIED;
    p->flags &= ~(unsigned)P_CMD_STALE;
    char buf[CMD_MAX];
    ssize_t n = read_pid_file(s, p->pid, "cmdline", buf, sizeof buf);
    if (n > 0) {
        set_cmd(p, buf, (size_t)n);
        return;
    }
    /* Gone, a zombie or a kernel thread: keep what we had — unless that is the command line a
     * forked child inherited from its parent and it has exec'd since (a short-lived program
     * already dead when its exec is reported): its name (comm) is then the truth. */
    if (execd) {
        free(p->cmd);
        p->cmd = NULL;
        /* a zombie still has its name; a process already reaped is left unnamed */
        if (!read_comm(s, p->pid, p->comm))
            p->comm[0] = '\0';
    }
}

/* Whether it exec'd is not known (the event filter's lag may have dropped the event,
 * procfilter.h): the command line if it can still be read; else a name other than the one it
 * inherited says it did; else what it inherited stands. False when nothing could be read (it is
 * gone). */
static bool exec_catch_up(struct sampler *s, struct pent *p)
{
    char buf[CMD_MAX];
    ssize_t n = read_pid_file(s, p->pid, "cmdline", buf, sizeof buf);
    char comm[PROCFS_COMM_MAX];
    if (n > 0) {
        set_cmd(p, buf, (size_t)n);
        return true;
    }
    if (!read_comm(s, p->pid, comm))
        return false;
    if (strcmp(comm, p->comm) != 0) {
        free(p->cmd);
        p->cmd = NULL;
        memcpy(p->comm, comm, sizeof comm);
    }
    return true;
}

static void unnamed_add(struct sampler *s, const struct pent *p)
{
    char ex[32] = "exit unknown";
    if (p->flags & P_EXIT_KNOWN)
        sampler_format_exit(p->wstatus, ex, sizeof ex);
    s->tot.processes_unnamed++;
    unsigned i = 0;
    while (i < s->unnamed_kinds && strcmp(s->unnamed[i].exit, ex) != 0)
        i++;
    if (i == s->unnamed_kinds) {
        if (i == ARRAY_SIZE(s->unnamed))
            return; /* counted in the total */
        snprintf(s->unnamed[i].exit, sizeof s->unnamed[i].exit, "%s", ex);
        s->unnamed_kinds++;
    }
    s->unnamed[i].n++;
}

static void killed_add(struct sampler *s, const struct pent *p, uint64_t end_ns)
{
    unsigned cap = ARRAY_SIZE(s->killed);
    if (s->killed_n == cap) { /* drop the oldest */
        s->killed_head = (s->killed_head + 1) % cap;
        s->killed_n--;
    }
    struct sampler_killed *k = &s->killed[(s->killed_head + s->killed_n++) % cap];
    *k = (struct sampler_killed){.pid = p->pid, .end_ns = end_ns, .rss = p->rss, .max_rss = p->max_rss};
    snprintf(k->cmd, sizeof k->cmd, "%s", p->cmd && p->cmd[0] ? p->cmd : p->comm);
}

size_t sampler_take_killed(struct sampler *s, struct sampler_killed *out, size_t max)
{
    size_t n = 0;
    while (s && s->killed_n && n < max) {
        out[n++] = s->killed[s->killed_head];
        s->killed_head = (s->killed_head + 1) % ARRAY_SIZE(s->killed);
        s->killed_n--;
    }
    return n;
}

const struct pressure *sampler_pressure(const struct sampler *s) { return s ? s->psi : NULL; }

/* Emit p's "process" marker and keep p as a tombstone (the pid may still be listed as a zombie)
 * or drop it (remove = true). */
static void pent_end(struct sampler *s, struct pent *p, uint64_t end_ns, bool remove)
{
    if (!(p->flags & P_ENDED)) {
        struct jsonw *w = &s->w;
        struct mpay mp;
        mpay_begin(&mp, w, &sampler_process_type);
        mpay_str(&mp, PROC_CMD, p->cmd && p->cmd[0] ? p->cmd : p->comm);
        mpay_int(&mp, PROC_PID, p->pid);
        if (p->ppid > 0)
            mpay_int(&mp, PROC_PPID, p->ppid);
        if (p->flags & P_EXIT_KNOWN) {
            char ex[48];
            sampler_format_exit(p->wstatus, ex, sizeof ex);
            mpay_str(&mp, PROC_EXIT, ex);
        }
        uint64_t cpu = 0;
        bool cpu_known = true;
        if (p->flags & P_REAPED)
            cpu = p->cpu_ns_final;
        else if (p->flags & P_STAT_KNOWN)
            cpu = ticks_to_ns(s, p->utime + p->stime + p->cutime + p->cstime);
        else
            cpu_known = false;
        if (cpu_known)
            mpay_double(&mp, PROC_CPU, (double)cpu / 1e6, 3);
        if (p->max_rss)
            mpay_uint(&mp, PROC_RSS, p->max_rss);
        mpay_end(&mp);
        uint64_t start = p->start_ns ? p->start_ns : MAX(s->t0_ns, s->last_ns);
        if (end_ns < start)
            end_ns = start;
        /* A process that exec'd and was gone before its command line could be read (the exec
         * event does not say what it ran): a marker must say what ran, so it is counted, with
         * its exit, and sampler_finish says so in a warning. */
        bool named = (p->cmd && p->cmd[0]) || p->comm[0];
        if (!named)
            unnamed_add(s, p);
        else if (!jsonw_failed(w))
            marker_emit(s->sink, "process", start, end_ns, CAT_OTHER, w->buf, w->len);
        if (p->pid == s->root_open) {
            char line[96];
            int n = snprintf(line, sizeof line, "{\"type\":\"close\",\"kind\":\"process\",\"key\":\"%d\"}",
                             (int)p->pid);
            marker_state(s->sink, line, (size_t)n);
            s->root_open = 0;
        }
        s->tot.processes_ended++;
        if ((p->flags & P_EXIT_KNOWN) && WIFSIGNALED(p->wstatus) && WTERMSIG(p->wstatus) == SIGKILL)
            killed_add(s, p, end_ns);
        p->flags |= P_ENDED;
        p->end_ns = end_ns;
    }
    pent_unlive(s, p);
    pent_close(s, p);
    if (remove)
        pent_remove(s, p);
}

/* ---- reading one process ---------------------------------------------------------------- */

/* Read one of p's files with a kept fd when the budget allows. 0 bytes or ESRCH: gone. */
static ssize_t pent_read(struct sampler *s, struct pent *p, int *fd, const char *name)
{
    if (*fd < 0) {
        char path[48];
        snprintf(path, sizeof path, "%d/%s", (int)p->pid, name);
        int f = open_at(s->proc_fd, path);
        if (f < 0)
            return f;
        if (s->fd_budget > 0) {
            *fd = f;
            s->fd_budget--;
        } else {
            ssize_t n = pread_all(f, s->scratch, SCRATCH_SIZE);
            close(f);
            return n;
        }
    }
    return pread_all(*fd, s->scratch, SCRATCH_SIZE);
}

static uint64_t boot_ticks_to_mono(const struct sampler *s, uint64_t starttime)
{
    int64_t ns = (int64_t)ticks_to_ns(s, starttime) - s->boot_minus_mono_ns;
    return ns > 0 ? (uint64_t)ns : 0;
}

/* Refresh p from /proc. Returns 1 when read, 0 when the process is gone (or a different
 * process now holds the pid: *reused set), <0 on other errors. */
static int pent_refresh(struct sampler *s, struct pent *p, bool *reused)
{
    struct procfs_pid_stat st;
    ssize_t n = pent_read(s, p, &p->fd_stat, "stat");
    if (n <= 0 || procfs_parse_pid_stat(s->scratch, (size_t)n, &st) < 0) {
        /* A kept fd answers ESRCH/0 once its process is gone, even if the pid is reused. */
        if (p->fd_stat >= 0)
            *reused = true;
        return 0;
    }
    if ((p->flags & P_STAT_KNOWN) ? st.starttime != p->starttime
                                  : (p->flags & P_ENDED) && st.state != 'Z') {
        *reused = true;
        return 0;
    }
    if (p->flags & P_ENDED) {
        pent_close(s, p); /* a tombstone still listed as a zombie: nothing more to count */
        return 1;
    }
    if (!(p->flags & P_STAT_KNOWN)) {
        p->starttime = st.starttime;
        if (!p->start_ns)
            p->start_ns = boot_ticks_to_mono(s, st.starttime);
        p->flags |= P_STAT_KNOWN;
    }
    pent_unlive(s, p);
    /* scan_ns was taken before this read: an exit reported as earlier is not this process's.
     * Unless it is exiting: the kernel sends the exit event as the exit begins, and the process
     * shows its last running state until it is a zombie (PF_EXITING says so meanwhile); taken
     * for alive then, its own exit read next would be thrown away as an earlier holder's. */
    if (st.state != 'Z' && !(st.flags & PROC_PF_EXITING) && s->scan_ns > p->alive_ns)
        p->alive_ns = s->scan_ns;
    uint64_t prev_cpu = (p->flags & P_STAT_SEEN) ? p->utime + p->stime : UINT64_MAX;
    /* A new name is an exec (or a PR_SET_NAME): the command line read before may be the one a
     * forked child inherited from its parent. The exec event says so where there is one; without
     * the connector this is how a child read between its fork and its exec gets its own. */
    if ((p->flags & (P_STAT_SEEN | P_CMD_TRIED)) == (P_STAT_SEEN | P_CMD_TRIED) &&
        strncmp(p->comm, st.comm, sizeof p->comm) != 0)
        p->flags |= P_CMD_STALE;
    p->flags |= P_STAT_SEEN;
    memcpy(p->comm, st.comm, sizeof p->comm);
    /* A task being reaped reads as ppid 0: keep what the fork event (or an earlier read) said. */
    if (st.ppid > 0)
        p->ppid = st.ppid;
    p->utime = st.utime;
    p->stime = st.stime;
    p->cutime = st.cutime;
    p->cstime = st.cstime;
    p->threads = st.num_threads;
    p->majflt = st.majflt + st.cmajflt;
    s->live_user_t += p->utime + p->cutime;
    s->live_sys_t += p->stime + p->cstime;
    s->live_majflt += p->majflt;
    p->flags |= P_LIVE;
    uint64_t prev_rss = p->rss;
    p->rss = st.state == 'Z' ? 0 : st.rss * (uint64_t)s->page_size;
    p->max_rss = MAX(p->max_rss, p->rss);

    /* VmHWM is a high-water mark: reading it now and then loses no spike of a process that is
     * still alive at the next read, and status costs more than stat and io together. Read it
     * when RSS grew and at least once a second (a zombie has none left). */
    uint64_t now = s->scan_ns;
    if (st.state != 'Z' &&
        (p->rss > prev_rss || !p->status_ns || now - p->status_ns >= NSEC_PER_SEC)) {
        struct procfs_pid_status ps;
        n = pent_read(s, p, &p->fd_status, "status");
        if (n > 0 && procfs_parse_pid_status(s->scratch, (size_t)n, &ps) == 0 &&
            (ps.have & PSTATUS_VMHWM))
            p->max_rss = MAX(p->max_rss, ps.vmhwm);
        p->status_ns = now ? now : 1;
    }

    /* io: read when the process used CPU since the last read (IO is issued from its own CPU
     * time), when it became a zombie (its final figures), and at least once a second. An idle
     * tree then costs one read per process and sample; IO totals stay exact, a near-idle
     * process's few bytes are merely attributed up to a second late. */
    bool cpu_moved = p->utime + p->stime != prev_cpu;
    if (!p->io_ns || cpu_moved || st.state == 'Z' || now - p->io_ns >= NSEC_PER_SEC) {
        struct procfs_pid_io io;
        p->flags &= ~(unsigned)P_IO_OK;
        n = pent_read(s, p, &p->fd_io, "io");
        if (n > 0 && procfs_parse_pid_io(s->scratch, (size_t)n, &io) == 0) {
            p->read_bytes = io.read_bytes;
            p->write_bytes = io.write_bytes;
            p->flags |= P_IO_OK;
        }
        p->io_ns = now ? now : 1;
    }
    if (p->flags & P_IO_OK) {
        s->live_rb += p->read_bytes;
        s->live_wb += p->write_bytes;
    }
    if ((p->flags & P_CMD_STALE) || !(p->flags & P_CMD_TRIED)) {
        read_cmdline(s, p);
        /* None while it runs: read in an exec between the program's new name and its arguments
         * (the kernel names the program before it lays them out). Meanwhile the name stands; the
         * next reading tries again (a zombie's stays empty). */
        if (!p->cmd && st.state != 'Z')
            p->flags |= P_CMD_STALE;
    }
    return 1;
}

/* ---- process connector ------------------------------------------------------------------ */

/* The window of pids allocated next that the event filter passes (procfilter.h): its least and
 * greatest width. */
#define FILTER_WINDOW 16
#define FILTER_WINDOW_MAX 4096
/* Changes this close together are a burst: the window covers twice the pids allocated since
 * the last one. */
#define FILTER_BURST_NS (100 * NSEC_PER_MSEC)

static int nl_open(struct sampler *s)
{
    int fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
    if (fd < 0)
        return -errno;
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC};
    int rcv = 4 << 20;
    /* A fork storm queues thousands of events between two polls; root may exceed rmem_max. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) == 0)
        sscanf(u.release, "%d.%d", &major, &minor);
    /* The filter, before bind so that nothing is queued unfiltered: at first resmon-run's own
     * forks and the pids allocated next (the command's). Exits name their parent since 4.18;
     * before, only threads and other kinds are dropped. */
    if (s->cfg.event_filter) {
        if (major > 4 || (major == 4 && minor >= 18)) {
            s->filter_newest = s->self;
            s->win_lo = s->self + 1;
            s->win_hi = s->self + 1 + FILTER_WINDOW;
            s->filter_on = procfilter_attach(fd, &s->self, 1, s->win_lo, s->win_hi) == 0;
        } else
            (void)procfilter_attach(fd, NULL, PROCFILTER_MAX_SET + 1, 0, 0);
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int r = -errno;
        close(fd);
        return r;
    }
    /* Since Linux 6.6 a listener can ask for a subset of events (struct proc_input); older
     * kernels ignore a request that is not exactly one enum, so only send it where known. */
    bool filter = major > 6 || (major == 6 && minor >= 6);
    /* nlmsghdr, cn_msg, then the payload (op and, with filtering, the event mask). */
    union {
        struct nlmsghdr h;
        char b[NLMSG_SPACE(sizeof(struct cn_msg) + 8)];
    } req;
    memset(&req, 0, sizeof req);
    size_t plen = filter ? 8 : 4;
    req.h.nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(struct cn_msg) + plen);
    req.h.nlmsg_type = NLMSG_DONE;
    struct cn_msg cn = {.id = {.idx = CN_IDX_PROC, .val = CN_VAL_PROC}, .len = (uint16_t)plen};
    memcpy(NLMSG_DATA(&req.h), &cn, sizeof cn);
    uint32_t payload[2] = {PROC_CN_MCAST_LISTEN, PROC_EVENT_FORK | PROC_EVENT_EXEC | PROC_EVENT_EXIT};
    memcpy((char *)NLMSG_DATA(&req.h) + sizeof cn, payload, plen);
    if (send(fd, &req, req.h.nlmsg_len, 0) < 0) {
        int r = -errno;
        close(fd);
        return r;
    }
    s->nl_fd = fd;
    return 0;
}

static bool tracked(struct sampler *s, pid_t pid)
{
    struct pent *p = lookup(s, pid);
    return p && !(p->flags & P_ENDED);
}

/* Give the kernel the tree as it is known now, then catch up with what the filter's lag hid
 * (procfilter.h): a process that joined the set only now may have exec'd or forked before (the
 * filter dropped those events, its parent's fork passed). Its command line is read again and its
 * children are listed; the children found join in turn, a few generations at most, the scans
 * being the safety net. */
/* Hand the kernel the set (resmon-run and the tree's live processes) and, with window, the
 * window above the newest pid known; the window closed otherwise. False when the filter could
 * not be narrowed (the superset of kinds and threads only is attached then, if anything). */
static bool filter_attach(struct sampler *s, bool window)
{
    if (s->fset_cap < s->nents + 1) {
        size_t cap = (s->nents + 1) * 2;
        pid_t *v = realloc(s->fset, cap * sizeof *v);
        if (!v)
            return false;
        s->fset = v;
        s->fset_cap = cap;
    }
    size_t n = 0;
    s->fset[n++] = s->self;
    pid_t newest = s->filter_newest;
    for (size_t k = 0; k < s->nents; k++) {
        if (!(s->ents[k].flags & P_ENDED))
            s->fset[n++] = s->ents[k].pid;
        newest = MAX(newest, s->ents[k].pid);
    }
    s->win_lo = s->win_hi = 0;
    if (window) {
        /* The pids allocated next. The tree's next child most likely gets one, and then its exec
         * and its own children pass before its fork event is even read. Its size follows how far
         * pids moved since the last change (a burst widens it); what else takes those pids
         * (other jobs' processes) costs a wake-up, once: the window then closes. */
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        pid_t moved = now - s->filter_ns < FILTER_BURST_NS ? newest - s->filter_newest : 0;
        pid_t width = MIN(MAX(2 * moved, FILTER_WINDOW), FILTER_WINDOW_MAX);
        s->filter_newest = newest;
        s->filter_ns = now;
        s->win_lo = newest + 1;
        s->win_hi = newest < INT32_MAX - width ? newest + 1 + width : newest;
    }
    if (procfilter_attach(s->nl_fd, s->fset, n, s->win_lo, s->win_hi) == 0)
        return true;
    /* cannot narrow any more: threads and other kinds only, the safe superset, every exec */
    s->win_lo = 1, s->win_hi = INT32_MAX;
    if (procfilter_attach(s->nl_fd, NULL, PROCFILTER_MAX_SET + 1, 0, 0) < 0)
        s->filter_on = false;
    return false;
}

static void filter_sync(struct sampler *s)
{
    if (s->filter_on && s->filter_stray && !s->filter_dirty) {
        /* Only an outsider took a pid of the window (a long-lived one would have all its forks
         * pass): close it until the tree changes. */
        s->filter_stray = false;
        (void)filter_attach(s, false);
        return;
    }
    s->filter_stray = false;
    for (int round = 0; s->filter_on && s->filter_dirty && round < 4; round++) {
        s->filter_dirty = false;
        if (!filter_attach(s, true))
            return;
        size_t before = s->nents;
        for (size_t k = 0; k < before; k++) {
            struct pent *p = &s->ents[k];
            if (p->flags & (P_ENDED | P_FILTERED))
                continue;
            p->flags |= P_FILTERED;
            pid_t pid = p->pid;
            if (!(p->flags & P_CMD_GIVEN))
                exec_catch_up(s, p);
            char name[48];
            snprintf(name, sizeof name, "task/%d/children", (int)pid);
            ssize_t len = read_pid_file(s, pid, name, s->scratch, SCRATCH_SIZE - 1);
            if (len <= 0)
                continue;
            s->scratch[len] = '\0';
            for (char *c = s->scratch, *end; *c; c = end) {
                long child = strtol(c, &end, 10);
                if (end == c)
                    break;
                if (child <= 0 || tracked(s, (pid_t)child))
                    continue;
                struct pent *q = lookup(s, (pid_t)child);
                if (q)
                    pent_remove(s, q); /* a tombstone of an earlier holder of the pid */
                if (!(q = pent_add(s, (pid_t)child)))
                    continue;
                bool reused = false;
                if (pent_refresh(s, q, &reused) <= 0)
                    pent_remove(s, q);
                /* (s->ents may have moved: p is not used past here) */
            }
        }
    }
}

/* A scan can find a child between its fork and the fork's event: the event then names the
 * process the scan found (same parent, started within a clock tick or two of the event; /proc's
 * start times have tick resolution), not a new holder of a recycled pid. */
static bool found_before_its_fork(struct sampler *s, const struct pent *p, pid_t parent, uint64_t fork_ns)
{
    uint64_t tick = ticks_to_ns(s, 1);
    return !(p->flags & (P_ENDED | P_FORK_SEEN)) && (p->flags & P_STAT_KNOWN) && p->ppid == parent &&
           p->start_ns <= fork_ns && fork_ns - p->start_ns < 2 * tick;
}

static void on_event(struct sampler *s, const struct proc_event *ev)
{
    switch (ev->what) {
    case PROC_EVENT_FORK: {
        const struct fork_proc_event *f = &ev->event_data.fork;
        if (f->child_pid != f->child_tgid)
            return; /* a thread */
        if (!tracked(s, f->parent_tgid)) {
            s->filter_stray |= f->parent_tgid != s->self;
            return; /* not ours (the root's fork is taken by sampler_track) */
        }
        struct pent *old = lookup(s, f->child_tgid);
        if (old && found_before_its_fork(s, old, f->parent_tgid, ev->timestamp_ns)) {
            old->start_ns = ev->timestamp_ns;
            old->flags |= P_FORK_SEEN;
            return;
        }
        if (old)
            pent_end(s, old, ev->timestamp_ns, true); /* the pid was recycled */
        struct pent *parent = lookup(s, f->parent_tgid);
        const char *pcmd = parent && parent->cmd ? parent->cmd : NULL;
        char comm[PROCFS_COMM_MAX];
        memcpy(comm, parent ? parent->comm : "", parent ? sizeof comm : 1);
        struct pent *p = pent_add(s, f->child_tgid); /* may move parent */
        if (!p)
            return;
        p->ppid = f->parent_tgid;
        p->start_ns = ev->timestamp_ns;
        memcpy(p->comm, comm, sizeof comm);
        for (size_t i = 0; i < ARRAY_SIZE(s->early); i++)
            if (s->early[i].pid == p->pid &&
                (s->early[i].parent == f->parent_tgid ||
                 (!s->early[i].parent && s->early[i].ns >= ev->timestamp_ns))) { /* 0: unknown */
                s->early[i].pid = 0;
                p->wstatus = s->early[i].code;
                p->flags |= P_EXIT_KNOWN;
                p->end_ns = s->early[i].ns;
                if (p->ppid != s->self) {
                    if (pcmd)
                        p->cmd = strdup(pcmd);
                    pent_end(s, p, s->early[i].ns, false);
                    return;
                }
            }
        /* Until it execs, a forked child runs its parent's program with its arguments. */
        if (pcmd)
            p->cmd = strdup(pcmd);
        p->flags |= P_CMD_TRIED | P_FORK_SEEN;
        /* The filter in effect now is the one its exec met, if it exec'd before it joined the set */
        if (p->pid >= s->win_lo && p->pid < s->win_hi)
            p->flags |= P_EXEC_WATCHED;
        return;
    }
    case PROC_EVENT_EXEC: {
        struct pent *p = lookup(s, ev->event_data.exec.process_tgid);
        if (p && (p->flags & P_EXEC_OURS)) {
            /* the command's own exec: its command line is the one given, read or not (it may
             * be gone by now, and its name alone would replace it) */
            p->flags &= ~(unsigned)P_EXEC_OURS;
            return;
        }
        if (p && !(p->flags & P_ENDED)) {
            p->flags |= P_CMD_STALE;
            read_cmdline(s, p);
        } else
            s->filter_stray = true;
        return;
    }
    case PROC_EVENT_EXIT: {
        const struct exit_proc_event *x = &ev->event_data.exit;
        if (x->process_pid != x->process_tgid)
            return; /* a thread */
        struct pent *p = lookup(s, x->process_tgid);
        if (p && !(p->flags & P_ENDED) && ev->timestamp_ns < p->alive_ns)
            return; /* an earlier holder of the pid, whose end a scan found (it reads p instead) */
        if (!p || (p->flags & P_ENDED)) {
            /* parent 0: the kernel could not tell (reaped as it was reported), and the filter
             * passes every such exit (procfilter.h): not a stray of the window */
            if (x->parent_tgid && x->parent_tgid != s->self && !tracked(s, x->parent_tgid))
                s->filter_stray = true;
            unsigned i = s->early_next++ % ARRAY_SIZE(s->early);
            s->early[i].pid = x->process_tgid;
            s->early[i].parent = x->parent_tgid;
            s->early[i].code = (int)x->exit_code;
            s->early[i].ns = ev->timestamp_ns;
            return;
        }
        p->wstatus = (int)x->exit_code;
        p->flags |= P_EXIT_KNOWN;
        p->end_ns = ev->timestamp_ns;
        if (s->filter_on && !(p->flags & (P_FILTERED | P_CMD_GIVEN)))
            if (!exec_catch_up(s, p) && !(p->flags & P_EXEC_WATCHED)) {
                /* Gone before the filter knew it, and already reaped: whether it exec'd is not
                 * known, so the command it inherited may not be its own. Unnamed (counted with
                 * its exit) rather than perhaps misnamed. */
                free(p->cmd);
                p->cmd = NULL;
                p->comm[0] = '\0';
            }
        /* resmon-run's own children get exact figures from wait4 (sampler_reaped). */
        if (x->parent_tgid == s->self || (!x->parent_tgid && p->ppid == s->self))
            return;
        bool reused = false;
        pent_refresh(s, p, &reused); /* a zombie still shows its CPU times */
        pent_end(s, p, ev->timestamp_ns, false);
        return;
    }
    default:
        return;
    }
}

void sampler_handle_events(struct sampler *s, uint64_t now_ns)
{
    if (!s || s->nl_fd < 0)
        return;
    union {
        struct nlmsghdr h;
        char b[8192];
    } buf;
    for (;;) {
        ssize_t n = recv(s->nl_fd, buf.b, sizeof buf.b, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOBUFS) {
                s->tot.lost_events++;
                continue;
            }
            break; /* EAGAIN: drained */
        }
        /* NLMSG_NEXT by hand: its char* cast trips -Wcast-align; records are 4-aligned. */
        for (struct nlmsghdr *h = &buf.h; NLMSG_OK(h, (size_t)n);
             n -= (ssize_t)NLMSG_ALIGN(h->nlmsg_len),
                             h = (struct nlmsghdr *)(void *)((char *)h + NLMSG_ALIGN(h->nlmsg_len))) {
            if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
                continue;
            const struct cn_msg *cn = NLMSG_DATA(h);
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof *cn) ||
                cn->len < offsetof(struct proc_event, event_data) ||
                NLMSG_LENGTH(sizeof *cn + cn->len) > h->nlmsg_len)
                continue;
            struct proc_event ev = {0};
            memcpy(&ev, cn->data, MIN((size_t)cn->len, sizeof ev));
            s->tot.events++;
            on_event(s, &ev);
        }
    }
    filter_sync(s);
    (void)now_ns;
}

int sampler_event_fd(const struct sampler *s) { return s ? s->nl_fd : -1; }

/* ---- tree ------------------------------------------------------------------------------- */

struct tree_now {
    bool cpu, io, count;
    uint64_t cpu_ns, user_ns, sys_ns, rb, wb, majflt;
    uint64_t rss, pss, processes, threads;
    bool rss_known, pss_known;
};

static void read_pss(struct sampler *s, struct pent *p, struct tree_now *t)
{
    char path[48];
    snprintf(path, sizeof path, "%d/smaps_rollup", (int)p->pid);
    int fd = open_at(s->proc_fd, path);
    if (fd < 0)
        return;
    ssize_t n = pread_all(fd, s->scratch, SCRATCH_SIZE);
    close(fd);
    uint64_t v;
    if (n > 0 && procfs_parse_smaps_pss(s->scratch, (size_t)n, &v) == 0) {
        t->pss += v;
        t->pss_known = true;
    }
}

static void tree_scan(struct sampler *s, uint64_t now_ns, struct tree_now *t)
{
    pid_t *pids = NULL;
    size_t n = 0;
    *t = (struct tree_now){0};
    s->scan_ns = now_ns;
    /* With the process connector and no lost event, the table already holds every member:
     * list it from there and ask the containment only once a second, as a safety net (the
     * subreaper tier's listing walks all of /proc). */
    bool full = s->nl_fd < 0 || s->tot.lost_events != s->lost_at_scan || !s->full_scan_ns ||
                now_ns - s->full_scan_ns >= NSEC_PER_SEC;
    if (full) {
        if (contain_members(s->contain, &pids, &n) < 0)
            return;
        s->full_scan_ns = now_ns ? now_ns : 1;
        s->lost_at_scan = s->tot.lost_events;
    } else {
        if (s->pids_cap < s->nents) {
            pid_t *np = realloc(s->pids, s->nents * 2 * sizeof *np);
            if (!np)
                return;
            s->pids = np;
            s->pids_cap = s->nents * 2;
        }
        for (size_t k = 0; k < s->nents; k++)
            if (!(s->ents[k].flags & P_ENDED))
                s->pids[n++] = s->ents[k].pid;
    }
    s->gen++;
    bool io_ok = true;
    const pid_t *list = full ? pids : s->pids;
    for (size_t i = 0; i < n; i++) {
        if (list[i] <= 0 || list[i] == s->self)
            continue;
        struct pent *p = lookup(s, list[i]);
        bool fresh = !p;
        if (!p && !(p = pent_add(s, list[i])))
            continue;
        bool reused = false;
        int r = pent_refresh(s, p, &reused);
        if (r <= 0 && reused) {
            /* The process read last time is gone; another may hold its pid now. */
            pent_end(s, p, now_ns, true);
            if (!(p = pent_add(s, list[i])))
                continue;
            fresh = true;
            reused = false;
            r = pent_refresh(s, p, &reused);
        }
        if (r <= 0) {
            /* Vanished between listing and reading: normal. A process never read is nothing we
             * could record (no start, no command, its CPU time counts in its parent's): forget
             * it rather than leave a nameless process marker. */
            if (fresh)
                pent_remove(s, p);
            continue;
        }
        p->seen_gen = s->gen;
        if (p->flags & P_ENDED)
            continue;
        t->processes++;
        t->threads += p->threads;
        t->rss += p->rss;
        t->rss_known = true;
        if (!(p->flags & P_IO_OK))
            io_ok = false;
        if (s->cfg.pss)
            read_pss(s, p, t);
    }
    free(pids); /* NULL when listed from the table */
    /* A process that left the listing ended; its exit event is queued by then (the kernel sends
     * it before the process can be reaped): read it first, so its end says how it died (an OOM
     * kill is told by its SIGKILL). */
    if (s->nl_fd >= 0 && !s->cfg.events_after_scan)
        for (size_t k = 0; k < s->nents; k++)
            if (s->ents[k].seen_gen != s->gen && !(s->ents[k].flags & P_ENDED)) {
                sampler_handle_events(s, now_ns);
                break;
            }
    for (size_t k = 0; k < s->nents;) {
        struct pent *p = &s->ents[k];
        if (p->seen_gen != s->gen) {
            /* Not listed. cgroup.procs drops a process when it exits, so it may still be a zombie
             * waiting for its parent (its CPU not yet in anyone's cutime): keep it while its
             * /proc entry stands. Otherwise it is gone without an exit we heard of. */
            bool reused = false;
            if (pent_refresh(s, p, &reused) > 0 && !reused) {
                p->seen_gen = s->gen;
                k++;
                continue;
            }
            size_t before = s->nents;
            pent_end(s, p, now_ns, true);
            if (s->nents < before)
                continue; /* slot k now holds another entry */
        }
        k++;
    }
    filter_sync(s);
    t->count = true;
    t->io = io_ok;
}

static void tree_totals(struct sampler *s, struct tree_now *t)
{
    /* CPU: the cgroup counts every process that ever ran inside; without it, the live sums plus
     * what resmon-run reaped. Reported totals never go backwards (a process read just before
     * its parent reaped it is briefly counted twice, then settles). */
    uint64_t user, sys;
    ssize_t n;
    struct procfs_cg_cpu cg;
    if (s->fd_cg_cpu >= 0 && (n = pread_all(s->fd_cg_cpu, s->scratch, SCRATCH_SIZE)) > 0 &&
        procfs_parse_cg_cpu_stat(s->scratch, (size_t)n, &cg) == 0) {
        uint64_t total = dsub(cg.usage_usec, s->cg_usage0) * NSEC_PER_USEC;
        user = dsub(cg.user_usec, s->cg_user0) * NSEC_PER_USEC;
        sys = dsub(cg.system_usec, s->cg_system0) * NSEC_PER_USEC;
        /* user+system may differ from usage by accounting granularity: keep usage exact */
        t->cpu_ns = total;
    } else {
        user = ticks_to_ns(s, s->live_user_t) + s->reaped_user_ns;
        sys = ticks_to_ns(s, s->live_sys_t) + s->reaped_sys_ns;
        t->cpu_ns = user + sys;
    }
    t->user_ns = user;
    t->sys_ns = sys;
    t->cpu = true;
    t->rb = s->live_rb + s->reaped_rb;
    t->wb = s->live_wb + s->reaped_wb;
    t->majflt = s->live_majflt + s->reaped_majflt;
    if (s->fd_cg_peak >= 0 && (n = pread_all(s->fd_cg_peak, s->scratch, SCRATCH_SIZE)) > 0) {
        uint64_t peak;
        if (procfs_parse_u64(s->scratch, (size_t)n, &peak) == 0)
            s->tot.peak_rss = MAX(s->tot.peak_rss, peak);
    }
}

static void tree_emit(struct sampler *s, struct tree_now *t, uint64_t start, uint64_t end)
{
    struct jsonw *w = &s->w;
    double interval_ms = (double)(end - start) / 1e6;
    if (t->cpu) {
        uint64_t cum = MAX(s->rep_cpu_ns, t->cpu_ns);
        uint64_t d = cum - s->rep_cpu_ns;
        uint64_t du = dsub(t->user_ns, s->rep_user_ns), ds = dsub(t->sys_ns, s->rep_sys_ns);
        s->rep_cpu_ns = cum;
        s->rep_user_ns = MAX(s->rep_user_ns, t->user_ns);
        s->rep_sys_ns = MAX(s->rep_sys_ns, t->sys_ns);
        struct mpay p;
        mpay_begin(&p, w, &sampler_treecpu_type);
        mpay_double(&p, TREECPU_CPUTIME, (double)d / 1e6, 3);
        mpay_double(&p, TREECPU_USER, (double)du / 1e6, 3);
        mpay_double(&p, TREECPU_SYSTEM, (double)ds / 1e6, 3);
        mpay_double(&p, TREECPU_CORES, interval_ms > 0 ? (double)d / 1e6 / interval_ms : 0.0, 3);
        mpay_end(&p);
        emit(s, "Tree CPU", start, end);
    }
    if (t->count) {
        s->tree_rss = t->rss;
        s->tree_rss_known = t->rss_known;
        if (t->rss_known)
            s->tot.peak_rss = MAX(s->tot.peak_rss, t->rss);
        uint64_t mf = MAX(s->rep_majflt, t->majflt);
        struct mpay p;
        mpay_begin(&p, w, &sampler_treemem_type);
        mpay_uint(&p, TREEMEM_RSS, t->rss);
        if (t->pss_known)
            mpay_uint(&p, TREEMEM_PSS, t->pss);
        mpay_uint(&p, TREEMEM_MAJFLT, mf - s->rep_majflt);
        mpay_end(&p);
        s->rep_majflt = mf;
        s->tot.major_faults = mf;
        emit(s, "Tree Memory", start, end);
    }
    if (t->io) {
        uint64_t rb = MAX(s->rep_rb, t->rb), wb = MAX(s->rep_wb, t->wb);
        struct mpay p;
        mpay_begin(&p, w, &sampler_treeio_type);
        mpay_uint(&p, TREEIO_READ, rb - s->rep_rb);
        mpay_uint(&p, TREEIO_WRITE, wb - s->rep_wb);
        mpay_end(&p);
        emit(s, "Tree IO", start, end);
        s->rep_rb = rb;
        s->rep_wb = wb;
    }
    if (t->count) {
        s->tot.count_known = true;
        s->tot.live_processes = t->processes;
        s->tot.live_threads = t->threads;
        s->tot.rss_known = t->rss_known;
        struct mpay p;
        mpay_begin(&p, w, &sampler_treecount_type);
        mpay_uint(&p, TREECOUNT_PROCESSES, t->processes);
        mpay_uint(&p, TREECOUNT_THREADS, t->threads);
        mpay_end(&p);
        emit(s, "Processes", start, end);
    }
}

/* ---- public ----------------------------------------------------------------------------- */

int sampler_new(const struct sampler_config *cfg, struct contain *c, const struct marker_sink *sink,
                uint64_t t0_ns, struct sampler **ret)
{
    struct sampler *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->cfg = *cfg;
    s->contain = c;
    s->sink = sink;
    s->t0_ns = s->last_ns = t0_ns;
    s->proc_fd = s->fd_stat = s->fd_meminfo = s->fd_diskstats = s->fd_netdev = -1;
    s->fd_cg_cpu = s->fd_cg_peak = s->nl_fd = -1;
    s->events_err = -ENOTSUP;
    s->self = getpid();
    jsonw_init(&s->w);
    s->hz = sysconf(_SC_CLK_TCK);
    if (s->hz <= 0)
        s->hz = 100;
    s->page_size = sysconf(_SC_PAGESIZE);
    s->boot_minus_mono_ns = (int64_t)clock_ns(CLOCK_BOOTTIME) - (int64_t)clock_ns(CLOCK_MONOTONIC);
    struct rlimit rl;
    s->fd_budget = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                       ? (long)(rl.rlim_cur / 2) - 64
                       : 1024;
    int r = -ENOMEM;
    snprintf(s->proc_root, sizeof s->proc_root, "%s", cfg->proc_root ? cfg->proc_root : "/proc");
    s->scratch = malloc(SCRATCH_SIZE);
    if (!s->scratch)
        goto fail;
    s->proc_fd = open(s->proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (s->proc_fd < 0) {
        r = -errno;
        goto fail;
    }
    if (cfg->system) {
        long nconf = sysconf(_SC_NPROCESSORS_CONF);
        s->cpu_cap = (size_t)MIN(MAX(nconf, 1) * 2 + 8, MAX_CPUS);
        s->cpu_prev = calloc(s->cpu_cap, sizeof *s->cpu_prev);
        s->cpu_cur = calloc(s->cpu_cap, sizeof *s->cpu_cur);
        if (!s->cpu_prev || !s->cpu_cur)
            goto fail;
        s->fd_stat = open_at(s->proc_fd, "stat");
        s->fd_meminfo = open_at(s->proc_fd, "meminfo");
        s->fd_diskstats = open_at(s->proc_fd, "diskstats");
        s->fd_netdev = open_at(s->proc_fd, "net/dev");
        (void)load_disk_names(s); /* none: IO covers no device, reported as zeros upstream too */
        struct machine_now m;
        machine_read(s, &m);
        machine_commit(s, &m);
    }
    if (cfg->tree && c) {
        int cg = contain_cgroup_fd(c);
        if (cg >= 0) {
            s->fd_cg_cpu = open_at(cg, "cpu.stat");
            s->fd_cg_peak = open_at(cg, "memory.peak");
            ssize_t n;
            struct procfs_cg_cpu v;
            if (s->fd_cg_cpu >= 0 && (n = pread_all(s->fd_cg_cpu, s->scratch, SCRATCH_SIZE)) > 0 &&
                procfs_parse_cg_cpu_stat(s->scratch, (size_t)n, &v) == 0) {
                s->cg_usage0 = v.usage_usec;
                s->cg_user0 = v.user_usec;
                s->cg_system0 = v.system_usec;
            } else
                close_fd(&s->fd_cg_cpu);
        }
        s->events_err = cfg->proc_events ? nl_open(s) : -ENOTSUP;
        if (s->events_err == 0)
            s->tot.proc_events = true;
        if (hash_grow(s, 32) < 0)
            goto fail;
    }
    /* The counters this sampler's markers feed (markers.h), declared once in the stream. */
    if (cfg->interval_ns) {
        const struct marker_counter *counters[5];
        size_t nc = 0;
        if (cfg->system)
            counters[nc++] = &cpu_counter, counters[nc++] = &mem_counter;
        if (cfg->tree && c) {
            counters[nc++] = &sampler_tree_cpu_counter, counters[nc++] = &sampler_tree_mem_counter;
            counters[nc++] = &majflt_counter;
        }
        for (size_t i = 0; i < nc; i++) {
            marker_counter_line(&s->w, counters[i]);
            if (!jsonw_failed(&s->w))
                marker_state(sink, s->w.buf, s->w.len);
        }
        /* The machine's pressure with the machine, the tree's with the tree; the baseline now. */
        if (cfg->pressure && (cfg->system || (cfg->tree && c))) {
            int cg = cfg->tree && c ? contain_cgroup_fd(c) : -1;
            if (pressure_new(cfg->system ? s->proc_fd : -1, cg, sink, &s->psi) == 0)
                pressure_sample(s->psi, t0_ns, true);
        }
    }
    *ret = s;
    return 0;
fail:
    sampler_free(s);
    return r;
}

void sampler_free(struct sampler *s)
{
    if (!s)
        return;
    for (size_t k = 0; k < s->nents; k++) {
        pent_close(s, &s->ents[k]);
        free(s->ents[k].cmd);
    }
    free(s->ents);
    free(s->hash);
    free(s->pids);
    free(s->fset);
    pressure_free(s->psi);
    int *fds[] = {&s->proc_fd,  &s->fd_stat,   &s->fd_meminfo, &s->fd_diskstats,
                  &s->fd_netdev, &s->fd_cg_cpu, &s->fd_cg_peak, &s->nl_fd};
    for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
        close_fd(fds[i]);
    free(s->cpu_prev);
    free(s->cpu_cur);
    free(s->disk_names);
    free(s->disk_text.text);
    free(s->net_text.text);
    free(s->scratch);
    jsonw_release(&s->w);
    free(s);
}

int sampler_sample(struct sampler *s, uint64_t now_ns, uint64_t ticks, bool final)
{
    if (!s)
        return -EINVAL;
    uint64_t start = s->last_ns;
    if (now_ns < start)
        now_ns = start;
    if (ticks > 1)
        s->tot.missed_ticks += ticks - 1;
    if (!s->cfg.events_after_scan && !s->cfg.events_polled)
        sampler_handle_events(s, now_ns);
    if (s->cfg.system) {
        struct machine_now m;
        machine_read(s, &m);
        machine_emit(s, &m, start, now_ns);
        machine_commit(s, &m);
    }
    if (s->cfg.tree && s->contain) {
        struct tree_now t;
        tree_scan(s, now_ns, &t);
        tree_totals(s, &t);
        tree_emit(s, &t, start, now_ns);
    }
    pressure_sample(s->psi, now_ns, final);
    if (s->cfg.events_after_scan)
        sampler_handle_events(s, now_ns);
    if (s->cfg.system) {
        struct jsonw *w = &s->w;
        struct mpay p;
        mpay_begin(&p, w, &sampler_interval_type);
        mpay_uint(&p, INTERVAL_INTERVAL, (now_ns - start + NSEC_PER_MSEC / 2) / NSEC_PER_MSEC);
        if (ticks > 1)
            mpay_uint(&p, INTERVAL_MISSED, ticks - 1);
        mpay_end(&p);
        emit(s, "Sampling Interval", now_ns, MARKER_INSTANT);
    }
    /* (the sweep in tree_scan already ends every process that is gone, final or not) */
    s->last_ns = now_ns;
    s->tot.samples++;
    return 0;
}

void sampler_reaped(struct sampler *s, pid_t pid, int wstatus, const struct rusage *ru,
                    uint64_t now_ns)
{
    if (!s || !s->cfg.tree || !s->contain)
        return;
    /* Events queued before the reap (the fork and exit of this pid) come first. */
    sampler_handle_events(s, now_ns);
    uint64_t u = ru ? tv_ns(&ru->ru_utime) : 0, y = ru ? tv_ns(&ru->ru_stime) : 0;
    s->reaped_user_ns += u;
    s->reaped_sys_ns += y;
    if (ru) {
        s->reaped_rb += (uint64_t)ru->ru_inblock * 512;
        s->reaped_wb += (uint64_t)ru->ru_oublock * 512;
        s->reaped_majflt += (uint64_t)ru->ru_majflt;
    }
    struct pent *p = lookup(s, pid);
    if (p && (p->flags & P_ENDED)) {
        /* Its exit was reported while its parent was still alive in the tree; it became ours to
         * reap when that parent died. A pid is not reused before it is reaped, so this is the
         * same process: its marker is out already. */
        pent_remove(s, p);
        return;
    }
    if (!p && !(p = pent_add(s, pid)))
        return;
    p->wstatus = wstatus;
    p->flags |= P_EXIT_KNOWN | P_REAPED;
    p->cpu_ns_final = u + y;
    if (ru)
        p->max_rss = MAX(p->max_rss, (uint64_t)ru->ru_maxrss * 1024);
    if (!p->ppid)
        p->ppid = s->self;
    uint64_t end = p->end_ns ? p->end_ns : now_ns;
    pent_end(s, p, end, true);
}

/* Read the processes the sampler knows again: their RSS, and their CPU (with what their reaped
 * children used) plus what resmon-run reaped. Kept for max_age_ns. */
size_t sampler_started_since(const struct sampler *s, uint64_t since_ns, struct sampler_proc *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nents; i++) {
        const struct pent *p = &s->ents[i];
        if ((p->flags & (P_ENDED | P_EXIT_KNOWN)) || p->start_ns < since_ns || p->pid == s->self)
            continue;
        if (n < max)
            out[n] = (struct sampler_proc){p->pid, p->starttime, p->cmd, p->comm};
        n++;
    }
    return n;
}

static void spot_read(struct sampler *s, uint64_t now_ns, uint64_t max_age_ns)
{
    if (s->spot_ns && now_ns - s->spot_ns < max_age_ns)
        return;
    uint64_t rss = 0, ticks = 0;
    bool any = false;
    for (size_t i = 0; i < s->nents; i++) {
        struct pent *p = &s->ents[i];
        if (p->flags & P_ENDED)
            continue;
        struct procfs_pid_stat st;
        ssize_t n = pent_read(s, p, &p->fd_stat, "stat");
        if (n <= 0 || procfs_parse_pid_stat(s->scratch, (size_t)n, &st) < 0 ||
            ((p->flags & P_STAT_KNOWN) && st.starttime != p->starttime))
            continue; /* gone: what it used is in its parent's cutime now, or in what we reaped */
        any = true;
        ticks += st.utime + st.stime + st.cutime + st.cstime;
        if (st.state != 'Z') {
            uint64_t r = st.rss * (uint64_t)s->page_size;
            rss += r;
            p->max_rss = MAX(p->max_rss, r);
        }
    }
    s->spot_ns = now_ns ? now_ns : 1;
    s->spot_rss = any ? rss : 0;
    s->spot_cpu = ticks_to_ns(s, ticks) + s->reaped_user_ns + s->reaped_sys_ns;
    if (any)
        s->tot.peak_rss = MAX(s->tot.peak_rss, rss);
}

int sampler_events_status(const struct sampler *s) { return s ? s->events_err : -ENOTSUP; }

void sampler_rescan(struct sampler *s, uint64_t now_ns)
{
    if (!s || !s->cfg.tree || !s->contain || s->fd_cg_cpu >= 0 || s->nl_fd >= 0)
        return;
    struct tree_now t;
    tree_scan(s, now_ns, &t);
    tree_totals(s, &t); /* no cgroup here: the live sums the scan just made, and what was reaped */
    /* The scan read every member: it is the spot reading (spot_read), not read again. */
    s->spot_ns = now_ns ? now_ns : 1;
    s->spot_cpu = t.cpu_ns;
    s->spot_rss = t.rss_known ? t.rss : 0;
    if (t.rss_known)
        s->tot.peak_rss = MAX(s->tot.peak_rss, t.rss);
}

uint64_t sampler_tree_cpu_ns(struct sampler *s)
{
    if (!s)
        return 0;
    if (!s->cfg.tree || !s->contain)
        return s->rep_cpu_ns;
    if (s->fd_cg_cpu >= 0) {
        struct tree_now t = {0};
        tree_totals(s, &t); /* cpu.stat: one read, exact */
        return MAX(s->rep_cpu_ns, t.cpu_ns);
    }
    /* Without the cgroup, the last sample's figure would be up to an interval old. */
    spot_read(s, now_ns(), 2 * NSEC_PER_MSEC);
    return MAX(s->rep_cpu_ns, s->spot_cpu);
}

uint64_t sampler_tree_rss(const struct sampler *s)
{
    return s && s->tree_rss_known ? s->tree_rss : 0;
}

uint64_t sampler_tree_rss_now(struct sampler *s, uint64_t now_ns, uint64_t max_age_ns)
{
    if (!s || !s->cfg.tree || !s->contain)
        return 0;
    spot_read(s, now_ns, max_age_ns);
    return s->spot_rss;
}

void sampler_get_totals(const struct sampler *s, struct sampler_totals *ret)
{
    *ret = s->tot;
    ret->tree_cpu_ns = s->rep_cpu_ns;
    ret->tree_user_ns = s->rep_user_ns;
    ret->tree_system_ns = s->rep_sys_ns;
}

void sampler_track(struct sampler *s, pid_t pid, uint64_t now_ns, const char *cmd)
{
    if (!s || !s->cfg.tree || !s->contain || pid <= 0 || tracked(s, pid))
        return;
    struct pent *p = lookup(s, pid);
    if (p)
        pent_remove(s, p);
    p = pent_add(s, pid);
    if (!p)
        return;
    p->ppid = s->self;
    p->start_ns = now_ns;
    /* Between the fork and the exec /proc shows resmon-run's own command line, and a command
     * may be gone before a scan reads it: the command line it is exec'd with is the truth. */
    if (cmd && (p->cmd = strdup(cmd))) {
        p->flags |= P_CMD_TRIED | P_CMD_GIVEN;
        /* its exec has happened (spawn waits for it); its event comes, unless the filter the
         * exec met dropped it (a pid outside its window) */
        if (!s->filter_on || (pid >= s->win_lo && pid < s->win_hi))
            p->flags |= P_EXEC_OURS;
    }
    filter_sync(s); /* its children's forks must pass from now on */
    /* An open line (profile.h), so that a profile written while the root runs has its marker. */
    struct jsonw data;
    jsonw_init(&data);
    struct mpay mp;
    mpay_begin(&mp, &data, &sampler_process_type);
    mpay_str(&mp, PROC_CMD, cmd ? cmd : "");
    mpay_int(&mp, PROC_PID, pid);
    mpay_int(&mp, PROC_PPID, s->self);
    mpay_end(&mp);
    struct jsonw *w = &s->w;
    jsonw_reset(w);
    jsonw_obj_open(w);
    jsonw_kv_str(w, "type", "open");
    jsonw_kv_str(w, "kind", "process");
    char key[16];
    snprintf(key, sizeof key, "%d", (int)pid);
    jsonw_kv_str(w, "key", key);
    jsonw_kv_str(w, "name", "process");
    jsonw_kv_double(w, "startTime", now_ns > s->t0_ns ? (double)(now_ns - s->t0_ns) / 1e6 : 0.0, 3);
    jsonw_key(w, "data");
    jsonw_raw(w, data.buf ? data.buf : "{}", data.buf ? data.len : 2);
    jsonw_obj_close(w);
    if (!jsonw_failed(w) && !jsonw_failed(&data)) {
        marker_state(s->sink, w->buf, w->len);
        s->root_open = pid;
    }
    jsonw_release(&data);
}

void sampler_finish(struct sampler *s, uint64_t now_ns)
{
    if (!s)
        return;
    sampler_handle_events(s, now_ns);
    while (s->nents > 0)
        pent_end(s, &s->ents[s->nents - 1], now_ns, true);
    if (s->tot.processes_unnamed) {
        char msg[512];
        size_t n = (size_t)snprintf(msg, sizeof msg,
                                    "%llu process%s of the tree exited before %s command line could be read, "
                                    "so %s no process marker (",
                                    (unsigned long long)s->tot.processes_unnamed,
                                    s->tot.processes_unnamed == 1 ? "" : "es",
                                    s->tot.processes_unnamed == 1 ? "its" : "their",
                                    s->tot.processes_unnamed == 1 ? "it has" : "they have");
        for (unsigned i = 0; i < s->unnamed_kinds && n < sizeof msg; i++)
            n += (size_t)snprintf(msg + n, sizeof msg - n, "%s%s: %llu", i ? ", " : "", s->unnamed[i].exit,
                                  (unsigned long long)s->unnamed[i].n);
        if (n < sizeof msg)
            snprintf(msg + n, sizeof msg - n, ")");
        struct mpay p;
        mpay_begin(&p, &s->w, &marker_warning_type);
        mpay_str(&p, WARNING_MESSAGE, msg);
        mpay_str(&p, WARNING_COLOR, "orange");
        mpay_end(&p);
        if (!jsonw_failed(&s->w))
            marker_emit(s->sink, "unnamed processes", now_ns, MARKER_INSTANT, CAT_OTHER, s->w.buf, s->w.len);
    }
}
