/* summary.c — see summary.h. */
#include "report/summary.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/jsonw.h"
#include "base/parse.h"
#include "base/sanitize.h"
#include "base/util.h"
#include "observe/forensics.h"
#include "report/results.h"
#include "testlog/testlog.h"

/* ---- series -------------------------------------------------------------------------------- */

void summary_series_init(struct summary_series *s, enum summary_agg agg)
{
    memset(s, 0, sizeof *s);
    s->agg = agg;
    s->width = 1;
}

static double combine(enum summary_agg agg, double a, double b)
{
    return agg == SUMMARY_AGG_MAX ? (a > b ? a : b) : a + b;
}

void summary_series_add(struct summary_series *s, double value)
{
    if (s->width == 0)
        s->width = 1;
    if (s->n > 0 && s->fill < s->width) {
        s->v[s->n - 1] = combine(s->agg, s->v[s->n - 1], value);
        s->fill++;
        return;
    }
    if (s->n == SUMMARY_SERIES_POINTS) {
        /* Every bucket is full (the last one too, or we would not be here): halve the count. */
        for (size_t i = 0; i < SUMMARY_SERIES_POINTS / 2; i++)
            s->v[i] = combine(s->agg, s->v[2 * i], s->v[2 * i + 1]);
        s->n = SUMMARY_SERIES_POINTS / 2;
        s->width = s->width > UINT64_MAX / 2 ? UINT64_MAX : s->width * 2;
    }
    s->v[s->n++] = value;
    s->fill = 1;
}

double summary_series_value(const struct summary_series *s, size_t i)
{
    if (i >= s->n)
        return 0;
    if (s->agg == SUMMARY_AGG_MAX)
        return s->v[i];
    uint64_t count = i + 1 == s->n ? s->fill : (s->width ? s->width : 1);
    return count ? s->v[i] / (double)count : 0;
}

/* ---- the harness's words ------------------------------------------------------------------ */

static const char *base_name(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

/* Is one of the words from argv[i] on a verbose flag: one of flags, or a short-option cluster of
 * single-dash letters holding the letter v ("-rAv")? Stops at "--". */
static bool has_flag(const char *const *argv, size_t i, const char *const *flags, bool cluster_v)
{
    for (; argv[i]; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        for (const char *const *fl = flags; *fl; fl++)
            if (!strcmp(argv[i], *fl) || (!strncmp(argv[i], *fl, strlen(*fl)) && argv[i][strlen(*fl)] == '='))
                return true;
        if (cluster_v && argv[i][0] == '-' && argv[i][1] != '-' && strchr(argv[i] + 1, 'v'))
            return true;
    }
    return false;
}

/* vitest's "--reporter=verbose" or "--reporter verbose" among the words from argv[i]. */
static bool reporter_verbose(const char *const *argv, size_t i)
{
    for (; argv[i] && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--reporter=verbose") ||
            (!strcmp(argv[i], "--reporter") && argv[i + 1] && !strcmp(argv[i + 1], "verbose")))
            return true;
    return false;
}

const char *summary_harness_hint(const char *const *argv)
{
    static const char *const jest_v[] = {"--verbose", NULL};
    static const char *const pytest_v[] = {"--verbose", NULL};
    static const char *const go_v[] = {"-v", "-json", "--json", NULL};
    static const char *const prove_v[] = {"--verbose", NULL};
    static const char *const unittest_v[] = {"--verbose", NULL};
    static const char *const rspec_doc[] = {"--format", "-f", NULL};
    if (!argv)
        return NULL;
    for (size_t i = 0; argv[i]; i++) {
        const char *w = base_name(argv[i]);
        bool module = i > 0 && !strcmp(argv[i - 1], "-m");
        if (!strcmp(w, "pytest") || !strcmp(w, "py.test") || (module && !strcmp(argv[i], "pytest")))
            return has_flag(argv, i + 1, pytest_v, true) ? NULL : "pytest prints a line per test only with -v";
        if (module && !strcmp(argv[i], "unittest"))
            return has_flag(argv, i + 1, unittest_v, true) ? NULL : "unittest prints a line per test only with -v";
        if (!strcmp(w, "go") && argv[i + 1] && !strcmp(argv[i + 1], "test"))
            return has_flag(argv, i + 2, go_v, false) ? NULL : "go test prints a line per test only with -v or -json";
        if (!strcmp(w, "prove"))
            return has_flag(argv, i + 1, prove_v, true) ? NULL : "prove prints a line per test only with -v";
        if (!strcmp(w, "rspec"))
            return has_flag(argv, i + 1, rspec_doc, false) ? NULL
                                                           : "RSpec prints a line per test only with --format documentation";
        if (!strcmp(w, "jest"))
            return has_flag(argv, i + 1, jest_v, false) ? NULL : "jest names the tests that pass only with --verbose";
        if (!strcmp(w, "vitest"))
            return reporter_verbose(argv, i + 1) ? NULL
                                                 : "vitest names the tests that pass only with --reporter=verbose";
    }
    return NULL;
}

/* ---- bounded lists ------------------------------------------------------------------------- */

/* Copy at most size-1 bytes of s, cut at a character boundary, safe for a terminal (sanitize.h)
 * so a hostile test name cannot move the cursor or recolour the terminal. */
static void copy_text(char *dst, size_t size, const char *s, size_t n)
{
    sanitize_into(SANITIZE_TERMINAL, dst, size, s, s ? n : 0);
}

static void copy_status(char *dst, size_t size, const char *status)
{
    copy_text(dst, size, status ? status : "", status ? strlen(status) : 0);
}

void summary_add_status(struct summary_facts *f, const char *status, uint64_t n)
{
    f->tests_known = true;
    f->tests += n;
    char st[16];
    copy_status(st, sizeof st, status);
    size_t i;
    for (i = 0; i < f->n_status; i++)
        if (strcmp(f->by_status[i].status, st) == 0)
            break;
    if (i == f->n_status && f->n_status < SUMMARY_MAX_STATUSES)
        copy_status(f->by_status[f->n_status++].status, sizeof f->by_status[0].status, st);
    if (i < f->n_status)
        f->by_status[i].n += n;
}

void summary_add_unexpected(struct summary_facts *f, const char *id, size_t id_len, const char *status,
                            const char *message, uint64_t duration_ns)
{
    f->unexpected_total++;
    if (f->n_unexpected < SUMMARY_MAX_LIST) {
        struct summary_test *t = &f->unexpected[f->n_unexpected++];
        copy_text(t->id, sizeof t->id, id, id_len);
        size_t mn = message ? strcspn(message, "\n") : 0;
        copy_text(t->message, sizeof t->message, message, mn);
        copy_status(t->status, sizeof t->status, status);
        t->duration_ns = duration_ns;
    }
}

void summary_add_hot(struct summary_facts *f, const char *name, uint64_t samples, uint64_t total)
{
    if (f->n_hot >= SUMMARY_MAX_HOT)
        return;
    copy_text(f->hot[f->n_hot].name, sizeof f->hot[f->n_hot].name, name, strlen(name));
    f->hot[f->n_hot++].samples = samples;
    f->hot_total = total;
}

void summary_add_slowest(struct summary_facts *f, const char *id, size_t id_len, const char *status,
                         uint64_t duration_ns)
{
    size_t keep = f->max_slowest ? MIN(f->max_slowest, (size_t)SUMMARY_MAX_LIST) : 5;
    /* Insertion into a short sorted list; equal durations keep the earlier test first. */
    size_t pos = MIN(f->n_slowest, keep);
    while (pos > 0 && f->slowest[pos - 1].duration_ns < duration_ns)
        pos--;
    if (pos >= keep)
        return;
    size_t last = f->n_slowest < keep ? f->n_slowest : keep - 1;
    memmove(&f->slowest[pos + 1], &f->slowest[pos], (last - pos) * sizeof f->slowest[0]);
    struct summary_test *t = &f->slowest[pos];
    copy_text(t->id, sizeof t->id, id, id_len);
    copy_status(t->status, sizeof t->status, status);
    t->duration_ns = duration_ns;
    if (f->n_slowest < keep)
        f->n_slowest++;
}

void summary_add_test(struct summary_facts *f, const char *id, size_t id_len, const char *status,
                      bool unexpected, uint64_t duration_ns)
{
    summary_add_status(f, status, 1);
    if (unexpected)
        summary_add_unexpected(f, id, id_len, status, NULL, duration_ns);
    summary_add_slowest(f, id, id_len, status, duration_ns);
}

void summary_add_open(struct summary_facts *f, const char *id, size_t id_len)
{
    f->open_total++;
    if (f->n_open < SUMMARY_MAX_LIST) {
        struct summary_test *t = &f->open[f->n_open++];
        copy_text(t->id, sizeof t->id, id, id_len);
        t->status[0] = '\0';
        t->duration_ns = 0;
    }
}

void summary_add_alive(struct summary_facts *f, int pid, const char *cmd, size_t cmd_len)
{
    f->alive_total++;
    if (f->n_alive < SUMMARY_MAX_LIST) {
        struct summary_proc *p = &f->alive[f->n_alive++];
        p->pid = pid;
        copy_text(p->cmd, sizeof p->cmd, cmd, cmd_len);
    }
}

static struct summary_proc *alive_of(struct summary_facts *f, int pid)
{
    for (size_t i = 0; i < f->n_alive; i++)
        if (f->alive[i].pid == pid)
            return &f->alive[i];
    return NULL;
}

void summary_set_state(struct summary_facts *f, int pid, char state, size_t threads, const char *test)
{
    struct summary_proc *p = alive_of(f, pid);
    if (p) {
        p->state = state;
        p->threads = threads;
        copy_text(p->test, sizeof p->test, test ? test : "", test ? strlen(test) : 0);
    }
}

void summary_add_stack(struct summary_facts *f, int pid, const char *line, size_t len)
{
    struct summary_proc *p = alive_of(f, pid);
    if (p && p->n_stacks < SUMMARY_MAX_STACKS) {
        copy_text(p->stacks[p->n_stacks], sizeof p->stacks[0], line, len);
        p->n_stacks++;
    }
}

void summary_add_left(struct summary_facts *f, int pid, const char *cmd, size_t cmd_len, const char *test)
{
    f->left_total++;
    if (f->n_left < SUMMARY_MAX_LIST) {
        struct summary_proc *p = &f->left[f->n_left++];
        memset(p, 0, sizeof *p);
        p->pid = pid;
        copy_text(p->cmd, sizeof p->cmd, cmd, cmd_len);
        copy_text(p->test, sizeof p->test, test ? test : "", test ? strlen(test) : 0);
    }
}

void summary_alive_first(struct summary_facts *f, int pid)
{
    for (size_t i = f->n_alive_first; i < f->n_alive; i++)
        if (f->alive[i].pid == pid) {
            struct summary_proc p = f->alive[i];
            memmove(&f->alive[f->n_alive_first + 1], &f->alive[f->n_alive_first],
                    (i - f->n_alive_first) * sizeof p);
            f->alive[f->n_alive_first++] = p;
            return;
        }
}

void summary_add_oom(struct summary_facts *f, int pid, const char *cmd, uint64_t rss, const char *test)
{
    f->oom_total++;
    if (f->n_oom < SUMMARY_MAX_LIST) {
        struct summary_oom *o = &f->oom[f->n_oom++];
        o->pid = pid;
        o->rss = rss;
        copy_text(o->cmd, sizeof o->cmd, cmd, cmd ? strlen(cmd) : 0);
        copy_text(o->test, sizeof o->test, test, test ? strlen(test) : 0);
    }
}

static int status_rank(const char *status) { return testlog_status_index(status, strlen(status)); }

/* A result as the summary names it: a FAIL that was expected (pytest's xfail, a TAP TODO that
 * failed) and a pass where a failure was expected read as XFAIL and XPASS, pytest's words, rather
 * than as a FAIL or a PASS like any other. */
static const char *shown_status(const struct rs_test *t)
{
    const char *s = t->status ? t->status : "";
    if (t->unexpected ? results_is(s, "PASS") || results_is(s, "OK") : results_is(s, "FAIL"))
        return t->unexpected ? "XPASS" : "XFAIL";
    return s; /* an expected ERROR, CRASH or TIMEOUT (mozlog's) keeps its name, as in JUnit */
}

void summary_add_totals(struct summary_facts *f, const char *harness, const char *text, int64_t total)
{
    if (f->n_totals == SUMMARY_MAX_TOTALS) {
        memmove(&f->totals[0], &f->totals[1], (SUMMARY_MAX_TOTALS - 1) * sizeof f->totals[0]);
        f->n_totals--;
    }
    struct summary_totals *t = &f->totals[f->n_totals++];
    copy_text(t->harness, sizeof t->harness, harness, strlen(harness));
    copy_text(t->text, sizeof t->text, text, strlen(text));
    t->total = total;
    if (total > 0 && f->totals_sum <= INT64_MAX - total)
        f->totals_sum += total;
}

/* Whether the harnesses' counts say another number of tests than the results recognised (then
 * the summary shows them). */
static bool totals_differ(const struct summary_facts *f)
{
    return f->n_totals && (uint64_t)f->totals_sum != f->tests;
}

int summary_add_results(struct summary_facts *f, const struct results *r)
{
    for (size_t i = 0; i < r->ntotals; i++)
        summary_add_totals(f, r->totals[i].harness, r->totals[i].summary, r->totals[i].total);
    f->totals_sum = r->totals_sum; /* (results keeps the last counts only) */
    const struct rs_test **list;
    size_t n = results_ended(r, &list);
    if (!n && r->ntests > r->nopen)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct rs_test *t = list[i];
        const char *status = shown_status(t);
        uint64_t dur = results_duration_ns(t);
        summary_add_status(f, status, 1);
        if (t->unexpected)
            summary_add_unexpected(f, t->id, strlen(t->id), status, t->message, dur);
        summary_add_slowest(f, t->id, strlen(t->id), status, dur);
        f->leaked += t->leaked;
        f->leaking_tests += t->leaked > 0;
    }
    free(list);
    /* the statuses in the order a reader knows (PASS, FAIL, ...), not the order they came */
    for (size_t i = 1; i < f->n_status; i++)
        for (size_t k = i; k > 0 && status_rank(f->by_status[k - 1].status) > status_rank(f->by_status[k].status);
             k--) {
            struct summary_count c = f->by_status[k];
            f->by_status[k] = f->by_status[k - 1];
            f->by_status[k - 1] = c;
        }
    for (size_t i = 0; i < r->n_stop_open; i++)
        summary_add_open(f, r->stop_open[i], strlen(r->stop_open[i]));
    return 0;
}

/* ---- text ---------------------------------------------------------------------------------- */

enum colour { C_NONE, C_RED, C_GREEN, C_YELLOW, C_CYAN, C_BOLD, C_DIM };

static void buf_colour(struct buf *b, const struct summary_style *st, enum colour c, const char *s)
{
    static const char *const sgr[] = {"", "\033[31m", "\033[32m", "\033[33m", "\033[36m", "\033[1m", "\033[2m"};
    if (st->colour && c != C_NONE) {
        buf_puts(b, sgr[c]);
        buf_puts(b, s);
        buf_puts(b, "\033[0m");
    } else
        buf_puts(b, s);
}

#define LABEL_WIDTH 13

/* Where the CPU went: the share of the samples whose innermost function each is. */
static void hot_text(struct buf *b, const struct summary_facts *f)
{
    for (size_t i = 0; i < f->n_hot; i++)
        buf_printf(b, "%s%.0f%% %s", i ? ", " : "", 100.0 * (double)f->hot[i].samples / (double)f->hot_total,
                   f->hot[i].name);
    buf_printf(b, " (of %llu CPU samples)", (unsigned long long)f->hot_total);
}

static void label(struct buf *b, const struct summary_style *st, const char *name)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "  %-*s", LABEL_WIDTH, name);
    if (st->colour) {
        /* Pad outside the escape so alignment does not depend on colour. */
        buf_puts(b, "  ");
        buf_colour(b, st, C_BOLD, name);
        buf_printf(b, "%*s", (int)(LABEL_WIDTH - strlen(name)), "");
    } else
        buf_puts(b, tmp);
}

static void continuation(struct buf *b) { buf_printf(b, "  %-*s", LABEL_WIDTH, ""); }

/* "420 ms", "4.21 s", "20.3 s", "3m05s", "1h02m" */
static void fmt_duration(char *out, size_t size, uint64_t ns)
{
    double s = (double)ns / 1e9;
    if (ns < NSEC_PER_SEC)
        snprintf(out, size, "%u ms", (unsigned)((ns + NSEC_PER_MSEC / 2) / NSEC_PER_MSEC));
    else if (ns < 10 * NSEC_PER_SEC)
        snprintf(out, size, "%.2f s", s);
    else if (ns < 60 * NSEC_PER_SEC)
        snprintf(out, size, "%.1f s", s);
    else if (ns < 3600 * NSEC_PER_SEC) {
        uint64_t t = ns / NSEC_PER_SEC;
        snprintf(out, size, "%um%02us", (unsigned)(t / 60), (unsigned)(t % 60));
    } else {
        uint64_t t = ns / NSEC_PER_SEC / 60;
        snprintf(out, size, "%lluh%02um", (unsigned long long)(t / 60), (unsigned)(t % 60));
    }
}

static void fmt_bytes(char *out, size_t size, double v)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (v >= 1024 && u + 1 < ARRAY_SIZE(unit))
        v /= 1024, u++;
    if (u == 0)
        snprintf(out, size, "%.0f B", v);
    else
        snprintf(out, size, "%.1f %s", v, unit[u]);
}

static enum colour status_colour(const char *status, bool unexpected)
{
    if (!strcmp(status, "SKIP") || !strcmp(status, "TIMEOUT") || !strcmp(status, "INCOMPLETE"))
        return C_YELLOW;
    if (!strcmp(status, "CRASH") || !strcmp(status, "ERROR"))
        return C_RED;
    if (unexpected)
        return C_RED;
    if (!strcmp(status, "PASS") || !strcmp(status, "OK"))
        return C_GREEN;
    return C_NONE;
}

/* The tree's CPU over the span it was counted in, in cores: the same span for both figures, or
 * CPU the leftovers used after the command's end would be spread over the command's time alone
 * (more cores than the machine has). */
static double avg_cores(const struct summary_facts *f)
{
    uint64_t span = MAX(f->wall_ns, f->cpu_span_ns);
    return span ? (double)f->tree_cpu_ns / (double)span : 0;
}

/* How the run ended, in words ("timed out after 1.00 s (sent TERM)"), and its colour. */
static enum colour end_text(const struct summary_facts *f, char *text, size_t size)
{
    char sig[32], dur[32];
    signal_name(f->signal, sig, sizeof sig);
    fmt_duration(dur, sizeof dur, f->limit_ns);
    const char *kill = f->kill_sent ? ", then KILL" : "";
    enum colour c = C_YELLOW;
    switch (f->end) {
    case RUN_EXIT:
        snprintf(text, size, "exited with status %d", f->exit_code);
        c = f->exit_code == 0 ? C_GREEN : C_RED;
        break;
    case RUN_SIGNAL:
        snprintf(text, size, "died of signal %s", sig);
        c = C_RED;
        break;
    case RUN_TIMEOUT:
        snprintf(text, size, "timed out after %s (sent %s%s)", dur, sig, kill);
        break;
    case RUN_OUTPUT_TIMEOUT:
        snprintf(text, size, "printed nothing for %s: output timeout (sent %s%s)", dur, sig, kill);
        break;
    case RUN_STOPPED:
        snprintf(text, size, "stopped: resmon-run received %s%s", sig, f->kill_sent ? " (KILL sent)" : "");
        break;
    case RUN_PARENT_DIED:
        snprintf(text, size, "stopped: resmon-run's parent died (sent %s%s)", sig, kill);
        break;
    case RUN_MEMORY:
    case RUN_CPU:
    case RUN_TASKS:
        if (f->signal)
            snprintf(text, size, "stopped at its %s limit: %s (sent %s%s)", f->limit_name ? f->limit_name : "?",
                     f->limit_text ? f->limit_text : "reached", sig, kill);
        else /* the kernel had ended the command already */
            snprintf(text, size, "stopped at its %s limit: %s (the command had ended: nothing to signal)",
                     f->limit_name ? f->limit_name : "?", f->limit_text ? f->limit_text : "reached");
        c = C_RED;
        break;
    case RUN_OOM_KILL:
        snprintf(text, size, "was killed by the kernel's OOM killer");
        c = C_RED;
        break;
    default:
        snprintf(text, size, "ended");
    }
    return c;
}

static void headline(struct buf *b, const struct summary_facts *f, const struct summary_style *st)
{
    char text[448];
    enum colour c = end_text(f, text, sizeof text);
    buf_printf(b, "%s: '", f->program ? f->program : "resmon-run");
    char cmd[SUMMARY_TEXT_MAX];
    copy_text(cmd, sizeof cmd, f->command, f->command ? strlen(f->command) : 0);
    buf_puts(b, cmd);
    buf_puts(b, "' ");
    buf_colour(b, st, c, text);
    if (f->exit_status >= 0)
        buf_printf(b, "; exit status %d", f->exit_status);
    buf_puts(b, "\n");
}

size_t summary_end_text(const struct summary_facts *f, char *buf, size_t size)
{
    char text[448];
    end_text(f, text, sizeof text);
    char cmd[SUMMARY_TEXT_MAX];
    copy_text(cmd, sizeof cmd, f->command, f->command ? strlen(f->command) : 0);
    int n = f->exit_status >= 0 ? snprintf(buf, size, "'%s' %s; exit status %d", cmd, text, f->exit_status)
                                : snprintf(buf, size, "'%s' %s", cmd, text);
    return n < 0 ? 0 : MIN((size_t)n, size - 1);
}

static void sparkline(struct buf *b, const struct summary_series *s, const struct summary_style *st,
                      double peak)
{
    static const char *const blocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                         "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[] = "_.-:=+*#";
    if (st->colour)
        buf_puts(b, "\033[36m");
    for (size_t i = 0; i < s->n; i++) {
        double v = summary_series_value(s, i);
        int level = 0;
        if (peak > 0 && v > 0) {
            level = (int)(v / peak * 8.0);
            if (level > 7)
                level = 7;
            if (level < 0)
                level = 0;
        }
        if (st->utf8)
            buf_puts(b, blocks[level]);
        else
            buf_add(b, &ascii[level], 1);
    }
    if (st->colour)
        buf_puts(b, "\033[0m");
}

static double series_peak(const struct summary_series *s)
{
    double peak = 0;
    for (size_t i = 0; i < s->n; i++) {
        double v = summary_series_value(s, i);
        if (v > peak)
            peak = v;
    }
    return peak;
}

/* The tree's peak memory, one figure wherever it is shown: the run's own (peak_rss, which can
 * lie between two samples), else the highest sample; 0 when nothing was measured (a run shorter
 * than one interval), and then no row shows a peak of 0 B. */
static double memory_peak(const struct summary_facts *f)
{
    double s = series_peak(&f->mem);
    return f->peak_rss ? MAX((double)f->peak_rss, s) : s;
}

static void test_list(struct buf *b, const struct summary_style *st, const char *name,
                      const struct summary_test *t, size_t n, uint64_t total, bool with_status,
                      bool with_duration)
{
    for (size_t i = 0; i < n; i++) {
        if (i == 0)
            label(b, st, name);
        else
            continuation(b);
        if (with_status) {
            char tmp[32];
            snprintf(tmp, sizeof tmp, "%-8s", t[i].status);
            buf_colour(b, st, status_colour(t[i].status, true), tmp);
            buf_puts(b, " ");
        }
        if (with_duration) {
            char dur[32];
            fmt_duration(dur, sizeof dur, t[i].duration_ns);
            buf_printf(b, "%8s  ", dur);
        }
        buf_puts(b, t[i].id);
        if (t[i].message[0]) {
            buf_puts(b, st->utf8 ? " \xe2\x80\x94 " : " -- "); /* ids may hold " - " */
            buf_puts(b, t[i].message);
        }
        buf_puts(b, "\n");
    }
    if (total > n) {
        continuation(b);
        buf_printf(b, "... and %llu more\n", (unsigned long long)(total - n));
    }
}

/* Row i of a list of processes: the label on the first, "PID  command line" (no newline). */
static void proc_row(struct buf *b, const struct summary_style *st, const char *name, size_t i, int pid,
                     const char *cmd)
{
    if (i == 0)
        label(b, st, name);
    else
        continuation(b);
    buf_printf(b, "%-7d %s", pid, cmd);
}

/* The last row of a bounded list that kept n of total. */
static void more_rows(struct buf *b, uint64_t total, size_t n)
{
    if (total <= n)
        return;
    continuation(b);
    buf_printf(b, "... and %llu more\n", (unsigned long long)(total - n));
}

/* The tests' rows: counts by status, the unexpected and the slowest; or that none was recognised. */
static void tests_rows(struct buf *b, const struct summary_facts *f, const struct summary_style *st)
{
    if (f->tests_known) {
        label(b, st, "tests");
        buf_printf(b, "%llu", (unsigned long long)f->tests);
        for (size_t i = 0; i < f->n_status; i++) {
            buf_puts(b, i == 0 ? ": " : ", ");
            buf_printf(b, "%llu ", (unsigned long long)f->by_status[i].n);
            buf_colour(b, st, status_colour(f->by_status[i].status, false), f->by_status[i].status);
        }
        if (f->unexpected_total)
            buf_printf(b, " (%llu unexpected)", (unsigned long long)f->unexpected_total);
        buf_puts(b, "\n");
        if (totals_differ(f)) {
            for (size_t i = 0; i < f->n_totals; i++) {
                continuation(b);
                buf_printf(b, "%s's own count: %s\n", f->totals[i].harness, f->totals[i].text);
            }
            const char *hint = summary_harness_hint(f->argv);
            if (hint) {
                continuation(b);
                buf_printf(b, "(%s)\n", hint);
            }
        }
        test_list(b, st, "unexpected", f->unexpected, f->n_unexpected, f->unexpected_total, true, false);
        test_list(b, st, "slowest", f->slowest, f->n_slowest, f->n_slowest, false, true);
    } else if (f->n_totals) {
        /* the harness counted tests its reporter did not name */
        const char *hint = summary_harness_hint(f->argv);
        for (size_t i = 0; i < f->n_totals; i++) {
            if (i)
                continuation(b);
            else
                label(b, st, "tests");
            buf_printf(b, "%s's own count: %s\n", f->totals[i].harness, f->totals[i].text);
        }
        continuation(b);
        buf_printf(b, "no test named in the output%s%s\n", hint ? ": " : "", hint ? hint : "");
    } else if (f->tests_parsed && !f->at_stop && !f->open_total) {
        const char *hint = summary_harness_hint(f->argv);
        label(b, st, "tests");
        buf_printf(b, "no test line recognised in the output%s%s\n", hint ? ": " : "", hint ? hint : "");
    }
}

int summary_format(const struct summary_facts *f, const struct summary_style *st, char **ret_text,
                   size_t *ret_len)
{
    struct buf b = {0};
    char tmp[64], tmp2[64];

    headline(&b, f, st);

    label(&b, st, "wall time");
    fmt_duration(tmp, sizeof tmp, f->wall_ns);
    buf_printf(&b, "%s\n", tmp);

    if (f->have_cpu) {
        label(&b, st, "tree CPU");
        fmt_duration(tmp, sizeof tmp, f->tree_cpu_ns);
        double cores = avg_cores(f);
        buf_printf(&b, "%s (%.2f cores on average)\n", tmp, cores);
    }
    if (f->peak_rss) {
        label(&b, st, "peak memory");
        fmt_bytes(tmp, sizeof tmp, (double)f->peak_rss);
        buf_printf(&b, "%s (the tree's summed RSS)\n", tmp);
    }

    tests_rows(&b, f, st);

    test_list(&b, st, "open tests", f->open, f->n_open, f->open_total, false, false);
    for (size_t i = 0; i < f->n_alive; i++) {
        const struct summary_proc *p = &f->alive[i];
        proc_row(&b, st, "alive then", i, p->pid, p->cmd);
        buf_puts(&b, "\n");
        if (p->state) {
            continuation(&b);
            buf_printf(&b, "        state %c, %zu thread%s%s%s\n", p->state, p->threads, p->threads == 1 ? "" : "s",
                       p->test[0] ? ", in " : "", p->test);
        }
        for (size_t j = 0; j < p->n_stacks; j++) {
            continuation(&b);
            buf_printf(&b, "          %s\n", p->stacks[j]);
        }
        if (p->n_stacks && p->threads > p->n_stacks) {
            continuation(&b);
            buf_printf(&b, "          (%zu more thread%s left out)\n", p->threads - p->n_stacks,
                       p->threads - p->n_stacks == 1 ? "" : "s");
        }
    }
    more_rows(&b, f->alive_total, f->n_alive);
    if (f->dump_cut_processes || f->dump_cut_threads) {
        label(&b, st, "dump");
        buf_printf(&b, "the budget cut off the stacks of %zu process%s and %zu thread%s\n", f->dump_cut_processes,
                   f->dump_cut_processes == 1 ? "" : "es", f->dump_cut_threads, f->dump_cut_threads == 1 ? "" : "s");
    }
    if (f->dump_path) {
        label(&b, st, "stacks");
        buf_printf(&b, "%s\n", f->dump_path);
    }

    if (f->leaked) {
        label(&b, st, "leaked");
        buf_printf(&b, "%llu process%s left running by %llu test%s (their markers list them)\n",
                   (unsigned long long)f->leaked, f->leaked == 1 ? "" : "es", (unsigned long long)f->leaking_tests,
                   f->leaking_tests == 1 ? "" : "s");
    }
    for (size_t i = 0; i < f->n_left; i++) {
        proc_row(&b, st, "left behind", i, f->left[i].pid, f->left[i].cmd);
        if (f->left[i].test[0])
            buf_printf(&b, " (left by test %s)", f->left[i].test);
        buf_puts(&b, "\n");
    }
    more_rows(&b, f->left_total, f->n_left);

    for (size_t i = 0; i < f->n_oom; i++) {
        proc_row(&b, st, "OOM killed", i, f->oom[i].pid, f->oom[i].cmd);
        if (f->oom[i].rss) {
            fmt_bytes(tmp, sizeof tmp, (double)f->oom[i].rss);
            buf_printf(&b, " (%s resident)", tmp);
        }
        if (f->oom[i].test[0])
            buf_printf(&b, " during %s", f->oom[i].test);
        buf_puts(&b, "\n");
    }
    more_rows(&b, f->oom_total, f->n_oom);
    if (f->pressure_high) {
        label(&b, st, "pressure");
        fmt_duration(tmp, sizeof tmp, f->pressure_at_ns);
        char text[64];
        snprintf(text, sizeof text, "memory: %.0f%% of the last minute stalled", f->pressure_avg60);
        buf_colour(&b, st, C_YELLOW, text);
        buf_printf(&b, " (%s, %s into the run)\n", f->pressure_tree ? "the tree" : "the machine", tmp);
    }

    if (f->n_hot && f->hot_total) {
        label(&b, st, "hottest");
        hot_text(&b, f);
        buf_puts(&b, "\n");
    }
    if (f->cpu.n > 0) {
        double peak = series_peak(&f->cpu);
        label(&b, st, "CPU");
        sparkline(&b, &f->cpu, st, peak);
        buf_printf(&b, "  peak %.2f cores\n", peak);
    }
    if (f->mem.n > 0 && memory_peak(f) > 0) {
        double peak = memory_peak(f);
        label(&b, st, "memory");
        sparkline(&b, &f->mem, st, peak);
        fmt_bytes(tmp2, sizeof tmp2, peak);
        buf_printf(&b, "  peak %s\n", tmp2);
    }

    if (f->profile_path) {
        label(&b, st, "profile");
        char path[SUMMARY_TEXT_MAX * 2];
        copy_text(path, sizeof path, f->profile_path, strlen(f->profile_path));
        buf_puts(&b, path);
        buf_puts(&b, "\n");
        continuation(&b);
        if (f->stream_lines_lost) {
            buf_printf(&b, "%llu line%s of it could not be written (%s): the profile lacks them\n",
                       (unsigned long long)f->stream_lines_lost, f->stream_lines_lost == 1 ? "" : "s",
                       f->stream_error ? strerror(-f->stream_error) : "write error");
            continuation(&b);
        }
        if (f->profile_is_stream)
            buf_printf(&b, "a stream only: '%s --recover %s' makes it a profile\n",
                       f->program ? f->program : "resmon-run", path);
        else
            buf_puts(&b, "open https://profiler.firefox.com/ and \"Load a profile from file\"\n");
    }

    if (!buf_end(&b)) {
        free(b.p);
        return -ENOMEM;
    }
    *ret_len = b.len;
    *ret_text = b.p;
    return 0;
}

/* ---- Markdown (a CI's job summary) ------------------------------------------------------- */

static void md_put(void *ctx, const char *p, size_t len) { buf_add(ctx, p, len); }

/* Text in Markdown, so that a test id can neither format nor break a table (sanitize.h). */
static void md_text(struct buf *b, const char *s)
{
    sanitize(SANITIZE_MARKDOWN, s, s ? strlen(s) : 0, md_put, b);
}

/* The rest of a table row whose name was written: its value. */
static void md_row_value(struct buf *b, const char *value)
{
    buf_puts(b, " | ");
    md_text(b, value);
    buf_puts(b, " |\n");
}

static void md_row(struct buf *b, const char *name, const char *value)
{
    buf_puts(b, "| ");
    buf_puts(b, name);
    md_row_value(b, value);
}

static void md_more(struct buf *b, uint64_t total, size_t n)
{
    if (total > n)
        buf_printf(b, "\n... and %llu more\n", (unsigned long long)(total - n));
}

static void md_tests(struct buf *b, const char *title, const struct summary_test *t, size_t n, uint64_t total,
                     bool with_status)
{
    if (!n)
        return;
    buf_printf(b, "\n**%s**\n\n", title);
    buf_puts(b, with_status ? "| Status | Test | Duration |\n|---|---|---:|\n" : "| Test |\n|---|\n");
    for (size_t i = 0; i < n; i++) {
        buf_puts(b, "| ");
        if (with_status) {
            md_text(b, t[i].status);
            buf_puts(b, " | ");
        }
        md_text(b, t[i].id);
        if (with_status) {
            char dur[32];
            fmt_duration(dur, sizeof dur, t[i].duration_ns);
            buf_printf(b, " | %s", dur);
        }
        buf_puts(b, " |\n");
    }
    md_more(b, total, n);
}

static void md_procs(struct buf *b, const char *title, size_t n, uint64_t total, const int *pids,
                     const char *const *cmds, const char *const *extra)
{
    if (!n)
        return;
    buf_printf(b, "\n**%s**\n\n| PID | Command line |%s\n|---:|---|%s\n", title, extra ? " |" : "",
               extra ? "---|" : "");
    for (size_t i = 0; i < n; i++) {
        buf_printf(b, "| %d | ", pids[i]);
        md_text(b, cmds[i]);
        if (extra) {
            buf_puts(b, " | ");
            md_text(b, extra[i]);
        }
        buf_puts(b, " |\n");
    }
    md_more(b, total, n);
}

int summary_format_markdown(const struct summary_facts *f, char **ret_text, size_t *ret_len)
{
    struct buf b = {0};
    char tmp[256], tmp2[64];
    const struct summary_style plain = {false, true};

    summary_end_text(f, tmp, sizeof tmp);
    buf_printf(&b, "### %s: ", f->program ? f->program : "resmon-run");
    md_text(&b, tmp);
    if (f->at_stop)
        buf_puts(&b, "\n\n_Written at the stop, before the tree was signalled; the summary of the end "
                     "replaces it._");
    /* a table needs a header row: an empty one shows as an empty bar */
    buf_puts(&b, "\n\n| Measure | Value |\n|---|---|\n");
    fmt_duration(tmp, sizeof tmp, f->wall_ns);
    md_row(&b, "wall time", tmp);
    if (f->have_cpu) {
        fmt_duration(tmp2, sizeof tmp2, f->tree_cpu_ns);
        snprintf(tmp, sizeof tmp, "%s (%.2f cores on average)", tmp2,
                 avg_cores(f));
        md_row(&b, "tree CPU", tmp);
    }
    if (f->peak_rss) {
        fmt_bytes(tmp2, sizeof tmp2, (double)f->peak_rss);
        snprintf(tmp, sizeof tmp, "%s (the tree's summed RSS)", tmp2);
        md_row(&b, "peak memory", tmp);
    }
    if (f->tests_known) {
        struct buf t = {0};
        buf_printf(&t, "%llu", (unsigned long long)f->tests);
        for (size_t i = 0; i < f->n_status; i++)
            buf_printf(&t, "%s%llu %s", i ? ", " : ": ", (unsigned long long)f->by_status[i].n, f->by_status[i].status);
        if (f->unexpected_total)
            buf_printf(&t, " (%llu unexpected)", (unsigned long long)f->unexpected_total);
        md_row(&b, "tests", t.p ? t.p : "");
        b.failed |= t.failed;
        free(t.p);
    }
    if (f->n_totals && (!f->tests_known || totals_differ(f)))
        for (size_t i = 0; i < f->n_totals; i++) {
            buf_puts(&b, "| ");
            md_text(&b, f->totals[i].harness);
            buf_puts(&b, "'s own count");
            md_row_value(&b, f->totals[i].text);
        }
    if (f->n_hot && f->hot_total) {
        struct buf t = {0};
        hot_text(&t, f);
        md_row(&b, "hottest", t.p ? t.p : "");
        b.failed |= t.failed;
        free(t.p);
    }
    if (f->pressure_high) {
        fmt_duration(tmp2, sizeof tmp2, f->pressure_at_ns);
        snprintf(tmp, sizeof tmp, "memory: %.0f%% of the last minute stalled (%s, %s into the run)",
                 f->pressure_avg60, f->pressure_tree ? "the tree" : "the machine", tmp2);
        md_row(&b, "pressure", tmp);
    }
    const struct summary_series *series[] = {&f->cpu, &f->mem};
    for (size_t k = 0; k < 2; k++) {
        if (!series[k]->n || (k && memory_peak(f) <= 0))
            continue;
        double peak = k ? memory_peak(f) : series_peak(series[k]);
        buf_puts(&b, k ? "| memory | `" : "| CPU | `");
        sparkline(&b, series[k], &plain, peak);
        if (k)
            fmt_bytes(tmp2, sizeof tmp2, peak);
        else
            snprintf(tmp2, sizeof tmp2, "%.2f cores", peak);
        buf_printf(&b, "` peak %s |\n", tmp2);
    }
    if (f->profile_path)
        md_row(&b, "profile", f->profile_name ? f->profile_name : f->profile_path);

    md_tests(&b, "Unexpected results", f->unexpected, f->n_unexpected, f->unexpected_total, true);
    if (f->unexpected_total > f->annotated && f->annotated)
        buf_printf(&b, "\nThe first %zu of the %llu unexpected results are annotations (a step shows at most 10).\n",
                   f->annotated, (unsigned long long)f->unexpected_total);
    md_tests(&b, "Tests still running at the stop", f->open, f->n_open, f->open_total, false);
    int pids[SUMMARY_MAX_LIST];
    const char *cmds[SUMMARY_MAX_LIST], *extra[SUMMARY_MAX_LIST];
    char during[SUMMARY_MAX_LIST][SUMMARY_TEXT_MAX + 64];
    /* what each was doing, from the dump at the stop: its state, test and top frames */
    struct buf doing[SUMMARY_MAX_LIST] = {{0}};
    bool dumped = false;
    for (size_t i = 0; i < f->n_alive; i++) {
        const struct summary_proc *p = &f->alive[i];
        pids[i] = p->pid, cmds[i] = p->cmd;
        if (p->state) {
            dumped = true;
            buf_printf(&doing[i], "state %c, %zu thread%s%s%s", p->state, p->threads, p->threads == 1 ? "" : "s",
                       p->test[0] ? ", in " : "", p->test);
        }
        for (size_t j = 0; j < p->n_stacks; j++)
            buf_printf(&doing[i], "%s%s", doing[i].len ? "; " : "", p->stacks[j]);
        if (p->n_stacks && p->threads > p->n_stacks)
            buf_printf(&doing[i], "; %zu more thread%s left out", p->threads - p->n_stacks,
                       p->threads - p->n_stacks == 1 ? "" : "s");
        extra[i] = doing[i].p ? doing[i].p : "";
        b.failed |= doing[i].failed;
    }
    md_procs(&b, dumped ? "Processes alive at the stop, and what they were doing" : "Processes alive at the stop",
             f->n_alive, f->alive_total, pids, cmds, dumped ? extra : NULL);
    for (size_t i = 0; i < f->n_alive; i++)
        free(doing[i].p);
    if (f->dump_cut_processes || f->dump_cut_threads)
        buf_printf(&b, "\nThe dump's time budget cut off the stacks of %zu process%s and %zu thread%s.\n",
                   f->dump_cut_processes, f->dump_cut_processes == 1 ? "" : "es", f->dump_cut_threads,
                   f->dump_cut_threads == 1 ? "" : "s");
    if (f->dump_path) {
        buf_puts(&b, "\nStacks of every thread: ");
        md_text(&b, f->dump_path);
        buf_puts(&b, "\n");
    }
    for (size_t i = 0; i < f->n_oom; i++) {
        pids[i] = f->oom[i].pid, cmds[i] = f->oom[i].cmd;
        fmt_bytes(tmp2, sizeof tmp2, (double)f->oom[i].rss);
        snprintf(during[i], sizeof during[i], "%s%s%s", f->oom[i].rss ? tmp2 : "", f->oom[i].test[0] ? " during " : "",
                 f->oom[i].test);
        extra[i] = during[i];
    }
    md_procs(&b, "Killed by the OOM killer", f->n_oom, f->oom_total, pids, cmds, extra);
    buf_puts(&b, "\n");
    if (!buf_end(&b)) {
        free(b.p);
        return -ENOMEM;
    }
    *ret_len = b.len;
    *ret_text = b.p;
    return 0;
}

int summary_write(int fd, const struct summary_facts *f, const struct summary_style *st)
{
    char *text = NULL;
    size_t len = 0;
    int r = summary_format(f, st, &text, &len);
    if (r < 0)
        return r;
    size_t off = 0;
    int waits = 0;
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN && waits++ < 20) {
            /* Someone else's non-blocking stderr: wait for room, but never for long. */
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            poll(&p, 1, 100);
            continue;
        }
        r = n < 0 ? -errno : -EIO;
        break;
    }
    free(text);
    return r;
}

bool summary_colour_for(int fd, const char *no_color_env)
{
    return isatty(fd) && !(no_color_env && *no_color_env);
}

static bool names_utf8(const char *s)
{
    const char *dot = strchr(s, '.');
    const char *cs = dot ? dot + 1 : s;
    return strncasecmp(cs, "UTF-8", 5) == 0 || strncasecmp(cs, "UTF8", 4) == 0;
}

bool summary_locale_utf8(const char *lc_all, const char *lc_ctype, const char *lang)
{
    const char *v[] = {lc_all, lc_ctype, lang};
    for (size_t i = 0; i < ARRAY_SIZE(v); i++)
        if (v[i] && *v[i])
            return names_utf8(v[i]);
    return true;
}

void summary_add_dump(struct summary_facts *f, const struct forensics_report *rep, const char *text_path)
{
    for (size_t i = 0; i < rep->nprocs; i++)
        if (rep->procs[i].test)
            summary_alive_first(f, (int)rep->procs[i].pid);
    struct jsonw w;
    jsonw_init(&w);
    for (size_t i = 0; i < rep->nprocs; i++) {
        const struct forensics_process *p = &rep->procs[i];
        summary_set_state(f, (int)p->pid, p->state, p->threads_total, p->test);
        size_t shown = 0;
        for (size_t k = 0; k < 2 * p->nthreads && shown < SUMMARY_MAX_STACKS; k++) {
            const struct forensics_thread *t = &p->threads[k % p->nthreads];
            if ((t->state == 'R') != (k < p->nthreads))
                continue;
            shown++;
            jsonw_reset(&w);
            char head[96];
            snprintf(head, sizeof head, "%d %s (%c): ", (int)t->tid, t->comm, t->state ? t->state : '?');
            jsonw_append(&w, head, strlen(head));
            const char *why = t->error ? t->error : p->error ? p->error : "?";
            if (t->nframes)
                forensics_top_frames(t, 4, &w);
            else
                jsonw_append(&w, why, strlen(why));
            if (!jsonw_failed(&w))
                summary_add_stack(f, (int)p->pid, w.buf, w.len);
        }
    }
    jsonw_release(&w);
    f->dump_cut_processes = rep->cut_off_processes;
    f->dump_cut_threads = rep->cut_off_threads;
    if (text_path)
        f->dump_path = text_path;
}
