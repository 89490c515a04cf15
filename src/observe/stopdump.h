/* stopdump.h — the dump of the tree at a stop, the whole of it: forensics.h records one report;
 * this module runs a stop's dump from the tree's membership to the files, so that the run only
 * says when (after the stop's first finalization, before its first signal) and waits for it in
 * its own loop, beside its signals, its parent and its deadlines: the dump never waits on its own.
 *
 * In order: stopdump_start records the report on every live member of the tree, the command
 * first, within the budget (one call: reading /proc and unwinding is work, not waiting); then,
 * within what is left of it, the runtimes' own dumps asked for (--dump=go,java,python:
 * forensics.h's RUNTIME DUMPS), one at a time, the leaves of the tree first (the go tool, which
 * only relays SIGQUIT to its test binary, is not signalled), each signalled through a pidfd held
 * while its membership is checked, what the command prints meanwhile kept (stopdump_keep) while
 * the run passes it on and parses it as always, until it has exited and the output is quiet (Go,
 * Python: a parent may relay it), its output is quiet (a JVM), or the budget ends. The run
 * polls the runtime's pidfd (stopdump_events) with its own descriptors, until stopdump_deadline,
 * and calls stopdump_step after each wake-up: true when the dump is complete. stopdump_finish
 * ends it, complete or cut short (a second stop request, the parent's death: the runtime being
 * dumped keeps what it printed so far, the ones not yet asked are left out, and say so), and
 * writes it: the test each process ran under (the innermost open one that had started when it
 * did); a stack line per thread and a "process dump" marker per process in the stream, a "dump
 * cut off" warning when the budget cut stacks off; and the text file (written as the profile is,
 * outfile.h: replaced, never written into; its text sanitized, since command lines and runtimes'
 * dumps are the command's bytes).
 *
 * The run's output is the run's: the module only asks it to flush the stream before a runtime is
 * signalled and to read what is left in the pipes once a runtime has ended (struct
 * stopdump_output). What the summary takes of the report is summary.h's (summary_add_dump).
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

#define STOPDUMP_KEEP_MAX (1u << 20) /* bytes of a runtime's dump kept per process */

/* The command's output while a runtime dumps: read, passed on and parsed as always by the run,
 * which appends what it read to stopdump_keep's buffer (at most STOPDUMP_KEEP_MAX bytes). */
struct stopdump_output {
    void *ctx;
    bool interposed; /* the output passes through resmon-run (else a dump is passed on, not kept) */
    /* Before a runtime is signalled: what the output produced so far goes to the stream. */
    void (*flush)(void *ctx);
    /* Read what is still in the pipes (into the keep buffer), until they are empty now or the
     * deadline. */
    void (*read_left)(void *ctx, uint64_t deadline);
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

struct stopdump_runtime; /* the runtime being dumped (stopdump.c) */

/* A dump under way, then done. The config is copied; what it points to must outlive the dump. */
struct stopdump {
    struct stopdump_config cfg;
    struct forensics_report rep; /* each process's test is a copy the dump owns */
    bool text_written;           /* the text file is at text_path (after stopdump_finish) */
    uint64_t deadline;           /* the budget's end */
    size_t *order;               /* the processes whose runtime is asked, in order */
    int *sig;                    /* and the signal each is asked with (0: not signalled) */
    size_t norder, next;         /* how many; the next one to ask */
    struct stopdump_runtime *cur; /* the one being dumped, NULL: none */
};

/* Record the report on the tree, and list the runtimes to ask (cfg->runtimes; the first call to
 * stopdump_step asks the first). Returns 0 with *d under way (stopdump_finish, then stopdump_free
 * it), 1 when the tree had no live member (nothing to free), or -errno (said). */
int stopdump_start(const struct stopdump_config *cfg, struct stopdump *d);
/* What the run's output is kept in now (the runtime being dumped's), NULL: nothing is kept. */
struct jsonw *stopdump_keep(struct stopdump *d);
/* The entry to poll for (the pidfd of the runtime being dumped, at most one): how many (0, 1). */
int stopdump_events(const struct stopdump *d, struct pollfd *pfd);
/* After poll: what it found in pfd (as stopdump_events filled it; n the number it returned). */
void stopdump_handle(struct stopdump *d, const struct pollfd *pfd, int n);
/* When the dump must next be stepped, if nothing happens before (NS_INFINITY: never). */
uint64_t stopdump_deadline(const struct stopdump *d);
/* Move the dump on (the runtime being dumped has ended or was quiet long enough, or the budget
 * ended: the next one is asked). True when it is complete: nothing is left to wait for. */
bool stopdump_step(struct stopdump *d);
/* End the dump (cut_short: before it was complete, at once) and write it: the stream, the text
 * file. */
void stopdump_finish(struct stopdump *d, bool cut_short);
void stopdump_free(struct stopdump *d);

#endif
