/* Unit tests of the JUnit report: how ids split into classname and name (the shapes of the real
 * logs in tests/fixtures/real), and reports built from hand-made streams — text made valid XML,
 * details of a test arriving before its marker, a kill between a marker and its close line,
 * a stream that grows between writes, what is not a stream; and the summary's tests read from
 * the same results, so that it says what the report says. */
#include "report/junit.h"
#include "report/results.h"
#include "report/summary.h"

#include <check.h>
#include "check_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/xpath.h>

#include "base/util.h"

static void split_is(const char *id, const char *cls, const char *name, const char *suite)
{
    struct junit_split sp;
    junit_split_id(id, strlen(id), &sp);
    char *c = sp.cls_len ? junit_classname(id, &sp) : strdup("");
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(strcmp(c, cls) == 0, "%s: classname '%s', expected '%s'", id, c, cls);
    ck_assert_msg(strcmp(id + sp.name_off, name) == 0, "%s: name '%s', expected '%s'", id, id + sp.name_off, name);
    char *s = sp.suite_len ? strndup(id, sp.suite_len) : strdup(c);
    ck_assert_msg(strcmp(s, suite) == 0, "%s: suite '%s', expected '%s'", id, s, suite);
    free(s);
    free(c);
}

START_TEST(test_split)
{
    /* pytest: the file's dotted path and the class, pytest's own spelling */
    split_is("dateutil/test/test_tz.py::TzLocalNixTest::testImaginaryPositiveUTCOffset",
             "dateutil.test.test_tz.TzLocalNixTest", "testImaginaryPositiveUTCOffset", "dateutil/test/test_tz.py");
    split_is("mozlog/tests/test_errorsummary.py::test_errorsummary[a::b c]", "mozlog.tests.test_errorsummary",
             "test_errorsummary[a::b c]", "mozlog/tests/test_errorsummary.py");
    /* libtest */
    split_is("de::tests::parse", "de::tests", "parse", "de");
    /* unittest, both spellings */
    split_is("testAMPMNoHour (dateutil.test.test_parser.ParserTest.testAMPMNoHour)",
             "dateutil.test.test_parser.ParserTest", "testAMPMNoHour (dateutil.test.test_parser.ParserTest.testAMPMNoHour)",
             "dateutil.test.test_parser.ParserTest");
    split_is("test_x (mod.Case)", "mod.Case", "test_x (mod.Case)", "mod.Case");
    /* go: the package path */
    split_is("mime/multipart/TestReadForm", "mime/multipart", "TestReadForm", "mime/multipart");
    /* GoogleTest, typed and parameterised */
    split_is("ADeathTest.ShouldRunFirst", "ADeathTest", "ShouldRunFirst", "ADeathTest");
    split_is("My/ATypeParamDeathTest/0.ShouldRunFirst", "My/ATypeParamDeathTest/0", "ShouldRunFirst",
             "My/ATypeParamDeathTest/0");
    /* Check: a suite name may hold spaces */
    split_is("Simple Tests:test_lno", "Simple Tests", "test_lno", "Simple Tests");
    /* mozlog paths: a file extension is no gtest name */
    split_is("dom/tests/test_x.html", "dom/tests", "test_x.html", "dom/tests");
    split_is("/css/a.html?x=1", "/css", "a.html?x=1", "/css");
    /* TAP from prove: the file, then the description */
    split_is("t/basename.t 1 foo.txt -> foo", "t/basename.t", "1 foo.txt -> foo", "t/basename.t");
    /* nothing to split */
    split_is("alpha", "", "alpha", "");
    split_is("beta: a description", "", "beta: a description", "");
    split_is("", "", "", "");
}
END_TEST

static int stream_file(const char *text)
{
    int fd = memfd_create("stream", MFD_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
    return fd;
}

#define META "{\"type\":\"meta\",\"product\":\"prog\",\"startTime\":1796300000000.0}\n"

/* The report of j, parsed (the caller frees). */
static xmlDocPtr report(struct results *j, double end_ms)
{
    int out = memfd_create("out", MFD_CLOEXEC);
    ck_assert_int_eq(results_update(j), 0);
    ck_assert_int_eq(junit_write(j, out, end_ms, NULL), 0);
    off_t n = lseek(out, 0, SEEK_END);
    char *buf = malloc((size_t)n + 1);
    ck_assert_int_eq(pread(out, buf, (size_t)n, 0), n);
    buf[n] = 0;
    close(out);
    xmlDocPtr d = xmlReadMemory(buf, (int)n, "report.xml", NULL, XML_PARSE_NONET);
    ck_assert_msg(d != NULL, "not well-formed: %s", buf);
    free(buf);
    return d;
}

static char *xq(xmlDocPtr d, const char *expr)
{
    xmlXPathContextPtr c = xmlXPathNewContext(d);
    xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, c);
    xmlChar *s = xmlXPathCastToString(o);
    char *r = strdup((const char *)s);
    xmlFree(s);
    xmlXPathFreeObject(o);
    xmlXPathFreeContext(c);
    return r;
}

#define XQ_EQ(d, expr, want)                                                                       \
    do {                                                                                           \
        char *_v = xq(d, expr);                                                                    \
        ck_assert_msg(strcmp(_v, want) == 0, "%s: '%s', expected '%s'", expr, _v, want);           \
        free(_v);                                                                                  \
    } while (0)

/* go's package is the test's scope: the suite and classname, whatever dots a module path has */
START_TEST(test_go_package_suite)
{
    int fd = stream_file(META "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":1.0,\"endTime\":3.0,\"data\":"
                              "{\"type\":\"Test\",\"test\":\"github.com/acme/widget/calc/TestAdd/small\","
                              "\"name\":\"TestAdd/small\",\"scope\":\"github.com/acme/widget/calc\","
                              "\"status\":\"FAIL\",\"color\":\"orange\"}}\n");
    struct results *j;
    ck_assert_int_eq(results_new(fd, 0, &j), 0);
    xmlDocPtr d = report(j, -1);
    XQ_EQ(d, "//testsuite/@name", "github.com/acme/widget/calc");
    XQ_EQ(d, "//testcase/@classname", "github.com/acme/widget/calc");
    XQ_EQ(d, "//testcase/@name", "TestAdd/small");
    xmlFreeDoc(d);
    results_free(j);
    close(fd);
}
END_TEST

START_TEST(test_text_made_valid)
{
    /* a control character, an invalid UTF-8 byte the JSON could not hold but a \u escape can */
    int fd = stream_file(META "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":1.0,\"endTime\":3.0,\"data\":"
                              "{\"type\":\"Test\",\"test\":\"a\\u001b[31mb\",\"status\":\"SKIP\",\"message\":"
                              "\"x\\u0001y\\ufffe<\",\"color\":\"yellow\",\"cpuTime\":2.0,\"maxRSS\":4096}}\n");
    struct results *j;
    ck_assert_int_eq(results_new(fd, 0, &j), 0);
    xmlDocPtr d = report(j, -1);
    XQ_EQ(d, "//testcase/@name", "a\xef\xbf\xbd[31mb");
    XQ_EQ(d, "//testcase/skipped/@message", "x\xef\xbf\xbdy\xef\xbf\xbd<");
    XQ_EQ(d, "//testcase/@time", "0.002");
    /* the figures in system-out: a properties element in a testcase fails junit-10.xsd */
    XQ_EQ(d, "count(//testcase/properties)", "0");
    XQ_EQ(d, "//testcase/system-out", "[[PROPERTY|cpuTime=0.002]]\n[[PROPERTY|maxRSS=4096]]\n");
    XQ_EQ(d, "//testcase/@classname", "prog");
    XQ_EQ(d, "//testsuite/@timestamp", "2026-12-03T12:13:20");
    xmlFreeDoc(d);
    results_free(j);
    close(fd);
}
END_TEST

START_TEST(test_details_and_duplicates)
{
    /* A status before its test's marker (no open line), a crash of an open test, and a kill
     * between a marker and its close line (the test is both a result and open: one testcase). */
    int fd = stream_file(
        META "{\"type\":\"marker\",\"name\":\"FAIL\",\"startTime\":1.0,\"endTime\":null,\"data\":{\"type\":"
             "\"TestStatus\",\"message\":\"boom\",\"test\":\"d/a.js\",\"subtest\":\"s1\",\"color\":\"orange\"}}\n"
             "{\"type\":\"marker\",\"name\":\"PASS\",\"startTime\":1.0,\"endTime\":null,\"data\":{\"type\":"
             "\"TestStatus\",\"test\":\"d/a.js\",\"subtest\":\"fine\",\"color\":\"green\"}}\n"
             "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":0.5,\"endTime\":2.0,\"data\":{\"type\":\"Test\","
             "\"test\":\"d/a.js\",\"status\":\"FAIL\",\"expected\":\"PASS\",\"color\":\"orange\"}}\n"
             "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"d/b.js\",\"name\":\"test\",\"startTime\":2.0,"
             "\"data\":{\"type\":\"Test\",\"test\":\"d/b.js\"}}\n"
             "{\"type\":\"marker\",\"name\":\"CRASH\",\"startTime\":3.0,\"endTime\":null,\"data\":{\"type\":"
             "\"Crash\",\"signature\":\"mozalloc_abort\",\"test\":\"d/b.js\",\"color\":\"red\"}}\n"
             "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":2.0,\"endTime\":4.0,\"data\":{\"type\":\"Test\","
             "\"test\":\"d/b.js\",\"status\":\"CRASH\",\"expected\":\"PASS\",\"color\":\"red\"}}\n"
             "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"d/c.js\",\"name\":\"test\",\"startTime\":4.0,"
             "\"data\":{\"type\":\"Test\",\"test\":\"d/c.js\"}}\n"
             "{\"type\":\"marker\",\"name\":\"Tree CPU\",\"startTime\":0.0,\"endTime\":10.0,\"data\":{\"type\":\"TreeCPU\"}}\n"
             "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"d/c");
    struct results *j;
    ck_assert_int_eq(results_new(fd, 0, &j), 0);
    xmlDocPtr d = report(j, -1);
    XQ_EQ(d, "count(//testcase)", "3");
    XQ_EQ(d, "//testcase[@name='a.js']/failure/@message", "FAIL: FAIL s1: boom");
    XQ_EQ(d, "//testcase[@name='a.js']/failure", "FAIL: FAIL s1: boom\nFAIL s1: boom");
    XQ_EQ(d, "//testcase[@name='b.js']/error/@type", "crash");
    XQ_EQ(d, "//testcase[@name='b.js']/error/@message", "CRASH mozalloc_abort");
    /* c is open: incomplete, timed to the last time the stream holds (10 ms) */
    XQ_EQ(d, "//testcase[@name='c.js']/error/@type", "incomplete");
    XQ_EQ(d, "//testcase[@name='c.js']/error/@message",
          "still running when the record stopped (resmon-run was killed, or is still running)");
    XQ_EQ(d, "//testcase[@name='c.js']/@time", "0.006");
    xmlFreeDoc(d);
    struct junit_stats st;
    int out = memfd_create("out", MFD_CLOEXEC);
    ck_assert_int_eq(junit_write(j, out, -1, &st), 0);
    close(out);
    ck_assert_uint_eq(st.tests, 3);
    ck_assert_uint_eq(st.open, 1);

    /* The stream grows: c ends (its torn line was never read), then a timeout is said, with c
     * still running; e, which the harness timed out before, keeps the harness's word. */
    const char more[] = ".js\"}\n"
                        "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":4.0,\"endTime\":5.0,\"data\":{\"type\":"
                        "\"Test\",\"test\":\"d/e.js\",\"status\":\"TIMEOUT\",\"expected\":\"PASS\",\"color\":\"purple\"}}\n"
                        "{\"type\":\"marker\",\"name\":\"timeout\",\"startTime\":11.0,\"endTime\":null,\"data\":{"
                        "\"type\":\"Timeout\",\"reason\":\"output-timeout\",\"after\":5000.0,\"signal\":\"TERM\","
                        "\"openTests\":[\"d/c.js\"]}}\n"
                        "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":4.0,\"endTime\":12.0,\"data\":{\"type\":"
                        "\"Test\",\"test\":\"d/c.js\",\"status\":\"TIMEOUT\",\"color\":\"yellow\"}}\n";
    ck_assert_int_eq(write_all(fd, more, sizeof more - 1), 0);
    d = report(j, 20.0);
    XQ_EQ(d, "count(//testcase)", "4");
    XQ_EQ(d, "//testcase[@name='e.js']/error/@type", "timeout");
    XQ_EQ(d, "//testcase[@name='e.js']/error/@message", "TIMEOUT");
    XQ_EQ(d, "//testcase[@name='c.js']/error/@type", "timeout");
    XQ_EQ(d, "//testcase[@name='c.js']/error/@message",
          "still running when the command printed nothing for 5 s (--output-timeout)");
    XQ_EQ(d, "//testcase[@name='c.js']/@time", "0.008");
    XQ_EQ(d, "//testsuite/properties/property[@name='resmon.reason']/@value", "output-timeout");
    xmlFreeDoc(d);
    results_free(j);
    close(fd);
}
END_TEST

/* A message line gives an unexpected result without a message its text (results.h), as the
 * profile's converter does: the first that names it, in the order the tests ended; a pass and a
 * result with its own message keep theirs. */
/* The reports read the stream as the profile's converter does (profile/streamread.h): a line's
 * keys in another order than the writer's (a stream another tool wrote, or edited by hand) say the
 * same. */
START_TEST(test_any_key_order)
{
    int fd = stream_file(META "{\"name\":\"test\",\"data\":{\"test\":\"d/a\",\"type\":\"Test\",\"status\":\"FAIL\","
                              "\"message\":\"boom\",\"color\":\"orange\"},\"startTime\":1.0,\"endTime\":3.0,"
                              "\"type\":\"marker\"}\n"
                              "{\"key\":\"d/b\",\"kind\":\"test\",\"type\":\"open\",\"name\":\"test\",\"startTime\":4.0,"
                              "\"data\":{\"type\":\"Test\",\"test\":\"d/b\"}}\n"
                              "{\"startTime\":5.0,\"endTime\":null,\"name\":\"timeout\",\"type\":\"marker\","
                              "\"data\":{\"type\":\"Timeout\",\"reason\":\"timeout\",\"after\":5000}}\n");
    struct results *j;
    ck_assert_int_eq(results_new(fd, 0, &j), 0);
    xmlDocPtr d = report(j, -1);
    XQ_EQ(d, "count(//testcase)", "2");
    XQ_EQ(d, "//testcase[@name='a']/failure/@message", "FAIL: boom");
    XQ_EQ(d, "//testcase[@name='b']/error/@message", "still running when the run timed out after 5 s (--timeout)");
    ck_assert_double_eq(j->last_ms, 5.0);
    xmlFreeDoc(d);
    results_free(j);
    close(fd);
}
END_TEST

START_TEST(test_late_message)
{
#define T(start, name, status, color, more)                                                        \
    "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":" start ",\"endTime\":" start ",\"data\":{\"type\":"   \
    "\"Test\",\"test\":\"" name "\",\"status\":\"" status "\"" more ",\"color\":\"" color "\"}}\n"
#define M(name, text) "{\"type\":\"message\",\"test\":\"" name "\",\"message\":\"" text "\"}\n"
    int fd = stream_file(META T("1.0", "d/a", "FAIL", "orange", "") T("2.0", "d/ok", "PASS", "green", "")
                             T("3.0", "d/own", "FAIL", "orange", ",\"message\":\"its own\"")
                             T("4.0", "d/e", "ERROR", "orange", "") T("5.0", "d/e", "ERROR", "orange", "")
                             M("d/a", "assert 1 == 2") M("d/ok", "not a failure") M("d/own", "another")
                             M("d/a", "too late") M("d/e", "first") M("d/e", "second"));
#undef T
#undef M
    static const char *const want[][2] = {
        {"//testcase[@name='a']/failure/@message", "FAIL: assert 1 == 2"},
        {"count(//testcase[@name='ok']/*)", "0"},
        {"//testcase[@name='own']/failure/@message", "FAIL: its own"},
        {"//testcase[@name='e'][1]/error/@message", "first"},
        {"//testcase[@name='e'][2]/error/@message", "second"},
    };
    struct results *j;
    ck_assert_int_eq(results_new(fd, 0, &j), 0);
    xmlDocPtr d = report(j, -1);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        XQ_EQ(d, want[i][0], want[i][1]);
    xmlFreeDoc(d);
    results_free(j);
    close(fd);
}
END_TEST

/* One model: the summary's tests are the report's. A result the harness expected (its outcome)
 * is no failure whatever its colour; the unexpected ones come in the order they ended (b
 * started first, ended last), each with the failure text and where from its message line; the
 * statuses in the order a reader knows; the tests the stop's marker names as running. */
#define TEST_MARKER(start, end, payload)                                                           \
    "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":" start ",\"endTime\":" end                 \
    ",\"data\":{\"type\":\"Test\"," payload "}}\n"
START_TEST(test_summary_reads_the_results)
{
    int fd = stream_file(
        META "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"b\",\"name\":\"test\",\"startTime\":1.0,"
             "\"data\":{\"type\":\"Test\",\"test\":\"b\"}}\n"
        TEST_MARKER("2.0", "3.0", "\"test\":\"x\",\"status\":\"TIMEOUT\",\"outcome\":\"expected\",\"color\":\"purple\"")
        TEST_MARKER("3.0", "4.0", "\"test\":\"c\",\"status\":\"ERROR\",\"color\":\"red\"")
        "{\"type\":\"message\",\"test\":\"c\",\"message\":\"boom\",\"where\":\"t.py:7: E\"}\n"
        TEST_MARKER("4.0", "5.0", "\"test\":\"p\",\"status\":\"PASS\",\"color\":\"green\",\"leaked\":2")
        TEST_MARKER("1.0", "9.0", "\"test\":\"b\",\"status\":\"FAIL\",\"expected\":\"PASS\",\"color\":\"orange\"")
        "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"b\"}\n"
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"h\",\"name\":\"test\",\"startTime\":9.0,"
        "\"data\":{\"type\":\"Test\",\"test\":\"h\"}}\n"
        "{\"type\":\"marker\",\"name\":\"timeout\",\"startTime\":10.0,\"endTime\":null,\"data\":{\"type\":"
        "\"Timeout\",\"reason\":\"timeout\",\"openTests\":[\"h\"]}}\n");
    struct results *j;
    ck_assert_int_eq(results_new(fd, 0, &j), 0);
    xmlDocPtr d = report(j, -1);
    XQ_EQ(d, "//testcase[@name='x']/skipped/@message", "expected TIMEOUT");
    XQ_EQ(d, "//testcase[@name='c']/error/@message", "boom");
    XQ_EQ(d, "/testsuites/@failures + /testsuites/@errors", "3"); /* b, c, and h never ended */
    xmlFreeDoc(d);
    const struct rs_test **list;
    ck_assert_uint_eq(results_ended(j, &list), 4);
    ck_assert_str_eq(list[3]->id, "b");
    ck_assert_str_eq(list[1]->where, "t.py:7: E");
    free(list);
    struct summary_facts *f = calloc(1, sizeof *f);
    ck_assert_int_eq(summary_add_results(f, j), 0);
    ck_assert_uint_eq(f->tests, 4);
    ck_assert_uint_eq(f->n_status, 4);
    static const char *const order[] = {"PASS", "FAIL", "ERROR", "TIMEOUT"};
    for (size_t i = 0; i < 4; i++)
        ck_assert_str_eq(f->by_status[i].status, order[i]);
    ck_assert_uint_eq(f->unexpected_total, 2);
    ck_assert_str_eq(f->unexpected[0].id, "c");
    ck_assert_str_eq(f->unexpected[0].message, "boom");
    ck_assert_str_eq(f->unexpected[1].id, "b");
    ck_assert_uint_eq(f->slowest[0].duration_ns, 8000000);
    ck_assert_uint_eq(f->leaked, 2);
    ck_assert_uint_eq(f->leaking_tests, 1);
    ck_assert_uint_eq(f->open_total, 1);
    ck_assert_str_eq(f->open[0].id, "h");
    free(f);
    results_free(j);
    close(fd);
}
END_TEST

START_TEST(test_not_a_stream)
{
    int fd = stream_file("{\"meta\":{}}\n");
    struct results *j;
    ck_assert_int_eq(results_new(fd, 0, &j), 0);
    int out = memfd_create("out", MFD_CLOEXEC);
    ck_assert_int_eq(results_update(j), -EINVAL);
    ck_assert_int_eq(results_update(j), -EINVAL); /* sticky */
    ck_assert_int_eq(junit_write(j, out, -1, NULL), -EINVAL);
    ck_assert_int_eq(lseek(out, 0, SEEK_END), 0);
    close(out);
    results_free(j);
    close(fd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("junit");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_split);
    tcase_add_test(tc, test_text_made_valid);
    tcase_add_test(tc, test_go_package_suite);
    tcase_add_test(tc, test_details_and_duplicates);
    tcase_add_test(tc, test_late_message);
    tcase_add_test(tc, test_any_key_order);
    tcase_add_test(tc, test_summary_reads_the_results);
    tcase_add_test(tc, test_not_a_stream);
    suite_add_tcase(s, tc);
    return check_run(s);
}
