/* profile_stacks.h — the stream's stack lines (forensics.h: one per thread of a process dumped at
 * a stop) as threads of the profile, for the converter (profile.h).
 *
 * Each dumped process becomes one thread of the profile after the run's own: its own track,
 * processName its command line, name its executable's name, pid its pid (a string, as the
 * front-end wants), tid its pid. Each of its threads is one sample at the time its stack was
 * taken (made strictly increasing, 1 us apart at least, so that the Stack Chart, which draws a
 * sample until the next one, shows every thread), whose stack
 * is the thread's frames under a root frame naming the thread ("thread TID NAME"), so the Call
 * Tree and the Stack Chart show every thread of every process where it was stuck. The tables are
 * the processed format's (preprocessedProfileVersion 47): samples, stackTable, frameTable,
 * funcTable, a stringArray of its own; one function per distinct name, one frame per function.
 *
 * Stack lines are kept whole (a dump is bounded by its budget; past PSTACKS_MAX_BYTES in all,
 * lines are refused and the converter counts them as skipped). Lines that do not hold a pid, a tid
 * and an array of frame names are skipped when written. Two dumps of the same pid (a second stop)
 * add samples to the same thread.
 */
#ifndef RESMON_PROFILE_STACKS_H
#define RESMON_PROFILE_STACKS_H

#include <stddef.h>

#include "jsonw.h"

#define PSTACKS_MAX_BYTES (64u << 20)

struct pstacks;

/* Keep one stack line. Returns 1 when kept, 0 when refused (the bound), -ENOMEM. */
int pstacks_add(struct pstacks **ps, const char *line, size_t len);
/* The thread of each dumped process, comma-separated, into w (freshly initialised or reset: the
 * threads are its top-level values). Nothing when there is none. */
void pstacks_write(const struct pstacks *ps, struct jsonw *w);
/* Processes the lines describe (threads pstacks_write adds). */
size_t pstacks_processes(const struct pstacks *ps);
void pstacks_free(struct pstacks *ps);

#endif
