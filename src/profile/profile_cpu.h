/* profile_cpu.h — the stream's sampled stacks (cpuprof.h: cpuprofile, cpuspace, cpumap,
 * cputhread, cpusamples and cpuend lines) as threads of the profile, for the converter
 * (profile.h).
 *
 * Each sampled OS thread becomes one thread of the profile, after the run's own and the dumped
 * ones (profile_stacks.h), a process's threads together, the main thread first: processType
 * "command", processName the process's command line, name the thread's last name, pid and tid.
 * Its samples are the front-end's own tables (preprocessedProfileVersion 47: samples with their
 * real times, stackTable, frameTable, funcTable, resourceTable, a stringArray of its own), so that
 * the Call Tree, the Flame Graph and the Stack Chart show them, a test marker's range selects its
 * samples, and the process track draws its CPU activity. Every stack is of category Running where
 * the meta has it (markers.h).
 *
 * NAMES: each distinct place of code is named once, when the profile is written: an address in a
 * mapped file (the space's recorded mappings; a forked process's space starts with its parent's)
 * as an offset into that file, by forensics_syms (the dump's libdwfl session, one per file);
 * an address outside any file from the process's /tmp/perf-PID.map, where a runtime names its
 * JIT code (library "JIT"); a kernel address (space 0) from /proc/kallsyms as "function
 * [kernel]" (library "kernel"; this boot's symbols, readable by root); else "0xADDRESS". A
 * function is a distinct name and library.
 *
 * BOUNDED by the sampler's caps (cpuprof.h): the lines are not kept, only their content (a node is
 * 16 bytes, a sample 16 bytes). Lines that do not parse are counted as skipped by the caller.
 *
 * META: the profile's meta gets "cpuProfile": {"hz":N,"samples":N,"dropped":N,"lost":N} when
 * sampling ran, {"error":S} when the kernel refused it (cpuprof.h).
 */
#ifndef RESMON_PROFILE_CPU_H
#define RESMON_PROFILE_CPU_H

#include <stdbool.h>
#include <stddef.h>

#include "base/jsonw.h"

struct pcpu;

/* Whether a line of this type (the raw JSON text of its "type" value, quotes included) is one of
 * the sampler's. */
bool pcpu_type(const char *type, size_t len);
/* Take one of the sampler's lines. 1 taken, 0 invalid, -ENOMEM. */
int pcpu_add(struct pcpu **pc, const char *line, size_t len);
/* Threads pcpu_write adds. */
size_t pcpu_threads(const struct pcpu *pc);
/* Whether pcpu_write adds a thread pid/tid (pc: a struct pcpu, NULL none; pstacks_write's test). */
bool pcpu_sampled(const void *pc, int pid, int tid);
/* The sampled threads, comma-separated, appended to w. ncat: the categories the meta has. */
void pcpu_write(struct pcpu *pc, unsigned ncat, struct jsonw *w);
/* ,"cpuProfile":{...} for the meta, appended to w; nothing when the stream has no sampler line. */
void pcpu_meta(const struct pcpu *pc, struct jsonw *w);
/* The n functions (by name) most often innermost in the samples, most first, into names and
 * counts (names valid until the next pcpu_write or pcpu_free); returns how many, *ret_total the
 * samples in all. Named by the last pcpu_write: 0 before any. */
size_t pcpu_hottest(const struct pcpu *pc, const char **names, uint64_t *counts, size_t n, uint64_t *ret_total);
void pcpu_free(struct pcpu *pc);

#endif
