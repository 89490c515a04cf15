/* ghactions.h — GitHub Actions: the end-of-run summary as the job's Markdown summary, and the
 * run's verdicts as workflow commands the runner turns into annotations.
 *
 * Under GITHUB_ACTIONS=true (or --ci=github) resmon-run appends summary_format_markdown()'s text
 * to the file $GITHUB_STEP_SUMMARY names, and prints "::error file=F,line=L,title=T::MESSAGE"
 * lines, at most GHA_MAX_ANNOTATIONS in all (GitHub shows no more error annotations for a step):
 * first one for a stop that is resmon-run's own verdict (a timeout, an output timeout, a limit,
 * the OOM killer taking the command), then one per unexpected result, the first
 * GHA_MAX_RESULTS (a test that passed where a failure was expected is a "::warning" titled
 * "unexpected pass": the harness decides whether it fails the run, as pytest's strict XPASS
 * does with a FAILED line); the job summary counts them all. A result's message is its test, status and
 * time, then the harness's failure text; file= and line= are where the harness says the test is
 * (gha_location, of its where before its message; a go package's directory before a file go names by its base name,
 * gha_package_dir). The lines go to standard error: the runner reads workflow commands from both
 * streams, and the command's standard output stays byte for byte its own. The runner reads a
 * command only at the start of a line: when the command's standard error ended mid-line,
 * gha_format_commands is told so and starts with a newline, the one byte resmon-run adds to
 * that stream between the command's own.
 *
 * Both are written at a stop too, before the tree is signalled (a CI that kills the job after
 * its timeout must still find them), and again at the end. A workflow command cannot be taken
 * back, so struct gha_said remembers what was printed and each line is printed once. The summary
 * can be: struct gha_summary_file remembers where resmon-run's text lies in the file, and the
 * next text replaces it while the file still ends with it, byte for byte; when anything else
 * was written meanwhile (the command may write to the summary itself), the next text is appended
 * and nobody's text is touched.
 *
 * Escaping is the runner's: in a message '%', CR and LF become %25, %0D, %0A; in a property (the
 * title) ':' and ',' become %3A and %2C as well; other control characters and bytes that are not
 * UTF-8 become '?' (sanitize.h), and a title or message cut at its bound never ends inside a
 * character. Pure formatting, except gha_summary_put().
 */
#ifndef RESMON_GHACTIONS_H
#define RESMON_GHACTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "report/summary.h"

#define GHA_MAX_ANNOTATIONS 10 /* error annotations GitHub shows for a step */
#define GHA_MAX_RESULTS (GHA_MAX_ANNOTATIONS - 1) /* one is kept for the stop's verdict */

/* --ci: which CI's conventions to follow. */
enum ci_mode {
    CI_AUTO,   /* GitHub Actions when GITHUB_ACTIONS=true, except as resmon-timeout */
    CI_NONE,
    CI_GITHUB, /* GitHub Actions, whatever the environment says */
};

/* Whether GitHub Actions output is on: mode, invoked as resmon-timeout, getenv("GITHUB_ACTIONS"). */
bool gha_active(enum ci_mode mode, bool timeout_mode, const char *github_actions_env);

/* An unexpected result, for its annotation. */
struct gha_result {
    const char *test, *status;
    const char *expected; /* NULL: not said */
    const char *message;  /* the harness's failure text; NULL: none */
    uint64_t duration_ns;
    const char *where;    /* where it failed, as the harness's report says (pytest's
                             "tests/test_x.py:12: AssertionError"); NULL: not said */
    const char *dir;      /* the directory, relative to the repository, of a file the message names
                             by its base name (go's "calc_test.go:13:"; gha_package_dir); NULL or
                             "": the repository's root */
};

/* What earlier calls printed (zero it before the first). */
struct gha_said {
    bool verdict;   /* the stop's annotation */
    size_t results; /* res[0..results) were printed */
};

/* The workflow-command lines for the run (malloc'ed text, *ret_len bytes; "" when there is
 * nothing to say): the stop's annotation, then res[0..n) (the first GHA_MAX_RESULTS); of these,
 * only what *said does not hold yet, and *said then holds it. res lists the unexpected results
 * from the first, at every call. midline: the command's standard error ended mid-line (a
 * newline comes first then, when there is something to say). 0 or -ENOMEM. */
int gha_format_commands(const struct summary_facts *f, const struct gha_result *res, size_t n, bool midline,
                        struct gha_said *said, char **ret_text, size_t *ret_len);

/* Where a test is, as the harness says it: the file of a pytest node id ("tests/test_x.py" of
 * "tests/test_x.py::test_y[1]"), else the first location in its message: a line starting
 * "PATH:LINE:" (go's and pytest's "x_test.go:12: text", gtest's "file.cc:12: Failure") or Perl's
 * "at PATH line LINE" (TAP from Test::More). *file (file_len bytes, in test or message) and
 * *line (0: none); false when there is no file. */
bool gha_location(const char *test, const char *message, const char **file, size_t *file_len, unsigned *line);

/* The directory of a go test's package, relative to the repository (malloc'ed; "" at its root),
 * for struct gha_result's dir: go names a failure's file by its base name only. go_mod: the
 * text of go.mod in cwd (NULL: none); the package is the first scope_len bytes of test (go -json
 * gives it; plain go -v text does not). A package under go.mod's module lies in the module's
 * directory, cwd, which is workspace ($GITHUB_WORKSPACE, the repository) or under it; NULL when
 * any of this is not so (the file is then named by its base name alone). */
char *gha_package_dir(const char *go_mod, const char *cwd, const char *workspace, const char *test,
                      size_t scope_len);

/* How the job summary names the profile: the runner's path means nothing to its reader, so a
 * profile inside the workspace ($GITHUB_WORKSPACE) is named by its path there, the one an
 * upload-artifact step takes, with the run's page, whose artifacts list holds what such a step
 * uploaded: "out/profile.json in the workspace (the run's artifacts: RUN_URL#artifacts)". path:
 * the profile's (relative to cwd when not absolute); run_url may be NULL. NULL when the profile
 * is not in the workspace (the path is shown then) or on ENOMEM. malloc'ed. */
char *gha_profile_name(const char *path, const char *cwd, const char *workspace, const char *run_url);

/* resmon-run's text in the job summary file (zero it before the first write). */
struct gha_summary_file {
    bool written;
    dev_t dev;
    ino_t ino;
    off_t start;   /* where the text begins */
    char *text;    /* the text, as written there */
    size_t len;
};
/* Write text to the file at path (created if missing, mode 0666 & ~umask; outfile_append()'s
 * checks): in place of the text s holds when the file still ends with it, else appended. 0 or
 * -errno (outfile_why() words it); on an error s still
 * describes what is in the file. */
int gha_summary_put(struct gha_summary_file *s, const char *path, const char *text, size_t len);
void gha_summary_release(struct gha_summary_file *s);

#endif
