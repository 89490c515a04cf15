/* profile_stacks.h — the stream's stack lines (forensics.h: one per thread of a process dumped at
 * a stop) as threads of the profile, for the converter (profile.h).
 *
 * Each dumped OS thread becomes one thread of the profile after the run's own, a process's threads
 * together (the main thread first, its track the process's, the others below it): processType
 * "command" (not the front-end's "default", its parent process, whose track it puts first: the
 * run's own thread is that), processName the command line, name the thread's own
 * (/proc/PID/task/TID/comm; a main thread's with " (pid N)" after it when another dumped process's
 * main thread, or the run's own thread, has the same name, so no two process tracks read the same), pid the process's (a
 * string, as the front-end wants), tid the thread's. The process's track starts when the process
 * did and the thread's when it did (the line's "start" and "threadStart"; the dump's time when a
 * line lacks them), so a process that ran the whole run spans it, and ends where the process did
 * when its process marker says so (pstacks_note_end: killed at the stop, the track ends there).
 * Each stack taken is one sample at the time it was taken (made strictly increasing, 1 us apart
 * at least), whose stack is the thread's frames under a root frame naming the thread ("thread TID NAME"); before the
 * first, where the thread started (when the line says it), a sample of a frame "(not sampled before the dump)"
 * under that root, of category Other: nothing is known of that time (without it the front-end hatches that time
 * as "this buffer was empty"; a sample without a stack it takes for broken data). The category of every other
 * stack of a thread, and of its frames (the front-end takes a stack's from its frame's), is its state when dumped (markers.h: Running, Sleeping, Disk wait, Stopped; Other for the rest,
 * and for a stream whose meta lacks those categories), so the one thread spinning stands out in
 * the activity graph. A function is a distinct name, source file and line (funcTable fileName and
 * lineNumber, where debuginfo gave them), and library (a resource of type library, by its file's
 * name: the profile has no libs table, nothing to symbolicate). The tables are the processed
 * format's (preprocessedProfileVersion 47): samples, stackTable, frameTable, funcTable,
 * resourceTable, a stringArray of its own; one frame per function.
 *
 * Stack lines are kept whole (a dump is bounded by its budget; past PSTACKS_MAX_BYTES in all,
 * lines are refused and the converter counts them as skipped). Lines that do not hold a pid, a tid
 * and an array of frame names are skipped when written. Two dumps of the same thread (a second
 * stop) add samples to the same thread.
 */
#ifndef RESMON_PROFILE_STACKS_H
#define RESMON_PROFILE_STACKS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/jsonw.h"

#define PSTACKS_MAX_BYTES (64u << 20)

struct pstacks;

/* Keep one stack line. Returns 1 when kept, 0 when refused (the bound), -ENOMEM. */
int pstacks_add(struct pstacks **ps, const char *line, size_t len);
/* The thread of each dumped thread, comma-separated, into w (freshly initialised or reset: the
 * threads are its top-level values). ncat: the categories the profile's meta has; run_name: the
 * run's own thread's name (NULL: none), which a dumped main thread's is told apart from;
 * sampled(ctx, pid, tid): whether the profile has that thread's sampled stacks too (profile_cpu.h;
 * NULL: none), whose thread is then the process's main one: the dump's is a thread of that process
 * named "NAME (at the stop)" (the front-end gives a second main thread of a pid no track at all).
 * Nothing when there is none. */
void pstacks_write(const struct pstacks *ps, unsigned ncat, const char *run_name,
                   bool (*sampled)(const void *ctx, int pid, int tid), const void *ctx, struct jsonw *w);
/* A process of the tree ended at end_ms (its process marker): a dumped one's track ends there
 * (processShutdownTime; null while it lives). Others are ignored. */
void pstacks_note_end(struct pstacks *ps, int pid, double end_ms);
/* Threads pstacks_write adds. */
size_t pstacks_threads(const struct pstacks *ps);
void pstacks_free(struct pstacks *ps);

/* The tables of one thread of the profile, shared with the sampled stacks (profile_cpu.h): a
 * stringArray; funcTable (name, fileName and resource indexes, SIZE_MAX none; lineNumber, 0 none;
 * ffile and fline may be NULL: none at all); resourceTable (libraries by name); stackTable
 * (prefix SIZE_MAX: none; frame i is function i); samples (stack, time in ms). */
struct ptables {
    char *const *str;
    size_t nstr;
    const size_t *fname, *ffile, *fres;
    const int *fline;
    size_t nfunc;
    const size_t *rname;
    size_t nres;
    const size_t *prefix, *frame;
    size_t nstack;
    const size_t *sstack;
    const double *stime;
    size_t nsample;
    size_t unseen; /* 1 + the function standing for the time before the first stack, whose frame is
                    * of category Other (0: none) */
};
/* Its members of a thread object open in w: unregisterTime (null), pausedRanges (none),
 * showMarkersInTimeline (false), then from "samples" to "markers" (empty), every stack and frame
 * of category cat (a number's text) but the unseen one's. */
void ptables_write(struct jsonw *w, const struct ptables *t, const char *cat);

#endif
