/* sampler_tree.c — the tree's sample (sampler.h): reading one process's /proc files into its
 * entry of the table, the scan of the tree's members at each tick, the tree's totals (exact:
 * cgroup cpu.stat, or live figures plus what was reaped) and the "Tree CPU", "Tree Memory",
 * "Tree IO" and "Processes" markers. Owns those marker types and the tree's counters. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonw.h"
#include "base/util.h"
#include "observe/procfs.h"
#include "observe/sampler.h"
#include "observe/sampler_impl.h"

/* ---- marker types (markers.h): the tree's ----------------------------------------------- */


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
/* The tree's counters (the order of all tracks: sampler_counters in sampler.c). */
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
const struct marker_counter sampler_majflt_counter = {
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

/* ---- reading one process ---------------------------------------------------------------- */

/* Read one of p's files with a kept fd when the budget allows. 0 bytes or ESRCH: gone. */
ssize_t pent_read(struct sampler *s, struct pent *p, int *fd, const char *name)
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
int pent_refresh(struct sampler *s, struct pent *p, bool *reused)
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
    /* A zombie's exit status, when nothing told it (no connector), read before io takes the
     * buffer: trusted once its io is read too (the kernel shows 0 to a reader not allowed to trace
     * it), and while no other thread lives (a leader gone first is a zombie before its process). */
    int zombie_exit = st.state == 'Z' && st.num_threads <= 1 && !(p->flags & P_EXIT_KNOWN)
                          ? procfs_pid_stat_exit_code(s->scratch, (size_t)n)
                          : -1;
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
    if (zombie_exit >= 0 && (p->flags & P_IO_OK)) {
        p->wstatus = zombie_exit;
        p->flags |= P_EXIT_KNOWN;
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

/* ---- tree ------------------------------------------------------------------------------- */

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

void tree_scan(struct sampler *s, uint64_t now_ns, struct tree_now *t)
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
            if (!(s->ents[k].flags & (P_ENDED | P_GONE)))
                s->pids[n++] = s->ents[k].pid;
    }
    s->gen++;
    bool io_ok = true;
    const pid_t *list = full ? pids : s->pids;
    for (size_t i = 0; i < n; i++) {
        if (list[i] <= 0 || list[i] == s->self)
            continue;
        struct pent *p = pent_lookup(s, list[i]);
        bool fresh = !p;
        if (!p && !(p = pent_add(s, list[i])))
            continue;
        bool reused = false;
        int r = pent_refresh(s, p, &reused);
        /* Listed from the table: with every fork heard, its pid has no other holder; it is gone
         * (the unseen ones below). */
        if (r <= 0 && !full)
            continue;
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
    /* A process that left the listing ended; its exit event is usually queued by then: read it
     * first, so its end says how it died (an OOM kill is told by its SIGKILL) and when. One not
     * sent yet is waited for (below). */
    if ((s->nl_fd >= 0 || s->names_task) && !s->cfg.events_after_scan)
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
            if (p->flags & P_GONE) {
                if (now_ns - p->gone_ns < SAMPLER_GONE_WAIT_NS) {
                    k++;
                    continue;
                }
            } else if (pent_refresh(s, p, &reused) > 0 && !reused) {
                p->seen_gen = s->gen;
                k++;
                continue;
            } else if (s->nl_fd >= 0 && !(p->flags & (P_ENDED | P_EXIT_KNOWN))) {
                /* Reaped, and its exit event not here yet: the kernel sends it after it wakes the
                 * parent, which may reap first (do_exit: exit_notify, then the connector), and
                 * the exiting task can be preempted in between for as long as the machine is
                 * busy. How it died (an OOM kill is told by its SIGKILL) comes in that event:
                 * wait for it (its pid stays in the event filter's set meanwhile). Not one
                 * scan: a cgroup's membership change starts the next scan at once. */
                pent_unlive(s, p);
                p->flags |= P_GONE;
                p->gone_ns = now_ns;
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

void tree_totals(struct sampler *s, struct tree_now *t)
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

void tree_emit(struct sampler *s, struct tree_now *t, uint64_t start, uint64_t end)
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

