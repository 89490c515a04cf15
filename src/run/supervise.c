/* supervise.c — see supervise.h. The run's module is four files sharing one state (state.h):
 * this one only runs (the loop, the phases, the deadlines, the stop sequence); setup.c sets a run
 * up and takes it down; record.c gathers what the run records of itself; checkpoint.c is what a
 * checkpoint does (the profile, then every report: sinks.h). The dump at a stop is stopdump.h's.
 *
 * THE RUN'S STATE MACHINE (one place: advance(); its deadlines one table, THE DEADLINES). Events
 * are handled as they come (a child reaped, a signal, a deadline, output, a sample); advance()
 * then moves the phase on:
 *
 *   RUNNING ──(stop: timeout, output timeout, a limit, stop request, parent death)──► DUMPING
 *                                                          with --dump, else STOPPING
 *   DUMPING ──(the dump is complete, its budget ended, or a stop request, parent death)──► STOPPING
 *   RUNNING, STOPPING ──(the command exited)──► LEFTOVERS  when --kill-leftovers and the tree
 *                                                          still has live members
 *                                           └─► DRAIN      otherwise
 *   LEFTOVERS ──(the tree is empty, or the sweep gave up)──► DRAIN
 *   DRAIN ──(both pipes drained: at their end, or empty now with nobody left to write)──► DONE
 *
 * Entering the stop (stop()): the stop's marker, a checkpoint (the profile and every report);
 * then DUMPING with --dump, else at once what entering STOPPING does.
 * DUMPING: entering it records the tree (stopdump.h: /proc and the stacks, one call within the
 * budget) and asks the first runtime for its own dump (--dump=go,...). Its deadline is the
 * dump's (stopdump_deadline: the runtime's quiet time, the budget's end); its events: the pidfd
 * of the runtime being dumped and the command's output (passed on as always, and kept), each
 * followed by a step of the dump; a stop request or the parent's death ends the dump at once
 * (what it has is kept) and goes on to STOPPING and that event's KILL; a timeout or a limit
 * changes nothing; the command's exit is recorded (reaped) and handled once in STOPPING. Leaving
 * it: the dump is written (the stream, the summary, the text file), a checkpoint again.
 * Entering STOPPING: the stop signal to the command's process group (as GNU timeout sends it).
 * STOPPING: KILL to the group after --kill-after (counted from the stop), or for a stop request
 * to the whole tree after --grace; another stop request or the parent's death: KILL at once.
 * LEFTOVERS: TERM to every member, KILL passes after --grace until none is alive (event-driven:
 * a pass follows each sign that members ended, never a sleep), giving up after KILL_GIVE_UP.
 * DRAIN: what the command wrote is in the pipes; all of it is passed on (a slow reader waits
 * through poll), to the pipes' end when nothing else holds them, else until they are empty now:
 * leftovers left alone may write later, and that is theirs.
 */
#include "run/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/outfile.h"
#include "base/parse.h"
#include "base/util.h"
#include "observe/cpuprof.h"
#include "observe/stopdump.h"
#include "run/state.h"

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
    struct jsonw *keep = sv->dump ? stopdump_keep(sv->dump) : NULL; /* a runtime's dump, kept */
    if (keep && keep->len < STOPDUMP_KEEP_MAX)
        jsonw_append(keep, buf, MIN(n, STOPDUMP_KEEP_MAX - keep->len));
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

/* What is left in the pipes once a runtime has ended (stopdump_output): read, passed on and
 * parsed as in the loop, and kept. */
static void dump_out_left(void *ctx, uint64_t deadline)
{
    struct sv *sv = ctx;
    for (int i = 0; i < 2; i++)
        while (sv->pt[i] && now_ns() < deadline && !passthru_pending(sv->pt[i]) && read_output(sv, i) == PT_DATA)
            ;
}

static void dump_out_flush(void *ctx) { stream_flush(((struct sv *)ctx)->stream); }
static double sv_stream_ms(void *stream, uint64_t ns) { return stream_ms(stream, ns); }
static const char *sv_test_at(void *testlog, uint64_t ns) { return testlog_open_at(testlog, ns); }

/* The stop's signal, once the stop is recorded (and the tree dumped): STOPPING. Its KILL is
 * counted from the stop, the dump's time included. */
static void send_stop_signal(struct sv *sv)
{
    sv->phase = PH_STOPPING;
    if (!sv->stop_ended) /* -s 0 too: GNU timeout "sends" signal 0, and -v says so */
        signal_command(sv, sv->stop_signal, runmarks_stop_reason_name(sv->cause));
    if (sv->o->kill_after_ns)
        sv->deadline_kill = sat_add_u64(sv->stop_ns, sv->o->kill_after_ns);
    else if (!sv->timed_out && sv->o->kill_leftovers)
        sv->deadline_kill = sat_add_u64(sv->stop_ns, sv->o->grace_ns);
}

/* Entering DUMPING: what every live process of the tree was doing, recorded after the stop's
 * first finalization and before its first signal; the runtimes' dumps it asks for are waited for
 * by the loop (sv->dump), until end_dump. */
static void start_dump(struct sv *sv, enum runmarks_reason cause)
{
    static const struct stopdump_output out_fns = {.flush = dump_out_flush, .read_left = dump_out_left};
    free(sv->dump_path);
    sv->dump_path = dump_path_for(sv);
    sv->dump_out = out_fns;
    sv->dump_out.ctx = sv;
    sv->dump_out.interposed = sv->pt[0] || sv->pt[1];
    struct stopdump_config cfg = {
        .contain = sv->contain,
        .command = sv->pid,
        .budget_ns = sv->o->dump_budget_set ? sv->o->dump_budget_ns
                     : own_limit(cause)     ? CLI_DUMP_BUDGET_OWN_NS
                                            : CLI_DUMP_BUDGET_STOP_NS,
        .runtimes = sv->o->dump_runtimes,
        .output = &sv->dump_out,
        .sink = sv->sink,
        .ms_of = sv_stream_ms,
        .ms_ctx = sv->stream,
        .test_at = sv->testlog ? sv_test_at : NULL,
        .test_ctx = sv->testlog,
        .text_path = sv->dump_path,
    };
    struct stopdump *d = malloc(sizeof *d);
    if (!d) {
        log_errno(-ENOMEM, "cannot record what the tree was doing");
        return;
    }
    if (stopdump_start(&cfg, d) != 0) {
        free(d);
        return;
    }
    sv->dump = d;
}

/* Leaving DUMPING (complete, or cut_short at once): the dump is written (the stream, the summary's
 * lines, the text file), a profile with it; only then the stop's signal. */
static void end_dump(struct sv *sv, bool cut_short)
{
    struct stopdump *d = sv->dump;
    if (d) {
        stopdump_finish(d, cut_short);
        if (sv->sum)
            summary_add_dump(sv->sum, &d->rep, d->text_written ? sv->dump_path : NULL);
        if (sv->o->verbose && !sv->o->timeout_mode) /* -v there says only what GNU timeout says */
            log_msg("recorded %zu process%s of the tree in %.1f ms%s", d->rep.nprocs, d->rep.nprocs == 1 ? "" : "es",
                    (double)(d->rep.end_ns - d->rep.start_ns) / 1e6, cut_short ? " (cut short)" : "");
        stopdump_free(d);
        free(d);
        sv->dump = NULL;
    }
    profile_checkpoint(sv, "dump");
    send_stop_signal(sv);
}

static void stop(struct sv *sv, enum runmarks_reason cause, int sig)
{
    sv->tree_cpu_valid = sv->tree_rss_valid = false;
    uint64_t now = now_ns();
    if (sv->phase != PH_RUNNING) {
        /* Another stop request while stopping: the caller is out of patience — kill now; while
         * dumping, the dump ends at once with what it has, and the stop's signal goes first. */
        bool now_please = cause == RUN_STOPPED || cause == RUN_PARENT_DIED;
        if (now_please && sv->phase == PH_DUMPING)
            end_dump(sv, true);
        if (now_please && sv->phase == PH_STOPPING && !sv->kill_sent) {
            if (sv->o->foreground)
                signal_command(sv, SIGKILL, "second stop request");
            else
                sweep_start(sv, "second stop request");
        }
        return;
    }
    /* A limit the kernel enforced may have ended the command and its whole tree already (the OOM
     * killer took it): then nothing is signalled, and nothing says it was. A tree with members
     * left is signalled as ever, the command gone or not. */
    bool ended = sv->exited && contain_empty(sv->contain);
    sv->stop_ended = ended;
    if (ended)
        sig = 0;
    sv->cause = cause;
    sv->timed_out = own_limit(cause);
    sv->stop_signal = sig;
    sv->stop_ns = now;
    sv->phase = sv->o->dump ? PH_DUMPING : PH_STOPPING;
    /* A line the command began and has not finished is what it is doing now (pytest -v prints a
     * test's node id, and its result and newline only when the test ends): the parsers take it
     * as a line, so the outputs written at the stop name that test. What the line gets after this
     * comes as a line of its own (pytest: the result, which ends the test). */
    if (sv->testlog)
        for (int i = 0; i < 2; i++)
            linebuf_flush(sv->lb[i], i == 0 ? on_line_stdout : on_line_stderr, sv);
    /* A TAP harness's hung test file is known by its process only (record.c). */
    open_harness_tests(sv);
    /* Record what was going on, and finalize first: a CI that follows its TERM with a KILL must
     * still find a complete profile. Only then is any child signalled. */
    emit_timeout_marker(sv, now);
    profile_checkpoint(sv, runmarks_stop_reason_name(cause));
    if (!sv->o->dump) {
        send_stop_signal(sv);
        return;
    }
    /* Then what the tree was doing, and a profile with it; still before any signal. */
    start_dump(sv, cause);
    if (!sv->dump || stopdump_step(sv->dump))
        end_dump(sv, false);
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
    stop(sv, RUN_STOPPED, sig);
}

/* ---- samples, exits ------------------------------------------------------------------------- */

/* A limit reached (limits.h) stops the run like a timeout. cpu_ns: the tree's CPU time now.
 * Once the command has exited only the kernel's kill at the memory limit still counts (it may
 * have been the victim); what the last sample reads then is not a reason to stop a finished run. */
static void check_limits(struct sv *sv, uint64_t cpu_ns, bool kernel_kill)
{
    if (!sv->limits || sv->phase != PH_RUNNING || (sv->exited && !kernel_kill))
        return;
    static const enum runmarks_reason cause_of[] = {[LIMIT_MEMORY] = RUN_MEMORY, [LIMIT_CPU] = RUN_CPU,
                                               [LIMIT_TASKS] = RUN_TASKS};
    enum limit_kind k = limits_check_tree(sv->limits, sv->sampler, cpu_ns, sv->limit_text, sizeof sv->limit_text);
    if (k == LIMIT_NONE)
        return;
    if (sv->o->verbose)
        log_msg("%s limit reached: %s", limit_name(k), sv->limit_text);
    stop(sv, cause_of[k], sv->o->signal);
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
            /* its pid no longer holds its group's id: the watchdog must not kill by it (contain.h) */
            watchdog_set_group(sv->watchdog, 0);
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
    if (sv->phase == PH_DUMPING && stopdump_step(sv->dump))
        end_dump(sv, false);
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

/* THE DEADLINES, one table: when each falls due in the state the run is in (NS_INFINITY: not
 * armed in it), and what it does then (NULL: it only wakes the loop, whose pass does the rest:
 * a step of the dump, a look at the leftovers without a descriptor to wait on). The poll waits
 * for the earliest armed one; after it, each one armed and due fires, in this order (a fire may
 * change the phase: the ones after it are asked again). */
struct deadline {
    uint64_t (*at)(const struct sv *sv);
    void (*fire)(struct sv *sv, uint64_t now);
};

static uint64_t running(const struct sv *sv, uint64_t t) { return sv->phase == PH_RUNNING ? t : NS_INFINITY; }
static uint64_t at_timeout(const struct sv *sv) { return running(sv, sv->deadline_timeout); }
static uint64_t at_output(const struct sv *sv) { return running(sv, sv->deadline_output); }
static uint64_t at_cpu(const struct sv *sv) { return running(sv, sv->deadline_cpu); }
static uint64_t at_dump(const struct sv *sv)
{
    return sv->phase == PH_DUMPING ? stopdump_deadline(sv->dump) : NS_INFINITY;
}
static uint64_t at_kill(const struct sv *sv) { return sv->phase == PH_STOPPING ? sv->deadline_kill : NS_INFINITY; }
static uint64_t at_grace(const struct sv *sv)
{
    return sv->phase == PH_LEFTOVERS && !sv->sweeping ? sv->deadline_grace : NS_INFINITY;
}
static uint64_t at_give_up(const struct sv *sv) { return sv->sweeping ? sv->sweep_give_up : NS_INFINITY; }
static uint64_t at_watch(const struct sv *sv)
{
    return (sv->sweeping || sv->phase == PH_LEFTOVERS) && !sv->watch_complete ? sat_add_u64(now_ns(), WATCH_FALLBACK)
                                                                              : NS_INFINITY;
}

static void fire_timeout(struct sv *sv, uint64_t now)
{
    (void)now;
    stop(sv, RUN_TIMEOUT, sv->o->signal);
}

static void fire_output(struct sv *sv, uint64_t now)
{
    (void)now;
    /* Silence is decided on what the command wrote, not on when we last looked. */
    if (output_waiting(sv)) {
        sv->deadline_output = sat_add_u64(now_ns(), sv->o->output_timeout_ns);
        return;
    }
    if (sv->o->verbose)
        log_msg("no output from '%s' for the output timeout", sv->o->argv[0]);
    stop(sv, RUN_OUTPUT_TIMEOUT, sv->o->signal);
}

static void fire_cpu(struct sv *sv, uint64_t now)
{
    /* The earliest the tree could have used its CPU limit: read it fresh, then wait again for the
     * earliest it could with what is left. */
    sampler_rescan(sv->sampler, now);
    uint64_t cpu = sampler_tree_cpu_ns(sv->sampler);
    sv->deadline_cpu = limits_cpu_deadline(sv->limits, now, cpu, sv->ncpu);
    check_limits(sv, cpu, false);
}

static void fire_kill(struct sv *sv, uint64_t now)
{
    (void)now;
    sv->deadline_kill = NS_INFINITY;
    /* A timeout's KILL goes where its signal went (GNU); a stop request's end is near (the caller
     * will kill us soon): the whole tree. */
    if (sv->timed_out || sv->o->foreground)
        signal_command(sv, SIGKILL, sv->o->kill_after_ns ? "kill-after" : "grace");
    else
        sweep_start(sv, sv->o->kill_after_ns ? "kill-after" : "grace");
}

static void fire_grace(struct sv *sv, uint64_t now)
{
    (void)now;
    sv->deadline_grace = NS_INFINITY;
    sweep_start(sv, "leftovers");
}

static void fire_give_up(struct sv *sv, uint64_t now)
{
    (void)now;
    sweep_again(sv);
}

static const struct deadline deadlines[] = {
    {at_timeout, fire_timeout}, /* RUNNING: --timeout */
    {at_output, fire_output},   /* RUNNING: --output-timeout */
    {at_cpu, fire_cpu},         /* RUNNING: the earliest the CPU limit can be reached */
    {at_dump, NULL},            /* DUMPING: the dump's budget, a runtime's quiet time */
    {at_kill, fire_kill},       /* STOPPING: --kill-after, or --grace after a stop request */
    {at_grace, fire_grace},     /* LEFTOVERS: --grace before the sweep */
    {at_give_up, fire_give_up}, /* a sweep's next KILL pass, until KILL_GIVE_UP */
    {at_watch, NULL},           /* leftovers without a descriptor: looked at again */
};

static int poll_timeout_ms(struct sv *sv)
{
    uint64_t next = NS_INFINITY;
    for (size_t i = 0; i < ARRAY_SIZE(deadlines); i++)
        next = MIN(next, deadlines[i].at(sv));
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
    for (size_t i = 0; i < ARRAY_SIZE(deadlines); i++)
        if (deadlines[i].fire && now >= deadlines[i].at(sv))
            deadlines[i].fire(sv, now);
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

int setup_signals(struct sv *sv, sigset_t *ret_orig_mask, bool *ret_chld_ignored, bool *ret_xfsz_ignored)
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
            stop(sv, RUN_TIMEOUT, sv->o->signal);
        else if (is_stop_signal(sig))
            stop_request(sv, sig);
    }
}

/* The death of our parent is a stop request (the CI runner went away). A pidfd becomes readable
 * when the process exits; checked against the pid read before, to close the race. */
void watch_parent(struct sv *sv)
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
        bool limit = sv->cause == RUN_MEMORY || sv->cause == RUN_CPU || sv->cause == RUN_TASKS;
        if (sv->timed_out && sig == SIGKILL && (!limit || sv->kill_sent))
            preserve = true;
        ret->exit_status = 128 + sig;
    } else
        ret->exit_status = EXIT_CANCELED;
    if (sv->timed_out && !preserve)
        ret->exit_status = EXIT_TIMEDOUT;
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
    cpuprof_stop(sv->cpuprof);
    uint64_t taken, dropped, untracked;
    cpuprof_counts(sv->cpuprof, &taken, &dropped, &untracked);
    if (sv->o->verbose && (dropped || untracked))
        log_msg("cpu profile: %llu samples; %llu dropped past its caps, %llu processes not followed",
                (unsigned long long)taken, (unsigned long long)dropped, (unsigned long long)untracked);
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

/* ---- the loop -------------------------------------------------------------------------------- */

static int run_loop(struct sv *sv)
{
    const struct options *o = sv->o;
    advance(sv);
    while (sv->phase != PH_DONE) {
        sv->tree_cpu_valid = sv->tree_rss_valid = false;
        struct pollfd pfd[16 + WATCH_MAX];
        int n = 0, i_sig, i_parent = -1, i_timer = -1, i_events = -1, i_um = -1, i_watch = -1, n_watch = 0, i_cpu = -1;
        int i_out[2] = {-1, -1}, n_out[2] = {0, 0}, i_dump = -1, n_dump = 0;
        pfd[i_sig = n++] = (struct pollfd){.fd = sv->sigfd, .events = POLLIN};
        if (sv->timerfd >= 0)
            pfd[i_timer = n++] = (struct pollfd){.fd = sv->timerfd, .events = POLLIN};
        if (sampler_event_fd(sv->sampler) >= 0)
            pfd[i_events = n++] = (struct pollfd){.fd = sampler_event_fd(sv->sampler), .events = POLLIN};
        if (cpuprof_fd(sv->cpuprof) >= 0)
            pfd[i_cpu = n++] = (struct pollfd){.fd = cpuprof_fd(sv->cpuprof), .events = POLLIN};
        if (sv->um)
            pfd[i_um = n++] = (struct pollfd){.fd = usermark_read_fd(sv->um), .events = POLLIN};
        if (sv->parentfd >= 0)
            pfd[i_parent = n++] = (struct pollfd){.fd = sv->parentfd, .events = POLLIN};
        for (int i = 0; i < 2; i++)
            if (sv->pt[i]) {
                i_out[i] = n;
                n += n_out[i] = passthru_events(sv->pt[i], &pfd[n]);
            }
        if (sv->dump) {
            i_dump = n;
            n += n_dump = stopdump_events(sv->dump, &pfd[n]);
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
            if (n_dump && sv->dump)
                stopdump_handle(sv->dump, &pfd[i_dump], n_dump);
            if (i_events >= 0 && pfd[i_events].revents)
                sampler_handle_events(sv->sampler, now_ns());
            if (i_cpu >= 0 && pfd[i_cpu].revents)
                cpuprof_drain(sv->cpuprof);
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
                    cpuprof_drain(sv->cpuprof);
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
                stop(sv, RUN_PARENT_DIED, SIGTERM);
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
    struct run_setup su = {.child_out = {-1, -1}, .child_err = {-1, -1}};
    int r = run_setup(&sv, &su);
    if (r == 0)
        r = run_start(&sv, &su, ret);
    if (r == 0) {
        if (sv.parentfd == -2) {
            sv.parentfd = -1;
            stop(&sv, RUN_PARENT_DIED, SIGTERM);
        }
        r = run_loop(&sv);
    }
    if (r == 0) {
        end_of_run(&sv);
        profile_checkpoint(&sv, "end");
        compute_result(&sv, ret);
        if (sv.sum)
            fill_facts(&sv, sv.sum, ret->raise_signal ? -1 : ret->exit_status, sv.exit_ns);
        sinks_end(sv.sinks);
    }
    if (sv.dump) { /* the loop failed while dumping */
        stopdump_free(sv.dump);
        free(sv.dump);
    }
    run_teardown(&sv, &su);
    return r > 0 ? 0 : r;
}
