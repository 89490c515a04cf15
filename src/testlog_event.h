/* testlog_event.h — the contract between the per-format parsers (testlog_<format>.c) and the
 * test-log core (testlog.c).
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
                          duration_ms when the producer says how long it took (a test with no
                          start then starts duration_ms before), timeoutfactor */
    TLE_SUBTEST,       /* id, subtest, status, expected, message */
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
                          (since_ns); the core keeps what the tree had spent at this instant */
};

struct tl_str {
    const char *p;
    size_t n;
};

struct tl_event {
    enum tl_kind kind;
    double time_ms;     /* producer timestamp, epoch ms; NAN when none */
    double duration_ms; /* producer-reported duration; NAN when none */
    struct tl_str id, scope, name, status, expected, message, subtest, level, signature, reason,
        minidump, process, command;
    int64_t exitcode;
    bool has_exitcode;
    int64_t timeoutfactor; /* 0 when not given */
    bool unexpected;       /* the producer says the result is unexpected (already decided,
                              e.g. TBPL TEST-UNEXPECTED-*, mozlog with known_intermittent) */
    bool expected_known;   /* unexpected is meaningful */
    /* Added after the first version of this contract (zero-initialised by tl_event_init, so
     * parsers that do not know them keep working): */
    struct tl_str stack;   /* TLE_SUBTEST/TLE_TEST_END: the producer's stack text, if any */
    uint64_t arrival_ns;   /* 0: the event happened when this line arrived; else the arrival time
                              of the line it really belongs to (a result a parser could only
                              complete on a later line, the start of a test whose name was
                              written before its result) */
    /* Added for formats that time tests by arrival (testlog_formats.h):
     * at_ns: when nonzero, the monotonic time of the event, overriding the line's arrival (an
     *   event decided on a later line, e.g. a TAP result held back until its YAML block ends).
     * at_line_end: the event happened when the line was complete, not when its first byte
     *   arrived (pytest, unittest and serial libtest print a test's name when it starts and the
     *   result and newline when it ends): the core times it by the line's completion when it
     *   knows it, else by the arrival. */
    uint64_t at_ns;
    bool at_line_end;
    /* since_ns: TLE_TEST_END of a test without an opener that ran from an earlier line of the
     *   same parser, the arrival of a TLE_ANCHOR (TAP: the previous TAP line at its level). The
     *   core then gives the test the tree's CPU time and peak RSS since that instant, when it still
     *   holds the anchor (the last TL_ANCHORS distinct instants, testlog.c). */
    uint64_t since_ns;
    /* end_may_be_late: TLE_TEST_END whose result line may come well after the test ended (go
     *   prints subtests' results with their parent's). When duration_ms is shorter than the time
     *   since the test's start, the test ended duration_ms after its start. */
    bool end_may_be_late;
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
     * only time the state changes. */
    const char *first_bytes;
    const char *const *pairs;
    bool dotted_word;
    bool (*busy)(const void *state);
};

/* The formats, in the priority order of test-logs.md. */
extern const struct tl_format tl_format_mozlog, tl_format_tbpl, tl_format_mach, tl_format_tap,
    tl_format_go, tl_format_gtest, tl_format_pytest, tl_format_unittest, tl_format_libtest,
    tl_format_check;

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
    ev->time_ms = __builtin_nan("");
    ev->duration_ms = __builtin_nan("");
}

#endif
