/* ghactions.h — GitHub Actions: the end-of-run summary as the job's Markdown summary, and the
 * run's verdicts as workflow commands the runner turns into annotations.
 *
 * Under GITHUB_ACTIONS=true (or --ci=github) resmon-run appends summary_format_markdown()'s text
 * to the file $GITHUB_STEP_SUMMARY names, and prints "::error title=T::MESSAGE" lines: one for a
 * stop that is resmon-run's own verdict (a timeout, an output timeout, a limit, the OOM killer
 * taking the command), then one per unexpected result, the first GHA_MAX_ANNOTATIONS, then one
 * line that counts the rest. The lines go to standard error: the runner reads workflow commands
 * from both streams, and the command's standard output stays byte for byte its own.
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

#include "summary.h"

#define GHA_MAX_ANNOTATIONS 20

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
    uint64_t duration_ns;
};

/* What earlier calls printed (zero it before the first). */
struct gha_said {
    bool verdict;     /* the stop's annotation */
    size_t results;   /* res[0..results) were printed */
    uint64_t counted; /* unexpected results a count line stood for */
};

/* The workflow-command lines for the run (malloc'ed text, *ret_len bytes; "" when there is
 * nothing to say): the stop's annotation, then res[0..n) (the first GHA_MAX_ANNOTATIONS), then
 * a count of the rest of total unexpected results; of these, only what *said does not hold yet,
 * and *said then holds it. res lists the unexpected results from the first, at every call.
 * 0 or -ENOMEM. */
int gha_format_commands(const struct summary_facts *f, const struct gha_result *res, size_t n, uint64_t total,
                        struct gha_said *said, char **ret_text, size_t *ret_len);

/* resmon-run's text in the job summary file (zero it before the first write). */
struct gha_summary_file {
    bool written;
    dev_t dev;
    ino_t ino;
    off_t start;   /* where the text begins */
    char *text;    /* the text, as written there */
    size_t len;
};
/* Write text to the file at path (created if missing, mode 0666 & ~umask): in place of the text
 * s holds when the file still ends with it, else appended. 0 or -errno; on an error s still
 * describes what is in the file. */
int gha_summary_put(struct gha_summary_file *s, const char *path, const char *text, size_t len);
void gha_summary_release(struct gha_summary_file *s);

#endif
