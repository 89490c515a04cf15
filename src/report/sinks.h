/* sinks.h — every output of a run besides the profile, behind one list: the files CI systems read
 * (the JUnit report, the OpenTelemetry file, the Perfherder data), built from the run's stream
 * (results.h), and the words for people (the summary on stderr, GitHub Actions' annotations and
 * job summary), built from the run's facts (summary.h): what the run measured (its end, its
 * cost, the processes), and the tests from the same reader of the stream as the files, so that
 * no two outputs can disagree on a test or a count.
 *
 * A run calls two moments, and knows no report by name:
 *   sinks_checkpoint()  each time the profile is finalized (before the first signal of a stop,
 *                       after the dump, at the end): every file is written again from the stream,
 *                       and at a stop GitHub's outputs say what was going on then;
 *   sinks_end()         once, after the last checkpoint, with the facts the run ended with: the
 *                       PERFHERDER_DATA line, the summary, GitHub's outputs.
 * --recover calls sinks_recover(), which writes every file from the stream a killed run left: the
 * list is the same, so what a run writes, a recovery writes.
 *
 * Adding a report: its writer in this folder (from struct results, or from the facts), and one
 * entry in sinks.c's table. Each file is said once when it cannot be written, and tried again at
 * the next checkpoint.
 */
#ifndef RESMON_SINKS_H
#define RESMON_SINKS_H

#include <stdbool.h>

struct summary_facts;

struct sinks_config {
    const char *junit, *otlp;   /* --junit, --otlp: the files; NULL: not asked for */
    const char *product;        /* --product: what the Perfherder suites are named after (NULL:
                                   the stream's product) */
    const char *upload_dir;     /* where the Perfherder data goes (sinks_perfherder_dir()); NULL:
                                   none */
    bool summary;               /* the summary on stderr (not --quiet) */
    bool github;                /* GitHub Actions' outputs (gha_active) */
    const char *github_summary; /* $GITHUB_STEP_SUMMARY; NULL: no job summary */
};

/* What the sinks ask of the run while it goes on. */
struct sinks_run {
    void *ctx;
    /* The facts as they stand now, filled into f (a copy of sinks_facts()): at a stop. */
    void (*facts_now)(void *ctx, struct summary_facts *f);
    /* Whether the command's output left a line unfinished on fd; that resmon-run ended it. */
    bool (*mid_line)(void *ctx, int fd);
    void (*line_ended)(void *ctx, int fd);
};

struct sinks;

/* $MOZ_UPLOAD_DIR when MOZ_AUTOMATION asks for Perfherder data (perfherder.h), else NULL. */
const char *sinks_perfherder_dir(void);
/* dir made where it is missing, with its parents, as mozharness makes $MOZ_UPLOAD_DIR before a
 * job's steps (a run's profile goes there too). 0 or -errno (said). */
int sinks_make_upload_dir(const char *dir);

/* The sinks cfg enables (its strings stay the caller's). 0 or -ENOMEM. */
int sinks_new(const struct sinks_config *cfg, struct sinks **ret);
void sinks_free(struct sinks *s);
/* The facts the people's sinks read, for the run to fill as it goes (all but the tests, which
 * are the stream's: sinks_read_stream); NULL when none is on. */
struct summary_facts *sinks_facts(struct sinks *s);
void sinks_attach_run(struct sinks *s, const struct sinks_run *run);
/* Read the run's stream at stream_fd (the fd stays the caller's): when the run opened it. Without
 * it no file is written and the summary knows no test (the run opens one when the summary or
 * GitHub's outputs are on and the output is parsed). 0 or -errno. */
int sinks_read_stream(struct sinks *s, int stream_fd);
/* Read what the stream gained (as the run goes, so a checkpoint has little left to read). */
void sinks_follow(struct sinks *s);
/* A checkpoint: every file, end_ms the run's end in profile ms; stopping: a stop's, before any
 * signal. */
void sinks_checkpoint(struct sinks *s, double end_ms, bool stopping);
/* The end, once: sinks_facts() are filled. */
void sinks_end(struct sinks *s);

/* --recover: every file cfg enables, rebuilt from the stream at path (said on stderr). A file
 * that is not a stream is an error only when a file was asked for by an option. 0 when every
 * file was written or none was enabled, else -errno. */
int sinks_recover(const struct sinks_config *cfg, const char *path);

#endif
