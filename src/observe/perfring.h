/* perfring.h — one perf event per CPU following the command's tree, and the records the kernel
 * writes into their ring buffers, read in order of time: what --cpu-profile's samples (cpuprof.h)
 * and the sampler's process names (sampler.h) share.
 *
 * FOLLOWING THE TREE, two ways behind one call:
 *   cgroup   the events are the run's cgroup's (PERF_FLAG_PID_CGROUP, the cgroup tier's v2 leaf,
 *            contain.h): the kernel counts whatever task of the cgroup runs on that CPU, and
 *            writes the side-band records (comm, fork, exit) of the cgroup's tasks, so a fork
 *            costs nothing. Needs the perf_event controller on that hierarchy (always so on
 *            cgroup v2, and on a hybrid layout whose perf_event is not bound to a v1 hierarchy)
 *            and system-wide events (root, CAP_PERFMON, or perf_event_paranoid <= 0). A process
 *            that moves itself out of the cgroup is not followed any more.
 *   inherit  the events are resmon-run's own, opened before the command is started, disabled,
 *            with inherit and enable_on_exec set: the command's copy starts at its exec (resmon-run
 *            never execs, so it is never counted), and each fork and thread copies them (the
 *            kernel refuses to map the buffer of an inherited event not bound to one CPU, hence
 *            one per CPU: a fork copies as many as there are CPUs, and an exit folds them back).
 *            Works for an unprivileged user on their own processes (perf_event_paranoid <= 2).
 * The cgroup way where the run has a cgroup perf takes, else inherit. Either way nothing the
 * command forks escapes, however soon.
 *
 * RECORDS: every event is opened with sample_id_all, CLOCK_MONOTONIC times (the clock of every
 * marker and of the process connector's events) and a sample_type that begins with
 * PERF_SAMPLE_TID | PERF_SAMPLE_TIME and has nothing else among the sample_id fields, so that a
 * sample's time is its third word and any other record's its last. perfring_read copies the
 * records of every ring out (the space is freed at once) and sorts them by time; those stamped
 * after the read began are left for the next read, so that what one read hands over is every
 * record up to a time, whichever CPU wrote it.
 */
#ifndef RESMON_PERFRING_H
#define RESMON_PERFRING_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct perfring_one;

/* A record read out of a ring: its bytes are buf[off, off + len). */
struct perfring_rec {
    uint64_t time;
    uint32_t off, len;
};

struct perfring {
    struct perfring_one *rings;
    size_t nrings;
    int epfd;    /* one epoll descriptor over the rings (-1: none) */
    bool cgroup; /* the events are the run's cgroup's, not inherited */
    /* the records of the last perfring_read */
    char *buf;
    size_t buf_len, buf_cap;
    struct perfring_rec *recs;
    size_t nrecs, recs_cap;
};

/* An empty set (nothing opened; perfring_release is a no-op on it). */
void perfring_init(struct perfring *pr);

/* Open a per-CPU copy of *a (the caller's type, config and sample fields; the way's inherit,
 * disabled, enable_on_exec, the clock and watermark are set here) on the cgroup whose directory
 * cgroup_dirfd is (any descriptor of it, O_PATH too; -1: none) where perf takes it, else
 * inherited (FOLLOWING), and map each with up to max_pages data pages (a power of two, halved
 * while the kernel refuses: an unprivileged user may lock perf_event_mlock_kb per CPU). An event
 * that asks for the kernel too (!a->exclude_kernel) is opened for user space only when the kernel
 * refuses it (perf_event_paranoid 2): a->exclude_kernel says which. 0, or -errno (EACCES/EPERM:
 * perf_event_paranoid or a seccomp profile, ENOSYS: no perf events, ENOENT: no such event), and
 * then nothing is left open. */
int perfring_open(struct perfring *pr, struct perf_event_attr *a, int cgroup_dirfd, size_t max_pages);

/* The descriptor to poll (POLLIN: a ring is half full), -1 when nothing is open. */
int perfring_fd(const struct perfring *pr);

/* Copy every ring's records out and sort them by time (pr->recs, pr->nrecs; a record is
 * pr->buf + recs[i].off). Returns how many. polled: perfring_fd is polled, and its wake-ups are
 * taken (one epoll_wait); otherwise a read that finds nothing makes no system call. */
size_t perfring_read(struct perfring *pr, bool polled);

/* Close the events and unmap their rings (the records read last stay readable). */
void perfring_close(struct perfring *pr);
/* perfring_close, and free the record buffers. */
void perfring_release(struct perfring *pr);

#endif
