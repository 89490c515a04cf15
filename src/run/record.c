/* record.c — what the run records of itself (state.h): the stop's marker (why, the tests still
 * open, the processes still alive), the kill steps, the OOM kills, the command's marker, and the
 * facts the reports are written from (sinks.h). The types and payloads are runmarks.h's; this
 * file gathers the run's facts for them.
 */
#include "run/state.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/log.h"
#include "base/util.h"
#include "observe/pressure.h"
#include "observe/procfs.h"
#include "profile/profile_cpu.h"

struct open_list {
    char **ids;
    size_t n, cap;
};

/* The live members of the tree with their command lines (at most 256), for the stop's marker
 * and the summary. cmds holds the command lines; free both. */
size_t live_processes(struct sv *sv, struct runmarks_process **ret, char **ret_cmds)
{
    *ret = NULL;
    *ret_cmds = NULL;
    pid_t *pids = NULL;
    size_t n = 0, k = 0;
    if (contain_members(sv->contain, &pids, &n) < 0)
        return 0;
    n = MIN(n, (size_t)256);
    struct runmarks_process *procs = calloc(n ? n : 1, sizeof *procs);
    char *cmds = malloc(n ? n * 1024 : 1);
    if (!procs || !cmds) {
        free(procs);
        free(cmds);
        free(pids);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char path[64], raw[4096], *cmd = cmds + k * 1024;
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pids[i]);
        ssize_t len = read_file_at(AT_FDCWD, path, raw, sizeof raw);
        if (len < 0)
            continue; /* gone meanwhile */
        size_t cl = procfs_format_cmdline(raw, (size_t)len, cmd, 1024);
        if (cl == 0) {
            /* kernel threads and zombies have no command line: use the name */
            snprintf(path, sizeof path, "/proc/%d/comm", (int)pids[i]);
            len = read_file_at(AT_FDCWD, path, cmd, 1024);
            cl = len > 0 ? (size_t)len - (cmd[len - 1] == '\n') : 0;
        }
        procs[k++] = (struct runmarks_process){pids[i], cmd, cl};
    }
    free(pids);
    *ret = procs;
    *ret_cmds = cmds;
    return k;
}

static void add_open_test(void *ctx, const char *id)
{
    struct open_list *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **x = realloc(l->ids, cap * sizeof *x);
        if (!x)
            return;
        l->ids = x;
        l->cap = cap;
    }
    if ((l->ids[l->n] = strdup(id)))
        l->n++;
}

/* The test files the live children of a TAP harness run (testlog_harness_child), opened as the
 * tests still running when a stop finds none open: prove holds a file's TAP back until the file
 * ends, so the output alone cannot name the file that hangs. In the order they started. */
#define HARNESS_FILES_MAX 32
void open_harness_tests(struct sv *sv)
{
    pid_t *pids = NULL;
    size_t n = 0;
    if (!sv->testlog || testlog_open_count(sv->testlog) || contain_members(sv->contain, &pids, &n) < 0)
        return;
    struct running {
        uint64_t start;
        char *file;
        size_t len;
    } found[HARNESS_FILES_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n && k < HARNESS_FILES_MAX; i++) {
        char path[64], buf[1024], self[4096], parent[4096];
        struct procfs_pid_stat st;
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pids[i]);
        ssize_t len = read_file_at(AT_FDCWD, path, buf, sizeof buf);
        if (len <= 0 || procfs_parse_pid_stat(buf, (size_t)len, &st) < 0)
            continue;
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pids[i]);
        ssize_t sn = read_file_at(AT_FDCWD, path, self, sizeof self);
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)st.ppid);
        ssize_t pn = read_file_at(AT_FDCWD, path, parent, sizeof parent);
        const char *file;
        size_t fl;
        if (sn <= 0 || pn <= 0 || !testlog_harness_child(parent, (size_t)pn, self, (size_t)sn, &file, &fl))
            continue;
        uint64_t start = forensics_start_ns(st.starttime);
        if (!start || !(found[k].file = strndup(file, fl)))
            continue;
        found[k].start = start;
        found[k++].len = fl;
    }
    free(pids);
    for (size_t i = 1; i < k; i++) /* by start: a few, sorted by insertion */
        for (size_t j = i; j > 0 && found[j].start < found[j - 1].start; j--) {
            struct running t = found[j];
            found[j] = found[j - 1];
            found[j - 1] = t;
        }
    for (size_t i = 0; i < k; i++) {
        testlog_open_running(sv->testlog, found[i].file, found[i].len, found[i].start);
        free(found[i].file);
    }
}

/* The record of a stop: why, which signal, the tests still open and the processes still alive
 * (for the profile and the summary). */
void emit_timeout_marker(struct sv *sv, uint64_t now)
{
    struct open_list open = {0};
    if (sv->testlog)
        testlog_each_open(sv->testlog, add_open_test, &open);
    struct runmarks_process *procs;
    char *cmds;
    size_t nprocs = live_processes(sv, &procs, &cmds);
    if (sv->sum) /* the tests open are the summary's from the marker (sinks.h) */
        for (size_t i = 0; i < nprocs; i++)
            summary_add_alive(sv->sum, (int)procs[i].pid, procs[i].cmd, procs[i].cmd_len);
    char figure[64];
    limits_figure(sv->limits, sv->cause == RUN_MEMORY ? LIMIT_MEMORY : sv->cause == RUN_CPU ? LIMIT_CPU
                                : sv->cause == RUN_TASKS ? LIMIT_TASKS : LIMIT_NONE,
                  figure, sizeof figure);
    struct runmarks_stop st = {
        .reason = sv->cause,
        .signal = sv->stop_signal,
        .ended = sv->stop_ended,
        .received = sv->cause == RUN_STOPPED ? sv->received_signal : 0,
        .limit = sv->limit_text[0] ? sv->limit_text : NULL,
        .figure = figure,
        .after_ns = sv->cause == RUN_TIMEOUT ? sv->o->timeout_ns
                    : sv->cause == RUN_OUTPUT_TIMEOUT ? sv->o->output_timeout_ns : 0,
        .open_tests = (const char *const *)open.ids,
        .n_open = open.n,
        .procs = procs,
        .n_procs = nprocs,
    };
    struct jsonw w;
    jsonw_init(&w);
    runmarks_stop_payload(&w, &st);
    emit(sv, runmarks_stop_name(st.reason), now, MARKER_INSTANT, CAT_TASKS, &w);
    jsonw_release(&w);
    for (size_t i = 0; i < open.n; i++)
        free(open.ids[i]);
    free(open.ids);
    free(procs);
    free(cmds);
}

/* A step that reached no process (the tree gone already: the OOM killer took the command) sent
 * nothing: no marker, rather than one that reads "TERM to 0 processes". */
void emit_kill_step(struct sv *sv, int sig, unsigned targets, const char *why)
{
    if (!sv->sink || !targets)
        return;
    struct jsonw w;
    jsonw_init(&w);
    runmarks_kill_payload(&w, sig, why, targets);
    emit(sv, "kill", now_ns(), MARKER_INSTANT, CAT_TASKS, &w);
    jsonw_release(&w);
}

/* An OOM kill of a process of the tree: said (limits_say_oom) with the test it ran under, the
 * summary's line; the command itself as the victim is the run's end reason. */
void record_oom(struct sv *sv, const struct sampler_killed *k)
{
    struct open_list open = {0};
    if (sv->testlog)
        testlog_each_open(sv->testlog, add_open_test, &open);
    const char *test = open.n ? open.ids[open.n - 1] : NULL;
    limits_say_oom(sv->sink, k, test);
    if (k->pid == sv->pid)
        sv->root_oom_killed = true;
    if (sv->sum)
        summary_add_oom(sv->sum, (int)k->pid, k->cmd, k->rss ? k->rss : k->max_rss, test);
    for (size_t i = 0; i < open.n; i++)
        free(open.ids[i]);
    free(open.ids);
}

void command_facts(struct sv *sv, struct runmarks_command *c)
{
    *c = (struct runmarks_command){
        .argv = (const char *const *)sv->o->argv,
        .argc = sv->o->argc,
        .pid = sv->pid,
        .wstatus = sv->wstatus,
        .tier = contain_tier_name(contain_tier(sv->contain)),
        .leftovers = sv->leftovers,
    };
    if (sv->exec_failed)
        c->reason = RUN_EXEC_FAILED;
    else if (sv->cause != RUN_EXIT)
        c->reason = sv->cause;
    else if (sv->root_oom_killed)
        c->reason = RUN_OOM_KILL;
    else
        c->reason = WIFSIGNALED(sv->wstatus) ? RUN_SIGNAL : RUN_EXIT;
    c->stop_signal = sv->cause == RUN_STOPPED ? sv->received_signal : sv->stop_signal;
    if (sv->sampler && !sv->exec_failed) {
        struct sampler_totals t;
        sampler_get_totals(sv->sampler, &t);
        c->have_cpu = true;
        c->cpu_ns = t.tree_cpu_ns;
        c->max_rss = t.peak_rss;
    }
}

/* The command's open line: a profile written while it runs (at a stop, or recovered) still has
 * its command marker. */
void open_command_marker(struct sv *sv)
{
    if (!sv->sink)
        return;
    struct runmarks_command c;
    command_facts(sv, &c);
    struct jsonw w;
    jsonw_init(&w);
    runmarks_command_open_line(&w, &c, 0.0);
    if (!jsonw_failed(&w))
        marker_state(sv->sink, w.buf, w.len);
    jsonw_release(&w);
}

void emit_command_marker(struct sv *sv)
{
    if (!sv->sink)
        return;
    struct runmarks_command c;
    command_facts(sv, &c);
    struct jsonw w;
    jsonw_init(&w);
    runmarks_command_payload(&w, &c);
    emit(sv, "command", sv->t0, sv->exit_ns, CAT_TASKS, &w);
    if (!sv->exec_failed) {
        runmarks_command_close_line(&w);
        marker_state(sv->sink, w.buf, w.len);
    }
    jsonw_release(&w);
}

/* The summary's facts at end_ns, when resmon-run exits with exit_status (-1: not known yet). The
 * tests are not among them: the sinks read those from the stream, as the files are (sinks.h). */
void fill_facts(struct sv *sv, struct summary_facts *f, int exit_status, uint64_t end_ns)
{
    f->program = log_program();
    f->command = sv->o->argv[0];
    const char *hot[SUMMARY_MAX_HOT];
    uint64_t hot_n[SUMMARY_MAX_HOT], total;
    f->n_hot = 0;
    for (size_t i = 0, n = pcpu_hottest(profile_conv_cpu(sv->conv), hot, hot_n, SUMMARY_MAX_HOT, &total); i < n; i++)
        summary_add_hot(f, hot[i], hot_n[i], total);
    f->kill_sent = sv->kill_sent;
    f->exit_status = exit_status;
    f->wall_ns = end_ns > sv->t0 ? end_ns - sv->t0 : 0;
    int st = sv->wstatus;
    f->end = sv->cause;
    f->signal = sv->stop_signal;
    switch (sv->cause) {
    case RUN_TIMEOUT: f->limit_ns = sv->stop_ns - sv->t0; break;
    case RUN_OUTPUT_TIMEOUT: f->limit_ns = sv->o->output_timeout_ns; break;
    case RUN_MEMORY:
    case RUN_CPU:
    case RUN_TASKS:
        f->limit_name = runmarks_reason_name(sv->cause);
        f->limit_text = sv->limit_text;
        break;
    case RUN_EXIT: /* not stopped: how the command ended by itself */
        f->signal = 0;
        if (sv->root_oom_killed)
            f->end = RUN_OOM_KILL;
        else if (WIFSIGNALED(st))
            f->end = RUN_SIGNAL, f->signal = WTERMSIG(st);
        else
            f->exit_code = WEXITSTATUS(st);
        break;
    default: break; /* a stop request, the parent's death: the signal */
    }
    if (sv->sampler) {
        struct sampler_totals t;
        sampler_get_totals(sv->sampler, &t);
        f->have_cpu = true;
        f->tree_cpu_ns = t.tree_cpu_ns;
        f->cpu_span_ns = t.tree_cpu_read_ns > sv->t0 ? t.tree_cpu_read_ns - sv->t0 : 0;
        f->peak_rss = t.peak_rss;
        struct pressure_worst pw;
        pressure_worst_memory(sampler_pressure(sv->sampler), &pw);
        if (pw.known && pw.avg60 >= PRESSURE_WARN_PCT) {
            f->pressure_high = true;
            f->pressure_avg60 = pw.avg60;
            f->pressure_at_ns = pw.at_ns > sv->t0 ? pw.at_ns - sv->t0 : 0;
            f->pressure_tree = pw.tree;
        }
    }
    if (sv->testlog) {
        f->tests_parsed = true;
        f->argv = (const char *const *)sv->o->argv;
    }
    f->profile_path = sv->stream && !sv->o->no_profile ? sv->profile_path : NULL;
    f->profile_is_stream = sv->stream && sv->finalizations == 0;
    if (sv->stream) {
        struct stream_health h;
        stream_health(sv->stream, &h);
        f->stream_lines_lost = h.lines_lost + h.lines_waiting;
        f->stream_error = h.error ? h.error : (f->stream_lines_lost ? sv->health_said.error : 0);
    }
}

/* The facts at a stop, for the reports written then (sinks.h): what resmon-run exits with is not
 * known yet (a timeout that takes a KILL exits 137). */
void run_facts_now(void *ctx, struct summary_facts *f)
{
    fill_facts(ctx, f, -1, now_ns());
}
