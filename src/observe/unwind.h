/* unwind.h — unwinding the sampled stacks (cpuprof.h) of code without frame pointers: the
 * stacks of processes that may have ended long before, from a copy of each sample's user stack
 * and registers, with the CFI of the files mapped (observe layer; libdw's unwinder). */
#ifndef RESMON_UNWIND_H
#define RESMON_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Code without frame pointers (most distributions' packages) is
 * unwound for the sampled stacks (cpuprof.h) from a copy of the sample's user stack and registers,
 * with the modules' CFI (their .eh_frame: never their debuginfo, which would be read anew for
 * each address space), by libdwfl's own unwinder (no DWARF interpreter of ours): one unwinder
 * per address space, its files reported as they are mapped. x86-64 only; elsewhere, and without
 * libdw, nothing is unwound (0 frames).
 * The files are opened once for all the address spaces (struct unwind_files): a tree of short
 * processes maps the same few files (the shell, libc, the dynamic loader) in each process, and
 * opening, mapping, parsing and unmapping them for each one was most of the unwinder's cost.
 * Each file's ELF handle (libelf's, reference-counted: each unwinder's module holds one
 * reference) reads its sections with pread, never through a mapping of the file (a file
 * truncated in place while cached would fault a mapping); its .eh_frame is read once. A file is
 * checked with stat (device, inode, size, mtime) at each new mapping, unless the mapping names the
 * inode (as the kernel reports mappings: device and inode) the cached file was last checked
 * for: a file replaced since it was opened (a package's update renames a new file into place)
 * is opened again for the address spaces that map it from then on; one rewritten in place under
 * the same inode is told only by a mapping that names no inode. At most
 * UNWIND_FILES_MAX files (each holds a descriptor); past them, each unwinder opens its own. */
#define UNWIND_FILES_MAX 128
struct unwind_files;
int unwind_files_new(struct unwind_files **ret);
/* How many times a file was opened for the unwinders (the cache's misses). */
size_t unwind_files_opened(const struct unwind_files *c);
/* How many times a file was checked with stat. */
size_t unwind_files_checked(const struct unwind_files *c);
/* After the unwinders that read from it. */
void unwind_files_free(struct unwind_files *c);
struct unwinder;
/* An unwinder reading its files from files (NULL: it opens its own). */
int unwinder_new(struct unwind_files *files, struct unwinder **ret);
/* The inode a mapping maps, as /proc/PID/maps and the kernel's mmap records name it (ino 0:
 * not known). */
struct unwind_fileid {
    uint32_t maj, min;
    uint64_t ino;
};
/* An executable mapping of the space: file mapped at start, from offset pgoff; id: the inode it
 * maps, NULL: not known. */
void unwinder_map(struct unwinder *u, uint64_t start, uint64_t end, uint64_t pgoff,
                            const char *file, const struct unwind_fileid *id);
/* The frames of one sample, innermost first (return addresses less one), at most max: regs in
 * DWARF order (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, rip), stack the copy of
 * stack_len bytes from rsp. Along the files' CFI (libdw); past code no file maps (a JIT's) along
 * its frame pointer where it keeps one, else where it is a trampoline of CPython's (-X perf: its
 * caller's return address right above the stack pointer), each only to a return address right
 * after a call instruction in a mapped file, or into more such code. Returns how many. */
size_t unwinder_walk(struct unwinder *u, pid_t pid, pid_t tid, const uint64_t *regs, const void *stack,
                        size_t stack_len, uint64_t *pcs, size_t max);
void unwinder_free(struct unwinder *u);

#endif
