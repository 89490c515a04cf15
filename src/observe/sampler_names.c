/* sampler_names.c — the kernel's own names of the tree's processes (sampler.h, "How every process
 * is named"): a perf dummy event per CPU that counts nothing and samples nothing, whose only
 * records are the side-band ones the kernel writes for the tasks it follows (perfring.h): a
 * PERF_RECORD_COMM at every exec (and PR_SET_NAME), with the pid and the new name, written by the
 * exec'ing task itself, so a program that runs for a microsecond and is reaped before anyone reads
 * /proc still leaves it. The process connector's exec event carries no name (and its COMM event is
 * sent on PR_SET_NAME only), and a reaped process's /proc is gone: this is what is left to name
 * it by. Kept: the last KNAMES names, newest last; looked up only for a process that ends without
 * a command line or a name read from /proc.
 * Without the connector the same events also ask for the tasks' PERF_RECORD_FORK and
 * PERF_RECORD_EXIT (attr.task), written by the forking and the exiting task: they are the tree's
 * process events then (sampler.h, "How every process is learned"), handed with the execs to the
 * connector's handling (sampler_events.c) in order of time. An exit record has no exit status. */
#include <linux/cn_proc.h>
#include <stdio.h>
#include <string.h>

#include "observe/perfring.h"
#include "observe/sampler.h"
#include "observe/sampler_impl.h"

/* data pages per CPU: a name record is 48 bytes, so half of it (the wake-up) is about 680 execs */
#define NAMES_PAGES 16
/* ... with the forks and exits (48 bytes each too): a short process leaves three records, and half
 * of this is about 1 400 of them. 256 KiB per CPU, within an unprivileged user's
 * perf_event_mlock_kb (516) beside --cpu-profile's rings; halved while the kernel refuses. */
#define TASK_PAGES 64

int names_open(struct sampler *s)
{
    struct perf_event_attr a = {
        .type = PERF_TYPE_SOFTWARE,
        .config = PERF_COUNT_SW_DUMMY,
        .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
        .exclude_kernel = 1,
        .exclude_hv = 1,
        .comm = 1,
        .comm_exec = 1,
        /* the connector, when there is one, tells the forks and exits (with exit statuses) */
        .task = s->nl_fd < 0,
    };
    int r = perfring_open(&s->names, &a, contain_cgroup_fd(s->contain), a.task ? TASK_PAGES : NAMES_PAGES);
    s->names_task = r == 0 && a.task;
    return r;
}

/* A fork or an exit record (pid, ppid, tid, ptid, time) as the connector's event. */
static void task_event(struct sampler *s, unsigned type, const char *b, size_t len, uint64_t ns)
{
    uint32_t id[4]; /* pid, ppid, tid, ptid: a process's pid is its tgid */
    if (len < sizeof id)
        return;
    memcpy(id, b, sizeof id);
    struct proc_event ev = {.timestamp_ns = ns};
    if (type == PERF_RECORD_FORK) {
        ev.what = PROC_EVENT_FORK;
        ev.event_data.fork = (struct fork_proc_event){.parent_pid = (pid_t)id[3], .parent_tgid = (pid_t)id[1],
                                                      .child_pid = (pid_t)id[2], .child_tgid = (pid_t)id[0]};
    } else {
        ev.what = PROC_EVENT_EXIT;
        ev.event_data.exit = (struct exit_proc_event){.process_pid = (pid_t)id[2], .process_tgid = (pid_t)id[0],
                                                      .parent_pid = (pid_t)id[3], .parent_tgid = (pid_t)id[1]};
    }
    proc_event_take(s, &ev, false);
}

void names_drain(struct sampler *s)
{
    /* (the events handled below end processes, and an end looks its name up: in what is read) */
    if (s->names_reading)
        return;
    s->names_reading = true;
    /* the rings are polled only where there is no connector to wake the loop */
    size_t n = perfring_read(&s->names, s->nl_fd < 0);
    for (size_t i = 0; i < n; i++) {
        const struct perfring_rec *r = &s->names.recs[i];
        const char *b = s->names.buf + r->off;
        struct perf_event_header h;
        memcpy(&h, b, sizeof h);
        b += sizeof h;
        size_t len = r->len - sizeof h;
        if (h.type == PERF_RECORD_LOST && len >= 16) {
            uint64_t v[2]; /* id, lost */
            memcpy(v, b, sizeof v);
            s->tot.names_lost += v[1];
            continue;
        }
        if (s->names_task && (h.type == PERF_RECORD_FORK || h.type == PERF_RECORD_EXIT)) {
            task_event(s, h.type, b, len, r->time);
            continue;
        }
        /* pid, tid, the name (NUL-terminated, padded to 8 bytes), then pid, tid, time */
        uint32_t id[2];
        if (h.type != PERF_RECORD_COMM || len < 8 + 8 + 16)
            continue;
        memcpy(id, b, sizeof id);
        if (id[0] != id[1])
            continue; /* a thread's name: not the process's */
        const char *comm = b + 8;
        size_t clen = strnlen(comm, len - 8 - 16);
        struct kname *k = &s->knames[s->knames_next++ % ARRAY_SIZE(s->knames)];
        k->pid = (pid_t)id[0];
        k->ns = r->time;
        k->exec = h.misc & PERF_RECORD_MISC_COMM_EXEC;
        clen = MIN(clen, sizeof k->comm - 1);
        memcpy(k->comm, comm, clen);
        k->comm[clen] = '\0';
        struct pent *p = s->names_task && k->exec ? pent_lookup(s, k->pid) : NULL;
        if (p && (p->flags & (P_FORK_SEEN | P_EXEC_OURS)) && r->time >= p->start_ns) {
            /* its command line, while it can still be read. Only where its fork was read: the
             * records follow what the command started from its exec on, and a process the scans
             * found otherwise (a tree's root that never exec'd) may have ended unrecorded, its pid
             * now another's. The scans see the others' execs by their new names. */
            struct proc_event ev = {.what = PROC_EVENT_EXEC, .timestamp_ns = r->time};
            ev.event_data.exec = (struct exec_proc_event){.process_pid = k->pid, .process_tgid = k->pid};
            proc_event_take(s, &ev, false);
        }
    }
    s->names_reading = false;
}

bool names_find(struct sampler *s, pid_t pid, uint64_t after_ns, uint64_t end_ns, bool exec, char *comm, size_t size,
                uint64_t *at_ns)
{
    if (!s->names.nrings)
        return false;
    /* Where the records are the process events too, reading them here could end the very process
     * being ended (or move the table under it): its callers read them before (sampler_sample,
     * tree_scan's sweep, sampler_reaped, sampler_finish). */
    if (!s->names_task)
        names_drain(s);
    unsigned n = MIN(s->knames_next, (unsigned)ARRAY_SIZE(s->knames));
    for (unsigned i = 1; i <= n; i++) {
        const struct kname *k = &s->knames[(s->knames_next - i) % ARRAY_SIZE(s->knames)];
        /* Newest last, but for records stamped on one CPU and written after a read of the rings
         * took a later one's of another (microseconds): the names older than that are not read. */
        if (k->ns + NSEC_PER_MSEC < after_ns)
            break;
        /* The newest name it took while it lived: a name before its start is an earlier holder's
         * of the pid, one after its end a later one's. A start read from /proc's clock ticks is
         * up to a tick early, never late. */
        if (k->pid != pid || k->ns < after_ns || (end_ns && k->ns > end_ns) || (exec && !k->exec))
            continue;
        snprintf(comm, size, "%s", k->comm);
        if (at_ns)
            *at_ns = k->ns;
        return comm[0] != '\0';
    }
    return false;
}
