/* unwind.c — see unwind.h. */
#include "observe/unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_LIBDW
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#endif

#include "base/util.h"

#ifdef HAVE_LIBDW
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, const char *file_name,
                        const char *debuglink_file, GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)debuglink_file,
        (void)debuglink_crc, (void)debuginfo_file_name;
    return -1;
}

/* A file of the cache, from where it was opened (stat) and where its PT_LOAD segments lie. */
struct elf_file {
    char *path;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    struct unwind_fileid id; /* the inode the mapping that last checked it named (ino 0: none) */
    int fd;
    Elf *elf;        /* NULL: not an ELF file libdwfl could place */
    bool exec;       /* ET_EXEC: placed where its headers say */
    uint64_t lo, hi; /* the first segment's page (p_vaddr & -p_align), the last one's end */
};

static int cached_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                           char **file_name, Elf **elfp)
{
    (void)mod, (void)modname, (void)base;
    const struct elf_file *f = *userdata;
    if (!f || !f->elf)
        return -1;
    /* a reference to the same handle (libelf counts them; the module's elf_end drops one) */
    Elf *e = elf_begin(-1, ELF_C_READ, f->elf);
    if (e != f->elf) {
        elf_end(e);
        return -1;
    }
    *elfp = e;
    if (!*file_name)
        *file_name = strdup(f->path);
    return -1;
}

/* A sample's stack is unwound with the .eh_frame of the mapped files alone: their debuginfo's
 * .debug_frame, which libdwfl tries where .eh_frame has no rule (the outermost frame of every
 * stack), would be read anew, its compressed sections inflated, for each address space, which
 * is each process: milliseconds each, for a tree of short processes most of resmon-run's CPU. */
static const Dwfl_Callbacks unwind_callbacks = {
    .find_elf = cached_find_elf,
    .find_debuginfo = no_debuginfo,
};
#endif

struct unwind_files {
#ifdef HAVE_LIBDW
    struct elf_file *f[UNWIND_FILES_MAX]; /* stable: modules point at them */
    size_t n;
#endif
    size_t opened, checked;
};

int unwind_files_new(struct unwind_files **ret)
{
    *ret = calloc(1, sizeof **ret);
    return *ret ? 0 : -ENOMEM;
}

size_t unwind_files_opened(const struct unwind_files *c)
{
    return c ? c->opened : 0;
}

size_t unwind_files_checked(const struct unwind_files *c)
{
    return c ? c->checked : 0;
}

void unwind_files_free(struct unwind_files *c)
{
    if (!c)
        return;
#ifdef HAVE_LIBDW
    for (size_t i = 0; i < c->n; i++) {
        elf_end(c->f[i]->elf);
        closep(&c->f[i]->fd);
        free(c->f[i]->path);
        free(c->f[i]);
    }
#endif
    free(c);
}

#ifdef HAVE_LIBDW
/* The segments' extent of an ELF file libdwfl places from its program headers (as
 * dwfl_report_elf would); false for any other file. */
static bool elf_extent(Elf *e, struct elf_file *f)
{
    GElf_Ehdr eh;
    size_t phnum;
    if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
        elf_getphdrnum(e, &phnum) != 0)
        return false;
    bool first = true;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (first) {
            f->lo = ph.p_vaddr & -(ph.p_align ? ph.p_align : 1);
            first = false;
        }
        if (ph.p_vaddr + ph.p_memsz > 0)
            f->hi = ph.p_vaddr + ph.p_memsz;
    }
    f->exec = eh.e_type == ET_EXEC;
    return !first && f->hi;
}

/* The cached file at path, opened now if it is new or was replaced; NULL: the cache is full or
 * the file cannot be read (the caller opens it the usual way, which reports the error). */
static struct elf_file *elf_file_of(struct unwind_files *c, const char *path, const struct unwind_fileid *id)
{
    bool known = id && id->ino;
    /* the same path and inode as a mapping that checked it: no stat (~10 us each, and a process
     * maps a few files) */
    for (size_t i = c->n; known && i-- > 0;) {
        struct elf_file *f = c->f[i];
        if (f->id.ino == id->ino && f->id.maj == id->maj && f->id.min == id->min && !strcmp(f->path, path))
            return f;
    }
    struct stat st;
    c->checked++;
    if (stat(path, &st) < 0)
        return NULL;
    for (size_t i = c->n; i-- > 0;) {
        struct elf_file *f = c->f[i];
        if (!strcmp(f->path, path) && f->dev == st.st_dev && f->ino == st.st_ino && f->size == st.st_size &&
            f->mtime.tv_sec == st.st_mtim.tv_sec && f->mtime.tv_nsec == st.st_mtim.tv_nsec) {
            if (known)
                f->id = *id;
            return f;
        }
    }
    if (c->n >= UNWIND_FILES_MAX)
        return NULL;
    struct elf_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return NULL;
    }
    c->opened++;
    /* what was stat'ed above: a file replaced in between is told by the next mapping's stat */
    f->dev = st.st_dev, f->ino = st.st_ino, f->size = st.st_size, f->mtime = st.st_mtim;
    if (known)
        f->id = *id;
    elf_version(EV_CURRENT);
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    f->elf = f->fd >= 0 ? elf_begin(f->fd, ELF_C_READ, NULL) : NULL;
    if (f->elf && !elf_extent(f->elf, f)) {
        elf_end(f->elf);
        f->elf = NULL;
    }
    if (!f->elf)
        closep(&f->fd); /* remembered as unreadable until it changes */
    c->f[c->n++] = f;
    return f;
}
#endif

struct unwinder {
#ifdef HAVE_LIBDW
    Dwfl *dwfl;
    struct unwind_files *files;
    bool attached;
    /* the sample being unwound: the registers the walk starts from (the sample's, or a frame's
     * past a trampoline), the copy of the stack from stack_sp */
    const uint64_t *regs;
    const unsigned char *stack;
    size_t stack_len;
    uint64_t stack_sp;
    uint64_t *pcs;
    size_t n, max;
    bool resumed;            /* the walk starts at a return address (past a trampoline) */
    bool anon;               /* the walk ended in code no file maps: its registers are in anon_regs */
    uint64_t anon_regs[17];
    /* return addresses checked for a call before them (after_call), by address */
    struct {
        uint64_t ra;
        bool call;
    } calls[64];
#endif
    int unused;
};

int unwinder_new(struct unwind_files *files, struct unwinder **ret)
{
    struct unwinder *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
#ifdef HAVE_LIBDW
    u->files = files;
    if (!(u->dwfl = dwfl_begin(&unwind_callbacks))) {
        free(u);
        return -ENOMEM;
    }
#endif
    *ret = u;
    return 0;
}

void unwinder_map(struct unwinder *u, uint64_t start, uint64_t end, uint64_t pgoff,
                            const char *file, const struct unwind_fileid *id)
{
#ifdef HAVE_LIBDW
    if (!u || pgoff > start || file[0] != '/')
        return;
    /* the file placed where its offset 0 is (as forensics_syms); a module already there stays */
    if (dwfl_addrmodule(u->dwfl, start))
        return;
    struct elf_file *f = u->files ? elf_file_of(u->files, file, id) : NULL;
    if (f && !f->elf)
        return;
    dwfl_report_begin_add(u->dwfl);
    if (f) {
        /* placed as dwfl_report_elf places it (its first segment where the file's offset 0 is
         * mapped, an ET_EXEC file where its headers say); its ELF handle is the cache's
         * (cached_find_elf) */
        uint64_t bias = f->exec ? 0 : start - pgoff - f->lo;
        Dwfl_Module *m = dwfl_report_module(u->dwfl, file, bias + f->lo, bias + f->hi);
        void **userdata;
        if (m && dwfl_module_info(m, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
            *userdata = f;
    } else {
        dwfl_report_elf(u->dwfl, file, file, -1, start - pgoff, false);
    }
    dwfl_report_end(u->dwfl, NULL, NULL);
#else
    (void)u, (void)start, (void)end, (void)pgoff, (void)file, (void)id;
#endif
    (void)end;
}

#ifdef HAVE_LIBDW
static pid_t uw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    (void)dwfl, (void)arg, (void)thread_argp;
    return 0;
}

static bool uw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
    (void)dwfl, (void)tid;
    *thread_argp = arg;
    return true;
}

/* Only the copied stack is readable: what lies outside it ends the walk. */
static bool stack_word(const struct unwinder *u, uint64_t addr, uint64_t *result)
{
    uint64_t sp = u->stack_sp;
    if (addr < sp || addr - sp > u->stack_len || u->stack_len - (addr - sp) < sizeof *result)
        return false;
    memcpy(result, u->stack + (addr - sp), sizeof *result);
    return true;
}

static bool uw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl;
    uint64_t v;
    if (!stack_word(arg, addr, &v))
        return false;
    *result = v;
    return true;
}

static bool uw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    struct unwinder *u = arg;
    /* x86-64's DWARF numbering: rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, then rip */
    Dwarf_Word r[17];
    for (int i = 0; i < 17; i++)
        r[i] = u->regs[i];
    return dwfl_thread_state_registers(thread, 0, 17, r);
}

static const Dwfl_Thread_Callbacks uw_callbacks = {
    .next_thread = uw_next_thread,
    .get_thread = uw_get_thread,
    .memory_read = uw_memory_read,
    .set_initial_registers = uw_set_initial_registers,
};

static int uw_frame(Dwfl_Frame *frame, void *arg)
{
    struct unwinder *u = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(frame, &pc, &activation) || !pc)
        return DWARF_CB_ABORT;
    bool first = u->resumed;
    u->resumed = false;
    u->pcs[u->n] = (activation && !first) || !u->n ? pc : pc - 1;
    u->n++;
    if (u->n >= u->max)
        return DWARF_CB_ABORT;
    /* code no file maps (a JIT's): no CFI to go on with; the walk stops, to be stepped past it
     * here (unwinder_walk) from its registers */
    if (dwfl_addrmodule(u->dwfl, pc))
        return DWARF_CB_OK;
    for (unsigned r = 0; r < 17; r++) {
        Dwarf_Word v;
        u->anon_regs[r] = dwfl_frame_reg(frame, r, &v) == 0 ? v : 0;
    }
    u->anon = true;
    return DWARF_CB_ABORT;
}

/* The length of an x86-64 "call *operand" (ff /2, through a register or memory) whose ff byte
 * is at p, from its ModRM byte, SIB byte and displacement; 0: p is not one. */
static size_t call_ff_len(const unsigned char *p)
{
    unsigned mod = p[1] >> 6, rm = p[1] & 7;
    if (p[0] != 0xff || (p[1] & 0x38) != 0x10)
        return 0;
    if (mod == 3)
        return 2;
    size_t n = rm == 4 ? 3 : 2; /* a SIB byte */
    if (mod == 0)
        return rm == 5 || (rm == 4 && (p[2] & 7) == 5) ? n + 4 : n; /* rip- or SIB-relative disp32 */
    return n + (mod == 1 ? 1 : 4);
}

/* x86-64: a call instruction ends right before ra, in the file that maps it (a return address,
 * not any word of the stack): call rel32, or a call through a register or memory of any length.
 * Remembered by address. */
static bool after_call(struct unwinder *u, uint64_t ra)
{
    size_t slot = (size_t)((ra * 0x9e3779b97f4a7c15ull) >> 58);
    if (u->calls[slot].ra == ra)
        return u->calls[slot].call;
    bool call = false;
    Dwfl_Module *m = dwfl_addrmodule(u->dwfl, ra);
    void **userdata;
    Dwarf_Addr start;
    const struct elf_file *f = NULL;
    if (m && dwfl_module_info(m, &userdata, &start, NULL, NULL, NULL, NULL, NULL))
        f = *userdata;
    size_t phnum;
    if (f && f->elf && f->fd >= 0 && elf_getphdrnum(f->elf, &phnum) == 0) {
        /* the module starts where the file's first segment is placed (unwinder_map) */
        uint64_t va = ra - start + f->lo;
        for (size_t i = 0; i < phnum; i++) {
            GElf_Phdr ph;
            unsigned char b[8]; /* the 7 bytes before ra, and ra's */
            if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
                va < ph.p_vaddr + 7 || va >= ph.p_vaddr + ph.p_filesz ||
                pread(f->fd, b, sizeof b, (off_t)(va - 7 - ph.p_vaddr + ph.p_offset)) != (ssize_t)sizeof b)
                continue;
            call = b[2] == 0xe8; /* rel32 */
            for (size_t at = 0; at <= 5 && !call; at++)
                call = call_ff_len(b + at) == 7 - at;
            break;
        }
    }
    u->calls[slot].ra = ra;
    u->calls[slot].call = call;
    return call;
}

static void step_to(const uint64_t *regs, uint64_t rbp, uint64_t sp, uint64_t ra, uint64_t *next)
{
    memset(next, 0, 17 * sizeof *next);
    static const int kept[] = {3, 12, 13, 14, 15}; /* rbx, r12-r15 */
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        next[kept[i]] = regs[kept[i]];
    next[6] = rbp;
    next[7] = sp;
    next[16] = ra;
}

/* The frame past a trampoline the walk stopped in (regs: its registers, rip last): CPython's
 * perf trampolines (-X perf) run each Python function through a copy of a few instructions in
 * memory no file maps, without call-frame information: "sub $8, %rsp; call *%rcx; add $8, %rsp;
 * ret". Past the call, its caller's return address is 8 bytes above the stack pointer, and the
 * caller's stack pointer 16; the registers a call preserves are the caller's. (Their other form,
 * "push %rbp; mov %rsp, %rbp; call; pop %rbp; ret", keeps a frame pointer: past_frame_pointer
 * takes it.) Taken only where that word is a return address into a mapped file (after_call). */
static bool past_trampoline(struct unwinder *u, const uint64_t *regs, uint64_t *next)
{
    uint64_t sp = regs[7], ra;
    if (!stack_word(u, sp + 8, &ra) || !after_call(u, ra))
        return false;
    step_to(regs, regs[6], sp + 16, ra, next);
    return true;
}

/* Code no file maps, first: along its frame pointer, as libdw would (a JIT that keeps them:
 * V8's), where rbp points into the stack above the stack pointer and the word above it returns
 * into code: more code no file maps, or right after a call in a mapped file. (Past a trampoline
 * of an interpreter built with frame pointers, that goes to its caller's caller: one frame
 * less.) A trampoline's rule second: in a JIT's frame, the word above the stack pointer may be
 * a stale return address. */
static bool past_frame_pointer(struct unwinder *u, const uint64_t *regs, uint64_t *next)
{
    uint64_t sp = regs[7], fp = regs[6], ra, rbp;
    if (fp < sp || !stack_word(u, fp, &rbp) || !stack_word(u, fp + 8, &ra) || !ra ||
        (dwfl_addrmodule(u->dwfl, ra) && !after_call(u, ra)))
        return false;
    step_to(regs, rbp, fp + 16, ra, next);
    return true;
}
#endif

size_t unwinder_walk(struct unwinder *u, pid_t pid, pid_t tid, const uint64_t *regs, const void *stack,
                        size_t stack_len, uint64_t *pcs, size_t max)
{
#if defined(HAVE_LIBDW) && defined(__x86_64__)
    if (!u || !max)
        return 0;
    if (!u->attached) {
        if (!dwfl_attach_state(u->dwfl, NULL, pid, &uw_callbacks, u))
            return 0;
        u->attached = true;
    }
    u->regs = regs;
    u->stack = stack;
    u->stack_len = stack_len;
    u->stack_sp = regs[7];
    u->pcs = pcs;
    u->n = 0;
    u->max = max;
    u->resumed = false;
    uint64_t next[17];
    for (uint64_t below = 0;;) {
        u->anon = false;
        dwfl_getthread_frames(u->dwfl, tid, uw_frame, u);
        /* stopped in a JIT's code: on past it, each time higher up */
        if (!u->anon || u->n >= max || u->anon_regs[7] < below ||
            (!past_frame_pointer(u, u->anon_regs, next) && !past_trampoline(u, u->anon_regs, next)))
            break;
        below = next[7];
        u->regs = next;
        u->resumed = true;
    }
    u->regs = NULL;
    return u->n;
#else
    (void)u, (void)pid, (void)tid, (void)regs, (void)stack, (void)stack_len, (void)pcs, (void)max;
    return 0;
#endif
}

void unwinder_free(struct unwinder *u)
{
    if (!u)
        return;
#ifdef HAVE_LIBDW
    dwfl_end(u->dwfl);
#endif
    free(u);
}
