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
 * Escaping is the runner's: in a message '%', CR and LF become %25, %0D, %0A; in a property (the
 * title) ':' and ',' become %3A and %2C as well. Pure formatting, except gha_append().
 */
#ifndef RESMON_GHACTIONS_H
#define RESMON_GHACTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* The workflow-command lines for the run (malloc'ed text, *ret_len bytes; "" when there is
 * nothing to say): the stop's annotation, then res[0..n) (the first GHA_MAX_ANNOTATIONS), then
 * a count of the rest of total unexpected results. 0 or -ENOMEM. */
int gha_format_commands(const struct summary_facts *f, const struct gha_result *res, size_t n, uint64_t total,
                        char **ret_text, size_t *ret_len);

/* Append text to the file at path (created if missing, mode 0666 & ~umask). 0 or -errno. */
int gha_append(const char *path, const char *text, size_t len);

#endif
