/* perfring.c — see perfring.h. */
#include "observe/perfring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

struct perfring_one {
    int fd;
    struct perf_event_mmap_page *meta;
    char *data;
    size_t size; /* data bytes */
};

void perfring_init(struct perfring *pr)
{
    *pr = (struct perfring){.epfd = -1};
}

/* The event of cpu: on every task of the cgroup whose directory cgfd is (cgfd >= 0), or on
 * resmon-run itself, inherited by what it starts next, disabled until an exec (the command's). */
static int open_event(struct perf_event_attr *a, int cgfd, int cpu)
{
    a->size = sizeof *a;
    a->inherit = cgfd < 0;
    a->disabled = cgfd < 0;
    a->enable_on_exec = cgfd < 0;
    a->sample_id_all = 1;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->watermark = 1;
    long fd = cgfd >= 0 ? syscall(SYS_perf_event_open, a, cgfd, cpu, -1, PERF_FLAG_FD_CLOEXEC | PERF_FLAG_PID_CGROUP)
                        : syscall(SYS_perf_event_open, a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

static void unmap_rings(struct perfring *pr)
{
    for (size_t i = 0; i < pr->nrings; i++)
        if (pr->rings[i].meta) {
            munmap(pr->rings[i].meta, pr->rings[i].size + (size_t)sysconf(_SC_PAGESIZE));
            pr->rings[i].meta = NULL;
        }
}

void perfring_close(struct perfring *pr)
{
    unmap_rings(pr);
    for (size_t i = 0; i < pr->nrings; i++)
        closep(&pr->rings[i].fd);
    free(pr->rings);
    pr->rings = NULL;
    pr->nrings = 0;
    closep(&pr->epfd);
}

void perfring_release(struct perfring *pr)
{
    perfring_close(pr);
    free(pr->buf);
    free(pr->recs);
    perfring_init(pr);
}

/* Map every ring with data pages each (the watermark, attr.watermark without a size, is half of
 * it). */
static int map_rings(struct perfring *pr, size_t pages)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < pr->nrings; i++) {
        struct perfring_one *r = &pr->rings[i];
        void *m = mmap(NULL, (pages + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
        if (m == MAP_FAILED)
            return -errno;
        r->meta = m;
        r->data = (char *)m + page;
        r->size = pages * page;
    }
    return 0;
}

/* One event per CPU (on the cgroup of cgfd, or inherited when cgfd < 0) in pr->rings. */
static int open_events(struct perfring *pr, struct perf_event_attr *a, int cgfd, long ncpu)
{
    bool kernel = !a->exclude_kernel;
    for (long c = 0; c < ncpu; c++) {
        int fd = open_event(a, cgfd, (int)c);
        if (fd == -EACCES && !a->exclude_kernel && c == 0) {
            /* perf_event_paranoid 2: user space only */
            a->exclude_kernel = 1;
            a->exclude_callchain_kernel = 1;
            fd = open_event(a, cgfd, (int)c);
        }
        if (fd == -ENODEV || fd == -EINVAL) /* a CPU not online: a possible one */
            continue;
        if (fd < 0) {
            a->exclude_kernel = a->exclude_callchain_kernel = !kernel; /* as asked, for the next way */
            return fd;
        }
        pr->rings[pr->nrings++] = (struct perfring_one){.fd = fd};
    }
    return 0;
}

int perfring_open(struct perfring *pr, struct perf_event_attr *a, int cgroup_dirfd, size_t max_pages)
{
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (ncpu < 1)
        ncpu = 1;
    perfring_close(pr);
    if (!(pr->rings = calloc((size_t)ncpu, sizeof *pr->rings)))
        return -ENOMEM;
    int r = -1;
    bool kernel = !a->exclude_kernel;
    /* perf takes a readable descriptor of the directory, not the O_PATH one contain keeps */
    int cgfd = cgroup_dirfd >= 0 ? openat(cgroup_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    pr->cgroup = false;
    if (cgfd >= 0) {
        pr->cgroup = (r = open_events(pr, a, cgfd, ncpu)) == 0 && pr->nrings;
        closep(&cgfd);
        if (!pr->cgroup) {
            /* no perf_event controller on that hierarchy, or not allowed system-wide events */
            perfring_close(pr);
            if (!(pr->rings = calloc((size_t)ncpu, sizeof *pr->rings)))
                return -ENOMEM;
            a->exclude_kernel = a->exclude_callchain_kernel = !kernel;
        }
    }
    if (!pr->cgroup)
        r = open_events(pr, a, -1, ncpu);
    if (!r && !pr->nrings)
        r = -ENOENT;
    for (size_t pages = max_pages; !r; pages /= 2) {
        r = map_rings(pr, pages);
        if (r != -EPERM && r != -ENOMEM)
            break;
        unmap_rings(pr);
        if (pages <= 1)
            break;
        r = 0;
    }
    if (!r) {
        pr->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (pr->epfd < 0)
            r = -errno;
        for (size_t i = 0; !r && i < pr->nrings; i++) {
            struct epoll_event ev = {.events = EPOLLIN};
            if (epoll_ctl(pr->epfd, EPOLL_CTL_ADD, pr->rings[i].fd, &ev) < 0)
                r = -errno;
        }
    }
    if (r)
        perfring_close(pr);
    return r;
}

int perfring_fd(const struct perfring *pr)
{
    return pr && pr->nrings ? pr->epfd : -1;
}

static int cmp_rec(const void *a, const void *b)
{
    const struct perfring_rec *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Copy the records of ring r out (it may wrap), up to the first stamped after until (left in the
 * ring for the next read), and free their space. */
static void read_ring(struct perfring *pr, struct perfring_one *r, uint64_t until)
{
    uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = r->meta->data_tail;
    while (tail + sizeof(struct perf_event_header) <= head) {
        struct perf_event_header h;
        for (size_t i = 0; i < sizeof h; i++)
            ((char *)&h)[i] = r->data[(tail + i) & (r->size - 1)];
        if (h.size < sizeof h || tail + h.size > head)
            break;
        if (array_reserve(&pr->buf, &pr->buf_cap, pr->buf_len + h.size, 1) < 0 ||
            array_grow(&pr->recs, &pr->recs_cap, pr->nrecs, sizeof *pr->recs) < 0)
            break;
        char *dst = pr->buf + pr->buf_len;
        size_t at = tail & (r->size - 1), first = MIN((size_t)h.size, r->size - at);
        memcpy(dst, r->data + at, first);
        memcpy(dst + first, r->data, h.size - first);
        /* the time: a sample's third word; another record's sample_id (pid, tid, time) ends it */
        uint64_t t = 0;
        if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof h + 16)
            memcpy(&t, dst + sizeof h + 8, 8);
        else if (h.size >= sizeof h + 8)
            memcpy(&t, dst + h.size - 8, 8);
        if (t > until)
            break;
        pr->recs[pr->nrecs++] = (struct perfring_rec){t, (uint32_t)pr->buf_len, h.size};
        pr->buf_len += h.size;
        tail += h.size;
    }
    __atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

size_t perfring_read(struct perfring *pr, bool polled)
{
    pr->nrecs = pr->buf_len = 0;
    if (!pr->nrings)
        return 0;
    if (polled && pr->epfd >= 0) {
        /* take the wake-ups: the next poll wakes for records written after this read */
        struct epoll_event ev[8];
        while (epoll_wait(pr->epfd, ev, ARRAY_SIZE(ev), 0) == (int)ARRAY_SIZE(ev)) {
        }
    }
    /* The rings are read one after another: a record another CPU writes meanwhile may be read
     * while an earlier one, written on a CPU whose ring was read before it, is not (a process's
     * exit before the exec that names it, when it moved between them). Records stamped after
     * the read began wait for the next: every one stamped before it is in its ring by then. */
    uint64_t until = now_ns();
    for (size_t i = 0; i < pr->nrings; i++)
        read_ring(pr, &pr->rings[i], until);
    if (pr->nrecs > 1)
        qsort(pr->recs, pr->nrecs, sizeof *pr->recs, cmp_rec);
    return pr->nrecs;
}
