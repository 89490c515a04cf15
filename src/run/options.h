/* options.h — what a run is given: the options the command line (cli.h) fills in and the run
 * (supervise.h) and the reports read, and resmon-run's own exit statuses. A plain struct, so that
 * every layer below the command line can take it without knowing how it was parsed.
 */
#ifndef RESMON_OPTIONS_H
#define RESMON_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/ghactions.h"
#include "observe/contain.h"

/* Exit statuses of resmon-run itself (GNU timeout's). */
enum {
    EXIT_TIMEDOUT = 124,
    EXIT_CANCELED = 125, /* resmon-run failed or was misused */
    EXIT_CANNOT_INVOKE = 126,
    EXIT_ENOENT = 127,
};

enum cli_action {
    CLI_RUN,      /* supervise argv */
    CLI_RECOVER,  /* --recover STREAM */
    CLI_MARK,     /* --mark ...: write a record to $RESMON_FD */
    CLI_COMPARE,  /* --compare OLD NEW */
    CLI_EXIT,     /* --help/--version printed: exit 0 */
};

struct meta_kv {
    const char *key, *value;
};

struct options {
    enum cli_action action;
    bool timeout_mode;          /* invoked as *timeout */
    uint64_t timeout_ns;        /* 0 = none */
    int signal;                 /* sent on timeout; 0 allowed */
    uint64_t kill_after_ns;     /* 0 = never send KILL */
    bool preserve_status, foreground, verbose, quiet;
    uint64_t output_timeout_ns; /* 0 = none */
    const char *output;         /* profile path; NULL = default / none (see no_profile) */
    bool no_profile;
    bool gzip;                  /* the final profile gzip-compressed (--gzip, or -o FILE.gz) */
    uint64_t interval_ns;       /* sampling interval; 0 = off */
    bool pss;
    unsigned cpu_profile_hz;    /* --cpu-profile: sampled stacks at this rate; 0 = off */
    bool no_event_filter; /* --no-event-filter */
    unsigned parse_formats;     /* enum testlog_format mask; 0 = none */
    bool log_info, process_output;
    enum contain_mode containment;
    bool kill_leftovers;
    uint64_t grace_ns;          /* leftovers/stop: time between TERM and KILL */
    uint64_t fsync_interval_ns;
    uint64_t max_markers;       /* the profile's marker limit (profile.h); 0 = none */
    uint64_t memory_limit;      /* bytes of the tree's memory; 0 = none */
    uint64_t cpu_limit_ns;      /* CPU time of the whole tree; 0 = none */
    uint64_t tasks_limit;       /* processes and threads of the tree; 0 = none */
    const char *product;
    struct meta_kv *meta;       /* --meta KEY=VALUE, n_meta entries (malloc'ed) */
    size_t n_meta;
    bool no_sandbox, deny_network;
    unsigned deny;              /* SANDBOX_DENY_* mask for the command (--deny, --deny-network) */
    /* the dump of the tree's processes at a stop, before any signal (forensics.h) */
    bool dump;                  /* on (default unless invoked as *timeout; --no-dump) */
    bool dump_budget_set;       /* --dump-budget given; else the default for the stop's cause */
    uint64_t dump_budget_ns;    /* 0: /proc facts only, no stacks */
    const char *dump_file;      /* --dump-file; NULL: <profile>.stacks.txt beside the profile */
    unsigned dump_runtimes;     /* --dump=LIST: FORENSICS_RT_* mask (forensics.h); 0: none */
    const char *recover;        /* CLI_RECOVER: the stream */
    const char *junit;          /* --junit: the JUnit report's path; NULL = none */
    const char *otlp;           /* --otlp: the OTLP/JSON file's path; NULL = none */
    enum ci_mode ci;            /* --ci (CI_AUTO by default) */
    double threshold_pct;       /* --compare: --threshold (percent) */
    bool markdown;              /* --compare: --markdown */
    char **argv;                /* the command (CLI_RUN), --mark's arguments (CLI_MARK), OLD NEW
                                   (CLI_COMPARE) */
    int argc;
};

/* The shortest sampling interval -i takes (0 aside): a sample costs tens of microseconds and a
 * stream line each; thousands a second would measure resmon-run more than the command. */
#define CLI_MIN_INTERVAL_NS UINT64_C(10000000)

/* The dump's budget when --dump-budget is not given: on the run's own limits (a timeout), and on
 * a stop request or the parent's death, where a CI runner's KILL follows its TERM within seconds
 * and the profile's second finalization must fit in them too. */
#define CLI_DUMP_BUDGET_OWN_NS (2 * UINT64_C(1000000000))
#define CLI_DUMP_BUDGET_STOP_NS (500 * UINT64_C(1000000))

#endif
