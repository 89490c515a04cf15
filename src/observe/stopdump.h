/* stopdump.h — the dump of the tree at a stop, the whole of it: forensics.h records one report;
 * this module runs a stop's dump from the tree's membership to the files, so that the run only
 * says when (after the stop's first finalization, before its first signal).
 *
 * In order: the report on every live member of the tree, the command first, within the budget;
 * then, within what is left of it, the runtimes' own dumps asked for (--dump=go,java,python:
 * forensics.h's RUNTIME DUMPS), the leaves of the tree first (the go tool, which only relays
 * SIGQUIT to its test binary, is not signalled), each signalled through a pidfd held while its
 * membership is checked, its output kept while it is passed on and parsed as always, until it
 * has exited and the output is quiet (Go, Python: a parent may relay it), its output is quiet (a
 * JVM), or the budget ends; the test each process ran under (the
 * innermost open one that had started when it did); a stack line per thread and a "process dump"
 * marker per process in the stream, a "dump cut off" warning when the budget cut stacks off; and
 * the text file (written as the profile is, outfile.h: replaced, never written into; its text
 * sanitized, since command lines and runtimes' dumps are the command's bytes).
 *
 * The run's output is the run's: the module reads it through struct stopdump_output while a
 * runtime dumps. What the summary takes of the report is summary.h's (summary_add_dump).
 */
#ifndef RESMON_STOPDUMP_H
#define RESMON_STOPDUMP_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/jsonw.h"
#include "base/markers.h"
#include "observe/contain.h"
#include "observe/forensics.h"

#define STOPDUMP_OUTPUT_FDS 8      /* poll entries the command's output may take */
#define STOPDUMP_KEEP_MAX (1u << 20) /* bytes of a runtime's dump kept per process */

/* The command's output while a runtime dumps: passed on and parsed as always by the run, and
 * what was read appended to keep (at most STOPDUMP_KEEP_MAX bytes in all). */
struct stopdump_output {
    void *ctx;
    bool interposed; /* the output passes through resmon-run (else a dump is passed on, not kept) */
    /* Before a runtime is signalled: what the output produced so far goes to the stream. */
    void (*flush)(void *ctx);
    /* Its poll entries into pfd (at most STOPDUMP_OUTPUT_FDS): how many. */
    int (*events)(void *ctx, struct pollfd *pfd);
    /* After poll: read what it found in pfd (as events filled it). */
    void (*handle)(void *ctx, const struct pollfd *pfd, struct jsonw *keep);
    /* Read what is still in the pipes, until they are empty now or the deadline. */
    void (*read_left)(void *ctx, struct jsonw *keep, uint64_t deadline);
};

struct stopdump_config {
    struct contain *contain; /* the tree */
    pid_t command;           /* listed first */
    uint64_t budget_ns;      /* the whole dump (forensics_config.budget_ns) */
    unsigned runtimes;       /* FORENSICS_RT_* asked for (--dump=), 0: none */
    const struct stopdump_output *output;
    const struct marker_sink *sink;          /* the stream; NULL: none */
    double (*ms_of)(void *ctx, uint64_t ns); /* the stream's clock, for the stack lines */
    void *ms_ctx;
    /* The test open at ns (NULL: none), the innermost; NULL: no test log. */
    const char *(*test_at)(void *ctx, uint64_t ns);
    void *test_ctx;
    const char *text_path; /* the text file; NULL: none */
};

struct stopdump {
    struct forensics_report rep; /* each process's test is a copy the dump owns */
    bool text_written;           /* the text file is at text_path */
};

/* Dump the tree. Returns 0 with *ret filled (stopdump_free it), 1 when the tree had no live
 * member (nothing to free), or -errno (said). */
int stopdump_run(const struct stopdump_config *cfg, struct stopdump *ret);
void stopdump_free(struct stopdump *d);

#endif
