/* Unit tests of the dump at a stop: a child parked in a known function, recorded with and without
 * stacks, as a member and as a stranger; nothing stays traced after. */
#include "observe/forensics.h"
#include "observe/unwind.h"

#include <check.h>
#include "check_run.h"
#include <execinfo.h>
#include <link.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

/* Not static: its name is what the stack must show. */
void forensics_test_parked_here(int fd);
__attribute__((noinline)) void forensics_test_parked_here(int fd)
{
    char c = 'r';
    if (write(fd, &c, 1) != 1)
        _exit(1);
    for (;;)
        pause();
}

static char state_of(pid_t pid, const char *key, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    char line[256], st = '?';
    buf[0] = '\0';
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "State:", 6) == 0)
            st = line[7];
        if (key && strncmp(line, key, strlen(key)) == 0)
            snprintf(buf, size, "%s", line + strlen(key));
    }
    if (f)
        fclose(f);
    return st;
}

/* A child running body(fd), which says 'r' on fd once it is where it stays, asleep there. */
static pid_t asleep_child(void (*body)(int fd))
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        body(p[1]);
        _exit(1);
    }
    close(p[1]);
    char c;
    ck_assert_int_eq(read(p[0], &c, 1), 1);
    close(p[0]);
    char buf[8];
    while (state_of(pid, NULL, buf, sizeof buf) != 'S')
        sched_yield();
    return pid;
}

/* A child parked in forensics_test_parked_here (asleep in pause). */
static pid_t parked_child(void) { return asleep_child(forensics_test_parked_here); }

static void end_child(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static bool yes(void *ctx, pid_t pid) { return (void)ctx, (void)pid, true; }
static bool no(void *ctx, pid_t pid) { return (void)ctx, (void)pid, false; }

static double fixed_ms(void *ctx, uint64_t ns)
{
    (void)ctx, (void)ns;
    return 12.5;
}

START_TEST(test_parked_child)
{
    pid_t pid = parked_child();
    struct forensics_config cfg = {.budget_ns = 2 * NSEC_PER_SEC, .is_member = yes};
    struct forensics_report r;
    ck_assert_int_eq(forensics_record(&cfg, &pid, 1, &r), 0);
    ck_assert_uint_eq(r.nprocs, 1);
    const struct forensics_process *p = &r.procs[0];
    ck_assert_int_eq(p->pid, pid);
    ck_assert_int_eq(p->ppid, getpid());
    ck_assert_int_eq(p->state, 'S');
    ck_assert_uint_eq(p->nthreads, 1);
    ck_assert_ptr_nonnull(p->syscall);
    ck_assert_uint_eq(r.cut_off_processes, 0);
#ifdef HAVE_LIBDW
    ck_assert(r.stacks_available);
    const struct forensics_thread *t = &p->threads[0];
    ck_assert_msg(t->error == NULL, "%s", t->error ? t->error : "");
    bool found = false;
    for (size_t k = 0; k < t->nframes; k++)
        found |= strcmp(t->frames[k], "forensics_test_parked_here") == 0;
    /* Under valgrind the child runs on valgrind's translated code: its stack is valgrind's. */
    bool vg = getenv("RESMON_UNDER_VALGRIND") != NULL;
    ck_assert_msg(found || (vg && t->nframes), "no frame of forensics_test_parked_here (%zu frames, first %s)",
                  t->nframes, t->nframes ? t->frames[0] : "-");
    /* the text and the stream line say the same */
    struct jsonw w;
    jsonw_init(&w);
    forensics_text(&r, &w);
    ck_assert(vg || strstr(w.buf, " forensics_test_parked_here\n"));
    forensics_stack_line(&w, p, t, fixed_ms, NULL);
    ck_assert(vg || strstr(w.buf, "\"forensics_test_parked_here\""));
    ck_assert_ptr_nonnull(strstr(w.buf, "\"time\":12.5"));
    ck_assert_ptr_nonnull(strstr(w.buf, "\"start\":12.5,\"threadStart\":12.5,"));
    ck_assert_ptr_nonnull(strstr(w.buf, "\"state\":\"S\""));
    /* the frame's library, and its source line from this file's debuginfo (but for clang's
     * DWARF 5 line tables, where libdw 0.188 finds no line: eu-addr2line neither) */
#ifdef __clang__
    bool lines = false;
#else
    bool lines = true;
#endif
    for (size_t k = 0; !vg && k < t->nframes; k++)
        if (strcmp(t->frames[k], "forensics_test_parked_here") == 0) {
            ck_assert_str_eq(t->libs[k], "unit_forensics");
            ck_assert_msg(!lines || (t->files[k] && strstr(t->files[k], "unit_forensics.c") && t->lines[k] > 0),
                          "no source line: %s:%d", t->files[k] ? t->files[k] : "-", t->lines[k]);
        }
    ck_assert(vg || strstr(w.buf, "\"unit_forensics\""));
    ck_assert(vg || !lines || strstr(w.buf, "unit_forensics.c\""));
    jsonw_release(&w);
#else
    ck_assert_str_eq(p->error, "stacks unavailable: built without libdw");
#endif
    forensics_report_free(&r);
    /* detached: not traced, and asleep again where it was (the record waits for that, for at
     * most 100 ms: a loaded machine may take longer to run it back in; Check's bound holds) */
    char tracer[32];
    while (state_of(pid, "TracerPid:", tracer, sizeof tracer) != 'S')
        sched_yield();
    ck_assert_int_eq(atoi(tracer), 0);
    end_child(pid);
}
END_TEST

START_TEST(test_stranger_and_budget)
{
    pid_t pid = parked_child();
    struct forensics_config cfg = {.budget_ns = NSEC_PER_SEC, .is_member = no};
    struct forensics_report r;
    ck_assert_int_eq(forensics_record(&cfg, &pid, 1, &r), 0);
    ck_assert_uint_eq(r.nprocs, 1);
#ifdef HAVE_LIBDW
    /* not a member any more: its /proc facts, no tracing */
    ck_assert_str_eq(r.procs[0].error, "no longer a member of the tree");
    ck_assert_uint_eq(r.procs[0].threads[0].nframes, 0);
#endif
    forensics_report_free(&r);
    /* no budget: the facts, and the cut-off counted */
    cfg = (struct forensics_config){.budget_ns = 0, .is_member = yes};
    ck_assert_int_eq(forensics_record(&cfg, &pid, 1, &r), 0);
#ifdef HAVE_LIBDW
    ck_assert_uint_eq(r.cut_off_processes, 1);
    ck_assert_str_eq(r.procs[0].error, "left out: the budget ran out");
#endif
    ck_assert_ptr_nonnull(r.procs[0].wchan);
    forensics_report_free(&r);
    /* a process that is gone is left out */
    end_child(pid);
    ck_assert_int_eq(forensics_record(&cfg, &pid, 1, &r), 0);
    ck_assert_uint_eq(r.nprocs, 0);
    forensics_report_free(&r);
}
END_TEST

/* A child asleep in pause() until a handler's signal: the loop around pause() looks at the flag
 * the handler sets only when pause() returns; it exits then. */
static volatile sig_atomic_t woken;
static void on_usr1(int sig) { (void)sig, woken = 1; }

static void wait_for_usr1(int fd)
{
    struct sigaction sa = {.sa_handler = on_usr1};
    sigaction(SIGUSR1, &sa, NULL);
    char c = 'r';
    if (write(fd, &c, 1) != 1)
        _exit(1);
    while (!woken)
        pause();
    _exit(0);
}

/* The stop's signal follows the stacks at once. A thread stopped by the tracer in pause() (or any
 * call the kernel restarts after a stop) must be asleep in it again when it is signalled: a signal
 * landing while it goes back in runs the handler, and the call is restarted, not interrupted, so
 * the program never sees it (its TERM, or a runtime's dump request, lost). Tried many times, the
 * signal sent at moments up to 145 us after the stacks: the window lasts microseconds; without the
 * wait, one round in 15 to one in 150 lost it here, by the load (300 rounds: 4 runs of 4 failed).
 * A round is a record with stacks: a case of its own, with time for ASan on a loaded machine. */
START_TEST(test_signal_after_stacks_wakes)
{
    struct forensics_config cfg = {.budget_ns = 2 * NSEC_PER_SEC, .is_member = yes};
    int rounds = getenv("RESMON_UNDER_VALGRIND") ? 10 : 300; /* valgrind: for its checks only */
    for (int i = 0; i < rounds; i++) {
        /* the child's end is seen as the end of a pipe it holds (valgrind has no pidfd_open) */
        int q[2];
        ck_assert_int_eq(pipe(q), 0);
        pid_t pid = asleep_child(wait_for_usr1);
        close(q[1]);
        struct forensics_report r;
        ck_assert_int_eq(forensics_record(&cfg, &pid, 1, &r), 0);
        forensics_report_free(&r);
        struct timespec ts = {0, (i % 30) * 5000}; /* 0 to 145 us asked: the moment moves */
        nanosleep(&ts, NULL);
        ck_assert_int_eq(kill(pid, SIGUSR1), 0);
        struct pollfd pf = {q[0], POLLIN, 0};
        bool ended = poll(&pf, 1, 5000) == 1; /* a bound, not a pace: it ends at once */
        close(q[0]);
        end_child(pid);
        ck_assert_msg(ended, "round %d: the signal sent %d us after the stacks was lost", i,
                      (i % 30) * 5);
    }
}
END_TEST

#if defined(__x86_64__) && defined(HAVE_LIBDW)
/* A sample of this very thread, as the kernel would copy it: the registers (DWARF order) at the
 * instruction after the capture, a copy of the stack above rsp, and glibc's own unwinding
 * (backtrace(3), with the same CFI) of the same frames for comparison. */
struct own_sample {
    uint64_t regs[17];
    unsigned char stack[32768];
    size_t len;
    void *bt[64];
    int nbt;
};

/* The copy reads the stack as the kernel does, redzones of a sanitizer's build included. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
__attribute__((no_sanitize("address")))
#endif
#endif
static void copy_raw(unsigned char *to, const volatile unsigned char *from, size_t n)
{
    for (size_t i = 0; i < n; i++)
        to[i] = from[i];
}

__attribute__((noinline)) static void own_sample_take(struct own_sample *o)
{
    uint64_t *r = o->regs;
    __asm__ volatile("movq %%rbx, 24(%0)\n\t"
                     "movq %%rbp, 48(%0)\n\t"
                     "movq %%rsp, 56(%0)\n\t"
                     "movq %%r12, 96(%0)\n\t"
                     "movq %%r13, 104(%0)\n\t"
                     "movq %%r14, 112(%0)\n\t"
                     "movq %%r15, 120(%0)\n\t"
                     "leaq 0(%%rip), %%rax\n\t"
                     "movq %%rax, 128(%0)\n\t"
                     :
                     : "r"(r)
                     : "rax", "memory");
    /* the stack from rsp to the end of its mapping, at most the copy's size */
    uint64_t sp = r[7], top = sp;
    FILE *f = fopen("/proc/self/maps", "re");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && sp >= lo && sp < hi)
            top = hi;
    }
    if (f)
        fclose(f);
    o->len = MIN((size_t)(top - sp), sizeof o->stack);
    copy_raw(o->stack, (const volatile unsigned char *)(uintptr_t)sp, o->len);
    o->nbt = backtrace(o->bt, (int)ARRAY_SIZE(o->bt));
}

/* Report this process's executable segments to u as the kernel mapped them (cpuprof reads them
 * from /proc/PID/maps), the test's own program under alias (NULL: its path). */
struct map_own_ctx {
    struct unwinder *u;
    const char *self;
    bool with_id; /* each mapping names its inode (as the kernel's records do) */
};

static int map_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const struct map_own_ctx *c = arg;
    const char *file = info->dlpi_name[0] ? info->dlpi_name : c->self; /* "": the program */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t at = info->dlpi_addr + ph->p_vaddr, page = (uint64_t)sysconf(_SC_PAGESIZE);
        struct stat st;
        struct unwind_fileid id = {0};
        if (c->with_id && stat(file, &st) == 0)
            id = (struct unwind_fileid){major(st.st_dev), minor(st.st_dev), st.st_ino};
        unwinder_map(c->u, at & -page, at + ph->p_memsz, ph->p_offset & -page, file,
                               c->with_id ? &id : NULL);
    }
    return 0;
}

static bool map_with_id;

static void map_own(struct unwinder *u, const char *alias)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(n, 0);
    self[n] = '\0';
    struct map_own_ctx c = {u, alias ? alias : self, map_with_id};
    dl_iterate_phdr(map_object, &c);
}

/* The frames of o unwound by a new unwinder reading from files; checked against backtrace(3). */
static size_t unwind_own(struct unwind_files *files, const struct own_sample *o, const char *alias,
                         uint64_t *pcs, size_t max)
{
    struct unwinder *u;
    ck_assert_int_eq(unwinder_new(files, &u), 0);
    map_own(u, alias);
    size_t n = unwinder_walk(u, getpid(), (pid_t)syscall(SYS_gettid), o->regs, o->stack, o->len, pcs, max);
    unwinder_free(u);
    /* our first frame is own_sample_take's; then the return addresses backtrace finds, ours less
     * one (the call), from own_sample_take's (backtrace's first, or later where a sanitizer
     * wraps backtrace) to the outermost frame but one */
    int j = 0;
    while (j < o->nbt && n > 1 && (uint64_t)(uintptr_t)o->bt[j] != pcs[1] + 1)
        j++;
    ck_assert_msg(j < o->nbt && o->nbt - j >= 3, "our frame 1 0x%llx is not among backtrace's %d",
                  n > 1 ? (unsigned long long)pcs[1] : 0ull, o->nbt);
    ck_assert_uint_ge(n, (size_t)(o->nbt - j));
    for (int k = 1; k < o->nbt - j; k++)
        ck_assert_msg(pcs[k] + 1 == (uint64_t)(uintptr_t)o->bt[j + k - 1], "frame %d: 0x%llx, backtrace says %p", k,
                      (unsigned long long)pcs[k], o->bt[j + k - 1]);
    return n;
}

/* The sample taken in a function called through a trampoline (test_unwind_past_trampoline);
 * "asm volatile" after the call keeps it a call, not a jump. */
static struct own_sample trampoline_sample;

__attribute__((noinline)) void called_through_trampoline(void);
__attribute__((noinline)) void called_through_trampoline(void)
{
    own_sample_take(&trampoline_sample);
    __asm__ volatile("" ::: "memory");
}

/* through_trampoline(t, f): calls trampoline t with f in rcx, as CPython's evaluator calls its
 * trampolines, from a function that keeps no frame pointer (rbp holds a number, as in an
 * interpreter built without them), its call-frame information written out. */
void through_trampoline(void *t, void (*f)(void));
__asm__(".text\n"
        ".globl through_trampoline\n"
        ".type through_trampoline, @function\n"
        "through_trampoline:\n"
        ".cfi_startproc\n"
        "    push %rbp\n"
        ".cfi_adjust_cfa_offset 8\n"
        ".cfi_rel_offset %rbp, 0\n"
        "    mov $0x1234, %ebp\n"
        "    mov %rdi, %rax\n"
        "    mov %rsi, %rcx\n"
        "    call *%rax\n"
        "    pop %rbp\n"
        ".cfi_adjust_cfa_offset -8\n"
        ".cfi_restore %rbp\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size through_trampoline, .-through_trampoline\n");
#endif

/* The unwinders of many address spaces share their files: each opened once, stacks as deep as
 * glibc's own unwinding finds them; a file changed since it was opened is opened again. */
START_TEST(test_unwinders_share_files)
{
#if defined(__x86_64__) && defined(HAVE_LIBDW)
    static struct own_sample o;
    own_sample_take(&o);
    struct unwind_files *files;
    ck_assert_int_eq(unwind_files_new(&files), 0);
    static uint64_t first[128], pcs[128];
    size_t n = unwind_own(files, &o, NULL, first, ARRAY_SIZE(first));
    size_t opened = unwind_files_opened(files);
    ck_assert_uint_ge(opened, 2); /* the program, libc at least */
    for (int round = 0; round < 20; round++) {
        ck_assert_uint_eq(unwind_own(files, &o, NULL, pcs, ARRAY_SIZE(pcs)), n);
        ck_assert_mem_eq(pcs, first, n * sizeof *pcs);
    }
    ck_assert_uint_eq(unwind_files_opened(files), opened);

    /* the program as a copy: opened once more, then again once it changed (its mtime) */
    char copy[] = "/tmp/unit_forensics.XXXXXX";
    int fd = mkstemp(copy), in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    ck_assert(fd >= 0 && in >= 0);
    static char buf[65536]; /* not on the stack: the copy of 32 KiB above rsp must reach main */
    for (ssize_t k; (k = read(in, buf, sizeof buf)) > 0;)
        ck_assert_int_eq(write(fd, buf, (size_t)k), k);
    close(in);
    close(fd);
    ck_assert_uint_eq(unwind_own(files, &o, copy, pcs, ARRAY_SIZE(pcs)), n);
    ck_assert_uint_eq(unwind_own(files, &o, copy, pcs, ARRAY_SIZE(pcs)), n);
    ck_assert_uint_eq(unwind_files_opened(files), opened + 1);
    struct timespec t[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    ck_assert_int_eq(utimensat(AT_FDCWD, copy, t, 0), 0);
    ck_assert_uint_eq(unwind_own(files, &o, copy, pcs, ARRAY_SIZE(pcs)), n);
    ck_assert_mem_eq(pcs, first, n * sizeof *pcs);
    ck_assert_uint_eq(unwind_files_opened(files), opened + 2);

    /* mappings that name their inode: checked with stat once, then known by it; a copy renamed
     * into the path (a new inode, as a package's update installs it) is opened again */
    map_with_id = true;
    ck_assert_uint_eq(unwind_own(files, &o, copy, pcs, ARRAY_SIZE(pcs)), n);
    size_t checked = unwind_files_checked(files);
    for (int round = 0; round < 5; round++)
        ck_assert_uint_eq(unwind_own(files, &o, copy, pcs, ARRAY_SIZE(pcs)), n);
    ck_assert_uint_eq(unwind_files_checked(files), checked);
    ck_assert_uint_eq(unwind_files_opened(files), opened + 2);
    char other[] = "/tmp/unit_forensics.XXXXXX";
    fd = mkstemp(other);
    in = open(copy, O_RDONLY | O_CLOEXEC);
    ck_assert(fd >= 0 && in >= 0);
    for (ssize_t k; (k = read(in, buf, sizeof buf)) > 0;)
        ck_assert_int_eq(write(fd, buf, (size_t)k), k);
    close(in);
    close(fd);
    ck_assert_int_eq(rename(other, copy), 0);
    ck_assert_uint_eq(unwind_own(files, &o, copy, pcs, ARRAY_SIZE(pcs)), n);
    ck_assert_mem_eq(pcs, first, n * sizeof *pcs);
    ck_assert_uint_eq(unwind_files_opened(files), opened + 3);
    ck_assert_uint_gt(unwind_files_checked(files), checked);
    map_with_id = false;
    unlink(copy);
    unwind_files_free(files);
#else
    check_skip("no CFI unwinder here (x86-64 with libdw only): skipped\n");
#endif
}
END_TEST

/* CPython's perf trampoline (-X perf), as it copies one for each Python function into memory no
 * file maps, without call-frame information: endbr64; sub $8, %rsp; call *%rcx; add $8, %rsp;
 * ret. A stack is unwound past it to the function that called it. */
START_TEST(test_unwind_past_trampoline)
{
#if defined(__x86_64__) && defined(HAVE_LIBDW)
    static const unsigned char code[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08,
                                         0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3};
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *t = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(t != MAP_FAILED);
    memcpy(t, code, sizeof code);
    ck_assert_int_eq(mprotect(t, page, PROT_READ | PROT_EXEC), 0);
    through_trampoline(t, called_through_trampoline);
    struct unwind_files *files;
    struct unwinder *u;
    ck_assert_int_eq(unwind_files_new(&files), 0);
    ck_assert_int_eq(unwinder_new(files, &u), 0);
    map_own(u, NULL);
    static uint64_t pcs[128];
    const struct own_sample *o = &trampoline_sample;
    size_t n = unwinder_walk(u, getpid(), (pid_t)syscall(SYS_gettid), o->regs, o->stack, o->len, pcs, 128);
    unwinder_free(u);
    unwind_files_free(files);
    munmap(t, page);
    size_t k = 0;
    while (k < n && !(pcs[k] >= (uintptr_t)t && pcs[k] < (uintptr_t)t + sizeof code))
        k++;
    ck_assert_msg(k < n, "no frame in the trampoline among %zu", n);
    /* then the call in through_trampoline (15 bytes), and on to this test's */
    uint64_t caller = (uint64_t)(uintptr_t)through_trampoline;
    ck_assert_msg(k + 1 < n, "the stack ends in the trampoline (frame %zu of %zu)", k, n);
    ck_assert_msg(pcs[k + 1] > caller && pcs[k + 1] < caller + 16, "past the trampoline: 0x%llx, its caller at 0x%llx",
                  (unsigned long long)pcs[k + 1], (unsigned long long)caller);
    ck_assert_uint_ge(n, k + 3);
#else
    check_skip("no CFI unwinder here (x86-64 with libdw only): skipped\n");
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("forensics");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_parked_child);
    tcase_add_test(tc, test_stranger_and_budget);
    tcase_add_test(tc, test_unwinders_share_files);
    tcase_add_test(tc, test_unwind_past_trampoline);
    suite_add_tcase(s, tc);
    TCase *tc_wake = tcase_create("wake");
    tcase_set_timeout(tc_wake, 120);
    tcase_add_test(tc_wake, test_signal_after_stacks_wakes);
    suite_add_tcase(s, tc_wake);
    return check_run(s);
}
