/* profile_cpu.c — see profile_cpu.h. */
#include "profile/profile_cpu.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/markers.h"
#include "base/util.h"
#include "observe/forensics.h"
#include "profile/profile_stacks.h"

/* A file mapped at start (where its offset 0 would be: see take_map) to end. */
struct map {
    uint64_t start, end;
    uint32_t file; /* pcpu.files id */
};

struct space {
    int pid;
    uint32_t parent;
    char *root;       /* its process's root directory when not / (a chroot), NULL */
    struct map *maps; /* its own, in the order recorded */
    size_t nmaps, maps_cap;
    struct map *all;  /* with its ancestors', sorted, built when first needed (all_maps) */
    size_t nall;
    bool built;
};

struct node {
    uint32_t parent, space;
    uint64_t pc;
};

struct sample {
    double time;
    uint32_t node;
};

struct thread {
    int pid, tid;
    char *name, *process;
    struct sample *s;
    size_t n, cap;
};

/* A string table with an open-addressed index (names, libraries: one entry per distinct one). */
struct strtab {
    char **s;
    size_t n, cap;
    uint32_t *index; /* id + 1, 0 empty */
    size_t icap;
};

/* A distinct place of code, (file, offset in it) or (0, address) outside any file, and what it
 * was named: the symbolisation cache. */
struct sym {
    uint32_t file; /* pcpu.files id + 1, 0: none */
    uint64_t pc;
    uint32_t name, lib; /* strtab ids; lib UINT32_MAX: none */
};

struct pcpu {
    bool started, failed_start;
    char *error;
    char *follow; /* how the tree was followed ("cgroup", "inherit"; cpuprof.h) */
    unsigned hz;
    uint64_t samples_end, dropped, lost, untracked;
    bool ended;
    struct space *spaces; /* by id (0 unused) */
    size_t nspaces, spaces_cap;
    struct node *nodes;   /* id i + 1 */
    size_t nnodes, nodes_cap;
    struct thread *threads;
    size_t nthreads, threads_cap, last_thread;
    uint64_t nsamples;
    /* built at write time */
    struct strtab files;              /* the mapped files' paths */
    struct perfmap *perfmaps;         /* JIT code, by process (jit_of) */
    struct ksym *ksyms;               /* kernel code (kernel_name) */
    size_t nksyms;
    bool ksyms_read;
    uint32_t kernel_file;             /* the files id that keys kernel places */
    size_t nperfmaps, perfmaps_cap;
    struct forensics_syms **fsyms;    /* by file id: its symbols, opened when first needed */
    bool *ftried;
    size_t nfsyms;
    struct strtab strs;
    struct sym *syms;
    uint32_t *sym_index;
    size_t nsyms, syms_cap, sym_icap;
    uint32_t *node_sym; /* per node: its sym + 1, 0 not yet */
    size_t node_sym_len;
};

bool pcpu_type(const char *t, size_t n)
{
    static const char *const types[] = {"\"cpuprofile\"", "\"cpuspace\"", "\"cpumap\"",
                                        "\"cputhread\"",  "\"cpusamples\"", "\"cpuend\""};
    for (size_t i = 0; i < ARRAY_SIZE(types); i++)
        if (n == strlen(types[i]) && memcmp(t, types[i], n) == 0)
            return true;
    return false;
}

static double num(const cJSON *o, const char *key, double dflt)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : dflt;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static bool hex(const cJSON *x, uint64_t *ret)
{
    if (!cJSON_IsString(x))
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(x->valuestring, &end, 16);
    if (errno || end == x->valuestring || *end)
        return false;
    *ret = v;
    return true;
}

static uint32_t intern(struct strtab *t, char *s);

static struct space *space_at(struct pcpu *pc, double id, bool add)
{
    if (!(id >= 1 && id < 1e8))
        return NULL;
    size_t i = (size_t)id;
    if (i >= pc->nspaces) {
        if (!add || array_reserve(&pc->spaces, &pc->spaces_cap, i + 1, sizeof *pc->spaces) < 0)
            return NULL;
        memset(pc->spaces + pc->nspaces, 0, (i + 1 - pc->nspaces) * sizeof *pc->spaces);
        pc->nspaces = i + 1;
    }
    return &pc->spaces[i];
}

static struct thread *thread_of(struct pcpu *pc, int pid, int tid)
{
    /* the last one asked first: a batch holds runs of one thread's samples */
    size_t last = pc->last_thread;
    if (last < pc->nthreads && pc->threads[last].tid == tid && pc->threads[last].pid == pid)
        return &pc->threads[last];
    for (size_t i = pc->nthreads; i-- > 0;)
        if (pc->threads[i].tid == tid && pc->threads[i].pid == pid)
            return &pc->threads[pc->last_thread = i];
    if (array_grow(&pc->threads, &pc->threads_cap, pc->nthreads, sizeof *pc->threads) < 0)
        return NULL;
    pc->threads[pc->nthreads] = (struct thread){.pid = pid, .tid = tid};
    return &pc->threads[pc->last_thread = pc->nthreads++];
}

static void set_str(char **dst, const char *s)
{
    if (!s)
        return;
    char *d = strdup(s);
    if (d) {
        free(*dst);
        *dst = d;
    }
}

static int take_samples(struct pcpu *pc, const cJSON *o)
{
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(o, "nodes");
    const cJSON *samples = cJSON_GetObjectItemCaseSensitive(o, "samples");
    double first = num(o, "first", (double)pc->nnodes + 1);
    if (!cJSON_IsArray(nodes) || !cJSON_IsArray(samples) || first < 1 || first > 1e9)
        return 0;
    /* a line lost before this one: its nodes are unknown (pc 0, named as such) */
    while (pc->nnodes + 1 < (size_t)first) {
        if (array_grow(&pc->nodes, &pc->nodes_cap, pc->nnodes, sizeof *pc->nodes) < 0)
            return -ENOMEM;
        pc->nodes[pc->nnodes++] = (struct node){0, 0, 0};
    }
    size_t base = (size_t)first - 1;
    const cJSON *x;
    size_t k = 0;
    cJSON_ArrayForEach(x, nodes) {
        double parent, space;
        const cJSON *p0 = cJSON_GetArrayItem(x, 0), *s0 = cJSON_GetArrayItem(x, 1);
        parent = cJSON_IsNumber(p0) ? p0->valuedouble : -1;
        space = cJSON_IsNumber(s0) ? s0->valuedouble : -1;
        uint64_t addr;
        size_t id = base + k++;
        if (id < pc->nnodes)
            continue; /* known already (a line seen twice) */
        if (array_grow(&pc->nodes, &pc->nodes_cap, pc->nnodes, sizeof *pc->nodes) < 0)
            return -ENOMEM;
        bool ok = parent >= 0 && parent <= (double)id && space >= 0 && space < 1e8 &&
                  hex(cJSON_GetArrayItem(x, 2), &addr);
        pc->nodes[pc->nnodes++] = ok ? (struct node){(uint32_t)parent, (uint32_t)space, addr} : (struct node){0, 0, 0};
    }
    cJSON_ArrayForEach(x, samples) {
        const cJSON *p = cJSON_GetArrayItem(x, 0), *t = cJSON_GetArrayItem(x, 1), *ms = cJSON_GetArrayItem(x, 2),
                    *nd = cJSON_GetArrayItem(x, 3);
        if (!cJSON_IsNumber(p) || !cJSON_IsNumber(t) || !cJSON_IsNumber(ms) || !cJSON_IsNumber(nd) ||
            nd->valuedouble < 1 || nd->valuedouble > (double)pc->nnodes || p->valuedouble < 1 ||
            p->valuedouble > 1e8 || t->valuedouble < 1 || t->valuedouble > 1e8)
            continue;
        struct thread *th = thread_of(pc, (int)p->valuedouble, (int)t->valuedouble);
        if (!th || array_grow(&th->s, &th->cap, th->n, sizeof *th->s) < 0)
            return -ENOMEM;
        double at = ms->valuedouble;
        if (th->n && at < th->s[th->n - 1].time)
            at = th->s[th->n - 1].time; /* the front-end wants them in order */
        th->s[th->n++] = (struct sample){at, (uint32_t)nd->valuedouble};
        pc->nsamples++;
    }
    return 1;
}

int pcpu_add(struct pcpu **pcp, const char *line, size_t len)
{
    struct pcpu *pc = *pcp;
    if (!pc) {
        if (!(pc = *pcp = calloc(1, sizeof *pc)))
            return -ENOMEM;
        /* kernel places are keyed by a file of their own: no mapped file is named so */
        if ((pc->kernel_file = intern(&pc->files, strdup("[kernel]"))) == UINT32_MAX)
            return -ENOMEM;
    }
    cJSON *o = cJSON_ParseWithLength(line, len);
    const char *type = str(o, "type");
    int r = 1;
    if (!type) {
        r = 0;
    } else if (!strcmp(type, "cpusamples")) {
        r = take_samples(pc, o);
    } else if (!strcmp(type, "cpuspace")) {
        struct space *s = space_at(pc, num(o, "space", 0), true);
        double parent = num(o, "parent", 0);
        if (s) {
            s->pid = (int)num(o, "pid", 0);
            s->parent = parent >= 0 && parent < 1e8 ? (uint32_t)parent : 0;
            set_str(&s->root, str(o, "root"));
        }
        r = s != NULL;
    } else if (!strcmp(type, "cpumap")) {
        struct space *s = space_at(pc, num(o, "space", 0), true);
        uint64_t a, b, off;
        const char *file = str(o, "file");
        if (!s || !file || file[0] != '/' || !strncmp(file, "//anon", 6) || strchr(file, '\n') ||
            !hex(cJSON_GetObjectItemCaseSensitive(o, "start"), &a) ||
            !hex(cJSON_GetObjectItemCaseSensitive(o, "end"), &b) ||
            !hex(cJSON_GetObjectItemCaseSensitive(o, "pgoff"), &off) || b <= a)
            r = 0;
        else if (off <= a) {
            /* Only the executable mappings are recorded: each is taken as the file mapped from
             * its offset 0 at its address less its offset, where the linkers' layout (a
             * segment's address and offset equal modulo the load base) puts the file's start. */
            uint32_t f = intern(&pc->files, strdup(file));
            if (f == UINT32_MAX || array_grow(&s->maps, &s->maps_cap, s->nmaps, sizeof *s->maps) < 0)
                r = -ENOMEM;
            else
                s->maps[s->nmaps++] = (struct map){a - off, b, f};
        }
    } else if (!strcmp(type, "cputhread")) {
        double p = num(o, "pid", 0), t = num(o, "tid", 0);
        struct thread *th = p >= 1 && p < 1e8 && t >= 1 && t < 1e8 ? thread_of(pc, (int)p, (int)t) : NULL;
        if (th) {
            set_str(&th->name, str(o, "name"));
            set_str(&th->process, str(o, "process"));
        }
        r = th != NULL;
    } else if (!strcmp(type, "cpuprofile")) {
        pc->started = true;
        pc->hz = (unsigned)num(o, "hz", 0);
        set_str(&pc->follow, str(o, "follow"));
        if (str(o, "error"))
            set_str(&pc->error, str(o, "error"));
    } else if (!strcmp(type, "cpuend")) {
        pc->ended = true;
        pc->samples_end = (uint64_t)num(o, "samples", 0);
        pc->dropped = (uint64_t)num(o, "dropped", 0);
        pc->lost = (uint64_t)num(o, "lost", 0);
        pc->untracked = (uint64_t)num(o, "untracked", 0);
    } else {
        r = 0;
    }
    cJSON_Delete(o);
    return r;
}

size_t pcpu_threads(const struct pcpu *pc)
{
    size_t n = 0;
    for (size_t i = 0; pc && i < pc->nthreads; i++)
        n += pc->threads[i].n > 0;
    return n;
}

bool pcpu_sampled(const void *pc_, int pid, int tid)
{
    const struct pcpu *pc = pc_;
    for (size_t i = 0; pc && i < pc->nthreads; i++)
        if (pc->threads[i].n && pc->threads[i].pid == pid && pc->threads[i].tid == tid)
            return true;
    return false;
}

/* ---- naming ------------------------------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The id of s (taken over: freed when it is there already), UINT32_MAX: no memory. */
static uint32_t intern(struct strtab *t, char *s)
{
    if (!s)
        return UINT32_MAX;
    if ((t->n + 1) * 2 > t->icap) {
        size_t cap = t->icap ? t->icap * 2 : 1024;
        uint32_t *ix = calloc(cap, sizeof *ix);
        if (!ix) {
            free(s);
            return UINT32_MAX;
        }
        for (size_t i = 0; i < t->n; i++) {
            size_t j = hash_str(t->s[i]) & (cap - 1);
            while (ix[j])
                j = (j + 1) & (cap - 1);
            ix[j] = (uint32_t)i + 1;
        }
        free(t->index);
        t->index = ix;
        t->icap = cap;
    }
    size_t j = hash_str(s) & (t->icap - 1);
    for (; t->index[j]; j = (j + 1) & (t->icap - 1))
        if (!strcmp(t->s[t->index[j] - 1], s)) {
            free(s);
            return t->index[j] - 1;
        }
    if (array_grow(&t->s, &t->cap, t->n, sizeof *t->s) < 0) {
        free(s);
        return UINT32_MAX;
    }
    t->s[t->n] = s;
    t->index[j] = (uint32_t)t->n + 1;
    return (uint32_t)t->n++;
}

static void strtab_free(struct strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    free(t->index);
    *t = (struct strtab){0};
}

/* How many of the n entries of size bytes at base, sorted by the address that starts each (a
 * uint64_t: struct map, jit, ksym), start at or below addr: the last of them holds addr, if any. */
static size_t count_at_or_below(const void *base, size_t n, size_t size, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t start;
        memcpy(&start, (const char *)base + mid * size, sizeof start);
        if (start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cmp_map(const void *a, const void *b)
{
    const struct map *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The whole mappings of space id, sorted: its ancestors' (forks) and its own; where two overlap,
 * the later one (a library unloaded and another mapped there). NULL with *n 0: none. */
static const struct map *all_maps(struct pcpu *pc, uint32_t id, size_t *n)
{
    struct space *sp = &pc->spaces[id];
    if (!sp->built) {
        sp->built = true;
        size_t cap = 0;
        for (int depth = 0; id && id < pc->nspaces && depth < 64; id = pc->spaces[id].parent, depth++) {
            const struct space *s = &pc->spaces[id];
            for (size_t i = s->nmaps; i-- > 0;) {
                bool hidden = false;
                for (size_t k = 0; k < sp->nall && !hidden; k++)
                    hidden = s->maps[i].start < sp->all[k].end && sp->all[k].start < s->maps[i].end;
                if (hidden)
                    continue;
                if (array_grow(&sp->all, &cap, sp->nall, sizeof *sp->all) < 0)
                    break;
                sp->all[sp->nall++] = s->maps[i];
            }
        }
        if (sp->nall)
            qsort(sp->all, sp->nall, sizeof *sp->all, cmp_map);
    }
    *n = sp->nall;
    return sp->all;
}

/* The file id + 1 whose mapping holds pc in space id, and pc's offset from the file's start in
 * *ret_off; 0 (and pc itself) outside any. */
static uint32_t file_of(struct pcpu *pc, uint32_t id, uint64_t addr, uint64_t *ret_off)
{
    *ret_off = addr;
    if (!id || id >= pc->nspaces)
        return 0;
    size_t n;
    const struct map *m = all_maps(pc, id, &n);
    size_t lo = count_at_or_below(m, n, sizeof *m, addr);
    if (!lo || addr >= m[lo - 1].end)
        return 0;
    *ret_off = addr - m[lo - 1].start;
    return m[lo - 1].file + 1;
}

/* The symbols of file id, opened once (NULL: it cannot be read). */
static struct forensics_syms *syms_of(struct pcpu *pc, uint32_t id)
{
    if (id >= pc->nfsyms) {
        size_t n = pc->files.n;
        struct forensics_syms **x = realloc(pc->fsyms, n * sizeof *x);
        if (x)
            pc->fsyms = x;
        bool *t = x ? realloc(pc->ftried, n * sizeof *t) : NULL;
        if (!t)
            return NULL;
        pc->ftried = t;
        memset(pc->fsyms + pc->nfsyms, 0, (n - pc->nfsyms) * sizeof *x);
        memset(pc->ftried + pc->nfsyms, 0, (n - pc->nfsyms) * sizeof *t);
        pc->nfsyms = n;
    }
    if (!pc->ftried[id]) {
        pc->ftried[id] = true;
        forensics_syms_new(pc->files.s[id], &pc->fsyms[id]);
    }
    return pc->fsyms[id];
}

/* ---- JIT code: perf map files ------------------------------------------------------------ */

/* Code a runtime compiled, named in its /tmp/perf-PID.map ("START SIZE NAME" lines, hexadecimal:
 * node --perf-basic-prof, CPython 3.12's -X perf, JVM perf-map agents), read once per process at
 * the end: the runtimes leave the file behind them, so a process long gone is named too. A
 * process in a chroot writes it in its own /tmp: ROOT/tmp/perf-PID.map (the root its space
 * recorded while it lived; no symbolic link followed below ROOT). Only a regular file of
 * resmon-run's own user is read (the command runs as that user; anyone may write in /tmp). */
struct jit {
    uint64_t start, end;
    const char *name;
    const struct perfmap *map;
};
struct perfmap {
    int pid;
    const char *root; /* its process's root, NULL: / */
    uint32_t file; /* its path's pcpu.files id */
    struct jit *e; /* sorted by start */
    size_t n;
    char *text;    /* the names point into it */
};

static int cmp_jit(const void *a, const void *b)
{
    const struct jit *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void perfmap_read(struct pcpu *pc, struct perfmap *m)
{
    char name[32], path[4096 + 64];
    snprintf(name, sizeof name, "perf-%d.map", m->pid);
    snprintf(path, sizeof path, "%s/tmp/%s", m->root ? m->root : "", name);
    m->file = intern(&pc->files, strdup(path));
    int fd = -1;
    if (m->root) {
        int rootfd = open(m->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        int tmpfd = rootfd >= 0 ? openat(rootfd, "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (tmpfd >= 0)
            fd = openat(tmpfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        closep(&tmpfd);
        closep(&rootfd);
    } else {
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    }
    struct stat st;
    if (fd < 0 || m->file == UINT32_MAX || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        st.st_size <= 0 || st.st_size > (64 << 20) || !(m->text = malloc((size_t)st.st_size + 1))) {
        closep(&fd);
        return;
    }
    ssize_t len = read(fd, m->text, (size_t)st.st_size);
    close(fd);
    if (len <= 0)
        return;
    m->text[len] = '\0';
    size_t cap = 0;
    for (char *line = m->text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *e1, *e2;
        unsigned long long a = strtoull(line, &e1, 16), size = strtoull(e1, &e2, 16);
        if (e1 == line || e2 == e1 || *e2 != ' ' || !size || array_grow(&m->e, &cap, m->n, sizeof *m->e) < 0)
            continue;
        m->e[m->n++] = (struct jit){a, a + size, e2 + 1, m};
    }
    if (m->n)
        qsort(m->e, m->n, sizeof *m->e, cmp_jit);
}

/* The JIT code at addr in space id (its process's perf map, else its parent's), NULL: none. */
static const struct jit *jit_of(struct pcpu *pc, uint32_t id, uint64_t addr)
{
    for (int depth = 0; id && id < pc->nspaces && depth < 8; id = pc->spaces[id].parent, depth++) {
        int pid = pc->spaces[id].pid;
        const char *root = pc->spaces[id].root;
        struct perfmap *m = NULL;
        for (size_t i = 0; i < pc->nperfmaps && !m; i++)
            if (pc->perfmaps[i].pid == pid && !pc->perfmaps[i].root == !root &&
                (!root || !strcmp(pc->perfmaps[i].root, root)))
                m = &pc->perfmaps[i];
        if (!m) {
            if (pid <= 0 || array_grow(&pc->perfmaps, &pc->perfmaps_cap, pc->nperfmaps, sizeof *pc->perfmaps) < 0)
                continue;
            m = &pc->perfmaps[pc->nperfmaps++];
            *m = (struct perfmap){.pid = pid, .root = root};
            perfmap_read(pc, m);
        }
        size_t lo = count_at_or_below(m->e, m->n, sizeof *m->e, addr);
        if (lo && addr < m->e[lo - 1].end)
            return &m->e[lo - 1];
    }
    return NULL;
}

/* ---- kernel code: /proc/kallsyms ---------------------------------------------------------- */

/* The kernel's text symbols that name the profile's kernel addresses, read once when a kernel
 * frame is first named (every node exists by then). Its addresses are readable by root only, and
 * true for this boot only: a stream recovered after a reboot names its kernel frames wrongly, or
 * not at all. /proc/kallsyms is some 120 000 text symbols (5 MB formatted by the kernel as it is
 * read): one pass in large reads keeps, for each address, the greatest symbol at or below it,
 * and nothing else (no copy of the table, no sort of it). */
struct ksym {
    uint64_t addr;  /* a kernel address of the profile (sorted, distinct) */
    uint64_t start; /* the greatest text symbol at or below it that the pass met (0: none) */
    char *name;     /* its name */
    size_t name_cap;
    bool global;    /* it is a global symbol (T) */
};

static bool kernel_node(const struct node *nd) { return !nd->space && nd->pc >= 0xffff800000000000ull; } /* cpuprof.c */

static int cmp_ksym(const void *a, const void *b)
{
    const struct ksym *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One line of /proc/kallsyms ("ADDR TYPE NAME[\t[MODULE]]"), end excluded: a text symbol may
 * name the addresses from the first at or above it on (the pass's greatest so far wins). */
static void ksym_line(struct pcpu *pc, const char *l, const char *end, size_t *cur)
{
    uint64_t a = 0;
    const char *e = l;
    for (; e < end && e - l < 16; e++) {
        unsigned c = (unsigned char)*e, d = c - '0' <= 9 ? c - '0' : (c | 0x20) - 'a' <= 5 ? (c | 0x20) - 'a' + 10 : 16;
        if (d > 15)
            break;
        a = a << 4 | d;
    }
    if (e == l || !a || end - e < 4 || e[0] != ' ' || (e[1] != 't' && e[1] != 'T') || e[2] != ' ')
        return;
    const char *name = e + 3, *ne = name;
    while (ne < end && *ne != '\t' && *ne != ' ')
        ne++;
    /* the addresses it may name start at the first at or above it: the bucket of that one (the
     * greatest symbol of each address is its bucket's or one below, taken at the end). The file
     * is in order of address but for its modules: on from the last line's bucket, a few steps,
     * else a binary search. */
    size_t lo = *cur, hi = pc->nksyms;
    if (lo > hi || (lo > 0 && pc->ksyms[lo - 1].addr >= a))
        lo = 0;
    for (int steps = 0; lo < hi && pc->ksyms[lo].addr < a && steps < 8; steps++)
        lo++;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pc->ksyms[mid].addr < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    *cur = lo;
    struct ksym *k = lo < pc->nksyms ? &pc->ksyms[lo] : NULL;
    if (!k || a < k->start || ne == name)
        return;
    /* aliases (one address, several names): a global one before a local one, then the fewest
     * leading underscores (memset, not __pi_memset), then the last (__x64_sys_vfork, not
     * __ia32_sys_vfork before it) */
    bool global = e[1] == 'T';
    if (a == k->start) {
        size_t u = strspn(name, "_"), ku = strspn(k->name, "_");
        if (global != k->global ? !global : u > ku)
            return;
    }
    k->global = global;
    size_t len = (size_t)(ne - name);
    if (k->name_cap <= len) {
        char *v = realloc(k->name, len + 1);
        if (!v)
            return;
        k->name = v;
        k->name_cap = len + 1;
    }
    memcpy(k->name, name, len);
    k->name[len] = '\0';
    k->start = a;
}

static void ksyms_read(struct pcpu *pc)
{
    pc->ksyms_read = true;
    size_t cap = 0;
    for (size_t i = 0; i < pc->nnodes; i++)
        if (kernel_node(&pc->nodes[i])) {
            if (array_grow(&pc->ksyms, &cap, pc->nksyms, sizeof *pc->ksyms) < 0)
                return;
            pc->ksyms[pc->nksyms++] = (struct ksym){.addr = pc->nodes[i].pc};
        }
    if (!pc->nksyms)
        return;
    qsort(pc->ksyms, pc->nksyms, sizeof *pc->ksyms, cmp_ksym);
    size_t n = 1;
    for (size_t i = 1; i < pc->nksyms; i++)
        if (pc->ksyms[i].addr != pc->ksyms[n - 1].addr)
            pc->ksyms[n++] = pc->ksyms[i];
    pc->nksyms = n;
    int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
    size_t bcap = 256 << 10, have = 0, cur = 0;
    char *b = fd >= 0 ? malloc(bcap) : NULL;
    for (ssize_t r; b && (r = read(fd, b + have, bcap - have)) != 0;) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        have += (size_t)r;
        char *l = b, *nl;
        while ((nl = memchr(l, '\n', have - (size_t)(l - b)))) {
            ksym_line(pc, l, nl, &cur);
            l = nl + 1;
        }
        have -= (size_t)(l - b);
        memmove(b, l, have);
        if (have == bcap)
            have = 0; /* a line longer than the buffer: not a symbol */
    }
    free(b);
    if (fd >= 0)
        close(fd);
    /* each address's greatest symbol: its bucket's, or the one below's (which is its own best) */
    for (size_t i = 1; i < pc->nksyms; i++) {
        struct ksym *k = &pc->ksyms[i], *below = &pc->ksyms[i - 1];
        if (below->start > k->start && below->name) {
            char *d = strdup(below->name);
            if (!d)
                continue;
            free(k->name);
            k->name = d;
            k->name_cap = strlen(d) + 1;
            k->start = below->start;
            k->global = below->global;
        }
    }
}

/* "function [kernel]" for a kernel address (as the dump names kernel frames), NULL: unknown. */
static char *kernel_name(struct pcpu *pc, uint64_t addr)
{
    if (!pc->ksyms_read)
        ksyms_read(pc);
    struct ksym key = {.addr = addr};
    const struct ksym *k = bsearch(&key, pc->ksyms, pc->nksyms, sizeof *pc->ksyms, cmp_ksym);
    char *s = NULL;
    if (!k || !k->start || asprintf(&s, "%s [kernel]", k->name) < 0)
        return NULL;
    return s;
}

/* The sym of a node: named once per distinct place of code. UINT32_MAX: no memory. */
static uint32_t sym_of(struct pcpu *pc, uint32_t node)
{
    if (pc->node_sym[node - 1])
        return pc->node_sym[node - 1] - 1;
    const struct node *nd = &pc->nodes[node - 1];
    uint64_t off;
    uint32_t file = file_of(pc, nd->space, nd->pc, &off);
    const struct jit *jit = NULL;
    bool kernel = kernel_node(nd);
    if (kernel)
        file = pc->kernel_file + 1;
    else if (!file && nd->pc && (jit = jit_of(pc, nd->space, nd->pc)))
        file = jit->map->file + 1; /* its perf map, at the address itself */
    if ((pc->nsyms + 1) * 2 > pc->sym_icap) {
        size_t cap = pc->sym_icap ? pc->sym_icap * 2 : 4096;
        uint32_t *ix = calloc(cap, sizeof *ix);
        if (!ix)
            return UINT32_MAX;
        for (size_t i = 0; i < pc->nsyms; i++) {
            size_t j = (pc->syms[i].pc * 0x9e3779b97f4a7c15ull ^ pc->syms[i].file) & (cap - 1);
            while (ix[j])
                j = (j + 1) & (cap - 1);
            ix[j] = (uint32_t)i + 1;
        }
        free(pc->sym_index);
        pc->sym_index = ix;
        pc->sym_icap = cap;
    }
    size_t j = (off * 0x9e3779b97f4a7c15ull ^ file) & (pc->sym_icap - 1);
    for (; pc->sym_index[j]; j = (j + 1) & (pc->sym_icap - 1)) {
        const struct sym *y = &pc->syms[pc->sym_index[j] - 1];
        if (y->pc == off && y->file == file)
            return (pc->node_sym[node - 1] = pc->sym_index[j]) - 1;
    }
    char *name = NULL, *lib = NULL;
    struct forensics_syms *fs = file && !jit && !kernel ? syms_of(pc, file - 1) : NULL;
    if (kernel) {
        if (!(name = kernel_name(pc, nd->pc)) && asprintf(&name, "0x%" PRIx64 " [kernel]", nd->pc) < 0)
            name = NULL;
        lib = strdup("kernel");
    } else if (jit) {
        name = strdup(jit->name);
        lib = strdup("JIT");
    } else if (fs)
        forensics_syms_name(fs, off, &name, &lib);
    else if (file) { /* a file that cannot be read: where in it */
        const char *f = pc->files.s[file - 1], *base = strrchr(f, '/');
        if (asprintf(&name, "%s+0x%" PRIx64, base ? base + 1 : f, off) < 0)
            name = NULL;
        lib = strdup(base ? base + 1 : f);
    } else if (asprintf(&name, nd->pc ? "0x%" PRIx64 : "(unknown)", nd->pc) < 0) {
        name = NULL;
    }
    struct sym y = {file, off, intern(&pc->strs, name), lib ? intern(&pc->strs, lib) : UINT32_MAX};
    if (y.name == UINT32_MAX || array_grow(&pc->syms, &pc->syms_cap, pc->nsyms, sizeof *pc->syms) < 0)
        return UINT32_MAX;
    pc->syms[pc->nsyms++] = y;
    pc->sym_index[j] = (uint32_t)pc->nsyms;
    pc->node_sym[node - 1] = (uint32_t)pc->nsyms;
    return (uint32_t)pc->nsyms - 1;
}

/* ---- one thread's tables ------------------------------------------------------------------ */

/* Per thread: global ids mapped to the thread's own (0: not yet, else index + 1). */
struct local {
    uint32_t *of_node, *of_func, *of_str; /* by node, by sym's (name, lib) func, by string */
    uint32_t *func_key;                   /* by sym: its function's key (the first sym with its name and lib) */
    /* the thread's tables */
    size_t *stack_prefix, *stack_frame;   /* prefix SIZE_MAX: none */
    size_t nstack, cstack;
    size_t *func_name, *func_res;         /* local string, local resource (SIZE_MAX none) */
    size_t nfunc, cfunc;
    size_t *res_name;
    size_t nres, cres;
    uint32_t *res_of_str;                 /* by string: resource + 1 */
    uint32_t *strs;                       /* local string i: global id */
    size_t nstrs, cstrs;
    bool failed;
};

static uint32_t local_str(struct pcpu *pc, struct local *l, uint32_t g)
{
    if (l->of_str[g])
        return l->of_str[g] - 1;
    if (array_grow(&l->strs, &l->cstrs, l->nstrs, sizeof *l->strs) < 0) {
        l->failed = true;
        return 0;
    }
    (void)pc;
    l->strs[l->nstrs++] = g;
    return (l->of_str[g] = (uint32_t)l->nstrs) - 1;
}

static uint32_t local_func(struct pcpu *pc, struct local *l, uint32_t sym)
{
    uint32_t key = l->func_key[sym];
    if (l->of_func[key])
        return l->of_func[key] - 1;
    const struct sym *y = &pc->syms[sym];
    size_t res = SIZE_MAX;
    if (y->lib != UINT32_MAX) {
        if (!l->res_of_str[y->lib]) {
            if (array_grow(&l->res_name, &l->cres, l->nres, sizeof *l->res_name) < 0) {
                l->failed = true;
                return 0;
            }
            l->res_name[l->nres++] = local_str(pc, l, y->lib);
            l->res_of_str[y->lib] = (uint32_t)l->nres;
        }
        res = l->res_of_str[y->lib] - 1;
    }
    size_t c = l->cfunc;
    if (array_grow(&l->func_name, &c, l->nfunc, sizeof *l->func_name) < 0 ||
        array_grow(&l->func_res, &l->cfunc, l->nfunc, sizeof *l->func_res) < 0) {
        l->failed = true;
        return 0;
    }
    l->func_name[l->nfunc] = local_str(pc, l, y->name);
    l->func_res[l->nfunc++] = res;
    return (l->of_func[key] = (uint32_t)l->nfunc) - 1;
}

static uint32_t local_stack(struct pcpu *pc, struct local *l, uint32_t node, int depth)
{
    if (l->of_node[node - 1])
        return l->of_node[node - 1] - 1;
    const struct node *nd = &pc->nodes[node - 1];
    size_t prefix = nd->parent && depth < 1024 ? local_stack(pc, l, nd->parent, depth + 1) : SIZE_MAX;
    uint32_t sym = sym_of(pc, node);
    if (sym == UINT32_MAX || l->failed) {
        l->failed = true;
        return 0;
    }
    uint32_t func = local_func(pc, l, sym);
    size_t c = l->cstack;
    if (l->failed || array_grow(&l->stack_prefix, &c, l->nstack, sizeof *l->stack_prefix) < 0 ||
        array_grow(&l->stack_frame, &l->cstack, l->nstack, sizeof *l->stack_frame) < 0) {
        l->failed = true;
        return 0;
    }
    l->stack_prefix[l->nstack] = prefix;
    l->stack_frame[l->nstack++] = func;
    return (l->of_node[node - 1] = (uint32_t)l->nstack) - 1;
}

static const struct thread *main_thread(const struct pcpu *pc, int pid)
{
    for (size_t i = 0; i < pc->nthreads; i++)
        if (pc->threads[i].pid == pid && pc->threads[i].tid == pid)
            return &pc->threads[i];
    return NULL;
}

/* The thread whose names a nameless one takes: a process gone before its name was read is named
 * as the process it was forked from (a fork copies the command line and the name), as far up as
 * one has a name. */
static const struct thread *named_as(const struct pcpu *pc, const struct thread *th)
{
    for (int hops = 0; th && !th->name && hops < 64; hops++) {
        uint32_t parent = 0;
        for (size_t i = pc->nspaces; i-- > 1 && !parent;)
            if (pc->spaces[i].pid == th->pid)
                parent = pc->spaces[i].parent;
        if (!parent || parent >= pc->nspaces)
            return th;
        const struct thread *up = main_thread(pc, pc->spaces[parent].pid);
        if (!up || up == th)
            return th;
        th = up;
    }
    return th;
}

static void write_thread(struct pcpu *pc, const struct thread *th, const struct local *l, const char *cat,
                         struct jsonw *w)
{
    char pidstr[16];
    snprintf(pidstr, sizeof pidstr, "%d", th->pid);
    const struct thread *main = main_thread(pc, th->pid);
    if (!main)
        main = th;
    const struct thread *mnames = named_as(pc, main), *tnames = th->name ? th : named_as(pc, th);
    double first = th->s[0].time, pfirst = first;
    if (main->n && main->s[0].time < pfirst)
        pfirst = main->s[0].time;
    jsonw_obj_open(w);
    jsonw_kv_str(w, "processType", "command");
    jsonw_kv_str(w, "processName", mnames->process ? mnames->process : mnames->name ? mnames->name : pidstr);
    jsonw_kv_double(w, "processStartupTime", pfirst, 3);
    jsonw_key(w, "processShutdownTime");
    jsonw_null(w);
    jsonw_kv_double(w, "registerTime", first, 3);
    jsonw_kv_str(w, "name", tnames->name && tnames->name[0] ? tnames->name : pidstr);
    jsonw_kv_bool(w, "isMainThread", th->tid == th->pid);
    jsonw_kv_str(w, "pid", pidstr);
    jsonw_kv_int(w, "tid", th->tid);

    size_t *stack = malloc((th->n ? th->n : 1) * sizeof *stack);
    char **str = malloc((l->nstrs ? l->nstrs : 1) * sizeof *str);
    double *times = malloc((th->n ? th->n : 1) * sizeof *times);
    if (!stack || !str || !times) {
        w->failed = true;
    } else {
        for (size_t i = 0; i < th->n; i++) {
            stack[i] = l->of_node[th->s[i].node - 1] - 1;
            times[i] = th->s[i].time;
        }
        for (size_t i = 0; i < l->nstrs; i++)
            str[i] = pc->strs.s[l->strs[i]];
        struct ptables pt = {.str = str, .nstr = l->nstrs, .fname = l->func_name, .fres = l->func_res,
                             .nfunc = l->nfunc, .rname = l->res_name, .nres = l->nres, .prefix = l->stack_prefix,
                             .frame = l->stack_frame, .nstack = l->nstack, .sstack = stack, .stime = times,
                             .nsample = th->n};
        ptables_write(w, &pt, cat);
    }
    free(stack);
    free(str);
    free(times);
    jsonw_obj_close(w);
}

static void local_free(struct local *l)
{
    free(l->of_node);
    free(l->of_func);
    free(l->of_str);
    free(l->func_key);
    free(l->stack_prefix);
    free(l->stack_frame);
    free(l->func_name);
    free(l->func_res);
    free(l->res_name);
    free(l->res_of_str);
    free(l->strs);
}

/* A process's threads together, the main thread first, processes in order of their first sample. */
static int cmp_order(const void *a, const void *b, void *ctx)
{
    const struct pcpu *pc = ctx;
    const struct thread *x = &pc->threads[*(const size_t *)a], *y = &pc->threads[*(const size_t *)b];
    if (x->pid != y->pid) {
        double fx = x->s[0].time, fy = y->s[0].time;
        for (size_t i = 0; i < pc->nthreads; i++) {
            const struct thread *t = &pc->threads[i];
            if (t->n && t->pid == x->pid && t->s[0].time < fx)
                fx = t->s[0].time;
            if (t->n && t->pid == y->pid && t->s[0].time < fy)
                fy = t->s[0].time;
        }
        if (fx != fy)
            return fx < fy ? -1 : 1;
        return x->pid < y->pid ? -1 : 1;
    }
    if ((x->tid == x->pid) != (y->tid == y->pid))
        return x->tid == x->pid ? -1 : 1;
    return x->s[0].time < y->s[0].time ? -1 : x->s[0].time > y->s[0].time;
}

void pcpu_write(struct pcpu *pc, unsigned ncat, struct jsonw *w)
{
    if (!pcpu_threads(pc))
        return;
    char cat[16];
    snprintf(cat, sizeof cat, "%u", CAT_RUNNING < ncat ? CAT_RUNNING : CAT_OTHER);
    for (size_t i = 0; i < pc->nspaces; i++) { /* mappings recorded since the last write */
        free(pc->spaces[i].all);
        pc->spaces[i].all = NULL;
        pc->spaces[i].nall = 0;
        pc->spaces[i].built = false;
    }
    free(pc->node_sym);
    pc->node_sym = calloc(pc->nnodes, sizeof *pc->node_sym);
    pc->node_sym_len = pc->node_sym ? pc->nnodes : 0;
    size_t *order = malloc(pc->nthreads * sizeof *order), n = 0;
    if (!pc->node_sym || !order) {
        free(order);
        w->failed = true;
        return;
    }
    for (size_t i = 0; i < pc->nthreads; i++)
        if (pc->threads[i].n)
            order[n++] = i;
    qsort_r(order, n, sizeof *order, cmp_order, pc);
    /* name every node first: the string and function tables are then complete */
    for (size_t i = 1; i <= pc->nnodes; i++)
        if (sym_of(pc, (uint32_t)i) == UINT32_MAX) {
            w->failed = true;
            free(order);
            return;
        }
    /* a function is a distinct name and library: the first sym with both is its key */
    uint32_t *func_key = malloc((pc->nsyms + 1) * sizeof *func_key);
    size_t fcap = 16;
    while (fcap < pc->nsyms * 2)
        fcap *= 2;
    uint32_t *fix = calloc(fcap, sizeof *fix);
    for (size_t i = 0; func_key && fix && i < pc->nsyms; i++) {
        const struct sym *y = &pc->syms[i];
        size_t j = ((uint64_t)y->name * 0x9e3779b97f4a7c15ull ^ y->lib) & (fcap - 1);
        while (fix[j] && (pc->syms[fix[j] - 1].name != y->name || pc->syms[fix[j] - 1].lib != y->lib))
            j = (j + 1) & (fcap - 1);
        if (!fix[j])
            fix[j] = (uint32_t)i + 1;
        func_key[i] = fix[j] - 1;
    }
    if (!fix) {
        free(func_key);
        func_key = NULL;
    }
    free(fix);
    for (size_t k = 0; k < n && func_key; k++) {
        const struct thread *th = &pc->threads[order[k]];
        struct local l = {.func_key = NULL};
        l.of_node = calloc(pc->nnodes, sizeof *l.of_node);
        l.of_func = calloc(pc->nsyms + 1, sizeof *l.of_func);
        l.of_str = calloc(pc->strs.n + 1, sizeof *l.of_str);
        l.res_of_str = calloc(pc->strs.n + 1, sizeof *l.res_of_str);
        l.func_key = func_key;
        l.failed = !l.of_node || !l.of_func || !l.of_str || !l.res_of_str;
        for (size_t i = 0; i < th->n && !l.failed; i++)
            local_stack(pc, &l, th->s[i].node, 0);
        if (!l.failed)
            write_thread(pc, th, &l, cat, w);
        else
            w->failed = true;
        l.func_key = NULL;
        local_free(&l);
    }
    if (!func_key)
        w->failed = true;
    free(func_key);
    free(order);
}

void pcpu_meta(const struct pcpu *pc, struct jsonw *w)
{
    if (!pc || !pc->started)
        return;
    jsonw_append(w, ",\"cpuProfile\":", 14);
    jsonw_obj_open(w);
    if (pc->error) {
        jsonw_kv_str(w, "error", pc->error);
    } else {
        jsonw_kv_uint(w, "hz", pc->hz);
        jsonw_kv_uint(w, "samples", pc->nsamples);
        jsonw_kv_uint(w, "dropped", pc->dropped);
        jsonw_kv_uint(w, "lost", pc->lost);
        if (pc->untracked)
            jsonw_kv_uint(w, "untracked", pc->untracked);
        if (pc->follow)
            jsonw_kv_str(w, "follow", pc->follow);
    }
    jsonw_obj_close(w);
}

size_t pcpu_hottest(const struct pcpu *pc, const char **names, uint64_t *counts, size_t n, uint64_t *ret_total)
{
    *ret_total = 0;
    if (!pc || !pc->node_sym || !pc->strs.n)
        return 0;
    uint64_t *by_name = calloc(pc->strs.n, sizeof *by_name);
    if (!by_name)
        return 0;
    for (size_t i = 0; i < pc->nthreads; i++)
        for (size_t k = 0; k < pc->threads[i].n; k++) {
            uint32_t node = pc->threads[i].s[k].node;
            if (node > pc->node_sym_len || !pc->node_sym[node - 1])
                continue;
            by_name[pc->syms[pc->node_sym[node - 1] - 1].name]++;
            (*ret_total)++;
        }
    size_t got = 0;
    for (size_t s = 0; s < pc->strs.n; s++) {
        if (!by_name[s])
            continue;
        size_t at = got < n ? got : n;
        while (at > 0 && counts[at - 1] < by_name[s])
            at--;
        if (at >= n)
            continue;
        size_t last = got < n ? got : n - 1;
        memmove(&names[at + 1], &names[at], (last - at) * sizeof *names);
        memmove(&counts[at + 1], &counts[at], (last - at) * sizeof *counts);
        names[at] = pc->strs.s[s];
        counts[at] = by_name[s];
        if (got < n)
            got++;
    }
    free(by_name);
    return got;
}

void pcpu_free(struct pcpu *pc)
{
    if (!pc)
        return;
    for (size_t i = 0; i < pc->nspaces; i++) {
        free(pc->spaces[i].maps);
        free(pc->spaces[i].all);
        free(pc->spaces[i].root);
    }
    free(pc->spaces);
    free(pc->nodes);
    for (size_t i = 0; i < pc->nthreads; i++) {
        free(pc->threads[i].name);
        free(pc->threads[i].process);
        free(pc->threads[i].s);
    }
    free(pc->threads);
    strtab_free(&pc->strs);
    for (size_t i = 0; i < pc->nfsyms; i++)
        forensics_syms_free(pc->fsyms[i]);
    free(pc->fsyms);
    free(pc->ftried);
    for (size_t i = 0; i < pc->nperfmaps; i++) {
        free(pc->perfmaps[i].e);
        free(pc->perfmaps[i].text);
    }
    free(pc->perfmaps);
    for (size_t i = 0; i < pc->nksyms; i++)
        free(pc->ksyms[i].name);
    free(pc->ksyms);
    strtab_free(&pc->files);
    free(pc->syms);
    free(pc->sym_index);
    free(pc->node_sym);
    free(pc->error);
    free(pc->follow);
    free(pc);
}
