/* sinks.c — see sinks.h. */
#include "report/sinks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/outfile.h"
#include "base/util.h"
#include "report/ghactions.h"
#include "report/junit.h"
#include "report/otlp.h"
#include "report/perfherder.h"
#include "report/results.h"
#include "report/summary.h"

struct sinks {
    struct sinks_config cfg;
    struct sinks_run run;
    char *perfherder_path;
    struct results *results; /* the stream's reader; NULL: no stream (no file is written) */
    int stream_err;          /* results_update's, at this checkpoint */
    struct summary_facts *facts;
    struct summary_style style;
    struct gha_said gha_said;         /* the workflow commands printed so far */
    struct gha_summary_file gha_file; /* resmon-run's text in $GITHUB_STEP_SUMMARY */
    bool gha_failed;
    unsigned failed; /* the files that could not be written, said once: bit i of the table */
};

/* ---- the files ------------------------------------------------------------------------------- */

static const char *junit_file(const struct sinks *s) { return s->cfg.junit; }
static const char *otlp_file(const struct sinks *s) { return s->cfg.otlp; }
static const char *perfherder_file(const struct sinks *s) { return s->perfherder_path; }

static int junit_put(const struct sinks *s, const char *path, double end_ms, char *said, size_t cap)
{
    struct junit_stats js;
    int r = junit_finalize(s->results, AT_FDCWD, path, end_ms, &js);
    if (r == 0)
        snprintf(said, cap, ": %zu test%s, %zu never ended", js.tests, js.tests == 1 ? "" : "s", js.open);
    return r;
}

static int otlp_put(const struct sinks *s, const char *path, double end_ms, char *said, size_t cap)
{
    (void)said, (void)cap;
    return otlp_finalize(s->results, AT_FDCWD, path, end_ms);
}

static int perfherder_put(const struct sinks *s, const char *path, double end_ms, char *said, size_t cap)
{
    (void)said, (void)cap;
    return perfherder_finalize(s->results, s->cfg.product, AT_FDCWD, path, end_ms);
}

/* The PERFHERDER_DATA line Treeherder's log parser reads, once, at the end. */
static void perfherder_log(struct sinks *s)
{
    char *text;
    size_t len;
    if (!s->perfherder_path || !s->results || results_update(s->results) < 0 ||
        perfherder_format(s->results, s->cfg.product, -1, &text, &len) < 0)
        return;
    static const char prefix[] = "PERFHERDER_DATA: ";
    write_all(STDERR_FILENO, prefix, sizeof prefix - 1);
    write_all(STDERR_FILENO, text, len);
    write_all(STDERR_FILENO, "\n", 1);
    free(text);
}

/* ---- the words for people -------------------------------------------------------------------- */

/* Before resmon-run writes its own lines to fd: end the line the command's output left unfinished
 * there, so that ours begin lines of their own. */
static void own_line(struct sinks *s, int fd)
{
    if (s->run.mid_line && s->run.mid_line(s->run.ctx, fd) && write_all(fd, "\n", 1) == 0)
        s->run.line_ended(s->run.ctx, fd);
}

/* The tests' facts, into f: from the results the files are written from (results.h), so that
 * the summary and GitHub's outputs say what JUnit says. */
static void tests_into(struct sinks *s, struct summary_facts *f)
{
    if (s->results && results_update(s->results) == 0)
        summary_add_results(f, s->results);
}

static void summary_end(struct sinks *s)
{
    if (!s->cfg.summary || !s->facts)
        return;
    own_line(s, STDERR_FILENO);
    summary_write(STDERR_FILENO, s->facts, &s->style);
}

/* GitHub Actions: annotations on stderr (those not printed yet), the job summary in
 * $GITHUB_STEP_SUMMARY (in place of the one written at the stop, where nothing followed it). */
static void github_outputs(struct sinks *s, struct summary_facts *f)
{
    struct gha_result res[GHA_MAX_RESULTS];
    char *dirs[GHA_MAX_RESULTS] = {0};
    char cwd[4096], *run_url = NULL, *name = NULL;
    size_t n = 0, k = 0;
    const struct rs_test **list = NULL, *unexp[GHA_MAX_RESULTS];
    /* the unexpected results in the order they came, as the summary lists them */
    for (size_t i = 0, ended = s->results ? results_ended(s->results, &list) : 0; i < ended && k < GHA_MAX_RESULTS; i++)
        if (list[i]->unexpected)
            unexp[k++] = list[i];
    /* go names a failure's file by its base name: its package's directory, from go.mod */
    char go_mod[4096];
    bool go = k > s->gha_said.results && read_file_at(AT_FDCWD, "go.mod", go_mod, sizeof go_mod) > 0;
    const char *here = go ? getcwd(cwd, sizeof cwd) : NULL;
    for (; n < k; n++) {
        const struct rs_test *t = unexp[n];
        if (here && n >= s->gha_said.results && t->scope)
            dirs[n] = gha_package_dir(go_mod, here, getenv("GITHUB_WORKSPACE"), t->id, strlen(t->scope));
        res[n] = (struct gha_result){t->id, t->status ? t->status : "", t->expected, t->message,
                                     results_duration_ns(t), t->where, dirs[n]};
    }
    char *text;
    size_t len;
    /* the runner reads a command only at a line's start: the commands begin with a newline
     * where the command's output left one unfinished */
    bool mid = s->run.mid_line && s->run.mid_line(s->run.ctx, STDERR_FILENO);
    if (gha_format_commands(f, res, n, mid, &s->gha_said, &text, &len) == 0) {
        if (len && write_all(STDERR_FILENO, text, len) == 0 && mid)
            s->run.line_ended(s->run.ctx, STDERR_FILENO);
        free(text);
    }
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    free(list);
    f->annotated = s->gha_said.results;
    /* the profile as the job summary's reader can find it */
    const char *server = getenv("GITHUB_SERVER_URL"), *repo = getenv("GITHUB_REPOSITORY"),
               *run = getenv("GITHUB_RUN_ID");
    if (server && *server && repo && *repo && run && *run &&
        asprintf(&run_url, "%s/%s/actions/runs/%s", server, repo, run) < 0)
        run_url = NULL;
    if (f->profile_path)
        name = gha_profile_name(f->profile_path, getcwd(cwd, sizeof cwd), getenv("GITHUB_WORKSPACE"), run_url);
    f->profile_name = name;
    const char *path = s->cfg.github_summary;
    if (path && summary_format_markdown(f, &text, &len) == 0) {
        int r = gha_summary_put(&s->gha_file, path, text, len);
        if (r < 0 && !s->gha_failed)
            log_msg("cannot write the job summary to '%s': %s", path, outfile_why(r, AT_FDCWD, path));
        s->gha_failed |= r < 0;
        free(text);
    }
    f->profile_name = NULL;
    free(name);
    free(run_url);
}

/* At a stop, before any signal: the job's summary and annotations as they stand then (the tests
 * still open, the processes alive and, after the dump, what they were doing), for a CI that
 * kills the job at its own timeout. The end replaces the summary and adds the annotations
 * learned since. */
static void github_stop(struct sinks *s)
{
    if (!s->cfg.github || !s->facts || !s->run.facts_now)
        return;
    struct summary_facts *f = malloc(sizeof *f);
    if (!f)
        return;
    *f = *s->facts;
    s->run.facts_now(s->run.ctx, f);
    tests_into(s, f);
    f->at_stop = true;
    github_outputs(s, f);
    free(f);
}

static void github_end(struct sinks *s)
{
    if (s->cfg.github && s->facts)
        github_outputs(s, s->facts);
}

/* ---- the list -------------------------------------------------------------------------------- */

enum {
    SINK_SAMPLES = 1 << 0,  /* reads the samples too (RESULTS_SAMPLES) */
    SINK_IMPLICIT = 1 << 1, /* on by the environment, not by an option */
};

struct sink {
    const char *what; /* how messages name its file */
    unsigned flags;
    /* A file built from the stream: its path (NULL: off), and its writer (said: what to add to
     * --recover's "wrote" line). */
    const char *(*file)(const struct sinks *s);
    int (*put)(const struct sinks *s, const char *path, double end_ms, char *said, size_t cap);
    void (*stop)(struct sinks *s); /* at a stop's checkpoints */
    void (*end)(struct sinks *s);  /* once, at the end, in the list's order */
};

static const struct sink sink_list[] = {
    {"JUnit report", 0, junit_file, junit_put, NULL, NULL},
    {"OpenTelemetry file", SINK_SAMPLES, otlp_file, otlp_put, NULL, NULL},
    {"Perfherder data", SINK_SAMPLES | SINK_IMPLICIT, perfherder_file, perfherder_put, NULL, perfherder_log},
    {"summary", 0, NULL, NULL, NULL, summary_end},
    {"GitHub Actions output", 0, NULL, NULL, github_stop, github_end},
};

/* What the files enabled read of the stream: RESULTS_SAMPLES, 0, or -1 when no file is on. */
static int stream_wanted(const struct sinks *s, bool asked_only)
{
    int what = -1;
    for (size_t i = 0; i < ARRAY_SIZE(sink_list); i++) {
        const struct sink *k = &sink_list[i];
        if (!k->file || !k->file(s) || (asked_only && (k->flags & SINK_IMPLICIT)))
            continue;
        what = MAX(what, 0) | (k->flags & SINK_SAMPLES ? RESULTS_SAMPLES : 0);
    }
    return what;
}

/* Every file on, from what s->results read; said once each when it cannot be written (always on
 * --recover, with what was written). The first error, or 0. */
static int write_files(struct sinks *s, double end_ms, bool say_written)
{
    int r = results_update(s->results), first = 0;
    for (size_t i = 0; i < ARRAY_SIZE(sink_list); i++) {
        const struct sink *k = &sink_list[i];
        const char *path = k->file ? k->file(s) : NULL;
        if (!path)
            continue;
        char said[128] = "";
        int wr = r < 0 ? r : k->put(s, path, end_ms, said, sizeof said);
        if (wr < 0 && !(s->failed & (1u << i)))
            log_msg("cannot write the %s '%s': %s", k->what, path, outfile_why(wr, AT_FDCWD, path));
        else if (wr == 0 && say_written)
            log_msg("wrote the %s '%s'%s", k->what, path, said);
        s->failed |= wr < 0 ? 1u << i : 0;
        first = first ? first : wr;
    }
    return first;
}

/* ---- the interface --------------------------------------------------------------------------- */

const char *sinks_perfherder_dir(void)
{
    const char *dir = getenv("MOZ_UPLOAD_DIR");
    return perfherder_active(getenv("MOZ_AUTOMATION")) && dir && *dir ? dir : NULL;
}

/* $MOZ_UPLOAD_DIR made where it is missing, with its parents, as mozharness makes it before a
 * job's steps: what is written there is the job's artifacts. 0 or -errno (said). */
int sinks_make_upload_dir(const char *dir)
{
    char *p = strdup(dir);
    if (!p)
        return -ENOMEM;
    int r = 0;
    for (char *q = p + 1;; q++) {
        if (*q && *q != '/')
            continue;
        char c = *q;
        *q = '\0';
        if (mkdir(p, 0777) < 0 && errno != EEXIST) {
            r = -errno;
            log_errno(r, "cannot create MOZ_UPLOAD_DIR '%s' (at '%s')", dir, p);
            break;
        }
        *q = c;
        if (!c)
            break;
    }
    free(p);
    return r;
}

int sinks_new(const struct sinks_config *cfg, struct sinks **ret)
{
    struct sinks *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->cfg = *cfg;
    if (cfg->upload_dir && asprintf(&s->perfherder_path, "%s/%s", cfg->upload_dir, PERFHERDER_FILE) < 0) {
        free(s);
        return -ENOMEM;
    }
    if (cfg->summary || cfg->github) {
        /* without them the run goes on, only the summary is lost, as before any write */
        s->facts = calloc(1, sizeof *s->facts);
        if (s->facts) {
            summary_series_init(&s->facts->cpu, SUMMARY_AGG_MEAN);
            summary_series_init(&s->facts->mem, SUMMARY_AGG_MAX);
        }
        /* decided now: the environment and the terminal are the caller's */
        s->style.colour = summary_colour_for(STDERR_FILENO, getenv("NO_COLOR"));
        s->style.utf8 = summary_locale_utf8(getenv("LC_ALL"), getenv("LC_CTYPE"), getenv("LANG"));
    }
    *ret = s;
    return 0;
}

void sinks_free(struct sinks *s)
{
    if (!s)
        return;
    results_free(s->results);
    gha_summary_release(&s->gha_file);
    free(s->perfherder_path);
    free(s->facts);
    free(s);
}

struct summary_facts *sinks_facts(struct sinks *s) { return s ? s->facts : NULL; }

void sinks_attach_run(struct sinks *s, const struct sinks_run *run) { s->run = *run; }

int sinks_read_stream(struct sinks *s, int stream_fd)
{
    int what = stream_wanted(s, false);
    if (what < 0 && s->facts) /* the summary's tests and GitHub's annotations */
        what = 0;
    return what < 0 ? 0 : results_new(stream_fd, (unsigned)what, &s->results);
}

void sinks_follow(struct sinks *s)
{
    if (s->results)
        results_update(s->results); /* an error is sticky: the files' writes say it */
}

void sinks_checkpoint(struct sinks *s, double end_ms, bool stopping)
{
    /* what CI systems read, and small: before the profile, which may take a while */
    if (s->results)
        write_files(s, end_ms, false);
    for (size_t i = 0; stopping && i < ARRAY_SIZE(sink_list); i++)
        if (sink_list[i].stop)
            sink_list[i].stop(s);
}

void sinks_end(struct sinks *s)
{
    if (s->facts)
        tests_into(s, s->facts);
    for (size_t i = 0; i < ARRAY_SIZE(sink_list); i++)
        if (sink_list[i].end)
            sink_list[i].end(s);
}

/* --recover's reading of the stream at fd into s->results (what: RESULTS_SAMPLES or 0). 0, or
 * -EINVAL when it holds no stream, or -errno (said). */
static int read_recovered(struct sinks *s, int fd, const char *path, unsigned what)
{
    int r = results_new(fd, what, &s->results);
    if (r == 0)
        r = results_update(s->results);
    if (r == 0 && !s->results->have_meta) /* not even a first line */
        r = -EINVAL;
    if (r < 0 && r != -EINVAL)
        log_errno(r, "cannot read '%s'", path);
    return r;
}

int sinks_recover(const struct sinks_config *cfg, const char *path)
{
    struct sinks *s;
    int r = sinks_new(&(struct sinks_config){cfg->junit, cfg->otlp, cfg->product, cfg->upload_dir, false, false, NULL},
                      &s);
    if (r < 0)
        return r;
    int what = stream_wanted(s, false);
    bool asked = stream_wanted(s, true) >= 0;
    if (what >= 0 && cfg->upload_dir && (r = sinks_make_upload_dir(cfg->upload_dir)) < 0) {
        sinks_free(s);
        return r;
    }
    /* O_NONBLOCK: a FIFO there is refused by the reader, not waited on */
    int fd = what < 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (what >= 0 && fd < 0) {
        r = -errno;
        log_errno(r, "cannot open '%s'", path);
    } else if (what >= 0) {
        r = read_recovered(s, fd, path, (unsigned)what);
        if (r == 0)
            r = write_files(s, -1, true);
        else if (r == -EINVAL && !asked)
            r = 0; /* a full profile: the files the environment asks for are a stream's */
        else if (r == -EINVAL)
            log_msg("'%s' is not a profile stream: the reports are built from a stream", path);
    }
    sinks_free(s);
    closep(&fd);
    return r;
}
