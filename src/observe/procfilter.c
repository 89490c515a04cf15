/* procfilter.c — see procfilter.h.
 *
 * The program (classic BPF jumps only forward):
 *
 *     ld what; one of fork / exec / exit, else drop
 *     fork:  drop a thread (child_pid != child_tgid); A = parent_tgid; ja SET
 *     exec:  A = process_tgid; ja SET
 *     exit:  drop a thread; A = parent_tgid; accept when 0 (unknown, below); ja SET
 *     SET:   A to host order (classic BPF loads big-endian); accept when A is in the window
 *            [lo, hi) or in the set (a binary search over the sorted tgids; leaves of a few
 *            values, each "jeq v; ret accept"), else drop
 *
 * An exit is tested by its parent: every process of the tree has a parent in the tree or is
 * resmon-run's (the subreaper takes the orphans), and the parent is in the set before a child
 * that has just been forked is. The kernel reports parent 0 when the parent had already reaped
 * the process by the time its exit was reported (seen about once in 2000 exits of a busy
 * parent): such exits all pass, to be matched by pid.
 * Conditional jumps reach 255 instructions at most, so every longer jump is a `ja` (32-bit
 * offset) placed where a short one can reach it.
 */
#include "observe/procfilter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define LEAF 4
#define ACCEPT 0xffffffffu

/* Offsets of the fields in the message the filter sees. */
#define BASE ((uint32_t)(NLMSG_HDRLEN + sizeof(struct cn_msg)))
#define DATA (BASE + (uint32_t)offsetof(struct proc_event, event_data))
#define OFF_WHAT (BASE + (uint32_t)offsetof(struct proc_event, what))
#define FORK_PARENT_TGID (DATA + (uint32_t)offsetof(struct fork_proc_event, parent_tgid))
#define FORK_CHILD_PID (DATA + (uint32_t)offsetof(struct fork_proc_event, child_pid))
#define FORK_CHILD_TGID (DATA + (uint32_t)offsetof(struct fork_proc_event, child_tgid))
#define EXEC_TGID (DATA + (uint32_t)offsetof(struct exec_proc_event, process_tgid))
#define EXIT_PID (DATA + (uint32_t)offsetof(struct exit_proc_event, process_pid))
#define EXIT_TGID (DATA + (uint32_t)offsetof(struct exit_proc_event, process_tgid))
#define EXIT_PARENT_TGID (DATA + (uint32_t)offsetof(struct exit_proc_event, parent_tgid))

/* A word of the message as BPF_LD|BPF_W|BPF_ABS sees it: big-endian. */
static uint32_t as_loaded(uint32_t host) { return htonl(host); }

#define LITTLE_ENDIAN_HOST (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

/* The program being written into p[0..cap) (p NULL: only counted); n counts on past cap, so
 * that a program too long for the room is told by its length. */
struct emit {
    struct sock_filter *p;
    size_t n, cap;
};

static size_t put(struct emit *e, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
    if (e->p && e->n < e->cap)
        e->p[e->n] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
    return e->n++;
}

static void op(struct emit *e, uint16_t code, uint32_t k) { put(e, code, 0, 0, k); }

/* M[2] |= ((M[1] >> rsh) & mask) << lsh, left in A too. */
static void or_bits(struct emit *e, uint32_t rsh, uint32_t mask, uint32_t lsh)
{
    op(e, BPF_LD | BPF_MEM, 1);
    if (rsh)
        op(e, BPF_ALU | BPF_RSH | BPF_K, rsh);
    if (mask != 0xffffffffu)
        op(e, BPF_ALU | BPF_AND | BPF_K, mask);
    if (lsh)
        op(e, BPF_ALU | BPF_LSH | BPF_K, lsh);
    op(e, BPF_MISC | BPF_TAX, 0);
    op(e, BPF_LD | BPF_MEM, 2);
    op(e, BPF_ALU | BPF_OR | BPF_X, 0);
    op(e, BPF_ST, 2);
}

/* A = the byte swap of A, in scratch words 1 (the value) and 2 (the result so far): with the
 * bytes of the loaded word p0 p1 p2 p3, the host value is p3 p2 p1 p0. */
static void swap_a(struct emit *e)
{
    op(e, BPF_ST, 1);
    op(e, BPF_ALU | BPF_LSH | BPF_K, 24); /* p3 to the top */
    op(e, BPF_ST, 2);
    or_bits(e, 0, 0xff00, 8);  /* p2 */
    or_bits(e, 8, 0xff00, 0);  /* p1 */
    or_bits(e, 24, 0xffffffffu, 0); /* p0 */
}

/* Point the ja at index at to target. */
static void fix_ja(struct emit *e, size_t at, size_t target)
{
    if (e->p && at < e->cap)
        e->p[at].k = (uint32_t)(target - at - 1);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The search over v[lo, hi): accepts on a match; a miss jumps to the drop at the end (its ja
 * slots, to be fixed, are collected in misses). */
static void search(struct emit *e, const uint32_t *v, size_t lo, size_t hi, size_t *misses, size_t *nmiss)
{
    if (hi - lo <= LEAF) {
        for (size_t i = lo; i < hi; i++) {
            put(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, v[i]);
            put(e, BPF_RET | BPF_K, 0, 0, ACCEPT);
        }
        misses[(*nmiss)++] = put(e, BPF_JMP | BPF_JA, 0, 0, 0);
        return;
    }
    size_t mid = lo + (hi - lo) / 2; /* left: v[lo, mid), right: v[mid, hi) */
    put(e, BPF_JMP | BPF_JGE | BPF_K, 0, 1, v[mid]);
    size_t to_right = put(e, BPF_JMP | BPF_JA, 0, 0, 0);
    search(e, v, lo, mid, misses, nmiss);
    fix_ja(e, to_right, e->n);
    search(e, v, mid, hi, misses, nmiss);
}

/* "drop a thread": pid_off and tgid_off must hold the same id (jumps over the drop when they do) */
static void process_only(struct emit *e, uint32_t pid_off, uint32_t tgid_off)
{
    put(e, BPF_LD | BPF_W | BPF_ABS, 0, 0, pid_off);
    put(e, BPF_ST, 0, 0, 0);
    put(e, BPF_LD | BPF_W | BPF_ABS, 0, 0, tgid_off);
    put(e, BPF_LDX | BPF_W | BPF_MEM, 0, 0, 0);
    put(e, BPF_JMP | BPF_JEQ | BPF_X, 1, 0, 0);
    put(e, BPF_RET | BPF_K, 0, 0, 0);
}

static size_t build(const uint32_t *v, size_t n, uint32_t lo, uint32_t hi, struct sock_filter *prog, size_t cap,
                    size_t *misses)
{
    struct emit e = {prog, 0, cap};
    size_t nmiss = 0;
    put(&e, BPF_LD | BPF_W | BPF_ABS, 0, 0, OFF_WHAT);
    size_t j_fork = put(&e, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, as_loaded(PROC_EVENT_FORK));
    size_t j_exec = put(&e, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, as_loaded(PROC_EVENT_EXEC));
    size_t j_exit = put(&e, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, as_loaded(PROC_EVENT_EXIT));
    size_t drop = put(&e, BPF_RET | BPF_K, 0, 0, 0);
    size_t to_set[3];

    size_t fork_at = e.n;
    process_only(&e, FORK_CHILD_PID, FORK_CHILD_TGID);
    put(&e, BPF_LD | BPF_W | BPF_ABS, 0, 0, FORK_PARENT_TGID);
    to_set[0] = put(&e, BPF_JMP | BPF_JA, 0, 0, 0);

    size_t exec_at = e.n;
    put(&e, BPF_LD | BPF_W | BPF_ABS, 0, 0, EXEC_TGID);
    to_set[1] = put(&e, BPF_JMP | BPF_JA, 0, 0, 0);

    size_t exit_at = e.n;
    process_only(&e, EXIT_PID, EXIT_TGID);
    put(&e, BPF_LD | BPF_W | BPF_ABS, 0, 0, EXIT_PARENT_TGID);
    /* parent 0: the kernel could not tell (the process was reaped as its exit was reported) */
    put(&e, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
    put(&e, BPF_RET | BPF_K, 0, 0, ACCEPT);
    to_set[2] = put(&e, BPF_JMP | BPF_JA, 0, 0, 0);

    size_t set_at = e.n;
    if (n == SIZE_MAX) {
        put(&e, BPF_RET | BPF_K, 0, 0, ACCEPT); /* no set: threads and other kinds only */
    } else {
        if (LITTLE_ENDIAN_HOST)
            swap_a(&e);
        if (lo < hi) {
            /* lo <= A < hi: accept; else on to the set */
            put(&e, BPF_JMP | BPF_JGE | BPF_K, 0, 2, lo);
            put(&e, BPF_JMP | BPF_JGE | BPF_K, 1, 0, hi);
            put(&e, BPF_RET | BPF_K, 0, 0, ACCEPT);
        }
        if (n)
            search(&e, v, 0, n, misses, &nmiss);
    }
    size_t miss = put(&e, BPF_RET | BPF_K, 0, 0, 0);
    if (prog && e.n <= cap) {
        prog[j_fork].jt = (uint8_t)(fork_at - j_fork - 1);
        prog[j_exec].jt = (uint8_t)(exec_at - j_exec - 1);
        prog[j_exit].jt = (uint8_t)(exit_at - j_exit - 1);
        prog[j_exit].jf = (uint8_t)(drop - j_exit - 1);
        for (size_t i = 0; i < 3; i++)
            fix_ja(&e, to_set[i], set_at);
        for (size_t i = 0; i < nmiss; i++)
            fix_ja(&e, misses[i], miss);
    }
    return e.n;
}

/* The program for n tgids (past the bound: no set) into prog[0..cap) (NULL: counted only); its
 * length, which is past cap when it did not fit. The shape depends on n and on whether there is
 * a window only. */
static size_t build_for(const pid_t *set, size_t n, pid_t lo, pid_t hi, struct sock_filter *prog, size_t cap)
{
    if (n > PROCFILTER_MAX_SET)
        n = SIZE_MAX;
    size_t m = n == SIZE_MAX ? 0 : n;
    uint32_t *v = calloc(m ? m : 1, sizeof *v);
    size_t *misses = malloc((m + 1) * sizeof *misses); /* one miss a leaf, a leaf holds one at least */
    size_t k = 0;
    if (v && misses) {
        for (size_t i = 0; set && i < m; i++)
            v[i] = (uint32_t)set[i];
        qsort(v, m, sizeof *v, cmp_u32);
        k = build(v, n, (uint32_t)lo, (uint32_t)hi, prog, cap, misses);
    }
    free(v);
    free(misses);
    return k;
}

size_t procfilter_size(size_t n, bool window)
{
    return build_for(NULL, n, 0, window ? 1 : 0, NULL, 0);
}

size_t procfilter_build(const pid_t *set, size_t n, pid_t lo, pid_t hi, struct sock_filter *prog)
{
    return build_for(set, n, lo, hi, prog, SIZE_MAX);
}

int procfilter_attach(int fd, const pid_t *set, size_t n, pid_t lo, pid_t hi)
{
    /* One pass, into room for the longest program the kernel takes. */
    struct sock_filter *prog = calloc(BPF_MAXINSNS, sizeof *prog);
    if (!prog)
        return -ENOMEM;
    size_t k = build_for(set, n, lo, hi, prog, BPF_MAXINSNS);
    struct sock_fprog fp = {.len = (unsigned short)k, .filter = prog};
    int r = !k || k > BPF_MAXINSNS                                          ? -E2BIG
            : setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof fp) == 0 ? 0
                                                                                : -errno;
    free(prog);
    return r;
}
