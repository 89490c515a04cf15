/* sampler.c — see sampler.h: the table of the tree's processes, a process's end and its marker, and
 * the calls the run makes. The other parts of the sampler are named in sampler_impl.h. */
#include "observe/sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "base/jsonw.h"
#include "base/util.h"
#include "observe/pressure.h"
#include "observe/procfilter.h"
#include "observe/procfs.h"
#include "observe/sampler_impl.h"

/* ---- marker types (markers.h): the sampling interval and the process; the machine's are
 * sampler_machine.c's, the tree's sampler_tree.c's ---------------------------------------- */

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

void sampler_config_init(struct sampler_config *cfg)
{
    *cfg = (struct sampler_config){
        .interval_ns = NSEC_PER_SEC, .system = true, .tree = true, .proc_events = true,
        .event_filter = true, .pressure = true, .proc_names = true,
        .filter_reopen_ns = NSEC_PER_SEC};
}


/* Counters: the front-end's counter display (graph type, unit, colour, label, tooltip rows). A
 * rate's "rate" is count per ms: CPU ms per ms is cores, a share per ms of a share is the share.
 * The tracks go in the order of their sortWeight, what someone looking into a stop wants first
 * first: the tree's CPU and memory (100, 101), the machine's (102, 103), pressure (pressure.c,
 * 104..109), the tree's major faults (110). A label names the track for what it measures (the
 * counter's name stays, for the tools that read it). */
const struct marker_counter *const *sampler_counters(size_t *ret_n)
{
    static const struct marker_counter *const all[] = {&sampler_cpu_counter, &sampler_mem_counter, &sampler_tree_cpu_counter,
                                                       &sampler_tree_mem_counter, &sampler_majflt_counter};
    *ret_n = ARRAY_SIZE(all);
    return all;
}

/* ---- process table ---------------------------------------------------------------------- */

static size_t hash_slot(const struct sampler *s, pid_t pid)
{
    return ((uint32_t)pid * 2654435761u) & (s->hash_cap - 1);
}

struct pent *pent_lookup(struct sampler *s, pid_t pid)
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

struct pent *pent_add(struct sampler *s, pid_t pid)
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
    /* A pid the open window covers: its events pass already (sampler_events.c), nothing to hand
     * the kernel. Any other joins the set at the next filter_sync. */
    if (s->filter_on && s->win_open && pid >= s->win_lo)
        p->flags |= P_FILTERED;
    else
        s->filter_dirty = true;
    return p;
}

void pent_close(struct sampler *s, struct pent *p)
{
    int *fds[] = {&p->fd_stat, &p->fd_io, &p->fd_status};
    for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
        if (*fds[i] >= 0) {
            close_fd(fds[i]);
            s->fd_budget++;
        }
}

/* Forget p's contribution to the live sums. */
void pent_unlive(struct sampler *s, struct pent *p)
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

void pent_remove(struct sampler *s, struct pent *p)
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
ssize_t read_pid_file(struct sampler *s, pid_t pid, const char *name, char *buf, size_t cap)
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

/* raw: the command line read from t0 on */
static void set_cmd(struct pent *p, const char *raw, size_t n, uint64_t t0)
{
    char out[CMD_MAX];
    size_t len = procfs_format_cmdline(raw, n, out, sizeof out);
    char *c = malloc(len + 1);
    if (!c)
        return;
    memcpy(c, out, len + 1);
    free(p->cmd);
    p->cmd = c;
    /* after the read: an exec recorded later surely came after it */
    p->cmd_ns = clock_ns(CLOCK_MONOTONIC);
    p->cmd_t0 = t0;
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

void read_cmdline(struct sampler *s, struct pent *p)
{
    bool execd = p->flags & P_CMD_STALE;
    p->flags |= P_CMD_TRIED;
    p->flags &= ~(unsigned)P_CMD_STALE;
    char buf[CMD_MAX];
    uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
    ssize_t n = read_pid_file(s, p->pid, "cmdline", buf, sizeof buf);
    if (n > 0) {
        set_cmd(p, buf, (size_t)n, t0);
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
bool exec_catch_up(struct sampler *s, struct pent *p)
{
    char buf[CMD_MAX];
    uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
    ssize_t n = read_pid_file(s, p->pid, "cmdline", buf, sizeof buf);
    char comm[PROCFS_COMM_MAX];
    if (n > 0) {
        set_cmd(p, buf, (size_t)n, t0);
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

/* What ran, as a process marker says it: its command line, else its name and that the command
 * line was not read ("" when neither is known). */
static const char *pent_name(const struct pent *p, char *buf, size_t size)
{
    if (p->cmd && p->cmd[0])
        return p->cmd;
    if (p->comm[0])
        snprintf(buf, size, "%s (command line not read)", p->comm);
    else if (size)
        buf[0] = '\0';
    return buf;
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
    const char *name = pent_name(p, k->cmd, sizeof k->cmd);
    if (name != k->cmd)
        snprintf(k->cmd, sizeof k->cmd, "%s", name);
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

/* Whether cmd (a command line as set_cmd writes it) runs the program the kernel names comm (its
 * file name, cut to 15 bytes): for an exec recorded while the command line was being read, which
 * may have read the program's arguments or its parent's. */
static bool runs_program(const char *cmd, const char *comm)
{
    size_t n = strcspn(cmd, " ");
    const char *base = cmd;
    for (size_t i = 0; i < n; i++)
        if (cmd[i] == '/')
            base = cmd + i + 1;
    size_t blen = (size_t)(cmd + n - base), clen = strlen(comm);
    return clen && blen >= clen && !memcmp(base, comm, clen) && (blen == clen || clen == 15); /* 15: cut */
}

/* Emit p's "process" marker and keep p as a tombstone (the pid may still be listed as a zombie)
 * or drop it (remove = true). */
void pent_end(struct sampler *s, struct pent *p, uint64_t end_ns, bool remove)
{
    /* found reaped before anything told its end (tree_scan): it ended by then */
    if ((p->flags & P_GONE) && p->gone_ns < end_ns)
        end_ns = p->gone_ns;
    if (!(p->flags & P_ENDED)) {
        uint64_t start = p->start_ns ? p->start_ns : MAX(s->t0_ns, s->last_ns);
        if (end_ns < start)
            end_ns = start;
        /* Nothing read names it (it exec'd and was reaped before its command line or name could
         * be read, or whether it exec'd is not known), or it exec'd after its command line was
         * read (or inherited: its exec event was not heard): the kernel's record of its last
         * exec names it. */
        bool has_cmd = p->cmd && p->cmd[0];
        if (has_cmd || !p->comm[0]) {
            char comm[16];
            /* (an end found by a scan is the sample's time, before the scan read it gone: the
             * clock now bounds it) */
            uint64_t until = p->end_ns ? p->end_ns : clock_ns(CLOCK_MONOTONIC);
            uint64_t at = 0;
            if (names_find(s, p->pid, has_cmd ? MAX(start, MIN(p->cmd_t0, p->cmd_ns)) : start, until, has_cmd, comm,
                           sizeof comm, &at) &&
                !(has_cmd && at < p->cmd_ns && runs_program(p->cmd, comm))) {
                free(p->cmd);
                p->cmd = NULL;
                snprintf(p->comm, sizeof p->comm, "%s", comm);
            }
        }
        char name[PROCFS_COMM_MAX + 32];
        struct jsonw *w = &s->w;
        struct mpay mp;
        mpay_begin(&mp, w, &sampler_process_type);
        mpay_str(&mp, PROC_CMD, pent_name(p, name, sizeof name));
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
        /* Nothing known of what ran: a marker must say what ran, so it is counted, with its
         * exit, and sampler_finish says so in a warning. */
        if (!(p->cmd && p->cmd[0]) && !p->comm[0])
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

bool pent_tracked(struct sampler *s, pid_t pid)
{
    struct pent *p = pent_lookup(s, pid);
    return p && !(p->flags & P_ENDED);
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
    s->events_err = s->names_err = -ENOTSUP;
    perfring_init(&s->names);
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
        /* before the command starts: the events follow it from its exec (perfring.h) */
        if (cfg->proc_names && !cfg->proc_root)
            s->names_err = names_open(s);
        if (hash_grow(s, 32) < 0)
            goto fail;
    }
    /* The counters this sampler's markers feed (markers.h), declared once in the stream. */
    if (cfg->interval_ns) {
        const struct marker_counter *counters[5];
        size_t nc = 0;
        if (cfg->system)
            counters[nc++] = &sampler_cpu_counter, counters[nc++] = &sampler_mem_counter;
        if (cfg->tree && c) {
            counters[nc++] = &sampler_tree_cpu_counter, counters[nc++] = &sampler_tree_mem_counter;
            counters[nc++] = &sampler_majflt_counter;
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
    perfring_release(&s->names);
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
    else if (s->names.nrings)
        names_drain(s); /* a ring not polled (beside the connector) */
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
        /* The final sample is timed at the command's end, but read later: what ran on since (the
         * leftovers) is in the figure, so its span ends at the read. */
        s->rep_cpu_read_ns = MAX(now_ns, clock_ns(CLOCK_MONOTONIC));
        tree_emit(s, &t, start, now_ns);
    }
    pressure_sample(s->psi, now_ns, final);
    if (s->cfg.events_after_scan && !s->cfg.events_polled)
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
    struct pent *p = pent_lookup(s, pid);
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
        if ((p->flags & (P_ENDED | P_EXIT_KNOWN | P_GONE)) || p->start_ns < since_ns || p->pid == s->self)
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

int sampler_names_status(const struct sampler *s) { return s ? s->names_err : -ENOTSUP; }

const char *sampler_names_way(const struct sampler *s)
{
    return s && s->names.nrings ? (s->names.cgroup ? "cgroup" : "inherit") : NULL;
}

bool sampler_names_tasks(const struct sampler *s) { return s && s->names.nrings && s->names_task; }

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
    ret->tree_cpu_read_ns = s->rep_cpu_read_ns;
    ret->tree_user_ns = s->rep_user_ns;
    ret->tree_system_ns = s->rep_sys_ns;
}

void sampler_track(struct sampler *s, pid_t pid, uint64_t now_ns, const char *cmd)
{
    if (!s || !s->cfg.tree || !s->contain || pid <= 0 || pent_tracked(s, pid))
        return;
    struct pent *p = pent_lookup(s, pid);
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
        p->cmd_ns = p->cmd_t0 = now_ns;
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

/* Processes found reaped whose exit event is still to come (tree_scan): wait for those events
 * a little at the end too, since the command's own exit may follow its child's at once (its
 * OOM kill would be lost). Each waits until SAMPLER_GONE_FINISH_NS after it was found gone. */
static void await_gone(struct sampler *s)
{
    for (;;) {
        uint64_t until = 0;
        for (size_t k = 0; k < s->nents; k++)
            if ((s->ents[k].flags & (P_GONE | P_ENDED)) == P_GONE)
                until = MAX(until, sat_add_u64(s->ents[k].gone_ns, SAMPLER_GONE_FINISH_NS));
        uint64_t now = now_ns();
        if (!until || now >= until || s->nl_fd < 0)
            return;
        struct pollfd pfd = {.fd = s->nl_fd, .events = POLLIN};
        int ms = (int)((until - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
        int r = poll(&pfd, 1, ms);
        if (r < 0 && errno != EINTR)
            return;
        if (r > 0)
            sampler_handle_events(s, now_ns());
    }
}

void sampler_finish(struct sampler *s, uint64_t now_ns)
{
    if (!s)
        return;
    sampler_handle_events(s, now_ns);
    await_gone(s);
    while (s->nents > 0)
        pent_end(s, &s->ents[s->nents - 1], now_ns, true);
    if (s->tot.processes_unnamed) {
        char msg[512];
        size_t n = (size_t)snprintf(msg, sizeof msg,
                                    "%llu process%s of the tree exited before %s command line or name could be "
                                    "read, so %s no process marker (",
                                    (unsigned long long)s->tot.processes_unnamed,
                                    s->tot.processes_unnamed == 1 ? "" : "es",
                                    s->tot.processes_unnamed == 1 ? "its" : "their",
                                    s->tot.processes_unnamed == 1 ? "it has" : "they have");
        for (unsigned i = 0; i < s->unnamed_kinds && n < sizeof msg; i++)
            n += (size_t)snprintf(msg + n, sizeof msg - n, "%s%s: %llu", i ? ", " : "", s->unnamed[i].exit,
                                  (unsigned long long)s->unnamed[i].n);
        if (n < sizeof msg)
            n += (size_t)snprintf(msg + n, sizeof msg - n, ")");
        if (n < sizeof msg && s->tot.names_lost)
            snprintf(msg + n, sizeof msg - n, "; the kernel dropped %llu %s (a full ring)",
                     (unsigned long long)s->tot.names_lost,
                     s->names_task ? "records of execs, forks and exits" : "names of execs");
        struct mpay p;
        mpay_begin(&p, &s->w, &marker_warning_type);
        mpay_str(&p, WARNING_MESSAGE, msg);
        mpay_str(&p, WARNING_COLOR, "orange");
        mpay_end(&p);
        if (!jsonw_failed(&s->w))
            marker_emit(s->sink, "unnamed processes", now_ns, MARKER_INSTANT, CAT_OTHER, s->w.buf, s->w.len);
    }
}
