/* supervise.c — see supervise.h.
 *
 * THE RUN'S STATE MACHINE (one place: advance()). Events are handled as they come (a child
 * reaped, a signal, a deadline, output, a sample); advance() then moves the phase on:
 *
 *   RUNNING ──(stop: timeout, output timeout, stop request, parent death)──► STOPPING
 *   RUNNING, STOPPING ──(the command exited)──► LEFTOVERS  when --kill-leftovers and the tree
 *                                                          still has live members
 *                                           └─► DRAIN      otherwise
 *   LEFTOVERS ──(the tree is empty, or the sweep gave up)──► DRAIN
 *   DRAIN ──(both pipes drained: at their end, or empty now with nobody left to write)──► DONE
 *
 * STOPPING: the stop signal went to the command's process group (as GNU timeout sends it); KILL
 * to the group after --kill-after, or for a stop request to the whole tree after --grace.
 * LEFTOVERS: TERM to every member, KILL passes after --grace until none is alive (event-driven:
 * a pass follows each sign that members ended, never a sleep), giving up after KILL_GIVE_UP.
 * DRAIN: what the command wrote is in the pipes; all of it is passed on (a slow reader waits
 * through poll), to the pipes' end when nothing else holds them, else until they are empty now:
 * leftovers left alone may write later, and that is theirs.
 */
#include "run/supervise.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>

#include "base/jsonw.h"
#include "base/linebuf.h"
#include "base/log.h"
#include "base/outfile.h"
#include "base/parse.h"
#include "base/sanitize.h"
#include "base/util.h"
#include "observe/forensics.h"
#include "observe/leaks.h"
#include "observe/limits.h"
#include "observe/pressure.h"
#include "observe/procfs.h"
#include "observe/sampler.h"
#include "observe/stopdump.h"
#include "profile/profile.h"
#include "profile/runmarks.h"
#include "profile/stream.h"
#include "profile/usermark.h"
#include "report/cimeta.h"
#include "report/ghactions.h"
#include "report/sinks.h"
#include "report/summary.h"
#include "observe/contain.h"
#include "run/passthru.h"
#include "run/sandbox.h"
#include "run/spawn.h"
#include "run/watchdog.h"
#include "testlog/testlog.h"

/* Lines longer than this reach the parsers as their first MAX_LINE bytes (pass-through is never
 * capped): mozlog suite_start lines of a few MiB exist, 4 MiB keeps them whole. */
#define MAX_LINE (4u << 20)

/* The same stop signal again within this is the same request (GNU timeout, and a CI runner that
 * signals both a process and its group, deliver it twice). */
#define SAME_REQUEST_NS (1000 * NSEC_PER_MSEC)
/* How long KILL passes over leftovers go on before the survivors are reported (a process stuck
 * in the kernel, D state, cannot die). */
#define KILL_GIVE_UP (5 * NSEC_PER_SEC)
/* Members without a descriptor to wait on (contain_watch): looked at again this often. */
#define WATCH_FALLBACK (50 * NSEC_PER_MSEC)
/* Leftovers at most watched through a descriptor each; beyond, the fallback. */
#define WATCH_MAX 64

enum phase {
    PH_RUNNING,   /* the command runs, nothing asked it to stop */
    PH_STOPPING,  /* the stop signal was sent; waiting for the command */
    PH_LEFTOVERS, /* the command is gone; stopping what it left behind */
    PH_DRAIN,     /* everything is gone or left alone; passing the last output on */
    PH_DONE,
};

enum stop_cause {
    CAUSE_NONE,
    CAUSE_TIMEOUT,
    CAUSE_OUTPUT_TIMEOUT,
    CAUSE_SIGNAL,
    CAUSE_PARENT,
    CAUSE_MEMORY, /* a resource limit (limits.h) */
    CAUSE_CPU,
    CAUSE_TASKS,
};

/* The run's own limits (a timeout, an output timeout, a resource limit) stop it as GNU timeout
 * does: exit 124 unless --preserve-status, the KILL where the signal went. */
static bool own_limit(enum stop_cause c)
{
    return c == CAUSE_TIMEOUT || c == CAUSE_OUTPUT_TIMEOUT || c == CAUSE_MEMORY || c == CAUSE_CPU ||
           c == CAUSE_TASKS;
}

static const char *cause_name(enum stop_cause c)
{
    switch (c) {
    case CAUSE_TIMEOUT: return "timeout";
    case CAUSE_OUTPUT_TIMEOUT: return "output-timeout";
    case CAUSE_SIGNAL: return "signal";
    case CAUSE_PARENT: return "parent-died";
    case CAUSE_MEMORY: return "memory";
    case CAUSE_CPU: return "cpu";
    case CAUSE_TASKS: return "tasks";
    default: return "none";
    }
}

struct sv {
    const struct options *o;
    uint64_t t0;
    double wall0;
    const struct marker_sink *sink; /* where markers go (the stream), NULL without a profile */
    struct stream *stream;
    struct profile_conv *conv; /* reads the stream as it grows (NULL: finalize reads it all) */
    struct sinks *sinks;       /* every report (sinks.h) */
    uint64_t conv_lines;       /* stream lines when conv last caught up */
    int profile_lock;          /* the last profile renamed over the path, kept locked */
    struct stream_health health_said; /* stream trouble already said on stderr */
    uint64_t tree_cpu;         /* probe_tree_cpu's reading for the current chunk of output */
    bool tree_cpu_valid;
    uint64_t tree_rss;         /* probe_tree_rss's, likewise */
    bool tree_rss_valid;
    char *profile_path;
    char *dump_path;            /* the dump's text file, once written */
    unsigned finalizations;
    struct sampler *sampler;
    int timerfd;
    struct testlog *testlog;
    struct linebuf *lb[2];
    struct usermark *um;
    struct summary_facts *sum;  /* the reports' facts (sinks_facts), NULL with --quiet (and no CI) */
    bool open_error_said;       /* open_stream said why it failed */
    uint64_t last_sample_ns, last_sample_cpu;
    int sigfd, parentfd;
    struct contain *contain;
    struct limits *limits;
    char limit_text[160];       /* the limit reached and the figure (CAUSE_MEMORY/CPU/TASKS) */
    uint64_t deadline_cpu;      /* when to read the tree's CPU time against --cpu-limit */
    unsigned ncpu;
    bool root_oom_killed;       /* the kernel's OOM killer killed the command itself */
    struct watchdog *watchdog;
    pid_t pid;
    bool exited;
    int wstatus;
    uint64_t exit_ns;
    struct passthru *pt[2];     /* the command's stdout and stderr (NULL: not interposed) */
    uint64_t last_output_ns;
    uint64_t deadline_timeout, deadline_output, deadline_kill, deadline_grace;
    enum phase phase;
    enum stop_cause cause;
    int stop_signal;
    int received_signal;        /* the stop request's signal (CAUSE_SIGNAL) */
    int last_request;           /* the last stop signal received, and when */
    uint64_t last_request_ns;
    bool exec_failed;
    uint64_t stop_ns;
    bool timed_out;             /* own_limit(cause): GNU timeout's semantics */
    bool kill_sent;
    bool tty_given;
    size_t leftovers;           /* processes found alive after the command exited */
    /* the sweep of leftovers: KILL passes after the grace, until none is alive */
    bool sweeping, sweep_gave_up;
    uint64_t sweep_give_up;
    bool watch_complete;        /* every member has a descriptor in the poll set */
    struct jsonw *capture;      /* a runtime's dump being kept: what the command prints */
    int dump_nout[2];           /* the poll entries of each output while a runtime dumps */
    struct leaks leaks;         /* processes tests left behind, with the test: who started a leftover */
};

/* ---- output ---------------------------------------------------------------------------------- */

static void on_line_stdout(void *ctx, const char *line, size_t len, bool truncated, uint64_t arrival_ns)
{
    struct sv *sv = ctx;
    testlog_line(sv->testlog, 1, line, len, truncated, arrival_ns);
}

static void on_line_stderr(void *ctx, const char *line, size_t len, bool truncated, uint64_t arrival_ns)
{
    struct sv *sv = ctx;
    testlog_line(sv->testlog, 2, line, len, truncated, arrival_ns);
}

/* Read a chunk of stream i (0 stdout, 1 stderr), pass it on, then let the parsers see it. */
static enum passthru_read read_output(struct sv *sv, int i)
{
    /* Passing output on may block: what the last chunk produced goes to the stream first. */
    stream_flush(sv->stream);
    sv->tree_cpu_valid = sv->tree_rss_valid = false;
    const char *buf;
    size_t n;
    enum passthru_read r = passthru_read(sv->pt[i], &buf, &n, &sv->last_output_ns);
    if (r != PT_DATA)
        return r;
    if (sv->capture && sv->capture->len < STOPDUMP_KEEP_MAX)
        jsonw_append(sv->capture, buf, MIN(n, STOPDUMP_KEEP_MAX - sv->capture->len));
    if (sv->testlog) {
        struct linebuf *lb = sv->lb[i];
        linebuf_feed(lb, buf, n, sv->last_output_ns, i == 0 ? on_line_stdout : on_line_stderr, sv);
        size_t plen;
        uint64_t parr;
        const char *head = linebuf_pending(lb, &plen, &parr);
        if (head && parr == sv->last_output_ns) /* a line that began now, a test's name perhaps */
            testlog_line_begins(sv->testlog, head, plen, parr);
        if (head)
            testlog_line_tail(sv->testlog, i + 1, head, plen, parr);
    }
    return PT_DATA;
}

/* Is there output the command wrote that we have not read, or not passed on yet? Reads what is
 * there (so a supervisor stopped for a while does not take the command for silent). */
static bool output_waiting(struct sv *sv)
{
    bool any = false;
    for (int i = 0; i < 2; i++) {
        if (!sv->pt[i])
            continue;
        if (passthru_pending(sv->pt[i]))
            any = true;
        else if (read_output(sv, i) == PT_DATA)
            any = true;
    }
    return any;
}

/* ---- resmon-run's own markers ---------------------------------------------------------------- */

static void emit(struct sv *sv, const char *name, uint64_t start, uint64_t end, int cat, struct jsonw *w)
{
    if (!jsonw_failed(w))
        marker_emit(sv->sink, name, start, end, cat, w->buf, w->len);
}

/* The live members of the tree with their command lines (at most 256), for the stop's marker
 * and the summary. cmds holds the command lines; free both. */
static size_t live_processes(struct sv *sv, struct runmarks_process **ret, char **ret_cmds)
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

struct open_list {
    char **ids;
    size_t n, cap;
};

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

static enum runmarks_reason reason_of(enum stop_cause c)
{
    switch (c) {
    case CAUSE_TIMEOUT: return RUN_TIMEOUT;
    case CAUSE_OUTPUT_TIMEOUT: return RUN_OUTPUT_TIMEOUT;
    case CAUSE_SIGNAL: return RUN_STOPPED;
    case CAUSE_PARENT: return RUN_PARENT_DIED;
    case CAUSE_MEMORY: return RUN_MEMORY;
    case CAUSE_CPU: return RUN_CPU;
    case CAUSE_TASKS: return RUN_TASKS;
    default: return RUN_EXIT;
    }
}

/* The record of a stop: why, which signal, the tests still open and the processes still alive
 * (for the profile and the summary). */
static void emit_timeout_marker(struct sv *sv, uint64_t now)
{
    struct open_list open = {0};
    if (sv->testlog)
        testlog_each_open(sv->testlog, add_open_test, &open);
    struct runmarks_process *procs;
    char *cmds;
    size_t nprocs = live_processes(sv, &procs, &cmds);
    if (sv->sum) {
        for (size_t i = 0; i < open.n; i++)
            summary_add_open(sv->sum, open.ids[i], strlen(open.ids[i]));
        for (size_t i = 0; i < nprocs; i++)
            summary_add_alive(sv->sum, (int)procs[i].pid, procs[i].cmd, procs[i].cmd_len);
    }
    char figure[64];
    limits_figure(sv->limits, sv->cause == CAUSE_MEMORY ? LIMIT_MEMORY : sv->cause == CAUSE_CPU ? LIMIT_CPU
                                : sv->cause == CAUSE_TASKS ? LIMIT_TASKS : LIMIT_NONE,
                  figure, sizeof figure);
    struct runmarks_stop st = {
        .reason = reason_of(sv->cause),
        .signal = sv->stop_signal,
        .received = sv->cause == CAUSE_SIGNAL ? sv->received_signal : 0,
        .limit = sv->limit_text[0] ? sv->limit_text : NULL,
        .figure = figure,
        .after_ns = sv->cause == CAUSE_TIMEOUT ? sv->o->timeout_ns
                    : sv->cause == CAUSE_OUTPUT_TIMEOUT ? sv->o->output_timeout_ns : 0,
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
static void emit_kill_step(struct sv *sv, int sig, unsigned targets, const char *why)
{
    if (!sv->sink || !targets)
        return;
    struct jsonw w;
    jsonw_init(&w);
    runmarks_kill_payload(&w, sig, why, targets);
    emit(sv, "kill", now_ns(), MARKER_INSTANT, CAT_TASKS, &w);
    jsonw_release(&w);
}

/* ---- the stream and the profile ------------------------------------------------------------- */

/* Say at once when the stream cannot be written (disk full, a quota, the file-size limit), and
 * when it can again; the summary says what was lost. */
static void say_stream_health(struct sv *sv)
{
    if (!sv->stream)
        return;
    struct stream_health h;
    stream_health(sv->stream, &h);
    struct stream_health *was = &sv->health_said;
    if (h.error && !was->error)
        log_errno(h.error, "cannot write the profile stream '%s'; %llu line%s kept in memory and retried", sv->profile_path,
                  (unsigned long long)h.lines_waiting, h.lines_waiting == 1 ? "" : "s");
    else if (!h.error && was->error && !h.lines_waiting)
        log_msg("the profile stream '%s' is written again%s", sv->profile_path,
                h.lines_lost ? "" : ": nothing was lost");
    if (h.lines_lost > was->lines_lost)
        log_warn("%llu line%s of the profile stream '%s' lost so far (more than %u MiB could not be written)",
                 (unsigned long long)h.lines_lost, h.lines_lost == 1 ? "" : "s", sv->profile_path,
                 STREAM_BACKLOG_MAX >> 20);
    *was = h;
}

static void feed_follower(void *ctx, const char *buf, size_t len) { (void)profile_conv_feed(ctx, buf, len); }

/* Let the converter read what the stream gained, so that a stop finds little left to read: every
 * FOLLOW_LINES lines (a few hundred KiB), and at each sample when anything was written. */
#define FOLLOW_LINES 1024
static void follow_stream(struct sv *sv, bool any)
{
    stream_flush(sv->stream);
    say_stream_health(sv);
    if (!sv->conv)
        return;
    uint64_t lines = stream_lines(sv->stream);
    if (lines == sv->conv_lines || (!any && lines - sv->conv_lines < FOLLOW_LINES))
        return;
    sv->conv_lines = lines;
    sinks_follow(sv->sinks);
    int r = profile_conv_update(sv->conv);
    if (r < 0) {
        if (sv->o->verbose)
            log_errno(r, "following the stream; the profile will be converted from the whole stream");
        stream_set_tap(sv->stream, NULL, NULL);
        profile_conv_free(sv->conv);
        sv->conv = NULL;
    }
}

/* Tests still open at the end ran out of time (a timeout, the CPU limit), or were cut short. */
static bool open_status_timeout(const struct sv *sv)
{
    return sv->cause == CAUSE_TIMEOUT || sv->cause == CAUSE_OUTPUT_TIMEOUT || sv->cause == CAUSE_CPU;
}

/* Write the stream and rename a complete profile over it, and the reports with it. Called BEFORE
 * any child is signalled on a stop, and again at the very end. */
static void profile_checkpoint(struct sv *sv, const char *why)
{
    struct profile_end end = {0};
    if (sv->stream) {
        uint64_t now = now_ns();
        struct jsonw w;
        jsonw_init(&w);
        stream_flush(sv->stream); /* held lines count */
        struct stream_health h;
        stream_health(sv->stream, &h);
        runmarks_finalize_payload(&w, why, stream_lines(sv->stream), &h);
        emit(sv, "finalize", now, MARKER_INSTANT, CAT_TASKS, &w);
        jsonw_release(&w);
        end = (struct profile_end){stream_ms(sv->stream, now), open_status_timeout(sv) ? "TIMEOUT" : "INCOMPLETE",
                                   sv->o->gzip, &sv->profile_lock};
        follow_stream(sv, true);
    }
    /* Every report (the files only with a stream); at a stop, GitHub's outputs too. */
    sinks_checkpoint(sv->sinks, end.end_ms, sv->phase == PH_STOPPING);
    if (!sv->stream || sv->o->no_profile)
        return;
    struct profile_stats st;
    int r = sv->conv ? profile_conv_finalize(sv->conv, AT_FDCWD, sv->profile_path, &end, &st)
                     : profile_finalize(stream_fd(sv->stream), AT_FDCWD, sv->profile_path, &end, &st);
    if (r < 0) {
        /* The stream is what stays: make it durable. (After a rename it is no file's content any
         * more, and the profile was fsynced: no need to wait for the disk twice.) */
        stream_sync(sv->stream);
        log_msg("cannot write the profile '%s' (the stream stays in place): %s", sv->profile_path,
                outfile_why(r, AT_FDCWD, sv->profile_path));
    } else {
        if (st.left_out && !sv->finalizations)
            log_warn("%llu markers past the limit of %llu were left out of the profile (--max-markers)",
                     (unsigned long long)st.left_out, (unsigned long long)sv->o->max_markers);
        sv->finalizations++;
    }
}

/* ---- stopping -------------------------------------------------------------------------------- */

/* The timeout or stop signal, and the KILL after it: to the command's process group (only the
 * command with --foreground), as GNU timeout sends them; CONT follows, so a stopped process
 * cannot keep the signal pending. */
static void signal_command(struct sv *sv, int sig, const char *why)
{
    if (sv->o->verbose) {
        char name[32];
        log_msg("sending signal %s to command '%s'", signal_name(sig, name, sizeof name), sv->o->argv[0]);
    }
    if (sig == SIGKILL)
        sv->kill_sent = true;
    unsigned targets = 0;
    if (sv->o->foreground) {
        if (!sv->exited && kill(sv->pid, sig) == 0)
            targets = 1;
        if (sig != SIGKILL && sig != SIGCONT && sig != 0 && !sv->exited)
            kill(sv->pid, SIGCONT);
    } else {
        /* The group (the command's pid is its id), and the command alone only when it has left
         * the group (setpgid): each process gets the signal once. A second one, arriving while the
         * first one's handler runs, runs the handler again (a shell's trap does), and a handler
         * that prints its results would print them twice. Asked after the group's signal, so a
         * command leaving its group at that moment may get it twice, never not at all. */
        int n = contain_signal_group(sv->contain, sig);
        targets = n > 0 ? (unsigned)n : 0;
        if (!sv->exited && getpgid(sv->pid) != sv->pid && kill(sv->pid, sig) == 0) {
            targets = MAX(targets, 1u);
            if (sig != SIGKILL && sig != SIGCONT && sig != 0)
                kill(sv->pid, SIGCONT);
        }
    }
    emit_kill_step(sv, sig, targets, why);
}

/* KILL passes over the whole tree, until none is alive or KILL_GIVE_UP has passed. */
static void sweep_start(struct sv *sv, const char *why)
{
    sv->kill_sent = true;
    if (!sv->sweeping) {
        sv->sweeping = true;
        sv->sweep_give_up = sat_add_u64(now_ns(), KILL_GIVE_UP);
        if (sv->o->verbose)
            log_msg("killing what is left of the process tree");
    }
    size_t alive = contain_kill_pass(sv->contain);
    emit_kill_step(sv, SIGKILL, (unsigned)alive, why);
}

/* A later pass, after members ended (or the fallback's while): only when some are still alive. */
static void sweep_again(struct sv *sv)
{
    if (!sv->sweeping || contain_empty(sv->contain))
        return;
    if (now_ns() >= sv->sweep_give_up) {
        pid_t *pids = NULL;
        size_t n = 0;
        if (contain_members(sv->contain, &pids, &n) == 0 && n)
            log_warn("%zu process%s of the tree would not die (stuck in the kernel?); left behind", n,
                     n == 1 ? "" : "es");
        free(pids);
        sv->sweeping = false;
        sv->sweep_gave_up = true;
        return;
    }
    contain_kill_pass(sv->contain);
}

/* ---- the dump of the tree at a stop (stopdump.h) -------------------------------------------- */

/* The text file of the dump: --dump-file, else beside the profile; NULL: none. */
static char *dump_path_for(struct sv *sv)
{
    if (sv->o->dump_file)
        return strdup(sv->o->dump_file);
    char *p = NULL;
    if (sv->stream && !sv->o->no_profile && asprintf(&p, "%s.stacks.txt", sv->profile_path) < 0)
        p = NULL;
    return p;
}

/* The command's output while a runtime dumps (stopdump_output): read, passed on and parsed as
 * in the loop, and kept. */
static int dump_out_events(void *ctx, struct pollfd *pfd)
{
    struct sv *sv = ctx;
    int n = 0;
    for (int i = 0; i < 2; i++)
        if (sv->pt[i])
            n += sv->dump_nout[i] = passthru_events(sv->pt[i], &pfd[n]);
    return n;
}

static void dump_out_handle(void *ctx, const struct pollfd *pfd, struct jsonw *keep)
{
    struct sv *sv = ctx;
    sv->capture = keep;
    for (int i = 0, at = 0; i < 2; i++)
        if (sv->pt[i]) {
            if (passthru_handle(sv->pt[i], (struct pollfd *)&pfd[at], sv->dump_nout[i]))
                read_output(sv, i);
            at += sv->dump_nout[i];
        }
    sv->capture = NULL;
}

static void dump_out_left(void *ctx, struct jsonw *keep, uint64_t deadline)
{
    struct sv *sv = ctx;
    sv->capture = keep;
    for (int i = 0; i < 2; i++)
        while (sv->pt[i] && now_ns() < deadline && !passthru_pending(sv->pt[i]) && read_output(sv, i) == PT_DATA)
            ;
    sv->capture = NULL;
}

static void dump_out_flush(void *ctx) { stream_flush(((struct sv *)ctx)->stream); }
static double sv_stream_ms(void *stream, uint64_t ns) { return stream_ms(stream, ns); }
static const char *sv_test_at(void *testlog, uint64_t ns) { return testlog_open_at(testlog, ns); }

/* What every live process of the tree was doing, recorded after the stop's first finalization
 * and before its first signal: in the stream, the summary's lines, the text file. */
static void dump_tree(struct sv *sv, enum stop_cause cause)
{
    struct stopdump_output out = {sv, sv->pt[0] || sv->pt[1], dump_out_flush, dump_out_events, dump_out_handle,
                                  dump_out_left};
    free(sv->dump_path);
    sv->dump_path = dump_path_for(sv);
    struct stopdump_config cfg = {
        .contain = sv->contain,
        .command = sv->pid,
        .budget_ns = sv->o->dump_budget_set ? sv->o->dump_budget_ns
                     : own_limit(cause)     ? CLI_DUMP_BUDGET_OWN_NS
                                            : CLI_DUMP_BUDGET_STOP_NS,
        .runtimes = sv->o->dump_runtimes,
        .output = &out,
        .sink = sv->sink,
        .ms_of = sv_stream_ms,
        .ms_ctx = sv->stream,
        .test_at = sv->testlog ? sv_test_at : NULL,
        .test_ctx = sv->testlog,
        .text_path = sv->dump_path,
    };
    struct stopdump d;
    if (stopdump_run(&cfg, &d) != 0)
        return;
    if (sv->sum)
        summary_add_dump(sv->sum, &d.rep, d.text_written ? sv->dump_path : NULL);
    if (sv->o->verbose && !sv->o->timeout_mode) /* -v there says only what GNU timeout says */
        log_msg("recorded %zu process%s of the tree in %.1f ms", d.rep.nprocs, d.rep.nprocs == 1 ? "" : "es",
                (double)(d.rep.end_ns - d.rep.start_ns) / 1e6);
    stopdump_free(&d);
}

static void stop(struct sv *sv, enum stop_cause cause, int sig)
{
    sv->tree_cpu_valid = sv->tree_rss_valid = false;
    uint64_t now = now_ns();
    if (sv->phase != PH_RUNNING) {
        /* Another stop request while stopping: the caller is out of patience — kill now. */
        if ((cause == CAUSE_SIGNAL || cause == CAUSE_PARENT) && sv->phase == PH_STOPPING && !sv->kill_sent) {
            if (sv->o->foreground)
                signal_command(sv, SIGKILL, "second stop request");
            else
                sweep_start(sv, "second stop request");
        }
        return;
    }
    sv->cause = cause;
    sv->timed_out = own_limit(cause);
    sv->stop_signal = sig;
    sv->stop_ns = now;
    sv->phase = PH_STOPPING;
    /* A line the command began and has not finished is what it is doing now (pytest -v prints a
     * test's node id, and its result and newline only when the test ends): the parsers take it
     * as a line, so the outputs written at the stop name that test. What the line gets after this
     * comes as a line of its own (pytest: the result, which ends the test). */
    if (sv->testlog)
        for (int i = 0; i < 2; i++)
            linebuf_flush(sv->lb[i], i == 0 ? on_line_stdout : on_line_stderr, sv);
    /* Record what was going on, and finalize first: a CI that follows its TERM with a KILL must
     * still find a complete profile. Only then is any child signalled. */
    emit_timeout_marker(sv, now);
    profile_checkpoint(sv, cause_name(cause));
    /* Then what the tree was doing, and a profile with it; still before any signal. */
    if (sv->o->dump) {
        dump_tree(sv, cause);
        profile_checkpoint(sv, "dump");
    }
    signal_command(sv, sig, cause_name(cause));
    if (sv->o->kill_after_ns)
        sv->deadline_kill = sat_add_u64(now, sv->o->kill_after_ns);
    else if (!sv->timed_out && sv->o->kill_leftovers)
        sv->deadline_kill = sat_add_u64(now, sv->o->grace_ns);
}

/* A stop signal from outside (supervise.h). */
static void stop_request(struct sv *sv, int sig)
{
    uint64_t now = now_ns();
    if (sig == sv->last_request && now - sv->last_request_ns < SAME_REQUEST_NS)
        return; /* the same request, delivered twice (to us and to our group) */
    sv->last_request = sig;
    sv->last_request_ns = now;
    if (sv->phase == PH_RUNNING)
        sv->received_signal = sig;
    stop(sv, CAUSE_SIGNAL, sig);
}

/* ---- samples, exits ------------------------------------------------------------------------- */

/* A limit reached (limits.h) stops the run like a timeout. cpu_ns: the tree's CPU time now.
 * Once the command has exited only the kernel's kill at the memory limit still counts (it may
 * have been the victim); what the last sample reads then is not a reason to stop a finished run. */
static void check_limits(struct sv *sv, uint64_t cpu_ns, bool kernel_kill)
{
    if (!sv->limits || sv->phase != PH_RUNNING || (sv->exited && !kernel_kill))
        return;
    static const enum stop_cause cause_of[] = {[LIMIT_MEMORY] = CAUSE_MEMORY, [LIMIT_CPU] = CAUSE_CPU,
                                               [LIMIT_TASKS] = CAUSE_TASKS};
    enum limit_kind k = limits_check_tree(sv->limits, sv->sampler, cpu_ns, sv->limit_text, sizeof sv->limit_text);
    if (k == LIMIT_NONE)
        return;
    if (sv->o->verbose)
        log_msg("%s limit reached: %s", limit_name(k), sv->limit_text);
    stop(sv, cause_of[k], sv->o->signal);
}

/* An OOM kill of a process of the tree: said (limits_say_oom) with the test it ran under, the
 * summary's line; the command itself as the victim is the run's end reason. */
static void record_oom(struct sv *sv, const struct sampler_killed *k)
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

/* Deaths by SIGKILL the sampler learned of: which were the OOM killer's. settle: decide the ones
 * still waiting too (at each sample, and at the end). */
static void check_kills(struct sv *sv, bool settle)
{
    struct sampler_killed k[16];
    size_t m = limits_oom_kills(sv->limits, sv->sampler, sv->kill_sent, settle, k, ARRAY_SIZE(k));
    for (size_t i = 0; i < m; i++)
        record_oom(sv, &k[i]);
    /* A kernel-enforced memory limit is reached when its OOM killer kills in the tree. */
    if (m && (limits_by_kernel(sv->limits) & CONTAIN_LIMIT_MEMORY))
        check_limits(sv, sampler_tree_cpu_ns(sv->sampler), true);
}

/* What follows every sample: open tests learn the tree's RSS; the summary's charts get a point;
 * the limits are checked. */
static void after_sample(struct sv *sv, uint64_t now)
{
    follow_stream(sv, true);
    uint64_t rss = sampler_tree_rss(sv->sampler);
    if (sv->testlog)
        testlog_tree_sample(sv->testlog, rss);
    if (sv->sum) {
        struct sampler_totals t;
        sampler_get_totals(sv->sampler, &t);
        if (now > sv->last_sample_ns) {
            uint64_t cpu = t.tree_cpu_ns > sv->last_sample_cpu ? t.tree_cpu_ns - sv->last_sample_cpu : 0;
            summary_series_add(&sv->sum->cpu, (double)cpu / (double)(now - sv->last_sample_ns));
            summary_series_add(&sv->sum->mem, (double)rss);
        }
        sv->last_sample_ns = now;
        sv->last_sample_cpu = t.tree_cpu_ns;
    }
    check_kills(sv, true);
    if (sv->limits) {
        struct sampler_totals t;
        sampler_get_totals(sv->sampler, &t);
        check_limits(sv, t.tree_cpu_ns, false);
    }
}

/* The processes a test leaves behind (testlog_probe.leaked; leaks.h). */
static size_t probe_leaked(void *ctx, const char *test, uint64_t since_ns, char *cmds, size_t cap)
{
    struct sv *sv = ctx;
    return leaks_probe(&sv->leaks, sv->sampler, sv->pid, test, since_ns, cmds, cap);
}

static void on_command_exit(struct sv *sv)
{
    sv->deadline_timeout = sv->deadline_output = sv->deadline_kill = sv->deadline_cpu = NS_INFINITY;
    /* The last sample is taken when the command ends (none when sampling is off: -i 0). */
    if (sv->sampler && sv->o->interval_ns) {
        sampler_sample(sv->sampler, sv->exit_ns, 1, true);
        after_sample(sv, sv->exit_ns);
    }
    if (sv->timerfd >= 0) {
        close(sv->timerfd);
        sv->timerfd = -1;
    }
    if (sv->sum && !contain_empty(sv->contain)) {
        /* What the run ends with, and which test left each behind. */
        struct runmarks_process *procs;
        char *cmds;
        size_t n = live_processes(sv, &procs, &cmds);
        for (size_t i = 0; i < n; i++)
            summary_add_left(sv->sum, (int)procs[i].pid, procs[i].cmd, procs[i].cmd_len,
                             leaks_test_of(&sv->leaks, procs[i].pid));
        free(procs);
        free(cmds);
    }
    if (!sv->o->kill_leftovers || sv->o->foreground || contain_empty(sv->contain)) {
        sv->phase = PH_DRAIN;
        return;
    }
    pid_t *pids = NULL;
    size_t n = 0;
    if (contain_members(sv->contain, &pids, &n) == 0)
        sv->leftovers = n;
    free(pids);
    if (sv->o->verbose)
        log_msg("stopping %zu process%s left behind by '%s'", sv->leftovers, sv->leftovers == 1 ? "" : "es",
                sv->o->argv[0]);
    sv->phase = PH_LEFTOVERS;
    if (sv->sweeping) {
        sweep_again(sv); /* a stop request's KILL already runs */
        return;
    }
    int sent = contain_signal_all(sv->contain, SIGTERM);
    emit_kill_step(sv, SIGTERM, sent > 0 ? (unsigned)sent : 0, "leftovers");
    sv->deadline_grace = sat_add_u64(now_ns(), sv->o->grace_ns);
}

static void reap(struct sv *sv)
{
    for (;;) {
        int st;
        struct rusage ru;
        pid_t p = wait4(-1, &st, WNOHANG, &ru);
        if (p <= 0)
            break;
        uint64_t now = now_ns();
        /* A child that predates the command, or the watchdog: not the tree's. */
        if (contain_reaped(sv->contain, p))
            continue;
        if (sv->sampler)
            sampler_reaped(sv->sampler, p, st, &ru, now);
        if (p == sv->pid) {
            sv->exited = true;
            sv->wstatus = st;
            sv->exit_ns = now;
        }
    }
}

/* ---- the state machine ---------------------------------------------------------------------- */

/* Every pipe is passed on to its end, or (nobody left to write) until it is empty now. */
static bool drained(struct sv *sv)
{
    /* With leftovers left running, or a writer outside the tree, a pipe may never end: what is
     * in it when the tree is done is all that is ours. */
    bool nobody_left =
        !sv->o->kill_leftovers || sv->o->foreground || sv->sweep_gave_up || contain_empty(sv->contain);
    for (int i = 0; i < 2; i++) {
        struct passthru *p = sv->pt[i];
        if (!p)
            continue;
        while (!passthru_closed(p) && !passthru_pending(p)) {
            enum passthru_read r = read_output(sv, i);
            if (r == PT_EMPTY) {
                if (!nobody_left)
                    break;
                passthru_close(p);
            }
        }
        if (!passthru_closed(p) || passthru_pending(p))
            return false;
    }
    return true;
}

static void advance(struct sv *sv)
{
    /* A fork the kernel refused at --tasks-limit may end the command (sh: Cannot fork) before
     * any sample saw the refusal: the limit was still reached. */
    if (sv->exited && sv->phase == PH_RUNNING && sv->limits &&
        (limits_by_kernel(sv->limits) & CONTAIN_LIMIT_TASKS))
        check_limits(sv, sampler_tree_cpu_ns(sv->sampler), true);
    if (sv->exited && (sv->phase == PH_RUNNING || sv->phase == PH_STOPPING))
        on_command_exit(sv);
    if (sv->phase == PH_LEFTOVERS && (sv->sweep_gave_up || contain_empty(sv->contain)))
        sv->phase = PH_DRAIN;
    if (sv->phase == PH_DRAIN && drained(sv))
        sv->phase = PH_DONE;
}

static uint64_t next_deadline(struct sv *sv)
{
    uint64_t next = NS_INFINITY;
    if (sv->phase == PH_RUNNING) {
        next = MIN(next, sv->deadline_timeout);
        next = MIN(next, sv->deadline_output);
        next = MIN(next, sv->deadline_cpu);
    }
    if (sv->phase == PH_STOPPING)
        next = MIN(next, sv->deadline_kill);
    if (sv->phase == PH_LEFTOVERS && !sv->sweeping)
        next = MIN(next, sv->deadline_grace);
    if (sv->sweeping) {
        next = MIN(next, sv->sweep_give_up);
        if (!sv->watch_complete)
            next = MIN(next, sat_add_u64(now_ns(), WATCH_FALLBACK));
    } else if (sv->phase == PH_LEFTOVERS && !sv->watch_complete)
        next = MIN(next, sat_add_u64(now_ns(), WATCH_FALLBACK));
    return next;
}

static int poll_timeout_ms(struct sv *sv)
{
    uint64_t next = next_deadline(sv);
    if (next == NS_INFINITY)
        return -1;
    uint64_t now = now_ns();
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC;
    return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

static void check_deadlines(struct sv *sv)
{
    uint64_t now = now_ns();
    if (sv->phase == PH_RUNNING && now >= sv->deadline_timeout)
        stop(sv, CAUSE_TIMEOUT, sv->o->signal);
    if (sv->phase == PH_RUNNING && now >= sv->deadline_output) {
        /* Silence is decided on what the command wrote, not on when we last looked. */
        if (output_waiting(sv))
            sv->deadline_output = sat_add_u64(now_ns(), sv->o->output_timeout_ns);
        else {
            if (sv->o->verbose)
                log_msg("no output from '%s' for the output timeout", sv->o->argv[0]);
            stop(sv, CAUSE_OUTPUT_TIMEOUT, sv->o->signal);
        }
    }
    if (sv->phase == PH_RUNNING && now >= sv->deadline_cpu) {
        /* The earliest the tree could have used its CPU limit: read it fresh, then wait again
         * for the earliest it could with what is left. */
        sampler_rescan(sv->sampler, now);
        uint64_t cpu = sampler_tree_cpu_ns(sv->sampler);
        sv->deadline_cpu = limits_cpu_deadline(sv->limits, now, cpu, sv->ncpu);
        check_limits(sv, cpu, false);
    }
    if (sv->phase == PH_STOPPING && now >= sv->deadline_kill) {
        sv->deadline_kill = NS_INFINITY;
        /* A timeout's KILL goes where its signal went (GNU); a stop request's end is near
         * (the caller will kill us soon): the whole tree. */
        if (sv->timed_out || sv->o->foreground)
            signal_command(sv, SIGKILL, sv->o->kill_after_ns ? "kill-after" : "grace");
        else
            sweep_start(sv, sv->o->kill_after_ns ? "kill-after" : "grace");
    }
    if (sv->phase == PH_LEFTOVERS && !sv->sweeping && now >= sv->deadline_grace) {
        sv->deadline_grace = NS_INFINITY;
        sweep_start(sv, "leftovers");
    }
    if (sv->sweeping && now >= sv->sweep_give_up)
        sweep_again(sv);
}

/* ---- signals ---------------------------------------------------------------------------------- */

/* What stops the run (supervise.h): every signal whose default would end resmon-run and which
 * can be caught, but ALRM (time out now), the program-error signals (SEGV, BUS, FPE, ILL, TRAP,
 * ABRT, SYS: resmon-run's own faults, left to kill it) and XFSZ (ignored: a write past the
 * file-size limit then fails with EFBIG, and is treated as a full disk). */
static const int stop_signals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2,
                                   SIGXCPU, SIGVTALRM, SIGPROF, SIGPOLL, SIGPWR, SIGSTKFLT};

static bool is_stop_signal(int sig)
{
    for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
        if (stop_signals[i] == sig)
            return true;
    return sig >= SIGRTMIN && sig <= SIGRTMAX;
}

static int setup_signals(struct sv *sv, sigset_t *ret_orig_mask, bool *ret_chld_ignored, bool *ret_xfsz_ignored)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGALRM);
    for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
        sigaddset(&mask, stop_signals[i]);
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
        sigaddset(&mask, s);
    /* A write to a closed downstream must come back as EPIPE, not kill us; the command gets the
     * caller's mask back before exec. */
    sigaddset(&mask, SIGPIPE);
    if (sigprocmask(SIG_BLOCK, &mask, ret_orig_mask) < 0)
        return -errno;
    /* An ignored SIGCHLD would make the kernel reap our children before we learn their status. */
    struct sigaction sa;
    *ret_chld_ignored = sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
    if (*ret_chld_ignored)
        signal(SIGCHLD, SIG_DFL);
    *ret_xfsz_ignored = sigaction(SIGXFSZ, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
    signal(SIGXFSZ, SIG_IGN);
    sigdelset(&mask, SIGPIPE);
    sv->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    return sv->sigfd < 0 ? -errno : 0;
}

static void handle_signals(struct sv *sv)
{
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(sv->sigfd, &si, sizeof si);
        if (n != (ssize_t)sizeof si)
            break;
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD)
            reap(sv);
        else if (sig == SIGALRM)
            stop(sv, CAUSE_TIMEOUT, sv->o->signal);
        else if (is_stop_signal(sig))
            stop_request(sv, sig);
    }
}

/* The death of our parent is a stop request (the CI runner went away). A pidfd becomes readable
 * when the process exits; checked against the pid read before, to close the race. */
static void watch_parent(struct sv *sv)
{
    pid_t pp = getppid();
    sv->parentfd = -1;
    if (pp <= 1)
        return; /* PID 1 of a namespace (0) or already orphaned to init: nothing to watch */
    int fd = (int)syscall(SYS_pidfd_open, pp, 0);
    if (fd < 0)
        return;
    if (getppid() != pp) {
        close(fd);
        sv->parentfd = -2; /* died already: handled as soon as the loop starts */
        return;
    }
    sv->parentfd = fd;
}

/* ---- the result ------------------------------------------------------------------------------ */

static void compute_result(struct sv *sv, struct supervise_result *ret)
{
    int status = sv->wstatus;
    bool preserve = sv->o->preserve_status;
    ret->raise_signal = 0;
    if (WIFEXITED(status))
        ret->exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (WCOREDUMP(status))
            log_msg("the monitored command dumped core");
        if (!sv->timed_out)
            ret->raise_signal = sig;
        /* KILL had to be sent: let callers tell a forced kill from a clean timeout (GNU: any
         * KILL after a timeout; after a resource limit, only ours - the kernel's OOM kill at the
         * memory limit is the limit). */
        bool limit = sv->cause == CAUSE_MEMORY || sv->cause == CAUSE_CPU || sv->cause == CAUSE_TASKS;
        if (sv->timed_out && sig == SIGKILL && (!limit || sv->kill_sent))
            preserve = true;
        ret->exit_status = 128 + sig;
    } else
        ret->exit_status = EXIT_CANCELED;
    if (sv->timed_out && !preserve)
        ret->exit_status = EXIT_TIMEDOUT;
}

/* The tree's RSS at a test's start and end: read at most every 10 ms (a dense log starts and
 * ends thousands of tests a second), once per chunk of output. */
#define RSS_MAX_AGE (10 * NSEC_PER_MSEC)
static uint64_t probe_tree_rss(void *ctx)
{
    struct sv *sv = ctx;
    if (!sv->tree_rss_valid) {
        sv->tree_rss = sampler_tree_rss_now(sv->sampler, now_ns(), RSS_MAX_AGE);
        sv->tree_rss_valid = true;
    }
    return sv->tree_rss;
}

/* The tree's CPU time for test and phase markers. Every line of one chunk of output arrived at
 * the same instant (its read), so one reading per chunk serves them all: a chunk that starts and
 * ends a thousand tests costs one cpu.stat read, not two thousand. */
static uint64_t probe_tree_cpu(void *ctx)
{
    struct sv *sv = ctx;
    if (!sv->tree_cpu_valid) {
        sv->tree_cpu = sampler_tree_cpu_ns(sv->sampler);
        sv->tree_cpu_valid = true;
    }
    return sv->tree_cpu;
}

static void command_facts(struct sv *sv, struct runmarks_command *c)
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
    else if (sv->cause != CAUSE_NONE)
        c->reason = reason_of(sv->cause);
    else if (sv->root_oom_killed)
        c->reason = RUN_OOM_KILL;
    else
        c->reason = WIFSIGNALED(sv->wstatus) ? RUN_SIGNAL : RUN_EXIT;
    c->stop_signal = sv->cause == CAUSE_SIGNAL ? sv->received_signal : sv->stop_signal;
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
static void open_command_marker(struct sv *sv)
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

static void emit_command_marker(struct sv *sv)
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

/* The run is over: close what the parsers and the command's records left open, end the process
 * markers, record the command. */
static void end_of_run(struct sv *sv)
{
    sv->tree_cpu_valid = sv->tree_rss_valid = false;
    uint64_t now = now_ns();
    if (sv->testlog) {
        for (int i = 0; i < 2; i++)
            linebuf_flush(sv->lb[i], i == 0 ? on_line_stdout : on_line_stderr, sv);
        testlog_finish(sv->testlog, now, open_status_timeout(sv));
    }
    if (sv->um) {
        usermark_drain(sv->um, now);
        usermark_finish(sv->um, now);
    }
    if (sv->sampler)
        sampler_finish(sv->sampler, now);
    check_kills(sv, true);
    emit_command_marker(sv);
    if (sv->o->verbose && !sv->o->timeout_mode) {
        struct runmarks_command c;
        command_facts(sv, &c);
        log_msg("the run ended: %s%s%s", runmarks_reason_name(c.reason), sv->limit_text[0] ? " - " : "",
                sv->limit_text);
    }
}

/* ---- setting up ------------------------------------------------------------------------------ */

/* Physical cores of the machine (meta.physicalCPUs); 0 when /proc/cpuinfo does not say. */
static int physical_cpus(void)
{
    char *buf = malloc(1 << 20);
    if (!buf)
        return 0;
    ssize_t n = read_file_at(AT_FDCWD, "/proc/cpuinfo", buf, 1 << 20);
    int count = n > 0 ? procfs_count_cores(buf, (size_t)n) : 0;
    free(buf);
    return count;
}

/* The profile's path: -o, else $MOZ_UPLOAD_DIR/profile_resource-usage.json (where Mozilla's CI
 * collects artifacts), else resmon-profile.json here. */
static char *profile_path_for(const struct options *o)
{
    if (o->no_profile) {
        /* the stream the reports are built from, and no profile: a file of our own, removed at
         * the end */
        const char *tmp = getenv("TMPDIR");
        char *p;
        if (asprintf(&p, "%s/resmon-stream.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
            return NULL;
        int fd = mkstemp(p);
        if (fd < 0) {
            log_errno(-errno, "cannot create a temporary file for the stream the reports are built from ('%s')", p);
            free(p);
            return NULL;
        }
        close(fd);
        return p;
    }
    if (o->output)
        return strdup(o->output);
    const char *dir = getenv("MOZ_UPLOAD_DIR");
    if (dir && *dir) {
        char *p;
        if (asprintf(&p, "%s/profile_resource-usage.json", dir) < 0)
            return NULL;
        return p;
    }
    return strdup("resmon-profile.json");
}

/* $MOZ_UPLOAD_DIR made where it is missing, with its parents, as mozharness makes it before a
 * job's steps: what is written there is the job's artifacts. 0 or -errno (said). */
static int make_upload_dir(const char *dir)
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

static int open_stream(struct sv *sv)
{
    const struct options *o = sv->o;
    sv->profile_path = profile_path_for(o);
    if (!sv->profile_path)
        return -ENOMEM;
    const char *upload = getenv("MOZ_UPLOAD_DIR");
    int ur;
    if (upload && *upload && (!o->output || sinks_perfherder_dir()) &&
        (ur = make_upload_dir(upload)) < 0) {
        sv->open_error_said = true;
        return ur;
    }
    /* Extra metadata: the CI's facts, then --meta (last wins). */
    struct cimeta ci;
    cimeta_collect(&ci);
    const char *keys[64], *values[64];
    size_t n = 0;
    for (size_t i = 0; i < ci.n; i++)
        keys[n] = ci.keys[i], values[n++] = ci.values[i];
    keys[n] = "containment", values[n++] = contain_tier_name(contain_tier(sv->contain));
    keys[n] = "resmonVersion", values[n++] = PACKAGE_VERSION;
    for (size_t i = 0; i < o->n_meta && n < ARRAY_SIZE(keys); i++)
        keys[n] = o->meta[i].key, values[n++] = o->meta[i].value;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    int phys = physical_cpus();
    struct stream_meta meta = {
        .product = o->product,
        .interval_ms = (double)o->interval_ns / 1e6,
        .start_wall_ms = sv->wall0,
        .t0_ns = sv->t0,
        .logical_cpus = ncpu > 0 ? (int)ncpu : 1,
        .physical_cpus = phys > 0 ? phys : (ncpu > 0 ? (int)ncpu : 1),
        .main_memory = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0,
        .max_markers = o->max_markers,
        .extra_keys = keys,
        .extra_values = values,
        .n_extra = n,
    };
    int r = stream_open(AT_FDCWD, sv->profile_path, &meta, o->fsync_interval_ns, &sv->stream);
    cimeta_release(&ci);
    if (r < 0)
        return r;
    sv->sink = stream_sink(sv->stream);
    /* The loop flushes before it waits (stream.h): one write per chunk of output, not per line. */
    stream_hold(sv->stream, true);
    /* Without a follower finalizing still works, it just reads the whole stream then. The
     * follower is handed what is written rather than reading it back. */
    if (o->no_profile || profile_conv_new(stream_fd(sv->stream), &sv->conv) < 0)
        sv->conv = NULL;
    else if (profile_conv_fed(sv->conv) == 0)
        stream_set_tap(sv->stream, feed_follower, sv->conv);
    return sinks_read_stream(sv->sinks, stream_fd(sv->stream));
}

/* What cannot be the profile's path, said plainly (stream.h's errors). */
static void say_open_error(struct sv *sv, int r)
{
    const char *path = sv->profile_path ? sv->profile_path : "?";
    if (sv->open_error_said)
        return;
    log_msg("cannot create the profile '%s': %s", path, outfile_why(r, AT_FDCWD, path));
}

/* Whether the command's output, as passed on, left a line unfinished in fd's file (either
 * stream: both may go to one file). */
static bool output_mid_line(const struct sv *sv, int fd)
{
    for (int i = 0; i < 2; i++)
        if (sv->pt[i] && passthru_mid_line(sv->pt[i], fd))
            return true;
    return false;
}

/* resmon-run wrote a newline to fd: the line is ended. */
static void output_line_ended(struct sv *sv, int fd)
{
    for (int i = 0; i < 2; i++)
        if (sv->pt[i] && passthru_mid_line(sv->pt[i], fd))
            passthru_line_ended(sv->pt[i]);
}

/* The summary's facts at end_ns, when resmon-run exits with exit_status (-1: not known yet). The
 * test counts are added to f: fill a copy of sv->sum to fill it again. */
static void fill_facts(struct sv *sv, struct summary_facts *f, int exit_status, uint64_t end_ns)
{
    f->program = log_program();
    f->command = sv->o->argv[0];
    f->kill_sent = sv->kill_sent;
    f->exit_status = exit_status;
    f->wall_ns = end_ns > sv->t0 ? end_ns - sv->t0 : 0;
    int st = sv->wstatus;
    switch (sv->cause) {
    case CAUSE_TIMEOUT:
        f->end = SUMMARY_TIMEOUT;
        f->signal = sv->stop_signal;
        f->limit_ns = sv->stop_ns - sv->t0;
        break;
    case CAUSE_OUTPUT_TIMEOUT:
        f->end = SUMMARY_OUTPUT_TIMEOUT;
        f->signal = sv->stop_signal;
        f->limit_ns = sv->o->output_timeout_ns;
        break;
    case CAUSE_SIGNAL: f->end = SUMMARY_STOP_REQUEST, f->signal = sv->stop_signal; break;
    case CAUSE_PARENT: f->end = SUMMARY_PARENT_DIED, f->signal = sv->stop_signal; break;
    case CAUSE_MEMORY:
    case CAUSE_CPU:
    case CAUSE_TASKS:
        f->end = SUMMARY_LIMIT;
        f->signal = sv->stop_signal;
        f->limit_name = cause_name(sv->cause);
        f->limit_text = sv->limit_text;
        break;
    default:
        if (sv->root_oom_killed)
            f->end = SUMMARY_OOM_KILLED;
        else if (WIFSIGNALED(st))
            f->end = SUMMARY_SIGNALED, f->signal = WTERMSIG(st);
        else
            f->end = SUMMARY_EXITED, f->exit_code = WEXITSTATUS(st);
    }
    if (sv->sampler) {
        struct sampler_totals t;
        sampler_get_totals(sv->sampler, &t);
        f->have_cpu = true;
        f->tree_cpu_ns = t.tree_cpu_ns;
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
        struct testlog_stats ts;
        testlog_get_stats(sv->testlog, &ts);
        for (int i = 0; i < (int)ARRAY_SIZE(ts.by_status); i++)
            if (ts.by_status[i] && testlog_status_name(i))
                summary_add_status(f, testlog_status_name(i), ts.by_status[i]);
        const struct testlog_result *list;
        size_t n = testlog_unexpected(sv->testlog, &list);
        for (size_t i = 0; i < n; i++)
            summary_add_unexpected(f, list[i].test, strlen(list[i].test), list[i].status,
                                   list[i].message, list[i].duration_ns);
        f->unexpected_total = ts.unexpected;
        f->leaked = ts.leaked;
        f->leaking_tests = ts.leaking_tests;
        n = testlog_slowest(sv->testlog, &list);
        for (size_t i = 0; i < n; i++)
            summary_add_slowest(f, list[i].test, strlen(list[i].test), list[i].status, list[i].duration_ns);
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
static void facts_now(void *ctx, struct summary_facts *f)
{
    fill_facts(ctx, f, -1, now_ns());
}

static bool sinks_mid_line(void *ctx, int fd) { return output_mid_line(ctx, fd); }
static void sinks_line_ended(void *ctx, int fd) { output_line_ended(ctx, fd); }

static int start_timer(struct sv *sv)
{
    sv->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (sv->timerfd < 0)
        return -errno;
    /* Absolute ticks from t0: samples never drift, however long each one takes. */
    uint64_t first = sv->t0 + sv->o->interval_ns;
    struct itimerspec its = {
        .it_value = {(time_t)(first / NSEC_PER_SEC), (long)(first % NSEC_PER_SEC)},
        .it_interval = {(time_t)(sv->o->interval_ns / NSEC_PER_SEC), (long)(sv->o->interval_ns % NSEC_PER_SEC)},
    };
    if (timerfd_settime(sv->timerfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        return -errno;
    return 0;
}

static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    /* Larger pipes mean fewer wake-ups for chatty commands. */
    fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
    return 0;
}

/* ---- the loop -------------------------------------------------------------------------------- */

static int run_loop(struct sv *sv)
{
    const struct options *o = sv->o;
    advance(sv);
    while (sv->phase != PH_DONE) {
        sv->tree_cpu_valid = sv->tree_rss_valid = false;
        struct pollfd pfd[16 + WATCH_MAX];
        int n = 0, i_sig, i_parent = -1, i_timer = -1, i_events = -1, i_um = -1, i_watch = -1, n_watch = 0;
        int i_out[2] = {-1, -1}, n_out[2] = {0, 0};
        pfd[i_sig = n++] = (struct pollfd){.fd = sv->sigfd, .events = POLLIN};
        if (sv->timerfd >= 0)
            pfd[i_timer = n++] = (struct pollfd){.fd = sv->timerfd, .events = POLLIN};
        if (sampler_event_fd(sv->sampler) >= 0)
            pfd[i_events = n++] = (struct pollfd){.fd = sampler_event_fd(sv->sampler), .events = POLLIN};
        if (sv->um)
            pfd[i_um = n++] = (struct pollfd){.fd = usermark_read_fd(sv->um), .events = POLLIN};
        if (sv->parentfd >= 0)
            pfd[i_parent = n++] = (struct pollfd){.fd = sv->parentfd, .events = POLLIN};
        for (int i = 0; i < 2; i++)
            if (sv->pt[i]) {
                i_out[i] = n;
                n += n_out[i] = passthru_events(sv->pt[i], &pfd[n]);
            }
        sv->watch_complete = true;
        if (sv->phase == PH_LEFTOVERS || sv->sweeping) {
            int fds[WATCH_MAX];
            short ev;
            bool complete;
            size_t k = contain_watch(sv->contain, fds, WATCH_MAX, &ev, &complete);
            sv->watch_complete = complete;
            i_watch = n;
            for (size_t j = 0; j < k; j++)
                pfd[n++] = (struct pollfd){.fd = fds[j], .events = ev};
            n_watch = (int)k;
        }
        /* Nothing held while we wait (follow_stream flushes first): the lines of the set-up and
         * of advance() too, or a run without sampling or events shows them only at its end. */
        follow_stream(sv, false);
        int pr = poll(pfd, (nfds_t)n, poll_timeout_ms(sv));
        if (pr < 0 && errno != EINTR) {
            int r = -errno;
            log_errno(r, "poll");
            return r;
        }
        bool members_changed = !sv->watch_complete;
        if (pr > 0) {
            if (i_events >= 0 && pfd[i_events].revents)
                sampler_handle_events(sv->sampler, now_ns());
            if (pfd[i_sig].revents) {
                bool was_exited = sv->exited;
                handle_signals(sv);
                members_changed |= sv->exited != was_exited || sv->phase == PH_LEFTOVERS || sv->sweeping;
            }
            if (i_timer >= 0 && pfd[i_timer].revents) {
                uint64_t ticks = 0;
                if (read(sv->timerfd, &ticks, sizeof ticks) == (ssize_t)sizeof ticks && ticks > 0) {
                    uint64_t now = now_ns();
                    sampler_sample(sv->sampler, now, ticks, false);
                    after_sample(sv, now);
                }
            }
            if (i_um >= 0 && pfd[i_um].revents)
                usermark_drain(sv->um, now_ns());
            if (i_parent >= 0 && pfd[i_parent].revents) {
                close(sv->parentfd);
                sv->parentfd = -1;
                if (o->verbose)
                    log_msg("parent process died");
                stop(sv, CAUSE_PARENT, SIGTERM);
            }
            for (int i = 0; i < 2; i++)
                if (i_out[i] >= 0 && passthru_handle(sv->pt[i], &pfd[i_out[i]], n_out[i]))
                    read_output(sv, i);
            for (int j = 0; j < n_watch; j++)
                if (pfd[i_watch + j].revents)
                    members_changed = true;
            if (o->output_timeout_ns && sv->phase == PH_RUNNING)
                sv->deadline_output = sat_add_u64(sv->last_output_ns, o->output_timeout_ns);
        }
        if (members_changed)
            sweep_again(sv);
        check_kills(sv, false);
        check_deadlines(sv);
        advance(sv);
    }
    return 0;
}

int supervise_run(const struct options *o, struct supervise_result *ret)
{
    struct sv sv = {.o = o, .sigfd = -1, .parentfd = -1, .timerfd = -1, .profile_lock = -1};
    /* One instant for both clocks: the profile's startTime is the wall time of monotonic t0. */
    sv.t0 = now_ns();
    sv.wall0 = wall_ms();
    sv.deadline_timeout = o->timeout_ns ? sat_add_u64(sv.t0, o->timeout_ns) : NS_INFINITY;
    sv.deadline_output = NS_INFINITY;
    sv.deadline_kill = sv.deadline_grace = NS_INFINITY;
    int r;
    int child_out[2] = {-1, -1}, child_err[2] = {-1, -1};
    char *mark = NULL;

    const char *step_summary = getenv("GITHUB_STEP_SUMMARY");
    struct sinks_config kcfg = {
        .junit = o->junit,
        .otlp = o->otlp,
        .product = o->product,
        .upload_dir = sinks_perfherder_dir(),
        .summary = !o->quiet,
        .github = gha_active(o->ci, o->timeout_mode, getenv("GITHUB_ACTIONS")),
        .github_summary = step_summary && *step_summary ? step_summary : NULL,
    };
    if ((r = sinks_new(&kcfg, &sv.sinks)) < 0) {
        log_errno(r, "cannot set up the reports");
        goto out;
    }
    sv.sum = sinks_facts(sv.sinks);
    sv.last_sample_ns = sv.t0;

    sigset_t orig_mask;
    bool chld_ignored = false, xfsz_ignored = false;
    r = setup_signals(&sv, &orig_mask, &chld_ignored, &xfsz_ignored);
    if (r < 0) {
        log_errno(r, "cannot set up signal handling");
        goto out;
    }
    const char *why = NULL;
    r = contain_new(o->containment, &sv.contain, &why);
    if (r < 0) {
        log_errno(r, "cannot set up %s containment", o->containment == CONTAIN_MODE_CGROUP ? "cgroup" : "subreaper");
        goto out;
    }
    /* In timeout mode -v says only what GNU timeout says. */
    if (o->verbose && !o->timeout_mode)
        log_msg("containment: %s%s%s%s", contain_tier_name(contain_tier(sv.contain)),
                why ? " (" : "", why ? why : "", why ? ")" : "");
    /* Limits the kernel enforces are set before the command exists (it joins them at its fork). */
    struct limits_config lcfg = {o->memory_limit, o->cpu_limit_ns, o->tasks_limit, NULL, o->interval_ns > 0};
    if ((r = limits_new(&lcfg, sv.contain, &sv.limits)) < 0) {
        log_errno(r, "cannot set up the limits");
        goto out;
    }
    if (o->memory_limit || o->cpu_limit_ns || o->tasks_limit) {
        char how[512];
        limits_describe(sv.limits, how, sizeof how);
        if (o->verbose)
            log_msg("limits: %s", how);
        unsigned kernel = limits_by_kernel(sv.limits);
        if (!o->interval_ns && ((o->memory_limit && !(kernel & CONTAIN_LIMIT_MEMORY)) ||
                                (o->tasks_limit && !(kernel & CONTAIN_LIMIT_TASKS))))
            log_warn("sampling is off (-i 0): limits checked at each sample are not checked");
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    sv.ncpu = ncpu > 0 ? (unsigned)ncpu : 1;
    sv.deadline_cpu = limits_cpu_deadline(sv.limits, sv.t0, 0, sv.ncpu);
    /* First, while resmon-run holds no pipe a watchdog could keep open. */
    if (o->kill_leftovers && !o->foreground) {
        if ((r = watchdog_new(sv.contain, o->signal, &sv.watchdog)) < 0) {
            log_errno(r, "cannot start the watchdog");
            goto out;
        }
        if (asprintf(&mark, "%s=%s", WATCHDOG_ENV, watchdog_run_id(sv.watchdog)) < 0) {
            r = -ENOMEM;
            mark = NULL;
            goto out;
        }
    }

    /* Interpose on the output only when something needs to see it: the output timeout, or the
     * test-log parsers, for the stream (the profile, or only the reports: --no-profile --junit)
     * or for the summary (which --no-profile keeps). */
    bool want_stream = !o->no_profile || o->junit || o->otlp;
    bool parse = o->parse_formats && (want_stream || sv.sum);
    bool interpose = o->output_timeout_ns > 0 || parse;
    if (interpose) {
        if ((r = make_pipe(child_out)) < 0 || (r = make_pipe(child_err)) < 0) {
            log_errno(r, "cannot create pipes");
            goto out;
        }
        if ((r = passthru_new(child_out[0], STDOUT_FILENO, &sv.pt[0])) < 0) {
            log_errno(r, "cannot set up pass-through");
            goto out;
        }
        child_out[0] = -1;
        if ((r = passthru_new(child_err[0], STDERR_FILENO, &sv.pt[1])) < 0) {
            log_errno(r, "cannot set up pass-through");
            goto out;
        }
        child_err[0] = -1;
    }

    if (want_stream && (r = open_stream(&sv)) < 0) {
        say_open_error(&sv, r);
        goto out;
    }

    struct sampler_config scfg;
    sampler_config_init(&scfg);
    scfg.interval_ns = o->interval_ns;
    scfg.pss = o->pss;
    scfg.event_filter = !o->no_event_filter;
    scfg.events_polled = true; /* run_loop reads them first when they wake it */
    r = sampler_new(&scfg, sv.contain, sv.sink, sv.t0, &sv.sampler);
    if (r < 0) {
        log_errno(r, "cannot set up sampling");
        goto out;
    }
    if (o->verbose && !o->timeout_mode) {
        int er = sampler_events_status(sv.sampler);
        if (er == 0)
            log_msg("process events: the kernel's process connector (every process of the tree gets a marker)");
        else if (er != -ENOTSUP)
            log_msg("process events: unavailable (%s): the tree is learned at each sample, and a "
                    "process that starts and ends between two samples gets no marker of its own",
                    strerror(-er));
    }
    if (o->interval_ns && (r = start_timer(&sv)) < 0) {
        log_errno(r, "cannot set up the sampling timer");
        goto out;
    }
    struct testlog_probe tprobe = {probe_tree_cpu, probe_tree_rss, probe_leaked, &sv};
    if (parse) { /* without a stream there is no sink: the parsers only count, for the summary */
        struct testlog_config tcfg = {
            .formats = o->parse_formats,
            .log_info = o->log_info,
            .process_output = o->process_output,
            .wall_at_t0_ms = sv.wall0,
            .t0_ns = sv.t0,
        };
        if ((r = testlog_new(&tcfg, sv.sink, &tprobe, &sv.testlog)) < 0 ||
            (r = linebuf_new(MAX_LINE, &sv.lb[0])) < 0 || (r = linebuf_new(MAX_LINE, &sv.lb[1])) < 0) {
            log_errno(r, "cannot set up test-log parsing");
            goto out;
        }
    }
    struct usermark_probe uprobe = {probe_tree_cpu, &sv};
    if (!o->no_profile) {
        struct usermark_config ucfg = {.t0_ns = sv.t0};
        r = usermark_new(&ucfg, sv.sink, &uprobe, &sv.um);
        if (r < 0) {
            log_errno(r, "cannot create the marker socket");
            goto out;
        }
    }

    sinks_attach_run(sv.sinks, &(struct sinks_run){&sv, facts_now, sinks_mid_line, sinks_line_ended, sv.testlog});
    watch_parent(&sv);

    /* Give the terminal to the command's group when we hold it: it may want to read it. */
    bool take_tty = !o->foreground && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();

    /* --deny: built here, loaded by the child just before exec. Refusing to run is the only
     * honest answer when the user asked for a restriction that cannot be had. */
    struct sandbox_filter *cmd_filter = NULL;
    if (o->deny && (r = sandbox_command_filter_new(o->deny, &cmd_filter)) < 0) {
        log_errno(r, "cannot set up the --deny filters for the command");
        goto out;
    }

    /* Private before the command exists: it can never attach to us (sandbox.h). */
    if (!o->no_sandbox && (r = sandbox_private_self()) < 0)
        log_errno(r, "warning: resmon-run stays dumpable");

    /* GNU timeout catches these (and its --signal), so its command, whose caught signals exec
     * resets, gets them at their default even from a caller that ignored them: a background
     * `timeout` from a script, whose shell ignores INT, still stops its command on INT. */
    sigset_t default_signals;
    sigemptyset(&default_signals);
    static const int gnu_caught[] = {SIGALRM, SIGINT, SIGQUIT, SIGHUP, SIGTERM};
    for (size_t i = 0; i < ARRAY_SIZE(gnu_caught); i++)
        sigaddset(&default_signals, gnu_caught[i]);
    if (o->signal && o->signal != SIGKILL && o->signal != SIGSTOP)
        sigaddset(&default_signals, o->signal);

    struct spawn_config sc = {
        .argv = o->argv,
        .contain = sv.contain,
        .own_group = !o->foreground,
        .take_terminal = take_tty,
        .stdout_fd = child_out[1],
        .stderr_fd = child_err[1],
        .extra_fd = sv.um ? usermark_fd_for_child(sv.um) : -1,
        .env_name = USERMARK_ENV,
        .child_mask = &orig_mask,
        .restore_sigchld_ignore = chld_ignored,
        .restore_sigxfsz = true,
        .sigxfsz_ignored = xfsz_ignored,
        .default_signals = &default_signals,
        .mark = mark,
        /* CPython prints every thread's traceback on a fatal signal with this set at its start */
        .env_extra = o->dump && (o->dump_runtimes & FORENSICS_RT_PYTHON) ? "PYTHONFAULTHANDLER=1" : NULL,
        .pdeath_signal = o->signal ? o->signal : SIGKILL,
        .before_exec = cmd_filter ? sandbox_command_filter_apply : NULL,
        .before_exec_ctx = cmd_filter,
    };
    bool exec_failed;
    r = spawn_command(&sc, &sv.pid, &exec_failed);
    sandbox_filter_free(cmd_filter);
    closep(&child_out[1]);
    closep(&child_err[1]);
    child_out[1] = child_err[1] = -1;
    if (r < 0) {
        log_errno(r, "failed to run command '%s'", o->argv[0]);
        /* GNU timeout's habit (`timeout 5 CMD`): the duration taken for the command. */
        uint64_t ns;
        if (r == -ENOENT && !o->timeout_mode && !strchr(o->argv[0], '/') && parse_duration(o->argv[0], &ns) == 0)
            log_msg("hint: for a timeout of %s, run 'resmon-run -t %s -- %s ...' or 'resmon-timeout %s %s ...'",
                    o->argv[0], o->argv[0], o->argv[1] ? o->argv[1] : "COMMAND", o->argv[0],
                    o->argv[1] ? o->argv[1] : "COMMAND");
        if (exec_failed) {
            ret->exit_status = r == -ENOENT ? EXIT_ENOENT : EXIT_CANNOT_INVOKE;
            ret->raise_signal = 0;
            /* The profile still tells what happened: a command that never ran. */
            sv.exit_ns = now_ns();
            sv.wstatus = ret->exit_status << 8;
            sv.exec_failed = true;
            emit_command_marker(&sv);
            profile_checkpoint(&sv, "exec-failed");
            r = 0;
        }
        goto out;
    }
    sv.tty_given = take_tty;
    contain_set_root(sv.contain, sv.pid);
    watchdog_set_group(sv.watchdog, o->foreground ? 0 : sv.pid);
    open_command_marker(&sv);
    if (sv.um)
        usermark_close_child_fd(sv.um);
    {
        /* the command line as exec'd, words joined by spaces */
        struct jsonw words;
        jsonw_init(&words);
        for (int i = 0; i < o->argc; i++) {
            if (i)
                jsonw_append(&words, " ", 1);
            jsonw_append(&words, o->argv[i], strlen(o->argv[i]));
        }
        sampler_track(sv.sampler, sv.pid, now_ns(), jsonw_failed(&words) ? NULL : words.buf);
        jsonw_release(&words);
    }
    /* The command runs and every descriptor is open: from here on resmon-run needs no new
     * process, socket or executable mapping (sandbox.h). */
    if (!o->no_sandbox) {
        int sr = sandbox_lockdown_self();
        if (sr < 0 && (!o->timeout_mode || o->verbose))
            log_errno(sr, "warning: running without the seccomp sandbox");
    }
    sandbox_test_trigger();
    sv.last_output_ns = now_ns();
    if (o->output_timeout_ns)
        sv.deadline_output = sat_add_u64(sv.last_output_ns, o->output_timeout_ns);
    if (sv.parentfd == -2) {
        sv.parentfd = -1;
        stop(&sv, CAUSE_PARENT, SIGTERM);
    }

    r = run_loop(&sv);
    if (r < 0)
        goto out;

    end_of_run(&sv);
    profile_checkpoint(&sv, "end");
    compute_result(&sv, ret);
    if (sv.sum)
        fill_facts(&sv, sv.sum, ret->raise_signal ? -1 : ret->exit_status, sv.exit_ns);
    sinks_end(sv.sinks);
    r = 0;
out:
    if (sv.tty_given) {
        /* Take the terminal back for the caller's group; we are in the background now. */
        sigset_t ttou, old;
        sigemptyset(&ttou);
        sigaddset(&ttou, SIGTTOU);
        sigprocmask(SIG_BLOCK, &ttou, &old);
        tcsetpgrp(STDIN_FILENO, getpgrp());
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    /* Done with the tree (or it never was): the watchdog leaves it alone. */
    watchdog_release(sv.watchdog);
    for (int i = 0; i < 2; i++) {
        passthru_free(sv.pt[i]);
        closep(&child_out[i]);
        closep(&child_err[i]);
    }
    closep(&sv.parentfd);
    closep(&sv.sigfd);
    closep(&sv.timerfd);
    usermark_free(sv.um);
    testlog_free(sv.testlog);
    linebuf_free(sv.lb[0]);
    linebuf_free(sv.lb[1]);
    sampler_free(sv.sampler);
    limits_free(sv.limits);
    contain_free(sv.contain);
    stream_set_tap(sv.stream, NULL, NULL);
    profile_conv_free(sv.conv);
    sinks_free(sv.sinks);
    stream_close(sv.stream);
    closep(&sv.profile_lock);
    if (o->no_profile && sv.profile_path)
        unlink(sv.profile_path);
    free(sv.profile_path);
    free(sv.dump_path);
    leaks_release(&sv.leaks);
    free(mark);
    return r;
}
