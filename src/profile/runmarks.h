/* runmarks.h — the run's own markers: the command, the stop (the "timeout" marker, or the limit's
 * name), each kill step, each finalization. Their schemas and the builders of their payloads,
 * side by side (markers.h: one owner per type). Pure: the builders take plain facts and write
 * the payload into w (jsonw_failed tells when it could not be built).
 *
 *   name       type       when                               data
 *   command    Command    the command's start → its exit     cmd, pid, exit, reason, tier, cpuTime,
 *                                                            maxRSS, leftovers; signal when stopped
 *   timeout    Timeout    the stop, before any signal        stop, reason, limit, after, signal,
 *                                                            received, openTests, liveProcesses
 *                                                            (those two only when not empty)
 *   (named "memory limit", "CPU limit", "tasks limit" when a resource limit stopped the run:
 *   runmarks_stop_name; readers find the stop by its type, Timeout, or these names)
 *   kill       KillStep   each signal that reached processes signal, reason, targets
 *   finalize   Finalize   each conversion of the stream      reason, streamLines, writeErrors
 *
 * The command also has an open state line from its start (runmarks_command_open_line), so a
 * profile written while it runs — at a stop, or recovered from a killed run's stream — still has
 * its command marker.
 */
#ifndef RESMON_RUNMARKS_H
#define RESMON_RUNMARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/markers.h"

extern const struct marker_type runmarks_command_type;
extern const struct marker_type runmarks_timeout_type;
extern const struct marker_type runmarks_killstep_type;
extern const struct marker_type runmarks_finalize_type;

/* Why a run ended, as the command marker and the summary say it. */
enum runmarks_reason {
    RUN_EXIT,           /* the command exited by itself */
    RUN_SIGNAL,         /* the command died of a signal nobody here sent */
    RUN_TIMEOUT,        /* --timeout (or SIGALRM) */
    RUN_OUTPUT_TIMEOUT, /* --output-timeout */
    RUN_STOPPED,        /* a stop request: TERM, INT, HUP, ... to resmon-run */
    RUN_PARENT_DIED,    /* resmon-run's parent went away */
    RUN_EXEC_FAILED,    /* the command could not be run (126/127) */
    RUN_MEMORY,         /* --memory-limit reached */
    RUN_CPU,            /* --cpu-limit reached */
    RUN_TASKS,          /* --tasks-limit reached */
    RUN_OOM_KILL,       /* the kernel's OOM killer killed the command itself */
};
const char *runmarks_reason_name(enum runmarks_reason r);
/* The reason a name gives back, in the vocabulary of the marker it was read from: the command
 * marker's (runmarks_reason_name), or with stop_marker the timeout marker's, where "signal" is a
 * stop request (RUN_STOPPED), not the command's own death. false: none (NULL, "running", or a
 * name this build does not know). */
bool runmarks_reason_parse(const char *name, bool stop_marker, enum runmarks_reason *ret);
/* The timeout marker's word for a stop's reason ("signal" for RUN_STOPPED, else as
 * runmarks_reason_name): its "reason" field, and the finalize and kill markers' "why". */
const char *runmarks_stop_reason_name(enum runmarks_reason r);

struct runmarks_command {
    const char *const *argv;
    int argc;
    pid_t pid;        /* 0: never started */
    int wstatus;      /* wait status of the command */
    const char *tier; /* containment tier */
    enum runmarks_reason reason;
    int stop_signal;  /* RUN_STOPPED, RUN_PARENT_DIED: the signal received / sent */
    bool have_cpu;
    uint64_t cpu_ns;  /* the tree's CPU time over the run */
    uint64_t max_rss; /* the tree's peak RSS, 0: unknown */
    size_t leftovers; /* processes still alive when the command exited */
};
void runmarks_command_payload(struct jsonw *w, const struct runmarks_command *c);
/* The command's open state line (profile.h), at its start t_ms (ms since profile time 0). */
void runmarks_command_open_line(struct jsonw *w, const struct runmarks_command *c, double t_ms);
/* The matching close line. */
void runmarks_command_close_line(struct jsonw *w);

struct runmarks_process {
    pid_t pid;
    const char *cmd;
    size_t cmd_len;
};

struct runmarks_stop {
    enum runmarks_reason reason; /* RUN_TIMEOUT, RUN_OUTPUT_TIMEOUT, RUN_STOPPED, RUN_PARENT_DIED,
                                    RUN_MEMORY, RUN_CPU, RUN_TASKS */
    const char *limit;           /* the limit and the figure that reached it, NULL: none */
    const char *figure;          /* RUN_MEMORY, RUN_CPU, RUN_TASKS: the limit's own figure
                                    (limits_figure), NULL: none */
    uint64_t after_ns;           /* RUN_TIMEOUT, RUN_OUTPUT_TIMEOUT: the duration that ran out */
    int signal;                  /* the signal the tree is sent (0 is GNU timeout's -s 0) */
    bool ended;                  /* nothing was sent: the command had ended (a kernel-enforced limit) */
    int received;                /* RUN_STOPPED: the signal resmon-run received */
    const char *const *open_tests;
    size_t n_open;
    const struct runmarks_process *procs;
    size_t n_procs;
};
void runmarks_stop_payload(struct jsonw *w, const struct runmarks_stop *s);
/* The stop marker's name for reason r: "memory limit", "CPU limit", "tasks limit", else
 * "timeout". */
const char *runmarks_stop_name(enum runmarks_reason r);

/* A kill step: sig sent to targets processes, and why ("timeout", "kill-after", "grace",
 * "leftovers", "second stop request"). */
void runmarks_kill_payload(struct jsonw *w, int sig, const char *why, unsigned targets);

/* A finalization: why ("end", "timeout", ...), the stream's lines so far, and its health: failed
 * writes, lines waiting to be written, lines lost (stream.h). */
struct stream_health;
void runmarks_finalize_payload(struct jsonw *w, const char *why, uint64_t stream_lines,
                               const struct stream_health *h);

#endif
