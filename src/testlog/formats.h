/* testlog/formats.h — the text and JSON test-log formats after mozlog/TBPL/mach: what each parser
 * recognises, how it maps results onto the mozlog vocabulary, and helpers they share.
 *
 * The parsers (one file each) implement the contract of testlog/event.h:
 *
 *   tl_format_tap       "tap"       TAP 13/14, Node's --test-reporter=tap, Check's TAP log
 *   tl_format_go        "go"        go test -json (test2json) and plain go test -v
 *   tl_format_gtest     "gtest"     GoogleTest console output
 *   tl_format_pytest    "pytest"    pytest -v, including pytest-xdist
 *   tl_format_unittest  "unittest"  Python unittest -v
 *   tl_format_libtest   "libtest"   Rust libtest, text and --format=json
 *   tl_format_check     "check"     Check's console output (CK_NORMAL / CK_VERBOSE)
 *   tl_format_ctest     "ctest"     CMake's ctest, plain, -V, -j N, --output-on-failure
 *   tl_format_meson     "meson"     meson test
 *   tl_format_teamcity  "teamcity"  TeamCity service messages (##teamcity[testStarted ...])
 *   tl_format_cmocka    "cmocka"    cmocka's default output
 *   tl_format_catch2    "catch2"    Catch2's console reporter (default and -s)
 *   tl_format_doctest   "doctest"   doctest's console reporter (default, -s, -d)
 *   tl_format_vitest    "vitest"    vitest's default and verbose reporters (vitest.c)
 *   tl_format_jest      "jest"      jest's default and --verbose reporters (jest.c)
 *   tl_format_rspec     "rspec"     RSpec's documentation tree, pending and failure lists
 *   tl_format_mocha     "mocha"     mocha's spec and json-stream reporters (mocha.c)
 *
 * Each is pure (no I/O, no globals), keeps bounded state in the zeroed block the core allocates
 * (state_size; no release function needed: none owns memory between calls, but RSpec's, which
 * holds passed examples until the run shows it is RSpec's), and rejects a line
 * that is not its format within a few byte comparisons. Each also declares, for the core's
 * prefilter (testlog/event.h), the first bytes its lines can have and when it is busy: a line it
 * cannot take then never reaches it. A change to what a parser accepts must keep that declaration
 * true (unit_testlog's prefilter tests compare every fixture with and without the prefilter). go and libtest use cJSON only for lines
 * that start with '{' and name their key fields; cJSON's memory is freed before parse returns, so
 * strings they hand out are copied into the state (truncated to the state's buffers).
 *
 * Results — every TLE_TEST_END these parsers produce has expected_known = true and:
 *
 *   outcome                                       status   expected  unexpected
 *   passed (TAP ok, go PASS, gtest OK, ...)       PASS     -         false
 *   failed (TAP not ok, also with # SKIP, go
 *     FAIL, gtest FAILED, Check :F: and :S:...)   FAIL     PASS      true
 *   skipped / ignored (any format, TAP ok # SKIP,
 *     a prove file skipped as a whole, mocha
 *     pending, jest and vitest skipped and todo,
 *     RSpec pending)                              SKIP     -         false
 *   known failure (TAP # TODO not ok, pytest
 *     XFAIL, unittest "expected failure")         FAIL     FAIL      false
 *   unexpected pass (TAP # TODO ok, pytest XPASS,
 *     unittest "unexpected success")              PASS     FAIL      true
 *   error outside the test body (pytest ERROR,
 *     unittest ERROR, Check :E:, a prove file
 *     whose plan was missing or not met, a
 *     failed mocha hook, a jest file that could
 *     not run)                                    ERROR    PASS      true
 *   Check "Test timeout expired", libtest "time
 *     limit exceeded", Node testTimeoutFailure    TIMEOUT  PASS      true
 *   Check "Received signal"                       CRASH    PASS      true
 *
 * Messages — a result carries the failure text the format gives: a skip or TODO reason, Check's
 * message, pytest's "(reason)", a Node YAML "error:", gtest's failure text, go's first located
 * output line, libtest's JSON message; the core keeps at most TESTLOG_MESSAGE_MAX bytes of it.
 *
 * ("-": expected is empty, i.e. the result is the expected one, as in mozlog.) Suites
 * (TLE_SUITE_END) carry status PASS or FAIL when the format says, and duration_ms when known.
 *
 * Timing — one struct tl_timing per event (testlog/event.h): the core times an event by t.wall_ms
 * (the producer's epoch timestamp: go -json, mozlog), else by t.when: the line's arrival (first
 * byte), its completion (TL_AT_LINE_END) or an earlier line's arrival (TL_AT_EARLIER_LINE).
 * A result without an opening line carries duration_ms: the producer's (go, gtest, libtest JSON,
 * TAP YAML duration_ms), or else the time since the format's previous event (TAP: "a test point
 * ran from the previous TAP event to its arrival"). pytest/unittest/libtest text lines that hold
 * name and result emit TEST_START (at the first byte: that is when the runner printed the name)
 * and TEST_END at TL_AT_LINE_END (the runner printed the result and newline when it finished).
 * With a runner that block-buffers its output, both collapse to the flush time: the test's
 * duration then shows as ~0 and tests appear in bursts.
 *
 * Ids and scopes — id is the test's own name; scope keys it among parallel or nested runs, and
 * the test marker's name is "scope/id" (testlog_tests.c):
 *   TAP: id = description (without directive), scope = the file prove announced, then parent
 *        test names, joined with '/' (a parent with no "# Subtest:" opener is named by its
 *        expected test number); a prove file's own result has id = the file;
 *        Check's TAP descriptions "file.c:tcase:test: message" give id "tcase:test".
 *   go:  id = Test ("TestX/sub"), scope = Package (empty for plain -v output).
 *   gtest: id = "Suite.Name", scope empty; suites are TLE_SUITE_START/END with id = suite.
 *   pytest: id = node id ("tests/test_a.py::TestC::test_x[p]"), unittest: id = "mod.Class.test",
 *   libtest: id = "a::b", Check: id = "tcase:test" (same as its TAP form).
 *   mocha: id = the full title ("Suite Inner test", as mocha's fullTitle()), scope empty.
 *   jest: id = describe titles and the test's joined by " › ", scope = the test file.
 *   vitest: id = describe titles and the test's joined by " > ", scope = the test file.
 *   rspec: id = the example's full description, scope empty.
 *   teamcity: id = the test's name, scope = the suites open in its flow, joined with '/'.
 *
 * Counts — a harness's own summary of the run's tests is TLE_TOTALS (tl_totals parses its "N
 * word" lists): jest's "Tests:" line, vitest's "Tests" line, pytest's last rule, RSpec's "N
 * examples" line, unittest's "Ran N tests" and its verdict. Each count is what the harness
 * printed, no more: a figure it left out is -1.
 */
#ifndef RESMON_TESTLOG_FORMATS_H
#define RESMON_TESTLOG_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "testlog/event.h"
#include "testlog/testlog.h"

/* A string literal as a tl_str (static storage: valid forever). */
#define TL_LIT(s) tl_str_make((s), sizeof(s) - 1)
/* line (p, n) starts with the literal lit. */
#define TL_PREFIX(p, n, lit) ((n) >= sizeof(lit) - 1 && memcmp((p), (lit), sizeof(lit) - 1) == 0)

enum tl_outcome {
    TL_PASSED,
    TL_FAILED,
    TL_SKIPPED,
    TL_KNOWN_FAIL,
    TL_UNEXPECTED_PASS,
    TL_ERRORED,
    TL_TIMED_OUT,
    TL_CRASHED,
};

/* Fill ev as a TLE_TEST_END with status/expected/unexpected per the table above. */
void tl_set_result(struct tl_event *ev, struct tl_str id, struct tl_str scope,
                   enum tl_outcome outcome);

/* Strip leading and trailing spaces and tabs. */
struct tl_str tl_trim(struct tl_str s);
/* Copy s into dst (capacity cap, truncated, not NUL-terminated); returns the copy. */
struct tl_str tl_copy(char *dst, size_t cap, struct tl_str s);
/* The string member key of the JSON object o (a line's cJSON parse), copied into buf (capacity
 * cap, as tl_copy); empty, at buf, when o has no such string. */
struct cJSON;
struct tl_str tl_json_copy(const struct cJSON *o, const char *key, char *buf, size_t cap);
/* A reporter's rule: a line of at least 20 bytes, all c ("-----", "=====", "....."). */
bool tl_rule(const char *s, size_t n, char c);
/* A failure text gathered line by line in a parser's buffer: append line to dst[0..*n) (capacity
 * cap), after a newline when dst is not empty, cut before cap at a UTF-8 character's start.
 * Returns false once the buffer is full (the line, or part of it, did not fit). */
bool tl_append_line(char *dst, size_t cap, size_t *n, struct tl_str line);
/* Parse a decimal number (digits, optional fraction, optional exponent) occupying all of s.
 * Returns false when s is not one. */
bool tl_parse_number(struct tl_str s, double *ret);
/* RFC 3339 date-time ("2024-05-01T10:00:00.123456789Z", "+02:00" offsets) → epoch ms. */
bool tl_parse_rfc3339(struct tl_str s, double *ret_ms);
/* Case-insensitive prefix test of s against lowercase lit. */
bool tl_iprefix(struct tl_str s, const char *lit);

/* A harness's summary of the run's tests as a list of "N word" items separated by sep (", ",
 * " | "): each item's word (its first word after the number) is looked up in words (NULL-
 * terminated pairs of a word and where its number adds: 'p' passed, 'f' failed, 's' skipped, 't'
 * the total, 'o' another kind of test, '-' not a test) and the numbers add into a TLE_TOTALS
 * event of harness's name, whose message is s. A total not given is the sum of the tests
 * counted. False (ev untouched) unless every item is "N word" with a word listed, and no number
 * or sum is past TL_COUNT_MAX. */
bool tl_totals(struct tl_event *ev, const char *harness, struct tl_str s, const char *sep,
               const char *const *words);
/* The largest count a harness's summary is taken with (a number or a sum past it: not a count;
 * far from int64's limits, so that counts add and subtract without overflow). */
#define TL_COUNT_MAX INT64_C(1000000000000000)

/* A test case that a console reporter (Catch2, doctest) names only in a header it prints before
 * what it reports of it: it starts at its first header (when the header began: the header is
 * printed once the test case reports something) and its result goes out at the last line it
 * printed, once the next test case's header or the totals show it is over. Two name and message
 * buffers: one test case's result and the next one's start may be events of the same line. */
#define TL_CASE_NAME 512
struct tl_case {
    bool open;       /* a test case is running */
    bool failed;     /* one of its assertions failed */
    bool in_failure; /* the lines read now are its failure text */
    unsigned cur;    /* name[cur], msg[cur]: the running test case's */
    uint64_t header_ns, last_ns; /* when its header began; its last line */
    size_t name_n, msg_n[2];
    char name[2][TL_CASE_NAME], msg[2][TESTLOG_MESSAGE_MAX];
};
/* The running test case's name. */
static inline struct tl_str tl_case_name(const struct tl_case *c)
{
    return tl_str_make(c->name[c->cur], c->name_n);
}
/* Start test case name at the header that began at c->header_ns (now: the header's last line):
 * its TLE_TEST_START in *ev. Returns 1. The running one's result must have been taken first. */
int tl_case_start(struct tl_case *c, struct tl_str name, uint64_t now_ns, struct tl_event *ev);
/* The running test case's result, outcome oc with its failure text unless it passed, at its last
 * line, in *ev: 1, or 0 when none is running. */
int tl_case_end(struct tl_case *c, enum tl_outcome oc, struct tl_event *ev);
/* A line of the running test case's failure text. */
static inline void tl_case_text(struct tl_case *c, struct tl_str line)
{
    tl_append_line(c->msg[c->cur], sizeof c->msg[0], &c->msg_n[c->cur], line);
}

/* A cmocka group's first line, "[==========] Running N test(s)." (cmocka.c): the gtest
 * parser leaves the run it starts alone. */
bool tl_cmocka_run_line(const char *line, size_t len);

/* For the core's payloads (testlog_tests.c), here so that unit tests can hold it to jsonw:
 * ns / 1e6, negated when neg, as jsonw_double(v, 3) writes it (without snprintf in nearly every
 * case); buf holds at least 32 bytes. Returns the length. */
size_t tl_fmt_ms3(char *buf, bool neg, uint64_t ns);

static inline bool tl_str_eq(struct tl_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static inline bool tl_str_same(struct tl_str a, struct tl_str b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

#endif
