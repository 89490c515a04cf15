/* forensics.c — see forensics.h. */
#include "observe/forensics.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBDW
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#endif

#include "base/util.h"
#include "observe/procfs.h"

/* ---- /proc facts -------------------------------------------------------------------------- */

/* A small /proc file of pid as a string without its trailing newlines; NULL when unreadable. */
static char *proc_text(pid_t pid, const char *name, size_t max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    char *buf = malloc(max);
    if (!buf)
        return NULL;
    ssize_t n = read_file_at(AT_FDCWD, path, buf, max);
    if (n < 0) {
        free(buf);
        return NULL;
    }
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    return buf;
}

/* State and name of one task (a process's thread, or the process itself with tid == pid); with
 * ret_cpu, the CPU it last ran on (-1: not known). */
static int task_stat(pid_t pid, pid_t tid, struct procfs_pid_stat *st, int *ret_cpu)
{
    char path[96], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    ssize_t n = read_file_at(AT_FDCWD, path, buf, sizeof buf);
    if (n >= 0 && ret_cpu)
        *ret_cpu = procfs_pid_stat_cpu(buf, (size_t)n);
    return n < 0 ? (int)n : procfs_parse_pid_stat(buf, (size_t)n, st);
}

/* THE SCHEDULER'S CLOCK (forensics.h): each CPU's offset to CLOCK_MONOTONIC, read when first
 * needed. */
#define RQ_MAX_CPUS 1024
struct rq_clocks {
    int64_t off[RQ_MAX_CPUS];
    unsigned char state[RQ_MAX_CPUS]; /* 0: not read yet, 1: off is known, 2: not available */
};

static bool exec_start_of(const char *path, uint64_t *ret_ns)
{
    char buf[4096];
    ssize_t n = read_file_at(AT_FDCWD, path, buf, sizeof buf);
    return n > 0 && procfs_parse_sched_exec_start(buf, (size_t)n, ret_ns) == 0;
}

static bool rq_offset(struct rq_clocks *c, int cpu, int64_t *ret)
{
    if (cpu < 0 || cpu >= RQ_MAX_CPUS)
        return false;
    if (!c->state[cpu]) {
        c->state[cpu] = 2;
        cpu_set_t was, one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_getaffinity(0, sizeof was, &was) == 0 && sched_setaffinity(0, sizeof one, &one) == 0) {
            /* on cpu now; the yield puts us on it again, so that our exec_start is this moment */
            sched_yield();
            uint64_t es;
            if (exec_start_of("/proc/thread-self/sched", &es)) {
                c->off[cpu] = (int64_t)now_ns() - (int64_t)es;
                c->state[cpu] = 1;
            }
            sched_setaffinity(0, sizeof was, &was);
        }
    }
    *ret = c->off[cpu];
    return c->state[cpu] == 1;
}

/* When the thread, in state, last ran on cpu, by the scheduler (0: running, or not known). */
static uint64_t idle_since(struct rq_clocks *c, pid_t pid, pid_t tid, char state, int cpu)
{
    if (!c || state == 'R')
        return 0;
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/sched", (int)pid, (int)tid);
    uint64_t es;
    int64_t off;
    if (!exec_start_of(path, &es) || !rq_offset(c, cpu, &off))
        return 0;
    int64_t at = (int64_t)es + off;
    uint64_t now = now_ns();
    return at > 0 && (uint64_t)at <= now ? (uint64_t)at : 0;
}

/* The threads of pid, at most max, the main thread first (it is listed first). */
static size_t list_tasks(pid_t pid, pid_t *tids, size_t max, size_t *ret_total)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    size_t n = 0, total = 0;
    if (!d) {
        *ret_total = 0;
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        total++;
        if (n < max)
            tids[n++] = (pid_t)atoi(e->d_name);
    }
    closedir(d);
    *ret_total = total;
    return n;
}

uint64_t forensics_start_ns(uint64_t ticks)
{
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec boot, mono;
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0 || clock_gettime(CLOCK_MONOTONIC, &mono) < 0)
        return 0;
    int64_t boot_minus_mono = ((int64_t)boot.tv_sec - (int64_t)mono.tv_sec) * (int64_t)NSEC_PER_SEC +
                              ((int64_t)boot.tv_nsec - (int64_t)mono.tv_nsec);
    int64_t ns = (int64_t)(ticks * (NSEC_PER_SEC / (uint64_t)hz)) - boot_minus_mono;
    return ns > 0 ? (uint64_t)ns : 0;
}

static int proc_facts(pid_t pid, struct forensics_process *p, struct rq_clocks *clocks)
{
    char path[64], raw[4096];
    struct procfs_pid_stat st;
    if (task_stat(pid, pid, &st, NULL) < 0)
        return -ESRCH;
    p->pid = pid;
    p->ppid = st.ppid;
    p->state = st.state;
    p->starttime = st.starttime;
    p->start_ns = forensics_start_ns(st.starttime);
    snprintf(p->comm, sizeof p->comm, "%s", st.comm);
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    ssize_t len = read_file_at(AT_FDCWD, path, raw, sizeof raw);
    char cmd[1024];
    size_t cl = len > 0 ? procfs_format_cmdline(raw, (size_t)len, cmd, sizeof cmd) : 0;
    p->cmd = cl ? strndup(cmd, cl) : strdup(p->comm);
    p->wchan = proc_text(pid, "wchan", 256);
    p->syscall = proc_text(pid, "syscall", 512);
    p->kstack = proc_text(pid, "stack", 8192);
    if (p->kstack && !p->kstack[0]) {
        free(p->kstack);
        p->kstack = NULL;
    }
    pid_t tids[FORENSICS_MAX_THREADS];
    size_t n = list_tasks(pid, tids, ARRAY_SIZE(tids), &p->threads_total);
    p->threads = calloc(n ? n : 1, sizeof *p->threads);
    if (!p->cmd || !p->threads)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct forensics_thread *t = &p->threads[p->nthreads];
        int cpu;
        if (task_stat(pid, tids[i], &st, &cpu) < 0)
            continue; /* ended meanwhile */
        t->tid = tids[i];
        t->state = st.state;
        t->idle_since_ns = idle_since(clocks, pid, tids[i], st.state, cpu);
        t->idle_ns = t->idle_since_ns ? now_ns() - t->idle_since_ns : 0;
        t->start_ns = forensics_start_ns(st.starttime);
        long hz = sysconf(_SC_CLK_TCK);
        t->cpu_ns = hz > 0 ? (st.utime + st.stime) * (NSEC_PER_SEC / (uint64_t)hz) : 0;
        snprintf(t->comm, sizeof t->comm, "%s", st.comm);
        p->nthreads++;
    }
    return 0;
}

/* ---- stacks ------------------------------------------------------------------------------- */

/* The frame arrays of t, FORENSICS_MAX_FRAMES each. false: out of memory. */
static bool alloc_frames(struct forensics_thread *t)
{
    t->frames = calloc(FORENSICS_MAX_FRAMES, sizeof *t->frames);
    t->pcs = calloc(FORENSICS_MAX_FRAMES, sizeof *t->pcs);
    t->files = calloc(FORENSICS_MAX_FRAMES, sizeof *t->files);
    t->lines = calloc(FORENSICS_MAX_FRAMES, sizeof *t->lines);
    t->libs = calloc(FORENSICS_MAX_FRAMES, sizeof *t->libs);
    return t->frames && t->pcs && t->files && t->lines && t->libs;
}

#ifdef HAVE_LIBDW

/* Does the ELF file open on fd carry this build-id? A debuginfo file found by name must: libdwfl
 * takes what the callback returns as the module's, and a stale one would name wrong functions. */
static bool same_build_id(int fd, const unsigned char *id, int len)
{
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf)
        return false;
    const void *fid;
    ssize_t flen = dwelf_elf_gnu_build_id(elf, &fid);
    bool same = flen == len && memcmp(fid, id, (size_t)len) == 0;
    elf_end(elf);
    return same;
}

/* The debuginfo of a module, from local files only (forensics.h: no debuginfod): the build-id
 * tree, then the file the module's .gnu_debuglink names, where GDB and eu-stack look for it
 * (beside the module, in its .debug directory, under /usr/lib/debug and the module's directory).
 * A module without a build-id is left to its own symbol table: nothing would tell a stale
 * debuglink target from the right one but a CRC of the whole file, too slow for a stop. */
static int find_debuginfo_local(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                                char **debuginfo_file_name)
{
    (void)userdata, (void)modname, (void)base, (void)debuglink_crc;
    const unsigned char *id;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &id, &vaddr);
    if (len < 2 || len > 64)
        return -1;
    char path[PATH_MAX];
    int k = snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%02x/", id[0]);
    for (int i = 1; i < len; i++)
        k += snprintf(path + k, sizeof path - (size_t)k, "%02x", id[i]);
    snprintf(path + k, sizeof path - (size_t)k, ".debug");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        *debuginfo_file_name = strdup(path);
        return fd;
    }
    if (!debuglink_file || !*debuglink_file || strchr(debuglink_file, '/') || !file_name || file_name[0] != '/')
        return -1;
    const char *slash = strrchr(file_name, '/');
    int dlen = (int)(slash - file_name); /* the module's directory, without its final slash */
    static const char *const under[] = {"", "", "/usr/lib/debug"}, *const sub[] = {"", "/.debug", ""};
    for (size_t f = 0; f < sizeof under / sizeof under[0]; f++) {
        if (snprintf(path, sizeof path, "%s%.*s%s/%s", under[f], dlen, file_name, sub[f], debuglink_file) >=
            (int)sizeof path)
            continue;
        if (!strcmp(path, file_name))
            continue; /* the link names the module itself */
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (same_build_id(fd, id, len)) {
            *debuginfo_file_name = strdup(path);
            return fd;
        }
        close(fd);
    }
    return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = find_debuginfo_local,
};

struct walk {
    Dwfl *dwfl;
    struct forensics_thread *t;
    int err;
    const char *exe; /* the process's executable (its source lines only), NULL: unknown */
};

static uint64_t rd_le(const unsigned char *p, unsigned size)
{
    uint64_t v = 0;
    for (unsigned i = size; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* A Go function's name from the module's .gopclntab, the table the Go runtime names its own
 * frames with: a stripped Go binary (no .symtab, as the go tool ships) keeps it. Layouts of Go
 * 1.16 to 1.17 (magic 0xfffffffa: a function table of {entry pc, func offset}) and 1.18 on
 * (0xfffffff0, 0xfffffff1: {entry offset from textStart, func offset} in 32 bits); the func
 * record's second field is its name's offset in the name table. NULL: no such table, or pc in
 * no function of it. */
static char *go_func_name(Dwfl_Module *m, Dwarf_Addr pc)
{
    GElf_Addr bias = 0;
    Elf *e = dwfl_module_getelf(m, &bias);
    size_t shstrndx;
    if (!e || elf_getshdrstrndx(e, &shstrndx) != 0)
        return NULL;
    Elf_Data *d = NULL;
    GElf_Addr text = 0;
    for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
        GElf_Shdr sh;
        const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
        if (name && strcmp(name, ".gopclntab") == 0 && sh.sh_type != SHT_NOBITS)
            d = elf_getdata(scn, NULL);
        else if (name && strcmp(name, ".text") == 0)
            text = sh.sh_addr;
    }
    if (!d || !d->d_buf || d->d_size < 72)
        return NULL;
    const unsigned char *p = d->d_buf;
    uint64_t n = d->d_size;
    uint32_t magic = (uint32_t)rd_le(p, 4);
    unsigned ps = p[7];
    bool v118 = magic == 0xfffffff0u || magic == 0xfffffff1u;
    if ((!v118 && magic != 0xfffffffau) || p[4] || p[5] || (ps != 4 && ps != 8))
        return NULL;
    uint64_t nfunc = rd_le(p + 8, ps);
    uint64_t text_start = v118 ? rd_le(p + 8 + 2 * ps, ps) : 0;
    unsigned h = 8 + (v118 ? 3 : 2) * ps; /* the name table's offset, then cu, file, pc and func tables' */
    uint64_t names = rd_le(p + h, ps), ft = rd_le(p + h + 4 * ps, ps);
    unsigned es = v118 ? 8 : 2 * ps, fs = v118 ? 4 : ps; /* a table entry; one of its fields */
    if (!nfunc || ft > n || nfunc >= (n - ft) / es || names > n) /* nfunc + 1 entries: the last ends the table */
        return NULL;
    uint64_t addr = pc - bias;
    if (v118) {
        if (!text_start) /* a position-independent binary: relocated at load */
            text_start = text;
        if (addr < text_start)
            return NULL;
        addr -= text_start;
    }
    const unsigned char *tab = p + ft;
    if (addr < rd_le(tab, fs) || addr >= rd_le(tab + nfunc * es, fs))
        return NULL;
    uint64_t lo = 0, hi = nfunc; /* the last entry at or below addr */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (rd_le(tab + mid * es, fs) <= addr)
            lo = mid;
        else
            hi = mid;
    }
    uint64_t func = ft + rd_le(tab + lo * es + fs, fs);
    if (func > n || n - func < (uint64_t)fs + 4)
        return NULL;
    int32_t name_off = (int32_t)rd_le(p + func + fs, 4);
    if (name_off < 0 || names + (uint64_t)name_off >= n)
        return NULL;
    const char *name = (const char *)p + names + name_off;
    size_t max = (size_t)(n - names - (uint64_t)name_off);
    return memchr(name, '\0', max) && *name ? strdup(name) : NULL;
}

/* The name of the code at pc: its function (from the symbol table, else Go's own table), else its
 * module and offset, else the address. */
static char *name_of(Dwfl *dwfl, Dwarf_Addr pc)
{
    char *s = NULL;
    Dwfl_Module *m = dwfl_addrmodule(dwfl, pc);
    if (m) {
        GElf_Off off;
        GElf_Sym sym;
        const char *fn = dwfl_module_addrinfo(m, pc, &off, &sym, NULL, NULL, NULL);
        if (fn && *fn) {
            /* "__libc_start_main@@GLIBC_2.34": the function is the name before the version */
            const char *at = strchr(fn, '@');
            return at && at > fn ? strndup(fn, (size_t)(at - fn)) : strdup(fn);
        }
        if ((s = go_func_name(m, pc)))
            return s;
        Dwarf_Addr start = 0;
        const char *mname = dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL);
        if (mname) {
            const char *base = strrchr(mname, '/');
            if (asprintf(&s, "%s+0x%llx", base ? base + 1 : mname, (unsigned long long)(pc - start)) < 0)
                s = NULL;
            return s;
        }
    }
    if (asprintf(&s, "0x%llx", (unsigned long long)pc) < 0)
        s = NULL;
    return s;
}

/* Frame k's module (its file's base name) and, where debuginfo has it, source file and line: of
 * the executable's own code only. Reading the C library's line tables from its debuginfo took ~300 ms
 * per process, out of a dump's budget; the program under test is where the lines
 * that matter are. */
static void where_of(const struct walk *w, Dwarf_Addr pc, size_t k)
{
    struct forensics_thread *t = w->t;
    Dwfl_Module *m = dwfl_addrmodule(w->dwfl, pc);
    if (!m)
        return;
    const char *mname = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    if (mname && *mname) {
        const char *base = strrchr(mname, '/');
        t->libs[k] = strdup(base ? base + 1 : mname);
    }
    if (!mname || !w->exe || strcmp(mname, w->exe) != 0)
        return;
    Dwfl_Line *line = dwfl_module_getsrc(m, pc);
    int lineno = 0;
    const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (file && *file && lineno > 0) {
        t->files[k] = strdup(file);
        t->lines[k] = lineno;
    }
}

static int on_frame(Dwfl_Frame *frame, void *arg)
{
    struct walk *w = arg;
    struct forensics_thread *t = w->t;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(frame, &pc, &activation))
        return DWARF_CB_ABORT;
    /* A return address points after the call: name the call itself. */
    Dwarf_Addr at = activation || pc == 0 ? pc : pc - 1;
    char *name = name_of(w->dwfl, at);
    if (!name) {
        w->err = -ENOMEM;
        return DWARF_CB_ABORT;
    }
    t->frames[t->nframes] = name;
    where_of(w, at, t->nframes);
    t->pcs[t->nframes++] = pc;
    return t->nframes < FORENSICS_MAX_FRAMES ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* A session on pid's modules, its threads being stopped by us already. NULL: failed. */
static Dwfl *open_dwfl(pid_t pid)
{
    Dwfl *dwfl = dwfl_begin(&dwfl_callbacks);
    if (!dwfl)
        return NULL;
    dwfl_report_begin(dwfl);
    dwfl_linux_proc_report(dwfl, pid);
    dwfl_report_end(dwfl, NULL, NULL);
    if (dwfl_linux_proc_attach(dwfl, pid, true) != 0) {
        dwfl_end(dwfl);
        return NULL;
    }
    return dwfl;
}

/* Wait for tid's ptrace stop, never reaping: an exit is left for the supervisor's wait. */
static int wait_stopped(pid_t tid, uint64_t deadline)
{
    for (unsigned spin = 0;; spin++) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)tid, &si, WSTOPPED | WEXITED | WNOHANG | WNOWAIT | __WALL) < 0)
            return -errno;
        if (si.si_pid == tid) {
            if (si.si_code != CLD_TRAPPED && si.si_code != CLD_STOPPED)
                return -ESRCH;
            memset(&si, 0, sizeof si);
            return waitid(P_PID, (id_t)tid, &si, WSTOPPED | WNOHANG | __WALL) < 0 ? -errno : 0;
        }
        if (now_ns() >= deadline)
            return -ETIME;
        /* A thread interrupted in user space stops within microseconds; one in a system call
         * when the call is interrupted. Look again soon, then less often. */
        struct timespec ts = {0, spin < 50 ? 20000 : 1000000};
        nanosleep(&ts, NULL);
    }
}

/* BACK TO SLEEP (forensics.h): wait until tid, detached, is no longer running on its way back
 * (asleep again, stopped, or gone), at most until. */
#define RESLEEP_MAX_NS (100 * NSEC_PER_MSEC)
static void wait_asleep(pid_t pid, pid_t tid, uint64_t until)
{
    struct procfs_pid_stat st;
    for (unsigned spin = 0; task_stat(pid, tid, &st, NULL) == 0 && st.state == 'R' && now_ns() < until; spin++) {
        struct timespec ts = {0, spin < 50 ? 20000 : 1000000};
        nanosleep(&ts, NULL);
    }
}

static const char *ptrace_error(int err)
{
    switch (err) {
    case EPERM: return "not traceable (non-dumpable, other credentials, or a ptrace policy)";
    case ESRCH: return "ended meanwhile";
    case ETIME: return "did not stop within the budget";
    default: return "cannot be traced";
    }
}

/* The frames of a thread that cannot be traced, from the kernel's side: its kernel stack where
 * readable (root), else its wchan alone; each named "function [kernel]", innermost first, with no
 * address. The thread gets a sample like any other: the Call Tree shows where it waits. */
static void kernel_frames(pid_t pid, struct forensics_thread *t)
{
    char path[96], text[4096];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stack", (int)pid, (int)t->tid);
    ssize_t n = read_file_at(AT_FDCWD, path, text, sizeof text);
    if (n <= 0) {
        snprintf(path, sizeof path, "/proc/%d/task/%d/wchan", (int)pid, (int)t->tid);
        n = read_file_at(AT_FDCWD, path, text, sizeof text);
        if (n <= 0 || !strcmp(text, "0"))
            return;
    }
    if (!alloc_frames(t))
        return;
    /* "[<0>] function+0x4b6/0x5d0" per line, or the wchan's bare "function" */
    for (char *line = text, *next; *line && t->nframes < FORENSICS_MAX_FRAMES; line = next) {
        next = line + strcspn(line, "\n");
        if (*next)
            *next++ = '\0';
        char *fn = strstr(line, "] ");
        fn = fn ? fn + 2 : line;
        size_t len = strcspn(fn, "+ ");
        if (!len)
            continue;
        char *name = malloc(len + sizeof " [kernel]");
        if (!name)
            return;
        memcpy(name, fn, len);
        memcpy(name + len, " [kernel]", sizeof " [kernel]");
        t->libs[t->nframes] = strdup("kernel");
        t->frames[t->nframes++] = name;
    }
    if (t->nframes)
        t->at_ns = now_ns();
}

/* Seize, interrupt and wait for each thread of p that can stop; walk the stopped ones; detach
 * all. Returns the threads left out by the budget. */
static size_t stacks_of(struct forensics_process *p, const struct forensics_hold *h, uint64_t deadline)
{
    bool seized[FORENSICS_MAX_THREADS] = {0}, stopped[FORENSICS_MAX_THREADS] = {0};
    size_t any = 0, cut = 0;
    for (size_t i = 0; i < p->nthreads; i++) {
        struct forensics_thread *t = &p->threads[i];
        /* Uninterruptible in the kernel: it would not stop before it leaves, and a thread seized
         * but not stopped cannot be detached. Its kernel frames say where it is. */
        if (t->state == 'D') {
            t->error = "in uninterruptible sleep (D): not traced";
            kernel_frames(p->pid, t);
            continue;
        }
        if (t->state == 'Z' || t->state == 'X') {
            t->error = "ended";
            continue;
        }
        if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) < 0) {
            t->error = ptrace_error(errno);
            continue;
        }
        seized[i] = true;
        if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) < 0)
            t->error = ptrace_error(errno);
    }
    /* Seized, its pid cannot be taken over now: is it still the process held? A pid recycled
     * before the seize is a stranger: it is only waited for and let go, never unwound. */
    bool same = forensics_hold_same(h);
    for (size_t i = 0; i < p->nthreads; i++) {
        struct forensics_thread *t = &p->threads[i];
        if (!seized[i] || t->error)
            continue; /* not seized, or not interrupted (it ended) */
        int r = wait_stopped(t->tid, deadline);
        if (r < 0)
            t->error = ptrace_error(-r);
        else if (!same)
            stopped[i] = true, t->error = "ended meanwhile";
        else
            stopped[i] = true, any++;
    }
    Dwfl *dwfl = any ? open_dwfl(p->pid) : NULL;
    char path[64], exe[PATH_MAX] = "";
    snprintf(path, sizeof path, "/proc/%d/exe", (int)p->pid);
    ssize_t len = dwfl ? readlink(path, exe, sizeof exe - 1) : -1;
    exe[len > 0 ? len : 0] = '\0';
    for (size_t i = 0; i < p->nthreads; i++) {
        struct forensics_thread *t = &p->threads[i];
        if (!stopped[i] || t->error)
            continue;
        if (!dwfl) {
            t->error = "its modules could not be read";
            continue;
        }
        if (now_ns() >= deadline) {
            t->error = "left out: the budget ran out";
            cut++;
            continue;
        }
        if (!alloc_frames(t)) {
            t->error = "out of memory";
            continue;
        }
        struct walk w = {dwfl, t, 0, exe[0] ? exe : NULL};
        t->at_ns = now_ns();
        if (dwfl_getthread_frames(dwfl, t->tid, on_frame, &w) != 0 && !t->nframes) {
            t->error = "no frame could be unwound";
            /* libdw (0.188) leaves the thread marked as attached when its registers cannot be
             * read, and asserts at the next one: start again for the others. */
            dwfl_end(dwfl);
            dwfl = open_dwfl(p->pid);
        }
    }
    if (dwfl)
        dwfl_end(dwfl);
    /* Nothing stays traced: the supervisor signals next. (A thread seized that never stopped -
     * it went into D state after it was listed - cannot be detached; the kernel lets it go when
     * it ends.) */
    for (size_t i = 0; i < p->nthreads; i++)
        if (stopped[i])
            ptrace(PTRACE_DETACH, p->threads[i].tid, NULL, NULL);
    /* And each thread that was asleep is asleep again (forensics.h: BACK TO SLEEP). */
    uint64_t until = MIN(deadline, sat_add_u64(now_ns(), RESLEEP_MAX_NS));
    for (size_t i = 0; i < p->nthreads; i++)
        if (stopped[i] && p->threads[i].state == 'S')
            wait_asleep(p->pid, p->threads[i].tid, until);
    return cut;
}
#endif

/* ---- symbols of a recorded address space -------------------------------------------------- */

struct forensics_syms {
#ifdef HAVE_LIBDW
    Dwfl *dwfl;
    Dwarf_Addr low; /* the module's lowest address: where its offset 0 is */
#endif
    int unused;
};

int forensics_syms_new(const char *path, struct forensics_syms **ret)
{
    struct forensics_syms *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
#ifdef HAVE_LIBDW
    /* the file alone, at its link-time addresses: every process that maps it shares the session */
    if ((s->dwfl = dwfl_begin(&dwfl_callbacks))) {
        dwfl_report_begin(s->dwfl);
        Dwfl_Module *m = dwfl_report_elf(s->dwfl, path, path, -1, 0, false);
        dwfl_report_end(s->dwfl, NULL, NULL);
        if (!m || !dwfl_module_info(m, NULL, &s->low, NULL, NULL, NULL, NULL, NULL)) {
            dwfl_end(s->dwfl);
            s->dwfl = NULL;
        }
    }
#else
    (void)path;
#endif
    *ret = s;
    return 0;
}

int forensics_syms_name(struct forensics_syms *s, uint64_t off, char **ret_name, char **ret_lib)
{
    *ret_lib = NULL;
#ifdef HAVE_LIBDW
    if (s->dwfl) {
        Dwarf_Addr pc = s->low + off;
        if (!(*ret_name = name_of(s->dwfl, pc)))
            return -ENOMEM;
        Dwfl_Module *m = dwfl_addrmodule(s->dwfl, pc);
        const char *mname = m ? dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : NULL;
        if (mname && *mname) {
            const char *base = strrchr(mname, '/');
            *ret_lib = strdup(base ? base + 1 : mname);
        }
        return 0;
    }
#endif
    if (asprintf(ret_name, "0x%llx", (unsigned long long)off) < 0)
        return -ENOMEM;
    return 0;
}

void forensics_syms_free(struct forensics_syms *s)
{
    if (!s)
        return;
#ifdef HAVE_LIBDW
    if (s->dwfl)
        dwfl_end(s->dwfl);
#endif
    free(s);
}

static uint64_t starttime_of(pid_t pid)
{
    struct procfs_pid_stat st;
    return task_stat(pid, pid, &st, NULL) < 0 || st.state == 'Z' || st.state == 'X' ? 0 : st.starttime;
}

int forensics_hold(const struct forensics_config *cfg, pid_t pid, uint64_t starttime, struct forensics_hold *h)
{
    *h = (struct forensics_hold){(int)syscall(SYS_pidfd_open, pid, 0), pid, starttime};
    if (h->pidfd < 0 && errno != ENOSYS)
        return -ESRCH;
    /* asked after the pidfd is held: a pid recycled in between would have to be a member again */
    if ((cfg->is_member && !cfg->is_member(cfg->ctx, pid)) || !forensics_hold_same(h)) {
        forensics_release(h);
        return -ESRCH;
    }
    return 0;
}

bool forensics_hold_same(const struct forensics_hold *h)
{
    if (h->pidfd >= 0)
        return syscall(SYS_pidfd_send_signal, h->pidfd, 0, NULL, 0) == 0;
    return h->starttime && starttime_of(h->pid) == h->starttime;
}

int forensics_hold_signal(const struct forensics_hold *h, int sig)
{
    if (h->pidfd >= 0)
        return syscall(SYS_pidfd_send_signal, h->pidfd, sig, NULL, 0) == 0 ? 0 : -errno;
    if (!forensics_hold_same(h))
        return -ESRCH;
    return kill(h->pid, sig) == 0 ? 0 : -errno;
}

void forensics_release(struct forensics_hold *h)
{
    if (h->pidfd >= 0)
        close(h->pidfd);
    h->pidfd = -1;
}

int forensics_record(const struct forensics_config *cfg, const pid_t *pids, size_t n, struct forensics_report *ret)
{
    *ret = (struct forensics_report){.start_ns = now_ns()};
    ret->procs = calloc(n ? n : 1, sizeof *ret->procs);
    if (!ret->procs)
        return -ENOMEM;
    /* /proc facts first, for every process: cheap, and what a cut-off still leaves. */
    struct rq_clocks *clocks = calloc(1, sizeof *clocks); /* NULL: idle times not known */
    for (size_t i = 0; i < n; i++) {
        struct forensics_process *p = &ret->procs[ret->nprocs];
        int r = proc_facts(pids[i], p, clocks);
        if (r == -ENOMEM) {
            ret->nprocs++;
            forensics_report_free(ret);
            free(clocks);
            return r;
        }
        if (r < 0) {
            memset(p, 0, sizeof *p);
            continue;
        }
        ret->nprocs++;
    }
    free(clocks);
#ifdef HAVE_LIBDW
    uint64_t deadline = sat_add_u64(ret->start_ns, cfg->budget_ns);
    ret->stacks_available = true;
    for (size_t i = 0; i < ret->nprocs; i++) {
        struct forensics_process *p = &ret->procs[i];
        if (!cfg->budget_ns || now_ns() >= deadline) {
            p->error = "left out: the budget ran out";
            ret->cut_off_processes++;
            continue;
        }
        struct forensics_hold h;
        if (forensics_hold(cfg, p->pid, p->starttime, &h) < 0)
            p->error = "no longer a member of the tree";
        else
            ret->cut_off_threads += stacks_of(p, &h, deadline);
        forensics_release(&h);
    }
#else
    for (size_t i = 0; i < ret->nprocs; i++)
        ret->procs[i].error = "stacks unavailable: built without libdw";
#endif
    ret->end_ns = now_ns();
    return 0;
}

void forensics_report_free(struct forensics_report *r)
{
    for (size_t i = 0; i < r->nprocs; i++) {
        struct forensics_process *p = &r->procs[i];
        for (size_t j = 0; j < p->nthreads; j++) {
            struct forensics_thread *t = &p->threads[j];
            for (size_t k = 0; k < t->nframes; k++) {
                free(t->frames[k]);
                free(t->files[k]);
                free(t->libs[k]);
            }
            free(t->frames);
            free(t->pcs);
            free(t->files);
            free(t->lines);
            free(t->libs);
        }
        free(p->threads);
        free(p->cmd);
        free(p->wchan);
        free(p->syscall);
        free(p->kstack);
        free(p->runtime_dump);
    }
    free(r->procs);
    *r = (struct forensics_report){0};
}

/* ---- runtimes ------------------------------------------------------------------------------ */

static const struct name_bit runtime_names[] = {
    {"go", FORENSICS_RT_GO},
    {"java", FORENSICS_RT_JAVA},
    {"python", FORENSICS_RT_PYTHON},
};

int forensics_parse_runtimes(const char *list, unsigned *ret_mask)
{
    return parse_name_list(list, runtime_names, ARRAY_SIZE(runtime_names), ret_mask);
}

const char *forensics_runtime_name(unsigned rt)
{
    for (size_t i = 0; i < ARRAY_SIZE(runtime_names); i++)
        if (runtime_names[i].bit == rt)
            return runtime_names[i].name;
    return "?";
}

/* A Go binary: the sections its linker always writes. The go tool is the one whose build
 * information (inline in .go.buildinfo since Go 1.18) names cmd/go as its main package. */
enum go_kind { NOT_GO, GO_PROGRAM, GO_TOOL };
static enum go_kind go_kind_of(pid_t pid)
{
#ifdef HAVE_LIBDW
    static const char tool[] = "path\tcmd/go\n";
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NOT_GO;
    enum go_kind kind = NOT_GO;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t shstrndx;
    if (e && elf_getshdrstrndx(e, &shstrndx) == 0)
        for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
            GElf_Shdr sh;
            const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
            if (name && strcmp(name, ".gopclntab") == 0 && kind == NOT_GO)
                kind = GO_PROGRAM;
            if (name && strcmp(name, ".go.buildinfo") == 0) {
                Elf_Data *d = elf_getdata(scn, NULL);
                kind = d && d->d_buf && memmem(d->d_buf, d->d_size, tool, sizeof tool - 1) ? GO_TOOL : GO_PROGRAM;
                break;
            }
        }
    if (e)
        elf_end(e);
    close(fd);
    return kind;
#else
    (void)pid;
    return NOT_GO;
#endif
}

unsigned forensics_runtime_of(pid_t pid, unsigned mask, int *ret_signal)
{
    char path[64], exe[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if ((mask & FORENSICS_RT_JAVA) && strcmp(base, "java") == 0) {
        *ret_signal = SIGQUIT;
        return FORENSICS_RT_JAVA;
    }
    if ((mask & FORENSICS_RT_PYTHON) && strncmp(base, "python", 6) == 0 &&
        (base[6] == '\0' || (base[6] >= '0' && base[6] <= '9'))) {
        *ret_signal = SIGABRT;
        return FORENSICS_RT_PYTHON;
    }
    enum go_kind go = mask & FORENSICS_RT_GO ? go_kind_of(pid) : NOT_GO;
    if (go != NOT_GO) {
        *ret_signal = go == GO_TOOL ? 0 : SIGQUIT;
        return FORENSICS_RT_GO;
    }
    return 0;
}

/* ---- what the report becomes -------------------------------------------------------------- */

static void wputs(struct jsonw *w, const char *s) { jsonw_append(w, s, strlen(s)); }

void forensics_text(const struct forensics_report *r, struct jsonw *w)
{
    jsonw_appendf(w, "%zu process%s of the tree, recorded in %.1f ms before any signal\n", r->nprocs,
            r->nprocs == 1 ? "" : "es", (double)(r->end_ns - r->start_ns) / 1e6);
    if (r->cut_off_processes || r->cut_off_threads)
        jsonw_appendf(w, "the budget cut off the stacks of %zu process%s and %zu thread%s\n", r->cut_off_processes,
                r->cut_off_processes == 1 ? "" : "es", r->cut_off_threads, r->cut_off_threads == 1 ? "" : "s");
    for (size_t i = 0; i < r->nprocs; i++) {
        const struct forensics_process *p = &r->procs[i];
        jsonw_appendf(w, "\nprocess %d (parent %d) state %c: ", (int)p->pid, (int)p->ppid, p->state);
        wputs(w, p->cmd);
        wputs(w, "\n");
        if (p->test)
            jsonw_appendf(w, "  during test: %s\n", p->test);
        jsonw_appendf(w, "  wchan: %s\n  syscall: %s\n", p->wchan ? p->wchan : "?", p->syscall ? p->syscall : "?");
        if (p->kstack) {
            wputs(w, "  kernel stack:\n");
            for (const char *s = p->kstack; *s;) {
                const char *e = strchr(s, '\n');
                size_t len = e ? (size_t)(e - s) : strlen(s);
                wputs(w, "    ");
                jsonw_append(w, s, len);
                wputs(w, "\n");
                s += len + (e != NULL);
            }
        }
        if (p->error)
            jsonw_appendf(w, "  stacks: %s\n", p->error);
        if (p->runtime) {
            jsonw_appendf(w, "  %s's own dump:", forensics_runtime_name(p->runtime));
            if (p->runtime_error)
                jsonw_appendf(w, " %s\n", p->runtime_error);
            else
                wputs(w, "\n");
            for (size_t o = 0; o < p->runtime_dump_len;) {
                const char *line = p->runtime_dump + o;
                const char *e = memchr(line, '\n', p->runtime_dump_len - o);
                size_t len = e ? (size_t)(e - line) : p->runtime_dump_len - o;
                wputs(w, "    | ");
                jsonw_append(w, line, len);
                wputs(w, "\n");
                o += len + (e != NULL);
            }
        }
        if (p->threads_total > p->nthreads)
            jsonw_appendf(w, "  (%zu threads, the first %zu listed)\n", p->threads_total, p->nthreads);
        for (size_t j = 0; j < p->nthreads; j++) {
            const struct forensics_thread *t = &p->threads[j];
            jsonw_appendf(w, "  thread %d (%s) state %c", (int)t->tid, t->comm, t->state);
            if (t->idle_since_ns)
                jsonw_appendf(w, " for %.3f s", (double)t->idle_ns / 1e9); /* not run since */
            if (t->error)
                jsonw_appendf(w, ": %s", t->error);
            wputs(w, "\n");
            for (size_t k = 0; k < t->nframes; k++) {
                if (t->pcs[k])
                    jsonw_appendf(w, "    #%-2zu 0x%016llx %s\n", k, (unsigned long long)t->pcs[k], t->frames[k]);
                else
                    jsonw_appendf(w, "    #%-2zu %-18s %s\n", k, "", t->frames[k]);
            }
        }
    }
}

enum {
    DUMP_PID,
    DUMP_PPID,
    DUMP_CMD,
    DUMP_STATE,
    DUMP_WCHAN,
    DUMP_SYSCALL,
    DUMP_KSTACK,
    DUMP_TEST,
    DUMP_THREADS,
    DUMP_IDLE,
    DUMP_TOP,
    DUMP_STACKS,
    DUMP_RUNTIME,
    DUMP_RUNTIME_TEXT,
};
static const struct marker_field dump_fields[] = {
    [DUMP_PID] = MARKER_FIELD("pid", "Process ID", "pid", 0),
    [DUMP_PPID] = MARKER_FIELD("ppid", "Parent", "pid", 0),
    [DUMP_CMD] = MARKER_FIELD("cmd", "Command line", "string", 0),
    [DUMP_STATE] = MARKER_FIELD("state", "State", "string", 0),
    [DUMP_WCHAN] = MARKER_FIELD("wchan", "Waiting in (kernel)", "string", MF_OPTIONAL),
    [DUMP_SYSCALL] = MARKER_FIELD("syscall", "System call", "string", MF_OPTIONAL),
    [DUMP_KSTACK] = MARKER_FIELD("kernelStack", "Kernel stack", "string", MF_OPTIONAL),
    [DUMP_TEST] = MARKER_FIELD("test", "During test", "string", MF_OPTIONAL),
    [DUMP_THREADS] = MARKER_FIELD("threads", "Threads", "integer", 0),
    [DUMP_IDLE] = MARKER_FIELD("idle", "Main thread not run for", "duration", MF_OPTIONAL),
    [DUMP_TOP] = MARKER_FIELD("topFrames", "Main thread's top frames", "string", MF_OPTIONAL),
    [DUMP_STACKS] = MARKER_FIELD("stacks", "Stacks", "string", MF_OPTIONAL),
    [DUMP_RUNTIME] = MARKER_FIELD("runtime", "Runtime asked for its dump", "string", MF_OPTIONAL),
    [DUMP_RUNTIME_TEXT] = MARKER_FIELD("runtimeDump", "The runtime's own dump", "string", MF_OPTIONAL),
};
const struct marker_type forensics_dump_type = {
    .name = "ProcessDump",
    .tooltip_label = "{marker.data.cmd} ({marker.data.state})",
    .table_label = "{marker.data.pid} {marker.data.state} {marker.data.cmd}{marker.data.topFrames ? ': ' : ''}{marker.data.topFrames}",
    .chart_label = "{marker.data.pid}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .description = "A process of the tree as it was before the stop's first signal",
    .fields = dump_fields,
    .nfields = ARRAY_SIZE(dump_fields),
};

static const char *state_name(char s)
{
    switch (s) {
    case 'R': return "R (running)";
    case 'S': return "S (sleeping)";
    case 'D': return "D (uninterruptible sleep)";
    case 'T': return "T (stopped)";
    case 't': return "t (traced)";
    case 'Z': return "Z (zombie)";
    case 'I': return "I (idle)";
    default: return "?";
    }
}

void forensics_top_frames(const struct forensics_thread *t, size_t n, struct jsonw *w)
{
    for (size_t k = 0; k < MIN(n, t->nframes); k++) {
        if (k)
            wputs(w, " < ");
        wputs(w, t->frames[k]);
    }
}

void forensics_dump_payload(struct jsonw *w, const struct forensics_process *p)
{
    struct mpay m;
    mpay_begin(&m, w, &forensics_dump_type);
    mpay_int(&m, DUMP_PID, p->pid);
    mpay_int(&m, DUMP_PPID, p->ppid);
    mpay_str(&m, DUMP_CMD, p->cmd);
    mpay_str(&m, DUMP_STATE, state_name(p->state));
    if (p->wchan)
        mpay_str(&m, DUMP_WCHAN, p->wchan);
    if (p->syscall)
        mpay_str(&m, DUMP_SYSCALL, p->syscall);
    if (p->kstack)
        mpay_str(&m, DUMP_KSTACK, p->kstack);
    if (p->test)
        mpay_str(&m, DUMP_TEST, p->test);
    mpay_uint(&m, DUMP_THREADS, p->threads_total);
    if (p->nthreads && p->threads[0].idle_since_ns)
        mpay_double(&m, DUMP_IDLE, (double)p->threads[0].idle_ns / 1e6, 3);
    if (p->nthreads && p->threads[0].nframes) {
        struct jsonw top;
        jsonw_init(&top);
        forensics_top_frames(&p->threads[0], 4, &top);
        if (!jsonw_failed(&top))
            mpay_strn(&m, DUMP_TOP, top.buf, top.len);
        jsonw_release(&top);
    }
    if (p->error)
        mpay_str(&m, DUMP_STACKS, p->error);
    else if (p->nthreads && p->threads[0].error)
        mpay_str(&m, DUMP_STACKS, p->threads[0].error);
    if (p->runtime) {
        mpay_str(&m, DUMP_RUNTIME, forensics_runtime_name(p->runtime));
        if (p->runtime_dump_len)
            mpay_strn(&m, DUMP_RUNTIME_TEXT, p->runtime_dump, p->runtime_dump_len);
        else if (p->runtime_error)
            mpay_str(&m, DUMP_RUNTIME_TEXT, p->runtime_error);
    }
    mpay_end(&m);
}

void forensics_stack_line(struct jsonw *w, const struct forensics_process *p, const struct forensics_thread *t,
                          double (*ms_of)(void *ctx, uint64_t ns), void *ctx)
{
    jsonw_reset(w);
    jsonw_obj_open(w);
    jsonw_kv_str(w, "type", "stack");
    jsonw_kv_int(w, "pid", p->pid);
    jsonw_kv_int(w, "ppid", p->ppid);
    jsonw_kv_int(w, "tid", t->tid);
    jsonw_kv_str(w, "process", p->cmd);
    jsonw_kv_str(w, "name", p->comm);
    jsonw_kv_str(w, "thread", t->comm);
    char state[2] = {t->state ? t->state : '?', '\0'};
    jsonw_kv_str(w, "state", state);
    jsonw_kv_double(w, "cpu", (double)t->cpu_ns / 1e6, 3);
    if (p->start_ns)
        jsonw_kv_double(w, "start", ms_of(ctx, p->start_ns), 3);
    if (t->start_ns)
        jsonw_kv_double(w, "threadStart", ms_of(ctx, t->start_ns), 3);
    if (t->idle_since_ns)
        jsonw_kv_double(w, "idleSince", ms_of(ctx, t->idle_since_ns), 3);
    jsonw_kv_double(w, "time", ms_of(ctx, t->at_ns), 3);
    jsonw_key(w, "frames");
    jsonw_arr_open(w);
    for (size_t k = 0; k < t->nframes; k++)
        jsonw_str(w, t->frames[k]);
    jsonw_arr_close(w);
    jsonw_key(w, "files");
    jsonw_arr_open(w);
    for (size_t k = 0; k < t->nframes; k++)
        t->files && t->files[k] ? jsonw_str(w, t->files[k]) : jsonw_null(w);
    jsonw_arr_close(w);
    jsonw_key(w, "lines");
    jsonw_arr_open(w);
    for (size_t k = 0; k < t->nframes; k++)
        t->lines && t->lines[k] ? jsonw_int(w, t->lines[k]) : jsonw_null(w);
    jsonw_arr_close(w);
    jsonw_key(w, "libs");
    jsonw_arr_open(w);
    for (size_t k = 0; k < t->nframes; k++)
        t->libs && t->libs[k] ? jsonw_str(w, t->libs[k]) : jsonw_null(w);
    jsonw_arr_close(w);
    jsonw_obj_close(w);
}
