/* state.h — the state of one run, shared by the files of the run's module (not a public header):
 * supervise.c, the loop, its phases and the stop sequence; setup.c, setting a run up and taking it
 * down; record.c, what the run records of itself (its markers, the reports' facts).
 */
#ifndef RESMON_RUN_STATE_H
#define RESMON_RUN_STATE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/jsonw.h"
#include "base/linebuf.h"
#include "base/markers.h"
#include "observe/contain.h"
#include "observe/leaks.h"
#include "observe/limits.h"
#include "observe/sampler.h"
#include "observe/stopdump.h"
#include "profile/profile.h"
#include "profile/runmarks.h"
#include "profile/stream.h"
#include "profile/usermark.h"
#include "report/sinks.h"
#include "report/summary.h"
#include "run/passthru.h"
#include "run/supervise.h"
#include "run/watchdog.h"
#include "testlog/testlog.h"

enum phase {
    PH_RUNNING,   /* the command runs, nothing asked it to stop */
    PH_DUMPING,   /* a stop: the tree is dumped (--dump), waiting for the runtimes' dumps */
    PH_STOPPING,  /* the stop signal was sent; waiting for the command */
    PH_LEFTOVERS, /* the command is gone; stopping what it left behind */
    PH_DRAIN,     /* everything is gone or left alone; passing the last output on */
    PH_DONE,
};

/* The run's own limits (a timeout, an output timeout, a resource limit) stop it as GNU timeout
 * does: exit 124 unless --preserve-status, the KILL where the signal went. */
static inline bool own_limit(enum runmarks_reason c)
{
    return c == RUN_TIMEOUT || c == RUN_OUTPUT_TIMEOUT || c == RUN_MEMORY || c == RUN_CPU ||
           c == RUN_TASKS;
}

struct sv {
    const struct options *o;
    uint64_t t0;
    double wall0;
    const struct marker_sink *sink; /* where markers go (the stream), NULL without a profile */
    struct stream *stream;
    struct profile_conv *conv; /* reads the stream as it grows (NULL: finalize reads it all) */
    struct sinks *sinks;       /* every report (sinks.h) */
    uint64_t conv_lines;       /* stream lines when conv last caught up */
    int profile_lock;          /* the last profile renamed over the path, kept locked */
    struct stream_health health_said; /* stream trouble already said on stderr */
    uint64_t tree_cpu;         /* probe_tree_cpu's reading for the current chunk of output */
    bool tree_cpu_valid;
    uint64_t tree_rss;         /* probe_tree_rss's, likewise */
    bool tree_rss_valid;
    char *profile_path;
    char *dump_path;            /* the dump's text file, once written */
    unsigned finalizations;
    struct sampler *sampler;
    struct cpuprof *cpuprof; /* --cpu-profile, NULL: off */
    int timerfd;
    struct testlog *testlog;
    struct linebuf *lb[2];
    struct usermark *um;
    struct summary_facts *sum;  /* the reports' facts (sinks_facts), NULL with --quiet (and no CI) */
    bool open_error_said;       /* open_stream said why it failed */
    uint64_t last_sample_ns, last_sample_cpu;
    int sigfd, parentfd;
    struct contain *contain;
    struct limits *limits;
    char limit_text[320];       /* the limit reached and the figure (RUN_MEMORY/CPU/TASKS); room for
                                 * the OOM victim's whole cut command line (sampler_killed.cmd) */
    uint64_t deadline_cpu;      /* when to read the tree's CPU time against --cpu-limit */
    unsigned ncpu;
    bool root_oom_killed;       /* the kernel's OOM killer killed the command itself */
    struct watchdog *watchdog;
    pid_t pid;
    bool exited;
    int wstatus;
    uint64_t exit_ns;
    struct passthru *pt[2];     /* the command's stdout and stderr (NULL: not interposed) */
    uint64_t last_output_ns;
    uint64_t deadline_timeout, deadline_output, deadline_kill, deadline_grace;
    enum phase phase;
    enum runmarks_reason cause; /* why the run was stopped (the stop marker's); RUN_EXIT: it was not */
    int stop_signal;
    bool stop_ended; /* the stop found the command ended (a kernel-enforced limit): nothing sent */
    int received_signal;        /* the stop request's signal (RUN_STOPPED) */
    int last_request;           /* the last stop signal received, and when */
    uint64_t last_request_ns;
    bool exec_failed;
    uint64_t stop_ns;
    bool timed_out;             /* own_limit(cause): GNU timeout's semantics */
    bool kill_sent;
    bool tty_given;
    size_t leftovers;           /* processes found alive after the command exited */
    /* the sweep of leftovers: KILL passes after the grace, until none is alive */
    bool sweeping, sweep_gave_up;
    uint64_t sweep_give_up;
    bool watch_complete;        /* every member has a descriptor in the poll set */
    struct stopdump *dump;      /* the dump under way (DUMPING), NULL: none */
    struct stopdump_output dump_out; /* the run's output, as the dump sees it */
    struct leaks leaks;         /* processes tests left behind, with the test: who started a leftover */
};

/* What setting up holds until the run is taken down (setup.c). */
struct run_setup {
    int child_out[2], child_err[2]; /* the command's ends of its stdout and stderr pipes */
    char *mark;                     /* the watchdog's mark in the command's environment */
    sigset_t orig_mask;             /* the caller's, given back to the command */
    bool chld_ignored, xfsz_ignored;
};

static inline void emit(struct sv *sv, const char *name, uint64_t start, uint64_t end, int cat, struct jsonw *w)
{
    if (!jsonw_failed(w))
        marker_emit(sv->sink, name, start, end, cat, w->buf, w->len);
}

/* checkpoint.c: write the stream and rename a complete profile over it, and the reports with it
 * (before any child is signalled on a stop, after a dump, at the very end); let the converter and
 * the reports read what the stream gained (every FOLLOW_LINES lines, any: whatever it gained); the
 * status of the tests still open at the end (TIMEOUT after a timeout or the CPU limit) */
void profile_checkpoint(struct sv *sv, const char *why);
void follow_stream(struct sv *sv, bool any);
bool open_status_timeout(const struct sv *sv);

/* supervise.c */
int setup_signals(struct sv *sv, sigset_t *ret_orig_mask, bool *ret_chld_ignored, bool *ret_xfsz_ignored);
void watch_parent(struct sv *sv);

/* record.c: the run's own markers (runmarks.h) and the reports' facts */
size_t live_processes(struct sv *sv, struct runmarks_process **ret, char **ret_cmds);
void emit_timeout_marker(struct sv *sv, uint64_t now);
void open_harness_tests(struct sv *sv);
void emit_kill_step(struct sv *sv, int sig, unsigned targets, const char *why);
void record_oom(struct sv *sv, const struct sampler_killed *k);
void command_facts(struct sv *sv, struct runmarks_command *c);
void open_command_marker(struct sv *sv);
void emit_command_marker(struct sv *sv);
void fill_facts(struct sv *sv, struct summary_facts *f, int exit_status, uint64_t end_ns);
/* The facts at a stop (sinks_run.facts_now). */
void run_facts_now(void *ctx, struct summary_facts *f);

/* setup.c: everything before the command is spawned (0 or -errno, said); spawning it (0, 1 when
 * it could not be run and *ret says so, or -errno); taking it all down. */
int run_setup(struct sv *sv, struct run_setup *su);
int run_start(struct sv *sv, struct run_setup *su, struct supervise_result *ret);
void run_teardown(struct sv *sv, struct run_setup *su);

#endif
