/* cpuprof.c — see cpuprof.h. */
#include "observe/cpuprof.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/util.h"
#include "observe/unwind.h"
#include "observe/perfring.h"

#define RING_PAGES_MAX 64 /* data pages per CPU (perfring.h) */
#define STACK_COPY 8192   /* bytes of user stack copied with each sample, for the CFI unwinder */
/* the user registers sampled (perf_regs.h's x86 numbering: AX..IP, R8..R15) */
#define REGS_MASK 0xff01ffull
#define NREGS 17
#define SPACE_UNTRACKED UINT32_MAX /* a process begun past the cap on address spaces */

struct node_key {
    uint32_t parent, space;
    uint64_t pc;
};

struct pidspace {
    int32_t pid; /* 0: empty slot */
    uint32_t space;
};

/* What the unwinder of an address space needs: its executable mappings, its parent's first. */
struct umap {
    uint64_t start, end, pgoff;
    char *file;
    struct unwind_fileid id;
};
struct uspace {
    struct umap *maps;
    size_t n, cap;
    struct unwinder *uw; /* made at its first sample */
    bool dead;                     /* its process exited: nothing more to unwind */
    char *root;                    /* its process's root directory when not / (a chroot), NULL */
};

struct cpuprof {
    unsigned hz;
    const struct marker_sink *sink;
    uint64_t t0;
    bool kernel; /* samples in the kernel kept */
    struct perfring pr; /* the events and the records of one drain */
    /* stack nodes: id i + 1 is nodes[i]; an open-addressed index of them */
    struct node_key *nodes;
    size_t nnodes, nodes_cap;
    uint32_t *node_index; /* node id, 0: empty */
    size_t index_cap;     /* a power of two */
    size_t nodes_written; /* nodes already in a cpusamples line */
    /* the current address space of each process */
    struct pidspace *spaces;
    size_t spaces_cap, nspaces;
    uint32_t next_space;
    /* threads already named: a set of tids */
    int32_t *named;
    size_t named_cap, nnamed;
    uint64_t samples, dropped, lost, unwound;
    uint64_t untracked; /* address spaces begun past the cap (CPUPROF_MAX_SPACES) */
    uint32_t max_spaces, max_samples, max_threads; /* the caps (test builds may lower them) */
    char error[320]; /* why sampling is unavailable ("": it is not) */
    struct uspace *us; /* by space id */
    size_t nus;
    struct unwind_files *elfs; /* the files all the spaces' unwinders read (made at the first) */
    struct jsonw w, batch;
    size_t batch_samples;
};

static double ms_of(const struct cpuprof *cp, uint64_t ns)
{
    return ((double)ns - (double)cp->t0) / 1e6;
}

int cpuprof_new(unsigned hz, const struct marker_sink *sink, uint64_t t0_ns, struct cpuprof **ret)
{
    struct cpuprof *cp = calloc(1, sizeof *cp);
    if (!cp)
        return -ENOMEM;
    cp->hz = hz ? hz : CPUPROF_DEFAULT_HZ;
    cp->sink = sink;
    cp->t0 = t0_ns;
    perfring_init(&cp->pr);
    cp->next_space = 1;
    cp->max_spaces = CPUPROF_MAX_SPACES;
    cp->max_samples = CPUPROF_MAX_SAMPLES;
    cp->max_threads = CPUPROF_MAX_THREADS;
#ifdef RESMON_TEST_HOOKS
    /* The caps lowered, so that a test can reach them: "SPACES,SAMPLES,THREADS". */
    const char *caps = getenv("RESMON_TEST_CPUPROF_CAPS");
    unsigned a, b, c;
    if (caps && sscanf(caps, "%u,%u,%u", &a, &b, &c) == 3) {
        cp->max_spaces = a;
        cp->max_samples = b;
        cp->max_threads = c;
    }
#endif
    jsonw_init(&cp->w);
    jsonw_init(&cp->batch);
    *ret = cp;
    return 0;
}

const char *cpuprof_error(const struct cpuprof *cp)
{
    return cp && cp->error[0] ? cp->error : "";
}

const char *cpuprof_why(int err)
{
    switch (-err) {
    case EACCES:
    case EPERM:
        return "the kernel refused perf_event_open (perf_event_paranoid, a capability, or a seccomp "
               "profile)";
    case ENOSYS:
        return "perf_event_open is not available (a kernel without perf events, or a seccomp profile)";
    case ENOENT:
    case EOPNOTSUPP:
        return "the kernel has no cpu-clock event";
    case ENOMEM:
        return "no memory for the sample buffers (perf_event_mlock_kb)";
    default:
        return "perf_event_open failed";
    }
}

static void state_line(struct cpuprof *cp)
{
    if (!jsonw_failed(&cp->w))
        marker_state(cp->sink, cp->w.buf, cp->w.len);
}

static void error_line(struct cpuprof *cp, int err)
{
    jsonw_reset(&cp->w);
    jsonw_obj_open(&cp->w);
    jsonw_kv_str(&cp->w, "type", "cpuprofile");
    /* the sysctl that most often says no, as the kernel has it now */
    char level[16] = "";
    int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, level, sizeof level - 1) : -1;
    closep(&fd);
    level[n > 0 ? n : 0] = '\0';
    level[strcspn(level, "\n")] = '\0';
    snprintf(cp->error, sizeof cp->error, "%s: %s%s%s%s", cpuprof_why(err), strerror(-err),
             level[0] ? " (perf_event_paranoid is " : "", level, level[0] ? ")" : "");
    jsonw_kv_str(&cp->w, "error", cp->error);
    jsonw_obj_close(&cp->w);
    state_line(cp);
}

static uint32_t space_of(struct cpuprof *cp, pid_t pid);
static void new_space(struct cpuprof *cp, pid_t pid, uint32_t parent, uint64_t at);
static void read_proc_maps(struct cpuprof *cp, pid_t pid, uint32_t space);
static struct uspace *uspace_of(struct cpuprof *cp, uint32_t space);
static bool name_once(struct cpuprof *cp, pid_t tid);
static void uspace_add(struct cpuprof *cp, uint32_t space, uint64_t start, uint64_t end, uint64_t pgoff,
                       const char *file, const struct unwind_fileid *id);
static void thread_line(struct cpuprof *cp, pid_t pid, pid_t tid, const char *name, uint64_t at);

int cpuprof_start(struct cpuprof *cp, int cgroup_dirfd)
{
    struct perf_event_attr a = {
        .type = PERF_TYPE_SOFTWARE,
        .config = PERF_COUNT_SW_CPU_CLOCK,
        .sample_freq = cp->hz,
        .freq = 1,
        .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
                       PERF_SAMPLE_STACK_USER,
        .sample_regs_user = REGS_MASK,
        .sample_stack_user = STACK_COPY,
        .exclude_hv = 1,
        .mmap = 1,
        .mmap2 = 1,
        .comm = 1,
        .comm_exec = 1,
        .task = 1,
    };
    int r = perfring_open(&cp->pr, &a, cgroup_dirfd, RING_PAGES_MAX);
    if (r) {
        error_line(cp, r);
        return r;
    }
    cp->kernel = !a.exclude_kernel;
    jsonw_reset(&cp->w);
    jsonw_obj_open(&cp->w);
    jsonw_kv_str(&cp->w, "type", "cpuprofile");
    jsonw_kv_uint(&cp->w, "hz", cp->hz);
    jsonw_kv_bool(&cp->w, "kernel", cp->kernel);
    jsonw_kv_str(&cp->w, "follow", cp->pr.cgroup ? "cgroup" : "inherit");
    jsonw_obj_close(&cp->w);
    state_line(cp);
    return 0;
}

int cpuprof_fd(const struct cpuprof *cp)
{
    return cp ? perfring_fd(&cp->pr) : -1;
}

/* ---- address spaces and mappings ---------------------------------------------------------- */

static struct pidspace *pid_slot(struct cpuprof *cp, pid_t pid, bool add)
{
    if (add && (cp->nspaces + 1) * 2 > cp->spaces_cap) {
        size_t cap = cp->spaces_cap ? cp->spaces_cap * 2 : 256;
        struct pidspace *n = calloc(cap, sizeof *n);
        if (!n)
            return NULL;
        for (size_t i = 0; i < cp->spaces_cap; i++)
            if (cp->spaces[i].pid) {
                size_t j = (size_t)cp->spaces[i].pid * 2654435761u & (cap - 1);
                while (n[j].pid)
                    j = (j + 1) & (cap - 1);
                n[j] = cp->spaces[i];
            }
        free(cp->spaces);
        cp->spaces = n;
        cp->spaces_cap = cap;
    }
    if (!cp->spaces_cap)
        return NULL;
    size_t j = (size_t)pid * 2654435761u & (cp->spaces_cap - 1);
    while (cp->spaces[j].pid && cp->spaces[j].pid != pid)
        j = (j + 1) & (cp->spaces_cap - 1);
    if (!cp->spaces[j].pid) {
        if (!add)
            return NULL;
        cp->spaces[j].pid = pid;
        cp->nspaces++;
    }
    return &cp->spaces[j];
}

static uint32_t space_of(struct cpuprof *cp, pid_t pid)
{
    struct pidspace *s = pid_slot(cp, pid, false);
    return s ? s->space : 0;
}

/* The root directory of a process that has one of its own (chroot; NULL: / or gone), read while it
 * lives: the kernel names the files a chrooted process maps from its root, its runtime writes
 * its perf map in its /tmp (the converter reads ROOT/tmp/perf-PID.map). */
static char *root_of(pid_t pid)
{
    char path[64], root[4096];
    snprintf(path, sizeof path, "/proc/%d/root", (int)pid);
    ssize_t n = readlink(path, root, sizeof root - 1);
    if (n <= 1 || root[0] != '/')
        return NULL;
    root[n] = '\0';
    return strdup(root);
}

static void new_space(struct cpuprof *cp, pid_t pid, uint32_t parent, uint64_t at)
{
    struct pidspace *s = pid_slot(cp, pid, true);
    if (!s)
        return;
    if (cp->next_space > cp->max_spaces) {
        /* past the cap: the process is not followed (no maps, threads or samples), counted */
        s->space = SPACE_UNTRACKED;
        cp->untracked++;
        return;
    }
    s->space = cp->next_space++;
    struct uspace *u = uspace_of(cp, s->space); /* before from: it may move the array */
    struct uspace *from = parent && parent < cp->nus ? &cp->us[parent] : NULL;
    char *root = !u ? NULL : from ? (from->root ? strdup(from->root) : NULL) : root_of(pid);
    if (u)
        u->root = root;
    for (size_t i = 0; from && i < from->n; i++) {
        struct umap m = from->maps[i];
        uspace_add(cp, s->space, m.start, m.end, m.pgoff, m.file, &m.id);
        from = &cp->us[parent]; /* uspace_add may move the array */
    }
    jsonw_reset(&cp->w);
    jsonw_obj_open(&cp->w);
    jsonw_kv_str(&cp->w, "type", "cpuspace");
    jsonw_kv_uint(&cp->w, "space", s->space);
    jsonw_kv_int(&cp->w, "pid", pid);
    jsonw_kv_uint(&cp->w, "parent", parent);
    if (root)
        jsonw_kv_str(&cp->w, "root", root);
    jsonw_kv_double(&cp->w, "time", ms_of(cp, at), 3);
    jsonw_obj_close(&cp->w);
    state_line(cp);
}

static struct uspace *uspace_of(struct cpuprof *cp, uint32_t space)
{
    if (!space)
        return NULL;
    if (space >= cp->nus) {
        size_t n = MAX((size_t)space + 1, cp->nus * 2);
        struct uspace *x = realloc(cp->us, n * sizeof *x);
        if (!x)
            return NULL;
        memset(x + cp->nus, 0, (n - cp->nus) * sizeof *x);
        cp->us = x;
        cp->nus = n;
    }
    return &cp->us[space];
}

static void uspace_add(struct cpuprof *cp, uint32_t space, uint64_t start, uint64_t end, uint64_t pgoff,
                       const char *file, const struct unwind_fileid *id)
{
    struct uspace *u = uspace_of(cp, space);
    char *f = u ? strdup(file) : NULL;
    if (!f || array_grow(&u->maps, &u->cap, u->n, sizeof *u->maps) < 0) {
        free(f);
        return;
    }
    u->maps[u->n++] = (struct umap){start, end, pgoff, f, *id};
    unwinder_map(u->uw, start, end, pgoff, f, id);
}

static void uspace_release(struct uspace *u)
{
    for (size_t i = 0; i < u->n; i++)
        free(u->maps[i].file);
    free(u->maps);
    unwinder_free(u->uw);
    free(u->root);
    *u = (struct uspace){.dead = true};
}

static void hex_kv(struct jsonw *w, const char *key, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    jsonw_kv_str(w, key, b);
}

/* An executable mapping of space; from_kernel: its path is the kernel's, as its process sees it
 * (under its root), not as /proc shows it to resmon-run. */
static void map_line(struct cpuprof *cp, uint32_t space, uint64_t start, uint64_t end, uint64_t pgoff,
                     const char *file, const struct unwind_fileid *id, bool from_kernel)
{
    if (!space || space == SPACE_UNTRACKED || file[0] != '/' || !strncmp(file, "//anon", 6) ||
        !strncmp(file, "/memfd:", 7))
        return; /* [vdso], [vsyscall], anonymous code (a JIT's: //anon): no file to name it from */
    const char *root = from_kernel && space < cp->nus ? cp->us[space].root : NULL;
    char path[4096 * 2];
    if (root && snprintf(path, sizeof path, "%s%s", root, file) < (int)sizeof path)
        file = path;
    jsonw_reset(&cp->w);
    jsonw_obj_open(&cp->w);
    jsonw_kv_str(&cp->w, "type", "cpumap");
    jsonw_kv_uint(&cp->w, "space", space);
    hex_kv(&cp->w, "start", start);
    hex_kv(&cp->w, "end", end);
    hex_kv(&cp->w, "pgoff", pgoff);
    jsonw_kv_str(&cp->w, "file", file);
    jsonw_obj_close(&cp->w);
    state_line(cp);
    uspace_add(cp, space, start, end, pgoff, file, id);
}

static void read_proc_maps(struct cpuprof *cp, pid_t pid, uint32_t space)
{
    char path[64], line[4096 + 128];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long long start, end, off, ino;
        unsigned maj, min;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min, &ino, &pos) < 7 ||
            !pos || perms[2] != 'x')
            continue;
        char *file = line + pos;
        file[strcspn(file, "\n")] = '\0';
        map_line(cp, space, start, end, off, file, &(struct unwind_fileid){maj, min, ino}, false);
    }
    fclose(f);
}

/* ---- threads ------------------------------------------------------------------------------ */

/* Remember tid as named; false when it was already. */
static bool name_once(struct cpuprof *cp, pid_t tid)
{
    if (cp->nnamed >= cp->max_threads)
        return false; /* past the cap: its samples stay, under its tid, without a name line */
    if ((cp->nnamed + 1) * 2 > cp->named_cap) {
        size_t cap = cp->named_cap ? cp->named_cap * 2 : 256;
        int32_t *n = calloc(cap, sizeof *n);
        if (!n)
            return false;
        for (size_t i = 0; i < cp->named_cap; i++)
            if (cp->named[i]) {
                size_t j = (size_t)cp->named[i] * 2654435761u & (cap - 1);
                while (n[j])
                    j = (j + 1) & (cap - 1);
                n[j] = cp->named[i];
            }
        free(cp->named);
        cp->named = n;
        cp->named_cap = cap;
    }
    size_t j = (size_t)tid * 2654435761u & (cp->named_cap - 1);
    while (cp->named[j] && cp->named[j] != tid)
        j = (j + 1) & (cp->named_cap - 1);
    if (cp->named[j])
        return false;
    cp->named[j] = tid;
    cp->nnamed++;
    return true;
}

/* The thread's name line: name from the kernel's record (NULL: read from /proc). */
static void thread_line(struct cpuprof *cp, pid_t pid, pid_t tid, const char *name, uint64_t at)
{
    char path[64], comm[64] = "", cmd[512];
    if (!name) {
        snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, comm, sizeof comm - 1) : -1;
        closep(&fd);
        comm[n > 0 ? n : 0] = '\0';
        comm[strcspn(comm, "\n")] = '\0';
        name = comm;
    }
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, cmd, sizeof cmd - 1) : -1;
    closep(&fd);
    while (n > 0 && cmd[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    if (!name[0] && n <= 0)
        return; /* gone already: the converter names it after its parent (a fork copies both) */
    jsonw_reset(&cp->w);
    jsonw_obj_open(&cp->w);
    jsonw_kv_str(&cp->w, "type", "cputhread");
    jsonw_kv_int(&cp->w, "pid", pid);
    jsonw_kv_int(&cp->w, "tid", tid);
    if (name[0])
        jsonw_kv_str(&cp->w, "name", name);
    if (n > 0)
        jsonw_kv_strn(&cp->w, "process", cmd, (size_t)n);
    jsonw_kv_double(&cp->w, "time", ms_of(cp, at), 3);
    jsonw_obj_close(&cp->w);
    state_line(cp);
}

/* ---- stacks ------------------------------------------------------------------------------- */

static size_t node_hash(const struct node_key *k)
{
    uint64_t h = k->pc * 0x9e3779b97f4a7c15ull ^ ((uint64_t)k->parent << 32 | k->space);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return (size_t)(h ^ h >> 32);
}

/* The node of pc under parent in space: its id, 0 when full or out of memory. */
static uint32_t node_of(struct cpuprof *cp, uint32_t parent, uint32_t space, uint64_t pc)
{
    struct node_key k = {parent, space, pc};
    if ((cp->nnodes + 1) * 2 > cp->index_cap) {
        if (cp->nnodes >= CPUPROF_MAX_NODES)
            goto find_only;
        size_t cap = cp->index_cap ? cp->index_cap * 2 : 4096;
        uint32_t *n = calloc(cap, sizeof *n);
        if (!n)
            goto find_only;
        for (size_t i = 0; i < cp->nnodes; i++) {
            size_t j = node_hash(&cp->nodes[i]) & (cap - 1);
            while (n[j])
                j = (j + 1) & (cap - 1);
            n[j] = (uint32_t)i + 1;
        }
        free(cp->node_index);
        cp->node_index = n;
        cp->index_cap = cap;
    }
find_only:
    if (!cp->index_cap)
        return 0;
    size_t j = node_hash(&k) & (cp->index_cap - 1);
    for (uint32_t id; (id = cp->node_index[j]); j = (j + 1) & (cp->index_cap - 1)) {
        const struct node_key *x = &cp->nodes[id - 1];
        if (x->pc == pc && x->parent == parent && x->space == space)
            return id;
    }
    if ((cp->nnodes + 1) * 2 > cp->index_cap || array_grow(&cp->nodes, &cp->nodes_cap, cp->nnodes, sizeof *cp->nodes) < 0)
        return 0;
    cp->nodes[cp->nnodes++] = k;
    return cp->node_index[j] = (uint32_t)cp->nnodes;
}

static void batch_begin(struct cpuprof *cp)
{
    jsonw_reset(&cp->batch);
    cp->batch_samples = 0;
}

/* A sample: its stack's innermost node added to the batch. */
/* A sample's copy of the user registers (DWARF order) and stack, NULL: none. */
struct ustack {
    uint64_t regs[NREGS];
    const void *stack;
    size_t len;
};

/* The frames the CFI unwinder finds in the sample's copied stack (0: none, or no unwinder). */
static size_t unwind(struct cpuprof *cp, uint32_t space, pid_t pid, pid_t tid, const struct ustack *st, uint64_t *pcs,
                     size_t max)
{
    struct uspace *u = st && st->len ? uspace_of(cp, space) : NULL;
    if (!u || u->dead)
        return 0;
    if (!u->uw) {
        if (!cp->elfs && unwind_files_new(&cp->elfs) < 0)
            return 0;
        if (unwinder_new(cp->elfs, &u->uw) < 0)
            return 0;
        for (size_t i = 0; i < u->n; i++)
            unwinder_map(u->uw, u->maps[i].start, u->maps[i].end, u->maps[i].pgoff, u->maps[i].file,
                                   &u->maps[i].id);
    }
    return unwinder_walk(u->uw, pid, tid, st->regs, st->stack, st->len, pcs, max);
}

static void take_sample(struct cpuprof *cp, pid_t pid, pid_t tid, uint64_t time, const uint64_t *ips, uint64_t n,
                        const struct ustack *st)
{
    if (pid <= 0)
        return; /* the idle task: not ours */
    if (cp->samples >= cp->max_samples) {
        cp->dropped++;
        return;
    }
    uint32_t space = space_of(cp, pid);
    if (!space) {
        /* a process started before its events (or whose fork record was lost): from /proc */
        new_space(cp, pid, 0, time);
        space = space_of(cp, pid);
        if (space && space != SPACE_UNTRACKED)
            read_proc_maps(cp, pid, space);
    }
    if (!space || space == SPACE_UNTRACKED) {
        cp->dropped++;
        return;
    }
    if (name_once(cp, tid))
        thread_line(cp, pid, tid, NULL, time);
    /* the frames innermost first: the kernel's own (where allowed), then the user's: its walk
     * along frame pointers (context markers, PERF_CONTEXT_*, skipped; return addresses less one,
     * so that they name the call), unless the CFI unwinder finds as much of the stack or more
     * (code without frame pointers: a walk along them goes astray at once, and the CFI's, as long,
     * may end in JIT code named by its perf map). Kernel frames are of space 0 (profile_cpu.h
     * names them). */
    uint64_t kfp[PERF_MAX_STACK_DEPTH], fp[PERF_MAX_STACK_DEPTH], cfi[PERF_MAX_STACK_DEPTH];
    size_t nk = 0, nu = 0;
    bool in_kernel = false;
    for (uint64_t i = 0; i < n; i++) {
        if (ips[i] >= (uint64_t)PERF_CONTEXT_MAX) {
            in_kernel = ips[i] == (uint64_t)PERF_CONTEXT_KERNEL;
            continue;
        }
        if (!ips[i])
            continue;
        if (in_kernel && nk < ARRAY_SIZE(kfp)) {
            kfp[nk] = ips[i] - (nk ? 1 : 0);
            nk++;
        } else if (!in_kernel && nu < ARRAY_SIZE(fp)) {
            fp[nu] = ips[i] - (nu ? 1 : 0);
            nu++;
        }
    }
    const uint64_t *pcs = fp;
    size_t nc = unwind(cp, space, pid, tid, st, cfi, ARRAY_SIZE(cfi));
    if (nc && nc >= nu) {
        pcs = cfi;
        nu = nc;
        cp->unwound++;
    }
    uint32_t node = 0;
    for (size_t k = nu + nk; k-- > 0;) {
        bool kernel = k < nk;
        uint32_t next = node_of(cp, node, kernel ? 0 : space, kernel ? kfp[k] : pcs[k - nk]);
        if (!next)
            break; /* the nodes are full: the stack as far as it is known */
        node = next;
    }
    if (!node) {
        cp->dropped++;
        return;
    }
    cp->samples++;
    char b[96];
    char ms[JSONW_FIXED_MAX];
    int mlen = jsonw_fixed(ms_of(cp, time), 3, ms);
    int len = snprintf(b, sizeof b, "%s[%d,%d,%.*s,%u]", cp->batch_samples ? "," : "", (int)pid, (int)tid, mlen, ms,
                       node);
    jsonw_append(&cp->batch, b, (size_t)len);
    cp->batch_samples++;
}

/* The batch as one line: the nodes not yet written, then its samples. */
static void batch_end(struct cpuprof *cp)
{
    if (!cp->batch_samples)
        return;
    jsonw_reset(&cp->w);
    jsonw_appendf(&cp->w, "{\"type\":\"cpusamples\",\"first\":%zu,\"nodes\":[", cp->nodes_written + 1);
    for (size_t i = cp->nodes_written; i < cp->nnodes; i++) {
        char b[64];
        int len = snprintf(b, sizeof b, "%s[%u,%u,\"0x%llx\"]", i > cp->nodes_written ? "," : "",
                           cp->nodes[i].parent, cp->nodes[i].space, (unsigned long long)cp->nodes[i].pc);
        jsonw_append(&cp->w, b, (size_t)len);
    }
    jsonw_append(&cp->w, "],\"samples\":[", 13);
    jsonw_append(&cp->w, cp->batch.buf, cp->batch.len);
    jsonw_append(&cp->w, "]}", 2);
    if (!jsonw_failed(&cp->w) && !jsonw_failed(&cp->batch)) {
        marker_state(cp->sink, cp->w.buf, cp->w.len);
        cp->nodes_written = cp->nnodes;
    }
    batch_begin(cp);
}

/* ---- reading the rings -------------------------------------------------------------------- */

static void take_record(struct cpuprof *cp, const char *p, size_t len, uint64_t time)
{
    struct perf_event_header h;
    memcpy(&h, p, sizeof h);
    const char *b = p + sizeof h;
    size_t n = len - sizeof h;
    uint32_t u[4];
    switch (h.type) {
    case PERF_RECORD_SAMPLE: {
        uint64_t nr;
        if (n < 24)
            return;
        memcpy(u, b, 8);
        memcpy(&nr, b + 16, 8);
        if (nr > (n - 24) / 8)
            return;
        const char *q = b + 24 + nr * 8, *e = b + n;
        uint64_t ips[PERF_MAX_STACK_DEPTH + 8];
        nr = MIN(nr, (uint64_t)ARRAY_SIZE(ips));
        memcpy(ips, b + 24, nr * 8);
        /* then the user registers (abi, then one per bit of the mask) and the stack copy */
        struct ustack st = {{0}}, *stp = NULL;
        uint64_t abi = 0, size = 0;
        if (e - q >= 8)
            memcpy(&abi, q, 8), q += 8;
        if (abi && e - q >= 8 * NREGS) {
            uint64_t r[NREGS]; /* AX BX CX DX SI DI BP SP IP R8..R15 */
            memcpy(r, q, sizeof r);
            q += sizeof r;
            static const int dwarf_of[NREGS] = {0, 3, 2, 1, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15};
            for (int i = 0; i < NREGS; i++)
                st.regs[dwarf_of[i]] = r[i];
            if (e - q >= 8)
                memcpy(&size, q, 8), q += 8;
            if (size && (uint64_t)(e - q) >= size + 8) {
                uint64_t dyn;
                memcpy(&dyn, q + size, 8);
                st.stack = q;
                st.len = (size_t)MIN(size, dyn);
                stp = &st;
            }
        }
        take_sample(cp, (pid_t)u[0], (pid_t)u[1], time, ips, nr, stp);
        break;
    }
    case PERF_RECORD_MMAP2: {
        /* pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot, flags, filename */
        if (n < 8 + 24 + 8 + 16 + 8 + 1)
            return;
        uint64_t v[3];
        memcpy(u, b, 8);
        memcpy(v, b + 8, 24);
        const char *file = b + 8 + 24 + 8 + 16 + 8;
        if (!memchr(file, '\0', n - (size_t)(file - b)))
            return;
        /* the inode, unless the record carries a build id in its place */
        struct unwind_fileid id = {0};
#ifdef PERF_RECORD_MISC_MMAP_BUILD_ID
        if (!(h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
#endif
        {
            memcpy(&id.maj, b + 32, 4);
            memcpy(&id.min, b + 36, 4);
            memcpy(&id.ino, b + 40, 8);
        }
        map_line(cp, space_of(cp, (pid_t)u[0]), v[0], v[0] + v[1], v[2], file, &id, true);
        break;
    }
    case PERF_RECORD_MMAP: {
        if (n < 8 + 24 + 1)
            return;
        uint64_t v[3];
        memcpy(u, b, 8);
        memcpy(v, b + 8, 24);
        const char *file = b + 32;
        if (!memchr(file, '\0', n - 32))
            return;
        map_line(cp, space_of(cp, (pid_t)u[0]), v[0], v[0] + v[1], v[2], file, &(struct unwind_fileid){0}, true);
        break;
    }
    case PERF_RECORD_COMM: {
        if (n < 9)
            return;
        memcpy(u, b, 8);
        const char *comm = b + 8;
        if (!memchr(comm, '\0', n - 8))
            return;
        if (h.misc & PERF_RECORD_MISC_COMM_EXEC && u[0] == u[1])
            new_space(cp, (pid_t)u[0], 0, time);
        if (space_of(cp, (pid_t)u[0]) == SPACE_UNTRACKED)
            break;
        name_once(cp, (pid_t)u[1]);
        thread_line(cp, (pid_t)u[0], (pid_t)u[1], comm, time);
        break;
    }
    case PERF_RECORD_FORK:
        if (n < 16)
            return;
        memcpy(u, b, 16); /* pid, ppid, tid, ptid */
        if (u[0] != u[1])
            new_space(cp, (pid_t)u[0], space_of(cp, (pid_t)u[1]), time);
        break;
    case PERF_RECORD_EXIT:
        if (n >= 16) {
            memcpy(u, b, 16); /* pid, ppid, tid, ptid */
            uint32_t space = u[0] == u[2] ? space_of(cp, (pid_t)u[0]) : 0;
            if (space && space < cp->nus)
                uspace_release(&cp->us[space]);
        }
        break;
    case PERF_RECORD_LOST: {
        uint64_t v[2];
        if (n >= 16) {
            memcpy(v, b, 16);
            cp->lost += v[1];
        }
        break;
    }
    default:
        break;
    }
}

void cpuprof_drain(struct cpuprof *cp)
{
    if (!cp || !perfring_read(&cp->pr, true))
        return;
    batch_begin(cp);
    for (size_t i = 0; i < cp->pr.nrecs; i++) {
        const struct perfring_rec *r = &cp->pr.recs[i];
        const char *p = cp->pr.buf + r->off;
        struct perf_event_header h;
        memcpy(&h, p, sizeof h);
        if (h.type != PERF_RECORD_SAMPLE)
            batch_end(cp); /* a space or a map the next samples need comes first */
        take_record(cp, p, r->len, r->time);
    }
    batch_end(cp);
}

void cpuprof_stop(struct cpuprof *cp)
{
    if (!cp || !cp->pr.nrings)
        return;
    cpuprof_drain(cp);
    perfring_close(&cp->pr);
    jsonw_reset(&cp->w);
    jsonw_obj_open(&cp->w);
    jsonw_kv_str(&cp->w, "type", "cpuend");
    jsonw_kv_uint(&cp->w, "samples", cp->samples);
    jsonw_kv_uint(&cp->w, "dropped", cp->dropped);
    jsonw_kv_uint(&cp->w, "lost", cp->lost);
    if (cp->untracked)
        jsonw_kv_uint(&cp->w, "untracked", cp->untracked);
    jsonw_obj_close(&cp->w);
    state_line(cp);
}

void cpuprof_counts(const struct cpuprof *cp, uint64_t *samples, uint64_t *dropped, uint64_t *untracked)
{
    *samples = cp ? cp->samples : 0;
    *dropped = cp ? cp->dropped : 0;
    *untracked = cp ? cp->untracked : 0;
}

void cpuprof_free(struct cpuprof *cp)
{
    if (!cp)
        return;
    perfring_release(&cp->pr);
    free(cp->nodes);
    free(cp->node_index);
    free(cp->spaces);
    free(cp->named);
    for (size_t i = 0; i < cp->nus; i++)
        uspace_release(&cp->us[i]);
    free(cp->us);
    unwind_files_free(cp->elfs);
    jsonw_release(&cp->w);
    jsonw_release(&cp->batch);
    free(cp);
}
