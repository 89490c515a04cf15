/* junit.h — the tests of a run as JUnit XML, the report GitLab, Jenkins, GitHub's test-report
 * actions, Buildkite and Datadog ingest; written from what results.h read of the stream, so that
 * a run writes it like the profile (at the normal end, before the first stop signal, again after
 * the tree is gone) and --recover rebuilds it from the stream a killed run left.
 *
 * The report:
 *   <testsuites name=COMMAND tests failures errors time timestamp>
 *     <testsuite name tests failures errors skipped time timestamp id>  one per suite, below
 *       <properties>  the run: resmon.command, resmon.reason (exit, timeout, memory, cpu, tasks,
 *                     oom-kill, ...), resmon.exit, resmon.limit, resmon.timeout
 *       <testcase classname name time>
 *         <failure message type>   an unexpected FAIL, ASSERT, PRECONDITION_FAILED, or a PASS
 *                                  where a failure was expected (type "unexpected-pass")
 *         <error message type>     ERROR, CRASH; TIMEOUT as type "timeout" naming the timeout;
 *                                  a test that never ended as type "incomplete" (or "timeout"
 *                                  when the run was stopped by a timeout), naming why from the
 *                                  typed end (results_end): a stop, or the command's own end
 * A log without tests gives one testcase, the command: a failure when it ended by itself (a non-zero
 * status, or a signal nobody here sent: its crash, not a stop), an error when the run stopped it.
 *         <skipped message>        SKIP, NOTRUN; an expected non-pass status ("expected FAIL")
 *         <system-out>             what the tree used while the test ran, one line each in the
 *                                  [[PROPERTY|name=value]] form: cpuTime (s), maxRSS (bytes)
 * The file is valid against the schema the Jenkins xUnit plugin checks its input with
 * (junit-10.xsd, which allows no properties inside a testcase; tests/fixtures/junit/ has it).
 * A run whose log held no test is one testcase, the command itself (failed when it exited
 * non-zero, an error when it was stopped), so a CI still sees what happened.
 *
 * Names: a test the harness scoped (results.h: go's package) has its scope as suite and
 * classname and the rest of its id as name ("github.com/acme/widget/calc" and "TestAdd/small"). Others:
 * junit_split_id() splits a test id into classname and name by the shapes the formats
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

struct results;

/* What a report held: tests written, those that never ended, those past RESULTS_MAX_TESTS. */
struct junit_stats {
    size_t tests, open, left_out;
};

/* The report of what r read (results_update first) to out_fd / atomically to dirfd/path
 * (outfile.h, write_file_atomically). end_ms: the end of the run in profile ms (< 0: the last time
 * the stream holds), which times the tests still open. ret_stats may be NULL. 0, -EINVAL when
 * the stream had no meta line, or -errno. */
int junit_write(const struct results *r, int out_fd, double end_ms, struct junit_stats *ret_stats);
int junit_finalize(const struct results *r, int dirfd, const char *path, double end_ms, struct junit_stats *ret_stats);

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
/* A test's suite and classname (malloc'ed; NULL on ENOMEM) and name (in t->id), as the report
 * names them; product: the classname of an id without a split. */
struct rs_test;
void junit_names(const struct rs_test *t, const char *product, char **ret_suite, char **ret_classname,
                 const char **ret_name);
/* The classname of a split as text (malloc'ed; NULL on ENOMEM). */
char *junit_classname(const char *id, const struct junit_split *sp);

#endif
