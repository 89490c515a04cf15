/* Unit tests of the GitHub Actions outputs: when they are on, the workflow commands' escaping and
 * bound, and the Markdown summary's escaping of text from the command. */
#include "report/ghactions.h"

#include <check.h>
#include "check_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/summary.h"

START_TEST(test_active)
{
    ck_assert(gha_active(CI_AUTO, false, "true"));
    ck_assert(!gha_active(CI_AUTO, false, "false"));
    ck_assert(!gha_active(CI_AUTO, false, NULL));
    ck_assert(!gha_active(CI_AUTO, true, "true")); /* resmon-timeout: only when asked */
    ck_assert(gha_active(CI_GITHUB, true, NULL));
    ck_assert(!gha_active(CI_NONE, false, "true"));
}
END_TEST

static struct summary_facts *facts(void)
{
    struct summary_facts *f = calloc(1, sizeof *f);
    f->program = "resmon-run";
    f->command = "make";
    f->exit_status = 124;
    f->end = RUN_TIMEOUT;
    f->signal = 15;
    f->limit_ns = 2000000000;
    summary_add_open(f, "a,b", 3);
    return f;
}

START_TEST(test_commands)
{
    struct summary_facts *f = facts();
    struct gha_result res[25];
    char ids[25][32];
    for (int i = 0; i < 25; i++) {
        snprintf(ids[i], sizeof ids[i], i ? "t%d" : "50%%: a,b\r\nc", i);
        res[i] = (struct gha_result){ids[i], "FAIL", i ? "PASS" : NULL, NULL, 1500000000};
    }
    char *text;
    size_t len;
    struct gha_said said = {0};
    ck_assert_int_eq(gha_format_commands(f, res, GHA_MAX_RESULTS, false, &said, &text, &len), 0);
    ck_assert_uint_eq(strlen(text), len);
    const char *want_first = "::error title=resmon-run%3A timeout::'make' timed out after 2.00 s (sent TERM); "
                             "exit status 124; still running: a,b\n"
                             "::error title=FAIL 50%25%3A a%2Cb%0D%0Ac::50%25: a,b%0D%0Ac: FAIL (after 1.500 s)\n"
                             "::error title=FAIL t1::t1: FAIL, expected PASS (after 1.500 s)\n";
    ck_assert_msg(strncmp(text, want_first, strlen(want_first)) == 0, "%s", text);
    /* GitHub shows 10 error annotations a step: the stop's, then 9 results, no count line */
    size_t lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    ck_assert_uint_eq(lines, GHA_MAX_ANNOTATIONS);
    ck_assert_uint_eq(GHA_MAX_ANNOTATIONS, 10);
    ck_assert_ptr_nonnull(strstr(text, "::error title=FAIL t8::"));
    ck_assert_ptr_null(strstr(text, "t9"));
    free(text);

    /* Called again (the end, after the stop) with more results: nothing past the ten. */
    ck_assert_int_eq(gha_format_commands(f, res, 25, false, &said, &text, &len), 0);
    ck_assert_uint_eq(len, 0);
    free(text);

    /* At a stop with 2 results, then at the end with 4: the verdict and the first two once. */
    struct gha_said stop = {0};
    ck_assert_int_eq(gha_format_commands(f, res, 2, false, &stop, &text, &len), 0);
    ck_assert_ptr_nonnull(strstr(text, "title=resmon-run%3A timeout::"));
    ck_assert_ptr_nonnull(strstr(text, "title=FAIL t1::"));
    free(text);
    ck_assert_int_eq(gha_format_commands(f, res, 4, false, &stop, &text, &len), 0);
    ck_assert_str_eq(text, "::error title=FAIL t2::t2: FAIL, expected PASS (after 1.500 s)\n"
                           "::error title=FAIL t3::t3: FAIL, expected PASS (after 1.500 s)\n");
    free(text);

    /* A test that passed where a failure was expected (pytest's non-strict XPASS, which pytest
     * itself does not fail on) is a warning that says so, not an error. */
    struct gha_result xp[2] = {{"t.py::test_xpass", "PASS", "FAIL", "maybe fixed", 2000000},
                               {"t.py::test_xfail_strict", "FAIL", "PASS", NULL, 1000000}};
    struct gha_said s2 = {.verdict = true};
    ck_assert_int_eq(gha_format_commands(f, xp, 2, false, &s2, &text, &len), 0);
    ck_assert_str_eq(text, "::warning file=t.py,title=unexpected pass t.py%3A%3Atest_xpass::t.py::test_xpass: passed, "
                           "expected FAIL (after 0.002 s)%0Amaybe fixed\n"
                           "::error file=t.py,title=FAIL t.py%3A%3Atest_xfail_strict::t.py::test_xfail_strict: FAIL, "
                           "expected PASS (after 0.001 s)\n");
    free(text);

    /* A run that exited by itself, all as expected: nothing to say, and no newline either. */
    f->end = RUN_EXIT;
    struct gha_said none = {0};
    ck_assert_int_eq(gha_format_commands(f, NULL, 0, true, &none, &text, &len), 0);
    ck_assert_uint_eq(len, 0);
    free(text);
    free(f);
}
END_TEST

/* The command's stderr ended mid-line: the runner reads a command only at a line's start. */
START_TEST(test_commands_midline)
{
    struct summary_facts *f = facts();
    char *text;
    size_t len;
    struct gha_said said = {0};
    ck_assert_int_eq(gha_format_commands(f, NULL, 0, true, &said, &text, &len), 0);
    const char *want = "\n::error title=resmon-run%3A timeout::";
    ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "%s", text);
    free(text);
    free(f);
}
END_TEST

/* The failure text in the message; file= and line= where the harness gives them. */
START_TEST(test_commands_location)
{
    struct summary_facts *f = facts();
    f->end = RUN_EXIT;
    struct gha_result res[] = {
        {"tests/test_a.py::TestK::test_x[1-2]", "FAIL", NULL, "assert 1 == 2", 2000000},
        {"example.com/m/calc/TestAdd", "FAIL", NULL, "got 4\ncalc_test.go:13: Add(2, 2) = 4, want 5", 0},
        {"t/basic.t 3 - sums", "FAIL", NULL, "Failed test 'sums'\n#   at t/basic.t line 12.", 0},
        {"plain", "FAIL", NULL, "no location: 12 apples at noon", 0},
        {"example.com/m/calc/TestSub", "FAIL", NULL, "calc_test.go:20: bad", 0, NULL, "mod/calc"},
        {"tests/test_b.py::t", "FAIL", NULL, "assert 0", 0, NULL, "not/for/paths"},
        {"tests/test_c.py::t", "FAIL", NULL, "tests/test_c.py:3: in t", 0, "tests/test_c.py:9: AssertionError"},
        {"tests/test_d.py::t", "FAIL", NULL, "tests/test_d.py:3: in t", 0, "lib/x.py:9: AssertionError"},
    };
    char *text;
    size_t len;
    struct gha_said said = {0};
    ck_assert_int_eq(gha_format_commands(f, res, 8, false, &said, &text, &len), 0);
    /* where it failed, else the message's location in the test's file */
    ck_assert_msg(strstr(text, "::error file=tests/test_c.py,line=9,title="), "%s", text);
    ck_assert_msg(strstr(text, "::error file=tests/test_d.py,line=3,title="), "%s", text);
    ck_assert_msg(strstr(text, "::error file=mod/calc/calc_test.go,line=20,title=FAIL example.com/m/calc/TestSub::"),
                  "%s", text);
    ck_assert_msg(strstr(text, "::error file=tests/test_b.py,title="), "%s", text);
    ck_assert_msg(strstr(text, "::error file=tests/test_a.py,title=FAIL tests/test_a.py%3A%3ATestK%3A%3Atest_x[1-2]::"
                               "tests/test_a.py::TestK::test_x[1-2]: FAIL (after 0.002 s)%0Aassert 1 == 2\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "::error file=calc_test.go,line=13,title=FAIL example.com/m/calc/TestAdd::"), "%s", text);
    ck_assert_msg(strstr(text, "::error file=t/basic.t,line=12,title=FAIL t/basic.t 3 - sums::"), "%s", text);
    ck_assert_msg(strstr(text, "::error title=FAIL plain::"), "%s", text);
    free(text);
    const char *file;
    size_t n;
    unsigned line;
    ck_assert(gha_location("tests/x.py::t", "tests/x.py:7: in t\nE   assert 0", &file, &n, &line));
    ck_assert_uint_eq(n, 10);
    ck_assert_uint_eq(line, 7);
    ck_assert(!gha_location("a b", "at noon line 3", &file, &n, &line));
    /* a JavaScript frame's "at PATH:LINE:COL" (Node's TAP location), in a message's second line */
    ck_assert(gha_location("t", "boom\nat /w/src/a.test.js:15:4", &file, &n, &line));
    ck_assert_uint_eq(n, strlen("/w/src/a.test.js"));
    ck_assert_int_eq(strncmp(file, "/w/src/a.test.js", n), 0);
    ck_assert_uint_eq(line, 15);
    ck_assert(!gha_location("t", "at a.js:x", &file, &n, &line));
    free(f);
}
END_TEST

/* The job summary names the profile by its path in the workspace, where an upload step takes it. */
/* A go package's directory in the repository, from go.mod's module path. */
START_TEST(test_package_dir)
{
    const char *mod = "// a comment\nmodule example.com/acme/widget // the widget\n\ngo 1.19\n";
    const char *t = "example.com/acme/widget/calc/TestAdd/wrong";
    size_t pkg = strlen("example.com/acme/widget/calc");
    char *d = gha_package_dir(mod, "/w/repo/widget", "/w/repo/", t, pkg);
    ck_assert_str_eq(d, "widget/calc");
    free(d);
    ck_assert_str_eq(d = gha_package_dir(mod, "/w/repo", "/w/repo", t, pkg), "calc");
    free(d);
    ck_assert_str_eq(d = gha_package_dir(mod, "/w/repo", NULL, t, pkg), "calc");
    free(d);
    ck_assert_str_eq(d = gha_package_dir("module \"example.com/acme/widget/calc\"\n", "/w/r", "/w/r", t, pkg), "");
    free(d);
    ck_assert_ptr_null(gha_package_dir(mod, "/w/repo", "/w/repo", t, 0));                 /* go -v: no package */
    ck_assert_ptr_null(gha_package_dir(mod, "/elsewhere", "/w/repo", t, pkg));            /* not in the repository */
    ck_assert_ptr_null(gha_package_dir(mod, "/w/repo2", "/w/repo", t, pkg));
    ck_assert_ptr_null(gha_package_dir(mod, "/w/repo", "/w/repo", "example.com/acme/widgetx/TestA", 24)); /* another module */
    ck_assert_ptr_null(gha_package_dir("go 1.19\n", "/w/repo", "/w/repo", t, pkg));
    ck_assert_ptr_null(gha_package_dir(NULL, "/w/repo", "/w/repo", t, pkg));
}
END_TEST

START_TEST(test_profile_name)
{
    char *s = gha_profile_name("out/p.json", "/w/repo", "/w/repo/", "https://github.com/o/r/actions/runs/7");
    ck_assert_str_eq(s, "out/p.json in the workspace (the run's artifacts: https://github.com/o/r/actions/runs/7#artifacts)");
    free(s);
    s = gha_profile_name("/w/repo/p.json", "/elsewhere", "/w/repo", NULL);
    ck_assert_str_eq(s, "p.json in the workspace");
    free(s);
    ck_assert_ptr_null(gha_profile_name("/tmp/p.json", "/w/repo", "/w/repo", NULL));
    ck_assert_ptr_null(gha_profile_name("/w/repository/p.json", "/", "/w/repo", NULL));
    ck_assert_ptr_null(gha_profile_name("p.json", "/w", NULL, NULL));
}
END_TEST

START_TEST(test_markdown)
{
    struct summary_facts *f = facts();
    summary_add_status(f, "FAIL", 1);
    summary_add_unexpected(f, "x|y`*z*", 7, "FAIL", NULL, 3000000);
    f->unexpected_total = 1;
    char *text;
    size_t len;
    ck_assert_int_eq(summary_format_markdown(f, &text, &len), 0);
    const char *head = "### resmon-run: 'make' timed out after 2.00 s (sent TERM); exit status 124\n";
    ck_assert_msg(strncmp(text, head, strlen(head)) == 0, "%s", text);
    ck_assert_msg(strstr(text, "| FAIL | x\\|y\\`\\*z\\* | 3 ms |\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "**Tests still running at the stop**\n\n| Test |\n|---|\n| a,b |\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "| tests | 1: 1 FAIL (1 unexpected) |\n") != NULL, "%s", text);
    /* the figures' table has a header row of its own, not an empty one */
    ck_assert_msg(strstr(text, "\n| Measure | Value |\n|---|---|\n| wall time | ") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "| | |") == NULL, "%s", text);
    free(text);
    free(f);
}
END_TEST

/* After the dump at a stop, the job summary says what each process was doing, and how many of its
 * threads it left out. */
START_TEST(test_markdown_dump)
{
    struct summary_facts *f = facts();
    summary_add_alive(f, 42, "./stuck", 7);
    summary_add_alive(f, 43, "sleep 9", 7);
    summary_set_state(f, 42, 'S', 3, "t/hang.t");
    const char *line = "thread 42 stuck: stuck_in_read < main";
    summary_add_stack(f, 42, line, strlen(line));
    f->dump_path = "/tmp/p.json.stacks.txt";
    f->dump_cut_processes = 1;
    char *text;
    size_t len;
    ck_assert_int_eq(summary_format_markdown(f, &text, &len), 0);
    ck_assert_msg(strstr(text, "**Processes alive at the stop, and what they were doing**\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "| 42 | ./stuck | state S, 3 threads, in t/hang.t; thread 42 stuck: stuck\\_in\\_read \\< main; 2 more "
                             "threads left out |\n") !=
                      NULL,
                  "%s", text);
    ck_assert_msg(strstr(text, "| 43 | sleep 9 |  |\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "cut off the stacks of 1 process and 0 threads") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "Stacks of every thread: /tmp/p.json.stacks.txt\n") != NULL, "%s", text);
    free(text);
    free(f);
}
END_TEST

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "r");
    ck_assert_ptr_nonnull(fp);
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

static void append(const char *path, const char *text)
{
    FILE *fp = fopen(path, "a");
    ck_assert_ptr_nonnull(fp);
    fputs(text, fp);
    fclose(fp);
}

/* The job summary file: the next text replaces resmon-run's own while the file ends with it;
 * whatever else was written is kept, and the next text goes after it. */
START_TEST(test_summary_file)
{
    char dir[] = "/tmp/unit_ghactions.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/summary.md", dir);
    append(path, "before\n");
    struct gha_summary_file s = {0};
    ck_assert_int_eq(gha_summary_put(&s, path, "at the stop, a long text\n", 25), 0);
    ck_assert_str_eq(slurp(path), "before\nat the stop, a long text\n");
    ck_assert_int_eq(gha_summary_put(&s, path, "short\n", 6), 0);
    ck_assert_str_eq(slurp(path), "before\nshort\n");
    ck_assert_int_eq(gha_summary_put(&s, path, "the end, longer than short\n", 27), 0);
    ck_assert_str_eq(slurp(path), "before\nthe end, longer than short\n");
    /* someone else's text after ours: kept, ours appended */
    append(path, "theirs\n");
    ck_assert_int_eq(gha_summary_put(&s, path, "final\n", 6), 0);
    ck_assert_str_eq(slurp(path), "before\nthe end, longer than short\ntheirs\nfinal\n");
    /* ours changed in place, the size the same: not ours any more */
    FILE *fp = fopen(path, "r+");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, -6, SEEK_END);
    fputs("FINAL\n", fp);
    fclose(fp);
    ck_assert_int_eq(gha_summary_put(&s, path, "again\n", 6), 0);
    ck_assert_str_eq(slurp(path), "before\nthe end, longer than short\ntheirs\nFINAL\nagain\n");
    /* the file replaced by another: appended to the new one */
    unlink(path);
    append(path, "new file\n");
    ck_assert_int_eq(gha_summary_put(&s, path, "once more\n", 10), 0);
    ck_assert_str_eq(slurp(path), "new file\nonce more\n");
    gha_summary_release(&s);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* Written at the stop: the summary says so. */
START_TEST(test_markdown_at_stop)
{
    struct summary_facts *f = facts();
    f->at_stop = true;
    char *text;
    size_t len;
    ck_assert_int_eq(summary_format_markdown(f, &text, &len), 0);
    ck_assert_msg(strstr(text, "exit status 124\n\n_Written at the stop, before the tree was signalled; the summary "
                               "of the end replaces it._\n\n| Measure | Value |\n") != NULL,
                  "%s", text);
    free(text);
    free(f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ghactions");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_active);
    tcase_add_test(tc, test_commands);
    tcase_add_test(tc, test_commands_midline);
    tcase_add_test(tc, test_commands_location);
    tcase_add_test(tc, test_package_dir);
    tcase_add_test(tc, test_profile_name);
    tcase_add_test(tc, test_markdown);
    tcase_add_test(tc, test_markdown_dump);
    tcase_add_test(tc, test_markdown_at_stop);
    tcase_add_test(tc, test_summary_file);
    suite_add_tcase(s, tc);
    return check_run(s);
}
