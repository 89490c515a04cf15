/* sampler_events.c — the process connector (sampler.h, "How every process is learned"): the
 * netlink socket, the kernel-side event filter that passes the tree's events only (procfilter.h)
 * and its window of pids to come, and the fork, exec and exit events that add, rename and end
 * the processes of the table. */
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "observe/procfilter.h"
#include "observe/procfs.h"
#include "observe/sampler.h"
#include "observe/sampler_impl.h"

/* ---- process connector ------------------------------------------------------------------ */

/* The window of pids the event filter passes beyond its set (procfilter.h), so that a new process
 * of the tree is heard from its first event on, before its fork event is even read:
 *   open     every pid the kernel allocates after the filter was attached (above the
 *            allocator's last pid, /proc/sys/kernel/ns_last_pid): the tree's new processes all
 *            fall in it, and the filter is handed to the kernel again (each time a compile of
 *            ~100 us) only when something falls outside: a process forked just before the
 *            attach, read after it, or pids wrapping around. What else takes those pids (other
 *            jobs' processes) passes too: at its first event the window shuts, and stays shut
 *            for filter_reopen_ns after the last such event;
 *   bounded  while shut: the pids allocated next, re-attached at each new process of the tree
 *            (its least and greatest width below, twice the pids allocated since the last
 *            attach in a burst), or none. */
#define FILTER_WINDOW 16
#define FILTER_WINDOW_MAX 4096
/* Changes this close together are a burst: the window covers twice the pids allocated since
 * the last one. */
#define FILTER_BURST_NS (100 * NSEC_PER_MSEC)

/* The pid the kernel allocated last (the connector works only in the initial pid namespace,
 * where this is the pids' counter), or -1. */
static pid_t last_pid(void)
{
    char b[16];
    int fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n <= 0)
        return -1;
    b[n] = '\0';
    char *end;
    long v = strtol(b, &end, 10);
    return end != b && v > 0 && v < INT32_MAX ? (pid_t)v : -1;
}

int nl_open(struct sampler *s)
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
            pid_t last = last_pid();
            s->filter_newest = s->self;
            s->win_open = last >= s->self;
            s->win_lo = s->win_open ? last + 1 : s->self + 1;
            s->win_hi = s->win_open ? INT32_MAX : s->self + 1 + FILTER_WINDOW;
            s->filter_on = procfilter_attach(fd, &s->self, 1, s->win_lo, s->win_hi) == 0;
            s->tot.filter_attaches++;
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


/* Hand the kernel the set (resmon-run and the tree's live processes) and, with window, a window
 * (open where no outsider's event passed lately, else bounded above the newest pid known); the
 * window shut otherwise. False when the filter could not be narrowed (the superset of kinds and
 * threads only is attached then, if anything). */
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
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    /* read before the set is built: a process forked after this read falls in the window, one
     * forked before is in the set or its fork event is still to come (then it joins late) */
    pid_t last = window && (!s->stray_ns || now - s->stray_ns >= s->cfg.filter_reopen_ns) ? last_pid() : -1;
    size_t n = 0;
    s->fset[n++] = s->self;
    /* The tree's newest process: its pid is about where the allocator was. Not the greatest pid:
     * once the pids wrap around (pid_max 32768 is common) that one stays above the counter for
     * as long as it is known, and the window would never open again, nor the bounded one cover
     * a pid the tree gets (a filter for each of its processes). */
    pid_t newest = s->filter_newest;
    uint64_t newest_start = 0;
    for (size_t k = 0; k < s->nents; k++) {
        if (!(s->ents[k].flags & P_ENDED))
            s->fset[n++] = s->ents[k].pid;
        if (s->ents[k].start_ns >= newest_start) {
            newest_start = s->ents[k].start_ns;
            newest = s->ents[k].pid;
        }
    }
    s->win_lo = s->win_hi = 0;
    /* open only while the pids have not wrapped around since the tree's were allocated (a live
     * process above the counter would be neither in the set nor new) */
    s->win_open = last > 0 && last >= newest;
    if (s->win_open) {
        s->win_lo = last + 1;
        s->win_hi = INT32_MAX;
        s->filter_newest = newest;
        s->filter_ns = now;
    } else if (window) {
        /* Bounded: the pids allocated next. The tree's next child most likely gets one, and then
         * its exec and its own children pass before its fork event is even read. Its size follows
         * how far pids moved since the last change (a burst widens it); what else takes those
         * pids costs a wake-up, once: the window then shuts. */
        pid_t moved = now - s->filter_ns < FILTER_BURST_NS && newest > s->filter_newest ? newest - s->filter_newest : 0;
        pid_t width = MIN(MAX(2 * moved, FILTER_WINDOW), FILTER_WINDOW_MAX);
        s->filter_newest = newest;
        s->filter_ns = now;
        s->win_lo = newest + 1;
        s->win_hi = newest < INT32_MAX - width ? newest + 1 + width : newest;
    }
    s->tot.filter_attaches++;
    if (procfilter_attach(s->nl_fd, s->fset, n, s->win_lo, s->win_hi) == 0)
        return true;
    /* cannot narrow any more: threads and other kinds only, the safe superset, every exec */
    s->win_lo = 1, s->win_hi = INT32_MAX, s->win_open = false;
    if (procfilter_attach(s->nl_fd, NULL, PROCFILTER_MAX_SET + 1, 0, 0) < 0)
        s->filter_on = false;
    return false;
}

/* Give the kernel the tree as it is known now, then catch up with what the filter's lag hid
 * (procfilter.h): a process that joined the set only now may have exec'd or forked before (the
 * filter dropped those events, its parent's fork passed). Its command line is read again and its
 * children are listed; the children found join in turn, a few generations at most, the scans
 * being the safety net. */
void filter_sync(struct sampler *s)
{
    if (s->filter_on && s->filter_stray) {
        s->tot.filter_strays++;
        s->stray_ns = clock_ns(CLOCK_MONOTONIC);
        if (!s->filter_dirty) {
            /* Only an outsider took a pid of the window (a long-lived one would have all its
             * forks pass): shut it until the tree changes. */
            s->filter_stray = false;
            (void)filter_attach(s, false);
            return;
        }
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
            if (!(p->flags & P_CMD_GIVEN) && !exec_catch_up(s, p) && !(p->flags & P_EXEC_WATCHED)) {
                /* Gone before the filter knew it (a pid outside the window: the pids wrapped
                 * around), and its exit may not pass either: whether it exec'd is not known, as
                 * at such an exit (proc_event_take). Unnamed rather than perhaps misnamed. */
                free(p->cmd);
                p->cmd = NULL;
                p->comm[0] = '\0';
            }
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
                if (child <= 0 || pent_tracked(s, (pid_t)child))
                    continue;
                struct pent *q = pent_lookup(s, (pid_t)child);
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
 * start times have tick resolution), not a new holder of a recycled pid. A process read as it
 * was being reaped shows no parent (ppid 0): its start tells. */
static bool found_before_its_fork(struct sampler *s, const struct pent *p, pid_t parent, uint64_t fork_ns)
{
    uint64_t tick = ticks_to_ns(s, 1);
    return !(p->flags & (P_ENDED | P_FORK_SEEN)) && (p->flags & P_STAT_KNOWN) && (p->ppid == parent || !p->ppid) &&
           p->start_ns <= fork_ns && fork_ns - p->start_ns < 2 * tick;
}

void proc_event_take(struct sampler *s, const struct proc_event *ev, bool exit_known)
{
    switch (ev->what) {
    case PROC_EVENT_FORK: {
        const struct fork_proc_event *f = &ev->event_data.fork;
        if (f->child_pid != f->child_tgid)
            return; /* a thread */
        if (!pent_tracked(s, f->parent_tgid)) {
            s->filter_stray |= f->parent_tgid != s->self;
            return; /* not ours (the root's fork is taken by sampler_track) */
        }
        struct pent *old = pent_lookup(s, f->child_tgid);
        if (old && found_before_its_fork(s, old, f->parent_tgid, ev->timestamp_ns)) {
            old->start_ns = ev->timestamp_ns;
            old->ppid = f->parent_tgid;
            old->flags |= P_FORK_SEEN;
            return;
        }
        if (old)
            pent_end(s, old, ev->timestamp_ns, true); /* the pid was recycled */
        struct pent *parent = pent_lookup(s, f->parent_tgid);
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
                if (s->early[i].known)
                    p->flags |= P_EXIT_KNOWN;
                p->end_ns = s->early[i].ns;
                if (p->ppid != s->self) {
                    if (pcmd)
                        p->cmd = strdup(pcmd);
                    p->cmd_ns = p->cmd_t0 = ev->timestamp_ns;
                    pent_end(s, p, s->early[i].ns, false);
                    return;
                }
            }
        /* Until it execs, a forked child runs its parent's program with its arguments. */
        if (pcmd)
            p->cmd = strdup(pcmd);
        p->cmd_ns = p->cmd_t0 = ev->timestamp_ns;
        p->flags |= P_CMD_TRIED | P_FORK_SEEN;
        /* The filter in effect now is the one its exec met, if it exec'd before it joined the set */
        if (p->pid >= s->win_lo && p->pid < s->win_hi)
            p->flags |= P_EXEC_WATCHED;
        return;
    }
    case PROC_EVENT_EXEC: {
        struct pent *p = pent_lookup(s, ev->event_data.exec.process_tgid);
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
        struct pent *p = pent_lookup(s, x->process_tgid);
        if (p && !(p->flags & P_ENDED) && ev->timestamp_ns < p->alive_ns)
            return; /* an earlier holder of the pid, whose end a scan found (it reads p instead) */
        if (!p || (p->flags & P_ENDED)) {
            /* parent 0: the kernel could not tell (reaped as it was reported), and the filter
             * passes every such exit (procfilter.h): not a stray of the window */
            if (x->parent_tgid && x->parent_tgid != s->self && !pent_tracked(s, x->parent_tgid))
                s->filter_stray = true;
            unsigned i = s->early_next++ % ARRAY_SIZE(s->early);
            s->early[i].pid = x->process_tgid;
            s->early[i].parent = x->parent_tgid;
            s->early[i].code = (int)x->exit_code;
            s->early[i].known = exit_known;
            s->early[i].ns = ev->timestamp_ns;
            return;
        }
        p->wstatus = (int)x->exit_code;
        if (exit_known)
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
    if (!s)
        return;
    if (s->names.nrings)
        names_drain(s); /* (sampler_names.c) */
    if (s->nl_fd < 0)
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
            proc_event_take(s, &ev, true);
        }
    }
    filter_sync(s);
    (void)now_ns;
}

int sampler_event_fd(const struct sampler *s)
{
    return !s ? -1 : s->nl_fd >= 0 ? s->nl_fd : perfring_fd(&s->names);
}
