/* Unit tests of the process-connector filter (procfilter.h): the programs it builds, run by a
 * small classic-BPF interpreter here on messages laid out as the kernel sends them (every size of
 * set up to the bound, every member and non-members around each), and, where the connector can be
 * read (root), the kernel running them on real events. */
#include "observe/procfilter.h"

#include <check.h>
#include "check_run.h"
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a classic BPF interpreter for the instructions procfilter emits ---- */

static uint32_t run(const struct sock_filter *prog, size_t n, const uint8_t *pkt, size_t len)
{
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    for (size_t pc = 0; pc < n; pc++) {
        const struct sock_filter *f = &prog[pc];
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            ck_assert_uint_le(f->k + 4, len);
            a = (uint32_t)pkt[f->k] << 24 | (uint32_t)pkt[f->k + 1] << 16 | (uint32_t)pkt[f->k + 2] << 8 |
                pkt[f->k + 3];
            break;
        case BPF_ST:
            mem[f->k] = a;
            break;
        case BPF_LD | BPF_MEM:
            a = mem[f->k];
            break;
        case BPF_MISC | BPF_TAX:
            x = a;
            break;
        case BPF_ALU | BPF_AND | BPF_K:
            a &= f->k;
            break;
        case BPF_ALU | BPF_LSH | BPF_K:
            a <<= f->k;
            break;
        case BPF_ALU | BPF_RSH | BPF_K:
            a >>= f->k;
            break;
        case BPF_ALU | BPF_OR | BPF_X:
            a |= x;
            break;
        case BPF_LDX | BPF_W | BPF_MEM:
            x = mem[f->k];
            break;
        case BPF_JMP | BPF_JA:
            pc += f->k;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += a == f->k ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JEQ | BPF_X:
            pc += a == x ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            pc += a >= f->k ? f->jt : f->jf;
            break;
        case BPF_RET | BPF_K:
            return f->k;
        default:
            ck_abort_msg("instruction %#x at %zu not expected", f->code, pc);
        }
        ck_assert_uint_lt(pc + 1, n + 1); /* a jump past the end */
    }
    ck_abort_msg("ran off the end");
    return 0;
}

/* Where the connector puts the event in its message: after nlmsghdr and cn_msg. */
#define EVENT_AT (NLMSG_HDRLEN + sizeof(struct cn_msg))

static uint32_t verdict(const struct sock_filter *prog, size_t n, unsigned what, pid_t a, pid_t b, pid_t c)
{
    struct {
        struct proc_event ev;
    } m;
    memset(&m, 0, sizeof m);
    m.ev.what = what;
    switch (what) {
    case PROC_EVENT_FORK: /* a: parent, b: child pid, c: child tgid */
        m.ev.event_data.fork.parent_pid = m.ev.event_data.fork.parent_tgid = a;
        m.ev.event_data.fork.child_pid = b;
        m.ev.event_data.fork.child_tgid = c;
        break;
    case PROC_EVENT_EXEC:
        m.ev.event_data.exec.process_pid = m.ev.event_data.exec.process_tgid = a;
        break;
    case PROC_EVENT_EXIT: /* a: parent, b: pid, c: tgid */
        m.ev.event_data.exit.parent_pid = m.ev.event_data.exit.parent_tgid = a;
        m.ev.event_data.exit.process_pid = b;
        m.ev.event_data.exit.process_tgid = c;
        break;
    default:
        m.ev.event_data.exec.process_pid = m.ev.event_data.exec.process_tgid = a;
    }
    uint8_t pkt[EVENT_AT + sizeof m.ev];
    memset(pkt, 0, EVENT_AT);
    memcpy(pkt + EVENT_AT, &m.ev, sizeof m.ev);
    return run(prog, n, pkt, sizeof pkt);
}

static struct sock_filter *build_window(const pid_t *set, size_t n, pid_t lo, pid_t hi, size_t *len)
{
    size_t size = procfilter_size(n, lo < hi);
    ck_assert_uint_gt(size, 0);
    ck_assert_uint_le(size, BPF_MAXINSNS);
    struct sock_filter *prog = calloc(size, sizeof *prog);
    ck_assert_ptr_nonnull(prog);
    *len = procfilter_build(set, n, lo, hi, prog);
    ck_assert_uint_eq(*len, size);
    return prog;
}

static struct sock_filter *build(const pid_t *set, size_t n, size_t *len) { return build_window(set, n, 0, 0, len); }

START_TEST(test_membership_every_size)
{
    /* pids spread and unsorted, members at even values so that every odd one around is not */
    static pid_t set[PROCFILTER_MAX_SET];
    static const size_t big[] = {60, 90, 135, 200, 300, 451, 700, 1000, 1023, PROCFILTER_MAX_SET};
    for (size_t k = 0; k < 40 + sizeof big / sizeof big[0]; k++) {
        size_t n = k < 40 ? k + 1 : big[k - 40];
        for (size_t i = 0; i < n; i++)
            set[i] = (pid_t)(((i * 7919) % n) * 2 + 2 + (i % 3) * 70000 * 2);
        size_t len;
        struct sock_filter *prog = build(set, n, &len);
        for (size_t i = 0; i < n; i++) {
            pid_t p = set[i];
            ck_assert_msg(verdict(prog, len, PROC_EVENT_FORK, p, 99999, 99999), "n=%zu fork of member %d", n, p);
            ck_assert_msg(verdict(prog, len, PROC_EVENT_EXEC, p, 0, 0), "n=%zu exec of member %d", n, p);
            ck_assert_msg(verdict(prog, len, PROC_EVENT_EXIT, p, 99999, 99999), "n=%zu exit under %d", n, p);
            ck_assert_msg(!verdict(prog, len, PROC_EVENT_FORK, p + 1, 99999, 99999), "n=%zu fork under %d", n, p + 1);
            ck_assert_msg(!verdict(prog, len, PROC_EVENT_EXEC, p - 1, 0, 0), "n=%zu exec of %d", n, p - 1);
            /* a thread of a member: neither its creation nor its end */
            ck_assert(!verdict(prog, len, PROC_EVENT_FORK, p, 99998, 99999));
            ck_assert(!verdict(prog, len, PROC_EVENT_EXIT, p, 99998, 99999));
        }
        ck_assert(!verdict(prog, len, PROC_EVENT_FORK, 1, 5, 5));
        ck_assert(!verdict(prog, len, PROC_EVENT_FORK, 0x7fffffff, 5, 5));
        /* parent 0: the kernel could not tell whose (reaped as it was reported): passes, to be
         * matched by pid; a thread's still does not, nor a fork "under 0" */
        ck_assert_msg(verdict(prog, len, PROC_EVENT_EXIT, 0, 99999, 99999), "n=%zu exit under 0", n);
        ck_assert(!verdict(prog, len, PROC_EVENT_EXIT, 0, 99998, 99999));
        ck_assert(!verdict(prog, len, PROC_EVENT_FORK, 0, 5, 5));
        ck_assert(!verdict(prog, len, PROC_EVENT_UID, set[0], 0, 0));
        ck_assert(!verdict(prog, len, PROC_EVENT_NONE, set[0], 0, 0));
        free(prog);
    }
}
END_TEST

START_TEST(test_window)
{
    /* pids byte-swapped would sort apart: 255, 256 and 65535, 65536 straddle byte boundaries */
    pid_t set[] = {7, 300};
    size_t len;
    struct sock_filter *prog = build_window(set, 2, 255, 65537, &len);
    ck_assert(verdict(prog, len, PROC_EVENT_FORK, 7, 5, 5));
    ck_assert(verdict(prog, len, PROC_EVENT_FORK, 300, 5, 5));
    const pid_t in[] = {255, 256, 511, 4096, 65535, 65536};
    const pid_t out[] = {254, 65537, 65792, 0x01000000 | 255, 8, 1};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        ck_assert_msg(verdict(prog, len, PROC_EVENT_EXEC, in[i], 0, 0), "exec of %d in the window", in[i]);
        ck_assert_msg(verdict(prog, len, PROC_EVENT_FORK, in[i], 9, 9), "fork under %d in the window", in[i]);
        ck_assert(!verdict(prog, len, PROC_EVENT_FORK, in[i], 9, 10)); /* a thread */
    }
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        ck_assert_msg(!verdict(prog, len, PROC_EVENT_EXEC, out[i], 0, 0), "exec of %d outside", out[i]);
    free(prog);
    /* a window alone */
    prog = build_window(NULL, 0, 1000, 1016, &len);
    ck_assert(verdict(prog, len, PROC_EVENT_EXIT, 1015, 3, 3));
    ck_assert(!verdict(prog, len, PROC_EVENT_EXIT, 1016, 3, 3));
    ck_assert(!verdict(prog, len, PROC_EVENT_EXIT, 999, 3, 3));
    free(prog);
}
END_TEST

START_TEST(test_no_set)
{
    /* past the bound (or none): every process event passes, threads and other kinds do not */
    size_t len;
    struct sock_filter *prog = build(NULL, PROCFILTER_MAX_SET + 1, &len);
    ck_assert(verdict(prog, len, PROC_EVENT_FORK, 123, 456, 456));
    ck_assert(verdict(prog, len, PROC_EVENT_EXEC, 123, 0, 0));
    ck_assert(verdict(prog, len, PROC_EVENT_EXIT, 123, 456, 456));
    ck_assert(!verdict(prog, len, PROC_EVENT_FORK, 123, 457, 456));
    ck_assert(!verdict(prog, len, PROC_EVENT_EXIT, 123, 457, 456));
    ck_assert(!verdict(prog, len, PROC_EVENT_COMM, 123, 0, 0));
    free(prog);
}
END_TEST

/* ---- the kernel, on real events ---- */

/* A connector socket, the filter for set[0..n) attached before it listens. */
static int connector(const pid_t *set, size_t n)
{
    int fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
    if (fd < 0)
        return -1;
    ck_assert_int_eq(procfilter_attach(fd, set, n, 0, 0), 0);
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC};
    /* nlmsghdr, cn_msg, the operation */
    uint8_t req[EVENT_AT + sizeof(uint32_t)];
    struct nlmsghdr h = {.nlmsg_len = sizeof req, .nlmsg_type = NLMSG_DONE};
    struct cn_msg cn = {.id = {.idx = CN_IDX_PROC, .val = CN_VAL_PROC}, .len = sizeof(uint32_t)};
    uint32_t op = PROC_CN_MCAST_LISTEN;
    memcpy(req, &h, sizeof h);
    memcpy(req + NLMSG_HDRLEN, &cn, sizeof cn);
    memcpy(req + EVENT_AT, &op, sizeof op);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || send(fd, req, sizeof req, 0) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void *idle(void *arg) { return arg; }

/* The events the socket delivers until an exit of `last` (a process), as "f PARENT CHILD",
 * "e PID", "x PARENT PID" lines. */
static void collect(int fd, pid_t last, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ck_assert_msg(poll(&p, 1, 10000) == 1, "no exit of %d within 10 s; had: %s", last, out);
        union {
            struct nlmsghdr h;
            char b[4096];
        } buf;
        ssize_t n = recv(fd, buf.b, sizeof buf.b, 0);
        ck_assert_int_gt(n, 0);
        struct cn_msg *cn = NLMSG_DATA(&buf.h);
        struct proc_event ev;
        memcpy(&ev, cn->data, (size_t)cn->len < sizeof ev ? (size_t)cn->len : sizeof ev);
        int k = 0;
        if (ev.what == PROC_EVENT_FORK)
            k = snprintf(out + used, cap - used, "f %d %d\n", ev.event_data.fork.parent_tgid,
                         ev.event_data.fork.child_tgid);
        else if (ev.what == PROC_EVENT_EXEC)
            k = snprintf(out + used, cap - used, "e %d\n", ev.event_data.exec.process_tgid);
        else if (ev.what == PROC_EVENT_EXIT)
            k = snprintf(out + used, cap - used, "x %d %d\n", ev.event_data.exit.parent_tgid,
                         ev.event_data.exit.process_tgid);
        used += (size_t)k;
        ck_assert_uint_lt(used, cap - 64);
        if (ev.what == PROC_EVENT_EXIT && ev.event_data.exit.process_tgid == last &&
            ev.event_data.exit.process_pid == last)
            return;
    }
}

START_TEST(test_kernel_events)
{
    pid_t self = getpid();
    int fd = connector(&self, 1);
    if (fd < 0) {
        check_skip("process connector not readable here (%s): skipped\n", strerror(errno));
        return;
    }
    int go[2], grand[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(grand), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        /* a thread and a child before the filter knows us, then the same after */
        char c;
        for (int round = 0; round < 2; round++) {
            pthread_t t;
            if (pthread_create(&t, NULL, idle, NULL) == 0)
                pthread_join(t, NULL);
            pid_t g = fork();
            if (g == 0)
                _exit(0);
            waitpid(g, NULL, 0);
            if (write(grand[1], &g, sizeof g) != sizeof g || (round == 0 && read(go[0], &c, 1) != 1))
                _exit(1);
        }
        _exit(0);
    }
    pid_t g1, g2;
    ck_assert_int_eq(read(grand[0], &g1, sizeof g1), (ssize_t)sizeof g1);
    pid_t set[] = {child, self};
    ck_assert_int_eq(procfilter_attach(fd, set, 2, 0, 0), 0);
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    ck_assert_int_eq(read(grand[0], &g2, sizeof g2), (ssize_t)sizeof g2);
    int st;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    char got[4096], want[256];
    collect(fd, child, got, sizeof got);
    /* the child's fork (ours) and its end; of the grandchildren only the one forked once the
     * child was in the set; never a thread */
    snprintf(want, sizeof want, "f %d %d\nf %d %d\nx %d %d\nx %d %d\n", self, child, child, g2, child, g2, self, child);
    ck_assert_str_eq(got, want);
    close(fd);
}
END_TEST

START_TEST(test_kernel_takes_the_largest)
{
    static pid_t set[PROCFILTER_MAX_SET];
    for (size_t i = 0; i < PROCFILTER_MAX_SET; i++)
        set[i] = (pid_t)(i * 13 + 1);
    int fd = connector(set, PROCFILTER_MAX_SET);
    if (fd < 0) {
        check_skip("process connector not readable here: skipped\n");
        return;
    }
    ck_assert_int_eq(procfilter_attach(fd, set, PROCFILTER_MAX_SET, 20000, 24096), 0);
    ck_assert_int_eq(procfilter_attach(fd, set, PROCFILTER_MAX_SET + 1, 0, 0), 0);
    close(fd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("procfilter");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_membership_every_size);
    tcase_add_test(tc, test_window);
    tcase_add_test(tc, test_no_set);
    tcase_add_test(tc, test_kernel_events);
    tcase_add_test(tc, test_kernel_takes_the_largest);
    suite_add_tcase(s, tc);
    return check_run(s);
}
