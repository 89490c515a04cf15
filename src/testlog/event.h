/* testlog/event.h — the contract between the per-format parsers (testlog/formats/<format>.c) and the
 * test-log core (testlog.c and its parts, testlog_impl.h).
 *
 * A parser is a pure function of one line (already stripped of '\r', ANSI escapes and CI prefixes
 * by the core) plus the format's own small state (TAP nesting, the mach formatter's clock, a
 * pytest line whose result is still to come, ...). It fills up to TL_MAX_EVENTS events and returns
 * how many (0: not this format). Strings in events point into the line or into the parser's state
 * and are valid until the next call on the same state; they are NOT NUL-terminated.
 */
#ifndef RESMON_TESTLOG_EVENT_H
#define RESMON_TESTLOG_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TL_MAX_EVENTS 4
#define TL_ANCHORS 64 /* anchors the core keeps (TLE_ANCHOR) */

enum tl_kind {
    TLE_SUITE_START,   /* id = suite name */
    TLE_SUITE_END,
    TLE_GROUP_START,   /* id = group name */
    TLE_GROUP_END,
    TLE_TEST_START,    /* id, scope */
    TLE_TEST_END,      /* id (empty: the most recent open test), scope, status, expected, message,
                          stack, t.duration_ms when the producer says how long it took (a test
                          with no start then starts that long before), timeoutfactor */
    TLE_SUBTEST,       /* id, subtest, status, expected, message, stack */
    TLE_LOG,           /* level, message */
    TLE_CRASH,         /* id, signature, reason, minidump */
    TLE_PROCESS_START, /* process (an id), command */
    TLE_PROCESS_EXIT,  /* process, command, exitcode */
    TLE_ASSERT,        /* id, message (assertion count outside expectations) */
    TLE_LEAK,          /* name = marker name ("LSan Leak", "LSan Summary", "Leaked Total",
                          "SHUTDOWN-FAIL"), message */
    TLE_OUTPUT,        /* process, message (only when the config asks) */
    TLE_BAIL_OUT,      /* message: the run gave up; open tests end INCOMPLETE */
    TLE_TEST_RESUME,   /* id, scope: an open test that was paused runs from now (go's CONT) */
    TLE_ANCHOR,        /* no marker: a later result may name this line's arrival as its start
                          (t.since_ns); the core keeps what the tree had spent at this instant */
    TLE_TEST_MESSAGE,  /* id, scope, message: the failure text of a test that has ended, printed
                          after its result (pytest's short summary, unittest's FAIL/ERROR blocks,
                          go's output under "--- FAIL" without -v, meson's output block); the
                          test keeps it when its result had none, or one it goes on from (the
                          stream's message line, testlog.h); stack: where it
                          failed ("tests/test_x.py:12: AssertionError"), the message line's
                          "where" (an annotation's file and line); status: the status of the result
                          it explains when the harness says (pytest's FAILED or ERROR: a test that
                          failed and then errored at teardown has two results) */
    TLE_TOTALS,        /* name = the harness (the format's name), message = its own summary of
                          the run's tests ("5 failed, 1 skipped, 8 passed, 14 total"), counts: the
                          figures it gave (-1 where it gave none); the last kind */
};

struct tl_str {
    const char *p;
    size_t n;
};

/* When an event happened. */
enum tl_when {
    TL_AT_LINE_START = 0, /* when its line's first byte arrived (the default) */
    TL_AT_LINE_END,       /* when its line was complete: a runner that prints a test's name when
                             it starts and the result and newline when it ends (pytest, unittest,
                             serial libtest); the core takes the line's completion when it knows
                             it, else its arrival */
    TL_AT_EARLIER_LINE,   /* at ns, the arrival of an earlier line of this parser: a result it
                             could only complete on a later line (TBPL's TEST-INFO, TAP's YAML) */
};

/* When an event happened and how it was timed: one notion for every format. The core places the
 * event by wall_ms when the producer's clock gives it (and it is within TESTLOG_MAX_SKEW_NS of
 * the arrival clock), else by when/ns; a TLE_TEST_END without an opener starts duration_ms before
 * that, and costs what the tree spent since since_ns. */
struct tl_timing {
    enum tl_when when;
    uint64_t ns;        /* TL_AT_EARLIER_LINE: that line's arrival */
    double wall_ms;     /* the producer's timestamp, epoch ms (go -json, mozlog); NAN none */
    /* TLE_TEST_END: how long the test took */
    double duration_ms; /* the producer's own duration, or the parser's from arrivals; NAN none */
    uint64_t since_ns;  /* it ran from the arrival of this TLE_ANCHOR of the same parser (TAP: the
                           previous TAP line at its level), 0 none: the core gives it the tree's
                           CPU time and peak RSS since then while it holds the anchor (the last
                           TL_ANCHORS distinct instants, testlog_tests.c) */
    bool late;          /* the result line may come well after the test ended (go prints
                           subtests' results with their parent's): when duration_ms is shorter
                           than the time since the test's start, it ended duration_ms after it */
};

/* TLE_TOTALS: a harness's own count of the run's tests; -1 where it did not say. */
struct tl_counts {
    int64_t total, passed, failed, skipped;
};

struct tl_event {
    enum tl_kind kind;
    struct tl_timing t;
    struct tl_str id, scope, name, status, expected, message, subtest, level, signature, reason,
        minidump, process, command, stack;
    int64_t exitcode;
    bool has_exitcode;
    int64_t timeoutfactor; /* 0 when not given */
    bool unexpected;       /* the producer says the result is unexpected (already decided,
                              e.g. TBPL TEST-UNEXPECTED-*, mozlog with known_intermittent) */
    bool expected_known;   /* unexpected is meaningful */
    /* TLE_TEST_END: the status of the same test's earlier, expected result that this one
     * completes (pytest prints a teardown's error as a second result of the test, ERROR after its
     * PASSED): the test counts once, with this result, and its marker names the result amended */
    struct tl_str amends;
    struct tl_counts counts; /* TLE_TOTALS */
};

struct tl_format {
    const char *name;   /* as in --parse */
    unsigned bit;       /* enum testlog_format */
    size_t state_size;  /* zeroed state allocated by the core; 0 = stateless */
    /* Returns the number of events filled (0..TL_MAX_EVENTS). arrival_ns is when the line
     * arrived (for formats that time tests by arrival). */
    int (*parse)(void *state, const char *line, size_t len, uint64_t arrival_ns,
                 struct tl_event *ev);
    void (*release)(void *state); /* NULL if the state owns no memory */
    /* At the end of the output: fills the events the parser still holds (a result waiting for
     * the line that completes it) and returns how many. NULL: it never holds any. */
    int (*flush)(void *state, struct tl_event *ev);
    /* Prefilter (testlog.c), so that a line no parser can take costs no parser call. While the
     * parser is idle (busy is NULL or returns false), parse must return 0 and leave the state as
     * it was for every line that neither starts with a byte of first_bytes nor starts with one
     * of the two-byte strings in pairs (NULL-terminated) — unless dotted_word is set and the
     * line's first word (the bytes before its first space, at most the first 4096) holds a '.'.
     * (A line of one byte passes when that byte begins a pair.) first_bytes and pairs both NULL:
     * every line may match (no prefilter). A busy parser (one waiting for a continuation that
     * any line may bring or cancel) sees every line. busy is asked after each call of parse, the
     * only time the state changes; a zeroed state (the start) must be idle, and is not asked
     * (asking would touch every parser's state before the command has printed anything). */
    const char *first_bytes;
    const char *const *pairs;
    bool dotted_word;
    bool (*busy)(const void *state);
    /* The lines that follow are a test's output as the harness shows it again (pytest's report
     * sections, unittest's failure blocks): while this returns true, every line goes to this
     * parser alone, so that what a test printed is not taken for results of another format.
     * Asked after each call of parse, as busy is; a parser that captures is busy. NULL: never. */
    bool (*captures)(const void *state);
    /* Events a line or the end released beyond the TL_MAX_EVENTS that parse or flush return
     * (RSpec's passed examples, held until the run shows it is RSpec's): the core asks after
     * each call of parse that took its line and after flush, until it returns 0. Strings stay
     * valid until the next call of any of the parser's functions. NULL: never any. */
    int (*more)(void *state, struct tl_event *ev);
};

/* The formats (testlog/registry.h). */
#define TL_FORMAT(var, NAME, alias) extern const struct tl_format tl_format_##var;
#include "testlog/registry.h"
#undef TL_FORMAT

/* Helpers for parsers. */
static inline struct tl_str tl_str_make(const char *p, size_t n)
{
    struct tl_str s = {p, n};
    return s;
}
static inline void tl_event_init(struct tl_event *ev, enum tl_kind kind)
{
    memset(ev, 0, sizeof *ev); /* in place: no zeroed copy to move */
    ev->kind = kind;
    ev->t.wall_ms = __builtin_nan("");
    ev->t.duration_ms = __builtin_nan("");
}
/* The event happened when an earlier line of the parser arrived (TL_AT_EARLIER_LINE). */
static inline void tl_at_earlier_line(struct tl_event *ev, uint64_t arrival_ns)
{
    ev->t.when = TL_AT_EARLIER_LINE;
    ev->t.ns = arrival_ns;
}

#endif
