/* results.h — what a run's stream says about its tests and its end: the one model of a run's
 * results, for every report (junit.h, otlp.h, perfherder.h, the summary's tests and GitHub's
 * annotations: sinks.h): one reader of the JSON Lines stream (stream.h) that the writers share,
 * so that they cannot disagree on a test, a run writes them like the profile (at the normal end,
 * before the first stop signal, again after the tree is gone) and --recover rebuilds the files
 * from the stream a killed run left.
 *
 * What is read: the meta line (product, startTime, the CI's keys: cimeta.h), the clock line, the
 * "test" markers (payload type Test: test, scope, status, expected, outcome, message, cpuTime,
 * maxRSS, leaked), the tests' open and close state lines (a test still open is one that never
 * ended), the message lines that give an unexpected result without a message its failure text
 * and where it failed (testlog.h), unexpected TestStatus markers and Crash markers naming a test
 * (its details), the harnesses' own counts ("Test totals" markers), the "timeout" marker (why the run was stopped: reason, limit, after; the tests
 * running then), the command's marker or open line (cmd, exit, reason), and with
 * RESULTS_SAMPLES the tree's and the machine's samples (Tree CPU, Tree Memory, Tree IO, CPU Use,
 * Memory, IO) and the phases the command marked (Phase markers: name, span; at most RESULTS_MAX_PHASES).
 * The lines are read, and told apart by their type and a marker's name and payload type, by the
 * stream's reader the profile's converter reads them with (profile/streamread.h); a line wanted is
 * then parsed, every other one skipped. The reader follows the stream as it grows (complete lines
 * only), like the profile's follower, so a write at a stop only has the lines since the last
 * update left to read. Memory grows with the tests (a record each, at
 * most RESULTS_MAX_TESTS; past it tests are counted, not kept) and, with samples, with the samples
 * (at most RESULTS_MAX_POINTS per series; when full, neighbouring points merge into one: CPU
 * time adds up, a busy fraction averages, memory keeps its peak).
 *
 * A test's expected status is only in its payload when it differs; green is a result as
 * expected, orange an unexpected one; an "outcome" says the harness expected that status (an
 * expected failure, error or timeout: its colour is the status's own); otherwise the harness's
 * default holds (PASS, OK, SKIP and NOTRUN are expected). A kill between a test's marker and its close line leaves the
 * test open as well: the marker ends the most recent open test of that id.
 *
 * The structs are the writers' to read; only this module changes them.
 */
#ifndef RESMON_RESULTS_H
#define RESMON_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/runmarks.h"
#include "profile/streamread.h"

#define RESULTS_MAX_TESTS 1000000u
#define RESULTS_MAX_POINTS 100000u
#define RESULTS_MAX_PENDING 64
#define RESULTS_MAX_PHASES 1000
#define RESULTS_MAX_DETAILS 8192

enum results_what {
    RESULTS_SAMPLES = 1 << 0, /* keep the sample series too */
};

struct rs_test {
    char *id, *status, *expected, *message;
    char *scope;       /* the harness's scope (the payload's "scope"; go: the package) when id is
                          scope/name, else NULL */
    double start, end; /* profile ms */
    double cpu_ms;     /* < 0: unknown */
    double rss;        /* bytes; < 0: unknown */
    bool open;         /* never ended */
    bool unexpected;
    char *details;     /* what the log said against it (unexpected subtests, crashes), bounded */
    char *where;       /* where it failed, as a message line's "where" says (pytest's
                          "tests/test_x.py:12: AssertionError"), else NULL */
    uint64_t leaked;   /* processes it left running (the payload's "leaked") */
    uint64_t ended;    /* its place in the order the results came (1 the first; an amended
                          result's is the amending one's); 0 while open */
};

/* Sample series (RESULTS_SAMPLES): one point per sample, at its end. */
enum rs_series {
    RS_TREE_CPU,   /* the tree's CPU time in the interval, ms (Tree CPU cpuTime) */
    RS_TREE_RSS,   /* the tree's RSS, bytes (Tree Memory rss) */
    RS_CPU_BUSY,   /* the machine's busy fraction, 0..1 (CPU Use busy) */
    RS_MEM_USED,   /* the machine's used memory, bytes (Memory used) */
    RS_IO_READ,    /* the machine's disk reads in the interval, bytes (IO read_bytes) */
    RS_IO_WRITE,   /* the machine's disk writes in the interval, bytes (IO write_bytes) */
    RS_IO_READ_TIME,  /* the disks' time on reads in the interval, ms (IO read_time) */
    RS_IO_WRITE_TIME, /* on writes (IO write_time) */
    RS_TREE_IO_READ,  /* the tree's storage reads in the interval, bytes (Tree IO read_bytes) */
    RS_TREE_IO_WRITE, /* its writes (Tree IO write_bytes) */
    RS_NSERIES
};
struct rs_point {
    double start_ms, end_ms, v;
};
struct rs_seriesbuf {
    struct rs_point *p;
    size_t n, cap;
    uint64_t seen; /* samples read */
};

/* The CI's meta keys (cimeta.h) the reports carry, as the stream's meta line has them. */
enum rs_meta { RS_CI, RS_CI_JOB_URL, RS_DEVICE, RS_SOURCE_URL, RS_APP_BUILD_ID, RS_CI_REPOSITORY, RS_CI_REVISION,
               RS_NMETA };

struct rs_phase {
    char *name;
    double start_ms, end_ms;
};

/* A harness's own count of the run's tests (a "Test totals" marker, testlog.h): the last
 * RESULTS_MAX_TOTALS of them, in order: the harness, its words and the tests it counted (what
 * the summary shows; the marker's passed, failed and skipped stay in the profile). */
#define RESULTS_MAX_TOTALS 8
struct rs_totals {
    char *harness, *summary;
    int64_t total;
};

struct rs_pending {
    char *id, *text;
};
struct rs_open {
    char *key;
    size_t test; /* index in tests */
};

struct results {
    struct sread rd; /* the stream's lines (profile/streamread.h) */
    unsigned what;
    int err;
    bool have_meta;
    struct rs_test *tests;
    size_t ntests, tests_cap, left_out;
    struct rs_open *opens;
    size_t nopen, opens_cap;
    size_t msg_next; /* where the search for a message line's test starts */
    struct rs_pending pend[RESULTS_MAX_PENDING];
    size_t npend;
    double last_ms;       /* the latest time the stream holds */
    double start_wall_ms; /* meta.startTime: epoch ms of time 0 */
    uint64_t clock_ns;    /* the clock line: monotonic ns of time 0 */
    bool have_clock;
    char *product;
    char *meta[RS_NMETA];
    /* the run */
    char *cmd, *exit, *reason;      /* the command marker or its open line */
    char *stop_reason, *stop_limit; /* the timeout marker */
    double stop_after_ms;           /* its "after" (0: none) */
    char **stop_open;               /* its "openTests": what was running at the stop */
    size_t n_stop_open;
    uint64_t results_seen;          /* results read (rs_test.ended's counter) */
    struct rs_seriesbuf series[RS_NSERIES];
    struct rs_phase *phases; /* RESULTS_SAMPLES: the phases that ended, in order */
    size_t nphases, phases_cap;
    struct rs_totals totals[RESULTS_MAX_TOTALS]; /* the harnesses' counts, the last ones, in order */
    size_t ntotals;
    int64_t totals_sum; /* the total of every count read, also of those no longer kept */
};

/* The mean of series k over [from_ms, to_ms), each sample weighted by its overlap with it; NAN
 * when no sample overlaps. Its sum over the span: results_series_sum. */
double results_series_mean(const struct results *r, enum rs_series k, double from_ms, double to_ms);
double results_series_sum(const struct results *r, enum rs_series k);

/* A reader of the stream at stream_fd (read with pread from offset 0; the fd stays the
 * caller's); what: RESULTS_SAMPLES or 0. 0 or -ENOMEM. */
int results_new(int stream_fd, unsigned what, struct results **ret);
void results_free(struct results *r);
/* Read the complete lines the stream gained. 0 or -errno (sticky); -EINVAL when the first line
 * is not a meta line. */
int results_update(struct results *r);

/* Whether a report can be written from r: 0, its sticky error, or -EINVAL without a meta line;
 * a negative *end_ms (the run's end, in profile ms) becomes the last time the stream holds. */
int results_ready(const struct results *r, double *end_ms);

/* Why the tests still open at the end did not end, in words ("the run timed out after 2 s
 * (--timeout)"), and whether that was a timeout (a timeout, an output timeout, the CPU limit).
 * malloc'ed; NULL on ENOMEM. */
char *results_stop_words(const struct results *r, bool *timeout);
/* Whether t was still running when the run ended or was stopped (the run ended it, and
 * results_stop_words says why): never ended, named by the stop's open tests, or INCOMPLETE
 * without a word of its own. A TIMEOUT the harness gave (ctest's ***Timeout, go's panic) is the
 * harness's. */
bool results_cut(const struct results *r, const struct rs_test *t);
/* How the run ended, typed (runmarks.h): the stop's reason when it was stopped (the timeout
 * marker), else the command's (its marker); false while the stream says neither (still running,
 * or killed before the command ended). Each marker's word is read in its own vocabulary. */
bool results_end(const struct results *r, enum runmarks_reason *ret);
/* The tests that ended (their results), in the order the results came (rs_test.ended): the
 * order every report lists them in, a stop's and the end's alike (what a stop listed stays the
 * start of the end's list). *ret is malloc'ed (NULL when none); the count, or 0 on ENOMEM. */
size_t results_ended(const struct results *r, const struct rs_test ***ret);
/* A test's duration in ns (end - start, never negative). */
uint64_t results_duration_ns(const struct rs_test *t);
/* s is lit (s may be NULL). */
bool results_is(const char *s, const char *lit);

#endif
