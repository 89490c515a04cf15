/* testlog.h — recognising structured test-log lines (test-logs.md) and turning them into
 * markers (profile-format.md §5): every test, its status and duration, suites, subtest results,
 * crashes, errors — and what each test cost the process tree.
 *
 * The supervisor feeds complete lines (linebuf.h) from the command's stdout and stderr with their
 * arrival time. Per line, formats are tried in priority order (mozlog JSON, TBPL, mach, vitest, jest,
 * TAP, go test, GoogleTest, ..., mocha: testlog/registry.h) after stripping, for matching only, a trailing '\r', ANSI
 * escapes and CI prefixes; only the formats whose lines can start with the line's first two bytes
 * are tried (a prefilter that changes no result: see testlog.c), so plain text costs a few
 * nanoseconds a line. A parser that reads a section where the harness shows a test's own output
 * again (pytest's reports, unittest's failure blocks) captures the lines: they go to it alone, so
 * that nothing a test printed becomes a result of another format. A line that does not parse is
 * simply output. Parsers are pure functions
 * of (line, len) → test events (testlog_*.c); this module keys open tests by id (+ subsuite or
 * package) so interleaved parallel output pairs correctly, and emits markers on the sink.
 *
 * Per-test cost: at a test's start and end the module asks the tree probe for the tree's
 * cumulative CPU and its RSS; testlog_tree_sample() after every sample updates the peak RSS of
 * open tests, so a test's maxRSS is the highest the tree held at its start, at its end and at
 * every sample in between.
 * Where a test's start is not a line of its own (a TAP point runs from the previous TAP line; a
 * serial libtest line holds the name written at the start and the result written at the end),
 * the cost comes from an anchor: what the tree had spent at that earlier instant
 * (testlog/event.h, testlog_line_begins()).
 */
#ifndef RESMON_TESTLOG_H
#define RESMON_TESTLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/markers.h"

/* The marker types this module owns (markers.h): Test ("test" markers), TestStatus (subtest
 * results and log lines at a level), TestResult (an "unexpected result" instant at the end of each
 * test with one), Crash, LogProcess (processes the harness reports), TestTotals (the harness's own
 * count of the run's tests, from its summary line: "Test totals" markers). */
extern const struct marker_type testlog_test_type, testlog_status_type, testlog_result_type, testlog_crash_type,
    testlog_logprocess_type, testlog_totals_type;

/* Formats (testlog/registry.h), as bits for --parse=LIST: TL_FMT_MOZLOG, TL_FMT_TAP, ... */
enum testlog_format_index {
#define TL_FORMAT(var, NAME, alias) TL_FMT_INDEX_##NAME,
#include "testlog/registry.h"
#undef TL_FORMAT
    TL_FMT_COUNT
};
enum testlog_format {
#define TL_FORMAT(var, NAME, alias) TL_FMT_##NAME = 1 << TL_FMT_INDEX_##NAME,
#include "testlog/registry.h"
#undef TL_FORMAT
    TL_FMT_ALL = (1 << TL_FMT_COUNT) - 1,
};

/* Parse a --parse argument: "auto", "none" or a comma list of format names ("mozlog,tap,...").
 * Returns the mask (0 for none) or -EINVAL. */
int testlog_parse_formats(const char *arg, unsigned *ret_mask);

struct testlog_probe {
    uint64_t (*tree_cpu_ns)(void *ctx); /* cumulative tree CPU now */
    /* The tree's RSS now (bytes, 0 unknown), read at tests' starts and ends so that a test's peak
     * is its own even when no sample falls inside it; NULL: only the samples taken while it ran */
    uint64_t (*tree_rss)(void *ctx);
    /* The processes a test that ran from since_ns leaves behind at its end: how many are still
     * alive that started since then, their command lines joined by "; " into cmds (cut to cap,
     * NUL-terminated). test: its id, for the caller to remember who started them. NULL: not
     * asked. Not asked for tests the run's end closes (still running then). */
    size_t (*leaked)(void *ctx, const char *test, uint64_t since_ns, char *cmds, size_t cap);
    void *ctx;
};

struct testlog_config {
    unsigned formats;      /* mask of enum testlog_format */
    bool log_info;         /* also INFO/DEBUG log lines as instants */
    bool process_output;   /* mozlog process_output as "output" instants */
    double wall_at_t0_ms;  /* wall clock of profile time 0, to map producer timestamps */
    uint64_t t0_ns;        /* monotonic profile time 0 */
    bool no_prefilter;     /* tests: offer every line to every parser (the prefilter must not
                              change any result; this is the reference it is checked against) */
};
/* Producer timestamps further than this from the arrival clock are ignored (arrival is used);
 * ones later than the arrival are taken as the arrival (a line cannot precede its event). */
#define TESTLOG_MAX_SKEW_NS (UINT64_C(5) * 60 * 1000000000)

/* Status names counted separately in testlog_stats.by_status; every other status counts under
 * TL_STATUS_OTHER. */
enum testlog_status {
    TL_STATUS_PASS,
    TL_STATUS_FAIL,
    TL_STATUS_OK,
    TL_STATUS_ERROR,
    TL_STATUS_TIMEOUT,
    TL_STATUS_CRASH,
    TL_STATUS_ASSERT,
    TL_STATUS_PRECONDITION_FAILED,
    TL_STATUS_SKIP,
    TL_STATUS_NOTRUN,
    TL_STATUS_INCOMPLETE,
    TL_STATUS_OTHER,
    TL_STATUS_COUNT,
};
/* Index of a status name (exact, upper case) in by_status. */
int testlog_status_index(const char *status, size_t len);
/* The name of index i ("OTHER" for TL_STATUS_OTHER), NULL when out of range. */
const char *testlog_status_name(int i);

struct testlog_stats {
    uint64_t lines, recognised;
    uint64_t tests;        /* test markers emitted */
    uint64_t by_status[16]; /* indexed by testlog_status_index() */
    uint64_t unexpected;   /* test results that were not as expected */
    uint64_t subtests;     /* subtest results seen */
    uint64_t crashes;      /* crash reports */
    uint64_t ends_unmatched; /* test ends that matched no open test */
    uint64_t leaking_tests;  /* tests that left processes behind (testlog_probe.leaked) */
    uint64_t leaked;         /* ... and how many */
};

/* Longest message a test marker keeps, in bytes; longer ones are cut. */
#define TESTLOG_MESSAGE_MAX 1024
/* Longest test id (and scope) kept whole, in bytes; longer ones are cut at a UTF-8 character's
 * start. Parametrised pytest ids and generated go subtest names reach several KiB. */
#define TESTLOG_ID_MAX 16384
/* Memory the open tests may hold (their ids, scopes and table slots): a start that would go
 * beyond it is not tracked (its result then comes as a test of its own, without a start). No
 * open test is ever ended before its end for want of room: suites keep thousands of nested
 * subtests open at once. */
#define TESTLOG_OPEN_BYTES_MAX (UINT64_C(64) << 20)

struct testlog;

int testlog_new(const struct testlog_config *cfg, const struct marker_sink *sink,
                const struct testlog_probe *probe, struct testlog **ret);
void testlog_free(struct testlog *tl);

/* A line of output; stream is 1 (stdout) or 2 (stderr). */
void testlog_line(struct testlog *tl, int stream, const char *line, size_t len, bool truncated,
                  uint64_t arrival_ns);
/* After every sample: the tree's RSS now (bytes), to track each open test's peak. */
void testlog_tree_sample(struct testlog *tl, uint64_t rss);
/* A line began at arrival_ns and is not complete yet (head: its bytes so far). pytest, unittest
 * and serial libtest print a test's name when it starts and its result when it ends, on one
 * line: the tree's cost is noted now, so that the test is costed from its start rather than from
 * the line's completion. Nothing is done for a line no parser can take. */
/* The unfinished last line of the output as it stands after a chunk (head, len: its bytes so far;
 * arrival_ns: its first byte's). A test it starts ("tests/a.py::test_x " from pytest -v, whose
 * result ends the line when the test ends) is opened now, so the stream names it even if the run
 * is killed before the line ends; only starts are taken, on a copy of the parsers' states, and
 * only from a tail of at most 4 KiB (a start is short; a long tail is not read at every chunk). When
 * the line is read whole (testlog_line on the same stream) or a tail comes again, those starts are taken
 * back first, and the line's own reading makes the test, once. */
void testlog_line_tail(struct testlog *tl, int stream, const char *head, size_t len,
                       uint64_t arrival_ns);
void testlog_line_begins(struct testlog *tl, const char *head, size_t len, uint64_t arrival_ns);
/* Call fn for each open test, named as its marker will be ("scope/id"; for the timeout marker and
 * the summary). With none open after a test no start line announced (TAP, pytest without -v: a
 * test shows only with its result), the one running is known only by what came before it: fn
 * gets "after N, NAME" (N tests ended, the last NAME). */
void testlog_each_open(const struct testlog *tl, void (*fn)(void *ctx, const char *id), void *ctx);
/* A test known by the process that runs it rather than by the output. prove (and Test::Harness,
 * as "make test" runs it) runs each test file as a child process ("perl [switches] t/x.t", the
 * file last), and, when its output is not a terminal, prints what a file said only as the file
 * ends: at a stop, the file a live child of the harness runs is the test still running. parent
 * and self are the two processes' /proc command lines (NUL-separated arguments); true with the
 * file (in self) when self is such a child. */
bool testlog_harness_child(const char *parent, size_t parent_n, const char *self, size_t self_n,
                           const char **ret_file, size_t *ret_len);
/* Open a test of that name, started at start_ns, as a start line would (testlog_harness_child's
 * file at a stop: testlog_finish then ends it as the run ended); nothing when it is open already. */
void testlog_open_running(struct testlog *tl, const char *name, size_t len, uint64_t start_ns);
/* How many tests are open. */
size_t testlog_open_count(const struct testlog *tl);
/* The innermost test open now that had started by t_ns (NULL: none): the test a process started
 * at t_ns ran under. Valid until the next call into the module. */
const char *testlog_open_at(const struct testlog *tl, uint64_t t_ns);
/* End of run: results the parsers still hold go out (a TAP result waiting for its YAML block),
 * then tests still open become test markers ending at now_ns with status TIMEOUT (timed_out) or
 * INCOMPLETE. */
void testlog_finish(struct testlog *tl, uint64_t now_ns, bool timed_out);
void testlog_get_stats(const struct testlog *tl, struct testlog_stats *ret);
/* Formats this build has a parser for (mask of enum testlog_format). */
unsigned testlog_available_formats(void);

/* State lines (markers.h) this module writes, so a converter can close what a killed run left:
 *   {"type":"open","kind":K,"key":S,"name":MARKER_NAME,"startTime":MS,"category":N,"data":{...}}
 *   {"type":"close","kind":K,"key":S}
 * kind "test" (key = id, or scope U+001F id; data = the Test payload known at the start),
 * "suite" and "group" (key = the name; data = the Text payload). A close follows every open, when
 * the marker itself is emitted.
 *
 * A failure text some harnesses print after the result (pytest's short summary, unittest's
 * FAIL/ERROR blocks, go's output under "--- FAIL" without -v) comes as a line of its own, after
 * the test's marker:
 *   {"type":"message","test":FULL_NAME,"message":TEXT[,"status":STATUS][,"where":WHERE]}
 * FULL_NAME is the marker's "test" ("scope/id"); TEXT is bounded like a result's message; STATUS,
 * when the harness says which result the text explains (pytest: a test that failed and then
 * errored at teardown has two), is that result's marker's "status"; WHERE, where the harness's
 * report says it failed (an annotation's file and line). The readers of the stream (profile.h,
 * results.h) put it into that test's marker (of that status) when the marker has no message, or
 * one the text goes on from (text_cut_of): the first text said of a result wins. */

#endif
