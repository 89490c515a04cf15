/* junit.h — the tests of a run as JUnit XML, the report GitLab, Jenkins, GitHub's test-report
 * actions, Buildkite and Datadog ingest; built from the JSON Lines stream (stream.h), so that a
 * run writes it like the profile (at the normal end, before the first stop signal, again after
 * the tree is gone) and --recover rebuilds it from the stream a killed run left.
 *
 * What is read from the stream: the meta line (product, startTime), the "test" markers (payload
 * type Test: test, status, expected, message, cpuTime, maxRSS), the tests' open and close state
 * lines (a test still open is one that never ended), the "timeout" marker (why the run was
 * stopped: reason, limit, after) and the command's marker or open line (cmd, exit, reason).
 * Every other line is skipped on its first bytes, without parsing. The reader follows the stream
 * as it grows (complete lines only), like the profile's follower, so a write at a stop only has
 * the lines since the last update left to read. Memory grows with the tests (a record each, at
 * most JUNIT_MAX_TESTS; past it tests are counted, not kept), never with samples.
 *
 * The report:
 *   <testsuites name=COMMAND tests failures errors time timestamp>
 *     <testsuite name tests failures errors skipped time timestamp id>  one per suite, below
 *       <properties>  the run: resmon.command, resmon.reason (exit, timeout, memory, cpu, tasks,
 *                     oom-kill, ...), resmon.exit, resmon.limit, resmon.timeout
 *       <testcase classname name time>
 *         <properties> cpuTime (s), maxRSS (bytes): what the tree used while the test ran
 *         <failure message type>   an unexpected FAIL, ASSERT, PRECONDITION_FAILED, or a PASS
 *                                  where a failure was expected (type "unexpected-pass")
 *         <error message type>     ERROR, CRASH; TIMEOUT as type "timeout" naming the timeout;
 *                                  a test that never ended as type "incomplete" (or "timeout"
 *                                  when the run was stopped by a timeout)
 *         <skipped message>        SKIP, NOTRUN; an expected non-pass status ("expected FAIL")
 * A run whose log held no test is one testcase, the command itself (failed when it exited
 * non-zero, an error when it was stopped), so a CI still sees what happened.
 *
 * Names: junit_split_id() splits a test id into classname and name by the shapes the formats
 * give (pytest and libtest "a::b", unittest "name (module.Class)", paths "dir/file", gtest
 * "Suite.Test", Check "Suite:test", TAP "file.t description"); the suite is the file of a "::"
 * id, otherwise the classname; an id without a split gets the run's product as its classname.
 * Text from the log is made valid XML 1.0 (invalid UTF-8 and control characters become U+FFFD);
 * libxml2's xmlwriter does the escaping.
 */
#ifndef RESMON_JUNIT_H
#define RESMON_JUNIT_H

#include <stdbool.h>
#include <stddef.h>

#define JUNIT_MAX_TESTS 1000000u

struct junit;

/* A reader of the stream at stream_fd (read with pread from offset 0; the fd stays the
 * caller's). Call before the sandbox is locked down: it initialises libxml2. 0 or -ENOMEM. */
int junit_new(int stream_fd, struct junit **ret);
void junit_free(struct junit *j);
/* Read the complete lines the stream gained. 0 or -errno (sticky). */
int junit_update(struct junit *j);
/* After an update, write the report to out_fd / atomically to dirfd/path (util.h,
 * write_file_atomically). end_ms: the end of the run in profile ms (< 0: the last time the stream
 * holds), which times the tests still open. 0 or -errno. */
int junit_write(struct junit *j, int out_fd, double end_ms);
int junit_finalize(struct junit *j, int dirfd, const char *path, double end_ms);

/* What junit_write found, for messages: tests kept and written, and never-ended ones. */
struct junit_stats {
    size_t tests, open, left_out;
};
void junit_stats(const struct junit *j, struct junit_stats *ret);

/* The report of the stream at stream_path, into out_path (atomically). -EINVAL when the file is
 * not a stream. */
int junit_recover(const char *stream_path, const char *out_path, struct junit_stats *ret_stats);

/* How id (n bytes) splits: classname is id[cls_off, cls_off+cls_len), name id[name_off, n);
 * cls_len 0: no classname in the id. The classname's separators are kept as they are, except a
 * pytest path ("dir/test_x.py::Class"), which becomes the dotted module path pytest's own report
 * uses ("dir.test_x.Class") — built by junit_classname(). suite_len: the suite is id[0,
 * suite_len) (0: the classname). */
struct junit_split {
    size_t cls_off, cls_len, name_off, suite_len;
    bool pytest_path;
};
void junit_split_id(const char *id, size_t n, struct junit_split *ret);
/* The classname of a split as text (malloc'ed; NULL on ENOMEM). */
char *junit_classname(const char *id, const struct junit_split *sp);

#endif
