/* summary.h — the end-of-run summary a CI maintainer reads on stderr: how the command ended, what
 * the process tree cost, which tests failed or were slow, what was still running after a
 * timeout, sparklines of tree CPU and memory, and where the profile is.
 *
 * A pure formatting module: the caller fills a plain struct of facts (struct summary_facts, zero
 * it first) from the supervisor and the sampler, and the tests from the results model every
 * report reads (summary_add_results: results.h), and decides colour and
 * charset (summary_colour_for(), summary_locale_utf8()). summary_format() turns the facts into
 * text; summary_write() writes that text to an fd with as few write(2) calls as the fd accepts.
 * Nothing here reads the clock, the environment or /proc.
 *
 * Bounded memory whatever the run: lists keep at most SUMMARY_MAX_LIST entries (plus a total, so
 * the text says "and N more"), strings are copied into fixed arrays (cut at a UTF-8 character
 * boundary), and a series of samples of any length is downsampled into at most
 * SUMMARY_SERIES_POINTS buckets by summary_series_add().
 *
 * Sparklines use U+2581..U+2588 (▁▂▃▄▅▆▇█) when the terminal is UTF-8 and the ASCII ramp
 * "_.-:=+*#" otherwise. Colour is SGR escapes, only when asked for.
 */
#ifndef RESMON_SUMMARY_H
#define RESMON_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/runmarks.h"

#define SUMMARY_MAX_LIST 8       /* entries kept per list (unexpected, slowest, open, alive) */
#define SUMMARY_TEXT_MAX 160     /* bytes kept of a test id or a command line */
#define SUMMARY_MAX_TOTALS 4     /* harnesses' counts kept (the last ones) */
#define SUMMARY_MAX_STATUSES 12  /* distinct test statuses counted */
#define SUMMARY_SERIES_POINTS 60 /* buckets of a sparkline series */
#define SUMMARY_MAX_HOT 3        /* hottest functions shown */

/* A downsampled series: bucket i summarises `width` consecutive samples (the last bucket may hold
 * fewer). Aggregation is the mean (CPU: cores used) or the maximum (memory: peak RSS). */
enum summary_agg { SUMMARY_AGG_MEAN, SUMMARY_AGG_MAX };

struct summary_series {
    enum summary_agg agg;
    size_t n;         /* buckets in use */
    uint64_t width;   /* samples per full bucket (0 is read as 1) */
    uint64_t fill;    /* samples in bucket n-1 */
    double v[SUMMARY_SERIES_POINTS]; /* sum (MEAN) or max (MAX) of the samples in each bucket */
};

struct summary_test {
    char id[SUMMARY_TEXT_MAX];
    char message[SUMMARY_TEXT_MAX]; /* unexpected results: the first line of its message, or "" */
    char status[16];
    uint64_t duration_ns;
};

#define SUMMARY_MAX_STACKS 4 /* stack lines kept per process of the dump */
struct summary_proc {
    int pid;
    char cmd[SUMMARY_TEXT_MAX];
    char state;                 /* from the dump at the stop; '\0': not dumped */
    size_t threads;             /* its threads, per the dump */
    char test[SUMMARY_TEXT_MAX]; /* the test it ran under ("" none) */
    char stacks[SUMMARY_MAX_STACKS][SUMMARY_TEXT_MAX]; /* "thread: top < frames" lines */
    size_t n_stacks;
};

struct summary_count {
    char status[16];
    uint64_t n;
};

struct summary_facts {
    const char *program; /* prefix of the first line ("resmon-run"); NULL: "resmon-run" */
    const char *command; /* the command as the user wrote it (argv[0], or a joined line) */

    enum runmarks_reason end; /* why the run ended, as the command marker says it */
    int exit_code;       /* RUN_EXIT */
    int signal;          /* RUN_SIGNAL: the fatal signal; RUN_TIMEOUT, RUN_OUTPUT_TIMEOUT,
                            RUN_PARENT_DIED, a limit: the signal sent (0: none, the command had
                            ended: the kernel enforced the limit); RUN_STOPPED: the signal
                            resmon-run received */
    bool kill_sent;      /* KILL had to follow */
    uint64_t limit_ns;   /* RUN_TIMEOUT / RUN_OUTPUT_TIMEOUT: the duration that ran out */
    const char *limit_name; /* a limit (RUN_MEMORY, RUN_CPU, RUN_TASKS): "memory", "cpu", "tasks" */
    const char *limit_text; /* a limit: the limit and the figure ("the tree's CPU time reached 2s") */
    int exit_status;     /* what resmon-run exits with (-1: do not say) */
    bool at_stop;        /* written at the stop, before the tree was signalled: the run goes on */

    uint64_t wall_ns;    /* command start to end */
    bool have_cpu;
    uint64_t tree_cpu_ns;
    uint64_t cpu_span_ns; /* the span tree_cpu_ns was counted over, from the same start as wall_ns
                             to its reading (the leftovers run on after the command's end); the
                             average cores divide by it. 0: wall_ns */
    uint64_t peak_rss;   /* bytes; 0: unknown */

    /* Tests (leave tests_known false when no test log was parsed). */
    bool tests_known;
    bool tests_parsed;   /* the output was read for test lines (then no test at all is said,
                            with summary_harness_hint's hint) */
    const char *const *argv; /* the command's words, for that hint (NULL: none) */
    uint64_t tests;      /* test results seen */
    struct summary_count by_status[SUMMARY_MAX_STATUSES];
    size_t n_status;
    uint64_t unexpected_total;
    struct summary_test unexpected[SUMMARY_MAX_LIST]; /* the first ones, in order */
    size_t n_unexpected;
    size_t annotated;    /* how many of the first were GitHub annotations (ghactions.h) */
    struct summary_test slowest[SUMMARY_MAX_LIST];    /* longest first */
    size_t n_slowest;
    size_t max_slowest;  /* how many to keep (0: 5), at most SUMMARY_MAX_LIST */

    /* The harnesses' own counts of the run's tests (results.h rs_totals), the last
     * SUMMARY_MAX_TOTALS: shown where they add up to another number than the results (a
     * reporter that names only the failures, pytest without -v). */
    struct summary_totals {
        char harness[32];
        char text[SUMMARY_TEXT_MAX]; /* its own words */
        int64_t total;
    } totals[SUMMARY_MAX_TOTALS];
    size_t n_totals;
    int64_t totals_sum; /* every count's total, also of those no longer kept */

    /* After a stop (timeout, output timeout, stop request): what was still going. */
    struct summary_test open[SUMMARY_MAX_LIST];
    size_t n_open, open_total;
    struct summary_proc alive[SUMMARY_MAX_LIST];
    size_t n_alive, alive_total;
    size_t n_alive_first; /* how many summary_alive_first moved to the front */

    /* Processes tests left behind (test markers' "leaked"), and the processes alive when the
     * command exited, each with the test that left it behind when known (summary_proc.test). */
    uint64_t leaked, leaking_tests;
    struct summary_proc left[SUMMARY_MAX_LIST];
    size_t n_left, left_total;
    /* The dump of the processes at the stop (forensics.h): its text file, and what the budget
     * cut off. */
    const char *dump_path;      /* NULL: no text file */
    size_t dump_cut_processes, dump_cut_threads;
    /* Processes of the tree the kernel's OOM killer killed (bounded; total counted). */
    struct summary_oom {
        int pid;
        char cmd[SUMMARY_TEXT_MAX];
        uint64_t rss;                /* at the last sample, bytes (0: unknown) */
        char test[SUMMARY_TEXT_MAX]; /* the test running then ("" none) */
    } oom[SUMMARY_MAX_LIST];
    size_t n_oom, oom_total;

    /* Memory pressure: the worst "some" avg60 (percent) when it reached the warning level. */
    bool pressure_high;
    double pressure_avg60;
    uint64_t pressure_at_ns; /* when, from the command's start */
    bool pressure_tree;      /* the tree's cgroup's figure (else the machine's) */

    /* The sampled stacks (--cpu-profile): the functions most often innermost, with their
     * samples, of hot_total in all. */
    struct summary_hot {
        char name[SUMMARY_TEXT_MAX];
        uint64_t samples;
    } hot[SUMMARY_MAX_HOT];
    size_t n_hot;
    uint64_t hot_total;

    struct summary_series cpu; /* tree CPU in cores per sample (agg MEAN) */
    struct summary_series mem; /* tree RSS in bytes per sample (agg MAX) */

    const char *profile_path; /* NULL: no profile */
    const char *profile_name; /* how the job summary names it (ghactions.h), NULL: its path */
    bool profile_is_stream;   /* only the stream is there (finalizing failed) */
    uint64_t stream_lines_lost; /* lines of the stream that could not be written */
    int stream_error;           /* why (-errno) */
};

struct summary_style {
    bool colour; /* SGR escapes */
    bool utf8;   /* Unicode sparkline; else ASCII */
};

/* Start an empty series (a zeroed series is an empty MEAN series). */
void summary_series_init(struct summary_series *s, enum summary_agg agg);
/* Add one sample. When all SUMMARY_SERIES_POINTS buckets are full, neighbours are merged pairwise
 * and the bucket width doubles, so any number of samples fits and each bucket covers the same
 * span of the run. */
void summary_series_add(struct summary_series *s, double value);
/* Value of bucket i (mean or max of its samples); 0 for an empty or out-of-range bucket. */
double summary_series_value(const struct summary_series *s, size_t i);

/* Count one test result: summary_add_status(status, 1), summary_add_unexpected() when
 * unexpected, summary_add_slowest(). id may hold any bytes (id_len of them). */
void summary_add_test(struct summary_facts *f, const char *id, size_t id_len, const char *status,
                      bool unexpected, uint64_t duration_ns);
/* The pieces (summary_add_results uses them): n results with this status (also sets tests_known, adds n to tests); one
 * unexpected result (first SUMMARY_MAX_LIST kept, all counted); one candidate for the slowest
 * list (kept when among the max_slowest longest). An unexpected result's message (NULL: none)
 * is shown after its id, its first line only. */
void summary_add_status(struct summary_facts *f, const char *status, uint64_t n);
void summary_add_unexpected(struct summary_facts *f, const char *id, size_t id_len, const char *status,
                            const char *message, uint64_t duration_ns);
/* A harness's own count of the run's tests: its name, its summary's words, the tests it
 * counted (the last SUMMARY_MAX_TOTALS kept). */
void summary_add_totals(struct summary_facts *f, const char *harness, const char *text, int64_t total);
/* The tests' facts from the results model (results.h), the one the JUnit, OTLP and Perfherder
 * files are written from, so that the summary cannot say otherwise of a test: the results by
 * status (in testlog.h's order of the statuses), the unexpected ones in the order they came with
 * their messages, the slowest, the processes tests left running, the tests the stop's marker
 * says were running, and the harnesses' own counts. Call it once on facts that hold no test yet. 0 or -ENOMEM. */
struct results;
int summary_add_results(struct summary_facts *f, const struct results *r);
/* One of the hottest functions of the sampled stacks (the hottest first), with its samples of
 * total. */
void summary_add_hot(struct summary_facts *f, const char *name, uint64_t samples, uint64_t total);
void summary_add_slowest(struct summary_facts *f, const char *id, size_t id_len, const char *status,
                         uint64_t duration_ns);
/* Note a test open when the run was stopped / a process alive then (bounded; totals counted). */
void summary_add_open(struct summary_facts *f, const char *id, size_t id_len);
void summary_add_alive(struct summary_facts *f, int pid, const char *cmd, size_t cmd_len);
/* The dump's facts on an alive process (noted before by summary_add_alive; otherwise ignored):
 * its state, thread count and the test it ran under (NULL: none); summary_add_stack adds one line of its stacks (at most
 * SUMMARY_MAX_STACKS kept; the caller adds the running threads first). The threads beyond those
 * lines are counted as left out. */
void summary_set_state(struct summary_facts *f, int pid, char state, size_t threads, const char *test);
void summary_add_stack(struct summary_facts *f, int pid, const char *line, size_t len);
/* Move the alive process pid ahead of those not moved so far (the hung test's processes first:
 * call it for each of them, in order). */
void summary_alive_first(struct summary_facts *f, int pid);
/* The dump of the tree at the stop (stopdump.h), with the pieces above: the processes that ran
 * under a test first, each one's state and stacks (its running threads first: one that spins is
 * what a hang's reader looks for), what the budget cut off, and text_path when its text file was
 * written (NULL: none; the path must outlive f). */
struct forensics_report;
void summary_add_dump(struct summary_facts *f, const struct forensics_report *rep, const char *text_path);
/* Note a process alive when the command exited, and the test that left it behind (NULL: none
 * known). Bounded; total counted. */
void summary_add_left(struct summary_facts *f, int pid, const char *cmd, size_t cmd_len, const char *test);
/* Note an OOM kill (bounded; total counted). test may be NULL. */
void summary_add_oom(struct summary_facts *f, int pid, const char *cmd, uint64_t rss, const char *test);

/* When the output held no test line the parsers know: the option that makes the command's harness
 * print one line per test, from the command's words ("pytest prints a line per test only with -v"
 * for a pytest run without -v), or NULL when the words name no harness known to need one. */
const char *summary_harness_hint(const char *const *argv);

/* The summary as text (malloc'ed, NUL-terminated, *ret_len bytes; caller frees).
 * Returns 0 or -ENOMEM. */
int summary_format(const struct summary_facts *f, const struct summary_style *st, char **ret_text,
                   size_t *ret_len);
/* The same facts as Markdown, for a CI's job summary (GitHub's $GITHUB_STEP_SUMMARY): a heading
 * with how the run ended, a table of the figures (sparklines in code spans), then tables of the
 * unexpected results, the tests and processes still there at a stop and the OOM kills. Text from
 * the command is escaped, so it can neither format nor break a table. 0 or -ENOMEM. */
int summary_format_markdown(const struct summary_facts *f, char **ret_text, size_t *ret_len);
/* The headline without the program's name: "'make' timed out after 2.00 s (sent TERM); exit
 * status 124", into buf (cut to size). Returns its length. */
size_t summary_end_text(const struct summary_facts *f, char *buf, size_t size);
/* Format and write to fd (retrying EINTR, waiting briefly on a non-blocking fd). 0 or -errno. */
int summary_write(int fd, const struct summary_facts *f, const struct summary_style *st);

/* Colour is for people: fd is a terminal and NO_COLOR (no_color_env, from getenv) is unset or
 * empty. */
bool summary_colour_for(int fd, const char *no_color_env);
/* The charset the locale names: the first non-empty of LC_ALL, LC_CTYPE, LANG decides; UTF-8
 * unless it names something else ("C", "POSIX", "en_US.ISO-8859-1"). None set: UTF-8 (CI log
 * viewers render UTF-8). */
bool summary_locale_utf8(const char *lc_all, const char *lc_ctype, const char *lang);

#endif
